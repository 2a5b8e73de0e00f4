"""The per-user fact API on the SQLite engine: test_facts.py's and test_versions.py's cases.

The imported tests take the ``store`` fixture, which this module overrides with a store on
a fresh SQLite file; each runs sync and async.
"""

from __future__ import annotations

import pytest

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.sqlite import sqlite_backend
from tests.unit_tests.test_facts import (  # noqa: F401  (re-collected on SQLite)
    emb,
    mem,
    test_bad_facts_raise_and_store_nothing,
    test_bad_user_id_raises_before_any_io,
    test_batch_is_one_embedding_call_and_decided_in_order,
    test_below_threshold_creates_a_new_fact,
    test_cancelled_recall_leaves_the_store_usable,
    test_cancelled_remember_leaves_the_store_usable,
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
    test_a_users_fact_never_merges_into_a_relatives,
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
def store(emb, tmp_path):
    backend = sqlite_backend(tmp_path / "facts.sqlite")
    yield LongTermMemoryStore(backend, embeddings=emb, upsert_threshold=0.8)
    backend.close()
