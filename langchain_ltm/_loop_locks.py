"""Thread locks that sync calls and async tasks of one process share without hanging a loop.

A sync call waits on a lock; an async task polls it on its loop (a thread of the default
executor waiting for it could be the very thread the holder needs, and one cancelled while
waiting would take the lock later for a task that is gone). A sync call made on the thread
of a loop whose task holds the lock could never get it (the holder runs on the loop the
wait blocks), so it is refused with ``RuntimeError`` instead of hanging.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Iterable
from typing import Any

from langchain_ltm._steps import running_loop

FIRST_PAUSE, LAST_PAUSE = 0.0005, 0.005  # seconds between tries of an async waiter


class LoopHolders:
    """Which event loop's task holds each of a set of locks (async holders only).

    Example:
        >>> import asyncio, threading
        >>> holders, lock = LoopHolders(), threading.Lock()
        >>> async def hold_then_call_sync():
        ...     await holders.atake(lock)
        ...     try:
        ...         holders.take(lock, "would wait forever")
        ...     finally:
        ...         holders.release(lock)
        >>> asyncio.run(hold_then_call_sync())
        Traceback (most recent call last):
        RuntimeError: would wait forever
    """

    def __init__(self) -> None:
        self._loops: dict[int, Any] = {}

    def take(self, lock: threading.Lock, refusal: str) -> None:
        """Take ``lock`` for a sync call.

        Raises:
            RuntimeError: ``refusal``: this thread runs an event loop whose task holds
                ``lock``, so waiting would block the loop that task needs to finish.
        """
        loop = running_loop()
        if loop is None:
            lock.acquire()
            return
        while not lock.acquire(timeout=0.05):  # a holder on another thread releases it
            if self._loops.get(id(lock)) is loop:
                raise RuntimeError(refusal)

    async def atake(self, lock: threading.Lock) -> bool:
        """Take ``lock`` for a task of the running loop, polling it (never blocking the loop)."""
        import asyncio

        loop = asyncio.get_running_loop()
        pause = FIRST_PAUSE
        while not lock.acquire(blocking=False):
            await asyncio.sleep(pause)
            pause = min(pause * 2, LAST_PAUSE)
        self._loops[id(lock)] = loop  # the holder is this loop's task from the moment it has it
        return True

    def release(self, lock: threading.Lock) -> None:
        """Release ``lock``, taken with :meth:`take` or :meth:`atake`."""
        self._loops.pop(id(lock), None)
        lock.release()


class StripedLocks:
    """A fixed set of thread locks that names share by hash, with their :class:`LoopHolders`.

    One lock per name would grow without end (a lock per user or item ever seen); a fixed
    set serializes every name, and two names sharing a stripe only wait for each other.

    Example:
        >>> locks = StripedLocks(8)
        >>> locks.of("alice") is locks.of("alice")
        True
        >>> len(locks.of_all(["alice", "bob", "alice"])) <= 2
        True
    """

    def __init__(self, count: int = 64) -> None:
        self._locks = [threading.Lock() for _ in range(count)]
        # which loop's task holds a stripe: a sync call on that loop's thread is refused
        self.holders = LoopHolders()

    def of(self, name: str) -> threading.Lock:
        """The lock that serializes ``name`` (shared with the names of its stripe)."""
        return self._locks[zlib.crc32(name.encode("utf-8")) % len(self._locks)]

    def of_all(self, names: Iterable[str]) -> list[threading.Lock]:
        """The locks of ``names``, each once, in one global order (taken in it: no deadlock)."""
        rows = {zlib.crc32(name.encode("utf-8")) % len(self._locks) for name in names}
        return [self._locks[row] for row in sorted(rows)]
