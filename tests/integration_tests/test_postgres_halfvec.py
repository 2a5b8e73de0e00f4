"""``halfvec`` on Postgres: half the room, search exact over the stored float16 values,
conversion both ways, and clear errors that change nothing."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import datetime, timezone

import numpy as np
import psycopg
import pytest

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.base import Record, SearchRequest
from langchain_ltm.backends.postgres import StoreInUseError
from tests.fakes import KeywordEmbeddings

DIMS, USERS, PER_USER = 64, 20, 30


def _vectors(seed: int = 11) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((USERS * PER_USER, DIMS)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _fill(backend, vectors: np.ndarray) -> None:
    now = datetime.now(timezone.utc)
    records = [
        Record(("m", f"u{n % USERS}"), f"k{n}", {"n": n}, ("t",), ("t",), vec[None, :], now)
        for n, vec in enumerate(vectors)
    ]
    backend.write(records, [])


def _column_type(pg_conn, backend) -> str:
    row = pg_conn.execute(
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = to_regclass(%s) AND attname = 'embedding'",
        (backend.tables.vectors,),
    ).fetchone()
    return row[0]


def _assert_exact(backend, stored: np.ndarray, user: int) -> None:
    """Top 5 of ``user`` equal numpy's over ``stored`` (what the column holds), in order."""
    rng = np.random.default_rng(user)
    query = rng.standard_normal(DIMS).astype(np.float32)
    query /= np.linalg.norm(query)
    (hits,) = backend.search(SearchRequest(("m", f"u{user}"), query[None, :], limit=5))
    rows = np.arange(user, USERS * PER_USER, USERS)
    scores = stored[rows].astype(np.float64) @ query.astype(np.float64)
    order = np.argsort(-scores, kind="stable")[:5]
    assert [h.item.key for h in hits] == [f"k{rows[i]}" for i in order]
    assert [h.score for h in hits] == pytest.approx(scores[order].tolist(), abs=1e-6)


def test_halfvec_table_scores_the_stored_float16_values_exactly(make_backend, pg_conn):
    backend = make_backend(dims=DIMS, vector_type="halfvec")
    assert backend.vector_type == "halfvec"
    assert _column_type(pg_conn, backend) == f"halfvec({DIMS})"
    vectors = _vectors()
    _fill(backend, vectors)
    halves = vectors.astype(np.float16).astype(np.float32)  # what halfvec keeps
    for user in (0, 5, USERS - 1):
        _assert_exact(backend, halves, user)


def test_halfvec_halves_the_vectors_table_and_the_hnsw_index(make_backend, pg_conn):
    full, half = make_backend(dims=DIMS), make_backend(dims=DIMS, vector_type="halfvec")
    vectors = _vectors()
    sizes = {}
    for name, backend in (("vector", full), ("halfvec", half)):
        _fill(backend, vectors)
        backend.create_hnsw_index()
        pg_conn.execute(f"VACUUM {backend.tables.vectors}")
        row = pg_conn.execute(
            "SELECT pg_table_size(%s::regclass), pg_relation_size(%s::regclass)",
            (backend.tables.vectors, f'"{backend.tables.table}_vectors_hnsw"'),
        ).fetchone()
        sizes[name] = row
    # 64-d: 256 vs 128 bytes of vector per row; the rest of the row is shared overhead
    assert sizes["halfvec"][0] < 0.8 * sizes["vector"][0]
    assert sizes["halfvec"][1] < 0.8 * sizes["vector"][1]


def test_first_write_types_an_untyped_halfvec_column(make_backend, pg_conn):
    backend = make_backend(vector_type="halfvec")
    assert _column_type(pg_conn, backend) == "halfvec"
    _fill(backend, _vectors())
    assert _column_type(pg_conn, backend) == f"halfvec({DIMS})"
    assert backend.dims == DIMS


