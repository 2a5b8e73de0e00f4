"""The Postgres engine itself: schema, transactions, dropped connections, pools, dims."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import logging
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from urllib.parse import quote

import numpy as np
import psycopg
import pytest
from langgraph.store.base import PutOp
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from langchain_ltm import BackendError, EmbeddingDimensionError, LongTermMemoryStore
from langchain_ltm.backends.base import Record, SearchRequest
from langchain_ltm.backends.postgres import (
    DuplicateFactError,
    SchemaVersionError,
    StoreInUseError,
    postgres_backend,
)
from langchain_ltm.backends.postgres._schema import FACT_ROW
from langchain_ltm.facts.text import content_hash
from langchain_ltm.facts.versions import MAX_COUNT_DIGITS, holds_hash
from tests.fakes import KeywordEmbeddings
from tests.pg_pools import handed_in_pool

NS = ("memories", "u1")


@pytest.fixture
def emb():
    return KeywordEmbeddings(dims=64)


def unit(rng: np.random.Generator, n: int, dims: int = 64) -> np.ndarray:
    v = rng.standard_normal((n, dims)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def record(key: str, value: dict, vectors: np.ndarray | None, now: datetime) -> Record:
    texts = tuple(f"text {i}" for i in range(0 if vectors is None else len(vectors)))
    return Record(NS, key, value, texts, tuple(f"p{i}" for i in range(len(texts))), vectors, now)


def count_rows(conn, backend) -> tuple[int, int]:
    items = conn.execute(f"SELECT count(*) FROM {backend.tables.items}").fetchone()[0]
    vectors = conn.execute(f"SELECT count(*) FROM {backend.tables.vectors}").fetchone()[0]
    return items, vectors


# ---- schema -----------------------------------------------------------------------------


def test_setup_is_idempotent_and_records_the_schema_version(make_backend, pg_conn):
    backend = make_backend(dims=64)
    backend.setup()
    again = make_backend(table=backend.tables.table)  # another process, no dims given
    assert again.dims == 64
    versions = pg_conn.execute(f"SELECT version FROM {backend.tables.versions}").fetchall()
    assert versions == [(1,), (2,), (3,), (4,), (5,)]
    columns = dict(
        pg_conn.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = %s",
            (backend.vectors_table,),
        ).fetchall()
    )
    assert columns["langchain_id"] == "uuid" and columns["content"] == "text"
    assert columns["embedding"] == "USER-DEFINED" and columns["langchain_metadata"] == "json"
    with pytest.raises(EmbeddingDimensionError, match="64 dimensions"):
        make_backend(table=backend.tables.table, dims=32).write(
            [record("k", {}, np.ones((1, 32), np.float32) / 32**0.5, datetime.now(timezone.utc))],
            [],
        )


def test_dims_of_another_size_are_refused_at_open(make_backend, pg_url, pg_conn):
    """postgres_backend(url, table=t, dims=32) on a table of 64-dimension vectors opened and
    reported dims=64: the mismatch showed only at the first write. It is refused at open,
    naming both sizes, as a vector_type mismatch is; the table is left as it was."""
    backend = make_backend(dims=64)
    table = backend.tables.table
    with pytest.raises(EmbeddingDimensionError, match=r"embeddings of 64 dimensions, not 32"):
        postgres_backend(pg_url, table=table, dims=32)

    async def run() -> None:
        other = postgres_backend(pg_url, table=table, dims=32, setup=False)
        try:
            with pytest.raises(EmbeddingDimensionError, match="dims=64"):
                await other.asetup()
        finally:
            await other.aclose()

    asyncio.run(run())
    typmod = pg_conn.execute(
        "SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass(%s) "
        "AND attname = 'embedding'",
        (backend.tables.vectors,),
    ).fetchone()[0]
    assert typmod == 64
    for dims in (64, None):  # the table's size, or none given: opens as before
        again = postgres_backend(pg_url, table=table, dims=dims)
        try:
            assert again.dims == 64
        finally:
            again.close()


def test_concurrent_setups_of_one_table(make_backend, pg_url):
    table = f"t_{uuid.uuid4().hex[:12]}"
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            make_backend(table=table, dims=8)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_concurrent_setups_of_stores_in_a_new_schema(make_backend, pg_conn):
    """Setups lock their own store's names, not the database: stores of one new schema set
    up at once still create the schema one at a time (CREATE SCHEMA IF NOT EXISTS run by
    two transactions at once fails one of them), as do colliding names (x, x_vectors)."""
    schema = f"s_{uuid.uuid4().hex[:12]}"
    base = f"t_{uuid.uuid4().hex[:12]}"
    tables = [f"t_{uuid.uuid4().hex[:12]}" for _ in range(4)] + [base, f"{base}_vectors"]
    errors: list[BaseException] = []

    def worker(table: str) -> None:
        try:
            make_backend(table=table, schema=schema, dims=8)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(table,)) for table in tables]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # every store set up, except one of the colliding pair, refused by name
        assert len(errors) == 1, errors
        assert all(isinstance(e, ValueError) and "collide" in str(e) for e in errors), errors
    finally:
        pg_conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.mark.parametrize("other", ["_{base}", "{base}_vectors_pkey", "{base}_schema_pkey"])
def test_stores_whose_names_meet_only_in_names_postgres_makes_set_up_at_once(
    make_backend, pg_conn, other
):
    """A store's setup locked the names it creates, not the ones Postgres makes for them
    (primary keys, each table's array type "_x"): "x" and "_x" opened at once failed one
    of them with "duplicate key value violates unique constraint pg_type_typname_nsp_index"
    in every trial (a BackendError saying nothing of names). Each pair, opened at once a few
    times, sets up both, or refuses the second by name (a ValueError saying they collide)."""
    schema = f"s_{uuid.uuid4().hex[:12]}"
    try:
        for _ in range(4):
            base = f"t_{uuid.uuid4().hex[:12]}"
            errors: list[BaseException] = []
            barrier = threading.Barrier(2)

            def worker(table: str, barrier: threading.Barrier, errors: list) -> None:
                barrier.wait()
                try:
                    make_backend(table=table, schema=schema, dims=8)
                except BaseException as exc:
                    errors.append(exc)

            threads = [
                threading.Thread(target=worker, args=(name, barrier, errors))
                for name in (base, other.format(base=base))
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert all(isinstance(e, ValueError) and "collide" in str(e) for e in errors), errors
    finally:
        pg_conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_a_role_without_create_rights_opens_tables_at_the_current_version(
    make_backend, pg_url, pg_conn, emb
):
    """An app role given only DML on the store's tables could not open them: setup ran
    CREATE SCHEMA / CREATE TABLE IF NOT EXISTS, which Postgres checks CREATE rights for
    even when everything exists ("permission denied for database"), and the error did not
    say what to do. Tables at the current version are now only read; where there is DDL to
    do, the error says to run setup once as the owner."""
    suffix = uuid.uuid4().hex[:10]
    schema, role = f"s_{suffix}", f"app_{suffix}"
    owner = make_backend(schema=schema, dims=64)  # the migration role: creates the tables
    LongTermMemoryStore(owner, embeddings=emb).remember("u1", "Lives in Paris")
    t = owner.tables
    pg_conn.execute(f"CREATE ROLE {role} LOGIN")
    try:
        pg_conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
        pg_conn.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {t.items}, {t.vectors} TO {role}")
        pg_conn.execute(f"GRANT SELECT ON {t.versions} TO {role}")
        app_url = psycopg.conninfo.make_conninfo(pg_url, user=role)
        store = LongTermMemoryStore.from_postgres(app_url, emb, table=t.table, schema=schema)
        try:
            assert store.remember("u1", "Works in Lyon").action == "created"
            assert sorted(f.content for f in store.list_all("u1")) == [
                "Lives in Paris",
                "Works in Lyon",
            ]
        finally:
            store.close()
        with pytest.raises(BackendError, match="run setup once as the tables' owner"):
            postgres_backend(app_url, table=f"t_{suffix}", schema=schema)  # new: DDL to do
    finally:
        pg_conn.execute(f"DROP OWNED BY {role}")
        pg_conn.execute(f"DROP ROLE {role}")
    owner.drop()
    pg_conn.execute(f"DROP SCHEMA {schema}")


def test_a_search_path_without_pgvectors_schema_is_named(make_backend, pg_url, emb):
    """pgvector is installed in public; a connection whose search_path leaves it out does
    not find the vector type: setup succeeded, then every call said "the pgvector
    extension is missing ... run setup()", and setup again changed nothing."""
    table = make_backend(dims=64).tables.table
    options = {"options": f"-c search_path=app_{uuid.uuid4().hex[:8]}"}
    with pytest.raises(BackendError, match="installed in schema public, which is not on"):
        postgres_backend(pg_url, table=table, connect_kwargs=options)
    backend = postgres_backend(pg_url, table=table, connect_kwargs=options, setup=False)
    store = LongTermMemoryStore(backend, embeddings=emb)
    try:
        with pytest.raises(BackendError, match="not on this connection's search_path") as info:
            store.recall("u1", "tea")
        assert "options='-c search_path=app_" in str(info.value)
        assert "extension is missing" not in str(info.value)
    finally:
        store.close()


def test_the_suggested_search_path_options_connect(pg_url, pg_conn, emb):
    """pgvector in its own schema, the default search_path (``"$user", public``): the
    error suggested options='-c search_path="$user", public,ext', which libpq splits at
    the space: the server refused it ("List syntax is invalid") and the store said it
    cannot connect. The suggestion, taken as written (connect_kwargs and the URL), now
    connects and finds the vector type, with a space inside a schema name too."""
    database = f"sp_{uuid.uuid4().hex[:12]}"
    pg_conn.execute(f"CREATE DATABASE {database}")
    url = pg_url.replace("/postgres?", f"/{database}?", 1)
    assert url != pg_url
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute('CREATE SCHEMA "ltm ext"')
            conn.execute('CREATE EXTENSION vector SCHEMA "ltm ext"')
        with pytest.raises(BackendError, match="not on this connection's search_path") as info:
            LongTermMemoryStore.from_postgres(url, emb)
        message = str(info.value)
        options = ast.literal_eval(message.split("connect_kwargs (options=")[1].split(")")[0])
        for store in (
            LongTermMemoryStore.from_postgres(url, emb, connect_kwargs={"options": options}),
            LongTermMemoryStore.from_postgres(f"{url}&options={quote(options)}", emb),
        ):
            with store:
                store.remember("u1", "Lives in Paris")
                assert [f.content for f in store.recall("u1", "Paris")] == ["Lives in Paris"]
        assert options == '-c search_path="$user",public,"ltm\\ ext"'
        assert 'SET search_path = "$user", public, "ltm ext")' in message
    finally:
        pg_conn.execute(f"DROP DATABASE {database} WITH (FORCE)")


@pytest.mark.parametrize(
    "options", ["-c search_path=a, b", "-c search_path = a", "-c no_such_setting=1"]
)
def test_options_the_server_refuses_are_named_not_the_server(pg_url, options):
    """A setting the server refused (a list with a space, which libpq splits at) said
    "Cannot connect ... Check that the server is up", though it answered."""
    table = f"t_{uuid.uuid4().hex[:12]}"
    with pytest.raises(BackendError, match=r"refused a setting of this connection's options"):
        postgres_backend(pg_url, table=table, connect_kwargs={"options": options}, timeout=1)
    url = f"{pg_url}{'&' if '?' in pg_url else '?'}options={quote(options)}"
    with pytest.raises(BackendError, match=r"write list values without them") as info:
        postgres_backend(url, table=table, timeout=1)
    assert "server is up" not in str(info.value)


# the fact-hash constraint of schema versions 1 and 2 (an ALTER TABLE action)
_UNIQUE_FACT_HASH = (
    "DROP CONSTRAINT {name}, ADD CONSTRAINT {name} UNIQUE (ns_path, content_hash) "
    "DEFERRABLE INITIALLY DEFERRED"
)


def test_a_version_1_table_migrates_to_ttl_columns(make_backend, pg_conn, emb):
    backend = make_backend(dims=64)
    LongTermMemoryStore(backend, embeddings=emb).put(NS, "old", {"text": "green tea"})
    t = backend.tables
    pg_conn.execute(  # what schema version 1 looked like
        f"DROP INDEX {t.schema}.{t.index('expires_at')}; "
        f"ALTER TABLE {t.items} DROP COLUMN expires_at, DROP COLUMN ttl_minutes, "
        f"{_UNIQUE_FACT_HASH.format(name=t.index('fact_hash'))}; "
        f"DELETE FROM {t.versions} WHERE version >= 2"
    )
    store = LongTermMemoryStore(make_backend(table=t.table), embeddings=emb)  # setup migrates
    versions = pg_conn.execute(f"SELECT version, description FROM {t.versions}").fetchall()
    assert [v for v, _ in versions] == [1, 2, 3, 4, 5] and "TTL" in versions[1][1]
    columns = dict(
        pg_conn.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = %s",
            (t.table,),
        ).fetchall()
    )
    assert columns["expires_at"] == "timestamp with time zone"
    assert columns["ttl_minutes"] == "double precision"
    (indexdef,) = pg_conn.execute(
        "SELECT indexdef FROM pg_indexes WHERE indexname = %s", (f"{t.table}_expires_at",)
    ).fetchone()
    assert "WHERE (expires_at IS NOT NULL)" in indexdef
    assert store.get(NS, "old").value == {"text": "green tea"}  # old rows: no TTL
    store.put(NS, "new", {"text": "green tea"}, ttl=0.5)
    assert pg_conn.execute(
        f"SELECT ttl_minutes, expires_at > updated_at FROM {t.items} WHERE key = 'new'"
    ).fetchone() == (0.5, True)
    assert pg_conn.execute(
        f"SELECT ttl_minutes, expires_at FROM {t.items} WHERE key = 'old'"
    ).fetchone() == (None, None)


