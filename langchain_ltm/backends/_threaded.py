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
