"""Async twins for engines whose client is synchronous: the sync methods on a thread pool."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from langchain_ltm.backends.base import (
    Hit,
    ItemKey,
    ListRequest,
    Record,
    SearchRequest,
    StoredItem,
    VectorBackend,
)

T = TypeVar("T")


async def run_to_end(executor: Any, fn: Callable[[], T]) -> T:
    """``fn()`` on ``executor``; a cancelled caller still waits for it to end, then re-raises.

    A thread cannot be stopped: returning at once would let the caller release the user's
    lock while its write is still running, and a later write, acknowledged first, would be
    overwritten by it. So a cancellation (``wait_for``'s timeout, a ``TaskGroup``) waits for
    the call (bounded by the engine's own timeouts), then raises ``CancelledError``.
    """
    import asyncio  # here: a sync process (an `ltm` command) never imports asyncio

    future = asyncio.get_running_loop().run_in_executor(executor, fn)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        while not future.done():
            try:
                await asyncio.wait({future})
            except asyncio.CancelledError:  # cancelled again: the call still runs
                continue
        if not future.cancelled():
            future.exception()  # retrieved: its error goes with the cancellation
        raise


class ThreadedAsync(VectorBackend):
    """Every async twin runs its sync method through :meth:`_off_loop` (one place)."""

    @abstractmethod
    async def _off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the backend's own threads, without blocking the loop."""

    async def aget(self, keys: Sequence[ItemKey]) -> list[StoredItem | None]:
        return await self._off_loop(self.get, keys)

    async def asearch(self, request: SearchRequest) -> list[list[Hit]]:
        return await self._off_loop(self.search, request)

    async def alist_namespaces(self, request: ListRequest) -> list[tuple[str, ...]]:
        return await self._off_loop(self.list_namespaces, request)

    async def acount(self, prefix: tuple[str, ...]) -> int:
        return await self._off_loop(self.count, prefix)

    async def awrite(self, upserts: Sequence[Record], deletes: Sequence[ItemKey]) -> int:
        return await self._off_loop(self.write, upserts, deletes)

    async def atouch(self, keys: Sequence[ItemKey], now: datetime) -> None:
        await self._off_loop(self.touch, keys, now)

    async def asweep(self, now: datetime) -> int:
        return await self._off_loop(self.sweep, now)
