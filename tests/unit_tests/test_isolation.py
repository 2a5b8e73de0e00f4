"""Isolation under concurrency on the embedded engines (Postgres: integration tests)."""

import pytest
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_ltm import LongTermMemoryStore
from tests.fakes import KeywordEmbeddings
from tests.isolation import run_isolation, summary
from tests.vectorstores import open_store

N_USERS, STEPS = 50, 200  # 10,000 operations
VECTORSTORE_STEPS = 40


def memory_store():
    return LongTermMemoryStore(InMemoryVectorStore(KeywordEmbeddings(64)), upsert_threshold=0.999)


def qdrant_store():
    return LongTermMemoryStore.from_qdrant(
        ":memory:", KeywordEmbeddings(64), upsert_threshold=0.999
    )


def sqlite_store(tmp_path):
    return LongTermMemoryStore.from_sqlite(
        tmp_path / "isolation.sqlite", KeywordEmbeddings(64), upsert_threshold=0.999
    )


def chroma_store(tmp_path):
    return open_store("chroma", KeywordEmbeddings(64), tmp_path, upsert_threshold=0.999)


def faiss_store(tmp_path):
    return open_store("faiss", KeywordEmbeddings(64), tmp_path, upsert_threshold=0.999)


def milvus_store(tmp_path):
    return open_store("milvus", KeywordEmbeddings(64), tmp_path, upsert_threshold=0.999)


_GENERIC = (chroma_store, faiss_store, milvus_store)
_ON_DISK = (sqlite_store, *_GENERIC)


@pytest.mark.parametrize(
    "make",
    [memory_store, qdrant_store, sqlite_store, chroma_store, faiss_store, milvus_store],
    ids=["memory", "qdrant-embedded", "sqlite", "chroma", "faiss", "milvus-lite"],
)
def test_no_leaks_and_nothing_lost(make, capsys, tmp_path):
    store = make(tmp_path) if make in _ON_DISK else make()
    # the generic engine pays the vectorstore's own cost per call (Chroma: ~8 ms an upsert,
    # ~4 ms a query in process): 2,000 operations over the same 50 users keep the suite fast
    steps = VECTORSTORE_STEPS if make in _GENERIC else STEPS
    report = run_isolation(store, n_users=N_USERS, steps=steps, seed=11)
    with capsys.disabled():
        print("\nisolation", summary(report, make.__name__, N_USERS))
    assert report.operations >= N_USERS * steps * 0.9
    assert report.leaks == []
    assert report.missing == []
