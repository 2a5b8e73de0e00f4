"""The write statement's whole-array binary parameters (``_wire``) reach Postgres unchanged."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg.types import TypeInfo

from langchain_ltm._ids import vector_id, vector_id_bytes
from langchain_ltm.backends.base import Record
from langchain_ltm.backends.postgres import _sql
from langchain_ltm.backends.postgres._conn import _register_vector
from langchain_ltm.backends.postgres._wire import JsonbRows, UuidRows, VectorRows


@pytest.fixture
def conn(pg_url: str) -> Any:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        info = TypeInfo.fetch(conn, "vector")
        assert info is not None
        _register_vector(conn, info)
        yield conn


@pytest.mark.parametrize("rows", [0, 1, 3, 1000])
def test_vector_rows_arrive_as_the_same_float32_values(conn: Any, rows: int) -> None:
    matrix = np.random.default_rng(rows).standard_normal((rows, 7)).astype(np.float32)
    matrix[0:1, 0] = np.float32(1e-40) if rows else 0  # a subnormal survives too
    with conn.cursor(binary=True) as cur:
        cur.execute(
            "SELECT cardinality(%b::vector[]), "
            "(SELECT array_agg(e::real[] ORDER BY n) FROM unnest(%b::vector[]) "
            "WITH ORDINALITY AS u(e, n))",
            (VectorRows(matrix), VectorRows(matrix)),
        )
        count, back = cur.fetchone()
    assert count == rows
    if rows:
        assert np.array_equal(np.array(back, dtype=np.float32), matrix)
    else:
        assert back is None


def test_vector_rows_of_other_sizes_are_refused_by_the_column(conn: Any) -> None:
    conn.execute("CREATE TEMP TABLE v3 (e vector(3))")
    with pytest.raises(psycopg.errors.DataException, match="expected 3 dimensions, not 4"):
        conn.cursor(binary=True).execute(
            "INSERT INTO v3 SELECT unnest(%b::vector[])",
            (VectorRows(np.ones((2, 4), dtype=np.float32)),),
        )


def test_uuid_rows_are_the_vector_ids(conn: Any) -> None:
    keys = [(("memories", "alice"), f"k{i}", "content") for i in range(5)]
    raw = [vector_id_bytes(*k) for k in keys]
    with conn.cursor(binary=True) as cur:
        cur.execute("SELECT %b::uuid[], %b::uuid[]", (UuidRows(raw), UuidRows([])))
        got, empty = cur.fetchone()
    assert [str(u) for u in got] == [vector_id(*k) for k in keys]
    assert all(isinstance(u, uuid.UUID) for u in got)
    assert empty == []


def test_jsonb_rows_are_the_values(conn: Any) -> None:
    values = [{"a": 1}, {"text": "caf\u00e9 \U0001f600", "n": [1.5, None, True]}, {}]
    with conn.cursor(binary=True) as cur:
        cur.execute("SELECT %b::jsonb[], %b::jsonb[]", (JsonbRows(values), JsonbRows([])))
        got, empty = cur.fetchone()
    assert got == values
    assert empty == []


def test_jsonb_rows_refuse_what_json_cannot_encode(conn: Any) -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        conn.cursor(binary=True).execute(
            "SELECT %b::jsonb[]", (JsonbRows([{"when": datetime.now(timezone.utc)}]),)
        )
    assert conn.execute("SELECT 1").fetchone() == (1,)


def test_a_record_with_more_vectors_than_texts_is_refused_before_any_io() -> None:
    now = datetime.now(timezone.utc)
    bad = Record(
        ("memories", "u1"),
        "k",
        {"content": "x"},
        texts=("x",),
        paths=("content",),
        vectors=np.ones((2, 4), dtype=np.float32),
        now=now,
    )
    exchange = _sql.write(_sql.Tables("public", "t"), [bad], [], None)
    with pytest.raises(ValueError, match="2 vectors for 1 texts"):
        next(exchange)  # not even the key locks are asked for


# what a search reads back: the same Python values json.loads gives, type for type
TRICKY_VALUES: list[Any] = [
    {"content": "likes tea", "pinned": True, "n": None, "tags": ["a", "é", "\u2028", "😀"]},
    {"big": 2**64 - 1, "bigger": 2**64, "smallest": -(2**63) - 1, "huge": 10**40},
    {"f": 0.1, "tiny": 5e-324, "edge": 2.2250738585072014e-308, "neg0": -0.0, "e": 1e300},
    {"deep": [[[[[[[[[[{"k": "v"}]]]]]]]]]], "empty": {}, "list": []},
    {"order": {"z": 1, "a": 2, "m": 3}},
]


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types and key order all the way down (True != 1 here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return repr(a) == repr(b)  # -0.0 is not 0.0
    return bool(a == b)


@pytest.mark.parametrize("value", TRICKY_VALUES)
def test_json_loads_reads_every_value_as_json_does(value: Any) -> None:
    import json

    from langchain_ltm.backends.postgres._wire import json_loads

    text = json.dumps(value)
    for data in (text, text.encode(), memoryview(text.encode())):
        assert _same(json_loads(data), json.loads(text))


def test_values_read_back_are_what_json_reads_from_the_server(pg_url: str) -> None:
    """Through get and search, each value is json.loads of the text Postgres returns for it.

    (Postgres' jsonb keeps numbers as decimals: 1e300 comes back as an integer and -0.0 as
    0, whatever reads it; the loader must read that text as json does.)
    """
    import json

    from langchain_ltm import LongTermMemoryStore
    from langchain_ltm.backends.postgres import postgres_backend
    from tests.fakes import KeywordEmbeddings

    table = f"wire_{uuid.uuid4().hex[:8]}"
    backend = postgres_backend(pg_url, table=table, dims=64)
    store = LongTermMemoryStore(backend, embeddings=KeywordEmbeddings(dims=64))
    try:
        for n, value in enumerate(TRICKY_VALUES):
            store.put(("u",), f"k{n}", {**value, "text": f"value number {n}"})
        with psycopg.connect(pg_url, autocommit=True) as conn:
            texts = dict(conn.execute(f"SELECT key, value::text FROM {table}").fetchall())
        assert json.loads(texts["k1"])["bigger"] == 2**64  # an exact integer, not a float
        for n in range(len(TRICKY_VALUES)):
            expected = json.loads(texts[f"k{n}"])
            got = store.get(("u",), f"k{n}")
            assert got is not None and _same(got.value, expected)
            hits = store.search(("u",), query=f"value number {n}", limit=10)
            (hit,) = [h for h in hits if h.key == f"k{n}"]
            assert _same(hit.value, expected)
    finally:
        backend.drop()
        backend.close()
