"""Write the logic once: sans-I/O generators driven by a sync or an async shell.

Store logic is written as a generator that yields :class:`Step` objects (a call to the
backend or the embedder) and receives each step's result. ``run_sync`` performs the steps
with the sync methods, ``run_async`` awaits their async twins. Exceptions raised by a step
are thrown back into the generator, so ``try/finally`` inside the logic works in both.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Generator
from typing import Any, NamedTuple, TypeVar

T = TypeVar("T")


class Step(NamedTuple):
    sync: Callable[..., Any]
    async_: Callable[..., Awaitable[Any]]
    args: tuple[Any, ...] = ()


Logic = Generator[Step, Any, T]


def call(obj: Any, method: str, *args: Any) -> Step:
    """A step calling ``obj.method(*args)`` or ``await obj.amethod(*args)``."""
    return Step(getattr(obj, method), getattr(obj, "a" + method), args)


def running_loop() -> Any:
    """The event loop running in this thread, if any (asyncio is not imported for it).

    A sync call made on that loop's thread must never wait for a task of the same loop.
    """
    asyncio = sys.modules.get("asyncio")
    return None if asyncio is None else asyncio._get_running_loop()


def run_sync(logic: Logic[T]) -> T:
    send: Callable[[Any], Step] = logic.send
    value: Any = None
    while True:
        try:
            step = send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        try:
            value, send = step.sync(*step.args), logic.send
        except BaseException as exc:
            value, send = exc, logic.throw


async def run_async(logic: Logic[T]) -> T:
    send: Callable[[Any], Step] = logic.send
    value: Any = None
    while True:
        try:
            step = send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        try:
            value, send = await step.async_(*step.args), logic.send
        except BaseException as exc:
            value, send = exc, logic.throw
