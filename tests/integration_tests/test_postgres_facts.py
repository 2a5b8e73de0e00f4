"""The per-user fact API on the Postgres engine: test_facts.py's cases, re-collected here.

The imported tests take the ``store`` fixture, which this module overrides with a store on
a fresh Postgres table (sync and async). The tests below add what only a shared database
can show: several stores (as several processes would) writing one user's facts at once.
"""

from __future__ import annotations

import threading

import pytest

from langchain_ltm import BackendError, LongTermMemoryStore
from tests.engine_facts import *  # noqa: F403  (every engine runs these)


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
    strict = LongTermMemoryStore(  # "lives in" is an attribute: strict on both thresholds
        backend, embeddings=emb, upsert_threshold=0.99, review_threshold=0.99
    )
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
            review_threshold=0.99,  # "lives in" is an attribute: no value change either
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


def test_a_copy_outside_the_users_racing_another_copy_is_stored(store, monkeypatch):
    """Two copies of one fact's value put at once under two keys of a namespace outside the
    users' (a backup): each read no other holder of its hash, and the later write broke the
    one-fact-per-text constraint, so its put raised ``DuplicateFactError`` (30 of 60 puts
    in a threaded run). Put in order, the second copy is stored without the hash; so it is
    now, as a ``BaseStore.put`` (LangGraph's ``PostgresStore``) never fails there."""
    made = store.remember("u1", "Drives a red bicycle").fact
    assert made is not None
    value = dict(store.get(store.user_namespace("u1"), made.id).value)
    backup = ("backup", "b1")
    search = store.backend.search
    landed: list[bool] = []

    def search_then_another_copy(request):
        found = search(request)
        if request.prefix == backup and not landed:  # the put's look for a holder
            landed.append(True)
            store.put(backup, "copy1", dict(value))
        return found

    monkeypatch.setattr(store.backend, "search", search_then_another_copy)
    store.put(backup, "copy2", dict(value))
    assert landed
    copies = {key: store.get(backup, key).value for key in ("copy1", "copy2")}
    assert copies["copy1"] == value
    assert copies["copy2"] == {k: v for k, v in value.items() if k != "content_hash"}
