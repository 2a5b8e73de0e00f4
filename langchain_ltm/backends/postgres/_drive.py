"""One exchange driven on one psycopg connection, sync and async, and the connection left clean.

:func:`drive_sync` and :func:`drive_async` run an exchange's statements (``_sql``) on a
connection ``_pools.Connector`` checked out: in psycopg's pipeline mode (each statement
sent whole, see below), on the connection's kept cursor, or straight through libpq
(``_direct``). :func:`left_in_pipeline` and :func:`rollback_or_close` tell and end what a
call left behind, before a connection goes back to its pool.
"""

from __future__ import annotations

import asyncio
import selectors
from typing import Any, TypeVar

import psycopg
from psycopg.pq import ExecStatus, PipelineStatus
from psycopg.rows import tuple_row

from langchain_ltm.backends.postgres import _direct
from langchain_ltm.backends.postgres._sql import Exchange, Statement

T = TypeVar("T")


def _has_rows(cur: psycopg.Cursor[Any] | psycopg.AsyncCursor[Any]) -> bool:
    """Whether the statement returned a result set.

    ``cur.description`` tells too, but builds a column object per column on every call
    (19 of 409 us of client CPU per per-user search, measured at 20k facts).
    """
    result = cur.pgresult
    return result is not None and result.status == ExecStatus.TUPLES_OK


# In pipeline mode psycopg returns from execute() once libpq has *tried* to send the
# statement, and a statement larger than the socket's buffer is left partly unsent while
# psycopg then waits to read its results: a hang (psycopg #685, seen here with the
# 1.5 MB of a batch's vectors). So the drivers finish sending each pipelined statement.
# While they wait to write they also read (libpq's rule for non-blocking sends, which
# psycopg's own pipeline loop follows): the server runs the statements sent before while
# this one is still going out, and what it answers (rows, NOTICEs from a user's trigger)
# must not fill both sockets' buffers with each side waiting for the other. What is read
# stays in libpq's buffer for psycopg to parse at the next result.


def _flush_sync(conn: psycopg.Connection[Any]) -> None:
    pgconn = conn.pgconn
    if pgconn.flush() != 1:  # 1: some output is still in libpq's buffer
        return
    # a selector, not select.select: that refuses descriptors of 1024 and more, which a
    # process holding many files or sockets gives its connections
    with selectors.DefaultSelector() as waiting:
        waiting.register(pgconn.socket, selectors.EVENT_READ | selectors.EVENT_WRITE)
        while True:
            if any(mask & selectors.EVENT_READ for _, mask in waiting.select()):
                pgconn.consume_input()
            if pgconn.flush() != 1:
                return


def _ready(future: asyncio.Future[bool], readable: bool) -> None:
    if not future.done():
        future.set_result(readable)


async def _flush_async(conn: psycopg.AsyncConnection[Any]) -> None:
    pgconn = conn.pgconn
    loop = asyncio.get_running_loop()
    while pgconn.flush() == 1:
        sock = pgconn.socket
        ready: asyncio.Future[bool] = loop.create_future()
        loop.add_writer(sock, _ready, ready, False)
        loop.add_reader(sock, _ready, ready, True)
        try:
            readable = await ready
        finally:
            loop.remove_writer(sock)
            loop.remove_reader(sock)
        if readable:
            pgconn.consume_input()


# Reads reuse one binary cursor per connection: a fresh cursor per call cost 32 us of
# client CPU and 40 us of wall time per per-user search (p50 of 6,000 alternated calls at
# 20k facts: 96 vs 65 us CPU, 276 vs 235 us wall). The cursor lives on the connection (a
# weak-keyed map would keep it alive: the cursor refers to its connection), and keeps its
# last result (libpq's buffer) until the connection's next read on it, so only search and
# get use it (the rows a caller asked for), not exports, scans or writes.
_KEPT_CURSOR = "_langchain_ltm_cursor"
# Every cursor reads tuples, whatever row factory the connection has: a pool made for
# LangGraph's PostgresStore or PostgresSaver (``row_factory=dict_row``) is handed in too.


def _kept_cursor(conn: Any) -> Any:
    cur = getattr(conn, _KEPT_CURSOR, None)
    if cur is None or cur.closed:
        cur = conn.cursor(binary=True, row_factory=tuple_row)
        setattr(conn, _KEPT_CURSOR, cur)
    return cur


