"""The SQLite engine beyond the shared suites: files, schema, namespaces, filters, locks.

(Processes: ``test_sqlite_processes.py``. Contract, facts, isolation, bad input and restore
run on SQLite in their own modules.)
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.base import PutOp

from langchain_ltm import BackendError, EmbeddingDimensionError, FactStore, LongTermMemoryStore
from langchain_ltm._filters import Condition
from langchain_ltm.backends import backend_for
from langchain_ltm.backends.base import ListRequest, Record, SearchRequest
from langchain_ltm.backends.sqlite import SchemaVersionError, SqliteBackend, sqlite_backend
from langchain_ltm.backends.sqlite._lock import FileLocks
from langchain_ltm.backends.sqlite._sql import namespace_of, ns_key, ns_range
from langchain_ltm.defaults import open_store
from tests.fakes import KeywordEmbeddings

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "ltm.sqlite")


@pytest.fixture
def backend(path):
    made = sqlite_backend(path)
    yield made
    made.close()


def store_on(backend, **kwargs) -> LongTermMemoryStore:
    return LongTermMemoryStore(backend, embeddings=KeywordEmbeddings(64), **kwargs)


def unit(rng: np.random.Generator, n: int = 1, dims: int = 8) -> np.ndarray:
    v = rng.standard_normal((n, dims)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


# ---- files -------------------------------------------------------------------------------


def test_a_relative_path_keeps_its_file_after_a_chdir(tmp_path, monkeypatch):
    """Opened by a relative path, the store keeps writing to that file after the process
    changes its working directory (new pool connections, the search watcher and the lock
    folder opened the name in the new directory: another file, maybe another store's)."""
    first, elsewhere = tmp_path / "first", tmp_path / "elsewhere"
    first.mkdir()
    elsewhere.mkdir()
    LongTermMemoryStore.from_sqlite(elsewhere / "memories.db", KeywordEmbeddings(64)).close()
    monkeypatch.chdir(first)
    store = LongTermMemoryStore.from_sqlite("memories.db", KeywordEmbeddings(64))
    assert store.backend.path == str(first / "memories.db")
    store.remember("alice", "Lives in Paris")
    monkeypatch.chdir(elsewhere)
    assert [f.content for f in store.recall("alice", "paris")] == ["Lives in Paris"]

    def work(n: int) -> None:  # new threads: new pool connections, new lock files
        for i in range(3):
            store.remember(f"user{n}", f"thread {n} fact {i}")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    store.close()
    assert not (elsewhere / "memories.db-locks").exists()
    for folder, facts in ((first, 1 + 6 * 3), (elsewhere, 0)):
        reopened = LongTermMemoryStore.from_sqlite(folder / "memories.db", KeywordEmbeddings(64))
        users = ["alice", *(f"user{n}" for n in range(6))]
        assert sum(len(reopened.list_all(u)) for u in users) == facts
        reopened.close()


def test_reopening_a_file_keeps_everything(path):
    first = LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(64), merge_threshold=0.8)
    first.remember("alice", "I like green tea")
    first.remember("alice", "I like green tea a lot")  # a version
    first.remember("bob", ["Lives in Paris", "Has a cat"])
    first.put(("docs", "x"), "plain", {"n": 1}, index=False)
    first.put(("docs", "x"), "ranked", {"text": "green tea notes"})
    before = {u: first.export_user(u) for u in ("alice", "bob")}
    ranked = [(i.key, i.score) for i in first.search(("docs",), query="tea")]
    first.close()

    again = LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(64))
    assert {u: again.export_user(u) for u in ("alice", "bob")} == before
    (fact,) = again.list_all("alice")
    assert fact.content == "I like green tea a lot"
    assert [v.content for v in fact.history] == ["I like green tea"]
    assert [(i.key, i.score) for i in again.search(("docs",), query="tea")] == ranked
    assert again.get(("docs", "x"), "plain").value == {"n": 1}
    assert again.list_namespaces() == [("docs", "x"), ("memories", "alice"), ("memories", "bob")]
    assert again.backend.dims == 64  # learnt from the file, not from a write
    again.close()
    other_model = LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(32))
    with pytest.raises(EmbeddingDimensionError, match="model changed"):
        other_model.recall("alice", "tea")
    other_model.close()
    with pytest.raises(EmbeddingDimensionError):
        sqlite_backend(path, dims=32)


