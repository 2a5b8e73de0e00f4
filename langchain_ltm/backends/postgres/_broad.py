"""Broad-scope search on Postgres: an HNSW iterative scan when the scope is large.

A search whose prefix covers many users (``store.search(("memories",), query=...)``)
scores every vector in scope on the exact plan, which grows with the table. When the
vectors table has an HNSW index and the planner's own statistics prove the scope holds at
least :data:`BROAD_MIN_ROWS` vectors, the search walks that index instead with pgvector
0.8's iterative scan, the scope, filter and TTL applied to each vector as it comes, and
re-ranks the candidates by their exact score. The decision is made here, from a cached
copy of ``pg_stats`` (refreshed every :data:`STATS_TTL` seconds), so it costs per-user
searches no round trip, and it only ever errs towards the exact plan:

- the estimate is a *lower bound*: only histogram buckets lying wholly inside the scope,
  plus the most common values in it, count. A per-user prefix inside one bucket counts 0,
  whatever the table's size, so the per-user plan stays the pinned exact one; a request
  marked ``one_user`` (the store's searches of one user's namespace) is never walked, even
  for a user among the most common values;
- whenever the index walk gathers fewer candidates than it re-ranks, or gives fewer
  items than a quarter of them (a rare filter, more
  than ``hnsw.max_scan_tuples`` tuples visited, items with several texts), the exact
  statement runs instead, in the same transaction, so ``limit`` is filled as before;
- pages of one size are slices of one ranking (:func:`search`), so paging a broad search
  neither repeats nor skips an item.

The walk's ``hnsw.ef_search`` is the backend's ``broad_ef_search`` when set, else the
value a calibration (``_calibrate``) measured on the current index, else
:data:`EF_SEARCH`. A calibration is kept as the index's own comment (JSON, see
:func:`calibration_of`), read with the statistics: ``pg_description`` is readable by every
role, the comment dies with the index, and it names the oid and file node it measured, so
a rebuilt graph (``REINDEX``, ``VACUUM FULL``) no longer takes it. Reading it never fails a
search: a comment that is not ours, or not valid, is no calibration.

I/O-free like ``_sql``: :func:`stats` and :func:`search` are exchanges.
"""

from __future__ import annotations

import itertools
import json
import time
from bisect import bisect_left
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from langchain_ltm.backends.base import Hit, SearchRequest
from langchain_ltm.backends.postgres import _reads
from langchain_ltm.backends.postgres import _sql as sql

BROAD_MIN_ROWS = 50_000
"""Scope size (vectors, lower bound) from which a search may walk an HNSW index."""
STATS_TTL = 60.0
"""Seconds a copy of the scope statistics is used before it is read again."""
MAX_WANTED = 100
"""Largest ``limit`` served through the index (larger: exact; ``hnsw.ef_search`` stops at
1,000 candidates, and a walk takes four a result)."""
EF_SEARCH = 200
"""``hnsw.ef_search`` of the index walk, and the least number of candidates taken."""
CALIBRATION_MARK = ("langchain_ltm", "broad_search")
"""Key and value that mark an index comment as our calibration (:mod:`._calibrate`)."""
MAX_SCAN_TUPLES = 40_000
"""``hnsw.max_scan_tuples``: tuples the iterative scan visits before it gives up."""

UNIT_TOLERANCE = 1e-3
"""How far from 1 a sampled vector's length may be for a cosine index to be walked."""

# operator classes whose order is our score's (inner product) or, for unit vectors, cosine
_OPERATORS = {
    "vector_ip_ops": "<#>",
    "halfvec_ip_ops": "<#>",
    "vector_cosine_ops": "<=>",
    "halfvec_cosine_ops": "<=>",
}


