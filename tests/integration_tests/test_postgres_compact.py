"""``PostgresBackend.compact`` and ``ltm compact`` on Postgres: rows in user order, nothing lost.

Real Postgres (pgserver). Users' rows are written interleaved, as facts arrive over time,
so each user's rows start spread over the tables; compacting must leave every table in
``ns_path`` order on disk (read back through ``ctid``), every item, text and vector as it
was, the same search answers, the space of deleted rows given back, and nothing changed at
all when another session keeps the tables busy.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from langchain_ltm import LongTermMemoryStore, cli
from langchain_ltm.backends.base import Record, SearchRequest
from langchain_ltm.backends.postgres import Compacted, StoreInUseError
from tests.fakes import KeywordEmbeddings

DIMS, USERS, PER_USER = 16, 12, 25


def _fill(backend: Any, users: int = USERS, per_user: int = PER_USER) -> np.ndarray:
    """``users * per_user`` items written round robin over the users (a user's rows spread)."""
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((users * per_user, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    now = datetime(2026, 1, 2, tzinfo=timezone.utc)
    records = [
        Record(
            ("m", f"u{n % users}"),
            f"k{n}",
            {"n": n, "text": f"fact {n}"},
            (f"fact {n}",),
            ("text",),
            vectors[n][None, :],
            now,
        )
        for n in range(users * per_user)
    ]
    for start in range(0, len(records), 50):  # several transactions, as a store fills up
        backend.write(records[start : start + 50], [])
    return vectors


def _disk_order(pg_conn: psycopg.Connection[Any], table: str) -> list[str]:
    rows = pg_conn.execute(f"SELECT ns_path FROM {table} ORDER BY ctid").fetchall()
    return [row[0] for row in rows]


def _snapshot(pg_conn: psycopg.Connection[Any], backend: Any) -> tuple[list[Any], list[Any]]:
    """Every item row and every vector row, in key order (what must survive compacting)."""
    t = backend.tables
    items = pg_conn.execute(
        f"SELECT ns_path, key, value::text, created_at, updated_at, expires_at, ttl_minutes "
        f"FROM {t.items} ORDER BY ns_path, key"
    ).fetchall()
    vectors = pg_conn.execute(
        f"SELECT langchain_id, content, embedding::text, langchain_metadata::text, ns_path, "
        f"key, path FROM {t.vectors} ORDER BY langchain_id"
    ).fetchall()
    return items, vectors


def _top5(backend: Any, user: int) -> list[tuple[str, float]]:
    query = np.random.default_rng(100 + user).standard_normal(DIMS).astype(np.float32)
    query /= np.linalg.norm(query)
    (hits,) = backend.search(SearchRequest(("m", f"u{user}"), query[None, :], limit=5))
    return [(hit.item.key, hit.score) for hit in hits]


def test_compact_puts_each_users_rows_together_and_loses_nothing(make_backend, pg_conn):
    backend = make_backend(dims=DIMS)
    _fill(backend)
    t = backend.tables
    assert _disk_order(pg_conn, t.items) != sorted(_disk_order(pg_conn, t.items))  # spread
    assert _disk_order(pg_conn, t.vectors) != sorted(_disk_order(pg_conn, t.vectors))
    before = _snapshot(pg_conn, backend)
    answers = {user: _top5(backend, user) for user in range(USERS)}

    done = backend.compact()

    assert isinstance(done, Compacted)
    assert done.path == f"public.{t.table} and public.{t.table}_vectors"
    assert done.before > 0 and done.after > 0 and done.seconds >= 0
    for table in (t.items, t.vectors):
        order = _disk_order(pg_conn, table)
        assert order == sorted(order)  # each user's rows one after another
    assert _snapshot(pg_conn, backend) == before  # every row, value, vector and time
    assert {user: _top5(backend, user) for user in range(USERS)} == answers
    # the store still writes and finds afterwards
    rec = Record(
        ("m", "u0"),
        "late",
        {"text": "late"},
        ("late",),
        ("text",),
        np.ones((1, DIMS), dtype=np.float32) / math.sqrt(DIMS),
        datetime.now(timezone.utc),
    )
    backend.write([rec], [])
    assert backend.get([(("m", "u0"), "late")])[0] is not None


def test_compact_gives_back_the_space_of_deleted_items(make_backend, pg_conn):
    backend = make_backend(dims=DIMS)
    _fill(backend, users=4, per_user=150)
    gone = [(("m", f"u{n % 4}"), f"k{n}") for n in range(600) if n % 4 != 0]
    backend.write([], gone)
    kept = _snapshot(pg_conn, backend)
    assert len(kept[0]) == 150

    done = backend.compact()

    assert done.after < done.before / 2 and done.freed == done.before - done.after
    on_disk = pg_conn.execute(
        "SELECT pg_total_relation_size(%s::regclass) + pg_total_relation_size(%s::regclass)",
        (backend.tables.items, backend.tables.vectors),
    ).fetchone()
    assert on_disk is not None and on_disk[0] == done.after
    assert _snapshot(pg_conn, backend) == kept


def test_compact_changes_nothing_while_another_session_holds_the_tables(
    make_backend, pg_url, pg_conn
):
    backend = make_backend(dims=DIMS)
    _fill(backend)
    t = backend.tables
    files = "SELECT pg_relation_filenode(%s::regclass), pg_relation_filenode(%s::regclass)"
    nodes = pg_conn.execute(files, (t.items, t.vectors)).fetchone()
    order = _disk_order(pg_conn, t.vectors)
    with psycopg.connect(pg_url) as reader:  # an open transaction that read the store
        reader.execute(f"SELECT count(*) FROM {t.vectors}").fetchone()
        with pytest.raises(StoreInUseError, match="nothing was changed"):
            backend.compact(lock_timeout=0.2)
        reader.rollback()
    assert pg_conn.execute(files, (t.items, t.vectors)).fetchone() == nodes  # not rewritten
    assert _disk_order(pg_conn, t.vectors) == order
    assert backend.compact().after > 0  # alone now: it works


@pytest.mark.parametrize("held_first", ["items", "vectors"])
def test_compact_does_not_wait_past_lock_timeout_for_a_table_locked_outright(
    make_backend, pg_url, pg_conn, held_first
):
    """Even measuring the tables' size waits for a lock: the timeout must already apply.

    The other session lets go after 20 s; a compact that waited for it would then succeed.
    """
    backend = make_backend(dims=DIMS)
    _fill(backend)
    t = backend.tables
    table = t.items if held_first == "items" else t.vectors
    before = _snapshot(pg_conn, backend)
    with psycopg.connect(pg_url) as holder:
        holder.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        release = threading.Timer(20, holder.rollback)
        release.start()
        try:
            with pytest.raises(StoreInUseError, match="nothing was changed"):
                backend.compact(lock_timeout=0.2)

            async def run() -> None:
                with pytest.raises(StoreInUseError, match="nothing was changed"):
                    await backend.acompact(lock_timeout=0.2)

            asyncio.run(run())
            assert release.is_alive()  # refused while the lock was still held
        finally:
            release.cancel()
            holder.rollback()
    assert _snapshot(pg_conn, backend) == before


@pytest.mark.parametrize(
    "bad", [0, -1, float("nan"), float("inf"), 2_147_484, 1e12, True, "10", None]
)
def test_compact_refuses_a_bad_lock_timeout_before_any_io(bad):
    from langchain_ltm.backends.postgres import postgres_backend

    backend = postgres_backend("postgresql://nowhere.invalid/x", setup=False)
    try:
        with pytest.raises(ValueError, match="lock_timeout must be a number of seconds"):
            backend.compact(lock_timeout=bad)
        with pytest.raises(ValueError, match="lock_timeout must be a number of seconds"):
            asyncio.run(backend.acompact(lock_timeout=bad))
    finally:
        backend.close()


def test_acompact_is_the_async_twin(make_backend, pg_conn):
    backend = make_backend(dims=DIMS)
    _fill(backend)
    before = _snapshot(pg_conn, backend)

    async def run() -> Compacted:
        try:
            return await backend.acompact()
        finally:
            await backend.aclose()

    done = asyncio.run(run())
    assert done.before > 0 and done.after > 0
    order = _disk_order(pg_conn, backend.tables.vectors)
    assert order == sorted(order)
    assert _snapshot(pg_conn, backend) == before


def test_compact_rebuilds_an_hnsw_index_which_broad_search_still_uses(make_backend, pg_conn):
    backend = make_backend(dims=DIMS)
    _fill(backend)
    backend.create_hnsw_index()
    index = f"{backend.tables.table}_vectors_hnsw"
    node = "SELECT pg_relation_filenode(%s::regclass)"
    built = pg_conn.execute(node, (index,)).fetchone()
    backend.compact()
    rebuilt = pg_conn.execute(node, (index,)).fetchone()
    assert rebuilt is not None and rebuilt != built  # a new graph (calibrate it again)
    valid = pg_conn.execute(
        "SELECT indisvalid FROM pg_index WHERE indexrelid = %s::regclass", (index,)
    ).fetchone()
    assert valid == (True,)
    query = np.ones((1, DIMS), dtype=np.float32) / math.sqrt(DIMS)
    (hits,) = backend.search(SearchRequest(("m",), query, limit=10))
    assert len(hits) == 10


@pytest.fixture
def own_database(pg_url: str, pg_conn: psycopg.Connection[Any]) -> Iterator[str]:
    """A fresh database of its own (``ltm`` uses the default table names), dropped after."""
    name = f"ltm_compact_{uuid.uuid4().hex[:8]}"
    pg_conn.execute(f"CREATE DATABASE {name}")
    url = make_conninfo(pg_url, dbname=name)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    try:
        yield url
    finally:
        pg_conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _as_url(conninfo: str) -> str:
    params = dict(part.split("=", 1) for part in conninfo.split())
    return (
        f"postgresql://{params.get('user', 'postgres')}@/{params['dbname']}?host={params['host']}"
    )


def test_ltm_compact_on_postgres(own_database, capsys, monkeypatch):
    monkeypatch.delenv("LTM_STORE", raising=False)
    url = _as_url(own_database)
    assert cli.main(["compact", "--store", url]) == 1  # no tables yet: nothing to compact
    assert "there is no store at" in capsys.readouterr().err
    with psycopg.connect(own_database) as conn:  # and none was created by asking
        assert conn.execute("SELECT to_regclass('ltm_items')").fetchone() == (None,)

    embeddings = KeywordEmbeddings(dims=64)
    with LongTermMemoryStore.from_postgres(url, embeddings) as store:
        for n in range(40):
            store.remember(f"user{n % 5}", f"fact number {n} about topic {n % 7}")
        listed = {f"user{u}": store.list_all(f"user{u}") for u in range(5)}

    assert cli.main(["compact", "--store", url, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["store"] == "public.ltm_items and public.ltm_items_vectors"
    assert report["bytes_before"] > 0 and report["bytes_after"] > 0
    assert report["bytes_freed"] == report["bytes_before"] - report["bytes_after"]
    assert cli.main(["compact", "--store", url]) == 0
    assert "compacted public.ltm_items and public.ltm_items_vectors:" in capsys.readouterr().out
    with LongTermMemoryStore.from_postgres(url, embeddings) as store:
        assert {f"user{u}": store.list_all(f"user{u}") for u in range(5)} == listed


def test_ltm_compact_on_a_busy_postgres_store_exits_3_and_changes_nothing(
    own_database, capsys, monkeypatch
):
    monkeypatch.delenv("LTM_STORE", raising=False)
    url = _as_url(own_database)
    with LongTermMemoryStore.from_postgres(url, KeywordEmbeddings(dims=64)) as store:
        for n in range(10):
            store.remember(f"user{n % 2}", f"fact number {n}")
        listed = {u: store.list_all(u) for u in ("user0", "user1")}
    with psycopg.connect(own_database) as holder:
        holder.execute("LOCK TABLE ltm_items_vectors IN ACCESS EXCLUSIVE MODE")
        assert cli.main(["compact", "--store", url, "--lock-timeout", "0.2"]) == 3
        err = capsys.readouterr().err
        assert "busy for 0.2 s" in err and "nothing was compacted" in err
        assert "--lock-timeout" in err  # the option that waits longer
        holder.rollback()
    with LongTermMemoryStore.from_postgres(url, KeywordEmbeddings(dims=64)) as store:
        assert {u: store.list_all(u) for u in ("user0", "user1")} == listed
    assert cli.main(["compact", "--store", url, "--lock-timeout", "30"]) == 0  # quiet now


def test_ltm_compact_without_the_vectors_table_names_both_tables(own_database, capsys, monkeypatch):
    monkeypatch.delenv("LTM_STORE", raising=False)
    url = _as_url(own_database)
    with LongTermMemoryStore.from_postgres(url, KeywordEmbeddings(dims=64)) as store:
        store.remember("user0", "a fact")
    with psycopg.connect(own_database, autocommit=True) as conn:
        conn.execute("DROP TABLE ltm_items_vectors")
    assert cli.main(["compact", "--store", url]) == 1
    assert "no table ltm_items or ltm_items_vectors" in capsys.readouterr().err
    with psycopg.connect(own_database) as conn:  # the items are where they were
        assert conn.execute("SELECT count(*) FROM ltm_items").fetchone() == (1,)
