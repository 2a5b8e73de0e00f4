"""FactStore: the fact API without LangGraph's BaseStore, on the SQLite engine.

The engine suite (``tests/engine_facts.py``: every fact case, sync and async) runs on it as
it runs on ``LongTermMemoryStore``; then what is its own: the same file shared with a
``LongTermMemoryStore``, the same checks of bad options, and what it does not import.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.base import InvalidNamespaceError

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.defaults import open_facts
from langchain_ltm.facts import FactStore
from tests.engine_facts import *  # noqa: F403  (every engine runs these)


@pytest.fixture
def store(emb, tmp_path, request):
    if request.node.originalname in _NEEDS_BASE_STORE:  # (a mark would reach every importer)
        pytest.skip("reads through BaseStore methods")
    with FactStore.from_sqlite(tmp_path / "facts.sqlite", emb, merge_threshold=0.8) as facts:
        yield facts


# These check what they check through get/put/search or the TTL sweeper (LangGraph's
# BaseStore), which FactStore has not got; they pass on LongTermMemoryStore over the same
# engine (test_sqlite_facts.py), and the fact logic they check is the one both classes run.
_NEEDS_BASE_STORE = (
    "test_a_fact_from_version_0_1_keeps_its_inline_history",
    "test_a_new_facts_valid_from_out_of_bounds_holds_from_the_put",
    "test_a_fact_with_a_ttl_expires_with_its_versions",
    "test_a_new_version_keeps_the_ttl_or_takes_the_one_given",
    "test_cancelled_remember_leaves_the_store_usable",
    "test_export_then_restore_is_exact_and_idempotent",
    "test_facts_are_base_store_items",
    "test_forget_removes_the_fact_and_its_versions",
    "test_items_of_a_child_namespace_are_not_versions",
    "test_metadata_is_a_field_of_the_item",
    "test_reading_a_fact_through_the_base_store_refreshes_its_versions",
    "test_similar_fact_updates_in_place",
    "test_a_lasting_text_and_an_expiring_one_are_never_merged",
    "test_forget_never_loses_to_an_update_running_at_once",
    "test_deleting_a_fact_through_the_base_store_deletes_its_versions",
    "test_a_text_another_client_stored_is_a_duplicate_not_a_new_version",
    "test_a_client_put_over_a_fact_loses_none_of_its_versions",
    "test_a_client_put_over_a_fact_from_a_clock_ahead_keeps_versions_in_order",
    "test_base_store_search_of_a_user_shows_current_texts_only",
    "test_facts_of_another_configurations_users_below_this_user_are_not_this_users",
    "test_reading_a_version_through_the_base_store_refreshes_its_fact",
    "test_versions_expire_with_their_fact_after_a_restore",
    "test_a_restored_fact_keeps_its_ttl_when_reads_have_moved_its_expiry",
    "test_the_backend_tells_which_paths_each_item_embedded",
    "test_a_clients_item_with_a_version_of_field_is_not_a_version",
    "test_a_clients_item_with_a_version_of_field_never_blocks_its_text",
    "test_a_clients_own_valid_from_over_a_text_is_kept",
    "test_a_clients_valid_from_is_kept_only_within_the_facts_timeline",
    "test_a_views_async_calls_run_with_the_views_options",
    "test_a_client_put_read_changed_and_put_back_keeps_every_text",
    "test_as_of_finds_the_facts_a_client_put_without_valid_from",
    "test_as_of_reads_a_clients_own_valid_from_as_every_read_does",
    "test_a_rewrite_keeps_when_a_client_put_fact_began",
    "test_a_client_put_without_a_text_over_a_fact_is_refused",
    "test_a_client_put_keeps_expiries_and_the_history_limit",
    "test_concurrent_client_puts_over_a_fact_keep_every_text",
    "test_reads_of_a_fact_a_client_put_over_refresh_its_versions",
    "test_a_client_put_of_the_same_text_keeps_when_the_text_began",
    "test_an_item_whose_content_is_not_a_text_is_no_fact",
    "test_a_clients_unreadable_valid_from_reads_as_the_items_own_time",
    "test_a_restore_of_a_text_another_client_stored_is_a_conflict",
    "test_a_restore_of_an_export_holding_one_text_twice_restores_the_first",
    "test_a_fact_value_copied_under_another_key_carries_the_hash_of_its_own_text",
    "test_a_client_put_of_a_text_another_fact_holds_is_stored_on_every_engine",
    "test_a_clients_document_with_a_hash_field_of_its_own_is_stored_as_given",
    "test_update_to_the_text_of_a_clients_fact_merges_that_fact_in",
    "test_two_clients_putting_at_one_new_key_at_once_keep_both_texts",
    "test_a_put_without_a_text_racing_a_new_fact_at_its_key_is_refused",
    "test_a_fact_layout_put_at_a_new_key_keeps_a_text_put_there_under_its_lock",
    "test_a_batch_with_a_key_taken_meanwhile_writes_the_other_puts_as_put",
    "test_a_create_only_write_over_a_live_item_writes_nothing_of_the_batch",
    "test_a_search_above_the_users_shows_versions_unless_filtered_out",
    # a 0.1 fact is written as 0.1 wrote it, through put
    "test_a_client_put_over_a_0_1_fact_keeps_its_inline_texts",
    "test_a_rewrite_of_a_0_1_fact_leaves_its_inline_texts_dated_as_they_were",
    "test_inline_texts_written_out_never_overwrite_a_stored_version",
    "test_prune_history_counts_a_0_1_facts_inline_texts",
    "test_upgrading_0_1_facts_lets_recall_find_their_earlier_texts",
    "test_upgrading_a_0_1_fact_keeps_its_stored_versions_as_long_as_the_fact",
)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_one_file_two_classes_same_facts(tmp_path, emb, mode):
    """A fact remembered through either class is found, updated and forgotten by the other."""
    path = tmp_path / "shared.db"
    with (
        FactStore.from_sqlite(path, emb) as light,
        LongTermMemoryStore.from_sqlite(path, emb) as full,
    ):
        if mode == "sync":
            first = light.remember("alice", "My daughter is 7 years old")
            second = full.remember("alice", "My daughter is 8 years old")
            recalled = light.recall("alice", "how old is her daughter?")
            history = light.history("alice", first.fact.id)
        else:

            async def run():
                first = await light.aremember("alice", "My daughter is 7 years old")
                second = await full.aremember("alice", "My daughter is 8 years old")
                recalled = await light.arecall("alice", "how old is her daughter?")
                return first, second, recalled, await light.ahistory("alice", first.fact.id)

            first, second, recalled, history = asyncio.run(run())
        assert (first.action, second.action) == ("created", "updated")
        assert first.fact and second.fact and second.fact.id == first.fact.id
        assert [f.content for f in recalled][:1] == ["My daughter is 8 years old"]
        assert [v.content for v in history] == [
            "My daughter is 7 years old",
            "My daughter is 8 years old",
        ]
        assert full.list_all("alice") == light.list_all("alice")
        assert light.forget("alice", first.fact.id) is True
        assert full.list_all("alice") == []


def test_bad_options_are_refused_as_the_store_refuses_them(tmp_path):
    emb = DeterministicFakeEmbedding(size=8)
    path = tmp_path / "bad.db"
    cases = [
        ({"history_limit": -1}, ValueError),
        ({"merge_threshold": 1.5}, ValueError),
        ({"review_threshold": 0.9, "merge_threshold": 0.8}, ValueError),
        ({"resolver": object()}, TypeError),
        # refused when built, not at every remember (0 blamed each fact's length, "2000"
        # and "on" were TypeErrors from inside the call)
        ({"max_fact_chars": 0}, ValueError),
        ({"max_fact_chars": "2000"}, ValueError),
        ({"max_fact_chars": True}, ValueError),
        ({"max_queries": 0}, ValueError),
        ({"max_queries": 2.5}, ValueError),
        ({"secret_guard": "on"}, TypeError),
        ({"secret_guard": 1}, TypeError),
        ({"namespace": ("langgraph",)}, InvalidNamespaceError),
        ({"namespace": ("a.b",)}, InvalidNamespaceError),
        ({"namespace": ()}, InvalidNamespaceError),
        ({"namespace": "team"}, InvalidNamespaceError),  # not the labels t, e, a, m
    ]
    for options, error in cases:
        with pytest.raises(error) as from_store:
            LongTermMemoryStore.from_sqlite(path, emb, **options)
        with pytest.raises(error) as from_facts:
            FactStore.from_sqlite(path, emb, **options)
        assert str(from_facts.value) == str(from_store.value), options
    with pytest.raises(ValueError, match=r"max_fact_chars must be an int >= 1 \(the most chara"):
        FactStore.from_sqlite(path, emb, max_fact_chars=0)
    with pytest.raises(
        TypeError, match=r"secret_guard must be True or None \(the built-in check\)"
    ):
        FactStore.from_sqlite(path, emb, secret_guard="on")  # type: ignore[arg-type]
    with (
        LongTermMemoryStore.from_sqlite(path, emb) as store,
        pytest.raises(TypeError, match="secret_guard must be"),
    ):
        store.with_options(secret_guard="on")  # type: ignore[arg-type]
    # None is the built-in guard (it turned the guard off silently), as True
    with FactStore.from_sqlite(path, emb, secret_guard=None) as facts:
        assert facts.remember("u1", "likes tea").action == "created"
        assert facts.remember("u1", "my password is hunter22").action == "rejected"
    with LongTermMemoryStore.from_sqlite(path, emb, secret_guard=None) as store:
        assert store.remember("u1", "my password is hunter22").action == "rejected"
    with pytest.raises(TypeError, match="for a LangChain vectorstore use LongTermMemoryStore"):
        FactStore(object(), emb)  # type: ignore[arg-type]


def test_a_mistyped_option_names_the_factory_and_what_it_takes(tmp_path):
    emb = DeterministicFakeEmbedding(size=8)
    path = tmp_path / "typo.db"
    for factory in (FactStore.from_sqlite, LongTermMemoryStore.from_sqlite):
        with pytest.raises(TypeError) as refused:
            factory(path, emb, busy_timeot=5)
        message = str(refused.value)
        assert "from_sqlite() got unexpected option(s) 'busy_timeot'" in message
        assert "merge_threshold" in message and "busy_timeout" in message
    assert not path.exists()  # refused before the file was made


@pytest.mark.parametrize("bad", ["class", "name", "object"])
def test_embeddings_that_cannot_embed_are_refused_before_anything_opens(bad, tmp_path):
    """``from_sqlite(path, LocalMiniLMEmbeddings)`` (the class) or a model's name opened the
    store and made its file; the first ``remember`` then failed with "embed_documents()
    missing 1 required positional argument" or "'str' object has no attribute
    'embed_documents'". Every factory and both constructors refuse it at once."""
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_ltm.backends.sqlite import sqlite_backend
    from langchain_ltm.embeddings import LocalMiniLMEmbeddings

    embeddings = {"class": LocalMiniLMEmbeddings, "name": "all-MiniLM-L6-v2", "object": object()}
    given = embeddings[bad]
    path, folder = tmp_path / "m.db", tmp_path / "q"
    builds = [
        lambda: LongTermMemoryStore.from_sqlite(path, given),
        lambda: FactStore.from_sqlite(path, given),
        lambda: LongTermMemoryStore.from_qdrant(folder, given),
        lambda: LongTermMemoryStore.from_postgres("postgresql://u@127.0.0.1:1/db", given),
        lambda: FactStore.from_postgres("postgresql://u@127.0.0.1:1/db", given),
        lambda: LongTermMemoryStore(
            InMemoryVectorStore(DeterministicFakeEmbedding(size=8)), embeddings=given
        ),
    ]
    for build in builds:
        with pytest.raises(TypeError, match=r"embeddings must be an .*pass an instance, e\.g\. "):
            build()
    assert list(tmp_path.iterdir()) == []
    backend = sqlite_backend(path)
    with pytest.raises(TypeError, match="pass an instance"):
        FactStore(backend, given)
    backend.close()