def drive_sync(
    conn: psycopg.Connection[Any],
    exchange: Exchange[T],
    pipeline: psycopg.Pipeline | None = None,
    *,
    keep_cursor: bool = False,
) -> T:
    """Run the exchange's statements; in a pipeline, those that do not wait are only sent."""
    if keep_cursor and pipeline is None:
        if _direct.usable(conn):
            return _direct_sync(conn, exchange)
        return _exchange_sync(conn, _kept_cursor(conn), exchange, None)
    with conn.cursor(binary=True, row_factory=tuple_row) as cur:
        return _exchange_sync(conn, cur, exchange, pipeline)


def _direct_sync(conn: psycopg.Connection[Any], exchange: Exchange[T]) -> T:
    """A bounded read's statements, each through ``_direct`` (no cursor)."""
    try:
        statement: Statement = next(exchange)
        while True:
            with conn.lock:
                rows = conn.wait(_direct.read(conn, statement))
            statement = exchange.send(rows)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


def _exchange_sync(
    conn: psycopg.Connection[Any],
    cur: psycopg.Cursor[Any],
    exchange: Exchange[T],
    pipeline: psycopg.Pipeline | None,
) -> T:
    try:
        statement: Statement = next(exchange)
        while True:
            if statement.wait or pipeline is None:
                cur.execute(statement.sql, statement.params)
                if pipeline is not None:
                    _flush_sync(conn)
                    pipeline.sync()  # its results, and the errors of those sent before
                rows = cur.fetchall() if _has_rows(cur) else []
            else:
                conn.cursor(binary=True, row_factory=tuple_row).execute(
                    statement.sql, statement.params
                )
                _flush_sync(conn)
                rows = []
            statement = exchange.send(rows)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


async def drive_async(
    conn: psycopg.AsyncConnection[Any],
    exchange: Exchange[T],
    pipeline: psycopg.AsyncPipeline | None = None,
    *,
    keep_cursor: bool = False,
) -> T:
    """Async twin of :func:`drive_sync`."""
    if keep_cursor and pipeline is None:
        if _direct.usable(conn):
            return await _direct_async(conn, exchange)
        return await _exchange_async(conn, _kept_cursor(conn), exchange, None)
    async with conn.cursor(binary=True, row_factory=tuple_row) as cur:
        return await _exchange_async(conn, cur, exchange, pipeline)


async def _direct_async(conn: psycopg.AsyncConnection[Any], exchange: Exchange[T]) -> T:
    """Async twin of :func:`_direct_sync`."""
    try:
        statement: Statement = next(exchange)
        while True:
            async with conn.lock:
                rows = await conn.wait(_direct.read(conn, statement))
            statement = exchange.send(rows)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


async def _exchange_async(
    conn: psycopg.AsyncConnection[Any],
    cur: psycopg.AsyncCursor[Any],
    exchange: Exchange[T],
    pipeline: psycopg.AsyncPipeline | None,
) -> T:
    try:
        statement: Statement = next(exchange)
        while True:
            if statement.wait or pipeline is None:
                await cur.execute(statement.sql, statement.params)
                if pipeline is not None:
                    await _flush_async(conn)
                    await pipeline.sync()
                rows = await cur.fetchall() if _has_rows(cur) else []
            else:
                await conn.cursor(binary=True, row_factory=tuple_row).execute(
                    statement.sql, statement.params
                )
                await _flush_async(conn)
                rows = []
            statement = exchange.send(rows)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


def left_in_pipeline(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """Whether an open connection is still in pipeline mode after its pipeline block.

    A cancellation (or ``KeyboardInterrupt``) that arrives while psycopg closes a
    pipeline interrupts the exit half-way: the connection is idle but still pipelined, and
    the next call on it would read the answers of the cancelled statements (an empty list
    for a user's facts, measured). Such a connection is closed, never handed on.
    """
    return not conn.closed and conn.pgconn.pipeline_status != PipelineStatus.OFF


def rollback_or_close_sync(conn: psycopg.Connection[Any]) -> None:
    """End the connection's transaction (and the locks it holds); close it if that fails."""
    if conn.closed:
        return
    try:
        conn.rollback()
    except psycopg.Error:
        conn.close()


async def rollback_or_close(conn: psycopg.AsyncConnection[Any]) -> None:
    """Async twin of :func:`rollback_or_close_sync`."""
    if conn.closed:
        return
    try:
        await conn.rollback()
    except psycopg.Error:
        await conn.close()