def _fact_hash_constraint(pg_conn, t):
    """(contype, definition, deferrable, deferred) of the table's fact-hash constraint."""
    row = pg_conn.execute(
        "SELECT contype, pg_get_constraintdef(oid), condeferrable, condeferred "
        "FROM pg_constraint WHERE conname = %s AND conrelid = %s::regclass",
        (f"{t.table}_fact_hash", t.items),
    ).fetchone()
    assert row is not None
    return row


def _assert_facts_only_at_commit(pg_conn, t):
    contype, definition, deferrable, deferred = _fact_hash_constraint(pg_conn, t)
    assert (contype, deferrable, deferred) == ("x", True, True)  # exclusion, at commit
    assert (  # schema version 5: the values versions.holds_hash takes
        "WHERE (((content_hash IS NOT NULL) AND (jsonb_typeof((value -> 'content_hash'::text)) "
        "= 'string'::text) AND (jsonb_typeof((value -> 'versions'::text)) = 'number'::text) "
        "AND ((value ->> 'versions'::text) ~ '^-?[0-9]{1,15}$'::text) AND "
        "(NOT (value ? 'version_of'::text))))"
    ) in definition


def test_the_fact_hash_is_unique_among_facts_only(make_backend, pg_conn, emb):
    backend = make_backend(dims=64)
    t = backend.tables
    _assert_facts_only_at_commit(pg_conn, t)
    store = LongTermMemoryStore(backend, embeddings=emb)
    for i in range(30):  # BaseStore items, with a hash of their own or not: not facts
        store.put(("docs",), f"plain-{i}", {"content": f"plain text {i}"})
        store.put(("docs",), f"hashed-{i}", {"content": "a doc", "content_hash": "sha256:ab"})
    store.remember("u1", "I live in Paris")
    pg_conn.execute(f"VACUUM ANALYZE {t.items}")
    (entries,) = pg_conn.execute(
        "SELECT reltuples FROM pg_class WHERE oid = %s::regclass",
        (f'"{t.schema}".{t.index("fact_hash")}',),
    ).fetchone()
    assert entries == 1


