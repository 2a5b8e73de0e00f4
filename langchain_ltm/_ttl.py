"""TTL plumbing of the store: the checked ``TTLConfig`` and the background sweepers.

LangGraph's names and semantics: ``TTLConfig`` (``default_ttl``, ``refresh_on_read``,
``sweep_interval_minutes``, ``omit_expired``), a sweeper thread started with
``start_ttl_sweeper()`` returning a ``concurrent.futures.Future`` and stopped with
``stop_ttl_sweeper(timeout)``, and an asyncio task variant. A sweeper holds only a weak
reference to its store (the store ``with_options`` views were made from, which they keep
alive), so a store that is dropped without ``close()`` is not kept alive by its sweeper
(the sweeper ends at its next tick), while one whose view started it is swept on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from langgraph.store.base import TTLConfig

from langchain_ltm._clock import check_ttl

__all__ = [
    "DEFAULT_SWEEP_MINUTES",
    "MAX_SWEEP_MINUTES",
    "SweeperTask",
    "SweeperThread",
    "check_ttl_config",
    "no_ttl",
]

logger = logging.getLogger("langchain_ltm")

DEFAULT_SWEEP_MINUTES = 5.0
"""LangGraph's interval when neither the call nor the config gives one."""

MAX_SWEEP_MINUTES = threading.TIMEOUT_MAX / 60
"""The longest interval a thread can wait (about 292 years on Linux, 49 days on Windows)."""

_KEYS = frozenset({"default_ttl", "refresh_on_read", "sweep_interval_minutes", "omit_expired"})


def no_ttl(engine: str) -> str:
    """What to do when ``engine`` (a custom ``VectorBackend``) stores no expiry."""
    return (
        f"The {engine} engine does not support TTL: leave out ttl=, or use an engine that "
        "does (memory, SQLite, Postgres, Qdrant, or any LangChain vectorstore through the "
        "vectorstore engine: all the engines langchain-ltm ships)."
    )


def check_ttl_config(ttl: Mapping[str, Any] | None) -> TTLConfig | None:
    """A copy of ``ttl`` with every field checked (ValueError naming the field)."""
    if ttl is None:
        return None
    if not isinstance(ttl, Mapping):
        raise TypeError(f"ttl must be a TTLConfig dict, got {type(ttl).__name__}.")
    unknown = sorted(set(ttl) - _KEYS)
    if unknown:
        raise ValueError(f"Unknown TTLConfig keys {unknown}; the keys are {sorted(_KEYS)}.")
    for flag in ("refresh_on_read", "omit_expired"):
        if flag in ttl and not isinstance(ttl[flag], bool):
            raise ValueError(f"TTLConfig {flag} must be True or False, got {ttl[flag]!r}.")
    check_ttl(ttl.get("default_ttl"), "TTLConfig default_ttl")
    check_ttl(
        ttl.get("sweep_interval_minutes"),
        "TTLConfig sweep_interval_minutes",
        MAX_SWEEP_MINUTES,
        "no sweeper thread (start_ttl_sweeper() starts one later)",
    )
    config: TTLConfig = {}
    config.update(ttl)  # type: ignore[typeddict-item]
    return config


def interval_minutes(given: float | None, config: TTLConfig | None) -> float:
    """The sweep interval: the call's, else the config's, else 5 minutes."""
    check_ttl(
        given,
        "sweep_interval_minutes",
        MAX_SWEEP_MINUTES,
        "the TTLConfig's interval (else every 5 minutes)",
    )
    return float(given or (config or {}).get("sweep_interval_minutes") or DEFAULT_SWEEP_MINUTES)


class SweeperThread:
    """A daemon thread calling ``sweep()`` every interval until stopped."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, sweep: Callable[[], int], minutes: float) -> concurrent.futures.Future[None]:
        """Start sweeping (a second start while running returns a future for the same one).

        Cancelling the returned future stops the thread.
        """
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        future.add_done_callback(lambda f: self._stop.set() if f.cancelled() else None)
        if self.running:
            return future
        self._stop.clear()
        ref = weakref.WeakMethod(sweep)
        stop = self._stop

        def loop() -> None:
            try:
                while not stop.wait(minutes * 60):
                    bound = ref()
                    if bound is None:  # the store is gone
                        break
                    _sweep_once(bound)
                    del bound
            except BaseException as error:  # the loop itself failed: the future says so
                logger.exception("TTL sweeper thread failed")
                _settle(future, error)
            else:
                _settle(future, None)

        self._thread = threading.Thread(target=loop, name="ltm-ttl-sweeper", daemon=True)
        self._thread.start()
        logger.info("TTL sweeper thread started: every %s minutes", minutes)
        return future

    def stop(self, timeout: float | None = None) -> bool:
        """Stop the thread; False if it was still running after ``timeout`` seconds."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            self._thread = None
            return True
        self._stop.set()
        if thread is not threading.current_thread():
            thread.join(timeout)
        if thread.is_alive():
            logger.warning("Timed out waiting for the TTL sweeper thread to stop")
            return False
        self._thread = None
        return True


