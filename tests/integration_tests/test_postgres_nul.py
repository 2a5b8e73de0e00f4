"""Reads naming a NUL on Postgres find what the other engines find (no stored text holds one).

The oracle is LangGraph's ``InMemoryStore``, and our memory engine where a filter compares
strings by order (``InMemoryStore`` compares ranges as floats and raises on strings).
"""

from __future__ import annotations

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.base import GetOp, PutOp
from langgraph.store.memory import InMemoryStore

from langchain_ltm import BackendError, LongTermMemoryStore

NS = ("memories", "u1")
ITEMS = {
    "k": {"text": "tea", "a": "b", "n": 3},
    "k2": {"text": "coffee", "a": "ba", "n": 5},
    "k3": {"text": "water", "a": "c"},
}
FILTERS = [
    {"a": "b\x00"},
    {"a": {"$ne": "b\x00"}},
    {"a": {"$lt": "b\x00x"}},
    {"a": {"$gte": "b\x00"}},
    {"a\x00": "b"},
    {"a\x00": {"$ne": "b"}},
    {"a\x00": None},
    {"n": {"$gt": 2}, "a": {"$lte": "ba\x00"}},
]


@pytest.fixture
def stores(make_backend):
    ours = LongTermMemoryStore(
        make_backend(dims=16), embeddings=DeterministicFakeEmbedding(size=16)
    )
    oracle = InMemoryStore()
    memory = LongTermMemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=16)))
    for store in (ours, oracle, memory):
        for key, value in ITEMS.items():
            store.put(NS, key, value)
    return ours, oracle, memory


@pytest.mark.parametrize("flt", FILTERS, ids=repr)
async def test_a_filter_naming_a_nul_finds_what_in_memory_store_finds(stores, flt):
    ours, oracle, memory = stores
    ranged = any(
        isinstance(v, dict) and {"$lt", "$lte", "$gt", "$gte"} & v.keys() for v in flt.values()
    )
    expected = sorted(item.key for item in (memory if ranged else oracle).search(NS, filter=flt))
    assert sorted(item.key for item in ours.search(NS, filter=flt)) == expected
    assert sorted(item.key for item in await ours.asearch(NS, filter=flt)) == expected
    ranked = ours.search(NS, query="tea", filter=flt)
    assert sorted(item.key for item in ranked) == expected


async def test_a_key_holding_a_nul_is_not_found_and_deleting_it_changes_nothing(stores):
    ours, oracle, _ = stores
    assert oracle.get(NS, "k\x00") is None
    assert ours.get(NS, "k\x00") is None
    assert await ours.aget(NS, "k\x00") is None
    ours.delete(NS, "k\x00")
    await ours.adelete(NS, "k\x00")
    assert sorted(item.key for item in ours.search(NS)) == sorted(ITEMS)
    # in a batch beside real keys: those are read, written and deleted as asked
    got = ours.batch(
        [
            GetOp(NS, "k"),
            GetOp(NS, "k\x00"),
            PutOp(NS, "k\x00", None),  # a delete of a key no item can have
            PutOp(NS, "k3", None),
            PutOp(NS, "k4", {"text": "juice"}),
        ]
    )
    assert ours.get(NS, "k3") is None and ours.get(NS, "k4").value == {"text": "juice"}
    assert got[0].value == ITEMS["k"] and got[1] is None


def test_a_put_holding_a_nul_is_still_refused(stores):
    ours, _, _ = stores
    with pytest.raises(BackendError, match="NUL"):
        ours.put(NS, "k\x00", {"text": "x"})
    assert ours.get(NS, "k").value == ITEMS["k"]


def test_the_fact_api_with_a_nul_in_a_recall_filter_or_a_fact_id(make_backend):
    store = LongTermMemoryStore(
        make_backend(dims=16), embeddings=DeterministicFakeEmbedding(size=16)
    )
    fact = store.remember("ada", "likes green tea", metadata={"source": "chat"}).fact
    assert store.recall("ada", "tea", filter={"source": "chat\x00"}) == []
    assert [f.id for f in store.recall("ada", "tea", filter={"source": {"$ne": "x\x00"}})] == [
        fact.id
    ]
    assert store.forget("ada", fact.id + "\x00") is False
    assert [f.id for f in store.list_all("ada")] == [fact.id]