def test_a_plain_value_with_its_own_content_hash_is_not_a_fact(make_backend, pg_conn, emb):
    backend = make_backend(dims=64)
    t = backend.tables
    store = LongTermMemoryStore(backend, embeddings=emb)
    fact = store.remember("u1", "I live in Paris").fact
    doc = {"content": "Quarterly report", "content_hash": "sha256:ab12"}
    pg_conn.execute(  # schema version 3's constraint: every row with a hash
        f"ALTER TABLE {t.items} DROP CONSTRAINT {t.index('fact_hash')}, "
        f"ADD CONSTRAINT {t.index('fact_hash')} EXCLUDE USING btree "
        "(ns_path WITH =, content_hash WITH =) WHERE (content_hash IS NOT NULL) "
        f"DEFERRABLE INITIALLY DEFERRED; DELETE FROM {t.versions} WHERE version >= 4"
    )
    store.put(("docs",), "copy-1", doc)
    with pytest.raises(DuplicateFactError):  # what version 3 did to a plain put
        store.put(("docs",), "copy-2", doc)
    again = LongTermMemoryStore(make_backend(table=t.table), embeddings=emb)  # migrates
    _assert_facts_only_at_commit(pg_conn, t)
    for ns in (("docs",), again.user_namespace("u2")):  # two copies of one document
        again.put(ns, "copy-1", doc)
        again.put(ns, "copy-2", doc)
        assert [i.value for i in again.search(ns)] == [doc, doc]
    # facts: still one row per hash, across writers that skip the decision: a copy of a
    # fact's value under another key is stored without the hash (as LangMem's puts are)
    assert again.remember("u1", "i live in paris!").action == "duplicate"
    namespace = again.user_namespace("u1")
    again.put(namespace, "copy", store.get(namespace, fact.id).value)
    assert "content_hash" not in again.get(namespace, "copy").value
    assert again.get(namespace, fact.id).value["content_hash"] == content_hash("I live in Paris")
    assert sorted(f.id for f in again.list_all("u1")) == sorted([fact.id, "copy"])


def test_a_version_2_table_gets_the_partial_fact_hash_constraint(make_backend, pg_conn, emb):
    backend = make_backend(dims=64)
    t = backend.tables
    store = LongTermMemoryStore(backend, embeddings=emb)
    store.put(("docs",), "plain", {"content": "no hash here"})
    fact = store.remember("u1", "I live in Paris").fact
    pg_conn.execute(  # what schema version 2 had
        f"ALTER TABLE {t.items} {_UNIQUE_FACT_HASH.format(name=t.index('fact_hash'))}; "
        f"DELETE FROM {t.versions} WHERE version >= 3"
    )
    assert _fact_hash_constraint(pg_conn, t)[0] == "u"
    again = LongTermMemoryStore(make_backend(table=t.table), embeddings=emb)  # migrates
    versions = pg_conn.execute(f"SELECT version FROM {t.versions} ORDER BY 1").fetchall()
    assert versions == [(1,), (2,), (3,), (4,), (5,)]
    _assert_facts_only_at_commit(pg_conn, t)
    assert again.get(("docs",), "plain").value == {"content": "no hash here"}
    assert [f.id for f in again.list_all("u1")] == [fact.id]
    assert again.remember("u1", "i live in paris!").action == "duplicate"


def test_a_version_4_table_leaves_a_clients_version_of_item_out_of_the_fact_hash(
    make_backend, pg_conn, emb
):
    """Schema version 4's constraint covered a client's item with a ``version_of`` field
    of its own, which ``remember`` does not look up by hash: every later ``remember`` of
    its text was refused with ``DuplicateFactError``. Version 5 covers the values
    ``versions.holds_hash`` takes, the ones ``remember`` finds."""
    backend = make_backend(dims=64)
    t = backend.tables
    store = LongTermMemoryStore(backend, embeddings=emb)
    pg_conn.execute(  # schema version 4's constraint
        f"ALTER TABLE {t.items} DROP CONSTRAINT {t.index('fact_hash')}, "
        f"ADD CONSTRAINT {t.index('fact_hash')} EXCLUDE USING btree "
        "(ns_path WITH =, content_hash WITH =) WHERE "
        "(content_hash IS NOT NULL AND value ? 'versions') "
        f"DEFERRABLE INITIALLY DEFERRED; DELETE FROM {t.versions} WHERE version = 5"
    )
    ns = store.user_namespace("u1")
    text = "Quarterly report"
    odd = {"content": text, "content_hash": content_hash(text), "versions": 1, "version_of": "d"}
    store.put(ns, "x", odd)
    with pytest.raises(DuplicateFactError, match=re.escape(f"of namespace {ns!r}")):
        store.remember("u1", text)
    again = LongTermMemoryStore(make_backend(table=t.table), embeddings=emb)  # migrates
    versions = pg_conn.execute(f"SELECT version FROM {t.versions} ORDER BY 1").fetchall()
    assert versions == [(1,), (2,), (3,), (4,), (5,)]
    _assert_facts_only_at_commit(pg_conn, t)
    assert again.remember("u1", text).action == "created"
    assert again.remember("u1", text).action == "duplicate"
    assert again.get(ns, "x").value == odd


# schema version 5's first form (before its release): no text hash, no bound on the count
_FIRST_FORM_5 = (
    "content_hash IS NOT NULL AND jsonb_typeof(value -> 'versions') = 'number' "
    "AND (value ->> 'versions') ~ '^-?[0-9]+$' AND NOT value ? 'version_of'"
)


def _as_first_form_5(pg_conn, t):
    pg_conn.execute(
        f"ALTER TABLE {t.items} DROP CONSTRAINT {t.index('fact_hash')}, "
        f"ADD CONSTRAINT {t.index('fact_hash')} EXCLUDE USING btree "
        f"(ns_path WITH =, content_hash WITH =) WHERE ({_FIRST_FORM_5}) "
        f"DEFERRABLE INITIALLY DEFERRED; UPDATE {t.versions} SET description = "
        "'fact hash: only values in the fact layout (an integer versions, no version_of)' "
        "WHERE version = 5"
    )


