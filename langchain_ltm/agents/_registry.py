"""Where the agent side keeps what it records per user, besides facts (BaseStore items).

- Threads: ``("ltm_threads", label(user))`` / ``thread_id`` -> ``{"thread_id", "first_seen",
  "last_seen"}``. Written by the middleware the first time it sees a (user, thread) pair in
  this process, so ``forget_user`` can delete the user's checkpoints.
- Session turns: ``("ltm_sessions", label(user))`` / ``{thread_id}:{turn}`` ->
  ``{"thread_id", "turn", "user", "answer", "text", "at"}``, embedded on ``text`` (the user's
  message and the final answer), for ``SessionMemoryMiddleware(retrieval="relevance")``.

Labels are the same reversible encoding as the facts' (:func:`langchain_ltm._labels.encode_label`),
so the namespaces of two users never overlap.
"""

from __future__ import annotations

from datetime import datetime

from langchain_ltm._labels import encode_label
from langchain_ltm.facts.versions import format_time

__all__ = ["SESSIONS_ROOT", "THREADS_ROOT", "session_namespace", "thread_namespace", "thread_value"]

THREADS_ROOT = "ltm_threads"
SESSIONS_ROOT = "ltm_sessions"


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