def test_the_unknown_option_message_lists_every_keyword_of_the_factory(tmp_path):
    """``from_postgres(..., shema=...)`` listed the pool's options but not the method's own
    (``table``, ``schema``, ``dims``, ``vector_type``), and every ``LongTermMemoryStore``
    factory left ``namespace`` out: a user looking for the right spelling did not find it."""
    emb = DeterministicFakeEmbedding(size=8)
    url = "postgresql://u@127.0.0.1:1/db"  # refused before any connection
    path = tmp_path / "typo.db"
    calls = {
        "from_postgres": [
            (cls.from_postgres, url, ("table", "schema", "dims", "vector_type", "max_size"))
            for cls in (FactStore, LongTermMemoryStore)
        ],
        "from_sqlite": [
            (cls.from_sqlite, path, ("table", "dims", "busy_timeout"))
            for cls in (FactStore, LongTermMemoryStore)
        ],
        "from_qdrant": [(LongTermMemoryStore.from_qdrant, ":memory:", ("collection", "dims"))],
    }
    for name, factories in calls.items():
        for factory, where, engine in factories:
            with pytest.raises(TypeError, match=rf"{name}\(\) got unexpected option") as refused:
                factory(where, emb, namespce=("m",))
            listed = re.findall(r"\w+", str(refused.value).split(": it takes", 1)[1])
            for option in ("namespace", "merge_threshold", *engine):
                assert option in listed, (factory, option)
    assert not path.exists()


