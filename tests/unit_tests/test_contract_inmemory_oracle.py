"""LangGraph's own ``InMemoryStore`` through our BaseStore contract: the oracle for the suite.

Every contract test must pass here unless it is listed in ``known_upstream_failures``, where it
runs as a strict xfail: when LangGraph fixes the bug, the XPASS fails and the entry must go.
"""

from __future__ import annotations

from typing import ClassVar

import pytest
from langgraph.store.memory import InMemoryStore

from tests.fakes import KeywordEmbeddings
from tests.store_contract import BaseStoreContract

_NO_TTL = (
    "InMemoryStore has no TTL in langgraph-checkpoint 4.3.2 (the newest release): "
    "supports_ttl is False, put(ttl=...) raises NotImplementedError, it takes no ttl config "
    "and has no sweeper"
)
assert not InMemoryStore.supports_ttl, "InMemoryStore has TTL now: test the TTL contract on it"


class TestInMemoryStoreOracle(BaseStoreContract):
    known_upstream_failures: ClassVar[dict[str, str]] = {
        "test_created_at_is_kept_on_update": (
            "langgraph #7411: InMemoryStore.put() sets created_at=now() on every update"
        ),
        "test_returned_values_do_not_alias_the_store": (
            "langgraph #8835: get()/search() hand out the stored dict itself"
        ),
        "test_put_copies_the_value": (
            "langgraph #8835: put() keeps a shallow copy, nested dicts/lists stay shared"
        ),
        "test_range_filter_skips_items_without_the_field": (
            "langgraph #8365: $gt/$lt call float(None) on items missing the field (TypeError)"
        ),
        "test_negative_limit_or_offset_raises": (
            "langgraph #8696: negative limit/offset are accepted and slice from the end"
        ),
        "test_reput_with_index_false_drops_the_vector": (
            "langgraph #8214: put(index=False) leaves the key's old vectors in place"
        ),
        "test_query_lists_scored_items_then_unscored_ones": (
            "langgraph #8871: the unscored fallback ignores offset, so pages repeat items"
        ),
        "test_reads_do_not_create_namespaces": (
            "langgraph #8734: get() indexes a defaultdict and creates the namespace"
        ),
        "test_namespace_disappears_with_its_last_item": (
            "langgraph #8734: delete() leaves an empty namespace (and creates one when missing)"
        ),
        "test_batch_puts_sharing_a_text": (
            "langgraph #8822: two puts embedding the same text in one batch raise ValueError"
        ),
        "test_a_field_named_twice_is_embedded_once": (
            "langgraph #8822 again: a field named twice in index gives one text two paths, "
            "and the put raises ValueError (PostgresStore: CardinalityViolation)"
        ),
        "test_a_value_holding_nan_or_infinity_is_refused_whole": (
            "InMemoryStore stores NaN and infinities, which no JSON store can hold "
            "(PostgresStore refuses them), so such a store cannot be migrated"
        ),
        "test_batch_validates_ops_like_the_methods": (
            "langgraph #8832: batch()/abatch() skip namespace validation"
        ),
        "test_namespaces_may_be_lists": (
            "InMemoryStore compares a list prefix with tuple namespaces, so search(['test']) "
            "finds nothing, and get/put with a list raise TypeError (unhashable); "
            "PostgresStore accepts lists in search, list_namespaces and put"
        ),
        "test_a_string_is_not_a_namespace": (
            "InMemoryStore accepts put('docs', ...) and keys the item by the string (search "
            "then reports the namespace ['d', 'o', 'c', 's'] and list_namespaces() raises "
            "TypeError); PostgresStore reads 'docs' as the labels d, o, c, s"
        ),
        **dict.fromkeys(
            [name for name in dir(BaseStoreContract) if name.startswith("test_ttl_")],
            _NO_TTL,
        ),
    }

    @pytest.fixture
    def store_factory(self):
        def make(fields: list[str] | None = None, ttl: object = None) -> InMemoryStore:
            embed = KeywordEmbeddings(dims=64)  # ttl: InMemoryStore takes no TTL config
            return InMemoryStore(index={"dims": 64, "embed": embed, "fields": fields or ["$"]})

        return make