def test_a_table_with_schema_version_5s_first_form_is_migrated_again(make_backend, pg_conn, emb):
    """Schema version 5 was revised before its release (a text hash, a count of at most 15
    digits): a table set up with its first form records version 5 too, and kept refusing
    a second copy of a value with a number as its hash. Its recorded description tells the
    form: setup re-creates the constraint and records the new description, once."""
    backend = make_backend(dims=64)
    t = backend.tables
    store = LongTermMemoryStore(backend, embeddings=emb)
    fact = store.remember("u1", "I live in Paris").fact
    _as_first_form_5(pg_conn, t)
    odd = {"content": "report", "content_hash": 5, "versions": 1}
    store.put(("docs",), "k1", odd)
    with pytest.raises(DuplicateFactError):  # what the first form did
        store.put(("docs",), "k2", odd)
    again = LongTermMemoryStore(make_backend(table=t.table), embeddings=emb)  # migrates
    _assert_facts_only_at_commit(pg_conn, t)
    rows = pg_conn.execute(f"SELECT version, description FROM {t.versions} ORDER BY 1").fetchall()
    assert [v for v, _ in rows] == [1, 2, 3, 4, 5] and "a text content_hash" in rows[-1][1]
    again.put(("docs",), "k2", odd)
    assert again.get(("docs",), "k2").value == odd
    assert again.remember("u1", "i live in paris!").action == "duplicate"
    assert [f.id for f in again.list_all("u1")] == [fact.id]
    definition = _fact_hash_constraint(pg_conn, t)[1]
    make_backend(table=t.table)  # at the current form: nothing to do
    assert _fact_hash_constraint(pg_conn, t)[1] == definition


@pytest.mark.parametrize("form", ["version 4", "version 5's first form"])
def test_a_migration_does_not_wait_behind_an_idle_transaction(
    make_backend, pg_url, pg_conn, emb, form
):
    """A migration's ALTER TABLE (ACCESS EXCLUSIVE) waited, with no lock_timeout, behind a
    session idle in a transaction that had read the table: the opener waited as long as
    that session did, and every reader of the table queued behind it. The migration waits
    at most a few seconds (MIGRATION_LOCK_TIMEOUT), then setup raises StoreInUseError with
    nothing changed; opened when the table is quiet, it migrates."""
    backend = make_backend(dims=64)
    t = backend.tables
    LongTermMemoryStore(backend, embeddings=emb).remember("u1", "I live in Paris")
    if form == "version 4":
        pg_conn.execute(
            f"ALTER TABLE {t.items} DROP CONSTRAINT {t.index('fact_hash')}, "
            f"ADD CONSTRAINT {t.index('fact_hash')} EXCLUDE USING btree "
            "(ns_path WITH =, content_hash WITH =) WHERE "
            "(content_hash IS NOT NULL AND value ? 'versions') "
            f"DEFERRABLE INITIALLY DEFERRED; DELETE FROM {t.versions} WHERE version = 5"
        )
    else:
        _as_first_form_5(pg_conn, t)
    before = _fact_hash_constraint(pg_conn, t)[1]
    recorded = pg_conn.execute(f"SELECT version, description FROM {t.versions}").fetchall()
    with psycopg.connect(pg_url) as holder:  # idle in a transaction that read the table
        holder.execute(f"SELECT count(*) FROM {t.items}").fetchone()
        release = threading.Timer(30, holder.rollback)
        release.start()
        try:
            started = time.monotonic()
            with pytest.raises(StoreInUseError, match="could not be migrated"):
                make_backend(table=t.table)
            assert time.monotonic() - started < 10
            with psycopg.connect(pg_url, autocommit=True) as reader:  # not queued behind it
                reader.execute("SET statement_timeout = '2s'")
                assert reader.execute(f"SELECT count(*) FROM {t.items}").fetchone()[0] > 0

            async def run() -> None:
                with pytest.raises(StoreInUseError, match="could not be migrated"):
                    await make_backend(table=t.table, setup=False).asetup()

            asyncio.run(run())
            assert release.is_alive()  # refused while the session still held the table
        finally:
            release.cancel()
            holder.rollback()
    assert _fact_hash_constraint(pg_conn, t)[1] == before  # nothing changed
    assert pg_conn.execute(f"SELECT version, description FROM {t.versions}").fetchall() == (
        recorded
    )
    store = LongTermMemoryStore(make_backend(table=t.table), embeddings=emb)  # quiet: migrates
    _assert_facts_only_at_commit(pg_conn, t)
    assert store.remember("u1", "i live in paris!").action == "duplicate"


@pytest.mark.parametrize(
    ("content_hash", "versions"),
    [
        ({"sha": "ab"}, 1),
        (5, 1),
        (True, 1),
        (1.5, 1),
        (["a"], 1),
        ("abc", 1e20),  # JSON writes it 1e+20: an integer to Postgres
        ("abc", 2.0),
        ("abc", True),
        ("abc", 10**20),
    ],
)
def test_copies_of_a_value_with_an_odd_hash_or_count_are_stored_as_put(
    make_backend, pg_conn, emb, content_hash, versions
):
    """A value with ``content`` and ``content_hash``/``versions`` fields that are not a
    text hash and a whole count: ``{"sha": "ab"}`` as the hash raised ``TypeError`` in the
    first put outside the users' namespaces (``unique_hashes``), and a number, a bool or a
    float one (or a float count of 1e16 and more, which Postgres reads as an integer) made
    the constraint refuse a second copy (``DuplicateFactError``: the puts compared it as
    text, or not at all). No fact holds such a value: every copy is stored as put."""
    backend = make_backend(dims=64)
    store = LongTermMemoryStore(backend, embeddings=emb)
    value = {"content": "report", "content_hash": content_hash, "versions": versions}
    for ns in (("docs", "x"), store.user_namespace("u1")):
        for key in ("k1", "k2"):
            store.put(ns, key, dict(value), index=False)
        for key in ("k1", "k2"):
            assert store.get(ns, key).value == value, (ns, key)
    (covered,) = pg_conn.execute(
        f"SELECT count(*) FROM {backend.tables.items} WHERE {FACT_ROW}"
    ).fetchone()
    assert covered == 0
    assert not holds_hash(value)


def test_the_fact_hash_constraint_covers_the_values_holds_hash_takes(make_backend, pg_conn):
    """``FACT_ROW`` (Postgres) and ``versions.holds_hash`` (puts, ``remember``) name the
    same values: a row covered that the puts do not see refused a second copy."""
    backend = make_backend(dims=64)
    t = backend.tables
    values = [
        {"content": "t", "content_hash": h, "versions": v}
        for h in ("abc", "", 5, 1.5, True, None, {"a": 1}, ["a"])
        for v in (0, 1, -1, 2.0, 1e15, 1e16, 1e20, 10**14, 10**15, 10**20, True, "1", None, [1])
    ]
    values += [
        {"content_hash": "abc", "versions": 1},  # no content
        {"content": None, "content_hash": "abc", "versions": 1},
        {"content": "t", "content_hash": "abc", "versions": 1, "version_of": "f"},
        {"content": "t", "content_hash": "abc"},
    ]
    now = datetime.now(timezone.utc)
    backend.write(
        [Record(("v", str(i)), "k", value, (), (), None, now) for i, value in enumerate(values)],
        [],
    )
    rows = pg_conn.execute(f"SELECT namespace[2], {FACT_ROW} FROM {t.items}").fetchall()
    assert len(rows) == len(values)
    covered = {int(i) for i, fact in rows if fact}
    assert covered == {i for i, value in enumerate(values) if holds_hash(value)}
    assert f"{{1,{MAX_COUNT_DIGITS}}}" in FACT_ROW


