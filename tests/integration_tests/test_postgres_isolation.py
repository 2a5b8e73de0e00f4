"""Isolation under concurrency and bad input on the Postgres engine (the unit suites' cases)."""

from __future__ import annotations

import pytest

from langchain_ltm import LongTermMemoryStore
from tests.fakes import KeywordEmbeddings
from tests.isolation import run_isolation, summary
from tests.unit_tests.test_bad_input import (  # noqa: F401  (re-collected on Postgres)
    test_bad_fact,
    test_bad_namespace,
    test_bad_user_id,
    test_changed_embedding_model,
    test_filters_limits_and_offsets,
    test_raw_batch_ops_are_validated,
    test_sql_looking_strings_are_just_text,
    test_ten_thousand_phrasings,
)


@pytest.fixture
def store(make_backend):
    s = LongTermMemoryStore(make_backend(dims=64), embeddings=KeywordEmbeddings(64))
    s.remember("keeper", "a fact that must survive")
    yield s
    assert [f.content for f in s.list_all("keeper")] == ["a fact that must survive"]
    assert s.remember("keeper", "still writable afterwards").action == "created"


def test_no_leaks_and_nothing_lost_on_postgres(make_backend, capsys):
    store = LongTermMemoryStore(
        make_backend(dims=64, max_size=20), embeddings=KeywordEmbeddings(64), upsert_threshold=0.999
    )
    report = run_isolation(store, n_users=50, steps=200, seed=23)
    with capsys.disabled():
        print("\nisolation", summary(report, "postgres", 50))
    assert report.operations >= 50 * 200 * 0.9
    assert report.leaks == []
    assert report.missing == []
