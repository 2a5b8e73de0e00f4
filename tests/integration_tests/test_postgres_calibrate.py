"""Calibrating the broad-scope walk: measured against exact answers, stored, read back.

A sparse graph (``m=2, ef_construction=8``) over clustered vectors is the weak build the
calibration exists for: at the walk's smallest ``ef_search`` it misses, so the calibration
has to climb, and what it chooses is checked on queries it never saw.
"""

from __future__ import annotations

import json
import unittest.mock
from datetime import datetime, timezone

import numpy as np
import pytest

from langchain_ltm import RecallTargetError
from langchain_ltm.backends.base import Record, SearchRequest
from langchain_ltm.backends.postgres import _broad, _calibrate, postgres_backend

DIMS, USERS, ROWS, TOPICS, K = 32, 40, 4_000, 40, 10


def _clustered(rng: np.random.Generator, n: int, centers: np.ndarray) -> np.ndarray:
    v = centers[rng.integers(0, len(centers), n)] + 0.5 * rng.standard_normal((n, DIMS)) / np.sqrt(
        DIMS
    )
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIMS))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    centers = _unit(rng, TOPICS)
    return centers, _clustered(rng, ROWS, centers)


def _load(backend, pg_conn, vectors: np.ndarray) -> None:
    now = datetime.now(timezone.utc)
    records = [
        Record(("m", f"u{n % USERS}"), f"k{n}", {"n": n}, ("t",), ("t",), v[None, :], now)
        for n, v in enumerate(vectors)
    ]
    for start in range(0, len(records), 1000):
        backend.write(records[start : start + 1000], [])
    pg_conn.execute(f"ANALYZE {backend.tables.items}, {backend.tables.vectors}")


@pytest.fixture
def weak(make_backend, pg_conn, data):
    """A table of clustered vectors under a sparse HNSW graph, broad from 1,000 rows."""
    _, vectors = data
    backend = make_backend(dims=DIMS)
    _load(backend, pg_conn, vectors)
    backend.create_hnsw_index(m=2, ef_construction=8)
    backend.broad_min_rows = 1_000
    return backend


def _queries(data, seed: int, n: int) -> np.ndarray:
    centers, _ = data
    return _clustered(np.random.default_rng(seed), n, centers)


def _recall(backend, vectors: np.ndarray, queries: np.ndarray) -> float:
    recalls = []
    for query in queries:
        (hits,) = backend.search(SearchRequest(("m",), query[None, :], limit=K))
        exact = np.argsort(-(vectors.astype(np.float64) @ query.astype(np.float64)))[:K]
        recalls.append(len({h.item.key for h in hits} & {f"k{n}" for n in exact}) / K)
    return float(np.mean(recalls))


def _index(backend) -> str:
    return f'"{backend.tables.schema}".{backend.tables.index("vectors_hnsw")}'


def _comment(pg_conn, backend) -> str | None:
    row = pg_conn.execute(
        "SELECT obj_description(to_regclass(%s), 'pg_class')", (_index(backend),)
    ).fetchone()
    return None if row is None else row[0]


def _saved(pg_conn, backend) -> dict | None:
    """The calibration stored as the HNSW index's comment, if any."""
    return _broad.calibration_of(_comment(pg_conn, backend))


