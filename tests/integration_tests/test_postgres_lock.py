"""The Postgres engine's cross-process lock: transaction-level advisory locks on pooled connections.

Waiting is shown by state, not by sleeping: a waiter is blocked once Postgres lists its
advisory lock request as not granted (``pg_locks``), and it has acquired once its thread or
task says so. Every wait in these tests has a deadline, so a bug fails them instead of
hanging the suite.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from langchain_ltm import BackendError
from langchain_ltm.backends.base import Record
from langchain_ltm.backends.postgres import PostgresBackend, _writes, postgres_backend
from langchain_ltm.backends.postgres import _sql as sql
from tests.processes import run_together

NS = ("memories", "locks")
DEADLINE = 20.0


def stamp() -> datetime:
    return datetime.now(timezone.utc)


def put(backend: PostgresBackend, key: str, value: dict) -> None:
    backend.write([Record(NS, key, value, (), (), None, stamp())], [])


def lock_requests(conn: psycopg.Connection[Any], backend: PostgresBackend, scope: str) -> dict:
    """Postgres' view of ``scope``'s lock: how many sessions hold it and wait for it."""
    rows = conn.execute(
        "SELECT l.granted, count(*) FROM pg_locks l WHERE l.locktype = 'advisory' "
        "AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended(%s, 0) "
        "GROUP BY l.granted",
        (_writes.lock_key(backend.tables, scope),),
    ).fetchall()
    found = dict(rows)
    return {"held": found.get(True, 0), "waiting": found.get(False, 0)}


def wait_until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.01)


def in_thread(fn: Callable[[], Any], timeout: float = DEADLINE) -> Any:
    """``fn()`` in a thread; fails (instead of hanging) if it does not return in time."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"{fn} still blocked after {timeout} s"
    if "error" in out:
        raise out["error"]
    return out.get("value")


# ---- (a) threads ------------------------------------------------------------------------


def test_a_second_locker_waits_for_unlock_and_other_scopes_do_not(make_backend, pg_conn):
    backend = make_backend()
    events: list[str] = []
    held, release, acquired = threading.Event(), threading.Event(), threading.Event()

    def holder() -> None:
        token = backend.lock("u1")
        held.set()
        release.wait(DEADLINE)
        events.append("unlocking")
        backend.unlock(token)

    def waiter() -> None:
        token = backend.lock("u1")
        events.append("acquired")
        acquired.set()
        backend.unlock(token)

    first = threading.Thread(target=holder)
    first.start()
    assert held.wait(DEADLINE)
    second = threading.Thread(target=waiter)
    second.start()
    wait_until(
        lambda: lock_requests(pg_conn, backend, "u1") == {"held": 1, "waiting": 1},
        "the second lock('u1') waits in Postgres",
    )
    assert not acquired.is_set()
    # another scope is free, and the holder's reads and writes go on meanwhile
    in_thread(lambda: backend.unlock(backend.lock("u2")))
    in_thread(lambda: put(backend, "k", {"n": 1}))
    assert not acquired.is_set() and events == []
    release.set()
    assert acquired.wait(DEADLINE)
    first.join(DEADLINE)
    second.join(DEADLINE)
    assert events == ["unlocking", "acquired"]
    assert lock_requests(pg_conn, backend, "u1") == {"held": 0, "waiting": 0}


# ---- (b) asyncio tasks ------------------------------------------------------------------


