"""The store's one clock: every timestamp and every TTL decision reads :func:`utcnow`.

Tests that need time to pass (TTL expiry, the sweeper) patch this one function, e.g.
``monkeypatch.setattr(langchain_ltm._clock, "utcnow", lambda: later)``; engines are always
handed the moment to use (``Record.now``, ``alive_at``, ``touch(now)``, ``sweep(now)``) and
never read a clock of their own, Postgres included.
"""

from __future__ import annotations

import contextlib
import numbers
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

__all__ = ["MAX_TTL_MINUTES", "check_ttl", "utcnow"]

MAX_TTL_MINUTES = 1e9  # ~1,900 years: beyond it a TTL is a typo (and overflows datetime)


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(timezone.utc)


def check_ttl(
    ttl: Any,
    what: str = "ttl",
    most: float = MAX_TTL_MINUTES,
    none_means: str = "no expiry",
) -> float | None:
    """``None`` or a positive number of minutes below ``most``, as a float.

    Any real number is one (``numpy.int64``, ``numpy.float32``, ``Decimal``, ``Fraction``),
    as LangGraph takes them; ``bool``, NaN and infinities are not. ``none_means`` says in
    the error what ``None`` does for ``what`` (a TTL: no expiry; a sweep interval: another
    default).
    """
    if ttl is None:
        return None
    minutes = float("nan")
    if isinstance(ttl, (numbers.Real, Decimal)) and not isinstance(ttl, bool):
        with contextlib.suppress(ValueError, OverflowError):  # sNaN, a Fraction too large
            minutes = float(ttl)
    if not 0 < minutes < most:
        raise ValueError(
            f"{what} is a number of minutes > 0 and below {most:,.0f} (e.g. 0.5 or 60), "
            f"or None for {none_means}; got {ttl!r}."
        )
    return minutes
