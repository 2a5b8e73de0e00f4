"""Facts and items go memory -> Postgres -> Qdrant -> memory and come back exactly.

Facts travel through ``export_user`` / ``import_user(mode="restore")``, other BaseStore
items through search + get / put. At the end everything is compared with the original:
ids, texts, timestamps to the microsecond, every version with its valid_from/valid_to,
metadata, and the other items' values. ``ltm migrate`` is checked the same way through a
real Postgres database.
"""

from __future__ import annotations

import contextlib
import io
import json
import urllib.parse
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_ltm import cli
from langchain_ltm.cli import session as cli_session
from langchain_ltm.defaults import open_store
from langchain_ltm.store import LongTermMemoryStore
from tests.fakes import KeywordEmbeddings

USERS = ("alice@example.com", "bob", "zoë.ünïcode@example.com")
NOTES = ("agent", "notes")


def build_original(store: LongTermMemoryStore) -> None:
    """Facts made by real remember / update_fact calls (so versions exist) and other items."""
    alice, bob, zoe = USERS
    kid = store.remember(alice, "Has one kid").fact
    assert kid is not None
    store.remember(alice, "Has two kids now")  # an update or a created + similar
    store.update_fact(alice, kid.id, "Has three kids")
    paris = store.remember(alice, ["Lives in Paris", "Prefers answers in Spanish"])[0].fact
    assert paris is not None
    store.update_fact(alice, paris.id, "Lives in Berlin")
    store.update_fact(alice, paris.id, "Lives in Lisbon")
    ns = store.user_namespace(alice)
    item = store.get(ns, paris.id)
    assert item is not None  # another field on a fact, as a tool might add: metadata
    store.put(ns, paris.id, {**item.value, "source": "chat", "tags": ["home", 2]}, ["content"])
    store.remember(bob, ["Plays the cello", "Works on the payments team"])
    store.remember(zoe, "Mag Äpfel und Birnen")
    store.put(NOTES, "n1", {"text": "call back on Monday", "n": 1, "ok": True})
    store.put(("prefs",), "theme", {"dark": True, "sizes": [1, 2.5]}, index=False)
    store.put(ns, "profile", {"name": "Alice", "nested": {"a": [None, "b"]}})


def other_items(store: LongTermMemoryStore) -> dict[tuple[tuple[str, ...], str], Any]:
    """Every item that is not a fact or a version, by namespace and key."""
    found: dict[tuple[tuple[str, ...], str], Any] = {}
    offset = 0
    while True:
        page = store.search((), limit=100, offset=offset)
        offset += len(page)
        for hit in page:
            is_fact = store.user_id_of(hit.namespace) is not None and "content" in hit.value
            if not is_fact:
                item = store.get(hit.namespace, hit.key)
                assert item is not None
                found[(item.namespace, item.key)] = item.value
        if len(page) < 100:
            return found


def everything(store: LongTermMemoryStore) -> dict[str, Any]:
    return {
        "facts": {user: store.export_user(user) for user in USERS},
        "history": {
            user: {f.id: store.history(user, f.id) for f in store.list_all(user)} for user in USERS
        },
        "items": other_items(store),
    }


def transfer(source: LongTermMemoryStore, target: LongTermMemoryStore) -> None:
    for user in USERS:
        result = target.import_user(user, source.export_user(user), "restore")
        assert (result.restored, result.conflicts) == (len(source.list_all(user)), ())
    for (namespace, key), value in other_items(source).items():
        target.put(namespace, key, value)


@pytest.fixture
def postgres_store(make_backend) -> LongTermMemoryStore:
    return LongTermMemoryStore(make_backend(), embeddings=KeywordEmbeddings())


@pytest.fixture
def qdrant_store(tmp_path) -> Iterator[LongTermMemoryStore]:
    store = LongTermMemoryStore.from_qdrant(str(tmp_path / "qdrant"), KeywordEmbeddings())
    yield store
    store.close()


def test_memory_postgres_qdrant_memory_round_trip(postgres_store, qdrant_store):
    original = LongTermMemoryStore(InMemoryVectorStore(KeywordEmbeddings()))
    build_original(original)
    want = everything(original)
    alice = {f["content"]: f for f in want["facts"][USERS[0]]}
    assert len(alice["Has three kids"]["history"]) >= 1  # there are versions to carry
    assert [v["content"] for v in alice["Lives in Lisbon"]["history"]] == [
        "Lives in Paris",
        "Lives in Berlin",
    ]
    assert alice["Lives in Lisbon"]["metadata"] == {"source": "chat", "tags": ["home", 2]}
    stamps = [f[k] for facts in want["facts"].values() for f in facts for k in ("created_at",)]
    assert any(not s.split("+")[0].endswith(".000000") and "." in s for s in stamps)
    assert len(want["items"]) == 3

    final = LongTermMemoryStore(InMemoryVectorStore(KeywordEmbeddings()))
    hops = [original, postgres_store, qdrant_store, final]
    for source, target in zip(hops, hops[1:]):
        transfer(source, target)
        got = everything(target)
        assert got["facts"] == want["facts"]  # ids, texts, timestamps (µs), versions, metadata
        assert got["history"] == want["history"]  # FactVersion: valid_from / valid_to
        assert got["items"] == want["items"]

    # restoring the same export again changes nothing, on every engine
    for store in (postgres_store, qdrant_store, final):
        before = everything(store)
        for user in USERS:
            store.import_user(user, want["facts"][user], "restore")
        assert everything(store) == before == want | {"items": before["items"]}

    # the copies are indexed: recall finds current texts, and earlier ones with history
    hit = final.recall(USERS[0], "lives in Paris", include_history=True, limit=1)[0]
    assert (hit.content, hit.superseded) == ("Lives in Paris", True)
    assert hit.id == alice["Lives in Lisbon"]["id"]
    assert final.recall(USERS[2], "Äpfel", limit=1)[0].content == "Mag Äpfel und Birnen"


