"""Where the agent side keeps what it records per user, besides facts (BaseStore items).

- Threads: ``("ltm_threads", label(user))`` / ``thread_id`` -> ``{"thread_id", "first_seen",
  "last_seen"}``. Written by the middleware and the memory tools the first time they see a
  (user, thread) pair in this process, so ``forget_user`` can delete the user's
  checkpoints; rewritten when ``last_seen`` is more than a minute old.
- Session turns: ``("ltm_sessions", label(user))`` / ``{thread_id}:{message_id}`` (the
  user message's id; ``{thread_id}:{turn}``, its number, for a message without one, and
  for turns stored before ids were kept) -> ``{"thread_id", "turn", "message_id", "user",
  "answer", "text", "at"}``, embedded on ``text`` (the user's message and the final
  answer), for ``SessionMemoryMiddleware(retrieval="relevance")``.

Labels are the same reversible encoding as the facts' (:func:`langchain_ltm._labels.encode_label`),
so the namespaces of two users never overlap.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from langgraph.store.base import BaseStore

from langchain_ltm import _clock
from langchain_ltm._labels import encode_label
from langchain_ltm._steps import Logic, Step
from langchain_ltm.facts.versions import format_time, parse_time

__all__ = [
    "DEFAULT_THREAD",
    "RECORDER",
    "SESSIONS_ROOT",
    "THREADS_ROOT",
    "ThreadRecorder",
    "new_input",
    "session_namespace",
    "thread_namespace",
    "thread_value",
]

THREADS_ROOT = "ltm_threads"
SESSIONS_ROOT = "ltm_sessions"
DEFAULT_THREAD = "default"
"""The thread part of a session turn's key for a run without a thread id."""


def thread_namespace(user_id: str) -> tuple[str, str]:
    """The namespace recording ``user_id``'s threads."""
    return (THREADS_ROOT, encode_label(user_id))


def session_namespace(user_id: str) -> tuple[str, str]:
    """The namespace of ``user_id``'s indexed session turns."""
    return (SESSIONS_ROOT, encode_label(user_id))


def thread_value(thread_id: str, first_seen: datetime, last_seen: datetime) -> dict[str, str]:
    """The value recording one thread of a user."""
    return {
        "thread_id": thread_id,
        "first_seen": format_time(first_seen),
        "last_seen": format_time(last_seen),
    }


class ThreadRecorder:
    """Records which threads belong to which user, in the store itself.

    Both middlewares call :meth:`note` before a model call. The first call for each user
    message reads the pair's registry item (one ``get``): another process, or another
    store object over the same data, may have erased the user since, and a thread they come
    back to must be recorded again, or the next ``forget_user`` would leave its checkpoints
    behind. Later model calls of the same run (after tool calls) trust the cache. The item is
    written the first time this process sees the pair, whenever it is missing, and when its
    ``last_seen`` is older than ``refresh`` (so it says when the user last came back, to
    within ``refresh``, for one write per thread and ``refresh`` at most, not one per model
    or tool call); the bounded cache only spares the rewrites.
    """

    def __init__(self, size: int = 10_000, refresh: timedelta = timedelta(minutes=1)) -> None:
        self.size = size
        self.refresh = refresh
        self._seen: OrderedDict[tuple[int, str, str], None] = OrderedDict()
        self._lock = threading.Lock()

    def forget(self, store: BaseStore, user_id: str) -> None:
        """Drop the cached pairs of ``user_id`` (their next note writes the item again)."""
        with self._lock:
            for key in [k for k in self._seen if k[0] == _data_of(store) and k[1] == user_id]:
                del self._seen[key]

    def note(
        self, store: BaseStore, user_id: str, thread_id: Any, *, check: bool = True
    ) -> Logic[None]:
        """Record ``thread_id`` (if any) under ``user_id``.

        ``check=False`` (a later model call of the same run, after tool calls) trusts this
        process's record of an earlier call instead of reading the item again: one read
        per user message, not one per model call.
        """
        if thread_id is None:
            return
        thread = str(thread_id)
        key = (_data_of(store), user_id, thread)
        if not check:
            with self._lock:
                if key in self._seen:
                    return
        namespace = thread_namespace(user_id)
        existing = yield Step(store.get, store.aget, (namespace, thread))
        with self._lock:
            written = key in self._seen
            self._seen[key] = None
            self._seen.move_to_end(key)
            if len(self._seen) > self.size:
                self._seen.popitem(last=False)
        now = _clock.utcnow()
        if written and existing is not None and not self._stale(existing.value, now):
            return
        value = thread_value(thread, now, now)
        if existing is not None:
            value["first_seen"] = existing.value.get("first_seen", value["first_seen"])
        # never the store's default_ttl: an expired record hid the thread from forget_user
        yield Step(
            lambda: store.put(namespace, thread, value, index=False, ttl=None),
            lambda: store.aput(namespace, thread, value, index=False, ttl=None),
        )

    def _stale(self, value: Any, now: datetime) -> bool:
        """Whether a record's ``last_seen`` is older than ``refresh`` (or unreadable)."""
        try:
            last_seen = parse_time(value.get("last_seen"), now - self.refresh)
        except (AttributeError, TypeError, ValueError):
            return True
        return now - last_seen >= self.refresh


def _data_of(store: BaseStore) -> int:
    """What the cache tells stores apart by: their engine.

    The views of one ``LongTermMemoryStore`` (``with_options``: the tools' and a configured
    middleware's) share its engine, and so its thread records: one cache entry, one write.
    """
    return id(getattr(store, "backend", store))


def new_input(messages: Sequence[Any]) -> bool:
    """Whether a model call answers a user message (the first call of a run), not tools."""
    return bool(messages) and getattr(messages[-1], "type", None) == "human"


RECORDER = ThreadRecorder()
"""The one recorder of the process: every middleware shares it, ``forget_user`` clears it."""
