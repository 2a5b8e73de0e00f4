"""The generic engine's own promises, on Chroma, FAISS and Milvus Lite in process.

Cosine scores whatever the engine's distance; the scope sent in the engine's own filter; a
search that never under-fills; nothing half-visible after a crash, and repair(); clear
errors for stores that lack what is needed; a dialect added in a few lines.
"""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from langgraph.store.base import PutOp

from langchain_ltm import LongTermMemoryStore, UnsupportedVectorStoreError
from langchain_ltm.backends import backend_for
from langchain_ltm.backends.sqlite import _sql as sql
from langchain_ltm.backends.vectorstore import (
    VectorStoreBackend,
    register_vectorstore,
    vectorstore_backend,
)
from langchain_ltm.backends.vectorstore._catalog import ADDING, GARBAGE
from langchain_ltm.backends.vectorstore._repair import documents_of
from tests.fakes import KeywordEmbeddings
from tests.unit_tests.test_vectorstore_engine import _RECORDING, _Recording
from tests.vectorstores import KINDS, chroma, count_documents, faiss, make_vectorstore, milvus

DIMS = 64

_STORES = {
    "chroma-l2": lambda emb, tmp: chroma(emb),
    "chroma-cosine": lambda emb, tmp: chroma(emb, space="cosine"),
    "chroma-ip": lambda emb, tmp: chroma(emb, space="ip"),
    "faiss-l2": lambda emb, tmp: faiss(emb, tmp / "l2"),
    "faiss-ip": lambda emb, tmp: faiss(emb, tmp / "ip", inner_product=True),
    "milvus-l2": lambda emb, tmp: milvus(emb, tmp / "m.db", metric="L2"),
    "milvus-ip": lambda emb, tmp: milvus(emb, tmp / "m.db", metric="IP"),
    "milvus-cosine": lambda emb, tmp: milvus(emb, tmp / "m.db", metric="COSINE"),
}


@pytest.mark.parametrize("kind", list(_STORES))
def test_scores_are_cosine_similarities(kind, tmp_path):
    emb = KeywordEmbeddings(DIMS)
    vs = _STORES[kind](emb, tmp_path)
    backend = vectorstore_backend(vs, catalog=tmp_path / "c.db")
    store = LongTermMemoryStore(backend, embeddings=emb, fields=["text"])
    texts = ["green tea with honey", "black coffee", "tea and coffee together"]
    for i, text in enumerate(texts):
        store.put(("docs", "u1"), str(i), {"text": text})
    query = "green tea"
    hits = store.search(("docs", "u1"), query=query, limit=3)
    q = np.array(emb.embed_query(query))
    for hit in hits:
        v = np.array(emb.embed_documents([hit.value["text"]])[0])
        expected = float(q @ v / np.linalg.norm(q) / np.linalg.norm(v))
        assert hit.score == pytest.approx(expected, abs=1e-5)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    store.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_user_search_never_under_fills(kind, tmp_path):
    """Many other users' documents nearer the query than any of u1's: u1 still gets k."""
    emb = KeywordEmbeddings(DIMS)
    vs = make_vectorstore(kind, emb, tmp_path)
    backend = vectorstore_backend(vs, catalog=tmp_path / "c.db")
    store = LongTermMemoryStore(backend, embeddings=emb)
    for u in range(40):
        for i in range(10):
            store.put(("docs", f"other{u}"), str(i), {"text": f"tea tea tea {i}"})
    for i in range(12):
        store.put(("docs", "u1"), str(i), {"text": f"coffee note {i}"})
    hits = store.search(("docs", "u1"), query="tea", limit=10)
    assert len(hits) == 10
    assert {tuple(h.namespace) for h in hits} == {("docs", "u1")}
    # a value filter checked on the catalog: still filled from the scope
    hits = store.search(("docs", "u1"), query="tea", limit=3, filter={"text": "coffee note 7"})
    assert [h.key for h in hits] == ["7"]
    store.close()


def test_the_scope_is_in_the_engines_filter(tmp_path):
    emb = KeywordEmbeddings(DIMS)
    backend = vectorstore_backend(chroma(emb), catalog=tmp_path / "c.db")
    where = backend.scope_filter(("memories", "alice"))
    sid = backend.catalog.store_id
    assert where == {
        "$and": [
            {"ltm_store": {"$eq": sid}},
            {"ltm_n0": {"$eq": "memories"}},
            {"ltm_n1": {"$eq": "alice"}},
        ]
    }
    assert backend.scope_filter(()) == {"ltm_store": {"$eq": sid}}
    fb = vectorstore_backend(faiss(emb, tmp_path / "f"), catalog=tmp_path / "d.db")
    assert fb.scope_filter(("m",)) == {"ltm_store": fb.catalog.store_id, "ltm_n0": "m"}
    backend.close()
    fb.close()


@pytest.mark.parametrize("kind", KINDS)
def test_vectors_are_handed_over_and_other_documents_untouched(kind, tmp_path):
    emb = KeywordEmbeddings(DIMS)
    vs = make_vectorstore(kind, emb, tmp_path)
    if kind == "chroma":
        vs.add_texts(["someone else's document"], metadatas=[{"owner": "them"}], ids=["theirs"])
    if kind == "milvus":
        unrelated = [1.0] + [0.0] * (DIMS - 1)
        vs.add_embeddings(["someone else's"], [unrelated], [{"owner": "them"}], ids=["theirs"])
    before = emb.texts_embedded
    store = LongTermMemoryStore(vs)
    store.remember("alice", ["likes tea", "lives in Lisbon", "has a dog"])
    assert emb.texts_embedded - before == 3  # one batch, embedded once, by us
    assert emb.document_calls >= 1
    store.clear_user("alice")
    assert store.list_all("alice") == []
    if kind == "chroma":
        assert [d.id for d in vs.get_by_ids(["theirs"])] == ["theirs"]
    assert count_documents(vs) == 1  # the unrelated document only
    store.close()


class _Crash(RuntimeError):
    pass


# the crash cases run on both write paths: "sync" (put), and "async" (aput: the store's own
# coroutines where it has them, "recording" and PGVectorStore; the thread pool elsewhere)
CRASH_KINDS = [*KINDS, "recording"]
MODES = ["sync", "async"]