def test_opening_reads_only_the_schema(path, monkeypatch):
    store = LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(64), merge_threshold=1.0)
    store.remember("u1", [f"fact number {i}" for i in range(300)])
    store.close()
    statements: list[str] = []
    connect = SqliteBackend._connect

    def traced(self):
        conn = connect(self)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(SqliteBackend, "_connect", traced)
    opened = sqlite_backend(path)
    assert statements, "the trace saw nothing"
    touched = " ".join(statements)
    assert '"ltm_items"' not in touched and '"ltm_items_vectors"' not in touched, statements
    assert not any(
        s.upper().startswith(("BEGIN IMMEDIATE", "INSERT", "CREATE")) for s in statements
    )
    statements.clear()
    assert opened.count(("memories",)) == 300  # the first call reads what it needs
    assert any('"ltm_items"' in s for s in statements)
    opened.close()


def test_a_newer_schema_is_refused(path, backend):
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO ltm_items_schema (version, description, applied_at) VALUES (99, 'x', '')"
        )
    with pytest.raises(SchemaVersionError, match="Upgrade langchain-ltm") as caught:
        sqlite_backend(path)
    assert isinstance(caught.value, BackendError)
    # one class for every engine, in the documented error tree (was SQLite's own)
    from langchain_ltm import errors

    assert isinstance(caught.value, errors.SchemaVersionError)


async def test_asetup_is_setup_off_the_loop(path, backend):
    await backend.asetup()  # current tables: idempotent
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO ltm_items_schema (version, description, applied_at) VALUES (99, 'x', '')"
        )
    with pytest.raises(SchemaVersionError, match="Upgrade langchain-ltm"):
        await backend.asetup()


def test_tables_live_side_by_side(path):
    a = store_on(sqlite_backend(path, table="team_a"))
    b = store_on(sqlite_backend(path, table="team_b"))
    a.remember("u1", "likes tea")
    assert b.list_all("u1") == []
    assert [f.content for f in a.list_all("u1")] == ["likes tea"]
    with pytest.raises(ValueError, match="plain identifier"):
        sqlite_backend(path, table='x"; DROP TABLE ltm_items; --')


def test_a_file_where_another_app_has_a_table_of_the_stores_name(tmp_path):
    """Another app's ``ltm_items``: setup said only 'table "ltm_items" already exists'. It
    now says the table is not the store's and how to give the store its own; nothing of the
    file changes, and ``table=`` opens a store beside the app's table."""
    path = tmp_path / "app.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE ltm_items (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO ltm_items (name) VALUES ('the app')")
    conn.commit()
    conn.close()
    with pytest.raises(BackendError, match=r'table="\.\.\."') as caught:
        sqlite_backend(str(path))
    assert "not langchain-ltm's" in str(caught.value) and "another file" in str(caught.value)
    conn = sqlite3.connect(path)
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    assert names == ["ltm_items"]  # nothing created, not even the schema table
    assert conn.execute("SELECT name FROM ltm_items").fetchall() == [("the app",)]
    conn.close()
    store = LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(dims=64), table="memories")
    assert store.remember("alice", "I like tea").action == "created"
    store.close()


def test_a_sqlite_url_given_as_the_path_is_refused_naming_the_path(tmp_path, monkeypatch):
    """The README listed ``sqlite:///path`` as a way to build the store: from_sqlite read it
    as a relative path and said "Cannot open ./sqlite:/... check that its folder exists".
    The URL is refused with the path to pass (the part after ``sqlite:///``, as ``ltm
    --store`` reads it), by every SQLite constructor, and no file is made."""
    monkeypatch.chdir(tmp_path)
    file = tmp_path / "memories.db"
    url = f"sqlite:///{file}"  # sqlite:////tmp/.../memories.db: absolute, as the CLI reads it
    emb = KeywordEmbeddings(dims=16)
    builds = (
        lambda: sqlite_backend(url),
        lambda: LongTermMemoryStore.from_sqlite(url, emb),
        lambda: FactStore.from_sqlite(url, emb),
        lambda: sqlite_backend(Path(url)),  # Path("sqlite:////x") is "sqlite:/x": no path given
    )
    for build in builds[:3]:
        with pytest.raises(ValueError, match=rf"not a URL: .*; pass '{file}' \(sqlite:///PATH"):
            build()
    with pytest.raises(ValueError, match=r"not a URL: got 'sqlite:/.*'; pass the file's path"):
        builds[3]()
    with pytest.raises(ValueError, match=r"pass 'memories.db'"):
        sqlite_backend("sqlite:///memories.db")  # relative, as in ltm --store
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    open_store(url, embeddings=emb)[0].close()  # the CLI's reading of the same URL: that file
    assert file.exists()