async def test_async_lockers_wait_for_aunlock_and_other_scopes_do_not(make_backend, pg_conn):
    backend = make_backend()
    events: list[str] = []
    held, release = asyncio.Event(), asyncio.Event()

    async def holder() -> None:
        token = await backend.alock("u1")
        held.set()
        await release.wait()
        events.append("unlocking")
        await backend.aunlock(token)

    async def waiter() -> None:
        token = await backend.alock("u1")
        events.append("acquired")
        await backend.aunlock(token)

    first = asyncio.create_task(holder())
    await asyncio.wait_for(held.wait(), DEADLINE)
    second = asyncio.create_task(waiter())
    deadline = time.monotonic() + DEADLINE
    while lock_requests(pg_conn, backend, "u1") != {"held": 1, "waiting": 1}:
        assert time.monotonic() < deadline, "the second alock('u1') never waited in Postgres"
        await asyncio.sleep(0.01)
    assert not second.done()
    token = await asyncio.wait_for(backend.alock("u2"), DEADLINE)  # another scope is free
    assert (await backend.aget([(NS, "missing")])) == [None]  # and the pool serves others
    await backend.aunlock(token)
    assert not second.done() and events == []
    release.set()
    await asyncio.wait_for(asyncio.gather(first, second), DEADLINE)
    assert events == ["unlocking", "acquired"]
    assert lock_requests(pg_conn, backend, "u1") == {"held": 0, "waiting": 0}


async def test_sync_and_async_lockers_exclude_each_other(make_backend, pg_conn):
    backend = make_backend()
    token = backend.lock("u1")
    waiting = asyncio.create_task(backend.alock("u1"))
    deadline = time.monotonic() + DEADLINE
    while lock_requests(pg_conn, backend, "u1")["waiting"] != 1:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    await backend.aunlock(token)  # a sync token is released by the async twin too
    await backend.aunlock(await asyncio.wait_for(waiting, DEADLINE))


# ---- (c) processes ----------------------------------------------------------------------

WORKER = r"""
import sys, time
from datetime import datetime, timezone
from langchain_ltm.backends.base import Record
from langchain_ltm.backends.postgres import postgres_backend

url, table, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
backend = postgres_backend(url, table=table, setup=False)
key = (("memories", "locks"), "counter")
backend.get([key])  # connected before the start signal
print("ready", flush=True)
sys.stdin.readline()
written = []
for _ in range(rounds):
    token = backend.lock("counter")
    try:
        (item,) = backend.get([key])
        value = item.value["n"] + 1
        time.sleep(0.001)  # widen the read-modify-write window: without the lock, updates die
        now = datetime.now(timezone.utc)
        backend.write([Record(key[0], key[1], {"n": value}, (), (), None, now)], [])
        written.append(value)
    finally:
        backend.unlock(token)
print(" ".join(map(str, written)), flush=True)
backend.close()
"""


def test_processes_incrementing_one_counter_under_the_lock_lose_nothing(make_backend, pg_url):
    backend = make_backend()
    put(backend, "counter", {"n": 0})
    workers, rounds = 6, 20
    outputs = run_together(
        [[WORKER, pg_url, backend.tables.table, str(rounds)] for _ in range(workers)], timeout=120
    )
    written = [[int(v) for v in out.split()] for out in outputs]
    (item,) = backend.get([(NS, "counter")])
    assert item is not None and item.value["n"] == workers * rounds
    # every increment read the previous one: each value was written exactly once...
    assert sorted(v for values in written for v in values) == list(range(1, 121))
    # ...while the workers really ran at the same time (their increments interleave)
    assert any(values != list(range(values[0], values[0] + rounds)) for values in written)


# ---- (d) the holder's connection dies ---------------------------------------------------


def terminate(pg_conn: psycopg.Connection[Any], pid: int) -> None:
    assert pg_conn.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]
    wait_until(
        lambda: (
            not pg_conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchall()
        ),
        f"backend {pid} is gone",
    )


def test_unlock_after_the_connection_was_killed(make_backend, pg_conn):
    # max_size=2: one connection may hold a lock, so a leaked slot or connection would block
    backend = make_backend(max_size=2, timeout=3)
    token = backend.lock("u1")
    terminate(pg_conn, token.conn.info.backend_pid)
    assert lock_requests(pg_conn, backend, "u1")["held"] == 0  # Postgres released it
    with pytest.raises(BackendError, match="broke before unlock"):
        in_thread(lambda: backend.unlock(token))
    in_thread(lambda: backend.unlock(token))  # a second unlock does nothing
    # the pool still works, and so does the lock (its slot and connection came back)
    for _ in range(3):
        again = in_thread(lambda: backend.lock("u1"))
        put(backend, "k", {"n": 1})
        assert backend.get([(NS, "k")])[0] is not None
        in_thread(lambda: backend.unlock(again))  # noqa: B023
    assert lock_requests(pg_conn, backend, "u1") == {"held": 0, "waiting": 0}


