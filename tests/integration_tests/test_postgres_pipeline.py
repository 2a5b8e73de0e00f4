"""Pipelined writes finish sending while the server answers: large batches complete.

A write sends its statements in psycopg's pipeline mode and finishes sending each one
itself (``_drive._flush_sync`` / ``_flush_async``). While it waits to write it also reads
what the server answers for the statements sent before (rows, NOTICEs), as libpq asks of
non-blocking senders, so neither side can wait for the other with both buffers full.
These tests make the server answer a lot during a large write (a trigger raising a
NOTICE per row) and check that the write completes, whole, within a deadline, and that
every NOTICE still reaches the connection's handler (what the flush read is not lost).
"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from langgraph.store.base import PutOp

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.postgres import _drive, postgres_backend
from tests.fakes import KeywordEmbeddings
from tests.pg_pools import handed_in_pool

ROWS = 5_000
VALUE_BYTES = 2_000  # ~10 MB of values in the item statement
NOTICE_BYTES = 1_000  # ~5 MB of NOTICEs answered while the vectors statement goes out
DEADLINE = 120.0


def _within(pg_url: str, deadline: float, fn: Callable[[], Any], marker: str) -> Any:
    """``fn()`` on a thread; past ``deadline`` the backends running ``marker`` are ended."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # reported below
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(deadline)
    if thread.is_alive():
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE pid <> pg_backend_pid() AND query LIKE %s",
                (f"%{marker}%",),
            )
        thread.join(10)
        pytest.fail(f"the write did not complete within {deadline:.0f} s (a pipeline deadlock)")
    if "error" in out:
        raise out["error"]
    return out.get("value")


