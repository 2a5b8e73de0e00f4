"""Calibrating the broad-scope walk: the least ``ef_search`` that meets a recall target.

An HNSW graph's quality varies from build to build (pgvector builds in parallel and draws
each node's level at random): at 1M clustered facts four builds of the same rows gave
recall@10 from 0.70 to 0.99 at one ``ef_search``. So instead of trusting a fixed value,
:func:`calibrate` measures the index that is there: it takes query vectors (by default
stored ones moved off the graph, :func:`off_graph`), computes their exact top ``k``, walks
the index with rising ``ef_search`` until the mean recall less one standard error reaches
the target at search limit ``k`` and at :data:`SMALL_LIMIT` (the value serves every limit
up to ``k``), and stores the value chosen as the index's comment (JSON naming the
index's oid and file node, ``COMMENT ON INDEX``: only the index's owner can). Every
process reads it with the scope statistics (``_broad.stats``), and only for that very
graph: a dropped, rebuilt or reindexed index falls back to the default until calibrated
again. No table of ours holds it, so no role that can search lacks the right to read it.
Only walks count: a ``prefix`` whose searches run the exact plan (too small for
``broad_min_rows``, or a walk that gathers too few candidates) is refused, not measured.

I/O-free like ``_sql``: :func:`calibrate` is one exchange, run in one transaction.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

import numpy as np

from langchain_ltm.backends.base import SearchRequest
from langchain_ltm.backends.postgres import _broad, _reads
from langchain_ltm.backends.postgres import _sql as sql
from langchain_ltm.errors import RecallTargetError

LADDER = (40, 60, 80, 100, 150, 200, 250, 300, 400, 500, 600, 800, 1000)
"""The ``ef_search`` values tried, in order, up to the largest one asked for."""
MAX_QUERIES = 1_000
"""Most query vectors a calibration takes."""
SAMPLE_COSINE = 0.9
"""Cosine between a sampled stored vector and the query made from it (:func:`off_graph`)."""
EXACT_OVERFETCH = 4
"""Vectors read per wanted item for the exact answers (items can have several texts)."""
SMALL_LIMIT = 10
"""The search limit measured besides ``k`` (LangGraph's default ``limit``).

A search of limit ``L`` walks ``max(ef_search, 4 * L)`` candidates (``_broad.search``), so
every limit up to ``ef_search / 4`` walks the same ``ef_search`` candidates, the fewest a
search ever walks, while a limit of ``k`` walks at least ``4 * k``. Measured at ``k``
alone, every ``ef_search`` below ``4 * k`` walked those ``4 * k``: the first step passed
and was stored for every search (calibrated with ``k=100``: 40, and limit-10 searches got
recall@10 0.670 against a target of 0.95).
"""


@dataclass(frozen=True, slots=True)
class CalibrationStep:
    """What one ``ef_search`` gave over the calibration queries."""

    ef_search: int
    recall: float
    """Mean recall@k against the exact answers."""
    min_recall: float
    """The worst query's recall@k."""
    p50_ms: float
    """Median time of one walk (statement round trip included)."""
    stderr: float = 0.0
    """Standard error of ``recall`` (misses are often whole: a walk that strays from the
    query's region finds none of its answers)."""
    limit: int = 0
    """The search limit these figures were measured at: of those measured (``k`` and
    :data:`SMALL_LIMIT`, when ``k`` is larger), the one with the lowest ``lower_recall``."""
    fallbacks: int = 0
    """Queries whose walk fell short, answered (and counted) as the search answers them:
    on the exact plan. A step where most did is refused (``ValueError``)."""

    @property
    def lower_recall(self) -> float:
        """``recall`` less one standard error: what a step must bring to the target."""
        return self.recall - self.stderr


@dataclass(frozen=True, slots=True)
class BroadCalibration:
    """The result of :meth:`PostgresBackend.calibrate_broad_search`.

    ``ef_search`` is the value chosen (and stored, unless ``persist=False``); ``steps``
    has every value tried, the last one being the chosen one (or the largest tried, when
    the target was not reached).
    """

    ef_search: int
    target_recall: float
    recall: float
    k: int
    queries: int
    prefix: tuple[str, ...]
    index_oid: int
    index_node: int
    """The index's ``relfilenode`` when measured (``REINDEX`` changes it, not the oid)."""
    rows: float
    exact_p50_ms: float
    steps: tuple[CalibrationStep, ...]

    @property
    def reached(self) -> bool:
        """Whether the chosen step's recall, less one standard error, meets the target."""
        return bool(self.steps) and self.steps[-1].lower_recall >= self.target_recall

    def as_json(self) -> dict[str, Any]:
        """The record stored as the index's comment."""
        key, mark = _broad.CALIBRATION_MARK
        return {
            key: mark,
            "ef_search": self.ef_search,
            "index_oid": self.index_oid,
            "relfilenode": self.index_node,
            "target_recall": self.target_recall,
            "recall": round(self.recall, 4),
            "k": self.k,
            "queries": self.queries,
            "prefix": list(self.prefix),
            "rows": self.rows,
            "steps": [
                [s.ef_search, round(s.recall, 4), round(s.stderr, 4), round(s.p50_ms, 3), s.limit]
                for s in self.steps
            ],
            "calibrated_at": datetime.now(timezone.utc).isoformat(),
        }


def check_args(
    target_recall: object, samples: object, k: object, max_ef_search: object
) -> tuple[float, int, int, int]:
    """The arguments of a calibration, checked before any I/O (``ValueError`` if bad)."""
    if (
        isinstance(target_recall, bool)
        or not isinstance(target_recall, (int, float))
        or not 0.0 < float(target_recall) <= 1.0
    ):
        raise ValueError(
            f"target_recall must be a number in (0, 1], e.g. 0.95; got {target_recall!r}."
        )
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= MAX_QUERIES:
        raise ValueError(f"samples must be an int from 1 to {MAX_QUERIES}, got {samples!r}.")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= _broad.MAX_WANTED:
        raise ValueError(
            f"k must be an int from 1 to {_broad.MAX_WANTED} (larger searches are exact), "
            f"got {k!r}."
        )
    ef = _broad.check_ef_search(max_ef_search, "max_ef_search")
    return float(target_recall), samples, k, ef


def check_queries(queries: object, dims: int | None) -> np.ndarray | None:
    """Given query vectors as a ``(n, dims)`` float32 array, or ``ValueError``."""
    if queries is None:
        return None
    try:
        array = np.asarray(queries, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"queries must be a 2-d array of numbers: {exc}") from exc
    if array.ndim != 2 or not 1 <= array.shape[0] <= MAX_QUERIES or array.shape[1] < 1:
        raise ValueError(
            f"queries must be a 2-d array of 1 to {MAX_QUERIES} vectors, got shape {array.shape}."
        )
    if dims is not None and array.shape[1] != dims:
        raise ValueError(f"queries have {array.shape[1]} dimensions, the table {dims}.")
    if not np.isfinite(array).all():
        raise ValueError("queries hold NaN or infinite values.")
    norms = np.linalg.norm(array, axis=1)
    if (norms == 0).any():
        raise ValueError("queries hold a zero vector (it has no direction to search).")
    return np.ascontiguousarray(array)


def calibrate(
    t: sql.Tables,
    prefix: tuple[str, ...],
    queries: np.ndarray | None,
    *,
    samples: int,
    k: int,
    target_recall: float,
    max_ef_search: int,
    vector_type: str | None,
    persist: bool,
    min_rows: int | None = None,
) -> sql.Exchange[BroadCalibration]:
    """Measure recall per ``ef_search`` (see the module) and store the least that works.

    Each step walks every query at limit ``k`` and, when ``k`` is larger, at
    :data:`SMALL_LIMIT` too (recall@limit of each), and passes only if both reach the
    target: the value stored serves searches of any limit up to ``k``.

    Raises :class:`RecallTargetError`, with the measurements, when none reaches
    ``target_recall``; ``ValueError`` when the scope would not be walked by a search
    (a ``prefix`` that the statistics do not prove holds ``min_rows`` vectors) or a walk
    fell back to the exact plan: its recall would be the exact plan's, not the index's.
    """
    stats = yield from _broad.stats(t)
    if stats.operator is None or stats.index_oid is None:
        raise ValueError(
            f"{t.vectors} has no HNSW index a broad search can walk (pgvector 0.8 or newer, "
            "and create_hnsw_index(), or vector_ip_ops for vectors that are not unit length): "
            "create one, then calibrate."
        )
    operator, index_oid = stats.operator, stats.index_oid
    if persist:
        yield from _check_can_store(stats)
    if queries is None:
        params: list[Any] = []
        scope = sql.scope_sql(prefix, "v", params)
        params.append(samples)
        rows = yield sql.Statement(
            f"SELECT v.embedding::vector::real[] FROM {t.vectors} v WHERE {scope} "
            "ORDER BY random() LIMIT %s",
            tuple(params),
        )
        if not rows:
            raise ValueError(f"No vectors under {prefix!r} to calibrate with.")
        queries = off_graph(np.asarray([row[0] for row in rows], dtype=np.float32))
    _check_walked(prefix, stats, min_rows)

    exact: list[list[str]] = []
    exact_times: list[float] = []
    for query in queries:
        began = time.perf_counter()
        exact.append((yield from _exact_keys(t, prefix, query, k)))
        exact_times.append(time.perf_counter() - began)
    if any(len(keys) < k for keys in exact):
        raise ValueError(
            f"The scope {prefix!r} holds fewer than k={k} items with vectors: a broad-scope "
            "walk needs more; calibrate on a larger scope or with a smaller k."
        )

    steps: list[CalibrationStep] = []
    limits = sorted({min(k, SMALL_LIMIT), k})
    # (limit, candidates walked) -> that walk's step: below 4 * limit every ef_search walks
    # the same 4 * limit candidates (and a walk is deterministic), so it is measured once
    walked: dict[tuple[int, int], CalibrationStep] = {}
    for ef in [e for e in LADDER if e < max_ef_search] + [max_ef_search]:
        measured = []
        for limit in limits:
            known = walked.get((limit, max(ef, 4 * limit)))
            if known is None:
                known = yield from _measure(
                    t, prefix, queries, exact, limit, operator, vector_type, ef
                )
                walked[limit, max(ef, 4 * limit)] = known
            measured.append(replace(known, ef_search=ef))
        steps.append(min(measured, key=lambda step: step.lower_recall))
        if steps[-1].lower_recall >= target_recall:
            break
    result = BroadCalibration(
        ef_search=steps[-1].ef_search,
        target_recall=target_recall,
        recall=steps[-1].recall,
        k=k,
        queries=len(queries),
        prefix=prefix,
        index_oid=index_oid,
        index_node=stats.index_node or 0,
        rows=stats.rows,
        exact_p50_ms=statistics.median(exact_times) * 1e3,
        steps=tuple(steps),
    )
    if not result.reached:
        raise RecallTargetError(
            f"The HNSW index reaches recall@{result.steps[-1].limit} {result.recall:.3f} "
            f"(searches of limit {result.steps[-1].limit}; standard error "
            f"{result.steps[-1].stderr:.3f}) at ef_search={result.ef_search}, short of the "
            f"target {target_recall} (over {len(queries)} "
            "queries): lower target_recall, or rebuild the index denser "
            "(create_hnsw_index(m=..., ef_construction=...)) and calibrate again. "
            "Nothing was stored.",
            result,
        )
    if persist:
        # COMMENT takes no parameters: the server quotes the record (format's %L)
        yield sql.Statement(
            "SELECT set_config('langchain_ltm.calibration', %s, true)",
            (json.dumps(result.as_json()),),
        )
        yield sql.Statement(
            "DO $$BEGIN EXECUTE format('COMMENT ON INDEX %%s IS %%L', "
            f"{int(index_oid)}::oid::regclass, current_setting('langchain_ltm.calibration')); "
            "END$$"
        )
    return result


def _measure(
    t: sql.Tables,
    prefix: tuple[str, ...],
    queries: np.ndarray,
    exact: list[list[str]],
    limit: int,
    operator: str,
    vector_type: str | None,
    ef: int,
) -> sql.Exchange[CalibrationStep]:
    """Recall@``limit`` of the searches of that limit at ``ef``, every query.

    A walk that fell short (``_broad.walk``) is answered by the exact plan, as the search
    answers it (a graph whose walks reach too few vectors: a few queries in a sparse
    one), and counted in the step's ``fallbacks``. When most walks fell short, the scope
    is what stops them (smaller than the candidates, or too rare to gather them within
    ``hnsw.max_scan_tuples``), the recall would be the exact plan's, not the index's, and
    ``ValueError`` says so (a 30-vector scope measured 1.000 at ``ef_search=40`` and
    stored it; walks of the whole table then got recall@10 0.353).
    """
    recalls, times, fallbacks = [], [], 0
    for query, truth in zip(queries, exact, strict=True):
        request = SearchRequest(prefix, query[None, :], (), limit, 0)
        began = time.perf_counter()
        walked = yield from _broad.walk(t, request, operator, vector_type, ef)
        times.append(time.perf_counter() - began)
        if walked is None:  # the search's answer: the exact plan's (truth)
            fallbacks += 1
            recalls.append(1.0)
            continue
        got = {_key(h.item.namespace, h.item.key) for h in walked[0]}
        recalls.append(len(got & set(truth[:limit])) / limit)
    if 2 * fallbacks > len(queries):
        raise ValueError(
            f"{fallbacks} of {len(queries)} walks of the HNSW index under {prefix!r} found "
            f"fewer than {max(ef, 4 * limit)} candidates (the scope is too small, or too "
            f"rare in the table to gather them within {_broad.MAX_SCAN_TUPLES:,} tuples), "
            "so its searches run the exact plan and their recall says nothing of the "
            + (
                "index: calibrate on a broader prefix (() is the whole table). "
                if prefix
                else f"index: the table holds too few vectors for limit-{limit} walks, so "
                "such searches are exact; calibrate with a smaller k (at most a quarter of "
                "the table's vectors). "
            )
            + "Nothing was stored."
        )
    return CalibrationStep(
        ef,
        statistics.fmean(recalls),
        min(recalls),
        _p50_ms(times),
        _stderr(recalls),
        limit,
        fallbacks,
    )


def _check_walked(prefix: tuple[str, ...], stats: _broad.ScopeStats, min_rows: int | None) -> None:
    """Refuse a ``prefix`` whose searches would not walk the index (``ValueError``).

    Searches of a scope walk the index only once the statistics prove it holds
    ``min_rows`` vectors (``_broad.wants_index``); a calibration of a smaller scope
    measured walks no search makes, and stored the value for the whole index. The whole
    table (``()``) is always the index's own walk, measured however large it is. A process
    with ``broad_min_rows=None`` walks no scope, but the value it stores serves every
    process: its prefix is held to the default (:data:`~._broad.BROAD_MIN_ROWS`), as a
    100-vector prefix was measured and stored there, and other processes' whole-table
    walks got recall@10 0.375.
    """
    if not prefix:
        return
    if min_rows is None:
        min_rows = _broad.BROAD_MIN_ROWS
    rows = stats.lower_bound(prefix)
    if rows < min_rows:
        raise ValueError(
            f"Searches under {prefix!r} do not walk the HNSW index: the statistics prove "
            f"{rows:,.0f} vectors there, fewer than broad_min_rows={min_rows:,} (they run "
            "the exact plan), and a value measured on walks no search makes would be "
            "stored for the whole index. Calibrate on a broader prefix (() is the whole "
            "table), or ANALYZE the table if the scope has grown since. Nothing was stored."
        )


def _check_can_store(stats: _broad.ScopeStats) -> sql.Exchange[None]:
    """Refuse, before measuring, a calibration that could not be stored as the comment.

    Only the index's owner may comment on it, and a comment the application wrote itself
    is not ours to overwrite.
    """
    rows = yield sql.Statement(
        "SELECT c.oid::regclass::text, pg_has_role(current_user, c.relowner, 'USAGE') "
        "FROM pg_class c WHERE c.oid = %s",
        (stats.index_oid,),
    )
    name, owner = (str(rows[0][0]), bool(rows[0][1])) if rows else ("the index", False)
    if not owner:
        raise ValueError(
            f"Only the owner of {name} can store a calibration (it is kept as the index's "
            "comment): calibrate as the role that owns the tables, or pass persist=False "
            "and set broad_ef_search to the value measured."
        )
    if stats.index_comment and _broad.calibration_of(stats.index_comment) is None:
        raise ValueError(
            f"{name} has a comment that is not a langchain-ltm calibration "
            f"({stats.index_comment[:60]!r}); it is not overwritten: remove it "
            "(COMMENT ON INDEX ... IS NULL), or pass persist=False and set "
            "broad_ef_search to the value measured."
        )


def off_graph(stored: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
    """Stored vectors turned into queries the graph has not seen.

    Each is rotated in a random direction to cosine :data:`SAMPLE_COSINE` with itself, its
    length kept.

    A stored vector itself is a poor query for measuring recall: inserting it searched
    the graph for exactly that vector and linked it to what was found, so the walk back
    retraces that path. At 1M clustered facts stored vectors gave recall@10 0.96 at
    ``ef_search=60`` where queries near (not at) stored facts got 0.93 at 200.
    """
    rng = rng or np.random.default_rng()
    norms = np.linalg.norm(stored, axis=1, keepdims=True)
    unit = stored / norms
    noise = rng.standard_normal(stored.shape)
    noise -= np.sum(noise * unit, axis=1, keepdims=True) * unit  # orthogonal to each row
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    sine = np.sqrt(1.0 - SAMPLE_COSINE**2)
    out: np.ndarray = ((SAMPLE_COSINE * unit + sine * noise) * norms).astype(np.float32)
    return out


def _exact_keys(
    t: sql.Tables, prefix: tuple[str, ...], query: np.ndarray, k: int
) -> sql.Exchange[list[str]]:
    """The exact top ``k`` items of one query: a top-N scan of the vectors, no index.

    The best ``EXACT_OVERFETCH * k`` vectors by exact score, pooled per item; when they
    hold fewer than ``k`` items (items with many texts), the exact search plan answers.
    Cheaper than that plan (no per-item aggregate of every vector: 1 s against 4-6 s a
    query at 1M facts), and the same answer.
    """
    params: list[Any] = []
    scope = sql.scope_sql(prefix, "v", params)
    params.extend((query, EXACT_OVERFETCH * k))
    yield sql.Statement("SELECT set_config('enable_indexscan', 'off', true)")
    rows = yield sql.Statement(
        f"SELECT v.ns_path, v.key FROM {t.vectors} v WHERE {scope} "
        "ORDER BY v.embedding::vector <#> %b::vector, v.ns_path, v.key LIMIT %s",
        tuple(params),
    )
    yield sql.Statement("SELECT set_config('enable_indexscan', 'on', true)")
    keys = list(dict.fromkeys(_path_key(str(path), str(key)) for path, key in rows))
    if len(keys) >= k or len(rows) < EXACT_OVERFETCH * k:
        return keys[:k]
    (hits,) = yield from _reads.search(t, SearchRequest(prefix, query[None, :], (), k, 0))
    return [_key(h.item.namespace, h.item.key) for h in hits]


def _key(namespace: tuple[str, ...], key: str) -> str:
    return _path_key(sql.ns_path(namespace), key)


def _path_key(ns_path: str, key: str) -> str:
    """One item as a string: the exact answers and the walk's hits compare in this form."""
    return ns_path + "\x00" + key


def _stderr(recalls: list[float]) -> float:
    """Standard error of the mean recall (0 for one query: no spread to measure)."""
    if len(recalls) < 2:
        return 0.0
    return statistics.stdev(recalls) / math.sqrt(len(recalls))


def _p50_ms(times: list[float]) -> float:
    return statistics.median(times) * 1e3
