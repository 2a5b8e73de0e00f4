"""The generic engine's core: native async, value filters in the engine, ingest, repair.

Probes are real stores (Chroma in process, FAISS, an ``InMemoryVectorStore`` subclass)
that record which of their methods ran; results are compared with the sync path and with
brute-force oracles computed from the embeddings.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.base import PutOp

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.base import SearchRequest
from langchain_ltm.backends.vectorstore import (
    StoreFamily,
    VectorStoreBackend,
    register_vectorstore,
    vectorstore_backend,
)
from langchain_ltm.backends.vectorstore._catalog import ADDING, Catalog
from langchain_ltm.backends.vectorstore.dialects import chroma as chroma_dialect
from tests.fakes import KeywordEmbeddings
from tests.store_contract import BaseStoreContract
from tests.vectorstores import chroma, faiss

DIMS = 64
WORDS = ["tea", "coffee", "lisbon", "dog", "cat", "piano", "rain", "garden", "python"]


class _Recording(InMemoryVectorStore):
    """A real in-memory store with precomputed-vector calls, sync and native async.

    Every call is recorded by name, so a test sees which path ran.
    """

    def __init__(self, embedding):
        super().__init__(embedding)
        self.calls: list[str] = []

    def add_embeddings(self, text_embeddings, metadatas=None, ids=None):
        self.calls.append("add_embeddings")
        self._put(text_embeddings, metadatas, ids)
        return ids

    async def aadd_embeddings(self, text_embeddings, metadatas=None, ids=None):
        self.calls.append("aadd_embeddings")
        await asyncio.sleep(0)  # a real coroutine: yields to the loop
        self._put(text_embeddings, metadatas, ids)
        return ids

    def _put(self, text_embeddings, metadatas, ids):
        for (text, vector), meta, id_ in zip(text_embeddings, metadatas, ids, strict=True):
            self.store[id_] = {"id": id_, "vector": vector, "text": text, "metadata": meta}

    def similarity_search_with_score_by_vector(self, embedding, k=4, filter=None):
        self.calls.append("similarity_search_with_score_by_vector")
        return self._scored(embedding, k, filter)

    async def asimilarity_search_with_score_by_vector(self, embedding, k=4, filter=None):
        self.calls.append("asimilarity_search_with_score_by_vector")
        await asyncio.sleep(0)
        return self._scored(embedding, k, filter)

    def _scored(self, embedding, k, filter):
        keep = lambda doc: all(doc.metadata.get(k_) == v for k_, v in filter.items())  # noqa: E731
        found = self._similarity_search_with_score_by_vector(embedding, k, filter=keep)
        return [(doc, score) for doc, score, _ in found]


_RECORDING = StoreFamily("recording", filter_builder=dict, distance="similarity")


def _fill(store, users=3, per_user=12):
    for u in range(users):
        for i in range(per_user):
            words = " ".join(WORDS[(u + i * j) % len(WORDS)] for j in range(1, 4))
            store.put(("docs", f"u{u}"), str(i), {"text": f"{words} {i}", "n": i})


def _hits(results):
    return [(h.namespace, h.key, h.value, round(h.score, 4)) for h in results]


def test_async_calls_use_the_stores_own_coroutines(tmp_path):
    emb = KeywordEmbeddings(DIMS)
    vs_sync, vs_async = _Recording(emb), _Recording(emb)
    sync = LongTermMemoryStore(
        vectorstore_backend(vs_sync, catalog=tmp_path / "s.db", family=_RECORDING),
        embeddings=emb,
        fields=["text"],
    )
    native = LongTermMemoryStore(
        vectorstore_backend(vs_async, catalog=tmp_path / "a.db", family=_RECORDING),
        embeddings=emb,
        fields=["text"],
    )
    assert native.backend.capabilities.extra["native_async"] == {"add": True, "search": True}
    _fill(sync)

    async def run():
        for u in range(3):
            for i in range(12):
                words = " ".join(WORDS[(u + i * j) % len(WORDS)] for j in range(1, 4))
                await native.aput(("docs", f"u{u}"), str(i), {"text": f"{words} {i}", "n": i})
        await native.aput(("docs", "u0"), "3", {"text": "tea again", "n": 3})  # a replace
        return [
            await native.asearch(("docs", f"u{u}"), query=q, limit=5)
            for u in range(3)
            for q in ("tea", "dog garden", "python rain")
        ]

    sync.put(("docs", "u0"), "3", {"text": "tea again", "n": 3})
    vs_async.calls.clear()
    got = asyncio.run(run())
    assert set(vs_async.calls) == {"aadd_embeddings", "asimilarity_search_with_score_by_vector"}
    vs_sync.calls.clear()
    want = [
        sync.search(("docs", f"u{u}"), query=q, limit=5)
        for u in range(3)
        for q in ("tea", "dog garden", "python rain")
    ]
    assert set(vs_sync.calls) == {"similarity_search_with_score_by_vector"}
    assert [_hits(r) for r in got] == [_hits(r) for r in want]
    assert all(len(r) == 5 for r in got)
    # the replaced document went through the store's own adelete: one document per item
    assert len(vs_async.store) == len(vs_sync.store) == 36
    sync.close()
    native.close()


def test_a_familys_own_coroutines_run_over_chroma(tmp_path):
    """aadd/asearch given by the family (the store has none natively): those are awaited."""
    emb = KeywordEmbeddings(DIMS)
    ran: list[str] = []

    async def aadd(vs, ids, texts, vectors, metadatas):
        ran.append("aadd")
        await asyncio.to_thread(chroma_dialect.add, vs, ids, texts, vectors, metadatas)

    async def asearch(vs, vector, k, where):
        ran.append("asearch")
        return await asyncio.to_thread(chroma_dialect.search, vs, vector, k, where)

    family = dataclasses.replace(chroma_dialect.FAMILY, aadd=aadd, asearch=asearch)
    vs = chroma(emb)
    store = LongTermMemoryStore(
        vectorstore_backend(vs, catalog=tmp_path / "c.db", family=family),
        embeddings=emb,
        fields=["text"],
    )

    async def run():
        await store.aput(("docs", "u1"), "a", {"text": "green tea"})
        await store.aput(("docs", "u1"), "b", {"text": "black coffee"})
        await store.aput(("docs", "u1"), "a", {"text": "green tea with honey"})
        return await store.asearch(("docs", "u1"), query="tea", limit=2)

    got = asyncio.run(run())
    assert ran.count("aadd") == 3 and ran.count("asearch") >= 1
    assert _hits(got) == _hits(store.search(("docs", "u1"), query="tea", limit=2))
    assert [h.key for h in got] == ["a", "b"]
    assert vs._collection.count() == 2  # the replaced version's document is gone
    store.close()


def test_stores_without_native_async_keep_the_thread_pool(tmp_path):
    emb = KeywordEmbeddings(DIMS)
    for vs, name in ((chroma(emb), "c"), (faiss(emb, tmp_path / "f"), "f")):
        backend = vectorstore_backend(vs, catalog=tmp_path / f"{name}.db")
        assert backend.capabilities.extra["native_async"] == {"add": False, "search": False}
        backend.close()
    off = StoreFamily("off", filter_builder=dict, distance="similarity", native_async=False)
    backend = vectorstore_backend(_Recording(emb), catalog=tmp_path / "o.db", family=off)
    assert backend.capabilities.extra["native_async"] == {"add": False, "search": False}
    backend.close()


def test_one_batch_of_puts_is_one_vectorstore_add(tmp_path):
    emb = KeywordEmbeddings(DIMS)
    vs = _Recording(emb)
    store = LongTermMemoryStore(
        vectorstore_backend(vs, catalog=tmp_path / "c.db", family=_RECORDING),
        embeddings=emb,
        fields=["text"],
    )
    store.batch([PutOp(("docs", "u1"), str(i), {"text": f"tea {i}"}) for i in range(20)])
    assert vs.calls.count("add_embeddings") == 1
    assert len(vs.store) == 20
    store.close()


# ---- value filters pushed into the engine ------------------------------------------------


def _oracle(emb, items, query, predicate, limit):
    q = np.array(emb.embed_query(query))
    scored = []
    for key, value in items.items():
        if predicate(value):
            v = np.array(emb.embed_documents([value["text"]])[0])
            scored.append((float(q @ v), key))
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    return [key for _, key in scored[:limit]]


@pytest.mark.parametrize("kind", ["chroma", "faiss"])
def test_a_rare_value_filter_fills_the_limit_from_the_engine(kind, tmp_path):
    emb = KeywordEmbeddings(DIMS)
    vs = chroma(emb) if kind == "chroma" else faiss(emb, tmp_path / "f")
    backend = vectorstore_backend(vs, catalog=tmp_path / "c.db")
    store = LongTermMemoryStore(backend, embeddings=emb, fields=["text"])
    items = {}
    for i in range(300):
        rare = i % 40 == 7  # 8 of 300
        words = " ".join(WORDS[(i * j) % len(WORDS)] for j in range(1, 4))
        items[str(i)] = {"text": f"{words} {i}", "kind": "rare" if rare else "common", "n": i}
    store.batch([PutOp(("docs", "u1"), k, v) for k, v in items.items()])
    for u in range(5):  # other users' rare documents, nearer the query
        store.batch(
            [
                PutOp(("docs", f"x{u}"), str(i), {"text": "tea tea", "kind": "rare"})
                for i in range(30)
            ]
        )
    request = SearchRequest(("docs", "u1"), np.zeros((1, DIMS)), _compiled({"kind": "rare"}), 5)
    where = backend.search_filter(request)
    assert "ltm_v_kind" in str(where)  # pushed into the engine's own filter
    if kind == "chroma":  # the engine applies it by itself: exactly u1's eight rare documents
        raw = vs._collection.get(where=where, include=["metadatas"])
        assert sorted(int(m["ltm_key"]) for m in raw["metadatas"]) == list(range(7, 300, 40))
        assert {(m["ltm_n1"], m["ltm_v_kind"]) for m in raw["metadatas"]} == {("u1", "rare")}
    # a vector query under it never strays outside the scope; Chroma's HNSW, searched under
    # a filter this restrictive, sometimes returns none of them (about one build in six,
    # with these duplicate-heavy vectors): the store then answers from the catalog, below
    results, _ = backend._vs_search(emb.embed_query("tea"), 1000, where)
    assert len(results) <= 8
    assert {(d.metadata["ltm_n1"], d.metadata["ltm_v_kind"]) for d, _ in results} <= {
        ("u1", "rare")
    }
    if kind == "faiss":  # exact search: every one of them
        assert len(results) == 8
    for query in ("tea", "dog piano", "garden rain lisbon"):
        hits = store.search(("docs", "u1"), query=query, limit=5, filter={"kind": "rare"})
        want = _oracle(emb, items, query, lambda v: v["kind"] == "rare", 5)
        assert [h.key for h in hits] == want
        assert len(hits) == 5
        # a condition the engine cannot take (a number): checked on the catalog, still full
        hits = store.search(("docs", "u1"), query=query, limit=5, filter={"n": 247})
        assert [h.key for h in hits] == ["247"]
        both = {"kind": "rare", "n": {"$gte": 100}}
        hits = store.search(("docs", "u1"), query=query, limit=4, filter=both)
        want = _oracle(emb, items, query, lambda v: v["kind"] == "rare" and v["n"] >= 100, 4)
        assert [h.key for h in hits] == want
    # a value changed: the old string no longer matches, the new one does
    store.put(("docs", "u1"), "7", {"text": items["7"]["text"], "kind": "common", "n": 7})
    hits = store.search(("docs", "u1"), query="tea", limit=10, filter={"kind": "rare"})
    assert "7" not in [h.key for h in hits] and len(hits) == 7
    store.close()


def _compiled(raw):
    from langchain_ltm._filters import compile_filter

    return compile_filter(raw)


def test_a_catalog_from_before_value_metadata_filters_in_python_only(tmp_path):
    """Its documents lack ltm_v_*: pushing the filter down would drop matching items."""
    emb = KeywordEmbeddings(DIMS)
    vs = chroma(emb)
    path = tmp_path / "c.db"
    vectorstore_backend(vs, catalog=path).close()
    with sqlite3.connect(path) as conn:  # as the previous release left it
        conn.execute("DELETE FROM ltm_items_meta WHERE name = 'vectorstore_fields'")
    old = VectorStoreBackend(vs, catalog=path)
    assert old.catalog.value_fields is False
    assert old.capabilities.extra["value_filter_pushdown"] is False
    store = LongTermMemoryStore(old, embeddings=emb, fields=["text"])
    store.put(("docs", "u1"), "a", {"text": "tea", "kind": "rare"})
    assert not any(k.startswith("ltm_v_") for k in vs._collection.get()["metadatas"][0])
    hits = store.search(("docs", "u1"), query="tea", limit=3, filter={"kind": "rare"})
    assert [h.key for h in hits] == ["a"]
    old._value_fields = True  # what pushing down would do to such documents:
    request = SearchRequest(("docs", "u1"), None, _compiled({"kind": "rare"}), 3)
    results, _ = old._vs_search(emb.embed_query("tea"), 16, old.search_filter(request))
    assert results == []  # the engine finds none of them
    old._value_fields = False
    store.close()


def test_only_short_identifier_fields_are_copied_into_metadata(tmp_path):
    from langchain_ltm.backends.vectorstore._catalog import pushable, value_metadata

    value = {"kind": "a", "long": "x" * 65, "n": 3, "flag": True, "bad key": "b", "ok_2": ""}
    assert value_metadata(value) == {"ltm_v_kind": "a", "ltm_v_ok_2": ""}
    assert pushable(("kind",), "$eq", "a")
    assert not pushable(("kind",), "$eq", "x" * 65)
    assert not pushable(("kind",), "$ne", "a")
    assert not pushable(("n",), "$eq", 3)
    assert not pushable(("a", "b"), "$eq", "a")
    assert not pushable(("bad key",), "$eq", "b")


# ---- ingest: journal transactions without fsync, still crash-safe -------------------------


def test_a_killed_process_keeps_its_unsynced_journal_rows(tmp_path):
    path = tmp_path / "c.db"
    code = textwrap.dedent(
        f"""
        import os
        from langchain_ltm.backends.vectorstore._catalog import Catalog, ADDING
        cat = Catalog({str(path)!r})
        cat.setup()
        cat.journal_add(["doc-a", "doc-b"], ADDING)
        os._exit(9)  # killed before any synced commit, connections never closed
        """
    )
    done = subprocess.run([sys.executable, "-c", code], check=False)
    assert done.returncode == 9
    cat = Catalog(path)
    cat.setup()
    assert sorted(r.doc_id for r in cat.journal_pending(grace_seconds=-1)) == ["doc-a", "doc-b"]
    cat.journal_clear(["doc-a"])
    assert [r.doc_id for r in cat.journal_pending(grace_seconds=-1)] == ["doc-b"]
    with cat._connection() as conn:  # the pooled connection is back to full fsync
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2
    cat.close()


# ---- full repair: documents missing from the store come back, not re-embedded -------------


def _count(vs):
    return vs._collection.count() if hasattr(vs, "_collection") else vs.index.ntotal


def _ours(vs, vector, k):
    """Ids of our documents among the k nearest (never someone else's)."""
    found = vs.similarity_search_by_vector(vector, k=k)
    return [d.id for d in found if "ltm_store" in d.metadata]


@pytest.mark.parametrize("kind", ["chroma", "faiss"])
def test_repair_puts_back_documents_deleted_from_the_store(kind, tmp_path):
    emb = KeywordEmbeddings(DIMS)
    vs = chroma(emb) if kind == "chroma" else faiss(emb, tmp_path / "f")
    backend = vectorstore_backend(vs, catalog=tmp_path / "c.db")
    store = LongTermMemoryStore(backend, embeddings=emb, fields=["text", "tags[*]"])
    _fill(store)
    store.put(("docs", "u0"), "multi", {"text": "piano lessons", "tags": ["cat", "rain dog"]})

    def results():
        return {
            u: _hits(store.search(("docs", f"u{u}"), query="tea dog", limit=8)) for u in range(3)
        }

    before = results()
    docs = _count(vs)
    lost = _ours(vs, emb.embed_query("tea dog"), 15) + _ours(vs, emb.embed_query("cat"), 5)
    lost = list(dict.fromkeys(lost))
    originals = {d.id: (d.page_content, d.metadata) for d in vs.get_by_ids(lost)}
    vs.delete(lost)
    assert _count(vs) == docs - len(lost)
    assert results() != before
    embedded = emb.texts_embedded
    assert backend.repair() == len(lost)
    assert emb.texts_embedded == embedded  # the catalog's vectors, nothing embedded again
    assert _count(vs) == docs
    assert results() == before
    assert {d.id: (d.page_content, d.metadata) for d in vs.get_by_ids(lost)} == originals
    assert backend.repair() == 0  # nothing left to do
    store.close()


def test_repair_after_loading_an_older_faiss_save(tmp_path):
    """The index saved before the last writes, the catalog after them: repair rejoins them."""
    emb = KeywordEmbeddings(DIMS)
    folder = tmp_path / "f"
    vs = faiss(emb, folder)
    catalog = tmp_path / "c.db"
    backend = vectorstore_backend(vs, catalog=catalog)
    store = LongTermMemoryStore(backend, embeddings=emb, fields=["text"])
    store.put(("docs", "u1"), "a", {"text": "green tea"})
    vs.save_local(str(folder))  # the last save
    store.put(("docs", "u1"), "b", {"text": "tea with lemon"})
    store.put(("docs", "u1"), "a", {"text": "green tea with honey"})  # replaces a saved one
    want = _hits(store.search(("docs", "u1"), query="tea", limit=5))
    backend.close()  # the process ends without saving
    from langchain_community.vectorstores import FAISS

    old = FAISS.load_local(str(folder), emb, allow_dangerous_deserialization=True)
    again = VectorStoreBackend(old, catalog=catalog)
    store = LongTermMemoryStore(again, embeddings=emb, fields=["text"])
    q = emb.embed_query("tea")

    def in_engine():
        found, _ = again._vs_search(q, 10, again.scope_filter(("docs", "u1")))
        return sorted((d.metadata["ltm_key"], d.page_content) for d, _ in found)

    assert in_engine() == [("a", "green tea")]  # the stale saved version only
    # searches are still whole: the catalog's exact search answers what the engine lacks
    assert _hits(store.search(("docs", "u1"), query="tea", limit=5)) == want
    assert again.repair() == 3  # b and the new a put back, the stale old a deleted
    assert in_engine() == [("a", "green tea with honey"), ("b", "tea with lemon")]
    assert _hits(store.search(("docs", "u1"), query="tea", limit=5)) == want
    assert old.index.ntotal == 3  # the unrelated document, a, b
    store.close()


class _Crash(RuntimeError):
    pass


@pytest.mark.parametrize("kind", ["chroma", "faiss"])
def test_a_crash_during_repair_is_repaired_by_running_it_again(kind, tmp_path, monkeypatch):
    emb = KeywordEmbeddings(DIMS)
    vs = chroma(emb) if kind == "chroma" else faiss(emb, tmp_path / "f")
    catalog = tmp_path / "c.db"
    backend = vectorstore_backend(vs, catalog=catalog)
    store = LongTermMemoryStore(backend, embeddings=emb, fields=["text"])
    _fill(store, users=1, per_user=6)
    want = _hits(store.search(("docs", "u0"), query="tea", limit=6))
    docs = _count(vs)
    lost = _ours(vs, emb.embed_query("tea"), 3)
    vs.delete(lost)

    def crash(*args, **kwargs):
        raise _Crash("killed after the re-add, before checking the versions")

    monkeypatch.setattr(backend.catalog, "get", crash)
    with pytest.raises(_Crash):
        backend.repair()
    monkeypatch.undo()
    assert _count(vs) == docs  # re-added, still journaled `adding`
    assert len(backend.catalog.journal_pending(grace_seconds=-1)) == len(lost)
    backend.close()
    again = VectorStoreBackend(vs, catalog=catalog, grace_seconds=0)  # opening repairs
    assert again.catalog.journal_pending(grace_seconds=-1) == []
    assert _count(vs) == docs  # the re-added documents are current: kept
    store = LongTermMemoryStore(again, embeddings=emb, fields=["text"])
    assert _hits(store.search(("docs", "u0"), query="tea", limit=6)) == want
    assert again.repair() == 0
    store.close()


def test_repair_journals_what_it_adds(tmp_path):
    """An item replaced while repair re-adds its old version: that document does not stay."""
    emb = KeywordEmbeddings(DIMS)
    vs = chroma(emb)
    backend = vectorstore_backend(vs, catalog=tmp_path / "c.db")
    store = LongTermMemoryStore(backend, embeddings=emb, fields=["text"])
    store.put(("docs", "u1"), "a", {"text": "green tea"})
    vs.delete(vs._collection.get()["ids"])
    real_add = backend._vs_add
    seen = []

    def add_then_replace(ids, texts, vectors, metas):
        backend._vs_add = real_add  # type: ignore[method-assign]
        seen.append(backend.catalog.journal_pending(grace_seconds=-1))
        real_add(ids, texts, vectors, metas)
        store.put(("docs", "u1"), "a", {"text": "black coffee"})  # another writer, meanwhile

    backend._vs_add = add_then_replace  # type: ignore[method-assign]
    assert backend.repair() == 0  # the version it re-added was replaced: removed again
    assert len(seen[0]) == 1  # journaled `adding` before the store saw it
    assert vs._collection.count() == 1
    hits = store.search(("docs", "u1"), query="coffee", limit=3)
    assert [(h.key, h.value["text"]) for h in hits] == [("a", "black coffee")]
    assert backend.catalog.journal_pending(grace_seconds=-1) == []
    store.close()


def test_journal_rows_are_adding_then_cleared(tmp_path):
    emb = KeywordEmbeddings(DIMS)
    backend = vectorstore_backend(chroma(emb), catalog=tmp_path / "c.db")
    backend.catalog.journal_add(["x"], ADDING)
    assert [r[:3] for r in backend.catalog.journal_pending(grace_seconds=-1)] == [("x", "", ADDING)]
    assert backend.repair(grace_seconds=0) == 0  # not in the store: nothing to delete
    assert backend.catalog.journal_pending(grace_seconds=-1) == []
    backend.close()


class TestNativeAsyncContract(BaseStoreContract):
    """The whole BaseStore contract, sync and async, on a store with native coroutines."""

    @pytest.fixture
    def store_factory(self, tmp_path):
        opened: list[LongTermMemoryStore] = []
        names = iter(range(1000))

        def make(fields=None, ttl=None) -> LongTermMemoryStore:
            options = {} if ttl is None else {"ttl": ttl}
            emb = KeywordEmbeddings(DIMS)
            backend = vectorstore_backend(
                _Recording(emb), catalog=tmp_path / f"n{next(names)}.db", family=_RECORDING
            )
            assert backend.capabilities.extra["native_async"] == {"add": True, "search": True}
            store = LongTermMemoryStore(backend, embeddings=emb, fields=fields, **options)
            opened.append(store)
            return store

        yield make
        for store in opened:
            store.close()


def test_a_filter_builder_override_keeps_the_familys_other_calls(tmp_path):
    async def asearch(vs, vector, k, where):  # pragma: no cover - never awaited here
        return []

    family = dataclasses.replace(_RECORDING, asearch=asearch, native_async=True)
    register_vectorstore(_Registered, family)
    backend = vectorstore_backend(
        _Registered(KeywordEmbeddings(DIMS)),
        catalog=tmp_path / "c.db",
        filter_builder=lambda eq: {"all": dict(eq)},
    )
    assert backend.family.asearch is asearch
    assert backend.family.distance == "similarity"
    assert backend.scope_filter(("m",)) == {
        "all": {"ltm_store": backend.catalog.store_id, "ltm_n0": "m"}
    }
    backend.close()


class _Registered(_Recording):
    pass
