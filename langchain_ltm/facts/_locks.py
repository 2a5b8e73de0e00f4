"""Per-user write locks: a striped in-process lock plus the engine's cross-process lock."""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from langchain_ltm._steps import Logic, Step, call
from langchain_ltm.backends.base import VectorBackend

if TYPE_CHECKING:  # asyncio is imported when an async call needs it (not by `ltm` commands)
    import asyncio

_STRIPES = 64


class UserLocks:
    """Serializes the decide-and-write of one user across threads, tasks and processes.

    Other processes are excluded where the engine can (``Capabilities.cross_process_lock``).

    The in-process stripe is taken first, so one process sends at most one engine lock
    request per user at a time and never queues pooled connections behind itself.
    """

    def __init__(self) -> None:
        self._stripes = [threading.Lock() for _ in range(_STRIPES)]

    def stripe(self, label: str) -> threading.Lock:
        """The in-process lock that serializes ``label`` (shared with other labels)."""
        return self._stripes[zlib.crc32(label.encode("utf-8")) % _STRIPES]

    def acquire(self, backend: VectorBackend, label: str) -> Logic[tuple[threading.Lock, Any]]:
        lock = self.stripe(label)
        yield Step(lock.acquire, _acquire_off_loop(lock))
        try:
            token = yield call(backend, "lock", label)
        except BaseException:
            lock.release()
            raise
        return lock, token

    @staticmethod
    def release(backend: VectorBackend, held: tuple[threading.Lock, Any]) -> Logic[None]:
        lock, token = held
        try:
            yield call(backend, "unlock", token)
        finally:
            lock.release()


def _acquire_off_loop(lock: threading.Lock) -> Callable[[], Any]:
    async def acquire() -> bool:
        import asyncio

        # A worker thread waits for the lock, so the event loop keeps serving the holder.
        # If this task is cancelled while waiting, the worker still gets the lock later:
        # release it then, or the user's stripe would stay locked forever.
        waiting = asyncio.get_running_loop().run_in_executor(None, lock.acquire)
        try:
            return await asyncio.shield(waiting)
        except asyncio.CancelledError:
            waiting.add_done_callback(_release_when_acquired(lock))
            raise

    return acquire


def _release_when_acquired(lock: threading.Lock) -> Callable[[asyncio.Future[bool]], None]:
    def release(done: asyncio.Future[bool]) -> None:
        if not done.cancelled() and done.exception() is None and done.result():
            lock.release()

    return release