def _crash_store(kind, tmp_path):
    """A fresh store of ``kind``, its backend and the vectorstore (``recording``: native async)."""
    emb = KeywordEmbeddings(DIMS)
    if kind == "recording":
        vs = _Recording(emb)
        backend = vectorstore_backend(vs, catalog=tmp_path / "c.db", family=_RECORDING)
    else:
        vs = make_vectorstore(kind, emb, tmp_path)
        backend = vectorstore_backend(vs, catalog=tmp_path / "c.db")
    return LongTermMemoryStore(backend, embeddings=emb), backend, vs


def _documents(vs):
    return len(vs.store) if isinstance(vs, InMemoryVectorStore) else count_documents(vs)


def _put(store, mode, namespace, key, value):
    if mode == "async":
        asyncio.run(store.aput(namespace, key, value))
    else:
        store.put(namespace, key, value)


def _write_batch(store, mode, namespace, texts):
    """One batch of puts ``{key: text}`` (``store.batch`` or ``store.abatch``)."""
    ops = [PutOp(namespace, key, {"text": text}) for key, text in texts.items()]
    if mode == "async":
        asyncio.run(store.abatch(ops))
    else:
        store.batch(ops)


def _versions(backend, store, prefix):
    """What the store holds under ``prefix`` and what is current, as ``(key, ltm_at)`` lists.

    The first list comes from the vectorstore itself (one ranked search scoped to
    ``prefix``, wide enough for everything), the second from the catalog's items.
    """
    probe = [1.0] + [0.0] * (DIMS - 1)
    found, _ = backend._vs_search(probe, 1000, backend.scope_filter(prefix))
    held = [(d.metadata["ltm_key"], d.metadata["ltm_at"]) for d, _ in found]
    current = [(it.key, sql.to_us(it.updated_at)) for it in store.search(prefix, limit=1000)]
    return held, current


def _native_adds(backend, vs, monkeypatch):
    """Count the store's own ``aadd_embeddings`` calls (when the async path uses them)."""
    calls: list[int] = []
    if backend.capabilities.extra["native_async"]["add"]:
        inner = vs.aadd_embeddings

        async def counted(*args, **kwargs):
            calls.append(1)
            return await inner(*args, **kwargs)

        monkeypatch.setattr(vs, "aadd_embeddings", counted)
    return calls


def _fail_deletes(monkeypatch, reason):
    def fail(*args, **kwargs):
        raise _Crash(reason)

    async def afail(*args, **kwargs):
        raise _Crash(reason)

    monkeypatch.setattr("langchain_ltm.backends.vectorstore._store_calls.delete_present", fail)
    monkeypatch.setattr("langchain_ltm.backends.vectorstore._store_calls.adelete_present", afail)


def check_crash_before_commit(kind, mode, tmp_path, monkeypatch):
    """Killed between the vectorstore add and the catalog commit: the old version is whole."""
    store, backend, vs = _crash_store(kind, tmp_path)
    store.put(("docs", "u1"), "a", {"text": "green tea"})
    docs_before = _documents(vs)
    native = _native_adds(backend, vs, monkeypatch)

    def crash(*args, **kwargs):
        raise _Crash("killed between the vectorstore add and the catalog commit")

    monkeypatch.setattr(backend.catalog, "commit", crash)
    _fail_deletes(monkeypatch, "and the process died before cleaning up")
    with pytest.raises(_Crash):
        _put(store, mode, ("docs", "u1"), "a", {"text": "black coffee"})
    monkeypatch.undo()
    if mode == "async" and backend.capabilities.extra["native_async"]["add"]:
        assert native == [1]  # the add that crashed was the store's own coroutine
    # the new documents were written, but nothing shows them: the old version is whole
    assert _documents(vs) == docs_before + 1
    assert store.get(("docs", "u1"), "a").value == {"text": "green tea"}
    hits = store.search(("docs", "u1"), query="coffee", limit=5)
    assert [(h.key, h.value) for h in hits] == [("a", {"text": "green tea"})]
    backend.close()
    # re-opening repairs: the orphan goes once its writer is surely gone
    again = VectorStoreBackend(
        vs, catalog=tmp_path / "c.db", family=backend.family, grace_seconds=0
    )
    assert _documents(vs) == docs_before
    store = LongTermMemoryStore(again, embeddings=store.embeddings)
    assert store.search(("docs", "u1"), query="tea", limit=5)[0].value == {"text": "green tea"}
    # and re-running the write lands it whole
    _put(store, mode, ("docs", "u1"), "a", {"text": "black coffee"})
    hits = store.search(("docs", "u1"), query="coffee", limit=5)
    assert [(h.key, h.value) for h in hits] == [("a", {"text": "black coffee"})]
    assert _documents(vs) == docs_before
    store.close()


def check_crash_after_commit(kind, mode, tmp_path, monkeypatch):
    """The store went away after the commit: the new version shows, the old one is garbage."""
    store, backend, vs = _crash_store(kind, tmp_path)
    store.put(("docs", "u1"), "a", {"text": "green tea"})
    docs_before = _documents(vs)
    native = _native_adds(backend, vs, monkeypatch)
    _fail_deletes(monkeypatch, "the vectorstore went away before the old documents were deleted")
    _put(store, mode, ("docs", "u1"), "a", {"text": "black coffee"})  # landed: not an error
    monkeypatch.undo()
    if mode == "async" and backend.capabilities.extra["native_async"]["add"]:
        assert native == [1]
    assert _documents(vs) == docs_before + 1  # the old document is still there...
    hits = store.search(("docs", "u1"), query="tea", limit=5)
    assert [(h.key, h.value) for h in hits] == [("a", {"text": "black coffee"})]  # ...unseen
    assert backend.repair() == 1
    assert _documents(vs) == docs_before
    assert backend.repair() == 0  # nothing left to fix
    store.close()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", CRASH_KINDS)
def test_a_crash_before_the_catalog_commit_leaves_the_old_version(
    kind, mode, tmp_path, monkeypatch
):
    check_crash_before_commit(kind, mode, tmp_path, monkeypatch)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", CRASH_KINDS)
