"""Isolation under concurrency on the embedded engines (Postgres: integration tests)."""

import pytest
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_ltm import LongTermMemoryStore
from tests.fakes import KeywordEmbeddings
from tests.isolation import run_isolation, summary

N_USERS, STEPS = 50, 200  # 10,000 operations


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


@pytest.mark.parametrize(
    "make",
    [memory_store, qdrant_store, sqlite_store],
    ids=["memory", "qdrant-embedded", "sqlite"],
)
def test_no_leaks_and_nothing_lost(make, capsys, tmp_path):
    store = make(tmp_path) if make is sqlite_store else make()
    report = run_isolation(store, n_users=N_USERS, steps=STEPS, seed=11)
    with capsys.disabled():
        print("\nisolation", summary(report, make.__name__, N_USERS))
    assert report.operations >= N_USERS * STEPS * 0.9
    assert report.leaks == []
    assert report.missing == []
