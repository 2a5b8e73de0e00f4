"""The Postgres engine's connections: its pools, and the calls run on them (one retry).

``Connector.run`` (sync, over ``psycopg_pool.ConnectionPool``) and ``Connector.arun``
(async, over ``AsyncConnectionPool``) drive the I/O-free exchanges of ``_reads``,
``_writes`` and ``_schema`` the same way (through ``_drive``); neither calls the other,
and there is no background event loop.

A call whose connection breaks (server restart, ``pg_terminate_backend``, network) is
retried once on a fresh connection after the pool has discarded its dead connections:
reads are safe to repeat, and a write is one transaction, so it either committed or did
not, and writing the same batch again leaves the same rows. A second failure raises
``BackendError``. A retried write refused because its caller's lock was released meanwhile
(``LockLostError``: the outage ended the lock's session too) says that its first attempt
may have committed. So is a call that Postgres rolled back as a deadlock victim or for a
serialization failure (SQLSTATE class 40): our writes cannot deadlock with each other
(``_writes.write_locks``), but a writer outside that discipline can, and so do two
transactions swapping two facts' contents (each waits for the other in the fact-hash
index, across keys); the retry then reports the duplicate. A statement cancelled with
``pg_cancel_backend`` is not retried (someone asked it to stop; its transaction was rolled
back, the connection is fine): its error says so.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from psycopg.types import TypeInfo
from psycopg.types.json import set_json_loads
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from langchain_ltm.backends.postgres import _wire
from langchain_ltm.backends.postgres._drive import drive_async, drive_sync, left_in_pipeline
from langchain_ltm.backends.postgres._errors import (
    VECTOR_SCHEMA_SQL,
    maybe_committed,
    rolled_back,
    translate,
    vector_not_found,
)
from langchain_ltm.backends.postgres._loop_pool import AsyncPoolLike, LoopPool
from langchain_ltm.backends.postgres._sql import Exchange
from langchain_ltm.errors import BackendError, LockLostError

T = TypeVar("T")


class _Lost(Exception):
    """The connection broke during the call (internal: triggers one retry)."""


def _register_vector(conn: Any, info: TypeInfo) -> None:
    from pgvector.psycopg.vector import register_vector_info  # type: ignore[import-untyped]

    register_vector_info(conn, info)
    _wire.register(conn, info.oid, info.array_oid)


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

    def async_pool(self) -> AsyncPoolLike:
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
            if info is None:  # not installed, or not on the search_path
                (row,) = conn.execute(VECTOR_SCHEMA_SQL).fetchall()
                raise vector_not_found(*row)
            self._vector_info = info
            _register_vector(conn, info)
            if owned:
                set_json_loads(_wire.json_loads, conn)
                conn.execute(self._SESSION_SETTINGS)

    async def _aprepare(self, conn: psycopg.AsyncConnection[Any], owned: bool) -> None:
        if conn.adapters.types.get("vector") is None:
            info = self._vector_info or await TypeInfo.fetch(conn, "vector")
            if info is None:  # not installed, or not on the search_path
                (row,) = await (await conn.execute(VECTOR_SCHEMA_SQL)).fetchall()
                raise vector_not_found(*row)
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
        (``_direct``), else on the connection's kept cursor (see ``_drive``).
        """
        pool = self.sync_pool()
        broke = False  # a transaction's connection broke: it may have committed
        for attempt in (1, 2):
            try:
                with pool.connection() as conn:
                    try:
                        if vectors:
                            self._prepare(conn, self._owns_pool)
                        if transaction and pipeline and psycopg.Pipeline.is_supported():
                            try:
                                with conn.pipeline() as pipe, conn.transaction():
                                    return drive_sync(conn, make(), pipe)
                            finally:
                                if left_in_pipeline(conn):  # interrupted while closing it
                                    conn.close()
                        if transaction:
                            with conn.transaction():
                                return drive_sync(conn, make(), keep_cursor=keep_cursor)
                        return drive_sync(conn, make(), keep_cursor=keep_cursor)
                    except psycopg.Error as exc:
                        if conn.broken or conn.closed:
                            raise _Lost from exc
                        raise
            except _Lost as lost:
                cause = lost.__cause__ or lost
                if attempt == 2:
                    raise translate(cause, what) from cause
                broke = transaction
                pool.check()
            except LockLostError as exc:
                if broke:  # the first attempt may have committed (its answer was lost)
                    raise maybe_committed(exc) from exc
                raise
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
        broke = False  # a transaction's connection broke: it may have committed
        for attempt in (1, 2):
            try:
                async with pool.connection() as conn:
                    try:
                        if vectors:
                            await self._aprepare(conn, self._apool is None)
                        if transaction and pipeline and psycopg.AsyncPipeline.is_supported():
                            try:
                                async with conn.pipeline() as pipe, conn.transaction():
                                    return await drive_async(conn, make(), pipe)
                            finally:
                                if left_in_pipeline(conn):  # cancelled while closing it
                                    await conn.close()
                        if transaction:
                            async with conn.transaction():
                                return await drive_async(conn, make(), keep_cursor=keep_cursor)
                        return await drive_async(conn, make(), keep_cursor=keep_cursor)
                    except psycopg.Error as exc:
                        if conn.broken or conn.closed:
                            raise _Lost from exc
                        raise
            except _Lost as lost:
                cause = lost.__cause__ or lost
                if attempt == 2:
                    raise translate(cause, what) from cause
                broke = transaction
                await pool.check()
            except LockLostError as exc:
                if broke:  # the first attempt may have committed (its answer was lost)
                    raise maybe_committed(exc) from exc
                raise
            except PoolTimeout as exc:
                raise translate(exc, what, await asyncio.to_thread(self.diagnose)) from exc
            except psycopg.Error as exc:
                if attempt == 1 and rolled_back(exc):  # all of it was rolled back: again
                    await asyncio.sleep(random.uniform(0.001, 0.02))
                    continue
                raise translate(exc, what) from exc
        raise AssertionError("unreachable")  # pragma: no cover