async def test_aunlock_after_the_connection_was_killed(make_backend, pg_conn):
    backend = make_backend(max_size=2, timeout=3)
    token = await backend.alock("u1")
    await asyncio.to_thread(terminate, pg_conn, token.conn.info.backend_pid)
    with pytest.raises(BackendError, match="broke before unlock"):
        await asyncio.wait_for(backend.aunlock(token), DEADLINE)
    for _ in range(3):
        again = await asyncio.wait_for(backend.alock("u1"), DEADLINE)
        assert await backend.aget([(NS, "k")]) == [None]
        await asyncio.wait_for(backend.aunlock(again), DEADLINE)


def test_a_stale_pooled_connection_is_replaced_when_locking(make_backend, pg_conn):
    backend = make_backend(max_size=2)
    backend.unlock(backend.lock("u1"))
    pool = backend.connector.sync_pool()
    with pool.connection() as conn:  # the idle connection the next lock() will get
        pid = conn.info.backend_pid
    terminate(pg_conn, pid)
    token = in_thread(lambda: backend.lock("u1"))
    assert token.conn.info.backend_pid != pid
    backend.unlock(token)


# ---- pool room ---------------------------------------------------------------------------


def test_waiting_lockers_leave_connections_for_the_holder(make_backend, pg_conn):
    """More waiters than the pool has connections: the holder's own calls still get one."""
    backend = make_backend(timeout=3)  # the default pool: max_size=10
    token = backend.lock("u1")
    got: list[int] = []

    def waiter(n: int) -> None:
        held = backend.lock("u1")
        got.append(n)
        backend.unlock(held)

    threads = [threading.Thread(target=waiter, args=(n,), daemon=True) for n in range(12)]
    for thread in threads:
        thread.start()
    wait_until(
        lambda: lock_requests(pg_conn, backend, "u1")["waiting"] >= 4,
        "four waiters (half the pool, less the holder) wait in Postgres",
    )
    for n in range(10):  # each call needs a pooled connection within 3 s
        in_thread(lambda: put(backend, "k", {"n": n}))  # noqa: B023
        assert backend.get([(NS, "k")])[0].value == {"n": n}
    assert got == [] and lock_requests(pg_conn, backend, "u1")["waiting"] == 4
    backend.unlock(token)
    for thread in threads:
        thread.join(DEADLINE)
    assert sorted(got) == list(range(12))


async def test_a_cancelled_alock_holds_nothing(make_backend, pg_conn):
    backend = make_backend(max_size=4)  # two lock slots: the holder's and the waiter's
    token = await backend.alock("u1")
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(backend.alock("u1"), 0.5)
    assert lock_requests(pg_conn, backend, "u1") == {"held": 1, "waiting": 0}
    other = await asyncio.wait_for(backend.alock("u2"), DEADLINE)  # the slot came back
    await backend.aunlock(other)
    await backend.aunlock(token)
    assert lock_requests(pg_conn, backend, "u1") == {"held": 0, "waiting": 0}
    await backend.aunlock(await asyncio.wait_for(backend.alock("u1"), DEADLINE))


# ---- settings and misuse ------------------------------------------------------------------


def _plan_cache_mode() -> sql.Exchange[str]:
    rows = yield sql.Statement("SHOW plan_cache_mode")
    return str(rows[0][0])


def test_lock_connections_keep_the_generic_plan_setting(make_backend):
    backend = make_backend(max_size=2)
    backend.unlock(backend.lock("u1"))  # the pool's first connection serves a lock first
    for _ in range(4):
        held = backend.lock("u2")
        assert backend.connector.run(_plan_cache_mode, "show") == "force_generic_plan"
        backend.unlock(held)
        assert backend.connector.run(_plan_cache_mode, "show") == "force_generic_plan"


