"""Coalesce concurrent ``abatch`` calls on one event loop into shared batch runs.

LangGraph's ``AsyncBatchedBaseStore`` (under ``AsyncPostgresStore``) queues every async
call and lets a background task run whatever is queued as one ``abatch``. The
:class:`Coalescer` keeps its contract and runs no long-lived task:

- A call that finds its event loop idle runs at once, in its own task: a lone caller pays
  nothing for coalescing.
- Calls made while a run is under way wait in the loop's queue. When the run ends, a
  short-lived flush task takes the waiting calls (whole calls, oldest first, up to
  ``max_ops`` ops), concatenates their ops into one batch run (one embedding call per
  kind, one ``get`` round trip, one ``write`` statement), splits the results back, and
  repeats until the queue is empty.
- Identical reads in a run (same ``GetOp``, same ``SearchOp``...) are asked once; every
  caller gets its own copy of the answer.
- Runs on one loop never overlap, so the writes to a key land in submission order (the
  last put to a key wins), every call sees the writes of the calls that completed before
  it was made, and no call sees the writes of a call made after it. Calls merged into one run are
  concurrent: their reads see the state before the run's writes, as the reads of one
  ``abatch`` do (and as in ``AsyncBatchedBaseStore``).
- A run never holds two calls that write (put or delete) the same key: one batch keeps
  only the last put of a key (LangGraph's semantics within one call), so merging them
  would drop the earlier call's write, and with it the version a put over a fact keeps of
  the text it replaces. The later call (and any call after it writing one of its keys)
  waits for the next run while the other waiting calls go on in this one, so calls
  writing one key apply one after another, in call order, as they do from threads
  (``AsyncBatchedBaseStore`` merges them). Writes to different keys may then land out of
  call order: their calls were concurrent, and the end state is the same.
- A run that fails is split in two and each half run again, in order, down to single
  calls, so only the calls whose ops fail get an error (``AsyncBatchedBaseStore`` fails
  every call of the batch). A bad op fails before any I/O (``plan_batch`` validates
  first); an engine error fails the write as a whole on engines that write a batch
  atomically (memory, Postgres, SQLite), so re-running a half writes nothing twice
  (elsewhere a re-run re-applies idempotent upserts).
- A waiting call's ops, put values included, are read when its run starts (as in
  ``AsyncBatchedBaseStore``): a caller must not change them before its call returns.
- A waiting call that is cancelled is dropped before its run; one cancelled while its run
  is under way leaves the run alone (its writes may land, as for any cancelled write).
- Each event loop has its own queue (futures belong to one loop): a store shared by loops
  in several threads coalesces per loop. :meth:`Coalescer.drain` waits until a loop's calls
  are done; the store's ``aclose``/``close`` drain before closing the engine.

A run must not call ``abatch`` on the same store and loop (it would wait for itself).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterable

from langgraph.store.base import Item, Op, PutOp, Result, SearchItem

from langchain_ltm._codec import copy_value

RunBatch = Callable[[list[Op]], Awaitable[list[Result]]]
LoneRun = Callable[[], Awaitable[list[Result]]]
Future = asyncio.Future[list[Result]]

DEFAULT_MAX_OPS = 10_000
"""Most ops of waiting calls merged into one run (a call larger than that runs alone).