@pytest.mark.parametrize("url", ["postgresql://u@h/db", "memory://", "https://x/y.db"])
def test_a_url_of_another_scheme_is_refused_and_makes_no_file(url, tmp_path, monkeypatch):
    """``from_sqlite("postgresql://u@h/db")`` said "Cannot open .../postgresql:/u@h/db ...
    check that its folder exists", and ``from_sqlite("memory://")`` made a file named
    "memory:" in the current folder: a URL that is not SQLite's is refused as such."""
    monkeypatch.chdir(tmp_path)
    emb = KeywordEmbeddings(dims=16)
    scheme = url.split(":", 1)[0]
    for build in (sqlite_backend, lambda u: LongTermMemoryStore.from_sqlite(u, emb)):
        with pytest.raises(ValueError, match=rf"not a URL: got '{scheme}:.*{scheme}:// is not"):
            build(url)
    assert list(tmp_path.iterdir()) == []


def test_a_windows_drive_path_is_a_path_not_a_url(tmp_path, monkeypatch):
    """``from_sqlite("C://data/m.db")`` (a Windows drive, one letter before the colon) was
    refused as "a URL, not a file path": only a scheme of two letters or more is one."""
    monkeypatch.chdir(tmp_path)  # on POSIX "C://data/m.db" is ./C:/data/m.db
    (tmp_path / "C:" / "data").mkdir(parents=True)
    store = LongTermMemoryStore.from_sqlite("C://data/m.db", KeywordEmbeddings(dims=16))
    store.close()
    assert (tmp_path / "C:" / "data" / "m.db").is_file()


