"""Review 3: failing tests for the broad-scope calibration (pg-broad merge)."""

from __future__ import annotations

from langchain_ltm.backends.base import SearchRequest
from langchain_ltm.backends.postgres import _broad
from tests.integration_tests.test_postgres_calibrate import (  # noqa: F401 (fixtures)
    DIMS,
    K,
    _load,
    _queries,
    data,
    weak,
)


def test_a_step_reports_the_standard_error_of_its_recall(weak, data):
    """0965b5c: 'a step counts only when its mean recall less one standard error meets the
    target ... the error is reported per step'. The steps before the chosen one miss on
    some queries (min_recall < recall), so their standard error cannot be 0."""
    result = weak.calibrate_broad_search(target_recall=0.98, queries=_queries(data, 5, 40))
    missed = [s for s in result.steps if s.min_recall < s.recall]
    assert missed, result.steps  # the sparse graph climbs: some step had misses
    assert all(s.stderr > 0 for s in missed), result.steps


def _foreign_settings(pg_conn, backend) -> str:
    """The application's own table that happens to be named '<table>_settings'."""
    name = backend.tables.settings
    pg_conn.execute(f"CREATE TABLE {name} (user_id int PRIMARY KEY, theme text)")
    pg_conn.execute(f"INSERT INTO {name} VALUES (1, 'dark')")
    return name


def test_an_unrelated_settings_table_does_not_break_searches(make_backend, pg_conn, data):
    _, vectors = data
    backend = make_backend(dims=DIMS)
    _foreign_settings(pg_conn, backend)
    _load(backend, pg_conn, vectors[:500])
    backend.create_hnsw_index()
    # a per-user search: it reads the scope statistics, which now read '<table>_settings'
    (hits,) = backend.search(SearchRequest(("m", "u1"), _queries(data, 2, 1), limit=K))
    assert hits


def test_drop_leaves_an_unrelated_settings_table(make_backend, pg_conn):
    backend = make_backend(dims=DIMS)
    name = _foreign_settings(pg_conn, backend)
    backend.drop()  # the store never calibrated, never made that table
    assert pg_conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()[0] is not None
    pg_conn.execute(f"DROP TABLE {name}")


def test_reindex_builds_a_new_graph_and_drops_the_stored_value(weak, data, pg_conn):
    """REINDEX rebuilds the graph (new random levels) under the same index oid."""
    result = weak.calibrate_broad_search(target_recall=0.98, queries=_queries(data, 5, 30))
    pg_conn.execute(f"REINDEX INDEX {weak.tables.schema}.{weak.tables.index('vectors_hnsw')}")
    weak._scope_stats = None  # as after STATS_TTL
    weak.search(SearchRequest(("m",), _queries(data, 2, 1), limit=K))
    assert weak._scope_stats is not None
    assert weak._scope_stats.calibrated_ef is None, (
        f"the calibration of the old graph ({result.ef_search}) still applies"
    )
    assert _broad.ef_search_of(None, weak._scope_stats) == _broad.EF_SEARCH


def test_an_app_role_without_rights_on_the_settings_table_still_searches(
    weak, data, pg_url, pg_conn
):
    """Calibrated by the owner (a maintenance job); the app's role was granted the store's
    tables before the settings table existed: the statistics' read of it must not fail
    every vector search, per-user ones included."""
    import psycopg.conninfo

    from langchain_ltm.backends.postgres import postgres_backend

    weak.calibrate_broad_search(target_recall=0.98, queries=_queries(data, 5, 30))
    t = weak.tables
    role = f"app_{t.table}"
    pg_conn.execute(f'CREATE ROLE "{role}" LOGIN')
    try:
        pg_conn.execute(f'GRANT USAGE ON SCHEMA "{t.schema}" TO "{role}"')
        for table in (t.items, t.vectors, t.versions):
            pg_conn.execute(f'GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO "{role}"')
        url = psycopg.conninfo.make_conninfo(pg_url, user=role)
        app = postgres_backend(url, table=t.table, setup=False)  # tables made by the owner
        try:
            (hits,) = app.search(SearchRequest(("m", "u1"), _queries(data, 2, 1), limit=K))
            assert hits
        finally:
            app.close()
    finally:
        pg_conn.execute(f'DROP OWNED BY "{role}"')
        pg_conn.execute(f'DROP ROLE "{role}"')
