"""Broad-scope search on Postgres: the HNSW iterative scan, checked against exact answers.

``PostgresBackend.broad_min_rows`` is lowered so a small table counts as broad; the
decision itself (a lower bound from ``pg_stats``) is tested on its own, with the sizes of
a large table, below.
"""

from __future__ import annotations

import unittest.mock
from collections.abc import Generator
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.base import PutOp

from langchain_ltm import LongTermMemoryStore
from langchain_ltm._filters import compile_filter
from langchain_ltm.backends.base import Record, SearchRequest
from langchain_ltm.backends.postgres import _broad, _reads
from langchain_ltm.backends.postgres import _sql as _pg_sql

DIMS, USERS, PER_USER, RARE_EVERY, K = 32, 40, 100, 500, 10


def _load(backend, pg_conn, vectors: np.ndarray) -> None:
    now = datetime.now(timezone.utc)
    records = [
        Record(
            ("m", f"u{n % USERS}"),
            f"k{n}",
            {"n": n, "rare": n % RARE_EVERY == 0},
            ("t",),
            ("t",),
            vec[None, :],
            now,
        )
        for n, vec in enumerate(vectors)
    ]
    for start in range(0, len(records), 1000):
        backend.write(records[start : start + 1000], [])
    pg_conn.execute(f"ANALYZE {backend.tables.items}, {backend.tables.vectors}")


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIMS)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture
def broad(make_backend, pg_conn):
    """USERS users with PER_USER facts each, an HNSW index, and a low broad threshold."""
    backend = make_backend(dims=DIMS)
    vectors = _unit(np.random.default_rng(5), USERS * PER_USER)
    _load(backend, pg_conn, vectors)
    backend.create_hnsw_index()
    backend.broad_min_rows = 1_000
    return backend, vectors


def _exact(vectors: np.ndarray, query: np.ndarray, rows: np.ndarray, k: int) -> list[str]:
    scores = vectors[rows].astype(np.float64) @ query.astype(np.float64)
    return [f"k{n}" for n in rows[np.argsort(-scores, kind="stable")[:k]]]


def _queries(seed: int, n: int) -> np.ndarray:
    return _unit(np.random.default_rng(seed), n)


def _plan_of_walk(backend, request: SearchRequest, operator: str) -> str:
    """EXPLAIN of the index-walk statement, after its SET LOCALs, in one transaction."""

    def exchange() -> Generator[_pg_sql.Statement, Any, str]:
        inner = _broad.search(backend.tables, request, operator, backend.vector_type)
        statement = next(inner)
        while statement.sql.startswith("SELECT set_config"):
            statement = inner.send((yield statement))
        rows = yield _pg_sql.Statement("EXPLAIN " + statement.sql, statement.params)
        return "\n".join(row[0] for row in rows)

    return backend.connector.run(exchange, "explain", transaction=True)


def test_broad_search_walks_the_index_with_recall_against_exact(broad):
    backend, vectors = broad
    everyone = np.arange(len(vectors))
    recalls = []
    for query in _queries(9, 20):
        (hits,) = backend.search(SearchRequest(("m",), query[None, :], limit=K))
        keys = [h.item.key for h in hits]
        assert len(keys) == K and len(set(keys)) == K
        recalls.append(len(set(keys) & set(_exact(vectors, query, everyone, K))) / K)
        # scores are exact (re-ranked), in order
        expected = [float(vectors[int(k[1:])] @ query) for k in keys]
        assert [h.score for h in hits] == pytest.approx(expected, abs=1e-5)
        assert expected == sorted(expected, reverse=True)
        assert all(h.item.value["n"] == int(h.item.key[1:]) for h in hits)
    assert np.mean(recalls) >= 0.95, recalls

    stats = backend._scope_stats
    assert stats is not None and stats.operator == "<=>"
    request = SearchRequest(("m",), _queries(9, 1), limit=K)
    assert _broad.wants_index(stats, request, backend.broad_min_rows) is True
    plan = _plan_of_walk(backend, request, stats.operator)
    assert "hnsw" in plan, plan