def test_a_list_namespace_is_the_same_prefix_in_both_classes(tmp_path):
    emb = DeterministicFakeEmbedding(size=8)
    path = tmp_path / "list.db"
    with (
        FactStore.from_sqlite(path, emb, namespace=["team", "a"]) as light,
        LongTermMemoryStore.from_sqlite(path, emb, namespace=["team", "a"]) as full,
    ):
        assert light.namespace == full.namespace == ("team", "a")
        light.remember("u1", "likes tea")
        assert [f.content for f in full.list_all("u1")] == ["likes tea"]


def test_with_options_is_a_view_on_the_same_engine(tmp_path):
    emb = DeterministicFakeEmbedding(size=8)
    with FactStore.from_sqlite(tmp_path / "v.db", emb) as facts:
        team = facts.with_options(namespace=("team",), merge_threshold=0.95)
        team.remember("u1", "likes tea")
        assert [f.content for f in team.list_all("u1")] == ["likes tea"]
        assert facts.list_all("u1") == []  # another namespace, the same file
        assert team.user_id_of(team.user_namespace("u1")) == "u1"
        assert facts.user_id_of(team.user_namespace("u1")) is None
        thresholds = (team._facts.policy.merge_threshold, facts._facts.policy.merge_threshold)
        assert thresholds == (0.95, 0.80)


