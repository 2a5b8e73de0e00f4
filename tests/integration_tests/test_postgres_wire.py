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
from langchain_ltm.backends.postgres import _sql, _writes
from langchain_ltm.backends.postgres._connector import _register_vector
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
    exchange = _writes.write(_sql.Tables("public", "t"), [bad], [], None)
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


# ---- the JSON dumps of a pool handed in --------------------------------------------------


_DUMPED: list[int] = []  # one entry per value the user's dumps wrote


def _default(obj: Any) -> Any:
    from decimal import Decimal

    if isinstance(obj, datetime):
        return obj.isoformat()
    if isinstance(obj, Decimal):
        return str(obj)
    raise TypeError(f"cannot dump {type(obj).__name__}")


def _own_dumps(value: Any) -> str:
    """A dumps for the user's own types (datetimes, Decimals), counting its calls.

    A plain function, not a closure: psycopg caches dumpers by the function's code.
    """
    import json

    _DUMPED.append(1)
    return json.dumps(value, default=_default)


_WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def _own_values(n: int) -> dict[str, dict[str, Any]]:
    from decimal import Decimal

    return {
        f"k{i}": {"text": f"note {i}", "when": _WHEN, "price": Decimal(f"{i}.10")} for i in range(n)
    }


def _expected(value: dict[str, Any]) -> dict[str, Any]:
    return {"price": str(value["price"]), "text": value["text"], "when": _WHEN.isoformat()}


def _raw_values(pg_url: str, table: str) -> dict[str, str]:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        return dict(conn.execute(f"SELECT key, value::text FROM {table}").fetchall())


def _pg_store(conn: Any, table: str) -> Any:
    from langchain_ltm import LongTermMemoryStore
    from langchain_ltm.backends.postgres import postgres_backend
    from tests.fakes import KeywordEmbeddings

    backend = postgres_backend(conn, table=table, dims=64)
    return LongTermMemoryStore(backend, embeddings=KeywordEmbeddings(dims=64), fields=["text"])


def test_a_pool_with_its_own_json_dumps_writes_with_it(pg_url: str) -> None:
    """``set_json_dumps`` in the pool's ``configure=``: batched and single writes use it."""
    import json

    from langgraph.store.base import PutOp
    from psycopg.types.json import set_json_dumps
    from psycopg_pool import ConnectionPool

    _DUMPED.clear()
    table = f"wire_{uuid.uuid4().hex[:8]}"
    with ConnectionPool(
        pg_url, configure=lambda conn: set_json_dumps(_own_dumps, conn), open=True
    ) as pool:
        store = _pg_store(pool, table)
        try:
            values = _own_values(40)
            store.batch([PutOp(("u",), key, value) for key, value in values.items()])
            assert len(_DUMPED) >= len(values)  # every value went through the pool's dumps
            store.put(("u",), "single", {"text": "one more", "when": _WHEN})
            for key, value in values.items():
                got = store.get(("u",), key)
                assert got is not None and got.value == _expected(value)
            single = store.get(("u",), "single")
            assert single is not None and single.value == {
                "text": "one more",
                "when": _WHEN.isoformat(),
            }
            raw = _raw_values(pg_url, table)
            assert json.loads(raw["k3"]) == {  # the server holds what the dumps wrote
                "price": "3.10",
                "text": "note 3",
                "when": "2026-01-02T03:04:05+00:00",
            }
            hits = store.search(("u",), query="note 7", limit=3)
            assert hits[0].key == "k7" and hits[0].value == _expected(values["k7"])
            # a value that dumps refuses: its message, and nothing of the batch written
            with pytest.raises(
                TypeError,
                match=r"JSON dumps configured on this connection.*"
                r"cannot dump object",
            ):
                store.batch(
                    [
                        PutOp(("u",), "k0", {"text": "changed"}),
                        PutOp(("u",), "bad", {"text": "odd", "x": object()}),
                    ]
                )
            got = store.get(("u",), "k0")
            assert got is not None and got.value == _expected(values["k0"])
            assert store.get(("u",), "bad") is None
            store.put(("u",), "after", {"text": "still writes"})  # the pool is fine
            assert store.get(("u",), "after") is not None
        finally:
            store.backend.drop()
            store.close()