def _noisy_table(pg_url: str, table: str) -> None:
    """The items table gets a trigger raising one large NOTICE per inserted row."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            f"CREATE FUNCTION {table}_notice() RETURNS trigger LANGUAGE plpgsql AS $$ "
            f"BEGIN RAISE NOTICE '%', repeat('n', {NOTICE_BYTES}); RETURN NEW; END $$"
        )
        conn.execute(
            f"CREATE TRIGGER {table}_noisy AFTER INSERT ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION {table}_notice()"
        )


def _drop(pg_url: str, backend: Any, table: str) -> None:
    backend.drop()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"DROP FUNCTION IF EXISTS {table}_notice()")


def _ops() -> list[PutOp]:
    return [
        PutOp(
            ("memories", f"u{i % 100}"), f"k{i}", {"text": f"fact {i}", "blob": "x" * VALUE_BYTES}
        )
        for i in range(ROWS)
    ]


def _check_written(pg_url: str, table: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        items = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
        vectors = conn.execute(f"SELECT count(*) FROM {table}_vectors").fetchone()
    assert items == (ROWS,) and vectors == (ROWS,)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_large_batch_completes_while_the_server_answers_a_lot(pg_url: str, mode: str) -> None:
    from psycopg_pool import AsyncConnectionPool, ConnectionPool

    table = f"pipe_{uuid.uuid4().hex[:8]}"
    notices: list[int] = []

    def count(diag: Any) -> None:
        notices.append(len(diag.message_primary or ""))

    ops = _ops()
    if mode == "sync":
        pool: Any = ConnectionPool(
            pg_url, configure=lambda conn: conn.add_notice_handler(count), open=True
        )
        backend = postgres_backend(pool, table=table, dims=64)
        store = LongTermMemoryStore(backend, embeddings=KeywordEmbeddings(64), fields=["text"])
        _noisy_table(pg_url, table)
        try:
            _within(pg_url, DEADLINE, lambda: store.batch(ops), table)
            _check_written(pg_url, table)
        finally:
            _drop(pg_url, backend, table)
            store.close()
            pool.close()
    else:

        async def configure(conn: Any) -> None:
            conn.add_notice_handler(count)

        async def run() -> None:
            async with AsyncConnectionPool(pg_url, configure=configure, open=False) as apool:
                backend = postgres_backend(apool, table=table, dims=64, setup=False)
                await backend.asetup()
                store = LongTermMemoryStore(
                    backend, embeddings=KeywordEmbeddings(64), fields=["text"]
                )
                await asyncio.to_thread(_noisy_table, pg_url, table)
                try:
                    await asyncio.wait_for(store.abatch(ops), DEADLINE)
                    await asyncio.to_thread(_check_written, pg_url, table)
                finally:
                    await backend.adrop()
                    await store.aclose()
                    await asyncio.to_thread(_drop_function, pg_url, table)

        _within(pg_url, DEADLINE + 30, lambda: asyncio.run(run()), table)
    # every trigger's NOTICE reached the handler (setup's own notices aside): nothing the
    # flush read was lost
    assert notices.count(NOTICE_BYTES) == ROWS


def _drop_function(pg_url: str, table: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"DROP FUNCTION IF EXISTS {table}_notice()")


_NOISY = "DO $$ BEGIN FOR i IN 1..10000 LOOP RAISE NOTICE '%', repeat('n', 1000); END LOOP; END $$"


def test_the_flush_reads_while_it_writes(pg_url: str) -> None:
    """Three pipelined statements: a sleep, 10 MB of NOTICEs, then 20 MB of parameter.

    The NOTICEs are produced while the 20 MB statement is still going out (the server
    reaches them once the sleep ends); the flush must complete and every NOTICE arrive.
    """
    notices: list[int] = []
    with psycopg.connect(pg_url) as conn:
        conn.add_notice_handler(lambda diag: notices.append(1))

        def run() -> int:
            with conn.pipeline() as pipe, conn.transaction():
                conn.cursor().execute("SELECT pg_sleep(0.5), 'flush-reads'")
                _drive._flush_sync(conn)
                conn.cursor().execute(_NOISY)
                _drive._flush_sync(conn)
                cur = conn.cursor()
                cur.execute("SELECT length(%s)", ("x" * 20_000_000,))
                _drive._flush_sync(conn)
                pipe.sync()
                (length,) = cur.fetchone() or (0,)
                return int(length)

        assert _within(pg_url, DEADLINE, run, "flush-reads") == 20_000_000
    assert len(notices) == 10_000


def test_the_async_flush_reads_while_it_writes(pg_url: str) -> None:
    notices: list[int] = []

    async def run() -> int:
        async with await psycopg.AsyncConnection.connect(pg_url) as conn:
            conn.add_notice_handler(lambda diag: notices.append(1))
            async with conn.pipeline() as pipe, conn.transaction():
                await conn.cursor().execute("SELECT pg_sleep(0.5), 'aflush-reads'")
                await _drive._flush_async(conn)
                await conn.cursor().execute(_NOISY)
                await _drive._flush_async(conn)
                cur = conn.cursor()
                await cur.execute("SELECT length(%s)", ("x" * 20_000_000,))
                await _drive._flush_async(conn)
                await pipe.sync()
                (length,) = await cur.fetchone() or (0,)
                return int(length)

    assert _within(pg_url, DEADLINE, lambda: asyncio.run(run()), "aflush-reads") == 20_000_000
    assert len(notices) == 10_000


def _fds_past(lowest: int) -> list[int]:
    """Hold descriptors until the next one opened is ``lowest`` or more (close them after)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < lowest + 64:
        if hard != resource.RLIM_INFINITY and hard < lowest + 64:
            pytest.skip(f"the descriptor limit ({hard}) is below {lowest + 64}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (lowest + 64, hard))
    held = [os.open(os.devnull, os.O_RDONLY)]  # held too: no low descriptor left free
    while held[-1] < lowest:
        held.append(os.dup(held[0]))
    return held


def test_the_flush_takes_a_socket_past_descriptor_1024(pg_url: str) -> None:
    """select.select refuses descriptors of 1024 and more; a busy process has them."""
    from psycopg_pool import ConnectionPool

    held = _fds_past(1100)
    table = f"pipe_{uuid.uuid4().hex[:8]}"
    try:
        with psycopg.connect(pg_url) as conn:
            assert conn.pgconn.socket >= 1024
            with conn.pipeline() as pipe, conn.transaction():
                cur = conn.cursor()
                cur.execute("SELECT length(%s)", ("x" * 20_000_000,))
                _drive._flush_sync(conn)  # 20 MB: more than the socket takes at once
                pipe.sync()
                assert cur.fetchone() == (20_000_000,)
        # and a store's pipelined batch on a pool whose connections are all past 1024
        with ConnectionPool(pg_url, min_size=1, max_size=1, open=True) as pool:
            with pool.connection() as conn:
                assert conn.pgconn.socket >= 1024
            backend = postgres_backend(pool, table=table, dims=64)
            store = LongTermMemoryStore(backend, embeddings=KeywordEmbeddings(64), fields=["text"])
            try:
                ops = _ops()[:1000]  # ~2 MB of values in one statement
                _within(pg_url, DEADLINE, lambda: store.batch(ops), table)
                with psycopg.connect(pg_url, autocommit=True) as check:
                    assert check.execute(f"SELECT count(*) FROM {table}").fetchone() == (1000,)
            finally:
                backend.drop()
                store.close()
    finally:
        for fd in held:
            os.close(fd)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_the_first_write_types_the_column_without_breaking_prepared_statements(pg_url, mode):
    """A store opened without ``dims`` types its vector column in its first write. The
    ``ALTER TABLE`` made psycopg drop its prepared statements after the next one had been
    prepared in the pipeline, so with a handed-in pool preparing every statement
    (``prepare_threshold=0``) the second write failed ("prepared statement does not
    exist") and was not stored."""
    table = f"t_{uuid.uuid4().hex[:12]}"
    kwargs = {"autocommit": True, "prepare_threshold": 0}
    async with handed_in_pool(pg_url, mode, **kwargs) as pool:
        store = LongTermMemoryStore(
            postgres_backend(pool, table=table), embeddings=KeywordEmbeddings(64)
        )
        try:
            for key in ("a", "b", "c"):
                if mode == "sync":
                    store.put(("docs",), key, {"text": f"note {key}"})
                else:
                    await store.aput(("docs",), key, {"text": f"note {key}"})
            assert [i.key for i in store.search(("docs",), limit=10)] == ["c", "b", "a"]
        finally:
            await asyncio.to_thread(store.backend.drop)
            await store.aclose()