def test_bad_paths_and_options_are_clear(tmp_path):
    with pytest.raises(ValueError, match="needs a file path"):
        sqlite_backend(":memory:")
    with pytest.raises(BackendError, match="check that its folder exists"):
        sqlite_backend(tmp_path / "missing" / "ltm.sqlite")
    with pytest.raises(ValueError, match="is a folder, not a SQLite file"):
        sqlite_backend(tmp_path)  # SQLite said "unable to open": "check that its folder exists"
    (tmp_path / "junk.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(BackendError, match="not a usable SQLite database"):
        sqlite_backend(tmp_path / "junk.sqlite")
    for bad in ({"dims": 0}, {"dims": "64"}, {"busy_timeout": -1}, {"busy_timeout": "5"}):
        with pytest.raises(ValueError, match=r"(dims|busy_timeout) must"):
            sqlite_backend(tmp_path / "ok.sqlite", **bad)


def test_values_sqlite_cannot_store_are_clear(backend):
    store = store_on(backend)
    with pytest.raises(ValueError, match="no NaN or Infinity"):
        store.put(("docs",), "k", {"x": float("nan")}, index=False)
    with pytest.raises(TypeError, match="convert datetimes"):
        store.put(("docs",), "k", {"when": NOW}, index=False)
    with pytest.raises(ValueError, match="lone surrogate"):
        store.put(("docs",), "surrogate", {"s": "a\udc80b"}, index=False)
    assert store.get(("docs",), "surrogate") is None
    store.put(("docs",), "fine", {"s": "ab"}, index=False)
    assert store.list_namespaces() == [("docs",)]


def test_open_store_takes_sqlite_urls(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store, where = open_store("sqlite:///nested/ltm.sqlite", embeddings=KeywordEmbeddings(64))
    assert isinstance(store.backend, SqliteBackend)
    assert where == "SQLite at nested/ltm.sqlite"
    store.remember("u1", "likes tea")
    store.close()
    absolute = tmp_path / "nested" / "ltm.sqlite"
    again, where = open_store(f"sqlite:///{absolute}", embeddings=KeywordEmbeddings(64))
    assert where == f"SQLite at {absolute}"
    assert [f.content for f in again.list_all("u1")] == ["likes tea"]
    again.close()
    for bad in ("sqlite:///", "sqlite://host/x.db", "sqlite:x.db"):
        with pytest.raises(ValueError, match="not a SQLite URL"):
            open_store(bad, embeddings=KeywordEmbeddings(64))


def test_closed_backend_says_so(path):
    backend = sqlite_backend(path)
    backend.close()
    with pytest.raises(BackendError, match="was closed"):
        backend.count(())


# ---- namespaces and order ----------------------------------------------------------------

AWKWARD = [("a",), ("a", "z"), ("a b",), ("a-x", "k"), ("a!",), ("a", "\U0001f600"), ("ab",)]


def test_namespaces_sort_like_tuples_and_match_whole_labels(backend):
    store = store_on(backend)
    store.batch([PutOp(ns, "k", {"v": 1}, index=False) for ns in AWKWARD])  # one updated_at
    assert store.list_namespaces() == sorted(AWKWARD)
    assert store.list_namespaces(prefix=("a",)) == [("a",), ("a", "z"), ("a", "\U0001f600")]
    under_a = [(tuple(i.namespace), i.key) for i in store.search(("a",), limit=100)]
    assert under_a == [(("a",), "k"), (("a", "z"), "k"), (("a", "\U0001f600"), "k")]
    # equal updated_at: the contract's tie order is namespace then key, as tuples sort
    everything = [tuple(i.namespace) for i in store.search((), limit=100)]
    assert everything == sorted(AWKWARD)
    assert backend.count(("a",)) == 3
    assert store.list_namespaces(max_depth=1) == sorted({ns[:1] for ns in AWKWARD})


def test_the_namespace_key_preserves_order_and_round_trips():
    labels = [
        "",
        "\x00",
        "\x00\x01",
        "\x01",
        "a",
        "a\x00",
        "a\x00b",
        "ab",
        "\udc80",
        "\uffff",
        "\U0010ffff",
    ]
    namespaces = sorted({(a,) for a in labels} | {(a, b) for a in labels[:6] for b in labels[:6]})
    keys = [ns_key(ns) for ns in namespaces]
    assert keys == sorted(keys)
    assert [namespace_of(k) for k in keys] == namespaces
    for ns in namespaces:
        low, high = ns_range(ns[:1])
        under = [other for other in namespaces if low <= ns_key(other) < high]
        assert under == [other for other in namespaces if other[:1] == ns[:1]]


# ---- filters: the same answers as the memory engine --------------------------------------


def _random_value(rng: random.Random) -> dict:
    pool = ["tea", "Tea", "1", "", "true", "a\u00e9", "[1]"]
    choices = [
        lambda: rng.choice(pool),
        lambda: rng.choice([0, 1, 2, 1.0, -3.5]),
        lambda: rng.choice([True, False]),
        lambda: None,
        lambda: [rng.choice(pool), 1],
        lambda: {"k": rng.choice(pool)},
    ]
    value = {}
    for key in ("k", "content_hash", "pinned", "n", "nested"):
        if rng.random() < 0.7:
            value[key] = rng.choice(choices)()
    if rng.random() < 0.5:
        value["nested"] = {"k": rng.choice([*pool, 1, True])}
    return value


def _random_filter(rng: random.Random) -> tuple[Condition, ...]:
    key = rng.choice(["k", "content_hash", "pinned", "n", "missing"])
    path = rng.choice([(key,), ("nested", "k")])
    operand = rng.choice(["tea", "1", "", "[1]", 1, 1.0, True, False, None, ["tea", 1]])
    op = rng.choice(["$eq", "$ne", "$in", "$exists", "$gt", "$lte"])
    if op == "$in":
        operand = rng.choice([["tea", "Tea"], [], ["1", 1], [True], ["a\u00e9"]])
    elif op == "$exists":
        operand = rng.choice([True, False])
    elif op in ("$gt", "$lte"):
        operand = rng.choice(["T", "tea", 0, 1.5])
    return (Condition(path, op, operand),)


def test_filters_and_ranking_answer_like_the_memory_engine(backend):
    rng = random.Random(7)
    vectors = np.random.default_rng(7)
    memory = backend_for(InMemoryVectorStore(KeywordEmbeddings(8)))
    records = []
    for i in range(120):
        ns = ("memories", f"u{i % 3}")
        vecs = unit(vectors, 1 + i % 2) if i % 5 else None
        n = 0 if vecs is None else len(vecs)
        records.append(
            Record(ns, f"k{i:03d}", _random_value(rng), ("t",) * n, ("p",) * n, vecs, NOW)
        )
    for engine in (backend, memory):
        engine.write(records, [])
    queries = unit(vectors, 2)
    for _ in range(150):
        conditions = _random_filter(rng) + (_random_filter(rng) if rng.random() < 0.3 else ())
        prefix = rng.choice([(), ("memories",), ("memories", "u1")])
        limit, offset = rng.choice([(None, 0), (5, 0), (7, 3), (200, 0)])
        for vecs in (None, queries):
            request = SearchRequest(prefix, vecs, conditions, limit, offset)
            ours = [[(h.item.key, h.score) for h in col] for col in backend.search(request)]
            theirs = [[(h.item.key, h.score) for h in col] for col in memory.search(request)]
            if vecs is None:  # same updated_at everywhere: compare as sets
                assert sorted(ours[0]) == sorted(theirs[0]), (conditions, prefix)
                continue
            for a, b in zip(ours, theirs):
                assert [k for k, _ in a] == [k for k, _ in b], (conditions, prefix, limit)
                np.testing.assert_allclose(
                    [s or 0 for _, s in a], [s or 0 for _, s in b], rtol=1e-5
                )


# ---- TTL at the engine level -------------------------------------------------------------


def test_ttl_rows_touch_and_sweep(backend, path):
    ns = ("memories", "u1")
    rng = np.random.default_rng(1)
    backend.write(
        [
            Record(ns, "short", {"v": 1}, ("t",), ("p",), unit(rng), NOW, ttl_minutes=1.0),
            Record(ns, "long", {"v": 2}, (), (), None, NOW, ttl_minutes=10.0),
            Record(ns, "forever", {"v": 3}, (), (), None, NOW),
        ],
        [],
    )
    short, long_, forever = backend.get([(ns, "short"), (ns, "long"), (ns, "forever")])
    assert short.expires_at == NOW + timedelta(minutes=1) and short.ttl_minutes == 1.0
    assert forever.expires_at is None and forever.ttl_minutes is None
    later = NOW + timedelta(minutes=2)
    alive = SearchRequest(ns, unit(rng), limit=None, alive_at=later)
    assert [h.item.key for h in backend.search(alive)[0]] == ["forever", "long"]
    assert backend.list_namespaces(ListRequest(alive_at=NOW + timedelta(minutes=20))) == [ns]
    backend.touch([(ns, "short"), (ns, "long"), (ns, "forever")], later)  # short: too late
    short, long_, _ = backend.get([(ns, "short"), (ns, "long"), (ns, "forever")])
    assert short.expires_at == NOW + timedelta(minutes=1)
    assert long_.expires_at == later + timedelta(minutes=10)
    assert backend.sweep(later) == 1
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM ltm_items_vectors").fetchone() == (0,)
    assert backend.count(ns) == 2


# ---- locks -------------------------------------------------------------------------------


def _two_scopes_on_different_stripes(locks: FileLocks) -> tuple[str, str]:
    first = "alice"
    other = next(
        s
        for s in (f"bob{i}" for i in range(100))
        if locks.stripe_path(s) != locks.stripe_path(first)
    )
    return first, other


def test_a_second_locker_waits_and_other_scopes_do_not(backend):
    alice, bob = _two_scopes_on_different_stripes(backend._locks)
    held = backend.lock(alice)
    got: list[str] = []
    waiter = threading.Thread(target=lambda: got.append(repr(backend.lock(alice))), daemon=True)
    waiter.start()
    time.sleep(0.2)
    assert got == []  # still waiting
    other = backend.lock(bob)  # another scope: no wait
    backend.unlock(other)
    backend.unlock(held)
    waiter.join(5)
    assert got == [f"<HeldLock {alice!r} held>"]
    assert backend.capabilities.cross_process_lock is True


async def test_async_lockers_exclude_sync_ones_and_cancel_cleanly(backend):
    held = backend.lock("alice")
    waiting = asyncio.create_task(backend.alock("alice"))
    await asyncio.sleep(0.1)
    assert not waiting.done()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    second = asyncio.create_task(backend.alock("alice"))
    await asyncio.sleep(0.05)
    assert not second.done()
    backend.unlock(held)
    token = await asyncio.wait_for(second, 5)
    await backend.aunlock(token)
    await backend.aunlock(token)  # a second release does nothing
    again = await asyncio.wait_for(backend.alock("alice"), 5)  # the cancelled one held nothing
    backend.unlock(again)


def test_lock_misuse_is_a_clear_error(backend):
    with pytest.raises(TypeError, match="str scope"):
        backend.lock(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="token lock\\(\\) returned"):
        backend.unlock("not a token")


def test_writes_go_on_while_a_user_is_locked(backend):
    """The lock is per scope, not SQLite's write lock: other writers never wait for it."""
    store = store_on(backend)
    held = backend.lock(store.user_namespace("alice")[-1])
    try:
        assert store.remember("bob", "likes tea").action == "created"
        store.put(("docs",), "k", {"v": 1})
    finally:
        backend.unlock(held)
    assert store.remember("alice", "likes coffee").action == "created"


def test_filters_sqlite_cannot_bind_are_left_to_python(backend):
    ns = ("memories", "u1")
    backend.write(
        [
            Record(ns, "a", {"k": "a\udc80b", "content_hash": "h1"}, (), (), None, NOW),
            Record(ns, "b", {"k": "x", "content_hash": "h2"}, (), (), None, NOW),
        ],
        [],
    )
    many = [f"h{i}" for i in range(40_000)]  # more than SQLite binds in one statement

    def found(*conditions: Condition) -> list[str]:
        (hits,) = backend.search(SearchRequest(ns, None, conditions, None, 0))
        return sorted(h.item.key for h in hits)

    assert found(Condition(("content_hash",), "$in", many)) == ["a", "b"]
    assert found(Condition(("k",), "$in", ["x", *many])) == ["b"]
    assert found(Condition(("k",), "$eq", "a\udc80b")) == ["a"]


def test_a_filter_of_many_conditions_is_answered_not_refused(backend):
    """1,000 equality conditions (one AND a level) passed SQLite's expression depth:
    "Expression tree is too large (maximum depth 1000)". So did 70 lists of 500 strings,
    SQLite's 32,766 bound values. Past a few, the rest are checked in Python."""
    ns = ("memories", "u1")
    value = {f"f{i}": f"v{i}" for i in range(1_000)}
    backend.write([Record(ns, "k", value, (), (), None, NOW)], [])
    backend.write([Record(ns, "other", {**value, "f999": "x"}, (), (), None, NOW)], [])
    conditions = tuple(Condition((f"f{i}",), "$eq", f"v{i}") for i in range(1_000))
    lists = tuple(
        Condition((f"f{i}",), "$in", [f"v{i}", *(f"w{j}" for j in range(499))]) for i in range(70)
    )
    for where in (conditions, lists, (*lists, *conditions)):
        (hits,) = backend.search(SearchRequest(ns, None, where, None, 0))
        expected = ["k", "other"] if where is lists else ["k"]
        assert sorted(h.item.key for h in hits) == expected


@pytest.mark.skipif(not hasattr(sqlite3.Connection, "setlimit"), reason="Python 3.11+")
def test_a_scope_past_sqlites_value_limit_is_read_row_by_row(path, monkeypatch):
    rng = np.random.default_rng(3)
    ns = ("memories", "u1")
    records = [
        Record(
            ns,
            f"k{i}",
            {"i": i},
            ("t",) * (1 + i % 2),
            ("p",) * (1 + i % 2),
            unit(rng, 1 + i % 2),
            NOW,
        )
        for i in range(40)
    ]
    request = SearchRequest(ns, unit(rng, 2), limit=7)
    normal = sqlite_backend(path)
    normal.write(records, [])
    expected = normal.search(request)
    normal.close()
    connect = SqliteBackend._connect

    def small(self):
        conn = connect(self)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 4096)  # the concatenated blobs do not fit
        return conn

    monkeypatch.setattr(SqliteBackend, "_connect", small)
    limited = sqlite_backend(path)
    assert limited.search(request) == expected
    limited.close()


def test_an_old_sqlite_is_a_clear_error(path, monkeypatch):
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 22, 0))
    with pytest.raises(BackendError, match=r"needs SQLite 3\.24\.0 or newer"):
        sqlite_backend(path)