def test_newer_schema_version_is_refused(make_backend, pg_conn):
    backend = make_backend(dims=8)
    pg_conn.execute(
        f"INSERT INTO {backend.tables.versions} (version, description) VALUES (99, 'future')"
    )
    with pytest.raises(SchemaVersionError, match="Upgrade langchain-ltm") as caught:
        backend.setup()
    # one class for every engine, in the documented error tree (was Postgres' own)
    from langchain_ltm import errors
    from langchain_ltm.backends import sqlite

    assert type(caught.value) is errors.SchemaVersionError is sqlite.SchemaVersionError


def test_dims_are_learnt_at_the_first_write(make_backend, pg_conn, emb):
    backend = make_backend()  # no dims: the embedding column is typed by the first write
    assert backend.dims is None
    store = LongTermMemoryStore(backend, embeddings=emb)
    store.put(NS, "k", {"text": "green tea"})
    assert backend.dims == 64
    typmod = pg_conn.execute(
        "SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass(%s) "
        "AND attname = 'embedding'",
        (backend.tables.vectors,),
    ).fetchone()[0]
    assert typmod == 64
    other = LongTermMemoryStore(
        make_backend(table=backend.tables.table), embeddings=KeywordEmbeddings(dims=32)
    )
    with pytest.raises(EmbeddingDimensionError, match="embedding model changed"):
        other.put(NS, "j", {"text": "coffee"})
    with pytest.raises(EmbeddingDimensionError):
        other.search(NS, query="coffee")


def test_bad_table_names_are_refused(make_backend):
    with pytest.raises(ValueError, match="plain identifier"):
        make_backend(table='x"; DROP TABLE y; --')


# ---- transactions -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_batch_with_a_bad_record_writes_nothing(make_backend, pg_conn, emb, mode):
    backend = make_backend(dims=64)
    store = LongTermMemoryStore(backend, embeddings=emb)
    store.put(NS, "old", {"text": "kept as it was"})
    ops = [
        PutOp(NS, "good", {"text": "green tea"}),
        PutOp(NS, "old", None),
        PutOp(NS, "bad", {"text": "Postgres JSON has no NUL: \x00"}),
    ]

    async def run() -> None:
        if mode == "async":
            await store.abatch(ops)
        else:
            store.batch(ops)

    with pytest.raises(BackendError, match="NUL"):
        await run()
    assert store.get(NS, "good") is None
    assert store.get(NS, "old").value == {"text": "kept as it was"}
    assert count_rows(pg_conn, backend) == (1, 1)


def test_a_fact_hash_conflict_rolls_back_the_whole_batch(make_backend, pg_conn):
    backend = make_backend(dims=4)
    now = datetime.now(timezone.utc)
    vec = np.eye(4, dtype=np.float32)
    backend.write(
        [record("a", {"content": "x", "content_hash": "h", "versions": 0}, vec[:1], now)], []
    )
    with pytest.raises(DuplicateFactError, match="remember\\(\\) again") as caught:
        backend.write(
            [
                record("b", {"other": 1}, vec[1:2], now),
                record("c", {"content": "x", "content_hash": "h", "versions": 0}, vec[2:3], now),
            ],
            [],
        )
    # the error names the item, its namespace and the hash (it said only "this user")
    assert f"the item 'c' of namespace {NS!r}, content_hash 'h'" in str(caught.value)
    assert count_rows(pg_conn, backend) == (1, 1)
    # two facts may swap texts within one batch: the constraint is checked at commit
    backend.write(
        [record("d", {"content": "y", "content_hash": "i", "versions": 0}, vec[1:2], now)], []
    )
    backend.write(
        [
            record("a", {"content": "y", "content_hash": "i", "versions": 0}, vec[:1], now),
            record("d", {"content": "x", "content_hash": "h", "versions": 0}, vec[1:2], now),
        ],
        [],
    )
    got = backend.get([(NS, "a"), (NS, "d")])
    assert [g.value["content"] for g in got] == ["y", "x"]


def test_a_put_refused_by_the_fact_hash_is_written_again_without_it(make_backend, pg_url, emb):
    """A BaseStore put that lost a race for a fact's hash (another session stored a copy
    of the value under another key at the same moment) was told to "call remember()
    again", then (seventh session) to put again. The put now looks again and writes again
    itself, once: it sees the other copy and is stored without the hash, as in order."""
    backend = make_backend(dims=64)
    store = LongTermMemoryStore(backend, embeddings=emb)
    text = "I live in Berlin"
    value = {"content": text, "content_hash": content_hash(text), "versions": 0}
    ns = ("snapshots", "u1")
    with psycopg.connect(pg_url) as other:  # its copy, not yet committed: the put sees none
        other.execute(
            f"INSERT INTO {backend.tables.items} (ns_path, key, value, created_at, updated_at) "
            "VALUES ('snapshots.u1.', 'a', %s, now(), now())",
            (psycopg.types.json.Jsonb(value),),
        )
        commit = threading.Timer(1, other.commit)
        commit.start()
        try:
            store.put(ns, "b", dict(value), index=False)  # waits for the commit, then retries
        finally:
            commit.join()
    assert store.get(ns, "b").value == {"content": text, "versions": 0}
    assert store.get(ns, "a").value == value


def test_mixed_vector_sizes_in_one_batch_are_refused_before_io(make_backend):
    backend = make_backend()
    now = datetime.now(timezone.utc)
    with pytest.raises(EmbeddingDimensionError, match="several sizes"):
        backend.write(
            [
                record("a", {}, np.ones((1, 4), np.float32), now),
                record("b", {}, np.ones((1, 8), np.float32), now),
            ],
            [],
        )


def test_a_retried_batch_is_idempotent(make_backend, pg_conn):
    backend = make_backend(dims=64)
    rng = np.random.default_rng(0)
    first = datetime.now(timezone.utc)
    batch = [record(f"k{i}", {"i": i}, unit(rng, 1 + i % 3), first) for i in range(20)]
    backend.write(batch, [(NS, "missing")])
    before = backend.get([(NS, f"k{i}") for i in range(20)])
    rows = count_rows(pg_conn, backend)
    assert backend.write(batch, [(NS, "missing")]) == 0
    assert backend.get([(NS, f"k{i}") for i in range(20)]) == before
    assert count_rows(pg_conn, backend) == rows == (20, sum(1 + i % 3 for i in range(20)))
    later = datetime.now(timezone.utc)
    backend.write([record("k0", {"i": 0, "again": True}, None, later)], [])
    item = backend.get([(NS, "k0")])[0]
    assert (item.created_at, item.updated_at) == (first, later)  # created_at kept
    assert count_rows(pg_conn, backend)[1] == rows[1] - 1  # k0 lost its vector


