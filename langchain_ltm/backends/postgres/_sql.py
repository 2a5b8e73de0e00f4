"""What the Postgres engine's statements share: exchanges, tables, namespaces, filters.

Every operation is an *exchange*: a generator that yields :class:`Statement` objects and
receives each statement's rows (a list of tuples). ``_drive`` drives exchanges over a
psycopg connection, sync or async; nothing in the statement modules touches a socket. They
are this module, ``_reads`` (items, namespaces, exact ranked search), ``_writes`` (a
batch's rows, key locks, TTL, advisory locks) and ``_schema`` (tables and migrations).
"""

from __future__ import annotations

import re
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from psycopg.types.json import Jsonb

from langchain_ltm._filters import RANGE_OPERATORS, STORED_TIME, Condition, Filter, matches

T = TypeVar("T")

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,47}")


@dataclass(frozen=True, slots=True)
class Statement:
    """One SQL statement and its parameters (psycopg placeholders).

    ``wait=False``: the exchange needs no rows from it (it receives ``[]`` at once). Driven
    in pipeline mode (``Connector.run(..., pipeline=True)``, always inside a transaction),
    it is sent and the exchange goes on building the next statement while the server runs
    it; an error it raises surfaces at the next statement that waits, or at the commit, and
    the transaction fails whole.
    """

    sql: str
    params: tuple[Any, ...] = ()
    wait: bool = True


Rows = list[tuple[Any, ...]]
Exchange = Generator[Statement, Rows, T]


@dataclass(frozen=True, slots=True)
class Tables:
    """Quoted names of one store's tables: items, vectors (PGVectorStore layout), versions."""

    schema: str
    table: str

    def __post_init__(self) -> None:
        for what, name in (("schema", self.schema), ("table", self.table)):
            if not _IDENTIFIER.fullmatch(name):
                raise ValueError(
                    f"{what} {name!r} is not a plain identifier: use 1 to 48 letters, digits "
                    "or underscores, starting with a letter or underscore."
                )

    def _q(self, suffix: str = "") -> str:
        return f'"{self.schema}"."{self.table}{suffix}"'

    @property
    def items(self) -> str:
        return self._q()

    @property
    def vectors(self) -> str:
        return self._q("_vectors")

    @property
    def versions(self) -> str:
        return self._q("_schema")

    @property
    def vectors_name(self) -> str:
        """Unquoted name of the vectors table (what PGVectorStore is given)."""
        return f"{self.table}_vectors"

    def index(self, suffix: str) -> str:
        return f'"{self.table}_{suffix}"'


# ---- namespaces ------------------------------------------------------------------------


def ns_path(namespace: Sequence[str]) -> str:
    """The indexed text form of a namespace: labels joined by '.', with a final '.'.

    Labels cannot contain '.', so under the "C" collation the namespaces under a prefix
    ``P`` are exactly the range ``[P., P/)`` of a btree: whole labels, no LIKE wildcards.
    """
    for label in namespace:
        if "." in label or not label:
            raise ValueError(f"Invalid namespace label {label!r}: labels are non-empty, no '.'.")
    return "".join(label + "." for label in namespace)


def namespace_of(path: str) -> tuple[str, ...]:
    return tuple(path[:-1].split("."))


def scope_sql(prefix: tuple[str, ...], alias: str, params: list[Any]) -> str:
    if not prefix:
        return "TRUE"
    low = ns_path(prefix)
    params.extend((low, low[:-1] + "/"))
    return f"{alias}.ns_path >= %s AND {alias}.ns_path < %s"


# ---- filters ---------------------------------------------------------------------------

_SQL_OPS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def _json_at(alias: str, path: tuple[str, ...], params: list[Any]) -> str:
    params.extend(path)
    # '->' with a text key: missing keys and non-objects give NULL (no array indexing)
    return "(" + f"{alias}.value" + " -> %s::text" * len(path) + ")"


def filter_sql(conditions: Filter, alias: str, params: list[Any]) -> str:
    """Translate the compiled filter AST into a WHERE fragment over ``alias.value``."""
    parts: list[str] = []
    for cond in conditions:
        kept = without_nul(cond)
        if kept is not True:
            parts.append("FALSE" if kept is False else _condition(kept, alias, params))
    return " AND ".join(parts) if parts else "TRUE"