def test_migrate_to_halfvec_and_back_keeps_rows_and_rebuilds_the_index(
    make_backend, pg_conn, pg_url
):
    backend = make_backend(dims=DIMS)
    vectors = _vectors()
    _fill(backend, vectors)
    backend.create_hnsw_index(m=8, ef_construction=32)
    backend.migrate_vector_type("halfvec")
    assert backend.vector_type == "halfvec"
    assert _column_type(pg_conn, backend) == f"halfvec({DIMS})"
    index = pg_conn.execute(
        "SELECT pg_get_indexdef(to_regclass(%s))", (f'"{backend.tables.table}_vectors_hnsw"',)
    ).fetchone()[0]
    assert "halfvec_cosine_ops" in index and "m='8'" in index and "ef_construction='32'" in index
    halves = vectors.astype(np.float16).astype(np.float32)
    _assert_exact(backend, halves, 3)
    assert backend.count(("m",)) == len(vectors)
    # a new backend on the converted table learns its type; asking for the other refuses
    from langchain_ltm.backends.postgres import postgres_backend

    again = postgres_backend(pg_url, table=backend.tables.table, dims=DIMS)
    try:
        assert again.vector_type == "halfvec"
    finally:
        again.close()
    with pytest.raises(ValueError, match="migrate_vector_type"):
        postgres_backend(pg_url, table=backend.tables.table, vector_type="vector")
    # back to float32: exact, so the values are the float16 ones
    backend.migrate_vector_type("vector")
    assert _column_type(pg_conn, backend) == f"vector({DIMS})"
    _assert_exact(backend, halves, 3)
    backend.migrate_vector_type("vector")  # already: nothing to do


async def test_a_backend_follows_a_table_another_process_converted(make_backend, pg_url):
    from langchain_ltm.backends.postgres import postgres_backend

    backend = make_backend(dims=DIMS)  # no vector_type given: whatever the table has
    _fill(backend, _vectors())
    asked = postgres_backend(pg_url, table=backend.tables.table, vector_type="vector")
    other = postgres_backend(pg_url, table=backend.tables.table)
    try:
        other.migrate_vector_type("halfvec")  # another process converts the table
        other.setup()  # it asked for halfvec by converting: its own setup stays fine
        backend.setup()
        await backend.asetup()
        assert backend.vector_type == other.vector_type == "halfvec"
        with pytest.raises(ValueError, match="stores its embeddings as halfvec"):
            asked.setup()  # asked for float32 outright: told, not followed
    finally:
        asked.close()
        other.close()


def test_bad_vector_types_and_foreign_ann_indexes_raise_and_change_nothing(make_backend, pg_conn):
    with pytest.raises(ValueError, match=r"'vector' .* or 'halfvec'"):
        make_backend(dims=DIMS, vector_type="float8")
    backend = make_backend(dims=DIMS)
    _fill(backend, _vectors())
    with pytest.raises(ValueError, match=r"'vector' .* or 'halfvec'"):
        backend.migrate_vector_type("bit")
    name = f"mine_{backend.tables.table}"
    pg_conn.execute(
        f"CREATE INDEX {name} ON {backend.tables.vectors} USING hnsw (embedding vector_l2_ops)"
    )
    with pytest.raises(ValueError, match=name):
        backend.migrate_vector_type("halfvec")
    assert _column_type(pg_conn, backend) == f"vector({DIMS})"
    assert backend.vector_type == "vector"
    assert backend.count(("m",)) == USERS * PER_USER


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_migrating_changes_nothing_while_another_session_holds_the_tables(
    make_backend, pg_url, pg_conn, mode
):
    """It waited without end behind an open transaction, and every later read of the store
    queued behind its lock request (a recall stood 20 s); it gives up after lock_timeout."""
    backend = make_backend(dims=DIMS)
    _fill(backend, _vectors())
    with psycopg.connect(pg_url) as reader:  # an open transaction that read the store
        reader.execute(f"SELECT count(*) FROM {backend.tables.vectors}").fetchone()
        started = time.perf_counter()

        def migrate() -> None:
            if mode == "async":
                asyncio.run(backend.amigrate_vector_type("halfvec", lock_timeout=0.2))
            else:
                backend.migrate_vector_type("halfvec", lock_timeout=0.2)

        with pytest.raises(StoreInUseError, match="the vectors were not converted"):
            migrate()
        assert time.perf_counter() - started < 10
        reader.rollback()
    assert _column_type(pg_conn, backend) == f"vector({DIMS})"
    assert backend.vector_type == "vector"
    with pytest.raises(ValueError, match="lock_timeout must be a number of seconds"):
        backend.migrate_vector_type("halfvec", lock_timeout=0)
    backend.migrate_vector_type("halfvec")  # alone now: it works
    assert _column_type(pg_conn, backend) == f"halfvec({DIMS})"