def _vector_rows(conn, backend) -> dict[tuple[str, str], np.ndarray]:
    rows = conn.execute(
        f"SELECT key, path, embedding::text FROM {backend.tables.vectors}"
    ).fetchall()
    return {(k, p): np.array(e.strip("[]").split(","), dtype=np.float32) for k, p, e in rows}


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_mixed_batch_replaces_kept_dropped_and_new_vectors(make_backend, pg_conn, mode):
    # one batch: a new key, a key re-written with the same paths (its ids are upserted),
    # one re-written with other paths (old ones deleted, new ones inserted plainly), one
    # re-written without vectors, and a delete; the rows equal what was written last
    backend = make_backend(dims=64)
    rng = np.random.default_rng(1)
    now = datetime.now(timezone.utc)
    backend.write(
        [record(k, {"k": k}, unit(rng, 2), now) for k in ("same", "other", "bare", "gone")], []
    )
    same, other, new = unit(rng, 2), unit(rng, 3), unit(rng, 1)
    moved = record("other", {"k": "other"}, other, now)
    moved = dataclasses.replace(moved, paths=("q0", "q1", "q2"), texts=("a", "b", "c"))
    batch = [
        record("same", {"k": "same"}, same, now),
        moved,
        record("new", {"k": "new"}, new, now),
        record("bare", {"k": "bare"}, None, now),
    ]
    if mode == "sync":
        assert backend.write(batch, [(NS, "gone")]) == 1
    else:
        assert await backend.awrite(batch, [(NS, "gone")]) == 1
    rows = _vector_rows(pg_conn, backend)
    want = {("same", "p0"): same[0], ("same", "p1"): same[1], ("new", "p0"): new[0]}
    want.update({("other", f"q{i}"): other[i] for i in range(3)})
    assert sorted(rows) == sorted(want)
    for where, vector in want.items():
        np.testing.assert_allclose(rows[where], vector, rtol=1e-6)
    assert count_rows(pg_conn, backend) == (4, 6)


# ---- connections ------------------------------------------------------------------------


def _terminate(conn, app: str, waiting_only: bool = False) -> int:
    sql = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s"
    if waiting_only:
        sql += " AND wait_event_type = 'Lock'"
    return len(conn.execute(sql, (app,)).fetchall())


async def test_dropped_connections_are_replaced(make_backend, pg_conn, emb):
    app = f"ltm-{uuid.uuid4().hex[:8]}"
    backend = make_backend(dims=64, connect_kwargs={"application_name": app})
    store = LongTermMemoryStore(backend, embeddings=emb)
    store.put(NS, "k", {"text": "green tea"})
    assert [h.key for h in await store.asearch(NS, query="tea")] == ["k"]
    assert _terminate(pg_conn, app) >= 2  # the sync and the async pool's connections
    assert [h.key for h in store.search(NS, query="tea")] == ["k"]
    assert [h.key for h in await store.asearch(NS, query="tea")] == ["k"]
    _terminate(pg_conn, app)
    store.put(NS, "j", {"text": "coffee"})
    await store.aput(NS, "i", {"text": "bike"})
    assert sorted(h.key for h in store.search(NS)) == ["i", "j", "k"]


def test_a_connection_lost_twice_is_a_clear_error_and_the_next_call_works(
    make_backend, pg_conn, pg_url, emb
):
    app = f"ltm-{uuid.uuid4().hex[:8]}"
    backend = make_backend(dims=64, connect_kwargs={"application_name": app})
    store = LongTermMemoryStore(backend, embeddings=emb)
    store.put(NS, "a", {"text": "green tea"})
    with psycopg.connect(pg_url) as locker:  # holds a lock: the write waits, then is killed
        locker.execute(f"LOCK TABLE {backend.tables.items} IN ACCESS EXCLUSIVE MODE")
        kills = 0

        def killer() -> None:
            nonlocal kills
            deadline = time.monotonic() + 20
            while kills < 2 and time.monotonic() < deadline:
                kills += _terminate(pg_conn, app, waiting_only=True)
                time.sleep(0.05)

        thread = threading.Thread(target=killer)
        thread.start()
        with pytest.raises(BackendError, match="connection to Postgres failed") as info:
            store.batch([PutOp(NS, "b", {"text": "coffee"}), PutOp(NS, "a", None)])
        thread.join()
        assert kills == 2
        assert "retry" in str(info.value)
        locker.rollback()
    assert store.get(NS, "b") is None and store.get(NS, "a") is not None  # nothing half-written
    store.batch([PutOp(NS, "b", {"text": "coffee"}), PutOp(NS, "a", None)])  # the retry lands
    assert sorted(h.key for h in store.search(NS)) == ["b"]


def test_an_unreachable_server_is_a_clear_error(tmp_path):
    started = time.monotonic()
    with pytest.raises(BackendError, match="server is up and reachable") as info:
        postgres_backend(f"postgresql://postgres@/postgres?host={tmp_path}", timeout=1)
    assert time.monotonic() - started < 10
    assert "max_size" not in str(info.value)  # a bigger pool does not reach a server
    assert "connecting directly failed: connection is bad" in str(info.value)


def test_sync_and_async_calls_say_alike_that_the_server_cannot_be_reached(tmp_path):
    """aremember/aforget/aupdate_fact take an advisory lock on a connection of their own:
    when it could not be opened they raised psycopg's OperationalError, where the sync
    twins (and asearch) raise BackendError saying what to check."""
    url = f"postgresql://postgres@/postgres?host={tmp_path}"  # no server listens there
    store = LongTermMemoryStore(
        postgres_backend(url, setup=False, dims=16, timeout=1), embeddings=KeywordEmbeddings(16)
    )
    calls = {
        "remember": lambda: store.remember("u1", "Likes tea"),
        "forget": lambda: store.forget("u1", "some-id"),
        "update_fact": lambda: store.update_fact("u1", "some-id", "Likes coffee"),
        "search": lambda: store.search(NS, query="tea"),
    }
    acalls = {
        "remember": lambda: store.aremember("u1", "Likes tea"),
        "forget": lambda: store.aforget("u1", "some-id"),
        "update_fact": lambda: store.aupdate_fact("u1", "some-id", "Likes coffee"),
        "search": lambda: store.asearch(NS, query="tea"),
    }
    try:
        for name, call in calls.items():
            with pytest.raises(BackendError, match="Cannot connect to Postgres") as sync:
                call()
            with pytest.raises(BackendError, match="Cannot connect to Postgres") as not_sync:
                asyncio.run(acalls[name]())
            assert type(not_sync.value) is type(sync.value), name
            for info in (sync, not_sync):
                assert "server is up and reachable" in str(info.value), name
    finally:
        store.close()


def test_a_pool_whose_connections_all_stay_busy_says_so(pg_url):
    """The server is reachable: only then is a bigger pool the advice."""
    backend = postgres_backend(pg_url, table=f"t_{uuid.uuid4().hex[:12]}", max_size=1, timeout=1)
    try:
        held = backend.connector.sync_pool().connection()  # the only connection
        with held, pytest.raises(BackendError, match="all stayed busy") as info:
            backend.count(NS)
        assert "raise max_size/timeout of postgres_backend()" in str(info.value).lower()
        assert "connecting directly failed" not in str(info.value)
    finally:
        backend.drop()
        backend.close()


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("postgresql://app:s3cret@127.0.0.1:99999/app", 'invalid port number "99999"'),
        ("postgresql://app:s3cret@db:5432,db2:0/app", 'invalid port number "0"'),
        ("postgresql://app:s3cret@db/app?sslmod=require", 'invalid URI query parameter: "sslmod"'),
        ("postgresql://app:s3cret@[::1/app", 'matching "]" in IPv6 host address'),
        ("host=db port=http password=s3cret", 'invalid port number "http"'),
    ],
)
def test_a_malformed_url_is_refused_at_once_without_its_password(url, problem):
    """libpq only read the URL when the pool connected: each attempt logged the error and
    the call raised BackendError after the whole pool timeout, as if the server were down."""
    started = time.monotonic()
    with pytest.raises(ValueError, match="Malformed Postgres URL") as info:
        postgres_backend(url, timeout=5)
    assert time.monotonic() - started < 1
    assert problem in str(info.value) and "s3cret" not in str(info.value)