def test_searched_vectors_are_cached_until_anyone_commits(path, backend, tmp_path):
    """The scope cache serves repeated searches, and no commit (this backend's, another
    connection's, another process's) leaves a search reading stale vectors."""
    import subprocess
    import sys

    store = store_on(backend)
    other = store_on(sqlite_backend(path))
    store.remember("u1", "likes green tea")

    def recall(text: str) -> list[str]:
        return [f.content for f in store.recall("u1", text, min_score=-1)]

    assert recall("tea") == ["likes green tea"]
    hits = backend.scope_cache.hits
    assert recall("tea") == ["likes green tea"] and backend.scope_cache.hits == hits + 1
    other.remember("u1", "drinks black coffee")  # another connection commits
    assert recall("coffee")[:1] == ["drinks black coffee"]
    store.remember("u1", "owns a cat")  # this backend's own write
    assert recall("cat")[:1] == ["owns a cat"]
    script = (  # another process adds a fact and forgets the tea
        "import sys\n"
        "from langchain_ltm import LongTermMemoryStore\n"
        "from langchain_ltm.backends.sqlite import sqlite_backend\n"
        "from tests.fakes import KeywordEmbeddings\n"
        "s = LongTermMemoryStore(sqlite_backend(sys.argv[1]), embeddings=KeywordEmbeddings())\n"
        "s.remember('u1', 'plays the cello')\n"
        "tea = [f for f in s.list_all('u1') if 'tea' in f.content][0]\n"
        "assert s.forget('u1', tea.id)\n"
    )
    root = str(Path(__file__).resolve().parents[2])
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, cwd=root)
    found = recall("cello tea")
    assert found[:1] == ["plays the cello"] and "likes green tea" not in found
    other.backend.close()


