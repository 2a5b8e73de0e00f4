"""What ``close()`` ends: the sweepers, and every later call."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_ltm import BackendError, LongTermMemoryStore
from tests.fakes import KeywordEmbeddings


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    emb = KeywordEmbeddings(dims=16)
    if request.param == "memory":
        return LongTermMemoryStore(InMemoryVectorStore(emb), ttl={"default_ttl": 1})
    return LongTermMemoryStore.from_sqlite(tmp_path / "m.db", emb, ttl={"default_ttl": 1})


async def test_a_sync_close_stops_a_sweeper_task(store):
    """``close()`` stopped the sweeper thread only: a task started with
    ``astart_ttl_sweeper`` went on sweeping a closed store (an error logged every tick)."""
    task = await store.astart_ttl_sweeper(sweep_interval_minutes=0.0005)
    await asyncio.sleep(0.05)
    assert not task.done()
    store.close()
    await asyncio.wait_for(task, timeout=5)  # stops at its next wake-up
    assert task.done() and not task.cancelled()


def test_a_sync_close_from_another_thread_stops_a_sweeper_task(store):
    async def main() -> None:
        task = await store.astart_ttl_sweeper(sweep_interval_minutes=0.0005)
        await asyncio.to_thread(store.close)
        await asyncio.wait_for(task, timeout=5)

    asyncio.run(main())
    if store.backend.capabilities.persistent:
        with pytest.raises(BackendError, match="was closed"):
            store.get(("docs",), "k")


class _LoopThread:
    """An event loop running in a thread of its own (another thread's loop, as a server's)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=10)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


@pytest.mark.parametrize("how", ["close", "aclose", "astop_ttl_sweeper"])
def test_a_sweeper_task_of_another_loop_is_stopped_and_waited_for(store, how):
    """``aclose()`` / ``astop_ttl_sweeper()`` awaited on another loop than the sweeper
    task's raised (``RuntimeError`` "attached to a different loop", ``ValueError`` "The
    future belongs to a different loop") and ``aclose`` left the engine open; ``close()``
    handled it. Each now stops the task (the async ones wait for it) and closes."""
    other = _LoopThread()
    try:
        task = other.run(store.astart_ttl_sweeper(sweep_interval_minutes=5))
        if how == "close":
            store.close()
            other.run(asyncio.wait_for(asyncio.shield(task), timeout=5))
        elif how == "aclose":
            asyncio.run(store.aclose())
            assert task.done()
        else:
            assert asyncio.run(store.astop_ttl_sweeper(timeout=5)) is True
            assert task.done()
            assert asyncio.run(store.astop_ttl_sweeper(timeout=5)) is True  # twice is fine
            store.close()
        assert not task.cancelled() and task.exception() is None
        if store.backend.capabilities.persistent:
            with pytest.raises(BackendError, match="was closed"):
                store.get(("docs",), "k")
    finally:
        other.stop()
        other.loop.close()


def test_a_sweeper_task_of_a_stopped_or_closed_loop_does_not_hang_aclose(store):
    """The task's loop stopped: nothing runs there, so nothing is waited for; the task ends
    as soon as its loop runs again. Its loop closed: the task is gone."""
    other = _LoopThread()
    task = other.run(store.astart_ttl_sweeper(sweep_interval_minutes=5))
    other.stop()
    assert asyncio.run(asyncio.wait_for(store.astop_ttl_sweeper(), timeout=5)) is True
    other.loop.run_until_complete(asyncio.wait_for(task, timeout=5))  # ends at once
    other = _LoopThread()
    other.run(store.astart_ttl_sweeper(sweep_interval_minutes=5))
    other.stop()
    other.loop.close()
    asyncio.run(asyncio.wait_for(store.aclose(), timeout=5))


class _SlowSweeps(LongTermMemoryStore):
    async def asweep_ttl(self) -> int:
        await asyncio.sleep(1)
        return 0


def test_a_sweeper_task_of_another_loop_that_does_not_stop_in_time(tmp_path):
    """A sweep running on the other loop outlasts the timeout: ``False``, and a later stop
    waits for it."""
    store = _SlowSweeps(InMemoryVectorStore(KeywordEmbeddings(dims=16)))
    other = _LoopThread()
    try:
        task = other.run(store.astart_ttl_sweeper(sweep_interval_minutes=0.0001))
        time.sleep(0.1)  # a sweep (one second) is under way
        assert asyncio.run(store.astop_ttl_sweeper(timeout=0.05)) is False
        assert not task.done()
        assert asyncio.run(store.astop_ttl_sweeper(timeout=5)) is True
        assert task.done() and not task.cancelled()
    finally:
        other.stop()
        other.loop.close()


