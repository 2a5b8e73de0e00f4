"""What ``close()`` ends: the sweepers, and every later call."""

from __future__ import annotations

import asyncio

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