def test_calibration_climbs_until_the_target_and_holds_on_unseen_queries(weak, data, pg_conn):
    _, vectors = data
    held_out = _queries(data, 77, 40)
    at_default = _recall(weak, vectors, held_out)  # the walk at ef_search 40 (no calibration)
    weak.broad_ef_search = 40
    at_40 = _recall(weak, vectors, held_out)
    weak.broad_ef_search = None

    result = weak.calibrate_broad_search(target_recall=0.98, queries=_queries(data, 5, 40))
    assert result.reached and result.recall >= 0.98
    assert result.ef_search == result.steps[-1].ef_search > 40  # it had to climb
    assert [s.ef_search for s in result.steps] == list(_calibrate.LADDER[: len(result.steps)])
    assert all(s.lower_recall < 0.98 for s in result.steps[:-1])
    assert result.steps[-1].lower_recall >= 0.98 and result.steps[-1].stderr >= 0
    # the standard error is measured: every step whose queries' recalls vary has one
    missed = [step for step in result.steps if step.min_recall < step.recall]
    assert missed and all(step.stderr > 0 for step in missed), result.steps
    assert all(step.stderr == 0 for step in result.steps if step.min_recall == step.recall), (
        result.steps
    )
    assert result.queries == 40 and result.k == K and result.exact_p50_ms > 0

    saved = _saved(pg_conn, weak)
    assert saved is not None and saved["ef_search"] == result.ef_search
    assert saved["index_oid"] == result.index_oid and saved["recall"] >= 0.98
    assert saved["relfilenode"] == result.index_node > 0
    # the search now walks with the stored value, and on queries it never saw it holds
    assert weak._scope_stats is None
    calibrated = _recall(weak, vectors, held_out)
    assert weak._scope_stats is not None and weak._scope_stats.calibrated_ef == result.ef_search
    assert calibrated >= 0.95 > at_40, (at_40, at_default, calibrated)


def test_another_process_walks_with_the_stored_value(weak, data, pg_url):
    result = weak.calibrate_broad_search(target_recall=0.98, queries=_queries(data, 5, 30))
    other = postgres_backend(pg_url, table=weak.tables.table)  # as a second process would
    other.broad_min_rows = 1_000
    try:
        request = SearchRequest(("m",), _queries(data, 8, 1), limit=K)
        (hits,) = other.search(request)
        assert len(hits) == K
        assert other._scope_stats is not None
        assert other._scope_stats.calibrated_ef == result.ef_search
        assert _broad.ef_search_of(other.broad_ef_search, other._scope_stats) == result.ef_search
        other.broad_ef_search = 123  # set by hand: wins over the stored value
        assert _broad.ef_search_of(other.broad_ef_search, other._scope_stats) == 123
    finally:
        other.close()


def test_stored_vectors_serve_as_queries_by_default(weak, data):
    result = weak.calibrate_broad_search(samples=30, persist=False)
    assert result.queries == 30 and result.reached
    # measured only: nothing stored, the default stays
    weak.search(SearchRequest(("m",), _queries(data, 2, 1), limit=K))
    assert weak._scope_stats is not None and weak._scope_stats.calibrated_ef is None


def test_unreachable_target_raises_with_the_measurements_and_stores_nothing(weak, data, pg_conn):
    with pytest.raises(RecallTargetError, match="short of the target") as caught:
        weak.calibrate_broad_search(
            target_recall=1.0, queries=_queries(data, 5, 40), max_ef_search=40
        )
    calibration = caught.value.calibration
    assert isinstance(caught.value, ValueError)
    assert [s.ef_search for s in calibration.steps] == [40]
    assert not calibration.reached and calibration.recall < 1.0
    assert _saved(pg_conn, weak) is None


def test_a_rebuilt_index_drops_the_stored_value(weak, data, pg_conn):
    result = weak.calibrate_broad_search(target_recall=0.98, queries=_queries(data, 5, 30))
    weak.search(SearchRequest(("m",), _queries(data, 2, 1), limit=K))
    assert weak._scope_stats is not None and weak._scope_stats.calibrated_ef == result.ef_search
    pg_conn.execute(f"DROP INDEX {weak.tables.schema}.{weak.tables.index('vectors_hnsw')}")
    assert weak.create_hnsw_index(m=2, ef_construction=8) is None
    weak.search(SearchRequest(("m",), _queries(data, 2, 1), limit=K))
    assert weak._scope_stats is not None and weak._scope_stats.calibrated_ef is None
    assert _broad.ef_search_of(None, weak._scope_stats) == _broad.EF_SEARCH
    assert _comment(pg_conn, weak) is None  # the comment died with the old index


def test_create_hnsw_index_can_calibrate_the_index_it_builds(make_backend, pg_conn, data):
    _, vectors = data
    backend = make_backend(dims=DIMS)
    _load(backend, pg_conn, vectors)
    result = backend.create_hnsw_index(calibrate=True)
    assert result is not None and result.reached and result.target_recall == 0.95
    assert _saved(pg_conn, backend)["ef_search"] == result.ef_search