def _commit_at_version_read(backend, monkeypatch, commit, call: int) -> None:
    """Run ``commit`` (another connection's writes) at ``backend``'s ``call``-th
    ``data_version`` read from now: just after the 1st (between a version read and the
    snapshot's start), or just before the 2nd (after the snapshot's start)."""
    read = backend._data_version
    calls = []

    def racing() -> int:
        calls.append(1)
        if len(calls) == call == 2:
            commit()
        version = read()
        if len(calls) == call == 1:
            commit()
        return version

    monkeypatch.setattr(backend, "_data_version", racing)


@pytest.mark.parametrize("call", [1, 2])
def test_a_commit_racing_the_cache_check_never_gives_another_users_item(
    path, backend, monkeypatch, call
):
    """Another connection deletes alice's only vector and inserts bob's (which takes the freed
    rowid) while alice's search checks the vector cache: the search returns alice's items
    only (it returned bob's item while the cache was checked before the snapshot started)."""
    store = store_on(backend)
    store.put(("docs", "bob"), "b1", {"text": "bob private one"})
    store.put(("docs", "alice"), "a1", {"text": "alice note"})
    assert [i.key for i in store.search(("docs", "alice"), query="note")] == ["a1"]
    other = store_on(sqlite_backend(path))

    def commit() -> None:
        other.delete(("docs", "alice"), "a1")
        other.put(("docs", "bob"), "b2", {"text": "bob secret note"})

    _commit_at_version_read(backend, monkeypatch, commit, call)
    racing = store.search(("docs", "alice"), query="note")  # before or after the commit
    assert [(i.namespace, i.key) for i in racing] in ([], [(("docs", "alice"), "a1")])
    monkeypatch.undo()
    assert store.search(("docs", "alice"), query="note") == []
    other.put(("docs", "alice"), "a2", {"text": "alice second note"})
    assert [i.key for i in store.search(("docs", "alice"), query="note")] == ["a2"]
    other.backend.close()