def test_per_user_search_stays_exact_and_off_the_index(broad):
    backend, vectors = broad
    query = _queries(4, 1)[0]
    for user in (0, 17, USERS - 1):
        request = SearchRequest(("m", f"u{user}"), query[None, :], limit=5)
        (hits,) = backend.search(request)
        assert [h.item.key for h in hits] == _exact(
            vectors, query, np.arange(user, len(vectors), USERS), 5
        )
        assert _broad.wants_index(backend._scope_stats, request, backend.broad_min_rows) is False


def test_rare_filter_under_a_broad_prefix_fills_limit_exactly(broad, monkeypatch):
    """A walk that stops early (few tuples allowed) gives way to the exact statement."""
    backend, vectors = broad
    monkeypatch.setattr(_broad, "MAX_SCAN_TUPLES", 50)
    rare = np.arange(0, len(vectors), RARE_EVERY)
    for query in _queries(12, 3):
        request = SearchRequest(("m",), query[None, :], compile_filter({"rare": True}), 5)
        (hits,) = backend.search(request)
        assert [h.item.key for h in hits] == _exact(vectors, query, rare, 5)
        assert [h.score for h in hits] == pytest.approx(
            [float(vectors[int(h.item.key[1:])] @ query) for h in hits], abs=1e-5
        )


async def test_async_broad_search_matches_sync_and_offset_pages(broad):
    backend, _ = broad
    queries = _queries(21, 2)
    request = SearchRequest(("m",), queries, limit=K)
    assert [[h.item.key for h in col] for col in await backend.asearch(request)] == [
        [h.item.key for h in col] for col in backend.search(request)
    ]
    (first,) = backend.search(SearchRequest(("m",), queries[:1], limit=8))
    (page,) = backend.search(SearchRequest(("m",), queries[:1], limit=5, offset=3))
    assert [h.item.key for h in page] == [h.item.key for h in first][3:8]


@pytest.mark.parametrize("ef", [40, 200])
def test_paging_a_broad_search_neither_repeats_nor_skips_an_item(broad, ef):
    """Every page of one size is a slice of one ranking (the candidates grew with the
    offset, so pages re-ranked other sets and repeated or skipped items): the first pages'
    walk (its best quarter), then a 400-candidate walk's items not among them up to 100,
    then every other item in exact order."""
    backend, vectors = broad
    backend.broad_ef_search = ef
    head = max(ef, 40) // 4
    everyone = np.arange(len(vectors))

    def page(query: np.ndarray, limit: int, offset: int) -> list[str]:
        request = SearchRequest(("m",), query[None, :], limit=limit, offset=offset)
        return [h.item.key for h in backend.search(request)[0]]

    for query in _queries(33, 4):
        keys = [key for offset in range(0, 150, 10) for key in page(query, 10, offset)]
        assert len(keys) == 150 and len(set(keys)) == 150
        first = keys[:head]
        assert first == [key for offset in range(0, head, 10) for key in page(query, 10, offset)]
        wider = [k for k in page(query, 100, 0) if k not in set(first)]  # 400 candidates
        assert keys[head:100] == wider[: 100 - head]
        rest = [k for k in _exact(vectors, query, everyone, 250) if k not in set(keys[:100])]
        assert keys[100:] == rest[:50]
        assert _broad.wants_index(
            backend._scope_stats,
            SearchRequest(("m",), query[None, :], limit=10, offset=140),
            backend.broad_min_rows,
        )


async def test_a_broad_search_for_no_items_answers_empty(broad):
    """``limit=0`` under a broad prefix: no walk (its answer check read a first row of
    none, ``IndexError``), the exact plan's empty answer, sync and async."""
    backend, _ = broad
    for offset in (0, 3):
        request = SearchRequest(("m",), _queries(2, 1), limit=0, offset=offset)
        assert backend.search(request) == [[]]
        assert await backend.asearch(request) == [[]]
        assert _broad.wants_index(backend._scope_stats, request, backend.broad_min_rows) is False


