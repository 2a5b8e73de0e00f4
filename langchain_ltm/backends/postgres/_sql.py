"""The Postgres engine's SQL, built in one I/O-free place for the sync and async shells.

Every operation is an *exchange*: a generator that yields :class:`Statement` objects and
receives each statement's rows (a list of tuples). ``_conn`` drives exchanges over a
psycopg connection, sync or async; nothing here touches a socket. See ``postgres.py`` for
the schema and why it looks the way it does.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, TypeVar

import numpy as np
from psycopg.types.json import Jsonb

from langchain_ltm._filters import RANGE_OPERATORS, Condition, Filter, matches
from langchain_ltm._ids import vector_id_bytes
from langchain_ltm.backends.base import (
    Hit,
    ItemKey,
    ListRequest,
    Record,
    SearchRequest,
    StoredItem,
)
from langchain_ltm.backends.postgres._wire import JsonbRows, UuidRows, VectorRows
from langchain_ltm.errors import BackendError

T = TypeVar("T")

SCHEMA_VERSION = 4
_SETUP_LOCK = "langchain_ltm.setup"
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


def _namespace_of(path: str) -> tuple[str, ...]:
    return tuple(path[:-1].split("."))


def _scope(prefix: tuple[str, ...], alias: str, params: list[Any]) -> str:
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


# ---- reads -----------------------------------------------------------------------------

_UTC = timezone.utc
_ITEM_COLUMNS = "i.ns_path, i.key, i.value, i.created_at, i.updated_at, i.expires_at, i.ttl_minutes"


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is _UTC else moment.astimezone(_UTC)


def _item(row: Sequence[Any], at: int = 0) -> StoredItem:
    return _stored(None, *row[at : at + 7])


def _alive(at: datetime | None, alias: str, params: list[Any]) -> str:
    """TTL: items without one, or expiring after ``at`` (``None``: every item)."""
    if at is None:
        return "TRUE"
    params.append(at)
    return f"({alias}.expires_at IS NULL OR {alias}.expires_at > %s)"


def _keys_to_read(keys: Sequence[ItemKey]) -> tuple[list[str], tuple[list[str], list[str]]]:
    """Each key's path, and the paths and keys worth asking for (none holding a NUL)."""
    paths = [ns_path(ns) for ns, _ in keys]
    kept = [
        (path, key) for path, (ns, key) in zip(paths, keys, strict=True) if not has_nul((ns, key))
    ]
    return paths, ([path for path, _ in kept], [key for _, key in kept])


def get_items(t: Tables, keys: Sequence[ItemKey]) -> Exchange[list[StoredItem | None]]:
    """Each key's item, ``None`` where there is none (a key holding a NUL never has one)."""
    paths, asked = _keys_to_read(keys)
    if not asked[0]:
        return [None] * len(keys)
    rows = yield Statement(
        f"SELECT {_ITEM_COLUMNS} FROM {t.items} i "
        "JOIN unnest(%b::text[], %b::text[]) AS k(ns_path, key) "
        "ON i.ns_path = k.ns_path AND i.key = k.key",
        asked,
    )
    found = {(row[0], row[1]): _item(row) for row in rows}
    return [found.get((path, key)) for path, (_, key) in zip(paths, keys, strict=True)]


def indexed_paths(t: Tables, keys: Sequence[ItemKey]) -> Exchange[list[tuple[str, ...] | None]]:
    """Each item's embedded paths (``()``: no vectors; ``None``: no such item)."""
    paths, asked = _keys_to_read(keys)
    if not asked[0]:
        return [None] * len(keys)
    rows = yield Statement(
        f"SELECT i.ns_path, i.key, array_remove(array_agg(v.path ORDER BY v.path), NULL) "
        f"FROM {t.items} i JOIN unnest(%b::text[], %b::text[]) AS k(ns_path, key) "
        "ON i.ns_path = k.ns_path AND i.key = k.key "
        f"LEFT JOIN {t.vectors} v ON v.ns_path = i.ns_path AND v.key = i.key "
        "GROUP BY i.ns_path, i.key",
        asked,
    )
    found = {(row[0], row[1]): tuple(row[2]) for row in rows}
    return [found.get((path, key)) for path, (_, key) in zip(paths, keys, strict=True)]


def count_items(t: Tables, prefix: tuple[str, ...]) -> Exchange[int]:
    params: list[Any] = []
    rows = yield Statement(
        f"SELECT count(*) FROM {t.items} i WHERE {_scope(prefix, 'i', params)}", tuple(params)
    )
    return int(rows[0][0])


def list_namespaces(t: Tables, request: ListRequest) -> Exchange[list[tuple[str, ...]]]:
    params: list[Any] = []
    column = "i.namespace"
    if request.max_depth is not None:
        params.append(request.max_depth)
        column = "i.namespace[1:%s]"
    where: list[str] = []
    if request.alive_at is not None:
        where.append(_alive(request.alive_at, "i", params))
    for match_type, path in request.conditions:
        if not path:
            continue
        if match_type == "prefix" and "*" not in path:
            where.append(_scope(path, "i", params))
            continue
        where.append("cardinality(i.namespace) >= %s")
        params.append(len(path))
        for position, label in enumerate(path, start=1):
            if label == "*":
                continue
            if match_type == "prefix":
                where.append("i.namespace[%s] = %s")
                params.extend((position, label))
            else:
                where.append("i.namespace[cardinality(i.namespace) - %s] = %s")
                params.extend((len(path) - position, label))
    params.extend((request.limit, request.offset))
    rows = yield Statement(
        f"SELECT DISTINCT {column} AS ns FROM {t.items} i "
        f"WHERE {' AND '.join(where) or 'TRUE'} ORDER BY ns LIMIT %s OFFSET %s",
        tuple(params),
    )
    return [tuple(row[0]) for row in rows]


