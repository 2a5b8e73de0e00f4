"""The store's one clock: every timestamp and every TTL decision reads :func:`utcnow`.

Tests that need time to pass (TTL expiry, the sweeper) patch this one function, e.g.
``monkeypatch.setattr(langchain_ltm._clock, "utcnow", lambda: later)``; engines are always
handed the moment to use (``Record.now``, ``alive_at``, ``touch(now)``, ``sweep(now)``) and
never read a clock of their own, Postgres included.
"""

from __future__ import annotations

from datetime import datetime, timezone

__all__ = ["utcnow"]


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(timezone.utc)