def has_nul(value: Any) -> bool:
    """Whether a text in ``value`` (a string, an item key, a JSON operand) holds a NUL.

    No stored item does: Postgres text cannot.
    """
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, (list, tuple)):
        return any(has_nul(v) for v in value)
    if isinstance(value, dict):
        return any(has_nul(k) or has_nul(v) for k, v in value.items())
    return False


def without_nul(cond: Condition) -> Condition | bool:
    r"""``cond`` as it applies to stored values, which hold no NUL: the same answers, no NUL.

    Postgres refuses a NUL in a parameter, so a filter naming one (a key, a value) raised
    where every other engine finds what matches. No stored value has a key or a string with
    a NUL: a path through one is missing (the condition is then a constant, as for an empty
    value); a value holding one equals nothing stored; and among stored strings, those
    below ``p + "\x00" + rest`` are those up to ``p``.

    Example:
        >>> without_nul(Condition(("a",), "$lt", "b\x00c"))
        Condition(path=('a',), op='$lte', operand='b')
        >>> without_nul(Condition(("a\x00",), "$exists", False))
        True
    """
    if any("\x00" in part for part in cond.path):
        return matches({}, (Condition(("missing",), cond.op, cond.operand),))
    if not has_nul(cond.operand):
        return cond
    if cond.op == "$eq":
        return False
    if cond.op == "$ne":
        return True
    if cond.op == "$in":
        kept = [member for member in cond.operand if not has_nul(member)]
        return Condition(cond.path, "$in", kept) if kept else False
    if cond.op in RANGE_OPERATORS:  # a string: stored ones compare with its part before NUL
        head = cond.operand.split("\x00", 1)[0]
        return Condition(cond.path, "$lte" if cond.op in ("$lt", "$lte") else "$gt", head)
    return cond


def _condition(cond: Condition, alias: str, params: list[Any]) -> str:
    op = cond.op
    if op == "$exists":
        return f"{_json_at(alias, cond.path, params)} IS {'NOT ' if cond.operand else ''}NULL"
    if op == "$object":
        return f"coalesce(jsonb_typeof({_json_at(alias, cond.path, params)}) = 'object', false)"
    if op == "$not_after":  # see _filters: the regex only runs on texts past the operand
        first = _json_at(alias, cond.path, params)
        second = _json_at(alias, cond.path, params)
        params.append(cond.operand)
        third = _json_at(alias, cond.path, params)
        params.append(STORED_TIME.pattern)
        return (
            f"CASE WHEN jsonb_typeof({first}) = 'string' AND ({second} #>> '{{}}') "
            f"COLLATE \"C\" > %s::text THEN ({third} #>> '{{}}') !~ ('^' || %s::text || '$') "
            "ELSE true END"
        )
    if op in ("$eq", "$ne", "$in"):
        # a missing key compares as JSON null, like InMemoryStore
        left = f"coalesce({_json_at(alias, cond.path, params)}, 'null'::jsonb)"
        if op == "$in":
            params.append([Jsonb(v) for v in cond.operand])
            return f"{left} = ANY(%b::jsonb[])"
        params.append(Jsonb(cond.operand))
        return f"{left} {'=' if op == '$eq' else '<>'} %s::jsonb"
    if op in RANGE_OPERATORS:
        # numbers compare as numbers, strings as strings (code points); other pairs: no match
        sql_op = _SQL_OPS[op]
        first = _json_at(alias, cond.path, params)
        second = _json_at(alias, cond.path, params)
        params.append(cond.operand)
        if isinstance(cond.operand, str):
            return (
                f"coalesce(CASE WHEN jsonb_typeof({first}) = 'string' THEN "
                f"({second} #>> '{{}}') COLLATE \"C\" {sql_op} %s::text END, false)"
            )
        return (
            f"coalesce(CASE WHEN jsonb_typeof({first}) = 'number' THEN "
            f"({second})::numeric {sql_op} %s::numeric END, false)"
        )
    raise ValueError(f"Unsupported filter operator {op!r}.")


def alive_sql(at: datetime | None, alias: str, params: list[Any]) -> str:
    """TTL: items without one, or expiring after ``at`` (``None``: every item)."""
    if at is None:
        return "TRUE"
    params.append(at)
    return f"({alias}.expires_at IS NULL OR {alias}.expires_at > %s)"
