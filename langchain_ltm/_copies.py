"""Items written as another store holds them: value, timestamps, TTL and index (``ltm migrate``).

A ``put`` would stamp a copy with the moment of copying, count its TTL from then and embed
the target store's default fields. A copy keeps the source item's ``created_at`` and
``updated_at``, its expiry and TTL (what a read refreshes it by), and embeds the fields the
source embedded: none for an item put with ``index=False``, ``title`` alone for one put
with ``index=["title"]``. The vectors are computed again by the target's embeddings (the
two stores may use different models), from the same texts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from langgraph.store.base import PutOp

from langchain_ltm._ops import plan_batch
from langchain_ltm._steps import Logic, call
from langchain_ltm.backends.base import ItemKey, Record, StoredItem
from langchain_ltm.facts.client_puts import unique_hashes

if TYPE_CHECKING:
    from langchain_ltm.store import LongTermMemoryStore

__all__ = ["IndexFields", "copy_items", "index_fields"]

IndexFields = list[str] | Literal[False] | None
"""A ``PutOp.index``: the fields to embed, ``False`` for none, ``None`` for the defaults."""

_NUMBERED = re.compile(r"(.+)\.(\d+)")


def index_fields(paths: Sequence[str] | None) -> IndexFields:
    """The ``index`` that embeds the texts an item's stored ``paths`` name.

    A field with several texts (``tags[*]``) is stored as ``tags[*].0``, ``tags[*].1``, ...;
    a field with one text under its own path. ``None`` (the engine cannot tell): the
    target's default fields.

    Example:
        >>> index_fields(["title", "tags[*].0", "tags[*].1"])
        ['tags[*]', 'title']
        >>> index_fields([])
        False
    """
    if paths is None:
        return None
    if not paths:
        return False
    held = set(paths)
    fields = set()
    for path in paths:
        numbered = _NUMBERED.fullmatch(path)
        if numbered and {f"{numbered[1]}.0", f"{numbered[1]}.1"} <= held:
            fields.add(numbered[1])
        else:
            fields.add(path)
    return sorted(fields)


def copy_items(
    store: LongTermMemoryStore,
    items: Sequence[StoredItem],
    paths: Sequence[Sequence[str] | None],
    *,
    keep_ttl: bool,
) -> Logic[dict[ItemKey, dict[str, Any]]]:
    """Write ``items`` into ``store`` (a ``LongTermMemoryStore``) as they were stored.

    Args:
        store: The target store: its embeddings, default fields and backend are used.
        items: The source items, whole (``VectorBackend.get``).
        paths: Each item's embedded paths in the source (``VectorBackend.indexed_paths``;
            ``None`` where unknown).
        keep_ttl: Whether the target keeps TTLs (``store.supports_ttl``); otherwise the
            copies never expire.

    Returns:
        The values written, by item: as the source holds them, but on Postgres without the
        ``content_hash`` of a fact's text another item of the namespace holds.
    """
    puts = [
        PutOp(item.namespace, item.key, item.value, index=index_fields(item_paths))
        for item, item_paths in zip(items, paths, strict=True)
    ]
    plan = plan_batch(puts, store._tokenized_fields)
    # a field named like "a.0" reads as a field with several texts: index its paths as given
    literal = {
        i: put._replace(index=sorted(set(item_paths)))
        for i, (put, item_paths) in enumerate(zip(puts, paths, strict=True))
        if put.index
        and item_paths is not None
        and {path for path, _ in plan.puts[(put.namespace, put.key)].texts} != set(item_paths)
    }
    if literal:
        puts = [literal.get(i, put) for i, put in enumerate(puts)]
        plan = plan_batch(puts, store._tokenized_fields)
    texts = plan.document_texts
    vectors = (yield call(store._embedder, "embed", texts, False)) if texts else None
    row = {text: i for i, text in enumerate(texts)}
    records = []
    for item in items:
        planned = plan.puts[(item.namespace, item.key)]
        rows = [row[text] for _, text in planned.texts]
        records.append(
            Record(
                namespace=item.namespace,
                key=item.key,
                value=planned.value or {},
                texts=tuple(text for _, text in planned.texts),
                paths=tuple(path for path, _ in planned.texts),
                vectors=vectors[rows] if rows and vectors is not None else None,
                now=item.updated_at,
                created_at=item.created_at,
                ttl_minutes=item.ttl_minutes if keep_ttl else None,
                expires_at=item.expires_at if keep_ttl else None,
            )
        )
    # Postgres lets one item of a namespace hold a fact's hash: a second copy of a fact's
    # value (a snapshot's) goes without it, as a put of it would
    records = yield from unique_hashes(store._facts, records, [])
    if records:
        yield call(store.backend, "write", records, [])
    return {(r.namespace, r.key): r.value for r in records}