def test_a_crash_after_the_commit_shows_the_new_version_only(kind, mode, tmp_path, monkeypatch):
    check_crash_after_commit(kind, mode, tmp_path, monkeypatch)


def _copy_of_documents(backend):
    """The documents the store holds now (from the catalog's vectors): an older backup's copy."""
    docs = ([], [], [], [])
    for page in backend.catalog.stored_docs():
        for part, more in zip(docs, documents_of(backend, page), strict=True):
            part.extend(more)
    return docs


def check_repair_drops_strays(kind, tmp_path):
    """The store restored from an older copy: ``repair()`` deletes what is no longer ours.

    A forgotten user's text and a replaced version come back with the copy; the full
    repair deletes both (Redis and Milvus return search results without ids: the ids come
    from the documents' metadata) and keeps the current documents.
    """
    store, backend, vs = _crash_store(kind, tmp_path)
    store.put(("docs", "bob"), "pin", {"text": "Bob's PIN hint is his dog Rex"})
    store.put(("docs", "alice"), "city", {"text": "Alice lives in Lisbon"})
    store.put(("docs", "alice"), "drink", {"text": "likes green tea"})
    docs_before = _documents(vs)
    backup = _copy_of_documents(backend)
    store.delete(("docs", "bob"), "pin")  # Bob is forgotten
    store.put(("docs", "alice"), "drink", {"text": "likes black coffee"})
    assert _documents(vs) == docs_before - 1
    backend._vs_add(*backup)  # the older copy restored behind the catalog's back
    probe = [1.0] + [0.0] * (DIMS - 1)

    def in_engine():
        found, _ = backend._vs_search(probe, 100, backend.scope_filter(()))
        return sorted(json.loads(d.page_content)["text"] for d, _ in found)  # the values

    assert in_engine() == [
        "Alice lives in Lisbon",
        "Bob's PIN hint is his dog Rex",
        "likes black coffee",
        "likes green tea",
    ]
    assert backend.repair(grace_seconds=0) == 2  # Bob's text and the replaced version
    assert in_engine() == ["Alice lives in Lisbon", "likes black coffee"]
    assert _documents(vs) == docs_before - 1
    assert backend.repair(grace_seconds=0) == 0  # nothing left to fix
    hits = store.search(("docs",), query="tea", limit=5)
    assert sorted(h.value["text"] for h in hits) == ["Alice lives in Lisbon", "likes black coffee"]
    store.close()


@pytest.mark.parametrize("kind", CRASH_KINDS)
def test_repair_deletes_what_an_older_copy_brought_back(kind, tmp_path):
    check_repair_drops_strays(kind, tmp_path)


async def test_arepair_puts_back_and_drops_as_repair_does(tmp_path):
    store, backend, _ = _crash_store("recording", tmp_path)
    store.put(("docs", "alice"), "city", {"text": "Alice lives in Lisbon"})
    store.put(("docs", "alice"), "drink", {"text": "likes green tea"})
    backup = _copy_of_documents(backend)
    store.put(("docs", "alice"), "drink", {"text": "likes black coffee"})
    backend._vs_add(*backup)  # an older copy restored: the replaced text is back
    assert await backend.arepair(grace_seconds=0) == 1
    assert await backend.arepair() == 0  # nothing left to fix
    hits = await store.asearch(("docs",), query="coffee", limit=5)
    assert sorted(h.value["text"] for h in hits) == ["Alice lives in Lisbon", "likes black coffee"]
    store.close()


def check_cancelled_write(kind, at, tmp_path, monkeypatch):
    """An ``aput`` cancelled in the store's add or in the catalog commit: never half-visible.

    Cancelled in the add, the catalog was never touched: the old version shows and the
    orphans go at the next repair. Cancelled while the commit runs on the catalog's thread,
    the commit finishes there: the caller gets ``CancelledError`` and the write stands
    whole, with its documents in the store (the garbage left for ``repair()``).
    """
    import threading
    import time

    store, backend, vs = _crash_store(kind, tmp_path)
    store.put(("docs", "u1"), "a", {"text": "green tea"})
    docs_before = _documents(vs)
    started, finished = threading.Event(), threading.Event()
    if at == "commit":
        inner_commit = backend.catalog.commit

        def slow_commit(*args, **kwargs):
            started.set()
            time.sleep(0.3)  # the caller is cancelled meanwhile
            try:
                return inner_commit(*args, **kwargs)
            finally:
                finished.set()

        monkeypatch.setattr(backend.catalog, "commit", slow_commit)
    else:
        assert backend.capabilities.extra["native_async"]["add"]
        inner_add = vs.aadd_embeddings

        async def slow_add(*args, **kwargs):
            out = await inner_add(*args, **kwargs)
            started.set()
            finished.set()
            await asyncio.sleep(5)  # the documents are in: cancelled before the commit
            return out

        monkeypatch.setattr(vs, "aadd_embeddings", slow_add)

    async def run():
        task = asyncio.ensure_future(store.aput(("docs", "u1"), "a", {"text": "black coffee"}))
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
    assert finished.wait(5)
    with backend._vs_lock:  # a write on the thread pool (Chroma's) has run to its end
        monkeypatch.undo()
    landed = at == "commit"
    want = {"text": "black coffee"} if landed else {"text": "green tea"}
    assert store.get(("docs", "u1"), "a").value == want
    # one leftover document (the old version's, or the orphaned new one) unless the whole
    # sync write ran on a thread and cleaned up after itself
    leftover = 1 if backend.capabilities.extra["native_async"]["add"] else 0
    assert _documents(vs) == docs_before + leftover
    # the store itself holds the current version's document: a ranked search finds it
    held, current = _versions(backend, store, ("docs", "u1"))
    assert [held.count(c) for c in current] == [1]
    hits = store.search(("docs", "u1"), query="coffee", limit=5)
    assert [(h.key, h.value) for h in hits] == [("a", want)]
    assert backend.repair(grace_seconds=0) == leftover
    assert _documents(vs) == docs_before
    store.close()