async def test_acreate_hnsw_index_builds_and_calibrates_as_the_sync_one(
    make_backend, pg_conn, data
):
    _, vectors = data
    backend = make_backend(dims=DIMS)
    _load(backend, pg_conn, vectors)
    result = await backend.acreate_hnsw_index(calibrate=True)
    assert result is not None and result.reached and result.target_recall == 0.95
    assert _saved(pg_conn, backend)["ef_search"] == result.ef_search
    assert await backend.acreate_hnsw_index() is None  # IF NOT EXISTS: the index is kept
    with pytest.raises(ValueError, match="ef_construction"):
        await backend.acreate_hnsw_index(m=16, ef_construction=8)


async def test_async_calibration_matches_the_sync_one(weak, data, pg_conn):
    queries = _queries(data, 5, 30)
    sync = weak.calibrate_broad_search(target_recall=0.98, queries=queries, persist=False)
    result = await weak.acalibrate_broad_search(target_recall=0.98, queries=queries)
    assert result.ef_search == sync.ef_search
    assert _saved(pg_conn, weak)["ef_search"] == result.ef_search


def test_per_user_searches_stay_exact_after_a_calibration(weak, data):
    _, vectors = data
    weak.calibrate_broad_search(target_recall=0.98, queries=_queries(data, 5, 20))
    query = _queries(data, 4, 1)[0]
    for user in (0, 13, USERS - 1):
        request = SearchRequest(("m", f"u{user}"), query[None, :], limit=5)
        (hits,) = weak.search(request)
        rows = np.arange(user, ROWS, USERS)
        exact = rows[np.argsort(-(vectors[rows] @ query), kind="stable")[:5]]
        assert [h.item.key for h in hits] == [f"k{n}" for n in exact]
        assert _broad.wants_index(weak._scope_stats, request, weak.broad_min_rows) is False


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"target_recall": 0}, "target_recall"),
        ({"target_recall": 1.5}, "target_recall"),
        ({"target_recall": "0.9"}, "target_recall"),
        ({"target_recall": True}, "target_recall"),
        ({"target_recall": float("nan")}, "target_recall"),
        ({"samples": 0}, "samples"),
        ({"samples": 1001}, "samples"),
        ({"samples": 2.5}, "samples"),
        ({"k": 0}, "k must be"),
        ({"k": 101}, "k must be"),
        ({"max_ef_search": 0}, "max_ef_search"),
        ({"max_ef_search": 1001}, "max_ef_search"),
        ({"queries": np.ones(DIMS)}, "2-d array"),
        ({"queries": np.ones((2, DIMS + 1))}, "dimensions"),
        ({"queries": np.zeros((0, DIMS))}, "2-d array"),
        ({"queries": np.full((2, DIMS), np.nan)}, "NaN"),
        ({"queries": np.zeros((2, DIMS))}, "zero vector"),
        ({"queries": [["a"] * DIMS]}, "array of numbers"),
        ({"prefix": "m"}, "tuple of namespace labels"),
        ({"prefix": ("m.x",)}, "Invalid namespace label"),
        ({"prefix": ("nobody",)}, "No vectors under"),
    ],
)
def test_bad_calibration_arguments_are_refused(weak, pg_conn, kwargs, match):
    with pytest.raises(ValueError, match=match):
        weak.calibrate_broad_search(**kwargs)
    assert _saved(pg_conn, weak) is None


def test_calibration_needs_an_index_it_can_walk(make_backend, pg_conn, data):
    _, vectors = data
    backend = make_backend(dims=DIMS)
    _load(backend, pg_conn, vectors[:500])
    with pytest.raises(ValueError, match="no HNSW index"):
        backend.calibrate_broad_search()
    backend.create_hnsw_index()
    backend.broad_min_rows = 10  # a user's scope counts as broad: refused for its size, not k
    with pytest.raises(ValueError, match="fewer than k=20"):  # a user holds 12 or 13
        backend.calibrate_broad_search(prefix=("m", "u1"), k=20)
    assert _saved(pg_conn, backend) is None


