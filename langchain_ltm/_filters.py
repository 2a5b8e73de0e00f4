"""Search filters: LangGraph's filter dict compiled once into a small AST.

The AST is what every backend translates (Python predicate in memory, SQL in Postgres,
``models.Filter`` in Qdrant), so operator checks and type rules live here only.

Semantics (LangGraph's, with upstream bugs fixed):
- ``{"k": v}`` compares the top-level value ``k``; a nested dict without ``$`` keys compares
  nested keys; lists compare element-wise.
- ``$eq``/``$ne`` use JSON equality (``True`` is not ``1``; ``1 == 1.0``); a missing key is
  ``None``, as in InMemoryStore.
- ``$gt $gte $lt $lte`` compare numbers as numbers and strings as strings; any other pairing
  (missing key, a string against a number) does not match, instead of raising.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_ltm.errors import InvalidFilterError

PUBLIC_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
RANGE_OPERATORS = frozenset({"$gt", "$gte", "$lt", "$lte"})
# Used by the fact API only; not accepted in user filters.
INTERNAL_OPERATORS = frozenset({"$in", "$exists", "$object", "$not_after"})
# "$not_after": the value is not a time in the store's format later than the operand (a
# time in that format): a missing value, another type or a text in any other form passes,
# and its reader checks it (recall's as_of: a client's own valid_from, "yesterday", 1700000000).
STORED_TIME = re.compile(
    r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
    r"T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{6}Z"
)
"""The fixed-width UTC text the store writes its times in (``versions.format_time``)."""
# "$object": the value at the path is a JSON object. A nested filter ({"meta": {"n": ...}})
# compiles to one on each parent, since InMemoryStore (and PostgresStore's containment)
# never match a nested key whose parent is missing or not an object.


@dataclass(frozen=True, slots=True)
class Condition:
    """``value[path...] <op> operand``.

    For ``$in``, ``strings`` holds the operand's plain strings as a set and ``null`` says
    whether it holds ``None``, so a string or missing value is looked up instead of compared
    with every member (the fact API's ``$in`` lists carry a batch of hashes or ids, checked
    against every row of a user).
    """

    path: tuple[str, ...]
    op: str
    operand: Any
    strings: frozenset[str] | None = field(default=None, init=False, repr=False, compare=False)
    null: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.op == "$in" and isinstance(self.operand, (list, tuple)):
            members = frozenset(o for o in self.operand if type(o) is str)
            object.__setattr__(self, "strings", members)
            object.__setattr__(self, "null", any(o is None for o in self.operand))


Filter = tuple[Condition, ...]


def compile_filter(raw: Mapping[str, Any] | None) -> Filter:
    """Validate a LangGraph filter dict and compile it; raises InvalidFilterError."""
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise InvalidFilterError(f"filter must be a dict, got {type(raw).__name__}.")
    out: list[Condition] = []
    _compile(raw, (), out)
    return tuple(out)


def _compile(raw: Mapping[str, Any], path: tuple[str, ...], out: list[Condition]) -> None:
    for key, spec in raw.items():
        if not isinstance(key, str):
            raise InvalidFilterError(f"filter keys must be strings, got {key!r}.")
        full = (*path, key)
        if isinstance(spec, Mapping) and any(str(k).startswith("$") for k in spec):
            for op, operand in spec.items():
                out.append(_operator(full, str(op), operand))
        elif isinstance(spec, Mapping):  # {"meta": {}}: meta is an object, any object
            out.append(Condition(full, "$object", True))
            _compile(spec, full, out)
        else:
            out.append(Condition(full, "$eq", _plain(spec)))


def _operator(path: tuple[str, ...], op: str, operand: Any) -> Condition:
    if op not in PUBLIC_OPERATORS:
        raise InvalidFilterError(
            f"Unsupported filter operator {op!r} on {'.'.join(path)!r}; "
            f"use one of {', '.join(sorted(PUBLIC_OPERATORS))}."
        )
    operand = _plain(operand)
    if op in RANGE_OPERATORS and not (_is_number(operand) or isinstance(operand, str)):
        raise InvalidFilterError(
            f"{op} on {'.'.join(path)!r} needs a number or a string, got {operand!r}."
        )
    return Condition(path, op, operand)


def _plain(value: Any) -> Any:
    """The operand as JSON holds it (each engine compares JSON values; an exact-type check
    missed a StrEnum or numpy.int64)."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    return plain_scalar(value)


def plain_scalar(value: Any) -> Any:
    """A JSON scalar as its plain Python type: a StrEnum is its text, an IntEnum, a numpy
    integer or float its number, ``numpy.bool_`` a bool; anything else as it is.

    Example:
        >>> import enum
        >>> class Source(enum.StrEnum):
        ...     CHAT = "chat"
        >>> type(plain_scalar(Source.CHAT)).__name__, plain_scalar(True)
        ('str', True)
    """
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if type(value).__module__ == "numpy" and getattr(value, "shape", None) == ():
        return plain_scalar(value.item())
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: booleans are not numbers; containers compare deeply."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=False))
    return type(a) is type(b) and bool(a == b)


_MISSING = object()


def _resolve(value: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    current: Any = value
    for part in path:
        if not isinstance(current, Mapping) or part not in current:
            return _MISSING
        current = current[part]
    return current


def _compare(op: str, left: Any, right: Any) -> bool:
    if _is_number(left) and _is_number(right):
        pass
    elif not (isinstance(left, str) and isinstance(right, str)):
        return False
    if op == "$gt":
        return bool(left > right)
    if op == "$gte":
        return bool(left >= right)
    if op == "$lt":
        return bool(left < right)
    return bool(left <= right)


def matches(value: Mapping[str, Any], conditions: Filter) -> bool:
    """Evaluate the compiled filter against one stored value."""
    for cond in conditions:
        found = _resolve(value, cond.path)
        op = cond.op
        if op == "$exists":
            if (found is not _MISSING) != bool(cond.operand):
                return False
            continue
        if op == "$object":
            if not isinstance(found, Mapping):
                return False
            continue
        if op == "$not_after":
            if isinstance(found, str) and found > cond.operand and STORED_TIME.fullmatch(found):
                return False
            continue
        left = None if found is _MISSING else found
        if op == "$eq":
            if not json_equal(left, cond.operand):
                return False
        elif op == "$ne":
            if json_equal(left, cond.operand):
                return False
        elif op == "$in":
            if cond.strings is not None and left is None:  # json_equal(None, o): o is None
                if not cond.null:
                    return False
            elif cond.strings is not None and type(left) is str:  # a str equals a str only
                if left not in cond.strings:
                    return False
            elif not any(json_equal(left, o) for o in cond.operand):
                return False
        elif not _compare(op, left, cond.operand):
            return False
    return True