def test_a_conversion_holds_up_only_its_own_stores_openers(make_backend, pg_url, pg_conn):
    """migrate_vector_type took one database-wide lock for its whole transaction, and
    setup took it too before any lock_timeout: while table A converted (5.5 min for the
    HNSW rebuild at 1M rows), opening any other store waited with no time limit. The lock
    is the store's own: another store opens at once, and an opener of A gives up after
    MIGRATION_LOCK_TIMEOUT (3 s) with StoreInUseError. Here the conversion is held at its
    LOCK TABLE by a session that read A, for as long as the test needs."""
    from langchain_ltm.backends.postgres import postgres_backend

    converted = make_backend(dims=DIMS)
    _fill(converted, _vectors())
    other = make_backend(dims=DIMS)  # an unrelated store, set up
    failures: list[BaseException] = []
    with psycopg.connect(pg_url) as reader:  # an open transaction that read A
        reader.execute(f"SELECT count(*) FROM {converted.tables.vectors}").fetchone()

        def migrate() -> None:
            try:
                converted.migrate_vector_type("halfvec", lock_timeout=60)
            except BaseException as exc:
                failures.append(exc)

        thread = threading.Thread(target=migrate)
        thread.start()
        try:
            waiting = None
            for _ in range(100):  # until the conversion waits at its LOCK TABLE
                waiting = pg_conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND query LIKE 'LOCK TABLE%%'"
                ).fetchone()[0]
                if waiting:
                    break
                time.sleep(0.1)
            assert waiting, "the conversion never reached its LOCK TABLE"
            started = time.monotonic()
            postgres_backend(pg_url, table=other.tables.table).close()
            assert time.monotonic() - started < 2.5  # not behind A's conversion
            started = time.monotonic()
            with pytest.raises(StoreInUseError, match="migrate_vector_type of this store"):
                postgres_backend(pg_url, table=converted.tables.table)
            assert 2.5 < time.monotonic() - started < 10  # bounded: MIGRATION_LOCK_TIMEOUT
            assert thread.is_alive()  # the conversion still waits, holding its lock
        finally:
            reader.rollback()  # the conversion goes ahead
            thread.join(60)
    assert failures == []
    assert _column_type(pg_conn, converted) == f"halfvec({DIMS})"
    again = postgres_backend(pg_url, table=converted.tables.table)
    try:
        assert again.vector_type == "halfvec"
    finally:
        again.close()


def test_from_postgres_halfvec_remembers_and_recalls(pg_url, pg_conn):
    import uuid

    table = f"t_{uuid.uuid4().hex[:12]}"
    store = LongTermMemoryStore.from_postgres(
        pg_url, KeywordEmbeddings(dims=32), table=table, dims=32, vector_type="halfvec"
    )
    try:
        store.remember("ada", "Prefers answers in Spanish")
        store.remember("ada", "Works as a nurse in Lyon")
        hits = store.recall("ada", "which language do I prefer? Spanish", limit=1)
        assert [h.content for h in hits] == ["Prefers answers in Spanish"]
        assert _column_type(pg_conn, store.backend) == "halfvec(32)"
    finally:
        store.backend.drop()
        store.backend.close()