# Chroma has no native add (its async write is the whole sync write on a thread): the
# commit case only, as the thread-pool control
@pytest.mark.parametrize(
    ("kind", "at"), [("recording", "add"), ("recording", "commit"), ("chroma", "commit")]
)
def test_a_cancelled_async_write_is_whole_or_absent(kind, at, tmp_path, monkeypatch):
    check_cancelled_write(kind, at, tmp_path, monkeypatch)


def _interrupt_commit(backend, monkeypatch, landed, exc=KeyboardInterrupt):
    """The catalog's commit raises ``exc`` just after (``landed``) or just before its COMMIT."""
    inner = backend.catalog.commit

    def interrupted(*args, **kwargs):
        if landed:
            inner(*args, **kwargs)
        raise exc("interrupted at the catalog commit")

    monkeypatch.setattr(backend.catalog, "commit", interrupted)


_OLD = {"a": "green tea", "b": "oolong tea"}
_NEW = {"a": "black coffee", "c": "espresso coffee", "d": "coffee with milk"}


def check_interrupted_commit(kind, mode, landed, tmp_path, monkeypatch):
    """A ``KeyboardInterrupt`` just after or just before the catalog's COMMIT: whole or absent.

    After: the batch is current, so its documents stay in the store (the interrupted write
    must not drop them as if the commit had failed), the replaced one is garbage that
    ``repair()`` deletes. Before: nothing of the batch shows and its documents are gone.
    """
    store, backend, vs = _crash_store(kind, tmp_path)
    ns = ("docs", "u1")
    _write_batch(store, "sync", ns, _OLD)
    docs_before = _documents(vs)
    _interrupt_commit(backend, monkeypatch, landed)
    with pytest.raises(KeyboardInterrupt):
        _write_batch(store, mode, ns, _NEW)
    monkeypatch.undo()
    want = {**_OLD, **_NEW} if landed else _OLD
    assert {it.key: it.value["text"] for it in store.search(ns, limit=10)} == want
    hits = store.search(ns, query="coffee", limit=10)
    assert {h.key: h.value["text"] for h in hits} == want
    if landed:  # ranked by the store's documents: the coffees first
        assert {h.key for h in hits[:3]} == set(_NEW)
    held, current = _versions(backend, store, ns)
    assert [held.count(c) for c in current] == [1] * len(want)  # each version: its document
    assert not backend.catalog.journal_ids(ADDING)  # settled: nothing left in flight
    # landed: the three new documents and the replaced one (garbage); absent: none of them
    assert _documents(vs) == docs_before + (3 if landed else 0)
    assert len(backend.catalog.journal_ids(GARBAGE)) == (1 if landed else 0)
    assert backend.repair() == (1 if landed else 0)
    held, current = _versions(backend, store, ns)
    assert sorted(held) == sorted(current)
    assert _documents(vs) == docs_before + (2 if landed else 0)
    assert not backend.catalog.journal_ids(GARBAGE) and not backend.catalog.journal_ids(ADDING)
    assert backend.repair() == 0
    # and the next write of the same items lands as usual
    _write_batch(store, mode, ns, {"a": "mint tea"})
    assert store.get(ns, "a").value == {"text": "mint tea"}
    held, current = _versions(backend, store, ns)
    assert sorted(held) == sorted(current)
    store.close()


