"""Writes larger than one vectorstore call takes: split into calls the store accepts.

Chroma's ``upsert`` refuses more records than its client's ``max_batch_size`` (5,461 in
process); a batch of puts, one item with many indexed texts, or ``import_user`` above it
failed whole and stored nothing. The first test runs against the real limit; the others
lower the dialect's ``max_batch`` to watch every call on the sync, async and repair paths.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from langgraph.store.base import PutOp

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.vectorstore import vectorstore_backend
from langchain_ltm.backends.vectorstore._catalog import ADDING
from langchain_ltm.backends.vectorstore.dialects import chroma as chroma_dialect
from tests.fakes import KeywordEmbeddings
from tests.vectorstores import chroma, count_documents

DIMS = 64


def test_a_batch_above_chromas_max_batch_size_is_stored_whole(tmp_path):
    emb = KeywordEmbeddings(DIMS)
    vs = chroma(emb)
    limit = vs._client.get_max_batch_size()
    store = LongTermMemoryStore(vectorstore_backend(vs, catalog=tmp_path / "c.db"), embeddings=emb)
    n = limit + 100
    ops = [PutOp(("docs",), f"k{i}", {"text": f"note {i}"}) for i in range(n)]
    store.batch(ops)
    assert count_documents(vs) == n
    assert len(store.search(("docs",), query="note", limit=n)) == n
    store.batch(ops[:50])  # replaced: the new documents in, the old ones collected
    assert count_documents(vs) == n
    store.close()


def _limited(max_batch: int) -> tuple[Any, list[int]]:
    """Chroma's family with ``max_batch`` lowered, and the sizes of the adds it ran."""
    sizes: list[int] = []

    def add(vs: Any, ids: list[str], *rest: Any) -> None:
        sizes.append(len(ids))
        chroma_dialect.add(vs, ids, *rest)

    return dataclasses.replace(chroma_dialect.FAMILY, max_batch=max_batch, add=add), sizes


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_every_add_is_at_most_max_batch(mode, tmp_path):
    emb = KeywordEmbeddings(DIMS)
    vs = chroma(emb)
    family, sizes = _limited(4)
    backend = vectorstore_backend(vs, catalog=tmp_path / "c.db", family=family)
    store = LongTermMemoryStore(backend, embeddings=emb)
    ops = [PutOp(("docs", "u1"), f"k{i}", {"text": f"note {i}"}) for i in range(9)]
    ops.append(PutOp(("docs", "u1"), "tags", {"t": [f"tag {i}" for i in range(6)]}, ["t[*]"]))
    if mode == "async":
        asyncio.run(store.abatch(ops))
    else:
        store.batch(ops)
    assert sizes == [4, 4, 4, 3]  # 15 documents
    assert count_documents(vs) == 15
    assert backend.catalog.journal_ids(ADDING) == []
    assert len(store.search(("docs", "u1"), query="note", limit=20)) == 10
    store.close()


def test_repair_puts_back_in_calls_of_at_most_max_batch(tmp_path):
    emb = KeywordEmbeddings(DIMS)
    vs = chroma(emb)
    family, sizes = _limited(3)
    backend = vectorstore_backend(vs, catalog=tmp_path / "c.db", family=family)
    store = LongTermMemoryStore(backend, embeddings=emb)
    store.batch([PutOp(("docs",), f"k{i}", {"text": f"note {i}"}) for i in range(7)])
    vs._collection.delete(ids=vs._collection.get(include=[])["ids"])  # behind our back
    sizes.clear()
    assert backend.repair() == 7
    assert sizes == [3, 3, 1]
    assert count_documents(vs) == 7
    store.close()


def test_a_failure_between_two_adds_shows_nothing_and_repair_drops_the_rest(tmp_path):
    """Every document is journaled before the first add: what a failed add leaves."""
    emb = KeywordEmbeddings(DIMS)
    vs = chroma(emb)
    family, sizes = _limited(3)
    broken = dataclasses.replace(family, add=_failing_on_call(2, family.add))
    backend = vectorstore_backend(vs, catalog=tmp_path / "c.db", family=broken)
    store = LongTermMemoryStore(backend, embeddings=emb)
    store.put(("docs",), "k0", {"text": "old note"})
    ops = [PutOp(("docs",), f"k{i}", {"text": f"new note {i}"}) for i in range(7)]
    with pytest.raises(RuntimeError, match="second add"):
        store.batch(ops)
    assert sizes == [1, 3]  # the old put, then the first add of the batch
    assert count_documents(vs) == 1 + 3  # the old document and the first add's three
    assert [(h.key, h.value) for h in store.search(("docs",), query="note", limit=10)] == [
        ("k0", {"text": "old note"})
    ]
    assert len(backend.catalog.journal_ids(ADDING)) == 7
    assert backend.repair(grace_seconds=0) == 3
    assert count_documents(vs) == 1
    assert backend.catalog.journal_ids(ADDING) == []
    store.close()


def _failing_on_call(n: int, add: Any) -> Any:
    """``add`` that raises on its ``n``-th call within a batch (after its first put)."""
    calls = [0]

    def failing(vs: Any, ids: list[str], *rest: Any) -> None:
        calls[0] += 1
        if calls[0] == n + 1:  # the first call is the old put
            raise RuntimeError("the second add failed")
        add(vs, ids, *rest)

    return failing


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "10"])
def test_a_max_batch_that_is_not_a_positive_integer_is_refused(bad, tmp_path):
    family = dataclasses.replace(chroma_dialect.FAMILY, max_batch=lambda vs: bad)
    with pytest.raises(ValueError, match="positive integer"):
        vectorstore_backend(
            chroma(KeywordEmbeddings(DIMS)), catalog=tmp_path / "c.db", family=family
        )