@pytest.mark.parametrize("call", [1, 2])
def test_a_commit_racing_the_cache_check_never_hides_a_fact(path, backend, monkeypatch, call):
    """Another connection updates a fact (its vector row gets a new rowid) while a recall
    checks the vector cache: the recall still finds the fact (it was left out)."""
    store = store_on(backend)
    paris = store.remember("alice", "Lives in Paris").fact
    store.remember("alice", "Has a cat named Tom")
    assert "Lives in Paris" in [f.content for f in store.recall("alice", "lives", limit=5)]
    other = store_on(sqlite_backend(path))
    commit = lambda: other.update_fact("alice", paris.id, "Lives in Berlin")  # noqa: E731
    _commit_at_version_read(backend, monkeypatch, commit, call)
    found = [f.content for f in store.recall("alice", "lives", limit=5, min_score=-1)]
    assert ("Lives in Berlin" in found) != ("Lives in Paris" in found)  # one snapshot's fact
    monkeypatch.undo()
    found = [f.content for f in store.recall("alice", "lives", limit=5, min_score=-1)]
    assert "Lives in Berlin" in found and "Lives in Paris" not in found
    other.backend.close()


@pytest.mark.parametrize("taker", ["bob", "alice"])
def test_a_rowid_from_the_cache_reads_only_the_row_it_scored(path, backend, taker):
    """Defence in depth: vectors read at an older file version (as a racing cache check once
    used) never fetch another user's row, nor one of the user's rows that now holds other
    vectors, through a freed and reused rowid."""
    from langchain_ltm.backends.sqlite import _search as search_sql

    store = store_on(backend)
    store.put(("docs", "bob"), "b1", {"text": "bob private one"})
    store.put(("docs", "alice"), "a1", {"text": "alice note"})
    store.search(("docs", "alice"), query="note")  # alice's vectors cached
    version = backend.scope_cache._version
    store.delete(("docs", "alice"), "a1")
    store.put(("docs", taker), "new", {"text": f"{taker} secret note"})  # takes a1's rowid
    vectors = np.asarray(KeywordEmbeddings(64).embed_documents(["note"]), dtype=np.float32)
    request = SearchRequest(prefix=("docs", "alice"), vectors=vectors, limit=10)
    stale = (backend.scope_cache, version)  # the entry read before the commits
    hits = backend._read("search", lambda c: search_sql.search(c, backend.tables, request, stale))
    assert hits == [[]]


