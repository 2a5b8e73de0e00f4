"""The randomized no-loss check of tests/unit_tests/test_nothing_is_lost.py on real engines.

The unit test runs it in memory; here the same writes go through the Postgres engine (its
pipelined, whole-array write) and through the generic engine over a live vectorstore
(journal, add, catalog commit, collect), so a write path that drops or hides a text fails it.
"""

from __future__ import annotations

import uuid

import pytest

from langchain_ltm import LongTermMemoryStore
from tests.fakes import KeywordEmbeddings
from tests.unit_tests.test_nothing_is_lost import check_nothing_is_lost
from tests.vectorstores import (  # noqa: F401  (pg_services, redis_services: fixtures)
    open_store,
    pg_services,
    redis_services,
)

THRESHOLDS = {"merge_threshold": 0.5, "review_threshold": 0.2}


@pytest.mark.parametrize("seed", [1, 2])
def test_nothing_is_lost_on_postgres(pg_url, seed):
    table = f"lost_{uuid.uuid4().hex[:8]}"
    store = LongTermMemoryStore.from_postgres(
        pg_url, KeywordEmbeddings(dims=64), dims=64, table=table, **THRESHOLDS
    )
    try:
        check_nothing_is_lost(store, seed)
    finally:
        store.backend.drop()
        store.close()


@pytest.mark.parametrize("kind", ["chroma", "faiss", "pgvector", "redis"])
def test_nothing_is_lost_on_a_vectorstore(kind, tmp_path, request):
    if kind in ("pgvector", "redis"):
        request.getfixturevalue("pg_services" if kind == "pgvector" else "redis_services")
    store = open_store(kind, KeywordEmbeddings(dims=64), tmp_path, **THRESHOLDS)
    try:
        check_nothing_is_lost(store, seed=1)
    finally:
        store.close()
