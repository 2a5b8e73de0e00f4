"""The Postgres engine's reads: items by key, counts, namespaces, and exact ranked search.

Exchanges (see ``_sql``): I/O-free generators of statements, driven by ``_drive``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np

from langchain_ltm.backends.base import (
    Hit,
    ItemKey,
    ListRequest,
    SearchRequest,
    StoredItem,
)
from langchain_ltm.backends.postgres._sql import (
    Exchange,
    Statement,
    Tables,
    alive_sql,
    filter_sql,
    has_nul,
    namespace_of,
    ns_path,
    scope_sql,
)

_UTC = timezone.utc
ITEM_COLUMNS = "i.ns_path, i.key, i.value, i.created_at, i.updated_at, i.expires_at, i.ttl_minutes"


def utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is _UTC else moment.astimezone(_UTC)


def item_of(row: Sequence[Any], at: int = 0) -> StoredItem:
    return _stored(None, *row[at : at + 7])


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
        f"SELECT {ITEM_COLUMNS} FROM {t.items} i "
        "JOIN unnest(%b::text[], %b::text[]) AS k(ns_path, key) "
        "ON i.ns_path = k.ns_path AND i.key = k.key",
        asked,
    )
    found = {(row[0], row[1]): item_of(row) for row in rows}
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
        f"SELECT count(*) FROM {t.items} i WHERE {scope_sql(prefix, 'i', params)}", tuple(params)
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
        where.append(alive_sql(request.alive_at, "i", params))
    for match_type, path in request.conditions:
        if not path:
            continue
        if match_type == "prefix" and "*" not in path:
            where.append(scope_sql(path, "i", params))
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
    scope = scope_sql(request.prefix, "i", params)
    where = filter_sql(request.filter, "i", params)
    alive = alive_sql(request.alive_at, "i", params)
    params.extend((request.limit, request.offset))
    rows = yield Statement(
        f"SELECT {ITEM_COLUMNS} FROM {t.items} i WHERE {scope} AND {where} AND {alive} "
        "ORDER BY i.updated_at DESC, i.namespace, i.key LIMIT %s OFFSET %s",
        tuple(params),
    )
    return [Hit(item_of(row), None) for row in rows]


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
    vscope = scope_sql(request.prefix, "v", params)
    params.append(wanted)
    lookup_filter = filter_sql(request.filter, "i", params)
    lookup_alive = alive_sql(request.alive_at, "i", params)
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
    vscope = scope_sql(request.prefix, "v", params)
    lookup_filter = filter_sql(request.filter, "i", params)
    lookup_alive = alive_sql(request.alive_at, "i", params)
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
        namespace = namespace_of(path)
        if spaces is not None:
            spaces[path] = namespace
    return StoredItem(
        namespace,
        key,
        value,
        utc(created),
        utc(updated),
        utc(expires) if expires is not None else None,
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
    scope = scope_sql(request.prefix, "i", params)
    where = filter_sql(request.filter, "i", params)
    alive = alive_sql(request.alive_at, "i", params)
    params.append(None if wanted is None else wanted + scored)
    rows = yield Statement(
        f"SELECT {ITEM_COLUMNS} FROM {t.items} i WHERE {scope} AND {where} AND {alive} "
        f"AND NOT EXISTS (SELECT 1 FROM {t.vectors} v "
        "WHERE v.ns_path = i.ns_path AND v.key = i.key) "
        "ORDER BY i.updated_at DESC, i.namespace, i.key LIMIT %s",
        tuple(params),
    )
    return [Hit(item_of(row), None) for row in rows]