@pytest.fixture(params=["memory", "sqlite", "qdrant", "chroma"])
def any_store(request, tmp_path):
    """A store of each kind of engine (Chroma in process: the generic vectorstore engine)."""
    emb = KeywordEmbeddings(dims=16)
    if request.param == "memory":
        return LongTermMemoryStore(InMemoryVectorStore(emb))
    if request.param == "sqlite":
        return LongTermMemoryStore.from_sqlite(tmp_path / "m.db", emb)
    if request.param == "qdrant":
        return LongTermMemoryStore.from_qdrant(":memory:", emb)
    from tests.vectorstores import chroma

    return LongTermMemoryStore(chroma(emb))


def test_a_closed_store_starts_no_sweeper(any_store):
    """``start_ttl_sweeper()`` after ``close()`` started a thread that logged the engine's
    "was closed" error every interval; every other call of a closed store is refused. So
    are its views (``with_options``, as the memory tools and middleware hold), made before
    or after the close, and the store when a view was closed."""
    before = any_store.with_options(secret_guard=False)
    any_store.close()
    for store in (any_store, before, any_store.with_options(secret_guard=False)):
        with pytest.raises(BackendError, match="was closed"):
            store.start_ttl_sweeper(sweep_interval_minutes=0.0005)
        assert store.stop_ttl_sweeper(timeout=5)  # nothing runs


def test_closing_a_view_closes_the_store_it_shares_an_engine_with(tmp_path):
    store = LongTermMemoryStore.from_sqlite(tmp_path / "m.db", KeywordEmbeddings(dims=16))
    store.with_options(secret_guard=False).close()
    with pytest.raises(BackendError, match="was closed"):
        store.start_ttl_sweeper(sweep_interval_minutes=0.0005)


async def test_a_closed_store_starts_no_sweeper_task(any_store):
    await any_store.aclose()
    with pytest.raises(BackendError, match="was closed"):
        await any_store.astart_ttl_sweeper(sweep_interval_minutes=0.0005)
    assert await any_store.astop_ttl_sweeper(timeout=5)


# ---- a refused constructor leaves nothing open -------------------------------------------


def _faiss(embedding_function):
    import faiss as faiss_lib
    from langchain_community.docstore.in_memory import InMemoryDocstore
    from langchain_community.vectorstores import FAISS

    return FAISS(embedding_function, faiss_lib.IndexFlatL2(16), InMemoryDocstore(), {})


@pytest.mark.parametrize(
    "bad", [{"max_fact_chars": 0}, {"merge_threshold": 7}, {"history_limit": -1}]
)
def test_a_refused_option_leaves_no_temporary_catalog(bad, tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(ValueError, match=next(iter(bad))):
        LongTermMemoryStore(_faiss(KeywordEmbeddings(dims=16)), **bad)
    assert list(tmp_path.iterdir()) == []  # no ltm-catalog-* folder, no open catalog


def test_a_store_that_exposes_no_embeddings_is_refused_with_what_to_pass(tmp_path, monkeypatch):
    # FAISS built with a function: it embeds, but its `.embeddings` is None
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    emb = KeywordEmbeddings(dims=16)
    vs = _faiss(emb.embed_query)
    assert vs.embeddings is None
    with pytest.raises(ValueError, match=r"FAISS exposes no `\.embeddings`: pass embeddings="):
        LongTermMemoryStore(vs)
    assert list(tmp_path.iterdir()) == []  # the backend it opened was closed
    store = LongTermMemoryStore(vs, embeddings=emb)  # as the message says
    assert store.remember("u1", "likes tea").action == "created"
    store.close()


@pytest.mark.parametrize(
    ("cls", "embeddings", "options", "refusal"),
    [
        ("store", None, {}, "no embeddings"),
        ("store", KeywordEmbeddings(dims=16), {"merge_threshold": 7}, "merge_threshold"),
        ("facts", KeywordEmbeddings(dims=16), {"history_limit": -1}, "history_limit"),
    ],
)
def test_a_from_constructor_that_fails_closes_the_backend_it_opened(
    cls, embeddings, options, refusal, tmp_path, monkeypatch
):
    from langchain_ltm.backends.sqlite.backend import SqliteBackend
    from langchain_ltm.facts import FactStore

    closed: list[SqliteBackend] = []
    close = SqliteBackend.close

    def recording_close(self):
        closed.append(self)
        close(self)

    monkeypatch.setattr(SqliteBackend, "close", recording_close)
    make = LongTermMemoryStore if cls == "store" else FactStore
    with pytest.raises(ValueError, match=refusal):
        make.from_sqlite(tmp_path / "m.db", embeddings, **options)
    assert len(closed) == 1  # the SQLite connection it opened is closed
