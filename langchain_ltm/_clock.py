"""The store's one clock: every timestamp and every TTL decision reads :func:`utcnow`.

Tests that need time to pass (TTL expiry, the sweeper) patch this one function, e.g.
``monkeypatch.setattr(langchain_ltm._clock, "utcnow", lambda: later)``; engines are always
handed the moment to use (``Record.now``, ``alive_at``, ``touch(now)``, ``sweep(now)``) and
never read a clock of their own, Postgres included.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

__all__ = ["check_ttl", "utcnow"]

_MAX_TTL_MINUTES = 1e9  # ~1,900 years: beyond it a TTL is a typo (and overflows datetime)


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(timezone.utc)


def check_ttl(ttl: Any, what: str = "ttl") -> float | None:
    """``None`` (no expiry) or a positive number of minutes, as a float."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not 0 < ttl < _MAX_TTL_MINUTES:
        raise ValueError(
            f"{what} is a number of minutes > 0 (e.g. 0.5 or 60), or None for no expiry; "
            f"got {ttl!r}."
        )
    return float(ttl)
