"""Per-user write locks: a striped in-process lock plus the engine's cross-process lock."""

from __future__ import annotations

import sys
import threading
import weakref
import zlib
from collections.abc import Callable
from typing import Any

from langchain_ltm._steps import Logic, Step, call, running_loop
from langchain_ltm.backends.base import VectorBackend

_STRIPES = 64
_FIRST_PAUSE, _LAST_PAUSE = 0.0005, 0.005  # seconds between tries of an async waiter


class UserLocks:
    """Serializes the decide-and-write of one user across threads, tasks and processes.

    Other processes are excluded where the engine can (``Capabilities.cross_process_lock``).

    The in-process stripe is taken first, so one process sends at most one engine lock
    request per user at a time and never queues pooled connections behind itself.
    """

    def __init__(self) -> None:
        self._stripes = [threading.Lock() for _ in range(_STRIPES)]
        # stripe -> the event loop whose task holds it (async calls only): a sync call on
        # that loop's thread could never get it, as the holder runs on the loop it blocks
        self._loops: dict[int, Any] = {}

    @classmethod
    def shared_by(cls, backend: VectorBackend) -> UserLocks:
        """The locks of every store over the same data as ``backend``, in this process.

        Keyed by ``backend.lock_domain`` (the backend itself unless it says otherwise: two
        Qdrant backends over one collection share a domain). Two stores over one backend, or
        over one embedded Qdrant client, each taking only their own lock, let one
        ``update_fact`` overwrite the other's text.
        """
        domain = getattr(backend, "lock_domain", backend)
        with _SHARED_GUARD:
            locks = _SHARED.get(domain)
            if locks is None:
                locks = _SHARED[domain] = cls()
            return locks

    def stripe(self, label: str) -> threading.Lock:
        """The in-process lock that serializes ``label`` (shared with other labels)."""
        return self._stripes[zlib.crc32(label.encode("utf-8")) % _STRIPES]

    def acquire(
        self, backend: VectorBackend, label: str
    ) -> Logic[tuple[threading.Lock, Any, BaseException | None]]:
        # an exception the caller's own code is handling around this call: not the body's
        outside = sys.exc_info()[1]
        lock = self.stripe(label)
        yield Step(lambda: self._wait(lock), _acquire_off_loop(lock, self._loops))
        try:
            token = yield call(backend, "lock", label)
        except BaseException:
            self._loops.pop(id(lock), None)
            lock.release()
            raise
        return lock, token, outside

    def release(
        self, backend: VectorBackend, held: tuple[threading.Lock, Any, BaseException | None]
    ) -> Logic[None]:
        """Release ``held``; called in the ``finally`` of the body that held it.

        When the body raised, its error is what the caller gets: an unlock failing then
        (the connection holding the lock ended, which the body's error often reports
        already, with what to do) is logged and noted on it, never raised in its place.
        """
        lock, token, outside = held
        failed = sys.exc_info()[1]  # the body's error, as this runs in its ``finally``
        try:
            yield call(backend, "unlock", token)
        except Exception as exc:
            if failed is None or failed is outside:
                raise
            import logging  # here: `ltm list` and the like import no logging at all

            logging.getLogger(__name__).warning(
                "The call failed, and unlocking its user afterwards failed too: %s", exc
            )
            if hasattr(failed, "add_note"):  # Python 3.11+
                failed.add_note(f"Unlocking afterwards failed too: {exc}")
        finally:
            self._loops.pop(id(lock), None)
            lock.release()

    def _wait(self, lock: threading.Lock) -> None:
        """Take ``lock`` for a sync call; refuse to wait forever on the loop's own task.

        Raises:
            RuntimeError: This thread runs an event loop whose task holds the lock (an
                ``a...`` call of the same user, or of a user sharing the lock, is halfway):
                waiting would block the loop that task needs to finish.
        """
        loop = running_loop()
        if loop is None:
            lock.acquire()
            return
        while not lock.acquire(timeout=0.05):  # a holder on another thread releases it
            if self._loops.get(id(lock)) is loop:
                raise RuntimeError(
                    "A sync call of the store was made on an event loop while an async call "
                    "of the same user (or one sharing its lock) is writing on that loop: it "
                    "would wait forever. Call the a... method (aremember, aupdate_fact, "
                    "aforget, ...) with await inside async code."
                )


def _acquire_off_loop(lock: threading.Lock, loops: dict[int, Any]) -> Callable[[], Any]:
    async def acquire() -> bool:
        import asyncio

        # Polled on the loop, never waited for on a thread: a waiting thread of the
        # default executor could be the one the holder needs (its embeddings, a sync
        # resolver), and one cancelled while waiting would take the lock later for a task
        # that is gone (with its loop closed, nobody would ever release it).
        loop = asyncio.get_running_loop()
        pause = _FIRST_PAUSE
        while not lock.acquire(blocking=False):
            await asyncio.sleep(pause)
            pause = min(pause * 2, _LAST_PAUSE)
        loops[id(lock)] = loop  # the holder is this loop's task from the moment it has it
        return True

    return acquire


_SHARED: weakref.WeakKeyDictionary[Any, UserLocks] = weakref.WeakKeyDictionary()
_SHARED_GUARD = threading.Lock()