def test_a_table_too_small_for_the_walks_of_k_says_to_lower_k(make_backend, pg_conn, data):
    """The whole table too small for limit-k walks (4k candidates) was told to calibrate
    "on a broader prefix", which the whole table has none of: it is told to lower k."""
    _, vectors = data
    backend = make_backend(dims=DIMS)
    _load(backend, pg_conn, vectors[:200])
    backend.create_hnsw_index()
    with pytest.raises(ValueError, match=r"too few vectors for limit-100 walks.*smaller k"):
        backend.calibrate_broad_search(samples=10, k=100)
    assert _saved(pg_conn, backend) is None


def test_a_calibration_with_a_large_k_serves_limit_10_searches(make_backend, data, pg_conn):
    """A search walks max(ef_search, 4 * limit) candidates: calibrated at limit k=100 alone,
    every ef_search below 400 walked the same 400, the first step (40) passed and was
    stored, and limit-10 searches, which walk only ef_search, got recall@10 0.670 for a
    target of 0.95. Each step measures limit 10 too: the value stored serves both."""
    _, vectors = data
    backend = make_backend(dims=DIMS)
    _load(backend, pg_conn, vectors)
    backend.create_hnsw_index(m=4, ef_construction=16)  # recall@10 at ef_search 40: ~0.9
    backend.broad_min_rows = 1_000
    queries = _queries(data, 5, 40)
    result = backend.calibrate_broad_search(target_recall=0.95, queries=queries, k=100)
    assert result.k == 100 and result.reached
    assert _saved(pg_conn, backend)["ef_search"] == result.ef_search
    # limit-10 searches of these very queries, walking with the value stored
    recalls = []
    for query in queries:
        (hits,) = backend.search(SearchRequest((), query[None, :], limit=K))
        exact = np.argsort(-(vectors.astype(np.float64) @ query.astype(np.float64)))[:K]
        recalls.append(len({h.item.key for h in hits} & {f"k{n}" for n in exact}) / K)
    assert backend._scope_stats is not None
    assert backend._scope_stats.calibrated_ef == result.ef_search
    lower = np.mean(recalls) - np.std(recalls, ddof=1) / np.sqrt(len(recalls))
    assert lower >= 0.95, (result.ef_search, np.mean(recalls))
    assert {step.limit for step in result.steps} <= {K, 100}


def test_a_scope_whose_searches_are_not_walked_is_not_calibrated(weak, data, pg_conn):
    """A calibration on a small prefix measured the exact plan (a scope smaller than the
    walk's candidates falls back to it): recall 1.000 at ef_search=40, stored for the
    whole index, whose walks then got recall@10 0.353. A prefix whose searches do not walk
    the index is refused, saying why, and nothing is stored."""
    centers, _ = data
    now = datetime.now(timezone.utc)
    small = _clustered(np.random.default_rng(9), 30, centers)
    weak.write(
        [
            Record(("team", "small"), f"s{n}", {"n": n}, ("t",), ("t",), v[None, :], now)
            for n, v in enumerate(small)
        ],
        [],
    )
    pg_conn.execute(f"ANALYZE {weak.tables.items}, {weak.tables.vectors}")
    for prefix in (("team", "small"), ("m", "u1")):  # 30 and 100 vectors, broad from 1,000
        with pytest.raises(ValueError, match=r"do not walk the HNSW index.*broad_min_rows=1,000"):
            weak.calibrate_broad_search(samples=20, prefix=prefix)
    weak.broad_min_rows = 0  # every scope counts as broad: the walks themselves fall short
    with pytest.raises(ValueError, match=r"20 of 20 walks .* fewer than 40 candidates"):
        weak.calibrate_broad_search(samples=20, prefix=("team", "small"))
    assert _saved(pg_conn, weak) is None
    # a process that walks no scope stores for all: its prefix is held to the default
    weak.broad_min_rows = None
    with pytest.raises(ValueError, match=r"do not walk the HNSW index.*broad_min_rows=50,000"):
        weak.calibrate_broad_search(samples=20, prefix=("m", "u1"))
    assert _saved(pg_conn, weak) is None
    # a scope the walk serves is calibrated as before
    weak.broad_min_rows = 1_000
    assert weak.calibrate_broad_search(queries=_queries(data, 5, 20), prefix=("m",)).reached


