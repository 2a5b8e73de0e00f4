"""The per-user fact API on the Qdrant engine: test_facts.py's cases, re-collected here.

The imported tests take the ``store`` fixture, which this module overrides: each one runs on
embedded ``:memory:`` and on a folder (reads from the mirror), and on ``:memory:`` through the
server code path (``mirror=False``), sync and async.
"""

from __future__ import annotations

import pytest

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.qdrant import qdrant_backend
from tests.unit_tests.test_facts import (  # noqa: F401  (re-collected on Qdrant)
    emb,
    mem,
    test_bad_facts_raise_and_store_nothing,
    test_bad_user_id_raises_before_any_io,
    test_batch_is_one_embedding_call_and_decided_in_order,
    test_below_threshold_creates_a_new_fact,
    test_changed_embedding_model_is_a_clear_error,
    test_concurrent_identical_remembers_leave_one_fact_asyncio,
    test_concurrent_identical_remembers_leave_one_fact_threads,
    test_exact_duplicate_is_recognised,
    test_facts_are_base_store_items,
    test_forget_list_clear_export,
    test_prefix_label_users_do_not_see_each_other,
    test_recall_input_limits,
    test_recall_merges_phrasings_without_duplicates,
    test_similar_fact_updates_in_place,
    test_users_are_isolated,
)


@pytest.fixture(params=["memory", "path", "server-path"])
def store(request, emb, tmp_path):  # noqa: F811
    if request.param == "path":
        backend = qdrant_backend(tmp_path / "db", dims=64)
    else:
        backend = qdrant_backend(":memory:", dims=64, mirror=request.param == "memory")
    yield LongTermMemoryStore(backend, embeddings=emb, upsert_threshold=0.8)
    backend.close()