def test_pools_handed_in_without_autocommit(pg_url, make_backend, pg_conn):
    table = make_backend().tables.table
    with ConnectionPool(pg_url, kwargs={"autocommit": False}, max_size=4) as pool:
        backend = postgres_backend(pool, table=table, setup=False)
        token = backend.lock("u1")
        assert lock_requests(pg_conn, backend, "u1")["held"] == 1
        put(backend, "k", {"n": 1})
        backend.unlock(token)
        assert lock_requests(pg_conn, backend, "u1")["held"] == 0
        assert pool.get_stats()["pool_size"] >= 1


async def test_async_pools_handed_in_without_autocommit(pg_url, make_backend, pg_conn):
    table = make_backend().tables.table
    async with AsyncConnectionPool(
        pg_url, kwargs={"autocommit": False}, max_size=4, open=False
    ) as pool:
        backend = postgres_backend(pool, table=table, setup=False)
        token = await backend.alock("u1")
        assert lock_requests(pg_conn, backend, "u1")["held"] == 1
        assert await backend.aget([(NS, "k")]) == [None]
        await backend.aunlock(token)
        assert lock_requests(pg_conn, backend, "u1")["held"] == 0


def test_misuse_is_a_clear_error(make_backend, pg_url):
    backend = make_backend()
    assert backend.capabilities.cross_process_lock
    with pytest.raises(TypeError, match="str scope"):
        backend.lock(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="token lock\\(\\) returned"):
        backend.unlock(None)
    tiny = postgres_backend(pg_url, table=backend.tables.table, setup=False, max_size=1)
    try:
        with pytest.raises(ValueError, match="max_size >= 2"):
            tiny.lock("u1")
    finally:
        tiny.close()


async def test_an_async_token_needs_aunlock(make_backend):
    backend = make_backend()
    token = await backend.alock("u1")
    with pytest.raises(TypeError, match="aunlock"):
        backend.unlock(token)
    await backend.aunlock(token)
    await backend.aunlock(token)  # twice: nothing


def test_tables_and_scopes_have_their_own_locks(make_backend, pg_conn):
    first, second = make_backend(), make_backend(table=f"t_{uuid.uuid4().hex[:12]}")
    token = first.lock("u1")
    in_thread(lambda: second.unlock(second.lock("u1")))  # another table: another lock
    in_thread(lambda: first.unlock(first.lock("u10")))  # another scope: another lock
    first.unlock(token)


# ---- a lock lost under its holder ----------------------------------------------------------


def test_a_write_made_after_the_lock_was_lost_is_refused(make_backend, pg_conn):
    """Postgres releases a lock whose connection ends; the holder's next write checks, in
    its own transaction, that it still holds it (it wrote, and the text another process
    wrote under the lock since was overwritten)."""
    backend = make_backend(max_size=4, timeout=3)
    token = backend.lock("u1")
    put(backend, "before", {"n": 1})  # held: written
    terminate(pg_conn, token.conn.info.backend_pid)
    with pytest.raises(BackendError, match=r"lock of 'u1' ended during this call"):
        put(backend, "after", {"n": 2})
    assert backend.get([(NS, "before"), (NS, "after")])[1] is None
    with pytest.raises(BackendError, match="broke before unlock"):
        backend.unlock(token)
    put(backend, "later", {"n": 3})  # no lock held any more: written as usual
    assert backend.get([(NS, "later")])[0] is not None


async def test_an_async_write_made_after_the_lock_was_lost_is_refused(make_backend, pg_conn):
    backend = make_backend(max_size=4, timeout=3)
    token = await backend.alock("u1")
    await asyncio.to_thread(terminate, pg_conn, token.conn.info.backend_pid)
    record = Record(NS, "after", {"n": 2}, (), (), None, stamp())
    with pytest.raises(BackendError, match=r"lock of 'u1' ended during this call"):
        await backend.awrite([record], [])
    assert await backend.aget([(NS, "after")]) == [None]
    with pytest.raises(BackendError, match="broke before unlock"):
        await backend.aunlock(token)