def test_the_scope_cache_is_bounded_and_forgets_on_close(path, backend):
    from langchain_ltm.backends.sqlite._cache import ScopeCache, ScopeVectors

    cache = ScopeCache(max_bytes=100)
    row = ScopeVectors(np.zeros(1, dtype=np.int64), np.array([40]), bytes(40))
    assert cache.lookup(7, ("a",)) is None
    for name in "abc":
        cache.store(7, (name,), row)
    assert cache.lookup(7, ("a",)) is None and cache.lookup(7, ("c",)) is row  # LRU, 100 bytes
    cache.store(6, ("d",), row)  # read before the last commit seen: not kept
    assert cache.lookup(7, ("d",)) is None
    assert cache.lookup(8, ("c",)) is None and cache.lookup(8, ("b",)) is None  # new version
    store = store_on(backend)
    store.remember("u1", "likes tea")
    store.recall("u1", "tea")
    store.close()
    assert backend.scope_cache._entries == {}


def test_vector_cache_size_is_an_option(path):
    with pytest.raises(ValueError, match="vector_cache_mb must be a number >= 0, got -1"):
        sqlite_backend(path, vector_cache_mb=-1)
    off = sqlite_backend(path, vector_cache_mb=0)
    store = store_on(off)
    store.remember("u1", "likes tea")
    for _ in range(3):
        assert [f.content for f in store.recall("u1", "tea")] == ["likes tea"]
    assert off.scope_cache.hits == 0  # nothing kept
    off.close()


class _RacingFile:
    """A connection whose switch to WAL is refused at once ``refusals`` times, as SQLite
    refuses the loser of two processes switching a new file (no ``busy_timeout`` wait)."""

    def __init__(self, refusals: int, error: str = "database is locked") -> None:
        self.refusals, self.error, self.tries = refusals, error, 0

    def execute(self, sql: str):
        import sqlite3

        if sql.startswith("PRAGMA busy_timeout"):
            return _Row("0")
        if sql == "PRAGMA journal_mode = WAL":
            self.tries += 1
            if self.tries <= self.refusals:
                raise sqlite3.OperationalError(self.error)
            return _Row("wal")
        return _Row("delete")


class _Row:
    def __init__(self, value: str) -> None:
        self.value = value

    def fetchone(self):
        return (self.value,)


def test_switching_a_new_file_to_wal_is_tried_again_while_another_process_does(path):
    """Two workers opening one new catalog: one got "database is locked" at once and failed
    its setup (2 of 5 full test runs)."""
    import sqlite3

    backend = sqlite_backend(path, busy_timeout=2)
    racing = _RacingFile(refusals=3)
    assert backend._to_wal(racing) == "wal" and racing.tries == 4  # type: ignore[arg-type]
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        backend._to_wal(_RacingFile(1, "disk I/O error"))  # type: ignore[arg-type]
    stuck = sqlite_backend(path, busy_timeout=0.2)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        stuck._to_wal(_RacingFile(10_000))  # type: ignore[arg-type]
    backend.close()
    stuck.close()
