"""Bounded reads through ``_direct`` (named prepared statements, no cursor), on a real server."""

from __future__ import annotations

import contextlib
import uuid
from datetime import datetime, timedelta, timezone

import numpy as np
import psycopg
import pytest
from psycopg_pool import ConnectionPool

from langchain_ltm.backends.base import Record, SearchRequest
from langchain_ltm.backends.postgres import _direct, postgres_backend
from langchain_ltm.backends.postgres._sql import Statement
from langchain_ltm.errors import BackendError


def _filled(make_backend, **kwargs):
    backend = make_backend(dims=4, max_size=1, **kwargs)
    vec = np.eye(4, dtype=np.float32)
    now = datetime.now(timezone.utc)
    backend.write(
        [Record(("m", f"u{n % 2}"), f"k{n}", {"n": n, "text": "é ✓ 🙂"}, ("t",), ("t",),
                vec[n][None, :], now)
         for n in range(4)],
        [],
    )  # fmt: skip
    return backend, vec


def _prepared_names(backend) -> list[str]:
    def names():
        rows = yield Statement("SELECT name FROM pg_prepared_statements ORDER BY name")
        return [row[0] for row in rows]

    return backend.connector.run(names, "search")


def _keys(backend, user: int, vec, **kwargs) -> list[str]:
    (hits,) = backend.search(SearchRequest(("m", f"u{user}"), vec[user][None, :], **kwargs))
    return [hit.item.key for hit in hits]


def test_a_search_is_prepared_once_by_name_and_answers_as_before(make_backend):
    backend, vec = _filled(make_backend)
    assert _keys(backend, 0, vec, limit=2) == ["k0", "k2"]
    (hits,) = backend.search(SearchRequest(("m", "u1"), vec[1][None, :], limit=2))
    assert [h.item.value for h in hits] == [
        {"n": 1, "text": "é ✓ 🙂"},
        {"n": 3, "text": "é ✓ 🙂"},
    ]
    assert hits[0].score == pytest.approx(1.0)
    assert hits[0].item.created_at.tzinfo is not None
    ours = [name for name in _prepared_names(backend) if name.startswith("_ltm_")]
    assert len(ours) == 1  # the second search reused the first one's statement


def test_statements_dropped_behind_its_back_are_prepared_again(make_backend):
    backend, vec = _filled(make_backend)
    assert _keys(backend, 0, vec, limit=2) == ["k0", "k2"]

    def run(command: str):
        def exchange():
            yield Statement(command)

        backend.connector.run(exchange, "search")

    run("DEALLOCATE ALL")
    assert _keys(backend, 1, vec, limit=2) == ["k1", "k3"]  # retried, prepared again
    assert len([n for n in _prepared_names(backend) if n.startswith("_ltm_")]) == 1
    # dropped a second time (a pool whose reset runs DISCARD ALL): unnamed from then on,
    # one round trip per read instead of a failed one, a prepare and a retry
    run("DISCARD ALL")
    run("SELECT set_config('TimeZone', 'UTC', false)")
    for user in (0, 1, 0):
        assert _keys(backend, user, vec, limit=2) == [f"k{user}", f"k{user + 2}"]
    assert not [n for n in _prepared_names(backend) if n.startswith("_ltm_")]


@contextlib.contextmanager
def _handed_in(pg_url, **kwargs):
    """A one-connection pool handed in, a backend over it holding one fact, and the pool."""
    pool = ConnectionPool(pg_url, min_size=1, max_size=1, kwargs=kwargs, open=True)
    backend = postgres_backend(pool, table=f"t_{uuid.uuid4().hex[:12]}", dims=4)
    try:
        vec = np.eye(4, dtype=np.float32)
        now = datetime.now(timezone.utc)
        backend.write([Record(("m", "u0"), "k0", {"n": 0}, ("t",), ("t",), vec[:1], now)], [])
        yield backend, pool, vec
    finally:
        backend.drop()
        backend.close()
        pool.close()


def _our_names(conn) -> list[str]:
    names = conn.execute("SELECT name FROM pg_prepared_statements").fetchall()
    return [n for (n,) in names if n.startswith("_ltm_")]


def test_without_prepared_statements_reads_run_unnamed(pg_url):
    """``prepare_threshold=None`` (a transaction-pooling proxy): no statement is prepared."""
    with _handed_in(pg_url, autocommit=True, prepare_threshold=None) as (backend, pool, vec):
        for _ in range(3):
            (hits,) = backend.search(SearchRequest(("m", "u0"), vec[:1], limit=2))
            assert [h.item.key for h in hits] == ["k0"]
        with pool.connection() as conn:
            assert getattr(conn, _direct._STATE, None) is not None  # the direct path ran
            assert not _our_names(conn)