def test_an_async_pool_with_its_own_json_dumps_writes_with_it(pg_url: str) -> None:
    import asyncio

    from langgraph.store.base import PutOp
    from psycopg.types.json import set_json_dumps
    from psycopg_pool import AsyncConnectionPool

    _DUMPED.clear()

    async def configure(conn: Any) -> None:
        set_json_dumps(_own_dumps, conn)

    async def run() -> None:
        table = f"wire_{uuid.uuid4().hex[:8]}"
        async with AsyncConnectionPool(pg_url, configure=configure, open=False) as pool:
            store = _pg_store(pool, table)
            try:
                values = _own_values(25)
                await store.abatch([PutOp(("u",), k, v) for k, v in values.items()])
                assert len(_DUMPED) >= len(values)
                for key, value in values.items():
                    got = await store.aget(("u",), key)
                    assert got is not None and got.value == _expected(value)
            finally:
                await store.backend.adrop()
                await store.aclose()

    asyncio.run(run())


def test_a_global_json_dumps_and_a_dumper_of_the_users_own_are_honoured(pg_url: str) -> None:
    """``set_json_dumps(dumps)`` with no context, and a ``Jsonb`` dumper class registered."""
    import json

    from psycopg.types.json import JsonbBinaryDumper, set_json_dumps
    from psycopg_pool import ConnectionPool

    _DUMPED.clear()
    set_json_dumps(_own_dumps)
    try:
        store = _pg_store(pg_url, f"wire_{uuid.uuid4().hex[:8]}")  # a pool opened here
        try:
            store.put(("u",), "k", {"text": "global", "when": _WHEN})
            got = store.get(("u",), "k")
            assert _DUMPED and got is not None and got.value["when"] == _WHEN.isoformat()
        finally:
            store.backend.drop()
            store.close()
    finally:
        set_json_dumps(json.dumps)

    class Upper(JsonbBinaryDumper):  # the user's own class, with its own dump()
        def dump(self, obj: Any) -> bytes:
            return b"\x01" + json.dumps({**obj.obj, "text": obj.obj["text"].upper()}).encode()

    table = f"wire_{uuid.uuid4().hex[:8]}"
    configure = lambda conn: conn.adapters.register_dumper(psycopg.types.json.Jsonb, Upper)  # noqa: E731
    with ConnectionPool(pg_url, configure=configure, open=True) as pool:
        store = _pg_store(pool, table)
        try:
            store.put(("u",), "k", {"text": "shout"})
            assert _raw_values(pg_url, table)["k"] == '{"text": "SHOUT"}'
        finally:
            store.backend.drop()
            store.close()


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        (
            {"text": "t", "when": _WHEN},
            TypeError,
            r"stores values as jsonb \(.*datetime is not JSON serializable.*set_json_dumps",
        ),
        # refused by every engine when the write is planned (the store's own check)
        ({"text": "t", "x": float("nan")}, ValueError, r"NaN or Infinity \(not JSON compliant"),
        ({"text": "t", "x": float("-inf")}, ValueError, r"NaN or Infinity \(not JSON compliant"),
    ],
)
def test_values_json_cannot_hold_are_refused_with_what_to_change(
    pg_url: str, value: Any, error: type[Exception], match: str
) -> None:
    """A clear error before the statement is sent, nothing written."""
    store = _pg_store(pg_url, f"wire_{uuid.uuid4().hex[:8]}")
    try:
        store.put(("u",), "k", {"text": "before"})
        with pytest.raises(error, match=match):
            store.put(("u",), "k", value)
        got = store.get(("u",), "k")
        assert got is not None and got.value == {"text": "before"}
    finally:
        store.backend.drop()
        store.close()
