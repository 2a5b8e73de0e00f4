"""Search on Postgres: exact under an HNSW index, PGVectorStore interop, hostile strings."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import numpy as np
import pytest
from langchain_postgres import PGEngine, PGVectorStore
from psycopg_pool import ConnectionPool

from langchain_ltm import LongTermMemoryStore
from langchain_ltm._codec import vector_id
from langchain_ltm._filters import compile_filter
from langchain_ltm._labels import encode_label
from langchain_ltm.backends.base import Record, SearchRequest
from langchain_ltm.backends.postgres import _direct, _reads, postgres_backend
from langchain_ltm.backends.postgres import _sql as _pg_sql
from tests.fakes import KeywordEmbeddings


@pytest.fixture
def emb():
    return KeywordEmbeddings(dims=64)


@pytest.fixture
def pg_engine(pg_url):
    engine = PGEngine.from_connection_string(
        pg_url.replace("postgresql://", "postgresql+psycopg://")
    )
    yield engine
    engine._run_as_sync(engine.close())


def test_broad_prefix_and_rare_filter_fill_limit_under_an_hnsw_index(make_backend, pg_conn):
    """Plain HNSW + filter keeps only the rare items among its ef_search candidates; ours is
    exact: the 5 best rare items, in order, with the index present."""
    dims, users, per_user, rare_every = 32, 40, 50, 250
    backend = make_backend(dims=dims)
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((users * per_user, dims)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    now = datetime.now(timezone.utc)
    records = []
    for n, vec in enumerate(vectors):
        ns = ("m", f"u{n % users}")
        records.append(
            Record(ns, f"k{n}", {"rare": n % rare_every == 0}, ("t",), ("t",), vec[None, :], now)
        )
    backend.write(records, [])
    backend.create_hnsw_index()
    pg_conn.execute(f"ANALYZE {backend.tables.items}, {backend.tables.vectors}")
    query = rng.standard_normal(dims).astype(np.float32)
    query /= np.linalg.norm(query)
    rare = [n for n in range(len(vectors)) if n % rare_every == 0]
    expected = sorted(rare, key=lambda n: -float(vectors[n] @ query))[:5]

    request = SearchRequest(("m",), query[None, :], compile_filter({"rare": True}), 5, 0)
    (hits,) = backend.search(request)
    assert [h.item.key for h in hits] == [f"k{n}" for n in expected]
    assert [h.score for h in hits] == pytest.approx([float(vectors[n] @ query) for n in expected])

    def explain(exchange):
        statement = next(exchange)
        rows = yield _pg_sql.Statement("EXPLAIN " + statement.sql, statement.params)
        return "\n".join(row[0] for row in rows)

    ours = backend.connector.run(lambda: explain(_reads.search(backend.tables, request)), "x")
    assert "hnsw" not in ours.lower()  # no ANN index
    # the scope is applied where the vectors are read: through the scope btree's range or,
    # as here (the prefix holds the whole table), a sequential scan filtered by that range.
    # (This used to check that "_vectors_scope" appears anywhere in the plan, which only the
    # items-without-vectors branch's anti-join satisfied; that branch is now a statement of
    # its own, run when the scored items do not fill the limit.)
    lines = ours.splitlines()
    (reads,) = [n for n, line in enumerate(lines) if f"on {backend.tables.vectors_name} " in line]
    scope = "(ns_path >= 'm.'::text) AND (ns_path < 'm/'::text)"
    if "Seq Scan" in lines[reads]:
        assert scope in lines[reads + 1] and "Filter:" in lines[reads + 1], ours
    else:
        assert "_vectors_scope" in lines[reads] and scope in lines[reads + 1], ours
    narrow = SearchRequest(("m", "u3"), query[None, :], compile_filter({"rare": True}), 5, 0)
    mine = backend.connector.run(lambda: explain(_reads.search(backend.tables, narrow)), "x")
    assert "_vectors_scope" in mine and "hnsw" not in mine.lower()  # one user: the btree

    # the plan LangGraph's PostgresStore gets when the planner picks the index: ANN, then filter
    with pg_conn.transaction():
        pg_conn.execute("SET LOCAL enable_seqscan = off")
        pg_conn.execute("SET LOCAL hnsw.iterative_scan = off")
        ann = f"SELECT key FROM {backend.tables.vectors} ORDER BY embedding <=> %s::vector LIMIT 40"
        literal = "[" + ",".join(map(str, query.tolist())) + "]"
        plan = "\n".join(r[0] for r in pg_conn.execute("EXPLAIN " + ann, (literal,)).fetchall())
        assert "hnsw" in plan
        candidates = [r[0] for r in pg_conn.execute(ann, (literal,)).fetchall()]
    found = [k for k in candidates if int(k[1:]) % rare_every == 0]
    assert len(found) < 5  # plain HNSW + filter would not fill the limit


def test_pgvectorstore_reads_what_the_store_wrote(make_backend, pg_engine, emb):
    backend = make_backend(dims=64)
    store = LongTermMemoryStore(backend, embeddings=emb)
    results = store.remember("alice@example.com", ["I like green tea", "my cat is called Tom"])
    store.put(("docs",), "d1", {"title": "mountain bike trail", "n": 1}, index=["title"])

    vectorstore = PGVectorStore.create_sync(
        pg_engine, emb, table_name=backend.vectors_table, metadata_columns=["path"]
    )
    (doc,) = vectorstore.similarity_search("green tea", k=1)
    label = encode_label("alice@example.com")
    assert doc.page_content == "I like green tea"
    assert doc.id == vector_id(("memories", label), results[0].fact.id, "content")
    assert doc.metadata == {
        "namespace": ["memories", label],
        "key": results[0].fact.id,
        "path": "content",
    }
    (bike,) = vectorstore.similarity_search("bike", k=3, filter={"path": {"$eq": "title"}})
    assert bike.metadata["key"] == "d1"
    docs_with_scores = vectorstore.similarity_search_with_score("my cat Tom", k=3)
    assert docs_with_scores[0][0].page_content == "my cat is called Tom"

    # a backend built from the PGEngine, and the backend's own PGVectorStore over that engine
    twin = postgres_backend(pg_engine, table=backend.tables.table)
    try:
        assert twin.dims == 64 and twin.count(("memories",)) == 2
        same = twin.as_vectorstore(emb)
        assert same.similarity_search("cat", k=1)[0].page_content == "my cat is called Tom"
    finally:
        twin.close()


@pytest.mark.parametrize("form", ["url", "key=value"])
def test_as_vectorstore_works_from_a_pool_of_either_conninfo_form(make_backend, pg_url, emb, form):
    """A pool opened on a ``key=value`` conninfo made ``as_vectorstore()`` fail
    (SQLAlchemy could not parse it)."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo
    from psycopg_pool import ConnectionPool

    writer = make_backend(dims=64)
    LongTermMemoryStore(writer, embeddings=emb).remember("alice", "my cat is called Tom")
    conninfo = pg_url if form == "url" else make_conninfo(**conninfo_to_dict(pg_url))
    assert ("://" in conninfo) is (form == "url")
    with ConnectionPool(conninfo, kwargs={"autocommit": True}, min_size=1, max_size=2) as pool:
        reader = postgres_backend(pool, table=writer.tables.table)
        try:
            found = reader.as_vectorstore(emb).similarity_search("cat", k=1)
            assert found[0].page_content == "my cat is called Tom"
        finally:
            reader.close()