@dataclass(frozen=True, slots=True)
class ScopeStats:
    """What the planner knows of the vectors table's ``ns_path`` and its HNSW index."""

    rows: float
    bounds: tuple[str, ...]
    common: tuple[tuple[str, float], ...]
    operator: str | None  # the usable HNSW index's ordering operator, None: no index
    read_at: float
    index_oid: int | None = None  # that index's oid
    index_node: int | None = None  # and its relfilenode (a REINDEX changes it, not the oid)
    index_comment: str | None = None  # the index's comment, as read
    calibrated_ef: int | None = None  # ef_search a calibration of that very index chose
    # bisection tables, derived from the fields above: every search with an HNSW index
    # present asks for a lower bound, and scanning ~100 bounds and ~100 common values in
    # Python cost 9.3 us of it per search (1.3 us bisected; 101 bounds, 100 common values)
    _sorted_bounds: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _common_values: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _common_sums: tuple[float, ...] = field(init=False, repr=False, compare=False)
    _rest: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        common = sorted(self.common)
        object.__setattr__(self, "_sorted_bounds", tuple(sorted(self.bounds)))
        object.__setattr__(self, "_common_values", tuple(value for value, _ in common))
        object.__setattr__(self, "_common_sums", (0.0, *itertools.accumulate(f for _, f in common)))
        object.__setattr__(self, "_rest", max(0.0, 1.0 - sum(f for _, f in self.common)))

    def lower_bound(self, prefix: tuple[str, ...]) -> float:
        """Vectors under ``prefix`` at least (as of the last ``ANALYZE``)."""
        if not prefix:
            return self.rows
        low = sql.ns_path(prefix)
        high = low[:-1] + "/"
        values, sums = self._common_values, self._common_sums
        common = sums[bisect_left(values, high)] - sums[bisect_left(values, low)]
        rows = common * self.rows
        bounds = self._sorted_bounds
        if len(bounds) > 1:
            inside = bisect_left(bounds, high) - bisect_left(bounds, low)
            rows += max(inside - 1, 0) / (len(bounds) - 1) * self._rest * self.rows
        return rows

    def fresh(self, now: float) -> bool:
        return now - self.read_at < STATS_TTL


def wants_index(
    stats: ScopeStats | None, request: SearchRequest, min_rows: int | None
) -> bool | None:
    """Whether ``request`` walks the HNSW index; ``None``: read the statistics first."""
    if request.vectors is None or not request.limit or min_rows is None or request.one_user:
        return False  # limit 0 asks for nothing: no walk (its answer check reads a row)
    if request.limit > MAX_WANTED:
        return False
    if stats is None or not stats.fresh(time.monotonic()):
        return None
    return stats.operator is not None and stats.lower_bound(request.prefix) >= min_rows