def test_a_lock_outlives_the_servers_idle_in_transaction_timeout(make_backend, pg_url):
    """The holder's transaction is idle while it decides (a resolver calling a model): a
    server's ``idle_in_transaction_session_timeout`` ended it and released the lock."""
    options = {"options": "-c idle_in_transaction_session_timeout=300"}
    backend = make_backend(max_size=4, timeout=3, connect_kwargs=options)
    token = backend.lock("u1")
    time.sleep(1.0)  # idle in the lock's transaction for more than the timeout
    put(backend, "k", {"n": 1})
    backend.unlock(token)
    assert backend.get([(NS, "k")])[0] is not None


def test_a_lock_outlives_the_servers_transaction_timeout(make_backend, pg_url):
    """Postgres 17+ ends a transaction older than ``transaction_timeout``, the lock's too:
    its holder's write was refused and its unlock failed, whatever the holder did."""
    options = {"options": "-c transaction_timeout=300"}
    backend = make_backend(max_size=4, timeout=3, connect_kwargs=options)
    token = backend.lock("u1")
    time.sleep(1.0)  # the lock's transaction lives past the timeout
    put(backend, "k", {"n": 1})
    backend.unlock(token)
    assert backend.get([(NS, "k")])[0] is not None


def _store_whose_lock_dies_before_it_writes(make_backend, pg_conn, *, after: bool = False):
    """A store whose user lock's session is terminated just before (or after) its write."""
    from langchain_ltm import LongTermMemoryStore
    from tests.fakes import KeywordEmbeddings

    store = LongTermMemoryStore(make_backend(dims=64), embeddings=KeywordEmbeddings(64))
    real_write, real_awrite = store.backend.write, store.backend.awrite

    def kill_the_lock() -> None:
        holders = pg_conn.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND objsubid = 1 AND pid <> pg_backend_pid()"
        ).fetchall()
        assert holders
        for (pid,) in holders:
            terminate(pg_conn, pid)

    def write(*args: Any, **kwargs: Any) -> int:
        if not after:
            kill_the_lock()
        done = real_write(*args, **kwargs)
        if after:
            kill_the_lock()
        return done

    async def awrite(*args: Any, **kwargs: Any) -> int:
        await asyncio.to_thread(kill_the_lock)
        return await real_awrite(*args, **kwargs)

    store.backend.write = write  # type: ignore[method-assign]
    store.backend.awrite = awrite  # type: ignore[method-assign]
    return store


def test_a_write_refused_for_a_lost_lock_is_not_hidden_by_the_failed_unlock(make_backend, pg_conn):
    """The write said "nothing of this write was made: retry", then the unlock of the dead
    connection raised "broke before unlock" in its place (from the lock's ``finally``)."""
    from langchain_ltm.backends.postgres._writes import LockLostError

    store = _store_whose_lock_dies_before_it_writes(make_backend, pg_conn)
    with pytest.raises(LockLostError, match="Nothing of this write was made") as raised:
        store.remember("u", "likes tea")
    if sys.version_info >= (3, 11):  # and the unlock's failure is noted on it
        assert "broke before unlock" in " ".join(raised.value.__notes__)
    assert store.list_all("u") == []
    del store.backend.write  # its own again: the user's lock is free in process and server
    assert store.remember("u", "likes coffee").action == "created"


async def test_an_async_write_refused_for_a_lost_lock_is_not_hidden_by_the_unlock(
    make_backend, pg_conn
):
    from langchain_ltm.backends.postgres._writes import LockLostError

    store = _store_whose_lock_dies_before_it_writes(make_backend, pg_conn)
    with pytest.raises(LockLostError, match="Nothing of this write was made"):
        await store.aremember("u", "likes tea")
    assert await store.alist_all("u") == []


def test_an_unlock_failing_after_a_good_write_still_raises_in_an_except_block(
    make_backend, pg_conn
):
    """The body's error is kept only when the body raised: an exception the caller is
    handling around the call is not one, so the unlock's own failure is raised."""
    store = _store_whose_lock_dies_before_it_writes(make_backend, pg_conn, after=True)
    try:
        raise KeyError("the caller's own")
    except KeyError:
        with pytest.raises(BackendError, match="broke before unlock"):
            store.remember("u", "likes tea")
    assert [f.content for f in store.list_all("u")] == ["likes tea"]  # committed on its own