HOSTILE = [
    "'; DROP TABLE items; --",
    "%s",
    "%(x)s",
    "$1",
    '"quoted"',
    "back\\slash",
    "a'b",
    "{}",
    "1 OR 1=1",
    "%%",
    "?",
    "/* c */",
    "é✓ 日本",
]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_sql_looking_strings_are_data(make_backend, emb, mode):
    backend = make_backend(dims=64)
    store = LongTermMemoryStore(backend, embeddings=emb)
    for i, text in enumerate(HOSTILE):
        ns = ("memories", text)
        value = {"text": f"note {text}", text: text, "n": i}
        if mode == "async":
            await store.aput(ns, text, value)
        else:
            store.put(ns, text, value)
    for i, text in enumerate(HOSTILE):
        ns = ("memories", text)
        assert store.get(ns, text).value == {"text": f"note {text}", text: text, "n": i}
        hits = store.search(("memories",), filter={text: text})
        assert [(h.namespace, h.key) for h in hits] == [(ns, text)]
        assert [h.key for h in store.search(ns, query=f"note {text}", filter={"n": i})] == [text]
        assert store.list_namespaces(prefix=ns) == [ns]
        assert store.search(("memories",), filter={"text": {"$gte": f"note {text}"}, "n": i})
        result = await store.aremember(text, f"{text} is my favourite string")
        assert result.action == "created"
        assert [f.content for f in store.recall(text, "favourite string")] == [
            f"{text} is my favourite string"
        ]
    assert len(store.search(("memories",), limit=100)) == 2 * len(HOSTILE)
    assert backend.count(()) == 2 * len(HOSTILE)