A bound on a run's memory and statement size, and large enough that the identical reads
of a burst are asked once (smaller runs measured slower in ``bench/async_burst.py``).
"""

DRAIN_TIMEOUT = 30.0
"""Seconds ``close()`` waits for the calls of an event loop running in another thread."""


class _LoopQueue:
    """The calls of one event loop: whether a run is under way, and who waits."""

    __slots__ = ("busy", "futures", "idle", "ops", "task")

    def __init__(self) -> None:  # no reference to the loop: the loop is a weak key
        # the waiting calls, oldest first: their ops and their futures
        self.ops: list[list[Op]] = []
        self.futures: list[asyncio.Future[list[Result]]] = []
        self.busy = False  # a run (a lone call's, or the flush task's) is under way
        self.task: asyncio.Task[None] | None = None  # strong ref: a pending task is not GC'd
        self.idle: list[asyncio.Future[None]] = []  # drain() waiters

    def release(self) -> None:
        self.busy = False
        self.task = None
        if self.idle:
            waiters, self.idle = self.idle, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)


class Coalescer:
    """Runs the ``abatch`` calls of each event loop one batch at a time, merging waiting calls.

    Args:
        run: Executes one list of ops (the store's sans-I/O ``_batch`` under ``run_async``).
        max_ops: Most ops of waiting calls merged into one run (``None``: no limit).

    Example:
        >>> import asyncio
        >>> from langgraph.store.base import GetOp
        >>> async def run(ops):
        ...     print("run of", len(ops))
        ...     await asyncio.sleep(0)  # I/O: the other calls queue up meanwhile
        ...     return [op.key for op in ops]
        >>> coalescer = Coalescer(run)
        >>> async def main():
        ...     calls = [coalescer.submit([GetOp(("ns",), f"k{i}")]) for i in range(4)]
        ...     return await asyncio.gather(*calls)
        >>> asyncio.run(main())
        run of 1
        run of 3
        [['k0'], ['k1'], ['k2'], ['k3']]
    """

    def __init__(self, run: RunBatch, *, max_ops: int | None = DEFAULT_MAX_OPS) -> None:
        if max_ops is not None and (not isinstance(max_ops, int) or max_ops < 1):
            raise ValueError(f"max_ops must be None or an int >= 1, got {max_ops!r}.")
        self._run = run
        self.max_ops = max_ops
        self.runs = 0  # batch runs started (merged or not): what tests and benchmarks count
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopQueue] = (
            weakref.WeakKeyDictionary()
        )
        self._last: tuple[weakref.ref[asyncio.AbstractEventLoop], _LoopQueue] | None = None
        self._lock = threading.Lock()

    # ---- calls --------------------------------------------------------------------------

    def submit(self, ops: Iterable[Op], alone: LoneRun | None = None) -> Awaitable[list[Result]]:
        """Run ``ops`` as one ``abatch`` call: at once if the loop is idle, else merged.

        Returns what to await, at once: the lone run, or the future of a waiting call. A
        waiting call costs a future and two list slots, no coroutine or object of its own:
        in a burst of 10,000 calls, every object the GC has to trace shows in the time.
        ``alone``: what runs instead of the batch when the call runs alone (it must answer
        as the batch of ``ops`` would: ``asearch`` runs its search without the planning).
        """
        ops = ops if type(ops) is list else list(ops)
        loop = asyncio.get_running_loop()
        queue = self._queue(loop)
        if not queue.busy:
            queue.busy = True
            return self._run_alone(ops, queue, loop, alone)
        future: asyncio.Future[list[Result]] = loop.create_future()
        queue.ops.append(ops)
        queue.futures.append(future)
        return future

    async def drain(self) -> None:
        """Wait until the running loop's calls, running and waiting, are done."""
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        while queue is not None and (queue.busy or queue.futures):
            waiter = loop.create_future()
            queue.idle.append(waiter)
            await waiter

    def drain_threads(self, timeout: float | None = DRAIN_TIMEOUT) -> None:
        """Block until the calls of loops running in *other* threads are done.

        The calling thread's own loop, if it runs one, cannot be waited for by a blocking
        call: its waiting calls go on once control returns to it. Waits at most
        ``timeout`` seconds per loop.
        """
        try:
            current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        self._drain_loops(current, timeout)

    async def adrain_all(self, timeout: float | None = DRAIN_TIMEOUT) -> None:
        """:meth:`drain` this loop, then wait (off the loop) for loops in other threads."""
        await self.drain()
        loop = asyncio.get_running_loop()
        if self._busy_loops(loop):
            await asyncio.to_thread(self._drain_loops, loop, timeout)

    def _busy_loops(
        self, skip: asyncio.AbstractEventLoop | None
    ) -> list[asyncio.AbstractEventLoop]:
        with self._lock:
            return [
                loop
                for loop, queue in self._queues.items()
                if loop is not skip and loop.is_running() and (queue.busy or queue.futures)
            ]

    def _drain_loops(self, skip: asyncio.AbstractEventLoop | None, timeout: float | None) -> None:
        for loop in self._busy_loops(skip):
            done = asyncio.run_coroutine_threadsafe(self.drain(), loop)
            try:
                done.result(timeout)
            except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
                done.cancel()

    # ---- the queue ------------------------------------------------------------------------

    def _queue(self, loop: asyncio.AbstractEventLoop) -> _LoopQueue:
        last = self._last
        if last is not None and last[0]() is loop:
            return last[1]
        with self._lock:
            queue = self._queues.get(loop)
            if queue is None:
                queue = self._queues[loop] = _LoopQueue()
            self._last = (weakref.ref(loop), queue)
        return queue

    async def _run_alone(
        self,
        ops: list[Op],
        queue: _LoopQueue,
        loop: asyncio.AbstractEventLoop,
        alone: LoneRun | None,
    ) -> list[Result]:
        try:
            self.runs += 1
            return await (self._run(ops) if alone is None else alone())
        finally:
            self._hand_over(queue, loop)

    def _hand_over(self, queue: _LoopQueue, loop: asyncio.AbstractEventLoop) -> None:
        """A run ended: a flush task takes the waiting calls, or the loop goes idle."""
        if queue.futures:
            queue.task = loop.create_task(self._flush(queue))
        else:
            queue.release()

    async def _flush(self, queue: _LoopQueue) -> None:
        try:
            while queue.futures:
                ops, futures = self._take(queue)
                if futures:
                    await self._settle(ops, futures)
        except BaseException:  # the flush task itself was cancelled (the loop is closing)
            futures, queue.futures, queue.ops = queue.futures, [], []
            for future in futures:
                future.cancel()
            raise
        finally:
            queue.release()

    def _take(self, queue: _LoopQueue) -> tuple[list[list[Op]], list[Future]]:
        """The calls of the next run: whole calls, oldest first, ``max_ops`` ops in all.

        A call that writes a key an earlier call of the run writes waits for the next run
        (one batch keeps only the last put of a key: right within a call, but it would
        drop the earlier call's write, and the version a put over a fact keeps of the text
        it replaces), and so does every later call writing a key of a call that waits:
        the writes to one key land in the order of their calls. Other calls go on in this
        run, so a burst with a few writes to one key still runs in a few runs.
        """
        calls: list[list[Op]] = []
        futures: list[Future] = []
        written: set[tuple[tuple[str, ...], str]] = set()  # by the calls taken
        waiting: set[tuple[tuple[str, ...], str]] = set()  # by the calls left for later
        left_ops: list[list[Op]] = []
        left_futures: list[Future] = []
        size = seen = 0
        for ops, future in zip(queue.ops, queue.futures, strict=True):
            if self.max_ops is not None and futures and size + len(ops) > self.max_ops:
                break
            seen += 1
            if future.done():  # cancelled while waiting: dropped
                continue
            keys = _written_keys(ops)
            if keys and futures and not (written.isdisjoint(keys) and waiting.isdisjoint(keys)):
                waiting.update(keys)
                left_ops.append(ops)
                left_futures.append(future)
                continue
            written.update(keys)
            calls.append(ops)
            futures.append(future)
            size += len(ops)
        queue.ops[:seen] = left_ops
        queue.futures[:seen] = left_futures
        return calls, futures

    # ---- one run ------------------------------------------------------------------------

    async def _settle(self, calls: list[list[Op]], futures: list[Future]) -> None:
        """Run ``calls`` as one batch and resolve their futures; split in two on failure."""
        try:
            results = await self._run_merged(calls)
        except Exception as exc:
            if len(futures) == 1:
                if not futures[0].done():
                    futures[0].set_exception(exc)
                return
            half = len(futures) // 2
            for part in (range(half), range(half, len(futures))):
                alive = [i for i in part if not futures[i].done()]
                if alive:
                    await self._settle([calls[i] for i in alive], [futures[i] for i in alive])
            return
        except BaseException:
            for future in futures:
                future.cancel()
            raise
        start = 0
        for ops, future in zip(calls, futures, strict=True):
            end = start + len(ops)
            if not future.done():
                future.set_result(results[start:end])
            start = end

    async def _run_merged(self, calls: list[list[Op]]) -> list[Result]:
        ops = [op for call in calls for op in call]
        unique, source = _dedupe_reads(ops)
        self.runs += 1
        found = await self._run(unique)
        if source is None:
            return found
        results: list[Result] = []
        seen: set[int] = set()
        for j in source:
            if j in seen:
                results.append(_copy_result(found[j]))
            else:
                seen.add(j)
                results.append(found[j])
        return results


def _written_keys(ops: list[Op]) -> list[tuple[tuple[str, ...], str]]:
    """The ``(namespace, key)`` of every put and delete of a call (none for a read-only call).

    An op too malformed to hash is left out: ``plan_batch`` refuses it before any I/O.
    """
    keys: list[tuple[tuple[str, ...], str]] = []
    for op in ops:
        if isinstance(op, PutOp):
            namespace = op.namespace
            try:
                key = (namespace if type(namespace) is tuple else tuple(namespace), op.key)
                hash(key)
            except TypeError:
                continue
            keys.append(key)
    return keys


def _dedupe_reads(ops: list[Op]) -> tuple[list[Op], list[int] | None]:
    """Identical read ops asked once: the ops to run, and where each op's answer is.

    Puts are left alone (the batch keeps the last put of a key). Ops holding a dict (a
    search filter) are not hashable and stay as they are.
    """
    first: dict[Op, int] = {}
    unique: list[Op] = []
    source: list[int] = []
    for op in ops:
        if not isinstance(op, PutOp):
            try:
                j = first.setdefault(op, len(unique))
            except TypeError:
                j = len(unique)
            # ops are NamedTuples: a GetOp and a ListNamespacesOp could compare equal
            if j < len(unique) and type(unique[j]) is type(op):
                source.append(j)
                continue
        source.append(len(unique))
        unique.append(op)
    return unique, (source if len(unique) < len(ops) else None)


def _copy_result(result: Result) -> Result:
    """A caller's own copy of a read's answer (the values of Items are copied)."""
    if isinstance(result, Item):
        return _copy_item(result)
    if isinstance(result, list):
        return [_copy_item(x) if isinstance(x, Item) else x for x in result]  # type: ignore[return-value]
    return result


def _copy_item(item: Item) -> Item:
    # not through Item.__init__, which converts fields these items already have right
    copy = object.__new__(type(item))
    copy.namespace, copy.key, copy.value = item.namespace, item.key, copy_value(item.value)
    copy.created_at, copy.updated_at = item.created_at, item.updated_at
    if isinstance(item, SearchItem):
        copy.score = item.score  # type: ignore[attr-defined]
    return copy
