"""LoopPool: the Postgres engine's async pool of one event loop, without background tasks.

``_connector.Connector`` opens one per event loop it is called from (unless an
``AsyncConnectionPool`` was handed in: both fit :class:`AsyncPoolLike`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, Protocol

import psycopg
from psycopg.pq import TransactionStatus
from psycopg_pool import PoolTimeout

from langchain_ltm.backends.postgres._drive import left_in_pipeline, rollback_or_close
from langchain_ltm.backends.postgres._errors import ConnectError

_IDLE = TransactionStatus.IDLE


class AsyncPoolLike(Protocol):
    """What ``Connector`` uses of an async pool: a ``LoopPool``, or an ``AsyncConnectionPool``."""

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
        if self._slots.locked():
            await self._wait_for_slot(timeout or self.timeout)
        else:
            # a free slot is taken at once: acquire() returns without suspending, so no
            # cancellation can land in it and there is nothing to time out. The task and
            # timer of the wait below made a checkout and return cost 20.6 us of client CPU
            # instead of 5.1 (5,000 in a row), on every async call
            await self._slots.acquire()
        try:
            return await self._take()
        except BaseException:
            self._slots.release()
            raise

    async def _wait_for_slot(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for a slot; ``PoolTimeout`` if none comes."""
        # not asyncio.wait_for: on Python 3.10 and 3.11 it can return the slot to a task
        # that was cancelled meanwhile, and the cancellation is lost
        waiting = asyncio.ensure_future(self._slots.acquire())
        try:
            done, _ = await asyncio.wait({waiting}, timeout=timeout)
        except BaseException:
            self._give_back_if_taken(waiting)
            raise
        if not done:
            self._give_back_if_taken(waiting)
            raise PoolTimeout(f"no free connection after {timeout} s")

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
        try:
            return await psycopg.AsyncConnection.connect(self.conninfo, **kwargs)
        except psycopg.OperationalError as exc:  # not a call's broken connection: say so
            raise ConnectError(" ".join(str(exc).split())) from exc

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