@pytest.mark.parametrize("landed", [True, False], ids=["after-commit", "before-commit"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", CRASH_KINDS)
def test_an_interrupt_at_the_commit_leaves_the_write_whole_or_absent(
    kind, mode, landed, tmp_path, monkeypatch
):
    check_interrupted_commit(kind, mode, landed, tmp_path, monkeypatch)


class _Signalled(BaseException):
    """What a signal handler might raise: not an ``Exception``."""


@pytest.mark.parametrize("landed", [True, False], ids=["after-commit", "before-commit"])
def test_when_the_catalog_cannot_say_the_documents_wait_for_repair(landed, tmp_path, monkeypatch):
    """Interrupted at the commit, and the check of its outcome fails too: nothing is dropped.

    The documents stay (journaled ``adding`` if the commit did not land); ``repair()`` keeps
    the current ones and deletes the others, so the write is whole or absent either way.
    """
    store, backend, vs = _crash_store("recording", tmp_path)
    ns = ("docs", "u1")
    _write_batch(store, "sync", ns, _OLD)
    docs_before = _documents(vs)
    _interrupt_commit(backend, monkeypatch, landed, exc=_Signalled)

    def unreadable(*args, **kwargs):
        raise _Crash("the catalog went away")

    monkeypatch.setattr(backend.catalog, "settle_claim", unreadable)
    with pytest.raises(_Signalled):
        _write_batch(store, "sync", ns, _NEW)
    monkeypatch.undo()
    assert _documents(vs) == docs_before + 3  # nothing dropped, whatever the outcome
    want = {**_OLD, **_NEW} if landed else _OLD
    assert {h.key: h.value["text"] for h in store.search(ns, query="coffee", limit=10)} == want
    assert len(backend.catalog.journal_ids(ADDING)) == (0 if landed else 3)
    assert backend.repair(grace_seconds=0) == (1 if landed else 3)
    held, current = _versions(backend, store, ns)
    assert sorted(held) == sorted(current)
    assert _documents(vs) == docs_before + (2 if landed else 0)
    store.close()


def test_grace_seconds_is_set_through_the_factory_and_honoured(tmp_path, monkeypatch):
    """An unfinished write's documents outlive a repair younger than grace_seconds."""
    emb = KeywordEmbeddings(DIMS)
    vs = chroma(emb)
    catalog = tmp_path / "c.db"
    backend = vectorstore_backend(vs, catalog=catalog, grace_seconds=60)
    assert backend.grace_seconds == 60.0
    store = LongTermMemoryStore(backend, embeddings=emb)
    store.put(("docs", "u1"), "a", {"text": "green tea"})

    def crash(*args, **kwargs):
        raise _Crash("killed between the vectorstore add and the catalog commit")

    monkeypatch.setattr(backend.catalog, "commit", crash)
    _fail_deletes(monkeypatch, "and before cleaning up")
    with pytest.raises(_Crash):
        store.put(("docs", "u1"), "a", {"text": "black coffee"})
    monkeypatch.undo()
    assert backend.repair(full=False) == 0  # younger than 60 s: maybe a writer still at work
    backend.close()
    kept = vectorstore_backend(vs, catalog=catalog, grace_seconds=3600)  # opening: kept too
    assert count_documents(vs) == 2
    assert kept.repair(grace_seconds=3600) == 0  # a full repair keeps them as well
    kept.close()
    assert count_documents(vs) == 2
    gone = vectorstore_backend(vs, catalog=catalog, grace_seconds=0)  # opening: deleted
    assert count_documents(vs) == 1
    assert LongTermMemoryStore(gone, embeddings=emb).get(("docs", "u1"), "a").value == {
        "text": "green tea"
    }
    gone.close()


@pytest.mark.parametrize("bad", [-1, -0.5, float("nan"), float("inf"), "900", True, None])
def test_a_bad_grace_seconds_is_refused_before_any_io(bad, tmp_path):
    emb = KeywordEmbeddings(DIMS)
    vs = chroma(emb)
    with pytest.raises(ValueError, match=r"grace_seconds=.*finite number of seconds, 0 or more"):
        vectorstore_backend(vs, catalog=tmp_path / "c.db", grace_seconds=bad)
    assert not (tmp_path / "c.db").exists()
    backend = vectorstore_backend(vs, catalog=tmp_path / "d.db")
    if bad is not None:  # repair(grace_seconds=None) is the backend's own grace
        with pytest.raises(ValueError, match="grace_seconds="):
            backend.repair(grace_seconds=bad)
    backend.close()


def test_grace_seconds_takes_numbers_of_any_kind(tmp_path):
    emb = KeywordEmbeddings(DIMS)
    for i, ok in enumerate([0, 0.0, 30, np.float32(2.5), np.int64(7)]):
        backend = vectorstore_backend(chroma(emb), catalog=tmp_path / f"{i}.db", grace_seconds=ok)
        assert backend.grace_seconds == float(ok) and type(backend.grace_seconds) is float
        assert backend.repair(grace_seconds=ok) == 0
        backend.close()


class _Bare(VectorStore):
    """A vectorstore with only the abstract methods: no get_by_ids, delete, search by vector."""

    def add_texts(self, texts, metadatas=None, **kwargs):
        return []

    def similarity_search(self, query, k=4, **kwargs):
        return []

    @classmethod
    def from_texts(cls, texts, embedding, metadatas=None, **kwargs):
        return cls()


def test_a_store_without_a_dialect_says_how_to_add_one():
    with pytest.raises(UnsupportedVectorStoreError, match="register_vectorstore") as err:
        LongTermMemoryStore(_Bare(), embeddings=KeywordEmbeddings(DIMS))
    # everything at once: the dialect and every missing method with the option for it (it
    # said "no filter dialect" alone, then "lacks ..." once registered, without delete=)
    message = str(err.value)
    assert "no filter dialect for _Bare" in message
    for method, option in [
        ("get_by_ids", "get=..."),
        ("delete", "delete=..."),
        ("add_embeddings", "add=..."),
        ("similarity_search_with_score_by_vector", "search=..."),
    ]:
        assert method in message and option in message
    with pytest.raises(UnsupportedVectorStoreError, match="pass a LangChain VectorStore"):
        backend_for(object())


def test_a_store_lacking_methods_names_them():
    with pytest.raises(UnsupportedVectorStoreError) as err:
        vectorstore_backend(_Bare(), filter_builder=dict)
    message = str(err.value)
    for method in (
        "get_by_ids",
        "delete",
        "add_embeddings",
        "similarity_search_with_score_by_vector",
    ):
        assert method in message
    assert "get=..., delete=..., add=..., search=..." in message  # delete= was left out


class _Mine(InMemoryVectorStore):
    """A user's store, taught to langchain-ltm in a few lines (the README's example)."""

    def add_embeddings(self, text_embeddings, metadatas=None, ids=None):
        for (text, vector), meta, id_ in zip(text_embeddings, metadatas, ids, strict=True):
            self.store[id_] = {"id": id_, "vector": vector, "text": text, "metadata": meta}
        return ids

    def similarity_search_with_score_by_vector(self, embedding, k=4, filter=None):
        keep = lambda doc: all(doc.metadata.get(k_) == v for k_, v in filter.items())  # noqa: E731
        return [
            (doc, score)
            for doc, score, _ in self._similarity_search_with_score_by_vector(
                embedding, k, filter=keep
            )
        ]


def test_register_vectorstore_in_a_few_lines(tmp_path):
    register_vectorstore(_Mine, filter_builder=dict, distance="similarity")
    emb = KeywordEmbeddings(DIMS)
    vs = _Mine(emb)
    store = LongTermMemoryStore(vs)
    assert isinstance(store.backend, VectorStoreBackend)
    assert store.backend.capabilities.name == "vectorstore:_Mine"
    store.remember("alice", "likes green tea")
    store.remember("bob", "likes green tea a lot")
    assert [f.content for f in store.recall("alice", "tea")] == ["likes green tea"]
    assert store.recall("alice", "tea")[0].score == pytest.approx(0.8, abs=0.2)
    store.close()


def test_the_fast_paths_are_unchanged():
    from langchain_ltm.backends.memory import MemoryBackend

    emb: Embeddings = KeywordEmbeddings(DIMS)
    assert isinstance(backend_for(InMemoryVectorStore(emb)), MemoryBackend)


# ---- Milvus: the filter is an expression string -----------------------------------------

_AWKWARD_USERS = [
    'o"brien',
    "back\\slash",
    'both\\" or ltm_n0 != "',  # an injection attempt: stays one literal
    "end\\",
    "new\nline\r\n",
    "tab\tbell\x07",
    "it's",
    "\u0430lice 😀",
]


def test_milvus_scope_is_one_escaped_expression(tmp_path):
    emb = KeywordEmbeddings(DIMS)
    backend = vectorstore_backend(milvus(emb, tmp_path / "m.db"), catalog=tmp_path / "c.db")
    sid = backend.catalog.store_id
    assert backend.scope_filter(("memories", 'o"b\\n')) == (
        f'ltm_store == "{sid}" and ltm_n0 == "memories" and ltm_n1 == "o\\"b\\\\n"'
    )
    assert backend.scope_filter(()) == f'ltm_store == "{sid}"'
    assert backend.scope_filter(("a\nb\r",)) == f'ltm_store == "{sid}" and ltm_n0 == "a\\nb\\r"'
    backend.close()


def test_milvus_users_with_quotes_and_backslashes_stay_apart(tmp_path):
    emb = KeywordEmbeddings(DIMS)
    vs = milvus(emb, tmp_path / "m.db")
    store = LongTermMemoryStore(vectorstore_backend(vs, catalog=tmp_path / "c.db"), embeddings=emb)
    plain = ["obrien", "back", "both", "end", "new", "tab", "its", "alice"]
    for user in _AWKWARD_USERS + plain:
        store.remember(user, f"likes green tea, says {user!r}")
    for user in _AWKWARD_USERS + plain:
        facts = store.recall(user, "green tea", limit=20)
        assert [f.content for f in facts] == [f"likes green tea, says {user!r}"], user
        assert store.search(("memories", user), query="tea", limit=20)[0].score is not None
    store.clear_user('both\\" or ltm_n0 != "')
    assert store.recall('both\\" or ltm_n0 != "', "green tea") == []
    assert len(store.recall("obrien", "green tea")) == 1
    store.close()


@pytest.mark.parametrize(
    ("options", "fix"),
    [({"auto_id": True}, "auto_id=False"), ({"enable_dynamic_field": False}, "dynamic_field=True")],
)
def test_a_milvus_that_cannot_hold_memories_says_what_to_change(options, fix, tmp_path):
    emb = KeywordEmbeddings(DIMS)
    vs = milvus(emb, tmp_path / "m.db", **options)
    with pytest.raises(UnsupportedVectorStoreError, match=fix):
        LongTermMemoryStore(vs)
    assert vs.col is None  # nothing was written


def test_a_dialect_that_lets_other_users_through_still_never_leaks(tmp_path):
    # a broken filter builder: the engine gets no scope at all and ranks every document
    emb = KeywordEmbeddings(DIMS)
    backend = vectorstore_backend(
        chroma(emb), catalog=tmp_path / "c.db", filter_builder=lambda eq: None
    )
    store = LongTermMemoryStore(backend, embeddings=emb)
    store.remember("bob", "bob drinks green tea every morning")
    store.remember("alice", "alice walks her dog")
    hits = store.search(("memories", "alice"), query="green tea every morning", limit=5)
    assert [h.namespace for h in hits] == [("memories", "alice")]
    assert [f.content for f in store.recall("alice", "green tea every morning")] == [
        "alice walks her dog"
    ]
    store.close()


def test_a_capped_store_is_never_asked_for_more_than_it_takes(tmp_path):
    # Pinecone, Atlas and Elasticsearch refuse a k above their caps: the backend stops
    # widening there and answers a still-short search from the catalog's exact search
    import dataclasses

    from langgraph.store.base import PutOp

    from langchain_ltm.backends.vectorstore.family import registered

    emb = KeywordEmbeddings(DIMS)
    vs = chroma(emb)
    asked: list[int] = []
    base = registered(vs)
    assert base is not None and base.search is not None
    inner = base.search

    def search(store, vector, k, where):
        asked.append(k)
        return inner(store, vector, k, where)

    family = dataclasses.replace(base, search=search, max_k=20, value_filters=False)
    backend = VectorStoreBackend(vs, catalog=tmp_path / "c.db", family=family)
    store = LongTermMemoryStore(backend, embeddings=emb, fields=["text"])
    store.batch(
        [
            PutOp(
                ("docs", "u1"),
                str(i),
                {"text": f"tea note {i}", "kind": "rare" if i % 20 == 0 else "common"},
            )
            for i in range(200)
        ]
    )
    hits = store.search(("docs", "u1"), query="tea note", limit=8, filter={"kind": "rare"})
    assert len(hits) == 8 and all(h.value["kind"] == "rare" for h in hits)
    assert asked and max(asked) <= 20
    store.close()


def _capped_store(tmp_path, max_k, **changes):
    """A Chroma store registered as if its search took at most ``max_k`` (Pinecone-like)."""
    import dataclasses

    from langchain_ltm.backends.vectorstore.family import registered

    emb = KeywordEmbeddings(DIMS)
    vs = chroma(emb)
    base = registered(vs)
    assert base is not None
    family = dataclasses.replace(base, max_k=max_k, **changes)
    backend = VectorStoreBackend(vs, catalog=tmp_path / "c.db", family=family)
    return LongTermMemoryStore(backend, embeddings=emb, fields=["text"]), backend, vs, emb


def test_repair_on_a_capped_store_deletes_every_stray(tmp_path):
    # a store restored from a backup brings back 60 forgotten texts; its search shows 20 at a
    # time: repair() searches again until none is left, not once
    store, backend, vs, _ = _capped_store(tmp_path, max_k=20)
    store.batch([PutOp(("docs", "bob"), str(i), {"text": f"bob secret {i}"}) for i in range(60)])
    store.batch([PutOp(("docs", "alice"), str(i), {"text": f"alice note {i}"}) for i in range(5)])
    backup = _copy_of_documents(backend)
    store.batch([PutOp(("docs", "bob"), str(i), None) for i in range(60)])  # bob forgotten
    assert count_documents(vs) == 5
    backend._vs_add(*backup)  # the backup restored behind the catalog's back
    assert count_documents(vs) == 65
    assert backend.repair(grace_seconds=0) == 60
    assert count_documents(vs) == 5
    assert backend.repair(grace_seconds=0) == 0
    assert sorted(h.value["text"] for h in store.search(("docs",), limit=10)) == [
        f"alice note {i}" for i in range(5)
    ]
    store.close()


def test_repair_stops_and_warns_when_the_store_ignores_its_deletes(tmp_path, caplog):
    # a delete= that silently does nothing: repair() must not search and delete forever
    import dataclasses

    store, backend, vs, _ = _capped_store(tmp_path, max_k=20)
    store.batch([PutOp(("docs", "bob"), str(i), {"text": f"bob secret {i}"}) for i in range(30)])
    backup = _copy_of_documents(backend)
    store.batch([PutOp(("docs", "bob"), str(i), None) for i in range(30)])
    backend._vs_add(*backup)
    backend.family = dataclasses.replace(backend.family, delete=lambda vs_, ids: None)
    with caplog.at_level("WARNING", logger="langchain_ltm"):
        assert backend.repair(grace_seconds=0) == 0  # nothing was deleted
    assert count_documents(vs) == 30
    assert "still holds 20 documents it was asked to delete" in caplog.text
    store.close()


def test_repair_warns_when_current_documents_hide_the_strays_of_a_capped_store(tmp_path, caplog):
    # 30 current documents nearer the probe than the stray: a search capped at 20 cannot
    # reach it, and repair() says so instead of reporting a clean store
    store, backend, vs, emb = _capped_store(tmp_path, max_k=20)
    for i in range(30):
        emb.vectors[f"near {i}"] = [1.0, 0.01 * i] + [0.0] * (DIMS - 2)
    emb.vectors["far"] = [0.0, 0.0, 1.0] + [0.0] * (DIMS - 3)
    store.put(("docs", "bob"), "pin", {"text": "far"})
    backup = _copy_of_documents(backend)
    store.delete(("docs", "bob"), "pin")
    store.batch([PutOp(("docs", "a"), str(i), {"text": f"near {i}"}) for i in range(30)])
    backend._vs_add(*backup)
    with caplog.at_level("WARNING", logger="langchain_ltm"):
        assert backend.repair(grace_seconds=0) == 0
    assert "returns at most max_k=20 documents" in caplog.text
    assert count_documents(vs) == 31  # the stray stays, and the warning says so
    store.close()


def test_a_ready_family_is_checked_against_the_store_too(tmp_path):
    class NoSearch(VectorStore):  # no get_by_ids, no search by vector
        def add_texts(self, texts, metadatas=None, **kwargs):
            return []

        def similarity_search(self, query, k=4, **kwargs):
            return []

        @classmethod
        def from_texts(cls, texts, embedding, metadatas=None, **kwargs):
            return cls()

    from langchain_ltm.backends.vectorstore import StoreFamily

    with pytest.raises(UnsupportedVectorStoreError, match="lacks get_by_ids"):
        VectorStoreBackend(NoSearch(), catalog=tmp_path / "c.db", family=StoreFamily("x", dict))


def test_a_store_whose_scores_are_not_the_configured_distance_is_refused_at_first_search(
    tmp_path,
):
    # a Chroma collection in its default l2 space, registered as if it returned cosine
    # distances: the converted scores would be wrong, and merges decided on them
    import dataclasses

    from langchain_ltm.backends.vectorstore.family import registered

    emb = KeywordEmbeddings(DIMS)
    vs = chroma(emb)
    base = registered(vs)
    assert base is not None
    wrong = dataclasses.replace(base, distance="cosine")
    store = LongTermMemoryStore(
        VectorStoreBackend(vs, catalog=tmp_path / "c.db", family=wrong), embeddings=emb
    )
    assert store.remember("alice", "green tea with honey").action == "created"  # nothing ranked
    # the next write's dedup search ranks the first fact: the scores are checked, refused
    with pytest.raises(UnsupportedVectorStoreError, match="not the one configured"):
        store.remember("alice", "green tea in the morning")
    with pytest.raises(UnsupportedVectorStoreError, match="not the one configured"):
        store.search(("memories", "alice"), query="green tea", limit=2)
    assert [f.content for f in store.list_all("alice")] == ["green tea with honey"]
    store.close()
    right = LongTermMemoryStore(
        vectorstore_backend(chroma(emb), catalog=tmp_path / "d.db"), embeddings=emb
    )
    right.remember("alice", "green tea with honey")
    assert right.search(("memories", "alice"), query="green tea", limit=2)
    right.close()


def test_a_first_answer_identical_to_the_query_does_not_pass_the_score_check(tmp_path):
    # distance 0 scores 1.0 under every convention: a first search whose top item is the
    # query itself proved nothing, yet passed the check for good, and the wrong distance=
    # then ranked everything after it (a rephrasing created as a new fact, not an update)
    import dataclasses

    from langchain_ltm.backends.vectorstore.family import registered

    emb = KeywordEmbeddings(DIMS)
    vs = chroma(emb)  # squared l2: registered as euclidean, the scores would be wrong
    base = registered(vs)
    assert base is not None
    wrong = dataclasses.replace(base, distance="euclidean")
    store = LongTermMemoryStore(
        VectorStoreBackend(vs, catalog=tmp_path / "c.db", family=wrong),
        embeddings=emb,
        fields=["text"],
    )
    store.put(("docs",), "a", {"text": "hello world"})
    assert store.search(("docs",), query="hello world", limit=1)[0].score == pytest.approx(1.0)
    store.put(("docs",), "b", {"text": "hello there friend"})
    with pytest.raises(UnsupportedVectorStoreError, match="not the one configured"):
        store.search(("docs",), query="hello world", limit=2)  # the second item tells
    with pytest.raises(UnsupportedVectorStoreError, match="not the one configured"):
        store.search(("docs",), query="hello there", limit=2)
    store.close()


def test_a_temporary_catalog_over_a_store_that_keeps_its_documents_is_warned_of(tmp_path, caplog):
    # Chroma with a persist folder: at close() the catalog goes, the texts stay in the
    # folder where no later store (a new catalog, a new ltm_store id) can see or forget them
    import chromadb
    from langchain_chroma import Chroma

    from tests.vectorstores import chroma_settings

    emb = KeywordEmbeddings(DIMS)
    client = chromadb.PersistentClient(str(tmp_path / "chroma"), settings=chroma_settings())
    vs = chroma(emb, client=client)
    with caplog.at_level("WARNING", logger="langchain_ltm"):
        kept = LongTermMemoryStore(vs)
    assert "a temporary catalog over Chroma, whose documents may outlive" in caplog.text
    kept.remember("alice", "my diagnosis is type 2 diabetes")
    kept.close()
    same = Chroma(vs._collection.name, emb, client=client)
    assert same._collection.get()["documents"] == ["my diagnosis is type 2 diabetes"]
    again = LongTermMemoryStore(same, embeddings=emb)
    assert again.list_all("alice") == []  # what the warning says: out of a new store's reach
    again.close()
    caplog.clear()
    with caplog.at_level("WARNING", logger="langchain_ltm"):  # stores living in the process
        LongTermMemoryStore(chroma(emb)).close()
        LongTermMemoryStore(faiss(emb, tmp_path / "f")).close()
        LongTermMemoryStore(
            vectorstore_backend(chroma(emb, client=client), catalog=tmp_path / "c.db"),
            embeddings=emb,
        ).close()
    assert "temporary catalog" not in caplog.text


def test_milvus_refuses_a_text_longer_than_its_field_and_keeps_the_old_one(tmp_path):
    """Milvus Lite's max_length counts characters: 65,535 of any script fit, one more does not.

    Refused before anything is journaled (two ``adding`` rows were left behind) or written.
    """
    emb = KeywordEmbeddings(DIMS)
    store = LongTermMemoryStore(milvus(emb, tmp_path / "m.db"), fields=["text"])
    store.put(("docs",), "k", {"text": "a short text"})
    journal = store.backend.catalog.journal_ids
    with pytest.raises(ValueError, match=r"at most 65,535 characters of text per document"):
        store.put(("docs",), "k", {"text": "é" * 65_536})
    with pytest.raises(ValueError, match=r"the text at 'text' of key 'k' has 65,536"):
        asyncio.run(store.aput(("docs",), "k", {"text": "é" * 65_536}))
    assert journal(ADDING) == []  # nothing journaled: the check came first
    assert store.get(("docs",), "k").value == {"text": "a short text"}
    assert [i.key for i in store.search(("docs",), query="short text")] == ["k"]
    assert store.backend.repair() == 0  # nothing half-written to clean up
    # what Milvus Lite stores, we store: 30,000 CJK characters are 90,000 UTF-8 bytes
    cjk = "日" * 30_000 + " tea"
    store.put(("docs",), "cjk", {"text": cjk})
    asyncio.run(store.aput(("docs",), "most", {"text": "é" * 65_535}))
    assert store.get(("docs",), "cjk").value == {"text": cjk}
    probe = [1.0] + [0.0] * (DIMS - 1)
    found, _ = store.backend._vs_search(probe, 10, store.backend.scope_filter(()))
    assert sorted(len(d.page_content) for d, _ in found) == [12, 30_004, 65_535]  # in Milvus
    assert journal(ADDING) == []
    store.close()


def test_a_milvus_server_text_is_measured_in_bytes(tmp_path):
    """Milvus documents VARCHAR max_length in bytes: a server URI keeps the byte count."""
    from langchain_ltm.backends.vectorstore.dialects.milvus import check_texts, is_lite

    vs = milvus(KeywordEmbeddings(DIMS), tmp_path / "m.db")
    meta = [{"ltm_key": "k", "ltm_path": "text"}]
    assert is_lite(vs)
    check_texts(vs, ["日" * 30_000], meta)  # 30,000 characters: Milvus Lite takes them
    vs._connection_args = {"uri": "http://milvus.example:19530"}  # as a server's store says
    assert not is_lite(vs)
    check_texts(vs, ["日" * 21_845], meta)  # 65,535 bytes
    with pytest.raises(ValueError, match=r"Milvus holds at most 65,535 bytes \(UTF-8\)"):
        check_texts(vs, ["日" * 21_846], meta)


def test_a_catalog_that_cannot_be_opened_says_why(tmp_path):
    """Closing after a failed catalog open raised ``AttributeError`` over the real error."""
    from langchain_ltm.backends.vectorstore import vectorstore_backend
    from langchain_ltm.errors import BackendError

    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 100)
    vs = faiss(KeywordEmbeddings(dims=8), tmp_path / "f")
    with pytest.raises(BackendError, match="not a usable SQLite database"):
        vectorstore_backend(vs, catalog=junk)


@pytest.mark.parametrize("kind", ["chroma", "faiss"])
def test_a_new_catalog_over_another_catalogs_documents_is_refused(kind, tmp_path):
    """A second catalog over a used store saw none of its memories: an empty list, and a
    ``clear_user`` that reported success while the texts stayed. A new catalog file over
    a store holding our documents is now refused (naming the catalog that wrote them),
    unless ``share_collection=True`` asks for a second, separate store."""
    from langchain_ltm import CatalogMismatchError

    emb = KeywordEmbeddings(DIMS)
    vs = chroma(emb) if kind == "chroma" else faiss(emb, tmp_path / "f")
    first = tmp_path / "cat" / "first.sqlite"
    first.parent.mkdir()
    (tmp_path / "cat" / "notes.txt").write_text("not a catalog")  # looked at, skipped
    # a store holding only others' documents (FAISS's unrelated one, or none) opens
    store = LongTermMemoryStore(vectorstore_backend(vs, catalog=first), embeddings=emb)
    store.remember("alice", "Lives in Paris")
    store.close()
    second = tmp_path / "cat" / "second.sqlite"
    with pytest.raises(CatalogMismatchError, match=r"written through another catalog") as info:
        vectorstore_backend(vs, catalog=second)
    assert str(first) in str(info.value) and info.value.catalogs == [str(first)]
    assert isinstance(info.value, ValueError) and not second.exists()  # nothing created
    again = LongTermMemoryStore(vectorstore_backend(vs, catalog=first), embeddings=emb)
    assert [f.content for f in again.list_all("alice")] == ["Lives in Paris"]  # it still opens
    again.close()
    elsewhere = tmp_path / "other" / "c.sqlite"  # no catalog beside it holds that id
    elsewhere.parent.mkdir()
    with pytest.raises(CatalogMismatchError, match=r"vectorstore_id = '[0-9a-f]+'"):
        vectorstore_backend(vs, catalog=elsewhere)
    shared = LongTermMemoryStore(
        vectorstore_backend(vs, catalog=second, share_collection=True), embeddings=emb
    )
    assert shared.list_all("alice") == []  # a second store, on purpose
    shared.close()
    reopened = vectorstore_backend(vs, catalog=second)  # an existing catalog: no check
    reopened.close()