def test_a_stored_value_is_used_only_for_the_index_it_measured():
    saved = {"ef_search": 300, "index_oid": 7, "relfilenode": 70}
    assert _broad.calibrated_ef(saved, 7, 70) == 300
    assert _broad.calibrated_ef(saved, 8, 70) is None  # another index
    assert _broad.calibrated_ef(saved, 7, 71) is None  # the same index, reindexed
    for bad in (None, [], "x", {"index_oid": 7, "relfilenode": 70}, {**saved, "ef_search": True}):
        assert _broad.calibrated_ef(bad, 7, 70) is None
    assert _broad.calibrated_ef({"ef_search": 300, "index_oid": 7}, 7, 70) is None
    for ef in (0, 1001, 2.5, "300"):
        assert _broad.calibrated_ef({**saved, "ef_search": ef}, 7, 70) is None


@pytest.mark.parametrize(
    "comment",
    [None, "", "built by the ops team", "{not json", "[1, 2]", '{"ef_search": 300}', "[" * 100_000],
)
def test_a_comment_that_is_not_a_calibration_is_none(comment):
    assert _broad.calibration_of(comment) is None


def test_a_calibration_comment_reads_back():
    key, mark = _broad.CALIBRATION_MARK
    record = {key: mark, "ef_search": 300, "index_oid": 7, "relfilenode": 70}
    assert _broad.calibration_of(json.dumps(record)) == record


def test_the_exact_answers_match_the_exact_plan_for_items_with_many_texts(
    make_backend, pg_conn, data
):
    """Calibration's exact top k (a top-N scan pooled per item) is the exact search's,
    also when a few items hold every vector near the query (the fallback to the plan)."""
    centers, vectors = data
    backend = make_backend(dims=DIMS)
    _load(backend, pg_conn, vectors[:1_000])
    now = datetime.now(timezone.utc)
    # 60 vectors tighter around topic 0 than any stored one: the best 40 vectors of a
    # query there belong to 3 items, fewer than k, so the exact plan has to answer
    crowd = centers[0] + 0.05 * np.random.default_rng(31).standard_normal((60, DIMS))
    crowd = (crowd / np.linalg.norm(crowd, axis=1, keepdims=True)).astype(np.float32)
    texts = tuple(f"t{n}" for n in range(20))
    backend.write(
        [
            Record(("m", "many"), f"c{n}", {"n": n}, texts, texts, crowd[n::3], now)
            for n in range(3)
        ],
        [],
    )
    backend.create_hnsw_index()

    calls = {"plan": 0}
    original = _calibrate._reads.search

    def counting(*args, **kwargs):
        calls["plan"] += 1
        return (yield from original(*args, **kwargs))

    def exact_keys(query: np.ndarray, k: int) -> list[str]:
        def run():
            return (yield from _calibrate._exact_keys(backend.tables, ("m",), query, k))

        return backend.connector.run(run, "test", transaction=True)

    for query, k in [(centers[0], 10), (centers[0], 2), (centers[5], 10), (crowd[0], 10)]:
        backend.broad_min_rows = None  # the exact plan
        (plan,) = backend.search(SearchRequest(("m",), query[None, :], limit=k))
        with unittest.mock.patch.object(_calibrate._reads, "search", counting):
            got = exact_keys(query, k)
        assert got == [_calibrate._key(h.item.namespace, h.item.key) for h in plan]
    assert {h.item.key for h in plan} >= {"c0", "c1", "c2"}  # the crowd is in the answer
    assert calls["plan"] >= 2  # the fallback ran (centers[0] and crowd[0] at k=10)