@pytest.fixture
def pg_database(pg_url: str) -> Iterator[str]:
    """A URL of a fresh database (the CLI uses the default table names), dropped after."""
    name = f"ltm_rt_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urllib.parse.urlsplit(pg_url)
    yield urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def migrate(*args: Any) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(["migrate", *map(str, args), "--json"])
    return code, json.loads(out.getvalue())


def test_ltm_migrate_folder_postgres_folder(tmp_path, pg_database, monkeypatch):
    monkeypatch.setenv("LTM_HOME", str(tmp_path / "home"))
    embeddings = cli_session.default_embeddings()
    store, _ = open_store(str(tmp_path / "a"), embeddings=embeddings)
    try:
        build_original(store)
        want = everything(store)
    finally:
        store.close()

    code, report = migrate("--from", tmp_path / "a", "--to", pg_database)
    assert code == 0 and report["verified"]
    assert report["source"]["items"] == 3 and report["source"]["users"] == 3
    assert report["source"]["versions"] >= 3
    code, report = migrate("--from", pg_database, "--to", tmp_path / "b")
    assert code == 0 and report["verified"]
    code, report = migrate("--from", tmp_path / "a", "--to", pg_database, "--yes")  # again
    assert code == 0 and report["extra_in_target"] == {"facts": 0, "items": 0}

    for where in (pg_database, str(tmp_path / "b")):
        store, _ = open_store(where, embeddings=embeddings)
        try:
            got = everything(store)
        finally:
            store.close()
        assert got["facts"] == want["facts"] and got["history"] == want["history"]
        assert got["items"] == want["items"]


def test_ltm_migrate_copies_snapshots_of_a_facts_value_to_postgres(
    tmp_path, pg_database, monkeypatch
):
    """Two snapshots of a fact's value outside the user's namespace: Postgres refused the
    second (its fact-hash constraint keeps one per namespace) and the migration failed.
    The second is stored without the hash, as a put of it is, and the check passes."""
    monkeypatch.setenv("LTM_HOME", str(tmp_path / "home"))
    embeddings = cli_session.default_embeddings()
    source, _ = open_store(str(tmp_path / "a"), embeddings=embeddings)
    try:
        fact = source.remember("alice", "I live in Berlin").fact
        assert fact is not None
        value = source.get(source.user_namespace("alice"), fact.id).value
        for key in ("d1", "d2"):
            source.put(("snapshots", "alice"), key, dict(value))
    finally:
        source.close()
    code, report = migrate("--from", tmp_path / "a", "--to", pg_database)
    assert code == 0 and report["verified"]
    target, _ = open_store(pg_database, embeddings=embeddings)
    try:
        got = [target.get(("snapshots", "alice"), key).value for key in ("d1", "d2")]
        bare = {k: v for k, v in value.items() if k != "content_hash"}
        assert got in ([value, bare], [bare, value])  # the copy written second goes bare
        assert [f.content for f in target.list_all("alice")] == ["I live in Berlin"]
    finally:
        target.close()


def test_ltm_migrate_copies_documents_with_an_odd_hash_to_postgres(
    tmp_path, pg_database, monkeypatch
):
    """A document whose ``content_hash`` is an object (``{"sha": "ab"}``) made ``ltm
    migrate`` to Postgres end in a ``TypeError`` traceback after writing part of the data;
    two copies of one with a number as the hash were refused (``DuplicateFactError``).
    No fact holds such a value: both are copied as they were, and the check passes."""
    monkeypatch.setenv("LTM_HOME", str(tmp_path / "home"))
    embeddings = cli_session.default_embeddings()
    source, _ = open_store(str(tmp_path / "a"), embeddings=embeddings)
    docs = {
        "k1": {"content": "report", "content_hash": {"sha": "ab"}, "versions": 1},
        "k2": {"content": "report", "content_hash": {"sha": "ab"}, "versions": 1},
        "n1": {"content": "memo", "content_hash": 7, "versions": 1},
        "n2": {"content": "memo", "content_hash": 7, "versions": 1},
    }
    try:
        source.remember("alice", "I live in Berlin")
        for key, value in docs.items():
            source.put(("docs", "x"), key, value, index=False)
    finally:
        source.close()
    code, report = migrate("--from", tmp_path / "a", "--to", pg_database)
    assert code == 0 and report["verified"]
    target, _ = open_store(pg_database, embeddings=embeddings)
    try:
        assert {key: target.get(("docs", "x"), key).value for key in docs} == docs
        assert [f.content for f in target.list_all("alice")] == ["I live in Berlin"]
    finally:
        target.close()