@pytest.fixture
def make_handed_in(pg_url):
    """``make(app)``: a backend over a handed-in pool without autocommit (one connection)."""
    made = []

    def make(app: str):
        pool = ConnectionPool(pg_url, min_size=1, max_size=1, kwargs={"application_name": app})
        backend = postgres_backend(pool, table=f"t_{uuid.uuid4().hex[:12]}", dims=8)
        made.append((backend, pool))
        return backend

    yield make
    for backend, pool in made:
        try:
            backend.drop()
        finally:
            backend.close()
            pool.close()


def _kept_cursor_backend(make_backend, app: str, make_handed_in=None):
    """A backend whose one connection keeps its reader: ``_direct``'s prepared statements on
    the pools it opens (autocommit), the kept cursor on a handed-in pool without autocommit."""
    if make_handed_in is None:
        backend = make_backend(dims=8, max_size=1, connect_kwargs={"application_name": app})
    else:
        backend = make_handed_in(app)
    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((30, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    now = datetime.now(timezone.utc)
    backend.write(
        [
            Record(("m", f"u{n % 3}"), f"k{n}", {"n": n}, ("t",), ("t",), vec[None, :], now)
            for n, vec in enumerate(vectors)
        ],
        [],
    )
    return backend, vectors


def _reader(conn):
    """The per-connection reader a bounded read left: direct state or kept cursor."""
    from langchain_ltm.backends.postgres._drive import _KEPT_CURSOR

    return getattr(conn, _direct._STATE, None) or getattr(conn, _KEPT_CURSOR, None)


def _exact_keys(vectors: np.ndarray, user: int, query: np.ndarray) -> list[str]:
    rows = [n for n in range(len(vectors)) if n % 3 == user]
    return [f"k{n}" for n in sorted(rows, key=lambda n: -float(vectors[n] @ query))[:4]]


@pytest.mark.parametrize("pool", ["own", "handed in"])
def test_reads_share_one_kept_cursor_per_connection_and_survive_a_killed_one(
    make_backend, make_handed_in, pg_conn, pool
):
    """Searches and gets run on the connection's reader (prepared statements on the pools a
    backend opens, the kept cursor on a pool without autocommit), not one per call; a
    write between them (its own cursors, pipelined) changes nothing for it, and when the
    server kills the connection the retry gets a new connection and a new reader."""
    app = f"ltm-kept-{uuid.uuid4().hex[:8]}"
    handed_in = make_handed_in if pool == "handed in" else None
    backend, vectors = _kept_cursor_backend(make_backend, app, handed_in)
    rng = np.random.default_rng(5)
    cursors: list[object] = []  # kept alive, so identity compares mean something
    pool = backend.connector.sync_pool()
    for round_ in range(6):
        user = round_ % 3
        query = rng.standard_normal(8).astype(np.float32)
        query /= np.linalg.norm(query)
        (hits,) = backend.search(SearchRequest(("m", f"u{user}"), query[None, :], limit=4))
        assert [h.item.key for h in hits] == _exact_keys(vectors, user, query)
        (item,) = backend.get([(("m", f"u{user}"), f"k{user}")])
        assert item is not None and item.value == {"n": user}
        with pool.connection() as conn:
            cursors.append(_reader(conn))
        if round_ == 2:  # a pipelined write between reads
            backend.write(
                [
                    Record(
                        ("m", "u0"),
                        "k0",
                        {"n": 0},
                        ("t",),
                        ("t",),
                        vectors[0][None, :],
                        datetime.now(timezone.utc),
                    )
                ],
                [],
            )
    assert cursors[0] is not None
    assert all(c is cursors[0] for c in cursors), "one reader for the pool's one connection"
    killed = pg_conn.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
        (app,),
    ).fetchall()
    assert killed
    query = vectors[4]
    (hits,) = backend.search(SearchRequest(("m", "u1"), query[None, :], limit=4))
    assert [h.item.key for h in hits] == _exact_keys(vectors, 1, query)
    with pool.connection() as conn:
        assert all(_reader(conn) is not c for c in cursors)


def test_a_large_read_does_not_stay_in_the_kept_cursor(make_backend, make_handed_in):
    """review1: the kept cursor (pools without autocommit) holds its last result until the
    connection's next read, so a get of many items (or a search with a large limit) runs on
    a cursor of its own."""
    from langchain_ltm.backends.postgres._drive import _KEPT_CURSOR
    from langchain_ltm.backends.postgres.backend import KEPT_CURSOR_MAX_ROWS

    backend, _ = _kept_cursor_backend(make_backend, "ltm-kept-large", make_handed_in)
    pool = backend.connector.sync_pool()
    many = [(("m", f"u{n % 3}"), f"k{n % 30}") for n in range(KEPT_CURSOR_MAX_ROWS + 1)]
    assert all(item is not None for item in backend.get(many))
    with pool.connection() as conn:
        assert getattr(conn, _KEPT_CURSOR, None) is None  # never made for the large read
    query = np.ones((1, 8), dtype=np.float32) / np.sqrt(8)
    (hits,) = backend.search(SearchRequest(("m",), query, limit=KEPT_CURSOR_MAX_ROWS + 1))
    assert len(hits) == 30
    with pool.connection() as conn:
        assert getattr(conn, _KEPT_CURSOR, None) is None
    assert backend.get(many[:2])[0] is not None  # a small read makes and keeps it
    with pool.connection() as conn:
        kept = getattr(conn, _KEPT_CURSOR, None)
    assert kept is not None
    backend.get(many)  # a large one leaves it holding the small result, not its own
    assert kept.pgresult is None or kept.pgresult.ntuples <= 2


async def test_async_reads_share_one_reader_per_connection(make_backend):
    backend, vectors = _kept_cursor_backend(make_backend, "ltm-kept-async")
    seen: list[object] = []
    for n in range(4):
        query = vectors[n]
        (hits,) = await backend.asearch(SearchRequest(("m", f"u{n % 3}"), query[None, :], limit=4))
        assert [h.item.key for h in hits] == _exact_keys(vectors, n % 3, query)
        (item,) = await backend.aget([(("m", f"u{n % 3}"), f"k{n}")])
        assert item is not None and item.value == {"n": n}
        async with backend.connector.async_pool().connection() as conn:
            seen.append(_reader(conn))
    assert seen[0] is not None and all(c is seen[0] for c in seen)


def test_owned_pools_read_timestamps_in_utc_and_keep_generic_plans(make_backend):
    """The session settings of the pools a backend opens: timestamps come back as the same
    instants, in UTC (psycopg builds them so), and prepared statements keep generic plans."""
    backend = make_backend(dims=8)
    written = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=timezone.utc)
    vector = np.ones((1, 8), dtype=np.float32) / np.sqrt(8)
    backend.write([Record(("m", "u"), "k", {"a": 1}, ("t",), ("t",), vector, written)], [])
    (hits,) = backend.search(SearchRequest(("m", "u"), vector, limit=1))
    (item,) = backend.get([(("m", "u"), "k")])
    for got in (hits[0].item, item):
        assert got is not None
        assert got.created_at == written and got.updated_at == written
        assert got.created_at.tzinfo is timezone.utc
    with backend.connector.sync_pool().connection() as conn:
        assert conn.execute("SHOW TimeZone").fetchone() == ("UTC",)
        assert conn.execute("SHOW plan_cache_mode").fetchone() == ("force_generic_plan",)