def test_open_facts_is_light_on_sqlite_only(tmp_path, monkeypatch):
    emb = DeterministicFakeEmbedding(size=8)
    monkeypatch.setenv("LTM_HOME", str(tmp_path / "home"))
    facts, where = open_facts(None, embeddings=emb)  # the default store is SQLite
    assert isinstance(facts, FactStore) and where == f"SQLite at {tmp_path}/home/memories.db"
    facts.close()
    facts, _ = open_facts(f"sqlite:///{tmp_path}/other.db", embeddings=emb)
    assert isinstance(facts, FactStore)
    facts.close()
    full, _ = open_facts("memory://", embeddings=emb)
    assert isinstance(full, LongTermMemoryStore)
    with pytest.raises(ValueError, match=r"is not a SQLite URL: use sqlite:///memory\.db"):
        open_facts("sqlite://relative.db", embeddings=emb)


_IMPORTS = (
    "import sys\n"
    "from langchain_ltm.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "heavy = sorted({m.split('.')[0] for m in sys.modules} & "
    "{'langgraph', 'langchain_core', 'langchain', 'pydantic', 'requests'})\n"
    "print('HEAVY', heavy, code)\n"
)


def commands_stay_light(url: str) -> None:
    """``ltm remember``, ``recall``, ``list`` on ``url`` in fresh interpreters, real MiniLM:
    each finds the fact and imports no LangGraph, LangChain or pydantic."""
    for args in (["remember", "Prefers answers in Spanish"], ["recall", "language?"], ["list"]):
        out = subprocess.run(
            [sys.executable, "-c", _IMPORTS, *args, "--user", "alice", "--store", url],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert out.splitlines()[-1] == "HEAVY [] 0", (args, out)
        assert "Prefers answers in Spanish" in out


def test_a_fact_command_imports_neither_langgraph_nor_langchain(tmp_path):
    commands_stay_light(f"sqlite:///{tmp_path}/m.db")


def test_a_missing_engine_extra_says_what_to_install(monkeypatch):
    """Both classes' Postgres factory, without psycopg: the same MissingDependencyError."""
    from langchain_ltm.errors import MissingDependencyError

    monkeypatch.setitem(sys.modules, "psycopg", None)  # as without the [postgres] extra
    for name in [m for m in sys.modules if m.startswith("langchain_ltm.backends.postgres")]:
        monkeypatch.delitem(sys.modules, name)
    emb = DeterministicFakeEmbedding(size=8)
    hint = r'pip install "langchain-ltm\[postgres\]"'
    for factory in (FactStore.from_postgres, LongTermMemoryStore.from_postgres):
        with pytest.raises(MissingDependencyError, match=hint):
            factory("postgresql://nobody@localhost/none", emb)


def test_a_module_of_ours_failing_to_import_is_not_a_missing_extra(monkeypatch):
    """Every ImportError around the Postgres engine's imports said "pip install
    langchain-ltm[postgres]", its own modules' too, so a broken install or a bug there
    sent the reader to install what they had.
    """
    from langchain_ltm.errors import MissingDependencyError

    for name in [m for m in sys.modules if m.startswith("langchain_ltm.backends.postgres")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "langchain_ltm.backends.postgres._broad", None)
    emb = DeterministicFakeEmbedding(size=8)
    for factory in (FactStore.from_postgres, LongTermMemoryStore.from_postgres):
        with pytest.raises(ImportError, match="_broad") as raised:
            factory("postgresql://nobody@localhost/none", emb)
        assert not isinstance(raised.value, MissingDependencyError)
        assert "pip install" not in str(raised.value)


def test_an_import_error_is_blamed_on_the_package_that_raised_it():
    from langchain_ltm.backends import blamed_package

    scope = {"__name__": "psycopg.pq"}  # psycopg raises this one by hand, without a name
    exec("def load():\n    raise ImportError('no pq wrapper available')", scope)
    with pytest.raises(ImportError) as raised:
        scope["load"]()
    assert blamed_package(raised.value) == "psycopg"
    assert blamed_package(ImportError("x", name="langchain_ltm.backends.x")) == "langchain_ltm"
