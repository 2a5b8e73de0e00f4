"""Per-user write locks: a striped in-process lock plus the engine's cross-process lock."""

from __future__ import annotations

import sys
import threading
import weakref
from typing import Any

from langchain_ltm._loop_locks import StripedLocks
from langchain_ltm._steps import Logic, Step, call
from langchain_ltm.backends.base import VectorBackend


class UserLocks:
    """Serializes the decide-and-write of one user across threads, tasks and processes.

    Other processes are excluded where the engine can (``Capabilities.cross_process_lock``).

    The in-process stripe is taken first, so one process sends at most one engine lock
    request per user at a time and never queues pooled connections behind itself.
    """

    def __init__(self) -> None:
        self._stripes = StripedLocks()
        self._holders = self._stripes.holders

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
        return self._stripes.of(label)

    def acquire(
        self, backend: VectorBackend, label: str
    ) -> Logic[tuple[threading.Lock, Any, BaseException | None]]:
        # an exception the caller's own code is handling around this call: not the body's
        outside = sys.exc_info()[1]
        lock = self.stripe(label)
        yield Step(
            lambda: self._holders.take(lock, _ON_ITS_LOOP), lambda: self._holders.atake(lock)
        )
        try:
            token = yield call(backend, "lock", label)
        except BaseException:
            self._holders.release(lock)
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
            self._holders.release(lock)


_ON_ITS_LOOP = (
    "A sync call of the store was made on an event loop while an async call of the same "
    "user (or one sharing its lock) is writing on that loop: it would wait forever. Call "
    "the a... method (aremember, aupdate_fact, aforget, ...) with await inside async code."
)


_SHARED: weakref.WeakKeyDictionary[Any, UserLocks] = weakref.WeakKeyDictionary()
_SHARED_GUARD = threading.Lock()