def test_a_transaction_timeout_names_the_setting(pg_url):
    """``TransactionTimeout`` is an ``InternalError``: it read "Postgres failed during
    unlock: terminating connection due to transaction timeout", naming no setting."""
    from langchain_ltm.backends.postgres._errors import translate
    from langchain_ltm.backends.postgres._lock import _unlock_error

    with psycopg.connect(pg_url, options="-c transaction_timeout=100") as conn:
        conn.execute("SELECT 1")  # psycopg opened the transaction
        time.sleep(0.5)
        with pytest.raises(psycopg.Error) as raised:
            conn.execute("SELECT 1")
    assert raised.value.sqlstate == "25P04"
    message = str(translate(raised.value, "write"))
    assert "transaction_timeout" in message and "options=" in message
    message = str(_unlock_error(raised.value, "u1"))
    assert "broke before unlock" in message and "transaction_timeout" in message


def test_an_update_decided_under_a_lost_lock_loses_no_other_writers_text(make_backend, pg_conn):
    """Two stores, one user: A's lock is killed while A is about to write its update; B
    takes the lock and updates; A's write is refused, so B's text stays (it was lost)."""
    from langchain_ltm import LongTermMemoryStore
    from tests.fakes import KeywordEmbeddings

    table = f"t_{uuid.uuid4().hex[:12]}"
    a = LongTermMemoryStore(make_backend(table=table, dims=64), embeddings=KeywordEmbeddings(64))
    b = LongTermMemoryStore(make_backend(table=table, dims=64), embeddings=KeywordEmbeddings(64))
    fact = a.remember("u", "likes tea").fact
    assert fact is not None
    about_to_write, go = threading.Event(), threading.Event()
    real_write = a.backend.write

    def slow_write(*args: Any, **kwargs: Any) -> int:
        about_to_write.set()
        assert go.wait(DEADLINE)
        return real_write(*args, **kwargs)

    a.backend.write = slow_write  # type: ignore[method-assign]
    outcome: dict[str, Any] = {}

    def update() -> None:
        try:
            outcome["a"] = a.update_fact("u", fact.id, "likes black coffee")
        except BackendError as exc:
            outcome["a"] = exc

    thread = threading.Thread(target=update, daemon=True)
    thread.start()
    assert about_to_write.wait(DEADLINE)
    holders = pg_conn.execute(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1"
    ).fetchall()
    for (pid,) in holders:
        terminate(pg_conn, pid)
    assert in_thread(lambda: b.update_fact("u", fact.id, "likes green tea")).action == "updated"
    go.set()
    thread.join(DEADLINE)
    assert isinstance(outcome["a"], BackendError)
    (current,) = b.list_all("u")
    assert current.content == "likes green tea"
    assert [v.content for v in current.history] == ["likes tea"]


async def test_only_the_task_holding_a_lock_has_its_writes_checked(make_backend, pg_conn):
    """A task created while a lock was held inherits the context, not the lock: its write
    (or a coalesced batch run started there) failed once the lock was lost."""
    backend = make_backend(max_size=4, timeout=3)
    token = await backend.alock("u1")
    go = asyncio.Event()

    async def other() -> None:
        await go.wait()
        await backend.awrite([Record(NS, "other", {"n": 1}, (), (), None, stamp())], [])

    child = asyncio.create_task(other())
    await asyncio.to_thread(terminate, pg_conn, token.pid)
    go.set()
    await asyncio.wait_for(child, DEADLINE)  # written: it never held the lock
    assert (await backend.aget([(NS, "other")]))[0] is not None
    with pytest.raises(BackendError, match=r"lock of 'u1' ended during this call"):
        await backend.awrite([Record(NS, "mine", {"n": 2}, (), (), None, stamp())], [])
    with pytest.raises(BackendError, match="broke before unlock"):
        await backend.aunlock(token)