def test_inner_product_index_serves_unnormalized_vectors(make_backend, pg_conn):
    """Our score is the inner product: an ``vector_ip_ops`` index is preferred and walked
    in that order, so vectors that are not unit length still rank right."""
    backend = make_backend(dims=DIMS)
    rng = np.random.default_rng(8)
    vectors = _unit(rng, USERS * PER_USER) * rng.uniform(0.2, 3.0, (USERS * PER_USER, 1))
    vectors = vectors.astype(np.float32)
    _load(backend, pg_conn, vectors)
    backend.create_hnsw_index()  # cosine: ranks unnormalized vectors differently
    pg_conn.execute(
        f"CREATE INDEX ip_{backend.tables.table} ON {backend.tables.vectors} "
        "USING hnsw (embedding vector_ip_ops)"
    )
    backend.broad_min_rows = 1_000
    recalls = []
    for query in _queries(3, 10):
        (hits,) = backend.search(SearchRequest(("m",), query[None, :], limit=K))
        exact = _exact(vectors, query, np.arange(len(vectors)), K)
        recalls.append(len({h.item.key for h in hits} & set(exact)) / K)
    assert backend._scope_stats is not None and backend._scope_stats.operator == "<#>"
    assert np.mean(recalls) >= 0.95, recalls


def test_halfvec_table_walks_its_halfvec_index(make_backend, pg_conn):
    backend = make_backend(dims=DIMS, vector_type="halfvec")
    vectors = _unit(np.random.default_rng(6), USERS * PER_USER)
    _load(backend, pg_conn, vectors)
    backend.create_hnsw_index()
    backend.broad_min_rows = 1_000
    stored = vectors.astype(np.float16).astype(np.float32)
    recalls = []
    for query in _queries(2, 10):
        (hits,) = backend.search(SearchRequest(("m",), query[None, :], limit=K))
        exact = _exact(stored, query, np.arange(len(vectors)), K)
        recalls.append(len({h.item.key for h in hits} & set(exact)) / K)
    request = SearchRequest(("m",), _queries(2, 1), limit=K)
    assert "hnsw" in _plan_of_walk(backend, request, "<=>")
    assert np.mean(recalls) >= 0.95, recalls


def test_no_index_or_threshold_off_means_exact(make_backend, pg_conn):
    backend = make_backend(dims=DIMS)
    vectors = _unit(np.random.default_rng(1), 2000)
    _load(backend, pg_conn, vectors)
    backend.broad_min_rows = 10
    query = _queries(7, 1)[0]
    request = SearchRequest(("m",), query[None, :], limit=K)
    (hits,) = backend.search(request)
    assert [h.item.key for h in hits] == _exact(vectors, query, np.arange(2000), K)
    assert backend._scope_stats is not None and backend._scope_stats.operator is None
    assert _broad.wants_index(backend._scope_stats, request, 10) is False
    assert _broad.wants_index(backend._scope_stats, request, None) is False


def _stats(bounds: list[str], common: tuple[tuple[str, float], ...] = ()) -> _broad.ScopeStats:
    return _broad.ScopeStats(1_000_000.0, tuple(bounds), common, "<=>", 0.0)


def test_scope_estimate_is_a_lower_bound_that_keeps_one_user_exact():
    """The planner's histogram of 1M vectors over 100k users: 101 bounds, one user never
    spans a bucket, so a per-user prefix counts 0 however large the table grows."""
    users = [f"memories.user-{u:06d}." for u in range(0, 100_001, 1_000)]
    stats = _stats(users)
    assert stats.lower_bound(("memories", "user-000007")) == 0
    assert stats.lower_bound(("memories", "user-001000")) == 0  # a bound itself
    assert stats.lower_bound(("memories",)) == pytest.approx(1_000_000)
    assert stats.lower_bound(()) == 1_000_000
    assert stats.lower_bound(("other",)) == 0
    # a team prefix holding half the users: at least 49 of the 100 buckets
    half = [f"memories.team-a.u{u:05d}." for u in range(51)] + [
        f"memories.team-b.u{u:05d}." for u in range(50)
    ]
    assert _stats(half).lower_bound(("memories", "team-a")) == pytest.approx(500_000)
    # a heavy namespace among the most common values counts in full
    heavy = _stats(users, (("memories.user-000007.", 0.2),))
    assert heavy.lower_bound(("memories", "user-000007")) == pytest.approx(200_000)