def search(t: Tables, request: SearchRequest) -> Exchange[list[list[Hit]]]:
    if request.vectors is None:
        hits = yield from _unranked(t, request)
        return [hits]
    return (yield from _ranked(t, request))


def _unranked(t: Tables, request: SearchRequest) -> Exchange[list[Hit]]:
    params: list[Any] = []
    scope = _scope(request.prefix, "i", params)
    where = filter_sql(request.filter, "i", params)
    alive = _alive(request.alive_at, "i", params)
    params.extend((request.limit, request.offset))
    rows = yield Statement(
        f"SELECT {_ITEM_COLUMNS} FROM {t.items} i WHERE {scope} AND {where} AND {alive} "
        "ORDER BY i.updated_at DESC, i.namespace, i.key LIMIT %s OFFSET %s",
        tuple(params),
    )
    return [Hit(_item(row), None) for row in rows]


def _ranked(t: Tables, request: SearchRequest) -> Exchange[list[list[Hit]]]:
    """Exact by construction: every vector in scope is scored, no ANN index can be used.

    One query row with a limit (a per-user search) first takes the ``offset + limit`` best
    vector rows in scope (a top-N sort of the scores) and looks their items up
    (:func:`_best_rows`); that answer is the exact one when those rows are distinct items
    that all pass, or when they are every vector row in scope, which is nearly always.
    Otherwise, and for several query rows or no limit, :func:`_grouped`: the vectors in
    scope are scored and max-pooled per item, sorted, then walked best-first through
    primary-key lookups of their items, which apply the filter, until ``offset + limit``
    items pass. A rare filter under a broad prefix therefore still fills ``limit``. Items
    without vectors follow the scored ones; a second statement reads them only when some
    query has fewer scored items than wanted, so the search statement's plan holds nothing
    that rarely runs.

    Stored values are scored in float32 (``embedding::vector``: a no-op for ``vector``
    columns, the exact widening of ``halfvec`` ones), so search stays exact over what is
    stored whatever the column type. The plans are pinned by their shape, not by
    settings: rows are ordered by the negated distance, or by an aggregate (each item's
    best score), which no index can produce, so no ANN index (HNSW or IVFFlat, any
    operator class) can replace the btree range, in the custom or the generic plan
    (``tests/integration_tests/test_postgres_plan.py`` reads both under every such index).
    """
    assert request.vectors is not None
    wanted = None if request.limit is None else request.offset + request.limit
    scored = None
    if wanted is not None and len(request.vectors) == 1:
        scored = yield from _best_rows(t, request, wanted)
    if scored is None:
        scored = yield from _grouped(t, request, wanted)
    unscored: list[Hit] = []
    if wanted is None or any(len(column) < wanted for column in scored):
        # items without vectors follow the scored ones. A second statement: as a UNION ALL
        # branch of the one above, its plan cost every search (1M facts, p50: 12.9 vs 0.77
        # ms in one run, 0.89 vs 0.68 in another; bench/postgres_per_user_statement.py)
        seen = {(entry[1], entry[2]) for column in scored for entry in column}
        unscored = [
            hit
            for hit in (yield from _unscored(t, request, wanted, len(seen)))
            if (ns_path(hit.item.namespace), hit.item.key) not in seen
        ]
    out: list[list[Hit]] = []
    for column in scored:
        column.sort(key=_rank_key)
        hits = [entry[3] for entry in column] + unscored
        out.append(hits[request.offset : wanted])
    return out


_Scored = list[tuple[float, str, str, Hit]]  # (-score, ns_path, key, hit) of one query row


def _best_rows(t: Tables, request: SearchRequest, wanted: int) -> Exchange[list[_Scored] | None]:
    """The ``wanted`` best vector rows of one query and their items; ``None`` if not enough.

    Ranked best first, an item's first row is its best one, so when the rows are distinct
    items that pass the filter they are the ``wanted`` best items; and when there are
    fewer than ``wanted`` rows, they are all the scope has. Otherwise (an item with
    several texts among them, a filter or an expiry leaving one out) the caller runs
    :func:`_grouped`. Each row keeps its place (``LEFT JOIN``): a row whose item does not
    pass comes back without it.
    """
    assert request.vectors is not None
    params: list[Any] = [np.ascontiguousarray(request.vectors[0], dtype=np.float32)]
    vscope = _scope(request.prefix, "v", params)
    params.append(wanted)
    lookup_filter = filter_sql(request.filter, "i", params)
    lookup_alive = _alive(request.alive_at, "i", params)
    sql = _best_rows_sql(t, vscope, lookup_filter, lookup_alive)
    rows = yield Statement(sql, tuple(params))
    every_row = len(rows) < wanted
    column: _Scored = []
    spaces: dict[str, tuple[str, ...]] = {}  # a per-user search: one namespace, split once
    for score, path, key, value, created, updated, expires, ttl in rows:
        if created is None:  # its item did not pass
            if not every_row:
                return None
            continue
        item = _stored(spaces, path, key, value, created, updated, expires, ttl)
        column.append((-score, path, key, Hit(item, score)))
    kept = _distinct(column)
    return [kept] if every_row or len(kept) == wanted else None