def _ltm(*argv: str) -> subprocess.CompletedProcess[str]:
    """``ltm ...`` in a fresh interpreter (its own logging set-up), a 1 s pool timeout."""
    script = (
        "import sys\n"
        "from langchain_ltm.backends.postgres import backend\n"
        "backend.postgres_backend.__kwdefaults__['timeout'] = 1.0\n"
        "from langchain_ltm.cli import main\n"
        f"sys.exit(main({list(argv)!r}))"
    )
    env = {**os.environ, "LTM_ENCODER_SERVER": "off"}
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env
    )


def test_the_cli_says_once_why_it_cannot_connect_and_takes_a_bad_url_as_bad_usage(tmp_path):
    """The pool's log lines ("error connecting in 'langchain-ltm': ...", up to eight) came
    before the command's own error, which advised postgres_backend(), a Python API."""
    done = _ltm("list", "--user", "u", "--store", "postgresql://app@127.0.0.1:1/app")
    assert done.returncode == 3 and done.stdout == ""
    assert done.stderr.startswith("ltm: error: Cannot connect to Postgres")
    assert done.stderr.count("\n") == 1  # one line: the command's own
    assert "postgres_backend" not in done.stderr and "Connection refused" in done.stderr

    with LongTermMemoryStore.from_sqlite(tmp_path / "m.db", KeywordEmbeddings(dims=384)) as store:
        store.remember("u", "Likes tea")

    for argv in (
        ("list", "--user", "u", "--store", "postgresql://app:pw@127.0.0.1:99999/app"),
        ("migrate", "--from", f"sqlite:///{tmp_path / 'm.db'}", "--to", "postgresql://app:pw@db:99999/app"),
        ("forget-user", "--user", "u", "--store", f"sqlite:///{tmp_path / 'm.db'}", "--yes",
         "--checkpointer", "postgresql://app:pw@db:99999/app"),
    ):  # fmt: skip
        started = time.monotonic()
        done = _ltm(*argv)
        assert (done.returncode, done.stdout) == (2, ""), done.stderr
        assert 'invalid port number "99999"' in done.stderr and ":pw@" not in done.stderr
        assert done.stderr.count("\n") == 1
        assert time.monotonic() - started < 10


# ---- pools handed in --------------------------------------------------------------------


async def test_pools_handed_in_are_used_and_left_open(pg_url, emb):
    with ConnectionPool(pg_url, kwargs={"autocommit": True}, min_size=1) as pool:
        backend = postgres_backend(pool, table=f"t_{uuid.uuid4().hex[:12]}", dims=64)
        store = LongTermMemoryStore(backend, embeddings=emb)
        store.put(NS, "k", {"text": "green tea"})
        assert [h.key for h in await store.asearch(NS, query="tea")] == ["k"]  # async twin
        backend.drop()
        backend.close()
        assert not pool.closed
        assert pool.get_stats()["requests_num"] >= 2


async def test_an_async_pool_and_async_setup(pg_url, emb):
    table = f"t_{uuid.uuid4().hex[:12]}"
    async with AsyncConnectionPool(pg_url, kwargs={"autocommit": False}, open=False) as pool:
        backend = postgres_backend(pool, table=table, setup=False)
        await backend.asetup()
        store = LongTermMemoryStore(backend, embeddings=emb)
        assert (await store.aremember("u1", "I like green tea")).action == "created"
        assert [f.content for f in await store.arecall("u1", "tea")] == ["I like green tea"]
        assert store.list_all("u1")[0].content == "I like green tea"  # sync twin pool
        await backend.adrop()
        await backend.aclose()
        assert not pool.closed


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_pool_made_for_langgraphs_postgres_store_is_taken(pg_url, emb, mode):
    """LangGraph's ``PostgresStore`` and ``PostgresSaver`` need ``row_factory=dict_row``;
    a pool shared with them made setup fail with ``KeyError: 0`` (rows read by position)."""
    from psycopg.rows import dict_row

    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    table, docs = f"t_{uuid.uuid4().hex[:12]}", ("docs",)
    async with handed_in_pool(pg_url, mode, **kwargs) as pool:
        store = LongTermMemoryStore.from_postgres(pool, emb, table=table)
        try:
            if mode == "sync":
                assert store.remember("u1", "I like green tea").action == "created"  # a lock
                store.put(docs, "k", {"text": "green tea"})
                assert [f.content for f in store.recall("u1", "tea")] == ["I like green tea"]
                assert store.get(docs, "k").value == {"text": "green tea"}
                assert [h.key for h in store.search(docs, query="tea")] == ["k"]
                assert store.list_namespaces(prefix=docs) == [docs]
            else:
                assert (await store.aremember("u1", "I like green tea")).action == "created"
                await store.aput(docs, "k", {"text": "green tea"})
                found = await store.arecall("u1", "tea")
                assert [f.content for f in found] == ["I like green tea"]
                assert (await store.aget(docs, "k")).value == {"text": "green tea"}
                assert [h.key for h in await store.asearch(docs, query="tea")] == ["k"]
                assert await store.alist_namespaces(prefix=docs) == [docs]
            assert store.export_user("u1")[0]["content"] == "I like green tea"
        finally:
            await asyncio.to_thread(store.backend.drop)
            await store.aclose()


async def test_a_closed_store_stays_closed(pg_url, emb):
    """A call after ``close()`` opened new pools, whose connections stayed open until the
    store was garbage-collected (and a sweeper task kept sweeping on them)."""
    table = f"t_{uuid.uuid4().hex[:12]}"
    store = LongTermMemoryStore.from_postgres(pg_url, emb, table=table)
    store.put(("docs",), "k", {"text": "green tea"})
    task = await store.astart_ttl_sweeper(sweep_interval_minutes=0.0005)
    store.close()
    await asyncio.wait_for(task, timeout=10)
    with pytest.raises(BackendError, match="was closed"):
        store.get(("docs",), "k")
    with pytest.raises(BackendError, match="was closed"):
        await store.aget(("docs",), "k")
    with pytest.raises(BackendError, match="was closed"):  # it logged an error every tick
        store.start_ttl_sweeper(sweep_interval_minutes=0.0005)
    with pytest.raises(BackendError, match="was closed"):
        await store.astart_ttl_sweeper(sweep_interval_minutes=0.0005)
    again = LongTermMemoryStore.from_postgres(pg_url, emb, table=table)
    assert again.get(("docs",), "k").value == {"text": "green tea"}  # nothing lost
    again.backend.drop()
    again.close()