def _scanned_lower_bound(stats: _broad.ScopeStats, prefix: tuple[str, ...]) -> float:
    """The estimate by a plain scan of every bound and common value (the reference)."""
    if not prefix:
        return stats.rows
    low = "".join(label + "." for label in prefix)
    high = low[:-1] + "/"
    rows = sum(f for value, f in stats.common if low <= value < high) * stats.rows
    inside = sum(1 for b in stats.bounds if low <= b < high)
    rest = max(0.0, 1.0 - sum(f for _, f in stats.common))
    return rows + max(inside - 1, 0) / (len(stats.bounds) - 1) * rest * stats.rows


def test_bisected_scope_estimate_is_the_scanned_one():
    """lower_bound bisects sorted copies of the histogram; on random histograms (teams of
    users, heavy namespaces among the common values, in any order) it gives what a scan
    of every bound and common value gives, for users, teams, bounds themselves and gaps."""
    rng = np.random.default_rng(4)
    for _ in range(30):
        paths = sorted(
            f"memories.team-{rng.integers(5)}.u{rng.integers(2_000):05d}." for _ in range(101)
        )
        picked = rng.choice(len(paths), size=int(rng.integers(0, 20)), replace=False)
        common = tuple((paths[i], float(rng.uniform(0, 0.04))) for i in picked)
        stats = _stats(paths, common)
        prefixes = [(), ("memories",), ("other",), ("memories", "team-9")]
        prefixes += [("memories", f"team-{t}") for t in range(5)]
        prefixes += [tuple(p[:-1].split(".")) for p in paths[::7]]
        prefixes += [("memories", f"team-{rng.integers(5)}", f"u{rng.integers(2_000):05d}")]
        for prefix in prefixes:
            assert stats.lower_bound(prefix) == pytest.approx(
                _scanned_lower_bound(stats, prefix), rel=1e-12, abs=1e-6
            ), prefix


def test_store_search_over_all_users_walks_the_index(make_backend, pg_conn):
    """``store.search(("memories",), query=...)`` as LangGraph tooling calls it (the store
    stores unit vectors, so the cosine index of ``create_hnsw_index`` is walked)."""
    backend = make_backend(dims=DIMS)
    store = LongTermMemoryStore(backend, embeddings=DeterministicFakeEmbedding(size=DIMS))
    ops = [
        PutOp(("memories", f"u{n % USERS}"), f"n{n}", {"text": f"note {n}", "n": n}, None)
        for n in range(2_000)
    ]
    for start in range(0, len(ops), 500):
        store.batch(ops[start : start + 500])
    backend.create_hnsw_index()
    pg_conn.execute(f"ANALYZE {backend.tables.items}, {backend.tables.vectors}")
    recalls = []
    for n in range(10):
        backend.broad_min_rows = None
        exact = [i.key for i in store.search(("memories",), query=f"note {n * 7}", limit=K)]
        backend.broad_min_rows = 1_000
        walked = [i.key for i in store.search(("memories",), query=f"note {n * 7}", limit=K)]
        recalls.append(len(set(exact) & set(walked)) / K)
    assert backend._scope_stats is not None and backend._scope_stats.operator == "<=>"
    assert np.mean(recalls) >= 0.95, recalls


def test_cosine_index_is_not_walked_for_vectors_that_are_not_unit_length(make_backend, pg_conn):
    """Vectors written straight to the backend need not be unit length: cosine order is
    then not our score's, so with only a cosine index the search stays exact."""
    backend = make_backend(dims=DIMS)
    rng = np.random.default_rng(13)
    vectors = _unit(rng, 2000) * rng.uniform(0.2, 3.0, (2000, 1)).astype(np.float32)
    _load(backend, pg_conn, vectors)
    backend.create_hnsw_index()
    backend.broad_min_rows = 1_000
    query = _queries(5, 1)[0]
    (hits,) = backend.search(SearchRequest(("m",), query[None, :], limit=K))
    assert backend._scope_stats is not None and backend._scope_stats.operator is None
    assert [h.item.key for h in hits] == _exact(vectors, query, np.arange(2000), K)


def test_pgvector_version_is_read_and_compared():
    assert _broad._version("0.8.5") >= (0, 8) > _broad._version("0.7.4")
    assert _broad._version("0.10.0") > (0, 8) and _broad._version("1.0") > (0, 8)


