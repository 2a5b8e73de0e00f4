"""When and where a fact came from: ``remember``'s ``metadata`` and ``observed_at``, checked (pure).

``metadata`` is stored beside the layout's fields of the fact (and of each version), so it
must be JSON and must not use a layout key; ``observed_at`` is when the fact was said (a
backfill of old conversations), so it must be timezone-aware and not in the future.
``recall``'s ``filter`` is a BaseStore filter on those keys.

Example:
    >>> check_metadata({"source": "chat", "session": 3})
    {'source': 'chat', 'session': 3}
    >>> metadata_filter({"session": {"$gte": 2}})[0].op
    '$gte'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timezone
from typing import Any

from langchain_ltm._filters import Filter, compile_filter, plain_scalar
from langchain_ltm._utf8 import encodes_as_utf8
from langchain_ltm.errors import InvalidFactError, InvalidFilterError
from langchain_ltm.facts.versions import RESERVED

__all__ = [
    "check_metadata",
    "check_observed_at",
    "metadata_filter",
    "secret_in",
    "secret_in_metadata",
]

_MAX_DEPTH = 32


def check_metadata(metadata: object) -> dict[str, Any]:
    """A JSON copy of ``metadata`` (``None``: ``{}``); raises InvalidFactError naming the key.

    Keys are non-empty strings outside the fact layout (``content``, ``valid_from``, ...);
    values are JSON: ``None``, booleans, numbers (finite), strings, lists and objects with
    string keys (tuples become lists).
    """
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidFactError(
            f"metadata must be a dict of JSON values, got {type(metadata).__name__}."
        )
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        if not isinstance(key, str) or not key:
            raise InvalidFactError(f"metadata keys must be non-empty strings, got {key!r}.")
        if key in RESERVED:
            raise InvalidFactError(
                f"metadata key {key!r} is a field of the stored fact; rename it (the reserved "
                f"keys are {', '.join(sorted(RESERVED))})."
            )
        _storable(key, "metadata key", key)
        out[plain_scalar(key)] = _json(value, key, 0)  # a StrEnum key is its text
    return out


def secret_in(
    guard: Callable[[str], str | None] | None, text: str, metadata: Mapping[str, Any]
) -> str | None:
    """Why ``guard`` refuses a text or its checked ``metadata`` (``None``: neither, or no guard).

    The one check of what a fact stores, for ``remember`` and the imports alike.

    Example:
        >>> from langchain_ltm.guard import find_secret
        >>> secret_in(find_secret, "Likes tea", {"note": "card 4111 1111 1111 1111"})[:16]
        "metadata 'note':"
        >>> secret_in(None, "card 4111 1111 1111 1111", {}) is None
        True
    """
    if guard is None:
        return None
    return guard(text) or secret_in_metadata(guard, metadata)


def secret_in_metadata(
    guard: Callable[[str], str | None] | None, metadata: Mapping[str, Any]
) -> str | None:
    """Why ``guard`` refuses checked ``metadata`` (``None``: it does not, or no guard).

    Each string or integer value is read with its key (``{"password": "hunter22"}`` as
    ``"password: hunter22"``, the way a text states it), every other value's key alone;
    one guard call per value. The reason names the key: ``metadata 'note': Not stored: ...``.

    Example:
        >>> from langchain_ltm.guard import find_secret
        >>> secret_in_metadata(find_secret, {"note": "card 4111 1111 1111 1111"})[:24]
        "metadata 'note': Not sto"
        >>> secret_in_metadata(find_secret, {"session": 3, "source": "chat"}) is None
        True
    """
    if guard is None:
        return None
    for where, text in _metadata_texts(metadata, ""):
        reason = guard(text)
        if reason:
            return f"metadata {where!r}: {reason}"
    return None


def _metadata_texts(value: Any, where: str, key: str = "") -> Iterator[tuple[str, str]]:
    """``(where, text)`` for each value of checked metadata (JSON: dicts, lists, scalars)."""
    if isinstance(value, Mapping):
        for name, item in value.items():
            yield from _metadata_texts(item, f"{where}.{name}" if where else name, name)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _metadata_texts(item, f"{where}[{i}]", key)
    elif isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        yield where, f"{key}: {value}" if key else str(value)
    elif key:
        yield where, key


def _storable(text: str, what: str, where: str) -> None:
    """Raise InvalidFactError if ``text`` has a character no engine stores in JSON.

    A NUL or a lone surrogate: Postgres refuses both in ``jsonb`` (and so would a
    ``ltm migrate`` to it), so they are refused here, on every engine, naming the key.
    """
    if "\x00" in text:
        raise InvalidFactError(f"{what} {where!r} contains a NUL character; remove it.")
    if not encodes_as_utf8(text):
        raise InvalidFactError(
            f"{what} {where!r} is not valid Unicode (it has a lone surrogate); remove it."
        )


def _json(value: Any, where: str, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise InvalidFactError(f"metadata {where!r} nests deeper than {_MAX_DEPTH} levels.")
    # subclasses (a StrEnum, an IntEnum, numpy.float64) and numpy scalars become the plain
    # value: stored as they were, engines gave them back differently and a filter matched
    # on one engine only
    value = plain_scalar(value)
    if isinstance(value, str):
        _storable(value, "metadata", where)
        return value
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidFactError(
                f"metadata {where!r} is {value!r}, which JSON cannot hold; use a finite "
                "number or None."
            )
        return value
    if isinstance(value, (list, tuple)):
        return [_json(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidFactError(
                    f"metadata {where!r} has the key {key!r}; JSON object keys are strings."
                )
            _storable(key, "metadata key", f"{where}.{key}")
            out[plain_scalar(key)] = _json(item, f"{where}.{key}", depth + 1)
        return out
    kind = type(value)
    name = (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )
    raise InvalidFactError(
        f"metadata {where!r} is a {name}, which is not JSON; store it as a "
        "string, number, bool, None, list or dict (a datetime as dt.isoformat())."
    )


def check_observed_at(observed_at: object, now: datetime) -> datetime | None:
    """``observed_at`` checked: a timezone-aware datetime not after ``now`` (or ``None``).

    Raises:
        TypeError: It is not a datetime.
        ValueError: It is naive, or in the future (a fact cannot have been said yet; a
            future time would also place every later update before it).
    """
    if observed_at is None:
        return None
    if not isinstance(observed_at, datetime):
        raise TypeError(f"observed_at must be a datetime, got {type(observed_at).__name__}.")
    if observed_at.utcoffset() is None:
        raise ValueError(
            f"observed_at {observed_at!r} has no time zone; pass an aware datetime, e.g. "
            "datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)."
        )
    try:
        observed_at.astimezone(timezone.utc)
    except OverflowError:
        raise ValueError(
            f"observed_at {observed_at.isoformat()} is out of range in UTC (before year 1)."
        ) from None
    if observed_at > now:
        raise ValueError(
            f"observed_at {observed_at.isoformat()} is in the future (now is "
            f"{now.isoformat()}); it is when the fact was said: leave it out for now."
        )
    return observed_at


def metadata_filter(raw: Mapping[str, Any] | None) -> Filter:
    """``recall``'s filter compiled (BaseStore operators) on metadata keys only.

    Raises:
        InvalidFilterError: An unknown operator, a bad operand, or a key of the fact layout.
    """
    conditions = compile_filter(raw)
    for cond in conditions:
        if cond.path[0] in RESERVED:
            raise InvalidFilterError(
                f"filter key {cond.path[0]!r} is a field of the stored fact, not metadata; "
                "filter on keys given to remember(..., metadata=) (for times use as_of)."
            )
    return conditions
