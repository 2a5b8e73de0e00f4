"""The per-user search's first statement (the best vector rows) against brute force.

``_reads._best_rows`` answers alone only when its rows are distinct passing items or all the
scope has; items with several texts, filters and expired items send it to the grouped
statement. Every case is compared with scores computed here from the stored vectors.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from langchain_ltm._filters import compile_filter
from langchain_ltm.backends.base import Record, SearchRequest
from langchain_ltm.backends.postgres import _reads

DIMS = 6


@pytest.fixture
def stored(make_backend):
    """Three users; items with one to three texts; every fourth item expires in a minute."""
    backend = make_backend(dims=DIMS)
    rng = np.random.default_rng(23)
    now = datetime.now(timezone.utc)
    truth = []  # (user, key, value, vectors, expires)
    records = []
    for n in range(60):
        user = n % 3
        texts = 1 + (n % 7 == 0) + (n % 11 == 0)  # some items with two or three texts
        vectors = rng.standard_normal((texts, DIMS)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        ttl = 1.0 if n % 4 == 3 else None
        value = {"n": n, "g": n % 2}
        paths = tuple(f"t{j}" for j in range(texts))
        records.append(
            Record(
                ("m", f"u{user}"), f"k{n:02d}", value, paths, paths, vectors, now, ttl_minutes=ttl
            )
        )
        truth.append((user, f"k{n:02d}", value, vectors, ttl is not None))
    backend.write(records, [])
    return backend, truth, now


def _expected(truth, user, query, *, g=None, alive=False, offset=0, limit=5):
    ranked = []
    for owner, key, value, vectors, expires in truth:
        if owner != user or (g is not None and value["g"] != g) or (alive and expires):
            continue
        score = float((vectors.astype(np.float64) @ query.astype(np.float64)).max())
        ranked.append((-score, key))
    ranked.sort()
    return [(key, -neg) for neg, key in ranked[offset : offset + limit]]


@pytest.mark.parametrize("limit", [1, 3, 5, 12, 40])
@pytest.mark.parametrize("offset", [0, 2])
@pytest.mark.parametrize("case", ["plain", "filter", "expired", "both"])
def test_the_best_rows_or_the_grouped_statement_give_the_exact_answer(stored, limit, offset, case):
    backend, truth, now = stored
    rng = np.random.default_rng(limit * 10 + offset)
    g = 1 if case in ("filter", "both") else None
    alive = case in ("expired", "both")
    for user in range(3):
        query = rng.standard_normal(DIMS).astype(np.float32)
        query /= np.linalg.norm(query)
        request = SearchRequest(
            ("m", f"u{user}"),
            query[None, :],
            compile_filter({"g": g}) if g is not None else (),
            limit,
            offset,
            now + timedelta(minutes=5) if alive else None,
        )
        (hits,) = backend.search(request)
        want = _expected(truth, user, query, g=g, alive=alive, offset=offset, limit=limit)
        assert [h.item.key for h in hits] == [key for key, _ in want]
        assert [h.score for h in hits] == pytest.approx([score for _, score in want], abs=1e-5)


def test_it_falls_back_when_an_item_has_several_rows_among_the_best(stored):
    """An item's second text among the best rows: the first statement alone is not enough."""
    backend, truth, _ = stored
    user, key, _, vectors, _ = next(t for t in truth if len(t[3]) == 3)
    query = vectors[:2].sum(axis=0)  # close to two of its three texts
    query = (query / np.linalg.norm(query)).astype(np.float32)
    request = SearchRequest(("m", f"u{user}"), query[None, :], limit=3)
    exchange = _reads.search(backend.tables, request)
    first = next(exchange)

    def run_first():
        return (yield first)

    rows = backend.connector.run(run_first, "search")
    assert [row[2] for row in rows[:2]] == [key, key]  # the same item twice
    second = exchange.send(rows)  # so the grouped statement follows
    assert "GROUP BY" in second.sql
    (hits,) = backend.search(request)
    assert [h.item.key for h in hits] == [k for k, _ in _expected(truth, user, query, limit=3)]
    assert len({h.item.key for h in hits}) == 3