def test_names_carry_a_token_of_their_connection(make_backend):
    first, vec = _filled(make_backend)
    second, _ = _filled(make_backend)
    _keys(first, 0, vec, limit=2)
    _keys(second, 0, vec, limit=2)
    (a,) = [n for n in _prepared_names(first) if n.startswith("_ltm_")]
    (b,) = [n for n in _prepared_names(second) if n.startswith("_ltm_")]
    assert a != b  # two clients never name a statement alike


def test_a_name_dropped_alone_is_not_reused(make_backend):
    backend, vec = _filled(make_backend)
    _keys(backend, 0, vec, limit=2)
    _keys(backend, 0, vec, limit=2, alive_at=datetime.now(timezone.utc))  # a second shape
    first = sorted(n for n in _prepared_names(backend) if n.startswith("_ltm_"))
    assert len(first) == 2

    def drop_one():
        yield Statement(f"DEALLOCATE {first[0]}")

    backend.connector.run(drop_one, "search")
    # the dropped one is prepared again under a new name, beside the one still there
    assert _keys(backend, 1, vec, limit=2) == ["k1", "k3"]
    assert _keys(backend, 1, vec, limit=2, alive_at=datetime.now(timezone.utc)) == ["k1", "k3"]


def test_parameter_types_that_change_get_their_own_statement(make_backend):
    backend, vec = _filled(make_backend)
    # psycopg dumps small ints as int2 and large ones as int8: each has its own statement
    assert _keys(backend, 0, vec, limit=2) == ["k0", "k2"]
    assert _keys(backend, 0, vec, limit=2, offset=40_000) == []
    assert _keys(backend, 0, vec, limit=5_000_000_000) == ["k0", "k2"]
    assert _keys(backend, 0, vec, limit=2) == ["k0", "k2"]


def test_past_the_cap_reads_run_unprepared(make_backend, monkeypatch):
    monkeypatch.setattr(_direct, "MAX_PREPARED", 1)
    backend, vec = _filled(make_backend)
    assert _keys(backend, 0, vec, limit=2) == ["k0", "k2"]
    later = datetime.now(timezone.utc) + timedelta(days=1)
    assert _keys(backend, 1, vec, limit=2, alive_at=later) == ["k1", "k3"]
    assert len([n for n in _prepared_names(backend) if n.startswith("_ltm_")]) == 1


def test_a_failing_read_raises_and_leaves_the_connection_usable(make_backend):
    backend, vec = _filled(make_backend)

    def failing():
        yield Statement("SELECT 1/%s", (0,))

    with pytest.raises(BackendError, match="division by zero"):
        backend.connector.run(failing, "search", keep_cursor=True)
    assert _keys(backend, 0, vec, limit=2) == ["k0", "k2"]


async def test_async_reads_take_the_same_path(make_backend):
    backend, vec = _filled(make_backend)
    for user in (0, 1, 0):
        (hits,) = await backend.asearch(
            SearchRequest(("m", f"u{user}"), vec[user][None, :], limit=2)
        )
        assert [h.item.key for h in hits] == [f"k{user}", f"k{user + 2}"]
    (item,) = await backend.aget([(("m", "u1"), "k3")])
    assert item is not None and item.value["n"] == 3


def test_a_pool_without_autocommit_keeps_the_cursor_path(pg_url):
    with _handed_in(pg_url) as (backend, pool, vec):
        (hits,) = backend.search(SearchRequest(("m", "u0"), vec[:1], limit=2))
        assert [h.item.key for h in hits] == ["k0"]
        with pool.connection() as conn:
            assert not conn.autocommit
            assert getattr(conn, _direct._STATE, None) is None
            assert not _our_names(conn)


@pytest.mark.parametrize("sql", ["SELECT %(name)s", "SELECT '100%%'"])
def test_placeholders_it_does_not_convert_are_refused(sql):
    with pytest.raises(ValueError, match="Unsupported placeholder"):
        _direct.numbered(sql)


def test_placeholders_are_numbered_in_order():
    query, formats = _direct.numbered("SELECT %s, %b::vector, %s")
    assert query == b"SELECT $1, $2::vector, $3"
    assert [f.name for f in formats] == ["AUTO", "BINARY", "AUTO"]


def test_a_transaction_keeps_the_cursor_path(pg_url):
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert _direct.usable(conn)
        with conn.transaction():
            assert not _direct.usable(conn)
        with conn.pipeline():
            assert not _direct.usable(conn)
    with psycopg.connect(pg_url) as conn:
        assert not _direct.usable(conn)
