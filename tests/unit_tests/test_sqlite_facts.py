"""The per-user fact API on the SQLite engine: test_facts.py's and test_versions.py's cases.

The imported tests take the ``store`` fixture, which this module overrides with a store on
a fresh SQLite file; each runs sync and async.
"""

from __future__ import annotations

import pytest

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.sqlite import sqlite_backend
from tests.engine_facts import *  # noqa: F403  (every engine runs these)


@pytest.fixture
def store(emb, tmp_path):
    backend = sqlite_backend(tmp_path / "facts.sqlite")
    yield LongTermMemoryStore(backend, embeddings=emb, upsert_threshold=0.8)
    backend.close()


async def test_a_timed_out_async_write_never_lands_after_a_later_one(tmp_path, emb):
    """A cancelled call waits for its thread: the user's lock is free only once it ended."""
    import asyncio
    import sqlite3

    path = tmp_path / "busy.sqlite"
    backend = sqlite_backend(path, busy_timeout=1.0)
    store = LongTermMemoryStore(backend, embeddings=emb)
    try:
        made = store.remember("alice", "My favourite colour is blue").fact
        assert made is not None
        other = sqlite3.connect(path, isolation_level=None)  # another process is writing
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(
                store.aupdate_fact("alice", made.id, "My favourite colour is green"), 0.2
            )
        later = asyncio.create_task(
            store.aupdate_fact("alice", made.id, "My favourite colour is red")
        )
        await asyncio.sleep(0.1)
        other.execute("COMMIT")
        other.close()
        assert (await later).action == "updated"
        await asyncio.sleep(0.3)  # nothing of the timed-out call may land after it
        (fact,) = store.list_all("alice")
        assert fact.content == "My favourite colour is red"
        assert [v.content for v in fact.history] == ["My favourite colour is blue"]
    finally:
        backend.close()


def test_a_cancelled_lock_waiter_on_a_closed_loop_leaves_the_lock_free(tmp_path, emb):
    """A waiter cancelled before it got the lock never takes it later (nobody would free it)."""
    import asyncio
    import threading

    backend = sqlite_backend(tmp_path / "lock.sqlite")
    store = LongTermMemoryStore(backend, embeddings=emb)
    try:
        lock = store._locks.stripe(store.user_namespace("alice")[-1])
        lock.acquire()  # a sync remember of alice in another thread holds the lock

        def job() -> None:  # a worker's own loop, a timeout, then the loop is closed
            loop = asyncio.new_event_loop()
            try:
                with pytest.raises(asyncio.TimeoutError):
                    loop.run_until_complete(
                        asyncio.wait_for(store.aremember("alice", "Plays chess"), 0.2)
                    )
            finally:
                loop.close()

        worker = threading.Thread(target=job)
        worker.start()
        worker.join()
        lock.release()
        done: list[str] = []
        later = threading.Thread(
            target=lambda: done.append(store.remember("alice", "Owns a bicycle").action),
            daemon=True,
        )
        later.start()
        later.join(10)
        assert done == ["created"]
    finally:
        backend.close()


async def test_many_async_writers_of_one_user_never_starve_the_default_executor(tmp_path, emb):
    """Lock waiters take no thread of the default executor, which the holder's embedding
    call (LangChain's default ``aembed_documents``) needs."""
    import asyncio

    from tests.fakes import KeywordEmbeddings

    class ThreadedEmbeddings(KeywordEmbeddings):
        async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(None, self.embed_documents, texts)

    first = LongTermMemoryStore(sqlite_backend(tmp_path / "many.sqlite"), embeddings=emb)
    made = [first.remember("alice", f"Project {i} ships in week {i}").fact for i in range(16)]
    first.close()
    # another process: the texts it supersedes are not in its cache, it embeds them locked
    backend = sqlite_backend(tmp_path / "many.sqlite")
    store = LongTermMemoryStore(backend, embeddings=ThreadedEmbeddings(dims=64))
    try:
        updates = [
            store.aupdate_fact("alice", fact.id, f"Project {i} ships in week {i + 1}")
            for i, fact in enumerate(made)
            if fact is not None
        ]
        results = await asyncio.wait_for(asyncio.gather(*updates), timeout=60)
        assert [r.action for r in results] == ["updated"] * 16
    finally:
        backend.close()


def test_a_sync_call_on_a_loop_whose_task_holds_its_lock_file_raises_not_hangs(emb, tmp_path):
    """Two users share one of the 256 lock files but not an in-process stripe: a sync
    ``remember`` of one on the event loop while an async write of the other held that
    file waited in ``flock`` for good (the holder needed the loop it blocked)."""
    import asyncio
    import threading

    from tests.unit_tests.test_facts import sync_remember_while_held

    store = LongTermMemoryStore(sqlite_backend(tmp_path / "m.db"), embeddings=emb)
    files = store.backend._locks
    alice = store.user_namespace("alice")[-1]
    other = next(
        f"user{n}"
        for n in range(100_000)
        if files.stripe_path(f"user{n}") == files.stripe_path(alice)
        and store._locks.stripe(f"user{n}") is not store._locks.stripe(alice)
    )
    match = r"SQLite lock.*Call the a\.\.\. method"
    outcome: list[list[str]] = []
    # on a thread of its own: were it to wait in flock again, the test fails, not hangs
    loop = threading.Thread(
        target=lambda: outcome.append(
            asyncio.run(sync_remember_while_held(store, "alice", other, match))
        ),
        daemon=True,
    )
    loop.start()
    loop.join(60)
    assert not loop.is_alive(), "the sync call waited for the loop's own task: a deadlock"
    (done,) = outcome
    assert done == ["created", "refused"]
    assert store.list_all(other) == []  # nothing half written
    assert store.remember(other, "Works on the payments team").action == "created"  # free now
    store.close()