def test_broad_ef_search_sets_the_walk_and_bad_values_are_refused(broad):
    backend, _ = broad
    seen: list[str] = []
    original = _broad.search

    def recording(*args: Any, **kwargs: Any) -> Any:
        inner = original(*args, **kwargs)
        statement = next(inner)
        seen.append(str(statement.params))
        try:
            while True:
                statement = inner.send((yield statement))
        except StopIteration as stop:
            return stop.value

    query = _queries(9, 1)[0]
    request = SearchRequest(("m",), query[None, :], limit=K)
    with unittest.mock.patch.object(_broad, "search", recording):
        backend.broad_ef_search = 321
        (hits,) = backend.search(request)
    assert "'hnsw.ef_search', '321'" in seen[0]
    assert len(hits) == K
    for bad in (0, 1001, -5, 2.5, "400", True):
        backend.broad_ef_search = bad
        with pytest.raises(ValueError, match="broad_ef_search"):
            backend.search(request)
    backend.broad_ef_search = None  # the default: the calibrated value, else 200
    (again,) = backend.search(request)
    assert [h.item.key for h in again]  # the backend still works after a refused value


def test_a_user_with_more_rows_than_the_threshold_is_searched_exactly(make_backend, pg_conn):
    """One user's namespace is never walked, however large (the statistics count a user
    among the most common values in full): the store marks it ``one_user``."""
    backend = make_backend(dims=DIMS)
    store = LongTermMemoryStore(backend, embeddings=DeterministicFakeEmbedding(size=DIMS))
    heavy = store.user_namespace("heavy")
    ops = [PutOp(heavy, f"n{n}", {"text": f"note {n}"}, None) for n in range(1_500)]
    ops += [PutOp(("memories", f"u{n}"), f"n{n}", {"text": f"note {n}"}, None) for n in range(300)]
    for start in range(0, len(ops), 500):
        store.batch(ops[start : start + 500])
    backend.create_hnsw_index()
    pg_conn.execute(f"ANALYZE {backend.tables.items}, {backend.tables.vectors}")
    backend.broad_min_rows = 1_000
    backend.search(SearchRequest(("memories",), _queries(3, 1), limit=1))  # reads the stats
    assert backend._scope_stats is not None
    assert backend._scope_stats.lower_bound(heavy) >= 1_000  # it would count as broad
    asked: list[SearchRequest] = []
    search = backend.search

    def watched(request: SearchRequest) -> Any:
        asked.append(request)
        return search(request)

    backend.search = watched  # type: ignore[method-assign]
    store.recall("heavy", "note 7", limit=3)
    store.search(heavy, query="note 7", limit=K)
    stats = backend._scope_stats
    assert asked and all(
        _broad.wants_index(stats, r, backend.broad_min_rows) is False for r in asked
    )
    for n in range(5):
        query = f"note {n * 11}"
        got = [(i.key, i.score) for i in store.search(heavy, query=query, limit=K)]
        backend.broad_min_rows = None
        exact = [(i.key, i.score) for i in store.search(heavy, query=query, limit=K)]
        backend.broad_min_rows = 1_000
        assert got == exact


def test_a_walk_with_fewer_candidates_than_asked_gives_way_to_the_exact_statement(
    broad, monkeypatch
):
    """Fewer candidates than the walk was to re-rank (a walk stopped by ``max_scan_tuples``,
    a filter few rows pass) need not be the best ones, even when they fill ``limit``: the
    exact statement answers."""
    backend, vectors = broad
    exact_statements: list[SearchRequest] = []
    exact_search = _reads.search

    def counted(t: Any, request: SearchRequest) -> Any:
        exact_statements.append(request)
        return exact_search(t, request)

    monkeypatch.setattr(_reads, "search", counted)
    rare = np.arange(0, len(vectors), RARE_EVERY)  # 8 rows: enough for a limit of 5
    queries = _queries(21, 4)
    for query in queries:
        request = SearchRequest(("m",), query[None, :], compile_filter({"rare": True}), 5)
        (hits,) = backend.search(request)
        assert [h.item.key for h in hits] == _exact(vectors, query, rare, 5)
        assert _broad.wants_index(backend._scope_stats, request, backend.broad_min_rows)
    assert len(exact_statements) == len(queries)
