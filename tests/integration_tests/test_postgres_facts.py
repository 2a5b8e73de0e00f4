"""The per-user fact API on the Postgres engine: test_facts.py's cases, re-collected here.

The imported tests take the ``store`` fixture, which this module overrides with a store on
a fresh Postgres table (sync and async). The tests below add what only a shared database
can show: several stores (as several processes would) writing one user's facts at once.
"""

from __future__ import annotations

import threading

import pytest

from langchain_ltm import BackendError, LongTermMemoryStore
from tests.unit_tests.test_facts import (  # noqa: F401  (re-collected on Postgres)
    emb,
    mem,
    test_bad_facts_raise_and_store_nothing,
    test_bad_user_id_raises_before_any_io,
    test_batch_is_one_embedding_call_and_decided_in_order,
    test_below_threshold_creates_a_new_fact,
    test_changed_embedding_model_is_a_clear_error,
    test_concurrent_identical_remembers_leave_one_fact_asyncio,
    test_concurrent_identical_remembers_leave_one_fact_threads,
    test_exact_duplicate_is_recognised,
    test_facts_are_base_store_items,
    test_forget_list_clear_export,
    test_prefix_label_users_do_not_see_each_other,
    test_recall_input_limits,
    test_recall_merges_phrasings_without_duplicates,
    test_similar_fact_updates_in_place,
    test_users_are_isolated,
)
from tests.unit_tests.test_versions import (  # noqa: F401  (re-collected here)
    clock,
    test_a_bad_import_record_writes_nothing,
    test_a_changed_number_is_a_new_version,
    test_a_fact_from_version_0_1_keeps_its_inline_history,
    test_a_fact_with_a_ttl_expires_with_its_versions,
    test_a_failing_resolver_keeps_both_facts,
    test_a_new_version_keeps_the_ttl_or_takes_the_one_given,
    test_a_secret_in_a_merge_is_rejected_alone,
    test_a_version_0_1_export_restores,
    test_an_expired_fact_can_be_remembered_again,
    test_as_of_answers_with_what_was_true_then,
    test_chat_model_resolver_is_asked_once_per_batch,
    test_different_subject_is_kept_and_listed_as_similar,
    test_export_then_restore_is_exact_and_idempotent,
    test_forget_removes_the_fact_and_its_versions,
    test_items_of_a_child_namespace_are_not_versions,
    test_merge_import_redecides_and_dry_run_writes_nothing,
    test_merging_an_export_back_brings_no_replaced_text_back,
    test_min_score_keeps_weak_matches_out,
    test_pinned_facts_stay_pinned_across_versions,
    test_reading_a_fact_through_the_base_store_refreshes_its_versions,
    test_remember_ttl_is_checked,
    test_resolver_answer_decides_the_ambiguous_case,
    test_restore_into_another_user_and_conflicts,
    test_restoring_plain_texts_merges_them_and_overwrites_nothing,
    test_the_ambiguous_band_creates_with_similar_and_nothing_merges,
    test_two_records_with_one_text_are_refused,
    test_update_fact_of_someone_else_raises_and_changes_nothing,
    test_update_to_the_text_of_another_fact_is_a_duplicate,
    test_updates_keep_every_text_recoverable,
)


@pytest.fixture
def store(make_backend, emb):
    return LongTermMemoryStore(make_backend(dims=64), embeddings=emb, upsert_threshold=0.8)


def test_history_is_bounded(make_backend, emb):
    store = LongTermMemoryStore(
        make_backend(), embeddings=emb, upsert_threshold=0.5, history_limit=2
    )
    for n in range(5):
        result = store.remember("u1", f"I like green tea {'very ' * n}much")
    assert result.action == "updated"
    (fact,) = store.list_all("u1")
    assert [v.content for v in fact.history] == [
        "I like green tea very very much",
        "I like green tea very very very much",
    ]


def test_a_fact_updated_away_can_come_back_as_new(make_backend, emb):
    backend = make_backend()
    store = LongTermMemoryStore(backend, embeddings=emb, upsert_threshold=0.7)
    paris = store.remember("u1", "I live in Paris")
    moved = store.remember("u1", "I live in Berlin")
    assert moved.action == "updated" and moved.fact.id == paris.fact.id
    strict = LongTermMemoryStore(backend, embeddings=emb, upsert_threshold=0.99)
    back = strict.remember("u1", "I live in Paris")
    assert back.action == "created" and back.fact.id != paris.fact.id  # key was taken
    assert sorted(f.content for f in strict.list_all("u1")) == [
        "I live in Berlin",
        "I live in Paris",
    ]


def _race(stores: list[LongTermMemoryStore], fact: str) -> list[object]:
    """``remember(fact)`` on every store at once (each has its own pool and lock)."""
    barrier = threading.Barrier(len(stores))
    outcomes: list[object] = [None] * len(stores)

    def worker(i: int) -> None:
        barrier.wait()
        try:
            outcomes[i] = stores[i].remember("u1", fact).action
        except BackendError as exc:
            outcomes[i] = exc

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes


def test_processes_remembering_one_fact_leave_one_row(make_backend, emb, pg_url):
    first = make_backend()
    table = first.tables.table
    stores = [
        LongTermMemoryStore(first if i == 0 else make_backend(table=table), embeddings=emb)
        for i in range(10)
    ]
    outcomes = _race(stores, "I prefer answers in Spanish")
    # a writer that read after another's commit sees the fact: duplicate, or (its exact
    # lookup ran before that commit, its neighbour search after) an update to the same text
    assert all(o in ("created", "duplicate", "updated") for o in outcomes), outcomes
    assert [f.content for f in stores[0].list_all("u1")] == ["I prefer answers in Spanish"]
    assert first.count(stores[0].user_namespace("u1")) == 1


def test_unique_fact_hash_holds_across_processes(make_backend, emb):
    """New facts whose deterministic key is taken get random keys: only the database's
    unique (namespace, content hash) constraint keeps concurrent writers to one row."""
    first = make_backend()
    setup = LongTermMemoryStore(first, embeddings=emb, upsert_threshold=0.7)
    setup.remember("u1", "I live in Paris")
    assert setup.remember("u1", "I live in Berlin").action == "updated"  # Paris's key now Berlin
    stores = [
        LongTermMemoryStore(
            first if i == 0 else make_backend(table=first.tables.table),
            embeddings=emb,
            upsert_threshold=0.99,
        )
        for i in range(10)
    ]
    outcomes = _race(stores, "I live in Paris")
    # the constraint refuses the losers' batches (DuplicateFactError); remember() retries
    # once and finds the stored fact (a duplicate, or an update to the same text when its
    # neighbour search already saw the winner's row): nobody gets an error
    assert outcomes.count("created") == 1, outcomes
    assert all(o in ("created", "duplicate", "updated") for o in outcomes), outcomes
    contents = sorted(f.content for f in setup.list_all("u1"))
    assert contents == ["I live in Berlin", "I live in Paris"]
    assert setup.remember("u1", "i live in paris!").action == "duplicate"