def _distinct(column: _Scored) -> _Scored:
    """Each item at its first (best) row."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for entry in column:
        if (entry[1], entry[2]) not in seen:
            seen.add((entry[1], entry[2]))
            kept.append(entry)
    return kept


def _grouped(t: Tables, request: SearchRequest, wanted: int | None) -> Exchange[list[_Scored]]:
    """Each query row's items, max-pooled over their vectors, walked until ``wanted`` pass."""
    assert request.vectors is not None
    queries = request.vectors
    params: list[Any] = [np.ascontiguousarray(row, dtype=np.float32) for row in queries]
    vscope = _scope(request.prefix, "v", params)
    lookup_filter = filter_sql(request.filter, "i", params)
    lookup_alive = _alive(request.alive_at, "i", params)
    params.append(wanted)
    sql = _ranked_sql(t, len(queries), vscope, lookup_filter, lookup_alive)
    rows = yield Statement(sql, tuple(params))
    scored: list[_Scored] = [[] for _ in range(len(queries))]
    spaces: dict[str, tuple[str, ...]] = {}
    for qi, score, path, key, value, created, updated, expires, ttl in rows:
        item = _stored(spaces, path, key, value, created, updated, expires, ttl)
        scored[qi - 1].append((-score, path, key, Hit(item, score)))
    return scored


def _stored(
    spaces: dict[str, tuple[str, ...]] | None,
    path: str,
    key: str,
    value: dict[str, Any],
    created: datetime,
    updated: datetime,
    expires: datetime | None,
    ttl: float | None,
) -> StoredItem:
    """The item of a row (``spaces``: the namespaces split so far by path, to reuse them)."""
    namespace = None if spaces is None else spaces.get(path)
    if namespace is None:
        namespace = _namespace_of(path)
        if spaces is not None:
            spaces[path] = namespace
    return StoredItem(
        namespace,
        key,
        value,
        _utc(created),
        _utc(updated),
        _utc(expires) if expires is not None else None,
        ttl,
    )


def _rank_key(entry: tuple[float, str, str, Hit]) -> tuple[float, str, str]:
    return entry[0], entry[1], entry[2]


@functools.lru_cache(maxsize=128)
def _best_rows_sql(t: Tables, vscope: str, lookup_filter: str, alive: str) -> str:
    """:func:`_best_rows`' text (built once per shape)."""
    # ORDER BY the negated distance: no index yields that order, so the scope's btree range
    # is read and its scores top-N sorted, as the floor's query does (the floor orders by
    # the distance, which an HNSW index could take over). 20k facts, 100 a user, statement
    # p50 of 2,700 alternated calls: 337 us grouped, 270 this way, 218 the floor; 200k
    # facts, 10 a user: 264, 247, 186.
    return f"""
SELECT r.score, r.ns_path, r.key, i.value, i.created_at, i.updated_at, i.expires_at,
    i.ttl_minutes
FROM (
    SELECT v.ns_path, v.key, -(v.embedding::vector <#> %b::vector) AS score
    FROM {t.vectors} v WHERE {vscope}
    ORDER BY 3 DESC, 1, 2 LIMIT %s
) r
LEFT JOIN LATERAL (
    SELECT i.value, i.created_at, i.updated_at, i.expires_at, i.ttl_minutes
    FROM {t.items} i
    WHERE i.ns_path = r.ns_path AND i.key = r.key AND {lookup_filter} AND {alive} OFFSET 0
) i ON TRUE
ORDER BY r.score DESC, r.ns_path, r.key"""


@functools.lru_cache(maxsize=128)
def _ranked_sql(t: Tables, queries: int, vscope: str, lookup_filter: str, alive: str) -> str:
    """The ranked search's text (built once per shape: the parameters carry the values)."""
    # a VALUES list, not unnest(array): the planner knows how many rows, so the prepared
    # statement's generic plan costs what a custom one does and replaces it (no re-planning)
    values = ", ".join(f"({n}, %b::vector)" for n in range(1, queries + 1))
    # The scope's rows are scored before they are grouped (OFFSET 0 keeps that order of
    # work): grouping first sorted whole rows, vectors included (180 kB for 100 rows of
    # 384-d), to compute max() after. Sorting the scores alone, at 20k facts (100 a user),
    # the prepared statement p50: 0.44 -> 0.29 ms and 0.52 -> 0.43 ms (two runs, interleaved)
    # OFFSET 0 keeps the item lookup a parameterized nested loop (no hash join of the range)
    return f"""
SELECT q.qi, r.score, r.ns_path, r.key, r.value, r.created_at, r.updated_at,
    r.expires_at, r.ttl_minutes
FROM (VALUES {values}) AS q(qi, vec)
CROSS JOIN LATERAL (
    SELECT b.score, b.ns_path, b.key, i.value, i.created_at, i.updated_at,
        i.expires_at, i.ttl_minutes
    FROM (
        SELECT s.ns_path, s.key, max(s.score) AS score
        FROM (
            SELECT v.ns_path, v.key, -(v.embedding::vector <#> q.vec) AS score
            FROM {t.vectors} v WHERE {vscope} OFFSET 0
        ) s
        GROUP BY s.ns_path, s.key ORDER BY 3 DESC, 1, 2
    ) b
    CROSS JOIN LATERAL (
        SELECT i.value, i.created_at, i.updated_at, i.expires_at, i.ttl_minutes
        FROM {t.items} i
        WHERE i.ns_path = b.ns_path AND i.key = b.key AND {lookup_filter}
          AND {alive} OFFSET 0
    ) i
    ORDER BY b.score DESC, b.ns_path, b.key LIMIT %s
) r"""


