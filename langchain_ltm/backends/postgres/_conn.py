"""Connections for the Postgres engine: pools, pgvector adapters, errors, thin I/O shells.

``Connector.run`` (sync, over ``psycopg_pool.ConnectionPool``) and ``Connector.arun``
(async, over ``AsyncConnectionPool``) drive the I/O-free exchanges of ``_reads``,
``_writes`` and ``_schema`` the same way; neither calls the other, and there is no
background event loop.

A call whose connection breaks (server restart, ``pg_terminate_backend``, network) is
retried once on a fresh connection after the pool has discarded its dead connections:
reads are safe to repeat, and a write is one transaction, so it either committed or did
not, and writing the same batch again leaves the same rows. A second failure raises
``BackendError``. So is a call that Postgres rolled back as a deadlock victim or for a
serialization failure (SQLSTATE class 40): our writes cannot deadlock with each other
(``_writes.write_locks``), but a writer outside that discipline can, and so do two
transactions swapping two facts' contents (each waits for the other in the fact-hash
index, across keys); the retry then reports the duplicate. A statement cancelled with
``pg_cancel_backend`` is not retried (someone asked it to stop; its transaction was rolled
back, the connection is fine): its error says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import selectors
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol, TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import ExecStatus, PipelineStatus, TransactionStatus
from psycopg.rows import tuple_row
from psycopg.types import TypeInfo
from psycopg.types.json import set_json_loads
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from langchain_ltm.backends._compaction import StoreInUseError
from langchain_ltm.backends.postgres import _direct, _wire
from langchain_ltm.backends.postgres._sql import Exchange, Statement
from langchain_ltm.errors import (
    BackendError,
    DuplicateFactError,
    EmbeddingDimensionError,
    EngineLimitError,
)

T = TypeVar("T")


_NO_VECTOR = (
    "The pgvector extension is missing in this database: run PostgresBackend.setup() "
    "(or CREATE EXTENSION vector as an administrator)."
)


_IDLE = TransactionStatus.IDLE


class _Lost(Exception):
    """The connection broke during the call (internal: triggers one retry)."""


def _register_vector(conn: Any, info: TypeInfo) -> None:
    from pgvector.psycopg.vector import register_vector_info  # type: ignore[import-untyped]

    register_vector_info(conn, info)
    _wire.register(conn, info.oid, info.array_oid)


def rolled_back(exc: BaseException) -> bool:
    """Postgres rolled the transaction back: a deadlock victim, a serialization failure.

    SQLSTATE class 40 (psycopg's ``DeadlockDetected`` is not a ``TransactionRollback``).
    """
    return isinstance(exc, psycopg.Error) and str(exc.sqlstate or "").startswith("40")


_REWRITES = {
    "compact": "they were not compacted",
    "migrate_vector_type": "the vectors were not converted",
}
"""Calls that lock the store's tables for a rewrite, within a ``lock_timeout`` of theirs."""


_SQLALCHEMY_SCHEME = "postgresql+psycopg://"


def check_conninfo(conninfo: str) -> str:
    """``conninfo`` if libpq can read it, else ``ValueError`` saying what is wrong.

    A malformed URL (an unknown query parameter, port 99999) was only found by the pool's
    connection attempts: it logged the error once per attempt and raised after its whole
    timeout, as if the server were down. SQLAlchemy's ``postgresql+psycopg://`` scheme
    (what a ``PGEngine`` is built from) is read as ``postgresql://``.

    Example:
        >>> check_conninfo("postgresql+psycopg://app@db/app")
        'postgresql://app@db/app'
        >>> check_conninfo("postgresql://app:pw@db:99999/app")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: Malformed Postgres URL postgresql://***@db:99999/app: invalid port number...
    """
    if conninfo.startswith(_SQLALCHEMY_SCHEME):
        conninfo = "postgresql://" + conninfo.removeprefix(_SQLALCHEMY_SCHEME)
    shown = redact(conninfo)
    try:
        params = conninfo_to_dict(conninfo)
    except psycopg.Error as exc:
        problem = str(exc).strip().replace(conninfo, shown)
        raise ValueError(f"Malformed Postgres URL {shown}: {problem}. {_URL_FORM}") from None
    for port in str(params.get("port") or "").split(","):
        if port and not (port.isdigit() and 1 <= int(port) <= 65535):
            raise ValueError(
                f'Malformed Postgres URL {shown}: invalid port number "{port}" (1 to 65535). '
                + _URL_FORM
            )
    return conninfo


_URL_FORM = "Write it as postgresql://user:password@host:5432/dbname."


def redact(conninfo: str) -> str:
    """``conninfo`` with the user and password of a URL (or a ``password=``) hidden.

    Example:
        >>> redact("postgresql://app:secret@db/app"), redact("host=db password=secret")
        ('postgresql://***@db/app', 'host=db password=***')
    """
    scheme, sep, rest = conninfo.partition("://")
    if sep:
        _, at, tail = rest.rpartition("@")
        url = f"{scheme}://***@{tail}" if at else conninfo
        return re.sub(r"([?&]password=)[^&]*", r"\1***", url)
    return re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", conninfo)


def translate(exc: BaseException, what: str, why: str = "") -> Exception:
    """A langchain-ltm error for a psycopg error, saying what to change.

    ``why`` is :meth:`Connector.diagnose`'s answer for a ``PoolTimeout``: the server could
    not be reached at all (a bigger pool would not help), or it can and the pool's
    connections all stayed busy.
    """
    if isinstance(exc, PoolTimeout) and why:
        return BackendError(
            f"Cannot connect to Postgres ({exc}; connecting directly failed: {why}). Check "
            "that the server is up and reachable at the URL's host and port, and the URL's "
            "user, password and database."
        )
    if isinstance(exc, PoolTimeout):
        return BackendError(
            f"No free Postgres connection within the pool timeout ({exc}), although the "
            "server accepts connections: the pool's connections all stayed busy. Raise "
            "max_size/timeout of postgres_backend(), or run fewer calls at once."
        )
    if isinstance(exc, pg_errors.UniqueViolation | pg_errors.ExclusionViolation) and str(
        getattr(exc.diag, "constraint_name", "")
    ).endswith("_fact_hash"):  # a unique constraint up to schema version 2, then exclusion
        return DuplicateFactError(
            "Another writer stored the same fact for this user at the same moment, so this "
            "batch was not written (unique content hash per namespace). Call remember() "
            "again: it will find the stored fact and report it as a duplicate."
        )
    message = str(exc).strip()
    if isinstance(exc, pg_errors.LockNotAvailable) and what in _REWRITES:
        return StoreInUseError(
            f"{message}: other sessions (an agent, a long transaction) kept the store's "
            f"tables busy, so {_REWRITES[what]} (nothing was changed). Run it again "
            "when the store is quieter, or with a longer lock_timeout."
        )
    if rolled_back(exc):
        return BackendError(
            f"Postgres rolled back {what} ({message}): it conflicted with another "
            "transaction (a deadlock or a serialization failure). "
            "Nothing of it was written: retry the call (a retried batch is idempotent)."
        )
    if isinstance(exc, pg_errors.DataException) and "dimensions" in message:
        return EmbeddingDimensionError(
            f"Postgres refused the vectors: {message}. The embedding model changed: keep "
            "the original model, or store the new memories in a new table."
        )
    if isinstance(exc, pg_errors.ReadOnlySqlTransaction):
        return BackendError(
            f"{message}. The database is read-only: connect to a writable primary (not a "
            "replica), or turn off default_transaction_read_only. Reads still work."
        )
    if isinstance(exc, pg_errors.DiskFull):
        return BackendError(
            f"{message}. The Postgres server is out of disk space: free space or grow the "
            "volume, then retry (nothing of this batch was written)."
        )
    if isinstance(exc, pg_errors.UndefinedTable):
        return BackendError(
            f"{message}. Create the tables first: PostgresBackend.setup() (postgres_backend() "
            "and LongTermMemoryStore.from_postgres() call it unless setup=False)."
        )
    if isinstance(exc, pg_errors.InsufficientPrivilege) and "extension" in message.lower():
        return BackendError(
            f"{message}. The pgvector extension is not installed in this database and this "
            "role may not install it: ask an administrator to run CREATE EXTENSION vector."
        )
    if isinstance(exc, (pg_errors.UntranslatableCharacter, pg_errors.CharacterNotInRepertoire)):
        return BackendError(
            f"{message}. Postgres cannot store NUL (\\u0000) characters in text or JSON; "
            "remove them from the value."
        )
    timed_out = isinstance(exc, pg_errors.LockNotAvailable) or "statement timeout" in message
    if isinstance(exc, pg_errors.QueryCanceled | pg_errors.LockNotAvailable) and timed_out:
        lock = isinstance(exc, pg_errors.LockNotAvailable)
        return _timeout_error(what, message, "lock_timeout" if lock else "statement_timeout")
    ended_by = ENDED_BY_TIMEOUT.get(str(getattr(exc, "sqlstate", None) or ""))
    if ended_by is not None:
        return _timeout_error(what, message, ended_by)
    if isinstance(exc, pg_errors.QueryCanceled):  # pg_cancel_backend, or a client's cancel
        return BackendError(
            f"Postgres cancelled {what} ({message}): an administrator or another client "
            "cancelled the statement (pg_cancel_backend); the connection did not fail. "
            "Nothing of it was written: retry the call if it should run."
        )
    limit = _limit_passed(exc, message)
    if limit is not None:
        return EngineLimitError(
            f"Postgres cannot do this {what} ({message}): {limit} Nothing of it was written."
        )
    if isinstance(exc, psycopg.OperationalError):
        return BackendError(
            f"The connection to Postgres failed during {what} ({message}). Nothing is "
            "half-written: retry the call (a retried batch is idempotent)."
        )
    return BackendError(f"Postgres failed during {what}: {message}")


ENDED_BY_TIMEOUT = {
    "25P03": "idle_in_transaction_session_timeout",
    "25P04": "transaction_timeout",  # Postgres 17+
}
"""SQLSTATEs of a server timeout that ends the session, and the setting to raise."""


def _timeout_error(what: str, message: str, setting: str) -> BackendError:
    """The error of a call a server timeout stopped: name the setting and where it is set."""
    return BackendError(
        f"Postgres stopped {what} ({message}): the {setting} of this role, database or "
        f"connection is shorter than the call needs. Nothing of it was written; raise "
        f"{setting} (ALTER ROLE ... SET {setting} = ..., or for the database, or in the "
        f"connection's options: options='-c {setting}=...' in the URL or connect_kwargs), "
        "or send smaller batches."
    )


def _limit_passed(exc: BaseException, message: str) -> str | None:
    """What to change when ``exc`` is a limit of Postgres, not a failure; else None.

    Repeating such a call fails the same way, so it must not read as a lost connection
    ("retry the call"): psycopg raises both as ``OperationalError``.
    """
    if "index row size" in message or "index row requires" in message:
        return (
            "a key with its namespace must fit one entry of the table's B-tree index (about "
            "2,700 bytes in all): use a shorter key or namespace labels (a hash of a long "
            "one, say)."
        )
    if "number of parameters must be between" in message:
        return (
            "one statement binds at most 65,535 values: use fewer filter conditions or "
            "operands (split a long $in list over several searches)."
        )
    if isinstance(exc, pg_errors.ProgramLimitExceeded):
        return "it is past a limit of the server: send less in one call."
    return None


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


def _drive_sync(
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


async def _drive_async(
    conn: psycopg.AsyncConnection[Any],
    exchange: Exchange[T],
    pipeline: psycopg.AsyncPipeline | None = None,
    *,
    keep_cursor: bool = False,
) -> T:
    """Async twin of :func:`_drive_sync`."""
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


class _AsyncPoolLike(Protocol):
    @property
    def max_size(self) -> int: ...

    def connection(
        self, timeout: float | None = None
    ) -> contextlib.AbstractAsyncContextManager[psycopg.AsyncConnection[Any]]: ...

    async def getconn(self, timeout: float | None = None) -> psycopg.AsyncConnection[Any]: ...

    async def putconn(self, conn: psycopg.AsyncConnection[Any]) -> None: ...

    async def check(self) -> None: ...

    async def close(self, timeout: float = 5.0) -> None: ...


class LoopPool:
    """A small async pool that never runs background tasks.

    Connections are opened in the task that asks for one, so an event loop can always shut
    down: psycopg_pool's ``AsyncConnectionPool`` grows in worker tasks, and a worker
    cancelled while connecting swallows the cancellation, which hangs ``asyncio.run`` at
    exit when the pool was not closed (psycopg #1345 is the same family of bug).
    """

    def __init__(
        self, conninfo: str, kwargs: dict[str, Any], max_size: int, timeout: float
    ) -> None:
        self.conninfo, self.kwargs, self.timeout = conninfo, kwargs, timeout
        self.max_size = max_size
        self._idle: list[psycopg.AsyncConnection[Any]] = []
        self._slots = asyncio.Semaphore(max_size)
        self._closed = False

    @contextlib.asynccontextmanager
    async def connection(
        self, timeout: float | None = None
    ) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        conn = await self.getconn(timeout)
        try:
            try:
                yield conn
            except BaseException:
                await rollback_or_close(conn)
                raise
            if conn.info.transaction_status == TransactionStatus.INTRANS:
                await conn.commit()
        finally:
            await self.putconn(conn)

    async def getconn(self, timeout: float | None = None) -> psycopg.AsyncConnection[Any]:
        """A connection that the caller hands back with :meth:`putconn`."""
        # not asyncio.wait_for: on Python 3.10 and 3.11 it can return the slot to a task
        # that was cancelled meanwhile, and the cancellation is lost
        waiting = asyncio.ensure_future(self._slots.acquire())
        try:
            done, _ = await asyncio.wait({waiting}, timeout=timeout or self.timeout)
        except BaseException:
            self._give_back_if_taken(waiting)
            raise
        if not done:
            self._give_back_if_taken(waiting)
            raise PoolTimeout(f"no free connection after {timeout or self.timeout} s")
        try:
            return await self._take()
        except BaseException:
            self._slots.release()
            raise

    def _give_back_if_taken(self, waiting: asyncio.Future[Any]) -> None:
        """Stop waiting for a slot; one it got anyway goes back (nobody will use it)."""
        waiting.cancel()

        def give_back(done: asyncio.Future[Any]) -> None:
            if not done.cancelled() and done.exception() is None:
                self._slots.release()

        waiting.add_done_callback(give_back)

    async def putconn(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Take a connection back: kept if idle, closed if in a transaction or broken."""
        try:
            if (
                self._closed
                or conn.closed
                or conn.info.transaction_status != _IDLE
                or left_in_pipeline(conn)
            ):
                await conn.close()
            else:
                self._idle.append(conn)
        finally:
            self._slots.release()

    async def _take(self) -> psycopg.AsyncConnection[Any]:
        if self._closed:
            raise psycopg.OperationalError("the langchain-ltm async pool is closed")
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                return conn
        kwargs = {"connect_timeout": max(1, round(self.timeout)), **self.kwargs}
        return await psycopg.AsyncConnection.connect(self.conninfo, **kwargs)

    async def check(self) -> None:
        """Drop the idle connections that no longer answer."""
        alive = []
        for conn in self._idle:
            try:
                await conn.execute("SELECT 1")
                alive.append(conn)
            except psycopg.Error:
                await conn.close()
        self._idle = alive

    async def close(self, timeout: float = 5.0) -> None:
        """Close the idle connections; those in use close when they come back."""
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            await conn.close()

    def abandon(self) -> None:
        """Close the sockets without an event loop (the loop that opened them is gone)."""
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.pgconn.finish()


class Connector:
    """A sync pool and one async pool per event loop, over one database.

    Pools the connector creates itself are opened lazily (a sync-only program never starts
    an async pool, and the reverse) and closed by :meth:`close`/:meth:`aclose`; the pool of
    an event loop that has closed is dropped (its sockets closed) when another loop asks
    for one. Pools handed in are used as they are and left open.
    """

    def __init__(
        self,
        conninfo: str,
        *,
        pool: ConnectionPool[Any] | None = None,
        apool: AsyncConnectionPool[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
        min_size: int = 1,
        max_size: int = 10,
        timeout: float = 10.0,
    ) -> None:
        self.conninfo = conninfo
        self.kwargs = {"autocommit": True, **(kwargs or {})}
        self.min_size, self.max_size, self.timeout = min_size, max_size, timeout
        self._pool = pool
        self._closed = False
        self._owns_pool = pool is None
        self._apool = apool  # handed in: used from the event loop its owner runs it in
        self._loop_pools: dict[asyncio.AbstractEventLoop, LoopPool] = {}
        self._vector_info: TypeInfo | None = None
        self._lock = threading.Lock()

    # ---- pools --------------------------------------------------------------------------

    def _check_conninfo(self) -> None:
        if not self.conninfo:
            raise TypeError(
                "The pool given to postgres_backend() computes its conninfo with a function, "
                "so its sync/async twin cannot be opened: pass a postgresql:// URL, or use "
                "only the API (sync or async) of the pool you passed."
            )

    def _check_open(self) -> None:
        """Refuse a call after ``close()``: a closed store stays closed.

        Such a call opened new pools, whose connections were held until the store was
        garbage-collected (SQLite refuses it too).

        Raises:
            BackendError: :meth:`close` or :meth:`aclose` was called.
        """
        if self._closed:
            raise BackendError(
                "This Postgres store was closed (close() or aclose()); open a new one."
            )

    def sync_pool(self) -> ConnectionPool[Any]:
        """The sync pool (opened on first use)."""
        self._check_open()
        if self._pool is None:
            self._check_conninfo()
            with self._lock:
                if self._pool is None:
                    self._pool = ConnectionPool(
                        self.conninfo,
                        kwargs=self.kwargs,
                        min_size=self.min_size,
                        max_size=self.max_size,
                        timeout=self.timeout,
                        open=True,
                        name="langchain-ltm",
                    )
        return self._pool

    def async_pool(self) -> _AsyncPoolLike:
        """The running event loop's async pool (opened on first use)."""
        self._check_open()
        if self._apool is not None:
            return self._apool
        loop = asyncio.get_running_loop()
        pool = self._loop_pools.get(loop)
        if pool is None:
            self._check_conninfo()
            with self._lock:
                for gone in [other for other in self._loop_pools if other.is_closed()]:
                    self._loop_pools.pop(gone).abandon()
                pool = self._loop_pools[loop] = LoopPool(
                    self.conninfo, self.kwargs, self.max_size, self.timeout
                )
        return pool

    def close(self) -> None:
        """Close the pools this connector created (pools handed in stay open)."""
        self._closed = True
        pool, self._pool = (self._pool, None) if self._owns_pool else (None, self._pool)
        if pool is not None:
            pool.close()
        with self._lock:
            pools, self._loop_pools = self._loop_pools, {}
        for loop_pool in pools.values():
            loop_pool.abandon()

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        self._closed = True
        loop = asyncio.get_running_loop()
        with self._lock:
            pools, self._loop_pools = self._loop_pools, {}
        for owner, loop_pool in pools.items():
            if owner is loop:
                await loop_pool.close()
            else:
                loop_pool.abandon()
        pool, self._pool = (self._pool, None) if self._owns_pool else (None, self._pool)
        if pool is not None:
            await asyncio.to_thread(pool.close)

    # ---- running exchanges --------------------------------------------------------------

    # Statements are prepared (psycopg, after 5 runs). Left to itself, Postgres re-plans the
    # search for its parameters on every call, which costs more than running it; on the
    # connections of pools opened here it keeps the generic plan instead. Pools handed in
    # keep their session settings and JSON loader (see postgres_backend()).
    # And they read timestamps in UTC: psycopg then builds each datetime in UTC directly
    # (with any other session zone, even "Etc/UTC", it converts every one, and so did
    # _reads.utc after it: building five items took 9.6 us, 6.4 in UTC). Binary timestamps
    # do not depend on the session zone, and no statement here formats or truncates one.
    _SESSION_SETTINGS = (
        "SELECT set_config('plan_cache_mode', 'force_generic_plan', false), "
        "set_config('TimeZone', 'UTC', false)"
    )

    def _prepare(self, conn: psycopg.Connection[Any], owned: bool) -> None:
        if conn.adapters.types.get("vector") is None:
            info = self._vector_info or TypeInfo.fetch(conn, "vector")
            if info is None:
                raise BackendError(_NO_VECTOR)
            self._vector_info = info
            _register_vector(conn, info)
            if owned:
                set_json_loads(_wire.json_loads, conn)
                conn.execute(self._SESSION_SETTINGS)

    async def _aprepare(self, conn: psycopg.AsyncConnection[Any], owned: bool) -> None:
        if conn.adapters.types.get("vector") is None:
            info = self._vector_info or await TypeInfo.fetch(conn, "vector")
            if info is None:
                raise BackendError(_NO_VECTOR)
            self._vector_info = info
            _register_vector(conn, info)
            if owned:
                set_json_loads(_wire.json_loads, conn)
                await conn.execute(self._SESSION_SETTINGS)

    def run(
        self,
        make: Callable[[], Exchange[T]],
        what: str,
        *,
        transaction: bool = False,
        vectors: bool = True,
        pipeline: bool = False,
        keep_cursor: bool = False,
    ) -> T:
        """Drive ``make()`` on a pooled connection (one retry if the connection breaks).

        Also retried once: a call Postgres rolled back (deadlock victim, serialization
        failure), after a short random pause. ``pipeline`` (with ``transaction``): psycopg's
        pipeline mode, so statements that do not wait (``Statement.wait``), the ``BEGIN``
        and the ``COMMIT`` share round trips, and the server runs a statement while the
        next one is built (libpq 14 or newer; with an older one the statements simply
        wait in turn). ``keep_cursor``: a bounded read, run as prepared statements
        straight through libpq on an autocommit connection outside a transaction
        (``_direct``), else on the connection's kept cursor (see :func:`_kept_cursor`).
        """
        pool = self.sync_pool()
        for attempt in (1, 2):
            try:
                with pool.connection() as conn:
                    try:
                        if vectors:
                            self._prepare(conn, self._owns_pool)
                        if transaction and pipeline and psycopg.Pipeline.is_supported():
                            try:
                                with conn.pipeline() as pipe, conn.transaction():
                                    return _drive_sync(conn, make(), pipe)
                            finally:
                                if left_in_pipeline(conn):  # interrupted while closing it
                                    conn.close()
                        if transaction:
                            with conn.transaction():
                                return _drive_sync(conn, make(), keep_cursor=keep_cursor)
                        return _drive_sync(conn, make(), keep_cursor=keep_cursor)
                    except psycopg.Error as exc:
                        if conn.broken or conn.closed:
                            raise _Lost from exc
                        raise
            except _Lost as lost:
                cause = lost.__cause__ or lost
                if attempt == 2:
                    raise translate(cause, what) from cause
                pool.check()
            except PoolTimeout as exc:
                raise translate(exc, what, self.diagnose()) from exc
            except psycopg.Error as exc:
                if attempt == 1 and rolled_back(exc):  # all of it was rolled back: again
                    time.sleep(random.uniform(0.001, 0.02))
                    continue
                raise translate(exc, what) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def diagnose(self) -> str:
        """Why connecting fails, from one direct attempt (the pool keeps its errors); or ``""``."""
        try:
            psycopg.connect(self.conninfo, **{**self.kwargs, "connect_timeout": 2}).close()
        except psycopg.Error as exc:
            return " ".join(str(exc).split())  # libpq's hint is on a line of its own
        return ""

    async def arun(
        self,
        make: Callable[[], Exchange[T]],
        what: str,
        *,
        transaction: bool = False,
        vectors: bool = True,
        pipeline: bool = False,
        keep_cursor: bool = False,
    ) -> T:
        """Async twin of :meth:`run`."""
        pool = self.async_pool()
        for attempt in (1, 2):
            try:
                async with pool.connection() as conn:
                    try:
                        if vectors:
                            await self._aprepare(conn, self._apool is None)
                        if transaction and pipeline and psycopg.AsyncPipeline.is_supported():
                            try:
                                async with conn.pipeline() as pipe, conn.transaction():
                                    return await _drive_async(conn, make(), pipe)
                            finally:
                                if left_in_pipeline(conn):  # cancelled while closing it
                                    await conn.close()
                        if transaction:
                            async with conn.transaction():
                                return await _drive_async(conn, make(), keep_cursor=keep_cursor)
                        return await _drive_async(conn, make(), keep_cursor=keep_cursor)
                    except psycopg.Error as exc:
                        if conn.broken or conn.closed:
                            raise _Lost from exc
                        raise
            except _Lost as lost:
                cause = lost.__cause__ or lost
                if attempt == 2:
                    raise translate(cause, what) from cause
                await pool.check()
            except PoolTimeout as exc:
                raise translate(exc, what, await asyncio.to_thread(self.diagnose)) from exc
            except psycopg.Error as exc:
                if attempt == 1 and rolled_back(exc):  # all of it was rolled back: again
                    await asyncio.sleep(random.uniform(0.001, 0.02))
                    continue
                raise translate(exc, what) from exc
        raise AssertionError("unreachable")  # pragma: no cover


_ASYNCPG_SSL = {"true": "require", "false": "disable"}
"""asyncpg's boolean ``ssl`` values as libpq ``sslmode``s (its other values are libpq's)."""


def conninfo_from_engine(engine: Any) -> str:
    """The libpq conninfo of a langchain-postgres ``PGEngine`` (its SQLAlchemy engine's URL).

    Built from the URL's parts (a database or user name with spaces or ``@`` stays whole),
    with asyncpg's ``ssl=true`` read as ``sslmode=require``.
    """
    url = getattr(getattr(engine, "_pool", None), "url", None)
    if url is None:
        raise TypeError(
            "Could not read the database URL of this PGEngine; pass the URL or a "
            "psycopg_pool.ConnectionPool to postgres_backend() instead."
        )
    params: dict[str, Any] = {
        k: v if isinstance(v, str) else ",".join(v) for k, v in url.query.items()
    }
    if "ssl" in params and "sslmode" not in params:  # asyncpg spelling
        ssl = str(params.pop("ssl"))
        params["sslmode"] = _ASYNCPG_SSL.get(ssl.lower(), ssl)
    parts = {
        "host": url.host,
        "port": url.port,
        "user": url.username,
        "password": url.password,
        "dbname": url.database,
    }
    params.update({k: v for k, v in parts.items() if v is not None})
    return psycopg.conninfo.make_conninfo(**params)


def sqlalchemy_url(conninfo: str, kwargs: dict[str, Any]) -> str:
    """A ``postgresql+psycopg://`` URL for SQLAlchemy (langchain-postgres' ``PGEngine``).

    From a URL or ``key=value`` conninfo, with the libpq parameters among a pool's connection
    ``kwargs`` (a password, ``options``) kept, as the pool itself connects.

    Example:
        >>> sqlalchemy_url("dbname=app host=/tmp user=me", {"autocommit": True})
        'postgresql+psycopg://?dbname=app&host=%2Ftmp&user=me'
    """
    from sqlalchemy.engine import URL

    libpq = {option.keyword.decode() for option in psycopg.pq.Conninfo.get_defaults()}
    params = psycopg.conninfo.conninfo_to_dict(conninfo)
    params.update({k: v for k, v in kwargs.items() if k in libpq and v is not None})
    query = {k: str(v) for k, v in sorted(params.items())}
    return URL.create("postgresql+psycopg", query=query).render_as_string(hide_password=False)