async def test_search_requests_with_several_queries(make_backend):
    backend = make_backend(dims=4)
    now = datetime.now(timezone.utc)
    eye = np.eye(4, dtype=np.float32)
    backend.write(
        [record(f"k{i}", {"i": i}, eye[i : i + 1], now) for i in range(4)]
        + [record("plain", {"i": 9}, None, now)],
        [],
    )
    hits = await backend.asearch(SearchRequest(NS, eye[[2, 0]], (), 2, 0))
    assert [[h.item.key for h in column] for column in hits] == [["k2", "k0"], ["k0", "k1"]]
    tail = backend.search(SearchRequest(NS, eye[[3]], (), 10, 3))
    assert [(h.item.key, h.score) for h in tail[0]] == [("k2", 0.0), ("plain", None)]


def test_a_table_dropped_behind_the_stores_back_is_named_at_setup(make_backend, pg_conn, emb):
    backend = make_backend(dims=64)
    LongTermMemoryStore(backend, embeddings=emb).remember("u1", "Lives in Paris")
    t = backend.tables
    pg_conn.execute(f"DROP TABLE {t.items} CASCADE")  # an operator's mistake
    with pytest.raises(BackendError, match=r"is missing, though .* records schema version 5"):
        make_backend(table=t.table)
    backend.drop()  # what the message says to do to start afresh
    again = LongTermMemoryStore(make_backend(table=t.table, dims=64), embeddings=emb)
    assert again.remember("u1", "Lives in Paris").action == "created"


@pytest.mark.parametrize(
    ("first", "second", "found"),
    [
        ("{x}_vectors", "{x}", "the items table of the store with table='{x}_vectors'"),
        ("{x}", "{x}_vectors", "the vectors table of the store with table='{x}'"),
        ("{x}", "{x}_schema", "the schema versions table of the store with table='{x}'"),
        ("{x}_schema", "{x}", "the items table of the store with table='{x}_schema'"),
        # index names share the namespace: "x" skipped its index, or failed on "x_pkey"
        ("{x}_pkey", "{x}", "the items table of the store with table='{x}_pkey'"),
        ("{x}_fact_hash", "{x}", "the items table of the store with table='{x}_fact_hash'"),
        ("{x}_expires_at", "{x}", "the items table of the store with table='{x}_expires_at'"),
        (
            "{x}_vectors_scope",
            "{x}",
            "the items table of the store with table='{x}_vectors_scope'",
        ),
        ("{x}_vectors_hnsw", "{x}", "the items table of the store with table='{x}_vectors_hnsw'"),
        ("{x}", "{x}_vectors_scope", "an index on {x}_vectors"),
    ],
)
def test_a_table_name_clashing_with_another_stores_tables_is_refused(
    make_backend, pg_conn, emb, first, second, found
):
    """Store "x" keeps its vectors in "x_vectors", the items table of store "x_vectors":
    setup reused it and failed with an IndexError, or with Postgres errors about foreign
    keys, depending on which store was opened first."""
    x = f"t_{uuid.uuid4().hex[:12]}"
    first, second, found = (s.format(x=x) for s in (first, second, found))
    store = LongTermMemoryStore(make_backend(table=first, dims=64), embeddings=emb)
    store.remember("u1", "Lives in Paris")

    def relations() -> list[tuple[str, str]]:
        rows = pg_conn.execute(
            "SELECT relname::text, relkind::text FROM pg_class WHERE relname LIKE %s ORDER BY 1",
            (f"{x}%",),
        )
        return rows.fetchall()

    before = relations()
    with pytest.raises(ValueError, match=rf"Cannot use table='{second}'") as raised:
        make_backend(table=second, dims=64)
    assert found in str(raised.value)
    assert "another table name" in str(raised.value)
    assert relations() == before  # nothing created or changed
    assert [f.content for f in store.list_all("u1")] == ["Lives in Paris"]
    assert store.remember("u1", "Works in Lyon").action == "created"  # the first one works


def test_a_store_set_up_beside_a_colliding_one_before_the_check_still_opens(
    make_backend, pg_conn, emb, caplog
):
    """A store an earlier release set up after store "x_vectors_scope" has no scope index
    (the name is the other store's table): refusing to open it locked its data away."""
    x = f"t_{uuid.uuid4().hex[:12]}"
    old = LongTermMemoryStore(make_backend(table=x, dims=64), embeddings=emb)
    old.remember("u1", "Lives in Paris")
    t = old.backend.tables
    pg_conn.execute(f'DROP INDEX "{t.schema}".{t.index("vectors_scope")}')  # as it was left
    other = LongTermMemoryStore(make_backend(table=f"{x}_vectors_scope", dims=64), embeddings=emb)
    other.remember("u1", "Works in Lyon")
    with caplog.at_level(logging.WARNING):
        again = LongTermMemoryStore(make_backend(table=x, dims=64), embeddings=emb)
    assert f"table='{x}' has no index" in caplog.text
    assert [f.content for f in again.list_all("u1")] == ["Lives in Paris"]
    assert [f.content for f in other.list_all("u1")] == ["Works in Lyon"]


def test_create_hnsw_index_refuses_a_name_taken_by_another_relation(make_backend, pg_conn, emb):
    """Store "x"'s HNSW index is "x_vectors_hnsw": when another relation had that name
    (another store's table, an index of something else), ``CREATE INDEX IF NOT EXISTS``
    did nothing and create_hnsw_index() returned as if it had built the index."""
    backend = make_backend(dims=64)
    LongTermMemoryStore(backend, embeddings=emb).remember("u1", "Lives in Paris")
    t = backend.tables
    name = f"{t.table}_vectors_hnsw"
    pg_conn.execute(f'CREATE INDEX "{name}" ON {t.vectors} (key)')  # someone else's index
    with pytest.raises(ValueError, match=rf"its HNSW index would be .*{name}.* another index"):
        backend.create_hnsw_index()
    pg_conn.execute(f'DROP INDEX "{t.schema}"."{name}"')
    backend.create_hnsw_index()  # the name is free: built, and building it again is a no-op
    backend.create_hnsw_index()
    method = pg_conn.execute(
        "SELECT am.amname FROM pg_class c JOIN pg_am am ON am.oid = c.relam "
        "WHERE c.oid = to_regclass(%s)",
        (f'"{t.schema}"."{name}"',),
    ).fetchone()
    assert method == ("hnsw",)


def test_from_postgres_passes_the_pool_options_on_and_names_unknown_ones(pg_url, emb):
    """from_postgres(..., max_size=...) went to LongTermMemoryStore.__init__ and failed
    with its TypeError; postgres_backend(timeout=0) was taken, and every call then said
    the pool's connections were all busy."""
    table = f"t_{uuid.uuid4().hex[:12]}"
    store = LongTermMemoryStore.from_postgres(
        pg_url, emb, table=table, max_size=3, timeout=4, merge_threshold=0.9
    )
    try:
        pool = store.backend.connector.sync_pool()
        assert (pool.max_size, pool.timeout) == (3, 4)
        assert store.remember("u1", "Lives in Paris").action == "created"
        with pytest.raises(TypeError, match=r"from_postgres\(\) got unexpected option\(s\) 'lock"):
            LongTermMemoryStore.from_postgres(pg_url, emb, table=table, lock_timeout=1)
    finally:
        store.backend.drop()
        store.close()
    for timeout in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="timeout must be a positive number"):
            postgres_backend(pg_url, table=table, timeout=timeout, setup=False)