def _unscored(
    t: Tables, request: SearchRequest, wanted: int | None, scored: int
) -> Exchange[list[Hit]]:
    """The items in scope with no vector, newest first (they rank after every scored one).

    ``wanted + scored`` rows at most: the caller drops those among them that the ranked
    statement scored (its snapshot is older, so an item may have lost its vectors since).
    """
    params: list[Any] = []
    scope = _scope(request.prefix, "i", params)
    where = filter_sql(request.filter, "i", params)
    alive = _alive(request.alive_at, "i", params)
    params.append(None if wanted is None else wanted + scored)
    rows = yield Statement(
        f"SELECT {_ITEM_COLUMNS} FROM {t.items} i WHERE {scope} AND {where} AND {alive} "
        f"AND NOT EXISTS (SELECT 1 FROM {t.vectors} v "
        "WHERE v.ns_path = i.ns_path AND v.key = i.key) "
        "ORDER BY i.updated_at DESC, i.namespace, i.key LIMIT %s",
        tuple(params),
    )
    return [Hit(_item(row), None) for row in rows]


# ---- writes ----------------------------------------------------------------------------


def write(
    t: Tables,
    upserts: Sequence[Record],
    deletes: Sequence[ItemKey],
    type_column: int | None,
    held: Sequence[tuple[int, str]] = (),
) -> Exchange[int]:
    """The batch's key locks, then its items, then its vectors (and deletes): one transaction.

    Run in one transaction (``transaction=True``), so a batch lands whole or not at all;
    rewriting the same batch gives the same rows (deterministic ids, the records' own
    timestamps). Deadlock-free by construction (see :func:`write_locks`): every writer of a
    key first takes that key's locks, in one global order, and only then writes, so each
    statement sees every earlier write of its keys; it touches only rows of its own keys,
    items before vectors. ``type_column`` (first write of a store created without ``dims``)
    types the embedding column as ``vector(n)`` (or ``halfvec(n)``, the column's own type)
    first, after the key locks (so no writer holding them waits for the column's table
    lock).

    Statements: the key locks and the table locks (the vectors table's taken with the
    items', before any row is written, as one statement naming both tables did), the item
    upsert, then one statement of CTEs deleting items and replacing vectors. The first ones
    do not wait (``Statement.wait``): in pipeline mode the server takes the locks and writes
    the items while the vectors' statement is built and sent.

    ``held``: the ``(backend pid, scope)`` locks the caller holds (``lock()``). The last
    statement also reads whether they are still held, and a lock released under its holder
    fails the write whole (:class:`LockLostError`): no round trip of its own.
    """
    for r in upserts:  # before anything is sent: the vectors are built after the items
        if (
            r.vectors is not None
            and len(r.vectors)
            and not (len(r.vectors) == len(r.texts) == len(r.paths))
        ):
            raise ValueError(
                f"Record {r.key!r} has {len(r.vectors)} vectors for {len(r.texts)} texts and "
                f"{len(r.paths)} paths: give one vector per text."
            )
    deletes = [key for key in deletes if not has_nul(key)]  # no stored item has a NUL
    paths = [ns_path(r.namespace) for r in upserts]  # each record's path, built once
    gone_paths = [ns_path(ns) for ns, _ in deletes]
    keys = list(zip(paths, [r.key for r in upserts], strict=True))
    keys += zip(gone_paths, [key for _, key in deletes], strict=True)
    if not keys:
        return 0
    locks = write_locks(t, keys)
    if type_column is not None:  # the typing lock, then the key locks, then ALTER
        yield Statement("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (t.vectors,))
    yield Statement(locks.sql, locks.params, wait=False)
    if type_column is not None:
        rows = yield Statement(_TYPMOD, (t.vectors,))
        if rows and rows[0][0] == -1:
            yield Statement(
                f"ALTER TABLE {t.vectors} ALTER COLUMN embedding "
                f"TYPE {column_type(str(rows[0][1]), type_column)}"
            )
    # the modes the writes below take; items first, as deletes (the cascade) and the TTL
    # sweeper lock them
    yield Statement(f"LOCK TABLE {t.items}, {t.vectors} IN ROW EXCLUSIVE MODE", wait=False)
    if upserts:
        params: list[Any] = []
        ctes = _upsert_items(t, upserts, paths, params)
        yield Statement(f"WITH {ctes} SELECT 1", tuple(params), wait=False)
    params = []
    ctes_list: list[str] = []
    after = ""
    if deletes:
        params.extend((gone_paths, [key for _, key in deletes]))
        ctes_list.append(
            f"gone AS (DELETE FROM {t.items} i USING unnest(%b::text[], %b::text[]) "
            "AS d(ns_path, key) WHERE i.ns_path = d.ns_path AND i.key = d.key RETURNING 1)"
        )
        # items before vectors: the vector CTEs wait for this count, so the delete has
        # run to its end before them
        ctes_list.append("items_done AS MATERIALIZED (SELECT count(*) AS done FROM gone)")
        after = " AND (SELECT done FROM items_done) >= 0"
    ctes_list.append(_replace_vectors(t, upserts, paths, deletes, gone_paths, params, after))
    counted = "(SELECT count(*) FROM gone)" if deletes else "0"
    lost = _lost_locks(t, held, params) if held else "'{}'::text[]"
    rows = yield Statement(f"WITH {', '.join(ctes_list)} SELECT {counted}, {lost}", tuple(params))
    _refuse_without(rows[0][1])  # raised in the transaction: it rolls back whole
    return int(rows[0][0])


def _upsert_items(
    t: Tables, upserts: Sequence[Record], paths: Sequence[str], params: list[Any]
) -> str:
    """Insert-or-update CTEs: ``up`` keeps an existing ``created_at``, ``restored`` sets it.

    Two of them because ``ON CONFLICT DO UPDATE`` sees only the proposed row's columns
    (``EXCLUDED``), not whether its ``created_at`` was given; the batch's keys are unique
    (see :func:`normalize_batch`), so no row is touched by both.
    """
    head = (
        f"INSERT INTO {t.items} AS t "
        "(ns_path, key, value, created_at, updated_at, expires_at, ttl_minutes) "
    )
    update = (
        "ON CONFLICT (ns_path, key) DO UPDATE SET value = EXCLUDED.value, "
        "expires_at = EXCLUDED.expires_at, ttl_minutes = EXCLUDED.ttl_minutes, "
    )
    ctes = []
    for restore in (False, True):
        picked = [i for i, r in enumerate(upserts) if (r.created_at is not None) == restore]
        if not picked:
            continue
        group = [upserts[i] for i in picked]
        params.extend(
            (
                [paths[i] for i in picked],
                [r.key for r in group],
                JsonbRows([r.value for r in group]),
                [r.now for r in group],
                [r.expires for r in group],
                [r.ttl_minutes for r in group],
            )
        )
        if not restore:
            ctes.append(
                f"up AS ({head}SELECT p, k, v, n, n, e, m FROM unnest(%b::text[], %b::text[], "
                "%b::jsonb[], %b::timestamptz[], %b::timestamptz[], %b::float8[]) "
                "AS x(p, k, v, n, e, m) "
                f"{update}updated_at = EXCLUDED.updated_at, "
                # the stored item had expired (gone, if not yet swept): created anew
                "created_at = CASE WHEN t.expires_at <= EXCLUDED.updated_at "
                "THEN EXCLUDED.created_at ELSE t.created_at END RETURNING 1)"
            )
            continue
        params.append([r.created_at for r in group])
        ctes.append(
            f"restored AS ({head}SELECT p, k, v, c, n, e, m FROM unnest(%b::text[], "
            "%b::text[], %b::jsonb[], %b::timestamptz[], %b::timestamptz[], %b::float8[], "
            "%b::timestamptz[]) AS x(p, k, v, n, e, m, c) "
            f"{update}updated_at = EXCLUDED.updated_at, created_at = EXCLUDED.created_at "
            "RETURNING 1)"
        )
    return ", ".join(ctes)


def _replace_vectors(
    t: Tables,
    upserts: Sequence[Record],
    item_paths: Sequence[str],
    deletes: Sequence[ItemKey],
    gone_paths: Sequence[str],
    params: list[Any],
    after: str,
) -> str:
    """Drop the batch's keys' vectors it does not write again, upsert the new ones.

    The vectors of deleted items are deleted here too rather than left to the foreign
    key's cascade. ``after``: a condition making both CTEs wait for the items' delete.
    """
    ids: list[bytes] = []
    texts: list[str] = []
    blocks: list[np.ndarray[Any, Any]] = []
    paths: list[str] = []
    keys: list[str] = []
    nss: list[str] = []
    for r, path_ns in zip(upserts, item_paths, strict=True):
        if r.vectors is None or not len(r.vectors):
            continue
        blocks.append(r.vectors)
        namespace, key = r.namespace, r.key
        for text, path in zip(r.texts, r.paths, strict=True):
            ids.append(vector_id_bytes(namespace, key, path))
            texts.append(text)
            paths.append(path)
            keys.append(key)
            nss.append(path_ns)
    # vectors of re-written and deleted items that this batch does not write again
    params.extend(
        (
            [*item_paths, *gone_paths],
            [r.key for r in upserts] + [key for _, key in deletes],
            UuidRows(ids),
        )
    )
    stale = (
        f"stale AS (DELETE FROM {t.vectors} v USING unnest(%b::text[], %b::text[]) "
        "AS u(ns_path, key) WHERE v.ns_path = u.ns_path AND v.key = u.key "
        f"AND NOT (v.langchain_id = ANY(%b::uuid[])){after})"
    )
    if not ids:
        return stale
    matrix = np.ascontiguousarray(np.concatenate(blocks), dtype=np.float32)
    params.extend((UuidRows(ids), texts, VectorRows(matrix), nss, keys, paths))
    return stale + (
        f", vec AS (INSERT INTO {t.vectors} "
        "(langchain_id, content, embedding, langchain_metadata, ns_path, key, path) "
        "SELECT id, c, e, json_build_object("
        "'namespace', string_to_array(left(p, -1), '.'), 'key', k, 'path', f), p, k, f "
        "FROM unnest(%b::uuid[], %b::text[], %b::vector[], %b::text[], %b::text[], "
        f"%b::text[]) AS x(id, c, e, p, k, f) WHERE TRUE{after} "
        "ON CONFLICT (langchain_id) DO UPDATE "
        "SET content = EXCLUDED.content, embedding = EXCLUDED.embedding)"
    )


# Key locks of writes: a batch of at most KEY_LOCKS keys takes, in this order, its keys'
# stripes shared and then the keys themselves exclusive; a larger batch takes its keys'
# stripes exclusive. So at most 2 * KEY_LOCKS or _STRIPES advisory locks per transaction
# (Postgres' lock table holds some 10,000 in all by default), small batches of different
# keys never wait for each other, and any two writers of one key exclude each other.
KEY_LOCKS = 128
_STRIPES = 256
_INT32 = 1 << 32
_LOWEST = -(1 << 31)  # stripes are the lowest ids, so ascending id order puts them first


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def write_locks(t: Tables, keys: Sequence[tuple[str, str]]) -> Statement:
    """Take the write locks of ``keys`` (``(ns_path, key)`` pairs) until the transaction ends.

    Transaction-level advisory locks in the two-``int4`` key space (``lock()`` and setup
    use the ``bigint`` one, so they never meet): ``(table tag, id)``, ids ascending and
    each taken once, and an id's mode is the same in every batch of its size class. Every
    writer acquires in that one global order and holds no other lock a writer waits for, so
    they cannot wait for each other in a cycle; rows are locked only under a key's locks.
    The ids come from a 64-bit hash of namespace and key: equal hashes merely share a lock.
    """
    hashes = {_hash(f"{path}\x00{key}") for path, key in keys}
    stripes = sorted({_LOWEST + h % _STRIPES for h in hashes})
    if len(hashes) > KEY_LOCKS:
        ids, shared = stripes, [False] * len(stripes)
    else:
        own = sorted({_LOWEST + _STRIPES + h % (_INT32 - _STRIPES) for h in hashes})
        ids, shared = stripes + own, [True] * len(stripes) + [False] * len(own)
    tag = _hash(t.items) % _INT32 + _LOWEST
    return Statement(
        "SELECT count(CASE WHEN s THEN pg_advisory_xact_lock_shared(%s::int4, b) "
        "ELSE pg_advisory_xact_lock(%s::int4, b) END) "
        "FROM unnest(%b::int4[], %b::bool[]) AS l(b, s)",
        (tag, tag, ids, shared),
    )


# ---- TTL -------------------------------------------------------------------------------


def touch(t: Tables, keys: Sequence[ItemKey], now: datetime) -> Exchange[None]:
    """Refresh on read: ``expires_at = now + ttl_minutes`` for alive items with a TTL.

    Rows are locked in key order and rows a writer holds are skipped (that write sets its
    own expiry), so a refresh never waits on, or deadlocks with, a concurrent write.
    """
    wanted = sorted({(ns_path(ns), key) for ns, key in keys})
    if not wanted:
        return
    yield Statement(
        f"WITH k AS (SELECT i.ns_path, i.key FROM {t.items} i "
        "JOIN unnest(%b::text[], %b::text[]) AS u(ns_path, key) "
        "ON i.ns_path = u.ns_path AND i.key = u.key "
        "WHERE i.ttl_minutes IS NOT NULL AND i.expires_at > %s "
        "ORDER BY i.ns_path, i.key FOR UPDATE OF i SKIP LOCKED) "
        f"UPDATE {t.items} i SET expires_at = %s + i.ttl_minutes * interval '1 minute' "
        "FROM k WHERE i.ns_path = k.ns_path AND i.key = k.key",
        ([p for p, _ in wanted], [k for _, k in wanted], now, now),
    )


def sweep(t: Tables, now: datetime) -> Exchange[int]:
    """Delete every item expired at ``now`` (its vectors go by cascade); how many.

    Found through the partial index on ``expires_at``; rows a writer holds are left for
    the next sweep.
    """
    rows = yield Statement(
        f"WITH doomed AS (SELECT ns_path, key FROM {t.items} "
        "WHERE expires_at IS NOT NULL AND expires_at <= %s "
        "ORDER BY ns_path, key FOR UPDATE SKIP LOCKED), "
        f"gone AS (DELETE FROM {t.items} i USING doomed d "
        "WHERE i.ns_path = d.ns_path AND i.key = d.key RETURNING 1) "
        "SELECT count(*) FROM gone",
        (now,),
    )
    return int(rows[0][0])


# ---- locks -----------------------------------------------------------------------------


def lock_key(t: Tables, scope: str) -> str:
    """The text hashed into the 64-bit advisory lock key of ``scope`` on these tables."""
    return f"{t.items}:{scope}"


def advisory_lock(t: Tables, scope: str) -> Statement:
    """Wait for and take ``scope``'s lock until the transaction ends (see ``_lock``).

    The key is ``hashtextextended('"schema"."table":' || scope, 0)``, so another tool can
    take the same lock; it never equals the keys of setup or of the vector column typing.
    The holder's transaction sits idle while it reads, decides (a resolver may call a
    model) and writes on other connections: a server's ``idle_in_transaction_session_timeout``
    and, on Postgres 17 and newer, its ``transaction_timeout`` are turned off for it, so the
    lock is not dropped under the holder. (Older servers have no ``transaction_timeout`` and
    refuse to set it: ``CASE`` sets it only where ``current_setting`` finds it, and does not
    call the volatile ``set_config`` otherwise. Turning it off mid-transaction stops the
    timer ``BEGIN`` started.)
    """
    return Statement(
        "SELECT set_config('idle_in_transaction_session_timeout', '0', true), "
        "CASE WHEN current_setting('transaction_timeout', true) IS NOT NULL "
        "THEN set_config('transaction_timeout', '0', true) END, "
        "pg_advisory_xact_lock(hashtextextended(%s, 0)), pg_backend_pid()",
        (lock_key(t, scope),),
    )


def _lost_locks(t: Tables, held: Sequence[tuple[int, str]], params: list[Any]) -> str:
    """An array of the scopes of ``held`` (``(backend pid, scope)``) no longer held.

    Read in the write's own statement, before it commits: a lock whose connection ended
    (killed, or closed by a server timeout) was released by Postgres, and another writer
    may hold it now.
    """
    params.extend(
        (
            [pid for pid, _ in held],
            [lock_key(t, scope) for _, scope in held],
            [scope for _, scope in held],
        )
    )
    return (
        "ARRAY(SELECT h.scope FROM unnest(%b::int4[], %b::text[], %b::text[]) "
        "AS h(pid, k, scope) WHERE NOT EXISTS (SELECT 1 FROM pg_locks l "
        "WHERE l.locktype = 'advisory' AND l.granted AND l.pid = h.pid AND l.objsubid = 1 "
        "AND ((l.classid::int8 << 32) | l.objid::int8) = hashtextextended(h.k, 0)))"
    )


class LockLostError(BackendError):
    """A write was refused: a lock its caller held was released under it."""


def _refuse_without(lost: Sequence[str]) -> None:
    if lost:
        raise LockLostError(
            f"The Postgres connection holding the lock of {', '.join(map(repr, lost))} "
            "ended during this call (killed, or closed by a server timeout), so Postgres "
            "released the lock and another writer may have written since. Nothing of this "
            "write was made: retry the call (it reads again)."
        )


# ---- schema ----------------------------------------------------------------------------

# the embedding column's size (-1: untyped) and type name (vector, halfvec)
_TYPMOD = (
    "SELECT a.atttypmod, ty.typname FROM pg_attribute a JOIN pg_type ty ON ty.oid = a.atttypid "
    "WHERE a.attrelid = to_regclass(%s) AND a.attname = 'embedding' AND NOT a.attisdropped"
)


VECTOR_TYPES = ("vector", "halfvec")


def check_vector_type(vector_type: str | None) -> str | None:
    """``vector_type`` if it is one we store (``None``: the table's, or ``vector``)."""
    if vector_type is not None and vector_type not in VECTOR_TYPES:
        raise ValueError(
            f"vector_type must be 'vector' (float32) or 'halfvec' (float16, half the size), "
            f"got {vector_type!r}."
        )
    return vector_type


def column_type(vector_type: str, dims: int | None) -> str:
    """The SQL type of the embedding column: ``vector``, ``halfvec(384)``, ..."""
    return vector_type if dims is None else f"{vector_type}({int(dims)})"


FACT_ROW = "content_hash IS NOT NULL AND value ? 'versions'"
"""The rows the fact-hash constraint covers: facts as the fact API writes them."""


def _migrations(
    t: Tables, dims: int | None, kind: str = "vector"
) -> list[tuple[int, str, list[str]]]:
    vector_type = column_type(kind, dims)
    return [
        (
            1,
            "items, vectors (PGVectorStore layout), scope and fact-hash indexes",
            [
                f"""CREATE TABLE IF NOT EXISTS {t.items} (
    ns_path text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    namespace text[] COLLATE "C"
        GENERATED ALWAYS AS (string_to_array(left(ns_path, -1), '.')) STORED,
    value jsonb NOT NULL,
    content_hash text COLLATE "C" GENERATED ALWAYS AS
        (CASE WHEN value ? 'content' THEN value ->> 'content_hash' END) STORED,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    CONSTRAINT {t.index("pkey")} PRIMARY KEY (ns_path, key),
    CONSTRAINT {t.index("fact_hash")} UNIQUE (ns_path, content_hash)
        DEFERRABLE INITIALLY DEFERRED
)""",
                f"""CREATE TABLE IF NOT EXISTS {t.vectors} (
    langchain_id uuid PRIMARY KEY,
    content text NOT NULL,
    embedding {vector_type} NOT NULL,
    langchain_metadata json,
    ns_path text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    path text NOT NULL,
    FOREIGN KEY (ns_path, key) REFERENCES {t.items} (ns_path, key) ON DELETE CASCADE
) WITH (toast_tuple_target = 8160)""",
                f"CREATE INDEX IF NOT EXISTS {t.index('vectors_scope')} "
                f"ON {t.vectors} (ns_path, key)",
            ],
        ),
        (
            2,
            "TTL: expires_at and ttl_minutes columns, partial index for the sweeper",
            [
                f"ALTER TABLE {t.items} ADD COLUMN IF NOT EXISTS expires_at timestamptz NULL, "
                "ADD COLUMN IF NOT EXISTS ttl_minutes double precision NULL",
                f"CREATE INDEX IF NOT EXISTS {t.index('expires_at')} ON {t.items} (expires_at) "
                "WHERE expires_at IS NOT NULL",
            ],
        ),
        (
            3,
            "fact hash: unique among facts only (a partial exclusion constraint)",
            [
                # The UNIQUE constraint indexed every item, most of them with no hash
                # (BaseStore puts): at 1M facts the item upsert of 1,000 new keys took
                # 13-15 ms with it, 7-9 without. An exclusion constraint may be partial and
                # still checked at commit (two facts may swap texts within one batch),
                # so items without a hash are no longer indexed at all.
                f"ALTER TABLE {t.items} DROP CONSTRAINT IF EXISTS {t.index('fact_hash')}, "
                f"ADD CONSTRAINT {t.index('fact_hash')} EXCLUDE USING btree "
                "(ns_path WITH =, content_hash WITH =) WHERE (content_hash IS NOT NULL) "
                "DEFERRABLE INITIALLY DEFERRED",
            ],
        ),
        (
            4,
            "fact hash: only rows in the fact layout (a plain item may carry a content_hash)",
            [
                # A plain BaseStore value may hold "content" and "content_hash" keys of its
                # own (a document store's): two such puts of one document were refused as
                # duplicate facts, which no other engine does. A fact's value always holds
                # "versions" (the fact layout; not a metadata key), so the constraint keeps
                # to those rows; exact dedup of facts holds as before.
                f"ALTER TABLE {t.items} DROP CONSTRAINT IF EXISTS {t.index('fact_hash')}, "
                f"ADD CONSTRAINT {t.index('fact_hash')} EXCLUDE USING btree "
                f"(ns_path WITH =, content_hash WITH =) WHERE ({FACT_ROW}) "
                "DEFERRABLE INITIALLY DEFERRED",
            ],
        ),
    ]


# what each of a store's tables holds: the columns that tell it from the other two
_LAYOUTS = {
    "": ("items", frozenset({"ns_path", "key", "value", "created_at"})),
    "_vectors": ("vectors", frozenset({"langchain_id", "embedding", "ns_path", "key"})),
    "_schema": ("schema versions", frozenset({"version", "description", "applied_at"})),
}


def _layout_of(kind: str, columns: Sequence[str]) -> tuple[str, str] | None:
    """``(suffix, what)`` of the store table whose layout ``columns`` has (None: none)."""
    if kind not in ("r", "p"):  # a view, an index, a sequence...
        return None
    for suffix, (what, needed) in _LAYOUTS.items():
        if needed <= set(columns) and (suffix == "_vectors") == ("embedding" in columns):
            return suffix, what
    return None


def _check_layouts(t: Tables) -> Exchange[None]:
    """Raise ValueError if a relation bearing one of ``t``'s names is not that table.

    One store's names are another's with a suffix (``table="x"`` keeps its vectors in
    ``x_vectors``, the items of ``table="x_vectors"``): setup would reuse the other store's
    table (``CREATE TABLE IF NOT EXISTS``) and fail on it halfway, or worse.
    """
    names = {t.items: "", t.vectors: "_vectors", t.versions: "_schema"}
    rows = yield Statement(
        "SELECT r.name, c.relkind::text, ARRAY(SELECT a.attname::text FROM pg_attribute a "
        "WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) "
        "FROM unnest(%s::text[]) AS r(name) JOIN pg_class c ON c.oid = to_regclass(r.name)",
        (list(names),),
    )
    for name, kind, columns in rows:
        suffix = names[name]
        found = _layout_of(str(kind), list(columns))
        if found is not None and found[0] == suffix:
            continue
        qualified = name.rsplit(".", 1)[-1].strip('"')
        if found is None:
            what = "a table of something else" if kind in ("r", "p") else "not a table"
        else:
            owner = qualified[: len(qualified) - len(found[0])]
            what = f"the {found[1]} table of the store with table={owner!r}"
        raise ValueError(
            f"Cannot use table={t.table!r}: its {_LAYOUTS[suffix][0]} table would be {name}, "
            f"which exists and is {what}. A store keeps its data in the tables {{table}}, "
            "{table}_vectors and {table}_schema, so two stores whose names differ by one of "
            "those suffixes collide. Open this store with another table name (nothing was "
            "created or changed)."
        )


def setup(
    t: Tables, dims: int | None, vector_type: str | None = None
) -> Exchange[tuple[int | None, str]]:
    """Create or migrate the schema (idempotent, serialized); the vectors' size and type.

    A new table gets ``vector_type`` (``None``: ``vector``); an existing one keeps its own,
    and asking for the other raises ``ValueError`` naming the migration.
    """
    yield Statement("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (_SETUP_LOCK,))
    yield from _check_layouts(t)
    yield Statement("CREATE EXTENSION IF NOT EXISTS vector")
    yield Statement(f'CREATE SCHEMA IF NOT EXISTS "{t.schema}"')
    yield Statement(
        f"CREATE TABLE IF NOT EXISTS {t.versions} (version integer PRIMARY KEY, "
        "description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
    )
    rows = yield Statement(f"SELECT coalesce(max(version), 0) FROM {t.versions}")
    current = int(rows[0][0])
    if current > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"Table {t.items} has schema version {current}, newer than this langchain-ltm "
            f"understands ({SCHEMA_VERSION}). Upgrade langchain-ltm."
        )
    if current:  # the record says the tables exist: a table dropped since cannot be used
        rows = yield Statement(
            "SELECT to_regclass(%s) IS NULL, to_regclass(%s) IS NULL", (t.items, t.vectors)
        )
        missing = [name for name, gone in zip((t.items, t.vectors), rows[0], strict=True) if gone]
        if missing:
            raise BackendError(
                f"Table {' and '.join(missing)} is missing, though {t.versions} records schema "
                f"version {current}: it was dropped behind the store's back. Restore it from a "
                f"backup, or drop {t.versions} and what is left of the store's tables to start "
                "afresh (PostgresBackend.drop())."
            )
    for version, description, statements in _migrations(t, dims, vector_type or "vector"):
        if version <= current:
            continue
        for sql in statements:
            yield Statement(sql)
        yield Statement(
            f"INSERT INTO {t.versions} (version, description) VALUES (%s, %s)",
            (version, description),
        )
    rows = yield Statement(_TYPMOD, (t.vectors,))
    kind = str(rows[0][1])
    if vector_type is not None and kind != vector_type:
        raise ValueError(
            f"Table {t.vectors} stores its embeddings as {kind}, not {vector_type}: open it "
            f"with vector_type={kind!r} (or None), or convert it first with "
            f"PostgresBackend.migrate_vector_type({vector_type!r})."
        )
    stored = int(rows[0][0]) if rows[0][0] != -1 else None
    if dims is not None and stored is None:
        yield Statement(
            f"ALTER TABLE {t.vectors} ALTER COLUMN embedding TYPE {column_type(kind, dims)}"
        )
        stored = dims
    return stored, kind


def create_hnsw_index(t: Tables, m: int, ef_construction: int) -> Exchange[None]:
    """An HNSW index (cosine) with the operator class of the column's type."""
    rows = yield Statement(_TYPMOD, (t.vectors,))
    vector_type = str(rows[0][1])
    yield Statement(
        f"CREATE INDEX IF NOT EXISTS {t.index('vectors_hnsw')} ON {t.vectors} "
        f"USING hnsw (embedding {vector_type}_cosine_ops) "
        f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)})"
    )


def drop(t: Tables) -> Exchange[None]:
    yield Statement(f"DROP TABLE IF EXISTS {t.vectors}, {t.items}, {t.versions}")


class SchemaVersionError(BackendError):
    """The tables were created by a newer release of langchain-ltm."""