def test_sampled_queries_are_moved_off_the_graph_to_a_fixed_cosine():
    rng = np.random.default_rng(4)
    stored = _unit(rng, 200) * rng.uniform(0.5, 2.0, (200, 1)).astype(np.float32)
    queries = _calibrate.off_graph(stored, np.random.default_rng(1))
    assert queries.dtype == np.float32 and queries.shape == stored.shape
    norms = np.linalg.norm(stored, axis=1)
    assert np.linalg.norm(queries, axis=1) == pytest.approx(norms, rel=1e-5)
    cosines = np.sum(queries * stored, axis=1) / norms**2
    assert cosines == pytest.approx(np.full(200, _calibrate.SAMPLE_COSINE), abs=1e-5)
    # directions differ from row to row (a random rotation each, not one shared shift)
    moves = queries / norms[:, None] - stored / norms[:, None]
    assert np.abs(np.corrcoef(moves[:50])[np.triu_indices(50, 1)]).max() < 0.8


# ---- where the calibration is kept: the index's comment, nothing of anyone else's ------


def _foreign_settings(pg_conn, backend) -> str:
    """The application's own table that happens to be named '<table>_settings' (the name
    an earlier draft of the calibration used)."""
    name = f'"{backend.tables.schema}"."{backend.tables.table}_settings"'
    pg_conn.execute(f"CREATE TABLE {name} (user_id int PRIMARY KEY, theme text)")
    pg_conn.execute(f"INSERT INTO {name} VALUES (1, 'dark')")
    return name


def test_an_unrelated_settings_table_is_left_alone(make_backend, pg_conn, data):
    _, vectors = data
    backend = make_backend(dims=DIMS)
    name = _foreign_settings(pg_conn, backend)
    try:
        _load(backend, pg_conn, vectors)
        backend.create_hnsw_index()
        backend.broad_min_rows = 1_000
        for prefix in (("m", "u1"), ("m",)):  # per-user (exact) and broad (the walk)
            (hits,) = backend.search(SearchRequest(prefix, _queries(data, 2, 1), limit=K))
            assert len(hits) == K
        backend.calibrate_broad_search(queries=_queries(data, 5, 20))
        backend.drop()
        assert pg_conn.execute(f"SELECT user_id, theme FROM {name}").fetchall() == [(1, "dark")]
    finally:
        pg_conn.execute(f"DROP TABLE IF EXISTS {name}")


def test_drop_leaves_an_unrelated_settings_table(make_backend, pg_conn):
    backend = make_backend(dims=DIMS)
    name = _foreign_settings(pg_conn, backend)
    backend.drop()  # the store never calibrated, never made that table
    assert pg_conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()[0] is not None
    pg_conn.execute(f"DROP TABLE {name}")


@pytest.mark.parametrize("how", ["REINDEX INDEX", "REINDEX INDEX CONCURRENTLY"])
def test_reindex_builds_a_new_graph_and_drops_the_stored_value(weak, data, pg_conn, how):
    """REINDEX rebuilds the graph (new random levels) under the same oid and keeps the
    comment; CONCURRENTLY moves the comment to a new index."""
    result = weak.calibrate_broad_search(target_recall=0.98, queries=_queries(data, 5, 30))
    pg_conn.execute(f"{how} {_index(weak)}")
    assert _saved(pg_conn, weak) == json.loads(json.dumps(_saved(pg_conn, weak)))
    assert _saved(pg_conn, weak)["ef_search"] == result.ef_search  # kept by Postgres
    weak._scope_stats = None  # as after STATS_TTL
    weak.search(SearchRequest(("m",), _queries(data, 2, 1), limit=K))
    assert weak._scope_stats is not None
    assert weak._scope_stats.calibrated_ef is None, (
        f"the calibration of the old graph ({result.ef_search}) still applies"
    )
    assert _broad.ef_search_of(None, weak._scope_stats) == _broad.EF_SEARCH
    # calibrating again overwrites our own comment, and the new graph takes its value
    again = weak.calibrate_broad_search(target_recall=0.98, queries=_queries(data, 5, 30))
    weak.search(SearchRequest(("m",), _queries(data, 2, 1), limit=K))
    assert weak._scope_stats is not None and weak._scope_stats.calibrated_ef == again.ef_search
    assert _saved(pg_conn, weak)["relfilenode"] == again.index_node != result.index_node