class SweeperTask:
    """The asyncio variant: a task on the running loop awaiting ``asweep()`` every interval."""

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self, asweep: Callable[[], Awaitable[int]], minutes: float) -> asyncio.Task[None]:
        """Start sweeping on the running loop; a second start returns the running task."""
        if self._task is not None and not self._task.done():
            return self._task
        stop = self._stop = asyncio.Event()
        ref = weakref.WeakMethod(asweep)

        async def loop() -> None:
            while True:
                try:
                    await asyncio.wait_for(stop.wait(), timeout=minutes * 60)
                    return
                except asyncio.TimeoutError:
                    pass
                bound = ref()
                if bound is None:
                    return
                try:
                    swept = await bound()
                    if swept:
                        logger.info("TTL sweeper deleted %d expired items", swept)
                except Exception:  # a failed sweep is retried at the next tick
                    logger.exception("TTL sweep failed")
                del bound

        self._task = asyncio.get_running_loop().create_task(loop(), name="ltm-ttl-sweeper")
        logger.info("TTL sweeper task started: every %s minutes", minutes)
        return self._task

    async def stop(self, timeout: float | None = None) -> bool:
        """Stop the task; False if it was still running after ``timeout`` seconds.

        A task of another loop (another thread's) is told to stop there and waited for
        from here. Its loop closed: the task is gone. Its loop stopped: the task ends when
        the loop runs again (it does not wait its interval first).
        """
        task = self._task
        if task is None or task.done() or not self.signal_stop():
            self._task = None
            return True
        ended = (
            asyncio.shield(task)
            if task.get_loop() is asyncio.get_running_loop()
            else _ended_elsewhere(task)
        )
        try:
            await asyncio.wait_for(ended, timeout=timeout)
        except asyncio.TimeoutError:
            logger.warning("Timed out waiting for the TTL sweeper task to stop")
            return False
        self._task = None
        return True

    def signal_stop(self) -> bool:
        """Tell the task to stop, from any thread, without waiting for it (a sync ``close``).

        It stops at its next wake-up; a sweep running meanwhile finishes. False when there
        is nothing to stop: no task, or one whose loop is closed (it is gone already).
        """
        task, stop = self._task, self._stop
        if task is None or task.done() or stop is None:
            return False
        try:
            task.get_loop().call_soon_threadsafe(stop.set)  # an Event belongs to its loop
        except RuntimeError:  # the loop is closed
            return False
        return True


async def _ended_elsewhere(task: asyncio.Task[None]) -> None:
    """Wait, on the running loop, until ``task`` of another loop ends or that loop stops.

    A loop that stops or closes never runs the wait scheduled on it, so that is checked
    every tenth of a second.
    """
    loop = task.get_loop()

    async def ended() -> None:  # runs on the task's loop
        await asyncio.wait([task])  # neither raises the task's error nor cancels it

    try:
        there = asyncio.wrap_future(asyncio.run_coroutine_threadsafe(ended(), loop))
    except RuntimeError:  # the loop closed meanwhile
        return
    try:
        while loop.is_running() and not there.done():
            await asyncio.wait([there], timeout=0.1)
    finally:
        if not there.done() and not loop.is_closed():  # a timeout: stop waiting over there
            there.cancel()


def _settle(future: concurrent.futures.Future[None], error: BaseException | None) -> None:
    """End ``future`` with ``error`` (or success), unless it was cancelled or ended already."""
    with contextlib.suppress(concurrent.futures.InvalidStateError):
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)


def _sweep_once(sweep: Callable[[], int]) -> None:
    try:
        swept = sweep()
        if swept:
            logger.info("TTL sweeper deleted %d expired items", swept)
    except Exception:  # a failed sweep (engine down) is retried at the next tick
        logger.exception("TTL sweep failed")
