"""The per-user search plan on Postgres: no ANN index can take it over, whatever exists.

The ranked search's two statements order by the negated distance (the best rows first) or
by an aggregate (each item's best score over its texts), which no index can produce, and
find the user's rows through the ``(ns_path, key)`` btree. These
tests add every ANN index a user might add (HNSW for cosine, inner product and L2, IVFFlat),
push the planner towards index scans, and read both plans Postgres can choose: the custom
plan for the bound values and the generic plan the store's prepared statements keep.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pytest
from psycopg import pq

from langchain_ltm._filters import compile_filter
from langchain_ltm.backends.base import Record, SearchRequest
from langchain_ltm.backends.postgres import _reads
from langchain_ltm.backends.postgres import _sql as _pg_sql

DIMS, USERS, PER_USER = 16, 200, 10

_ANN_INDEXES = (
    "USING hnsw (embedding vector_cosine_ops)",
    "USING hnsw (embedding vector_ip_ops)",
    "USING hnsw (embedding vector_l2_ops)",
    "USING ivfflat (embedding vector_cosine_ops) WITH (lists = 4)",
)


@pytest.fixture
def indexed(make_backend, pg_conn):
    """A table of USERS users with PER_USER facts each and every kind of ANN index."""
    backend = make_backend(dims=DIMS)
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((USERS * PER_USER, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    now = datetime.now(timezone.utc)
    records = [
        Record(("m", f"u{n % USERS}"), f"k{n}", {"n": n}, ("t",), ("t",), vec[None, :], now)
        for n, vec in enumerate(vectors)
    ]
    for start in range(0, len(records), 500):
        backend.write(records[start : start + 500], [])
    backend.create_hnsw_index()
    for n, using in enumerate(_ANN_INDEXES):
        name = f"ann_{n}_{backend.tables.table}"
        pg_conn.execute(f"CREATE INDEX {name} ON {backend.tables.vectors} {using}")
    pg_conn.execute(f"ANALYZE {backend.tables.items}, {backend.tables.vectors}")
    return backend, vectors


def _request(vectors: np.ndarray, user: int, **kwargs: Any) -> SearchRequest:
    query = vectors[user] + 0.1  # near the user's first fact, not equal to it
    query = (query / np.linalg.norm(query)).astype(np.float32)
    return SearchRequest(("m", f"u{user}"), query[None, :], limit=5, **kwargs)


def _statements(backend, request: SearchRequest) -> list[_pg_sql.Statement]:
    """Both statements a per-user search may run: the best rows first, then the grouped one."""
    wanted = request.offset + (request.limit or 0)
    return [
        next(_reads.search(backend.tables, request)),
        next(_reads._grouped(backend.tables, request, wanted)),
    ]


def _explain(
    backend, pg_conn, statement: _pg_sql.Statement, *, generic: bool, pressure: bool
) -> str:
    """The plan of a search statement, custom (values bound) or generic (``$n`` unknown)."""
    settings = ["enable_sort", "enable_seqscan", "enable_hashagg"] if pressure else []
    if generic:
        # EXPLAIN (GENERIC_PLAN) plans with unknown parameters, as a prepared statement under
        # plan_cache_mode = force_generic_plan does (our pools' setting); it has to go through
        # the simple query protocol, which sends no parameters
        count = iter(range(1, 10_000))
        text = re.sub(r"%[sb]", lambda _: f"${next(count)}", statement.sql)
        script = "".join(f"SET LOCAL {name} = off; " for name in settings)
        raw = pg_conn.pgconn
        assert raw.exec_(b"BEGIN").status == pq.ExecStatus.COMMAND_OK
        try:
            raw.exec_(script.encode() or b"SELECT 1")
            result = raw.exec_(("EXPLAIN (GENERIC_PLAN) " + text).encode())
            assert result.status == pq.ExecStatus.TUPLES_OK, result.error_message
            return "\n".join(
                (result.get_value(row, 0) or b"").decode() for row in range(result.ntuples)
            )
        finally:
            raw.exec_(b"ROLLBACK")

    def exchange():
        for name in settings:  # make every sort and sequential scan look ruinous
            yield _pg_sql.Statement(f"SET LOCAL {name} = off")
        rows = yield _pg_sql.Statement("EXPLAIN " + statement.sql, statement.params)
        return "\n".join(row[0] for row in rows)

    return backend.connector.run(exchange, "explain", transaction=True)


@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
@pytest.mark.parametrize("pressure", [False, True], ids=["default", "no-sort-no-seqscan"])
def test_per_user_plan_uses_the_scope_btree_and_no_ann_index(indexed, pg_conn, generic, pressure):
    backend, vectors = indexed
    requests = [
        _request(vectors, 7),
        _request(vectors, 7, filter=compile_filter({"n": {"$gte": 0}})),
    ]
    statements = [st for request in requests for st in _statements(backend, request)]
    assert "GROUP BY" not in statements[0].sql and "GROUP BY" in statements[1].sql
    plans = [
        _explain(backend, pg_conn, st, generic=generic, pressure=pressure) for st in statements
    ]
    for plan in plans:
        assert "_vectors_scope" in plan, plan  # the user's rows through the btree
        for forbidden in ("hnsw", "ivfflat", "ann_"):
            assert forbidden not in plan.lower(), plan


def test_per_user_search_is_exact_with_every_ann_index_present(indexed):
    backend, vectors = indexed
    for user in (0, 7, USERS - 1):
        request = _request(vectors, user)
        (hits,) = backend.search(request)
        rows = np.arange(user, USERS * PER_USER, USERS)
        query = request.vectors[0].astype(np.float64)
        scores = vectors[rows].astype(np.float64) @ query
        expected = [f"k{n}" for n in rows[np.argsort(-scores, kind="stable")[:5]]]
        assert [h.item.key for h in hits] == expected
        assert [h.score for h in hits] == pytest.approx(sorted(scores, reverse=True)[:5], abs=1e-5)
