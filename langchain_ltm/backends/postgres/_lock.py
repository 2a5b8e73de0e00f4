"""Cross-process locks for the Postgres engine: transaction-level advisory locks.

``lock(scope)`` checks a connection out of the pool, opens a transaction and waits in
``pg_advisory_xact_lock``; the token keeps that connection until ``unlock`` commits and
hands it back. Whatever goes wrong (an error, a cancelled task, Ctrl-C while waiting), the
transaction is rolled back or the connection closed before it returns to the pool, so a
lock is never left held by a pooled connection; a holder that dies ends its session, and
Postgres releases the lock itself.

A lock connection never runs the engine's own statements while it holds a lock: the vector
adapters and the generic-plan setting of ``Connector`` are applied outside any transaction
by the next call that takes the connection (as for a fresh one), never inside a lock's
transaction, whose rollback would undo the ``SET``. ``BEGIN`` and the lock statement are
not prepared, so they take no room in psycopg's prepared-statement cache. Advisory locks
at transaction level also work through a transaction-pooling PgBouncer.

Pool room: a held lock keeps its connection out of the pool, and so does a ``lock()``
still waiting for another process. So that waiters can never take every connection from
the holders' own reads and writes, at most half of a pool's connections (5 of the default
10) wait for or hold locks; further ``lock()`` calls wait in process for one of those.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from psycopg.rows import tuple_row
from psycopg_pool import PoolTimeout

from langchain_ltm.backends.postgres._connector import Connector
from langchain_ltm.backends.postgres._drive import rollback_or_close, rollback_or_close_sync
from langchain_ltm.backends.postgres._errors import ENDED_BY_TIMEOUT, translate
from langchain_ltm.backends.postgres._sql import Statement
from langchain_ltm.errors import BackendError

__all__ = ["AdvisoryLocks", "HeldLock"]

S = TypeVar("S", threading.Semaphore, asyncio.Semaphore)


class HeldLock:
    """The token of a held lock: a pooled connection whose open transaction holds it."""

    __slots__ = (
        "conn",
        "holder",
        "is_async",
        "owner",
        "pid",
        "pool",
        "released",
        "scope",
        "slots",
    )

    def __init__(
        self,
        conn: Any,
        pool: Any,
        slots: Any,
        scope: str,
        *,
        is_async: bool,
        owner: Any,
        pid: int,
    ) -> None:
        self.conn, self.pool, self.slots, self.scope = conn, pool, slots, scope
        self.is_async = is_async
        self.owner = owner  # the AdvisoryLocks that took it
        self.pid = pid  # pg_backend_pid() of the session holding it (a pooler's, not ours)
        self.holder = _holder()  # the task or thread that took it
        self.released = False

    def __repr__(self) -> str:
        return f"<HeldLock {self.scope!r} {'released' if self.released else 'held'}>"


_HELD: contextvars.ContextVar[tuple[HeldLock, ...]] = contextvars.ContextVar(
    "langchain_ltm_postgres_held_locks", default=()
)
"""The locks this thread or task holds: its writes check they still hold them."""


def _holder() -> Any:
    """The asyncio task running now, else this thread: who takes and holds a lock."""
    if asyncio._get_running_loop() is not None:
        task = asyncio.current_task()
        if task is not None:
            return task
    return threading.get_ident()


def _hold(held: HeldLock) -> HeldLock:
    _HELD.set((*_HELD.get(), held))
    return held


def _drop(held: HeldLock) -> None:
    _HELD.set(tuple(h for h in _HELD.get() if h is not held and not h.released))


class AdvisoryLocks:
    """``lock``/``unlock`` and their async twins over a :class:`Connector`'s pools."""

    def __init__(self, connector: Connector) -> None:
        self.connector = connector
        # per pool: how many of its connections may wait for or hold locks
        self._slots: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._guard = threading.Lock()

    def _slots_for(self, pool: Any, kind: Callable[[int], S]) -> S:
        slots = self._slots.get(pool)
        if slots is None:
            max_size = int(pool.max_size)
            if max_size < 2:
                raise ValueError(
                    "lock() keeps a pooled connection for as long as the lock is held, and "
                    "the holder's reads and writes need another one: open the backend with "
                    f"max_size >= 2 (this pool has max_size={max_size})."
                )
            with self._guard:
                slots = self._slots.setdefault(pool, kind(max_size // 2))
        return slots  # type: ignore[no-any-return]

    def held(self) -> list[tuple[int, str]]:
        """``(backend pid, scope)`` of the locks the calling thread or task holds here.

        A write made while holding them checks, in its own transaction, that it still does
        (``_lost_locks`` in :func:`~langchain_ltm.backends.postgres._writes.write`).
        """
        me = _holder()  # a task created while a lock was held inherits the context, not it
        return [
            (h.pid, h.scope)
            for h in _HELD.get()
            if h.owner is self and not h.released and h.holder == me
        ]

    def lock(self, statement: Statement, scope: str) -> HeldLock:
        """Run ``statement`` (an advisory lock) in a transaction; keep its connection."""
        pool = self.connector.sync_pool()
        slots = self._slots_for(pool, threading.Semaphore)
        slots.acquire()
        try:
            for attempt in (1, 2):
                try:
                    conn = pool.getconn()
                except PoolTimeout as exc:
                    raise translate(exc, "lock", self.connector.diagnose()) from exc
                try:
                    if conn.autocommit:
                        conn.execute("BEGIN", prepare=False)
                    (row,) = conn.cursor(row_factory=tuple_row).execute(
                        statement.sql, statement.params, prepare=False
                    )
                    pid = int(row[-1])
                    return _hold(
                        HeldLock(conn, pool, slots, scope, is_async=False, owner=self, pid=pid)
                    )
                except BaseException as exc:
                    lost = conn.broken or conn.closed
                    rollback_or_close_sync(conn)  # a lock granted meanwhile is released too
                    pool.putconn(conn)
                    if not isinstance(exc, psycopg.Error):
                        raise
                    if not lost or attempt == 2:
                        raise translate(exc, "lock") from exc
                pool.check()  # a stale pooled connection: once more on a fresh one
        except BaseException:
            slots.release()
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def alock(self, statement: Statement, scope: str) -> HeldLock:
        """Async twin of :meth:`lock`, on the running event loop's pool."""
        pool = self.connector.async_pool()
        slots = self._slots_for(pool, asyncio.Semaphore)
        await slots.acquire()
        try:
            for attempt in (1, 2):
                try:
                    conn = await pool.getconn()
                except PoolTimeout as exc:
                    why = await asyncio.to_thread(self.connector.diagnose)
                    raise translate(exc, "lock", why) from exc
                except psycopg.Error as exc:  # a new connection failed (ConnectError)
                    raise translate(exc, "lock") from exc
                try:
                    if conn.autocommit:
                        await conn.execute("BEGIN", prepare=False)
                    cur = conn.cursor(row_factory=tuple_row)  # a dict_row pool's connections too
                    await cur.execute(statement.sql, statement.params, prepare=False)
                    pid = int((await cur.fetchone())[-1])  # type: ignore[index]
                    return _hold(
                        HeldLock(conn, pool, slots, scope, is_async=True, owner=self, pid=pid)
                    )
                except BaseException as exc:  # cancelled while waiting: nothing stays held
                    lost = conn.broken or conn.closed
                    await rollback_or_close(conn)
                    await pool.putconn(conn)
                    if not isinstance(exc, psycopg.Error):
                        raise
                    if not lost or attempt == 2:
                        raise translate(exc, "lock") from exc
                await pool.check()
        except BaseException:
            slots.release()
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    def unlock(self, held: HeldLock) -> None:
        """Commit the lock's transaction (releasing it); give the connection back."""
        if held.is_async:
            raise TypeError("This lock was taken with alock(): release it with aunlock().")
        if held.released:
            return
        held.released = True
        _drop(held)
        conn = held.conn
        try:
            conn.commit()
        except BaseException as exc:
            conn.close()  # the lock ends with the session: never left held
            if isinstance(exc, psycopg.Error):
                raise _unlock_error(exc, held.scope) from exc
            raise
        finally:
            try:
                held.pool.putconn(conn)
            finally:
                held.slots.release()

    async def aunlock(self, held: HeldLock) -> None:
        """Async twin of :meth:`unlock`; releases a lock taken with sync ``lock()`` too."""
        if not held.is_async:
            await asyncio.to_thread(self.unlock, held)
            return
        if held.released:
            return
        held.released = True
        _drop(held)
        conn = held.conn
        try:
            await conn.commit()
        except BaseException as exc:
            await conn.close()
            if isinstance(exc, psycopg.Error):
                raise _unlock_error(exc, held.scope) from exc
            raise
        finally:
            try:
                await held.pool.putconn(conn)
            finally:
                held.slots.release()


def _unlock_error(exc: psycopg.Error, scope: str) -> Exception:
    ended_by = ENDED_BY_TIMEOUT.get(str(exc.sqlstate or ""))
    if isinstance(exc, psycopg.OperationalError) or ended_by is not None:
        why = (
            f" The server's {ended_by} ended it: raise that setting for this role, database "
            "or connection (options='-c ...'), or set it to 0."
            if ended_by is not None
            else ""
        )
        return BackendError(
            f"The Postgres connection holding lock {scope!r} broke before unlock "
            f"({str(exc).strip()}). Postgres released the lock when that connection ended, "
            "so another writer may have taken it since; each write made while holding it "
            "committed (or not) on its own. Re-read and retry the call: a retried batch is "
            f"idempotent.{why}"
        )
    return translate(exc, "unlock")