def test_an_index_comment_of_the_applications_own_is_not_overwritten(weak, data, pg_conn):
    pg_conn.execute(f"COMMENT ON INDEX {_index(weak)} IS 'built by ops; do not touch'")
    (hits,) = weak.search(SearchRequest(("m",), _queries(data, 2, 1), limit=K))
    assert len(hits) == K
    assert weak._scope_stats is not None and weak._scope_stats.calibrated_ef is None
    with pytest.raises(ValueError, match=r"not a langchain-ltm calibration.*persist=False"):
        weak.calibrate_broad_search(queries=_queries(data, 5, 20))
    assert _comment(pg_conn, weak) == "built by ops; do not touch"
    assert weak.calibrate_broad_search(queries=_queries(data, 5, 20), persist=False).reached
    assert _comment(pg_conn, weak) == "built by ops; do not touch"


def test_a_comment_marked_ours_but_garbled_is_no_calibration(weak, data, pg_conn):
    key, mark = _broad.CALIBRATION_MARK
    garbled = json.dumps({key: mark, "ef_search": "many", "index_oid": "x"})
    pg_conn.execute(f"COMMENT ON INDEX {_index(weak)} IS '{garbled}'")
    (hits,) = weak.search(SearchRequest(("m",), _queries(data, 2, 1), limit=K))
    assert len(hits) == K
    assert weak._scope_stats is not None and weak._scope_stats.calibrated_ef is None


def test_an_app_role_that_does_not_own_the_tables_searches_and_cannot_store(
    weak, data, pg_url, pg_conn
):
    """Calibrated by the owner (a maintenance job); the app's role, granted the store's
    tables only, reads the calibration with its searches (per-user ones included) and is
    told, before any measuring, that it cannot store one."""
    import psycopg.conninfo

    result = weak.calibrate_broad_search(target_recall=0.98, queries=_queries(data, 5, 30))
    t = weak.tables
    role = f"app_{t.table}"
    pg_conn.execute(f'CREATE ROLE "{role}" LOGIN')
    try:
        pg_conn.execute(f'GRANT USAGE ON SCHEMA "{t.schema}" TO "{role}"')
        for table in (t.items, t.vectors, t.versions):
            pg_conn.execute(f'GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO "{role}"')
        url = psycopg.conninfo.make_conninfo(pg_url, user=role)
        app = postgres_backend(url, table=t.table, setup=False)  # tables made by the owner
        app.broad_min_rows = 1_000
        try:
            for prefix in (("m", "u1"), ("m",)):
                (hits,) = app.search(SearchRequest(prefix, _queries(data, 2, 1), limit=K))
                assert len(hits) == K
            assert app._scope_stats is not None
            assert app._scope_stats.calibrated_ef == result.ef_search
            with pytest.raises(ValueError, match=r"Only the owner of .* persist=False"):
                app.calibrate_broad_search(queries=_queries(data, 5, 20))
            assert _saved(pg_conn, weak)["ef_search"] == result.ef_search
        finally:
            app.close()
    finally:
        pg_conn.execute(f'DROP OWNED BY "{role}"')
        pg_conn.execute(f'DROP ROLE "{role}"')


@pytest.mark.parametrize(
    ("m", "ef_construction", "message"),
    [
        (16.7, 64, "m must be a whole number"),
        (1, 64, "m must be a whole number"),
        (True, 64, "m must be a whole number"),
        (16, 20, r"ef_construction must be a whole number from 32"),
        (16, 64.0, "ef_construction must be"),
        (16, 2000, "ef_construction must be"),
    ],
)
def test_hnsw_options_out_of_bounds_raise_before_anything_is_built(
    make_backend, pg_conn, m, ef_construction, message
):
    backend = make_backend(dims=DIMS)
    with pytest.raises(ValueError, match=message):
        backend.create_hnsw_index(m=m, ef_construction=ef_construction)
    (count,) = pg_conn.execute(
        "SELECT count(*) FROM pg_indexes WHERE tablename = %s AND indexdef LIKE '%%hnsw%%'",
        (backend.vectors_table,),
    ).fetchone()
    assert count == 0