def stats(t: sql.Tables) -> sql.Exchange[ScopeStats]:
    """Read the vectors table's size, ``ns_path`` histogram and usable HNSW index.

    Only with pgvector 0.8 or newer (iterative scans). An inner-product index orders as
    our score does; a cosine one only for unit vectors, so it counts only if the first
    1,000 stored vectors have length 1 (to :data:`UNIT_TOLERANCE`; halfvec rounding stays
    well inside it).
    """
    rows = yield sql.Statement(
        "SELECT c.reltuples, s.histogram_bounds::text::text[], "
        "s.most_common_vals::text::text[], s.most_common_freqs "
        "FROM pg_class c LEFT JOIN pg_stats s ON s.schemaname = %s AND s.tablename = %s "
        "AND s.attname = 'ns_path' WHERE c.oid = to_regclass(%s)",
        (t.schema, t.vectors_name, t.vectors),
    )
    indexes = yield sql.Statement(
        "SELECT o.opcname, ic.oid, ic.relfilenode, obj_description(ic.oid, 'pg_class') "
        "FROM pg_index x "
        "JOIN pg_class ic ON ic.oid = x.indexrelid JOIN pg_am am ON am.oid = ic.relam "
        "JOIN pg_opclass o ON o.oid = x.indclass[0] "
        "JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = x.indkey[0] "
        "WHERE x.indrelid = to_regclass(%s) AND am.amname = 'hnsw' AND x.indnatts = 1 "
        "AND x.indpred IS NULL AND x.indisvalid AND a.attname = 'embedding' "
        "ORDER BY o.opcname LIKE '%%_ip_ops' DESC, ic.relname",
        (t.vectors,),
    )
    usable = [r for r in indexes if r[0] in _OPERATORS]
    operators = [_OPERATORS[r[0]] for r in usable]
    version = yield sql.Statement("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    if not version or version[0][0] is None or _version(str(version[0][0])) < (0, 8):
        operators = []  # no iterative scan before pgvector 0.8: always exact
    if operators and operators[0] == "<=>":
        # cosine orders as our inner-product score only for unit vectors: look at some
        norms = yield sql.Statement(
            "SELECT max(abs(vector_norm(s.embedding::vector) - 1)) "
            f"FROM (SELECT embedding FROM {t.vectors} LIMIT 1000) s"
        )
        if norms[0][0] is None or float(norms[0][0]) > UNIT_TOLERANCE:
            operators = []
    operator = operators[0] if operators else None
    index_oid = index_node = comment = calibrated = None
    if operator is not None:
        index_oid, index_node = int(usable[0][1]), int(usable[0][2])
        comment = None if usable[0][3] is None else str(usable[0][3])
        calibrated = calibrated_ef(calibration_of(comment), index_oid, index_node)
    if not rows:
        return ScopeStats(0.0, (), (), None, time.monotonic())
    reltuples, bounds, common, freqs = rows[0]
    return ScopeStats(
        rows=max(float(reltuples), 0.0),
        bounds=tuple(bounds or ()),
        common=tuple(zip(common or (), (float(f) for f in freqs or ()), strict=True)),
        operator=operator,
        read_at=time.monotonic(),
        index_oid=index_oid,
        index_node=index_node,
        index_comment=comment,
        calibrated_ef=calibrated,
    )


def calibration_of(comment: str | None) -> dict[str, Any] | None:
    """The calibration an index comment holds, or ``None`` (no comment, or not ours).

    Ours is a JSON object carrying :data:`CALIBRATION_MARK`; anything else (the
    application's own comment, text that is not JSON) is no calibration, never an error.
    """
    if not comment:
        return None
    try:
        saved = json.loads(comment)
    except (ValueError, RecursionError):
        return None
    key, mark = CALIBRATION_MARK
    if not isinstance(saved, dict) or saved.get(key) != mark:
        return None
    return saved


def calibrated_ef(saved: object, index_oid: int, index_node: int) -> int | None:
    """The ``ef_search`` a stored calibration chose, if it measured this very graph.

    A calibration names the index it walked by oid and file node: ``REINDEX`` keeps the
    oid (and the comment) but builds a new graph in a new file node, ``REINDEX
    CONCURRENTLY`` moves the comment to a new oid. Either way the value no longer applies
    and the default does until the next calibration.
    """
    if not isinstance(saved, dict):
        return None
    if saved.get("index_oid") != index_oid or saved.get("relfilenode") != index_node:
        return None
    ef = saved.get("ef_search")
    if isinstance(ef, bool) or not isinstance(ef, int) or not 1 <= ef <= 1000:
        return None
    return ef


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for part in text.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def check_ef_search(value: object, what: str = "broad_ef_search") -> int:
    """``value`` as an ``hnsw.ef_search`` (pgvector takes 1 to 1,000), or ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1000:
        raise ValueError(
            f"{what} must be an int from 1 to 1000 (pgvector's hnsw.ef_search), got {value!r}."
        )
    return value


def ef_search_of(explicit: object, stats: ScopeStats | None) -> int:
    """The walk's ``ef_search``: the one set on the backend, else the calibrated one."""
    if explicit is not None:
        return check_ef_search(explicit)
    if stats is not None and stats.calibrated_ef is not None:
        return stats.calibrated_ef
    return EF_SEARCH


def search(
    t: sql.Tables,
    request: SearchRequest,
    operator: str,
    vector_type: str | None,
    ef_search: int = EF_SEARCH,
) -> sql.Exchange[list[list[Hit]]]:
    """Walk the HNSW index per query row; the exact statement if it cannot fill ``limit``.

    Every page of one page size is a slice of one ranking, so paging neither repeats nor
    skips an item: the walk's best quarter of its candidates (their number depends on the
    page size, never on the offset), then the tiers of :func:`_deeper`. A page inside
    that quarter costs one walk. (The candidates grew with ``offset + limit``, so each
    page re-ranked another set: pages repeated items and skipped others.)

    Run in a transaction: the ``SET LOCAL``s end with it.
    """
    assert request.limit is not None
    head = max(ef_search, 4 * request.limit) // 4
    if request.offset + request.limit > head:
        return (yield from _deeper(t, request, operator, vector_type, ef_search, head))
    walked = yield from walk(t, request, operator, vector_type, ef_search)
    if walked is None:
        return (yield from _reads.search(t, request))
    return walked


def walk(
    t: sql.Tables,
    request: SearchRequest,
    operator: str,
    vector_type: str | None,
    ef_search: int = EF_SEARCH,
) -> sql.Exchange[list[list[Hit]] | None]:
    """The index walk of :func:`search` for a page within its head; ``None``: it fell short.

    It walks ``max(ef_search, 4 * limit)`` candidates per query row. ``None`` when a walk
    gathered fewer candidates than that, or fewer items than a quarter of them (the walk
    stopped early: ``hnsw.max_scan_tuples``, a rare filter, or a scope smaller than the
    candidates), so they need not be the best ones: :func:`search` then runs the exact
    plan, and a calibration refuses to count it as the walk's recall.
    """
    assert request.vectors is not None
    assert request.limit is not None
    wanted = request.offset + request.limit
    candidates = max(ef_search, 4 * request.limit)
    head = candidates // 4
    assert wanted <= head, "pages past the head go through _deeper"
    settings = (
        ("hnsw.iterative_scan", "relaxed_order"),
        ("hnsw.ef_search", str(candidates)),
        ("hnsw.max_scan_tuples", str(MAX_SCAN_TUPLES)),
        # plan for the bound values: a generic plan does not know the scope is broad
        ("plan_cache_mode", "force_custom_plan"),
    )
    yield sql.Statement(
        "SELECT " + ", ".join("set_config(%s, %s, true)" for _ in settings),
        tuple(part for pair in settings for part in pair),
    )
    cast = "::halfvec" if vector_type == "halfvec" else ""
    out: list[list[Hit]] = []
    for row in request.vectors:
        query = np.ascontiguousarray(row, dtype=np.float32)
        params: list[Any] = [query]
        vscope = sql.scope_sql(request.prefix, "v", params)
        where = sql.filter_sql(request.filter, "i", params)
        alive = sql.alive_sql(request.alive_at, "i", params)
        params.extend((query, candidates, head))  # every page ranks the same head
        # relaxed_order: the walk is roughly in index order; candidates are re-ranked by
        # their exact score (best text per item) before the limit
        rows = yield sql.Statement(
            f"""
WITH c AS MATERIALIZED (
    SELECT v.ns_path, v.key, -(v.embedding::vector <#> %b::vector) AS score
    FROM {t.vectors} v JOIN {t.items} i ON i.ns_path = v.ns_path AND i.key = v.key
    WHERE {vscope} AND {where} AND {alive}
    ORDER BY v.embedding {operator} %b::vector{cast} LIMIT %s
), best AS (
    SELECT ns_path, key, max(score) AS score FROM c GROUP BY ns_path, key
    ORDER BY score DESC, ns_path, key LIMIT %s
)
SELECT b.score, (SELECT count(*) FROM c), {_reads.ITEM_COLUMNS} FROM best b
JOIN {t.items} i ON i.ns_path = b.ns_path AND i.key = b.key
ORDER BY b.score DESC, b.ns_path, b.key""",
            tuple(params),
        )
        # fewer candidates than asked for: the walk stopped early (max_scan_tuples, a rare
        # filter) or the scope is small, so they need not be the best ones: the exact plan
        if len(rows) < head or rows[0][1] < candidates:
            return None
        out.append([Hit(_reads.item_of(r, 2), float(r[0])) for r in rows][request.offset : wanted])
    return out


def _deeper(
    t: sql.Tables,
    request: SearchRequest,
    operator: str,
    vector_type: str | None,
    ef_search: int,
    head: int,
) -> sql.Exchange[list[list[Hit]]]:
    """A page past the walk's ``head`` results, from one ranking in three tiers.

    The first pages' walk (its best ``head``), then a wider walk's items not among them up
    to :data:`MAX_WANTED` (``4 x MAX_WANTED`` candidates, whatever the page), then every
    other item in exact order. Each tier leaves out what the earlier ones hold, and none
    depends on the offset, so pages neither repeat nor skip an item. A page within
    ``MAX_WANTED`` costs two walks (the exact statement over a broad scope took 30 times
    as long at 300k facts); a deeper one the exact statement too.
    """
    assert request.limit is not None
    wanted = request.offset + request.limit
    wider = max(ef_search, 4 * MAX_WANTED)
    # the same walk as the first pages' (its candidates depend on ef_search and head only)
    tiers = yield from search(
        t, replace(request, offset=0, limit=head), operator, vector_type, ef_search
    )
    reached = head
    if head < wider // 4:
        reached = wider // 4
        more = yield from search(
            t, replace(request, offset=0, limit=reached), operator, vector_type, wider
        )
        tiers = [_after(first, ranked, reached) for first, ranked in zip(tiers, more, strict=True)]
    if wanted > reached:
        exact = yield from _reads.search(t, replace(request, offset=0, limit=wanted))
        tiers = [_after(first, ranked, wanted) for first, ranked in zip(tiers, exact, strict=True)]
    return [column[request.offset : wanted] for column in tiers]


def _after(first: list[Hit], ranked: list[Hit], size: int) -> list[Hit]:
    """``first``, then the items of ``ranked`` not in it, ``size`` items at most."""
    seen = {(hit.item.namespace, hit.item.key) for hit in first}
    rest = [hit for hit in ranked if (hit.item.namespace, hit.item.key) not in seen]
    return [*first, *rest][:size]
