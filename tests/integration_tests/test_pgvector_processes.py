"""Two OS processes writing one PGVectorStore table at once, through one catalog file.

langchain-postgres' ``PGVectorStore`` on the pgserver Postgres, its own table layout
(``init_vectorstore_table``). Both processes remember paraphrases of one fact for the same
user and notes for their own users, put documents in one shared namespace and keep
replacing one item there, released
at the same moment; one of them writes through the sync calls, the other through the sync
calls too or through the async ones (PGVectorStore's own coroutines). Afterwards: one fact
holding every paraphrase as a version, every note and document there once, users apart,
no error, and the table holding exactly the current documents (no orphan, no duplicate).

What this proves is the guarantee the README states for PGVectorStore: any number of
writer processes on the machine that holds the catalog file (its SQLite transactions and
per-user ``flock`` serialise item writes and each user's decide-and-write; Postgres takes
the documents). Two machines cannot share one catalog file.
"""

from __future__ import annotations

import uuid

import pytest

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.sqlite import _sql as sql
from langchain_ltm.backends.vectorstore import vectorstore_backend
from tests.fakes import KeywordEmbeddings
from tests.processes import (
    WORKER_WRITES,
    WRITERS,
    check_shared_documents,
    check_two_writers,
    run_two_writers,
)
from tests.vectorstores import pg_engine

WORKER = (
    """
import asyncio, json, sys, time
from langchain_postgres import PGEngine, PGVectorStore
from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.sqlite import _sql as sql
from langchain_ltm.backends.vectorstore import vectorstore_backend
from tests.fakes import KeywordEmbeddings

url, table, catalog, me, mode, texts, notes = sys.argv[1:8]
emb = KeywordEmbeddings(dims=64)
engine = PGEngine.from_connection_string(url.replace("postgresql://", "postgresql+psycopg://", 1))
vs = PGVectorStore.create_sync(engine, emb, table)
backend = vectorstore_backend(vs, catalog=catalog)
assert backend.capabilities.extra["native_async"] == {"add": True, "search": True}
store = LongTermMemoryStore(backend, embeddings=emb, merge_threshold=0.6)
"""
    + WORKER_WRITES
)


@pytest.mark.parametrize("modes", [("sync", "sync"), ("sync", "async")], ids="-".join)
def test_two_processes_writing_one_pgvectorstore_lose_and_duplicate_nothing(
    modes, pg_url, tmp_path
):
    emb = KeywordEmbeddings(dims=64)
    table = f"vs_{uuid.uuid4().hex[:12]}"
    engine = pg_engine(pg_url)
    engine.init_vectorstore_table(table, emb.dims)  # PGVectorStore's own layout
    catalog = str(tmp_path / "catalog.sqlite")
    outputs = run_two_writers(WORKER, [pg_url, table, catalog], modes)

    from langchain_postgres import PGVectorStore

    vs = PGVectorStore.create_sync(engine, emb, table)
    backend = vectorstore_backend(vs, catalog=catalog)
    store = LongTermMemoryStore(backend, embeddings=emb)
    # the shared user's paraphrases are one fact, each process's notes there once
    check_two_writers(store, outputs, WRITERS)
    for me in WRITERS:
        # in the table itself: this user's rows are exactly this user's current documents
        rows = vs.get(where=backend.scope_filter(("memories", me)), include=["metadatas"])
        assert len(rows["ids"]) == backend.catalog.vector_count(("memories", me)) > 0
        assert {m["ltm_n1"] for m in rows["metadatas"]} == {me}
    # the shared namespace holds both processes' documents, once each
    expected = check_shared_documents(store)
    both = store.get(("docs", "shared"), "both")
    rows = vs.get(where=backend.scope_filter(("docs", "shared")), include=["metadatas"])
    assert sorted(m["ltm_key"] for m in rows["metadatas"]) == sorted([*expected, "both"])
    (at,) = [m["ltm_at"] for m in rows["metadatas"] if m["ltm_key"] == "both"]
    assert at == sql.to_us(both.updated_at)
    # the table holds exactly the current documents: no orphan, no duplicate
    assert backend.repair(grace_seconds=0) == 0
    assert len(vs.get(include=[])["ids"]) == backend.catalog.vector_count(())
    store.close()
    engine.drop_table(table)
