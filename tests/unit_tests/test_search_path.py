"""The shortcuts of the per-user search path return exactly what the long way returns.

Issue 19 made a search cheaper by building ``SearchItem`` without its constructor, by
normalizing a single query vector without temporary arrays, by a hot path in the in-process
index for one namespace, and by skipping re-validation of tuples that are already valid.
Each test here compares the shortcut with the general code, or with LangGraph's own class.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.base import InvalidNamespaceError, SearchItem, SearchOp

from langchain_ltm import LongTermMemoryStore
from langchain_ltm._codec import SEARCH_ITEM_SLOTS, to_search_item
from langchain_ltm._embedder import Embedder
from langchain_ltm._ops import plan_batch, tokenize_fields
from langchain_ltm.backends.base import Hit, StoredItem
from langchain_ltm.errors import EmbeddingDimensionError
from tests.fakes import KeywordEmbeddings

NOW = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)


def _slots(cls: type) -> set[str]:
    return {slot for klass in cls.__mro__ for slot in getattr(klass, "__slots__", ())}


def test_search_item_slots_are_langgraphs():
    # a new slot upstream would be missing from our items: this fails first
    assert set(SEARCH_ITEM_SLOTS) == _slots(SearchItem)


def test_to_search_item_equals_the_constructor():
    stored = StoredItem(
        ("memories", "u1"), "k", {"a": [1, {"b": "c"}], "n": None}, NOW, NOW + timedelta(1)
    )
    ours = to_search_item(Hit(stored, 0.25))
    theirs = SearchItem(
        stored.namespace, stored.key, stored.value, stored.created_at, stored.updated_at, 0.25
    )
    assert type(ours) is SearchItem
    assert ours == theirs
    assert ours.dict() == theirs.dict()
    assert all(getattr(ours, s) == getattr(theirs, s) for s in SEARCH_ITEM_SLOTS)
    # the value is a deep copy: changing the result cannot reach the stored item
    ours.value["a"][1]["b"] = "changed"
    assert stored.value["a"][1]["b"] == "c"


def test_to_search_item_makes_a_namespace_tuple():
    stored = StoredItem(["memories", "u1"], "k", {}, NOW, NOW)  # type: ignore[arg-type]
    assert to_search_item(Hit(stored, None)).namespace == ("memories", "u1")


def test_one_query_vector_matches_the_batch_normalization():
    raw = [3.0, 4.0, 0.0, 12.0]
    one = Embedder(_Fixed({"q": raw}))
    many = Embedder(_Fixed({"q": raw, "other": [1.0, 0.0, 0.0, 0.0]}))
    single = one.embed(["q"], True)
    batch = many.embed(["q", "other"], False)
    assert single.shape == (1, 4) and single.dtype == np.float32
    assert np.array_equal(single[0], batch[0])
    assert np.isclose(float(np.linalg.norm(single[0])), 1.0)
    assert not single.flags.writeable  # cached rows are read-only


def test_one_zero_query_vector_stays_zero():
    zero = Embedder(_Fixed({"q": [0.0, 0.0, 0.0]})).embed(["q"], True)
    assert not zero.any()


def test_one_query_of_another_size_is_refused():
    embedder = Embedder(_Fixed({"a": [1.0, 0.0], "b": [1.0, 0.0, 0.0]}))
    embedder.embed(["a"], True)
    with pytest.raises(ValueError, match="3-dimensional vectors after 2-dimensional"):
        embedder.embed(["b"], True)


@pytest.mark.parametrize("bad", [[[1.0, 2.0], [3.0]], [[1.0, 2.0]], [1.0, "x"]])
def test_one_malformed_query_vector_is_an_embedding_error(bad):
    with pytest.raises(EmbeddingDimensionError, match="unequal sizes"):
        Embedder(_Fixed({"q": bad})).embed(["q"], True)


def test_a_valid_tuple_namespace_is_kept_and_a_bad_one_still_refused():
    fields = tokenize_fields(["$"])
    namespace = ("memories", "u1")
    ((_, op, _),) = plan_batch([SearchOp(namespace, None, 5, 0, "q")], fields).searches
    assert op.namespace_prefix is namespace
    ((_, listed, _),) = plan_batch([SearchOp(["memories", "u1"], None, 5, 0, "q")], fields).searches
    assert listed.namespace_prefix == namespace
    for bad in (("memories", "a.b"), ("memories", ""), ("memories", 3), ("x\x00",)):
        with pytest.raises(InvalidNamespaceError):
            plan_batch([SearchOp(bad, None, 5, 0, "q")], fields)
    bad_windows = ((True, 0), (-1, 0), (5, -1), (5.0, 0), (5, None), (2**63, 0), (5, 2**60))
    for limit, offset in bad_windows:
        with pytest.raises(ValueError, match="must be an int from 0 to 2\\*\\*53"):
            plan_batch([SearchOp(namespace, None, limit, offset, "q")], fields)


@pytest.mark.parametrize("offset", [0, 2])
def test_hot_path_equals_the_general_path(offset):
    """One user's block (the hot path) ranks like a two-user prefix search filtered to it."""
    store = LongTermMemoryStore(InMemoryVectorStore(KeywordEmbeddings(32)), fields=["text"])
    words = ["tea", "coffee", "green", "black", "milk", "sugar", "lemon", "honey"]
    for u in ("u1", "u2"):
        for i, w in enumerate(words):
            store.put(("memories", u), f"{u}-{i}", {"text": f"{w} {words[i - 1]}", "u": u})
    hot = store.search(("memories", "u1"), query="green tea", limit=4, offset=offset)
    general = store.search(
        ("memories",), query="green tea", filter={"u": "u1"}, limit=4, offset=offset
    )
    assert [(it.key, it.score) for it in hot] == [(it.key, it.score) for it in general]
    assert len(hot) == 4 and all(it.namespace == ("memories", "u1") for it in hot)
    # a write after the block was stacked is seen by the next search (the cached view)
    store.put(("memories", "u1"), "new", {"text": "green tea", "u": "u1"})
    assert store.search(("memories", "u1"), query="green tea", limit=1)[0].key == "new"
    store.delete(("memories", "u1"), "new")
    assert "new" not in [it.key for it in store.search(("memories", "u1"), query="green tea")]


class _Fixed:
    """Embeddings that return given vectors (as fresh lists, like a client)."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed_query(self, text: str) -> list[float]:
        return list(self.vectors[text])

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [list(self.vectors[t]) for t in texts]


def test_a_block_whose_vectors_all_went_is_stacked_again():
    """A new block is stacked from its first vector; dropping every vector and adding one
    back (an item re-written without, then with, an index) still scores what is stored."""
    store = LongTermMemoryStore(InMemoryVectorStore(KeywordEmbeddings(32)), fields=["text"])
    ns = ("memories", "u1")
    store.put(ns, "a", {"text": "green tea"})
    assert [it.key for it in store.search(ns, query="green tea")] == ["a"]
    store.put(ns, "a", {"text": "green tea"}, index=False)  # no vectors left in the block
    assert [(it.key, it.score) for it in store.search(ns, query="green tea")] == [("a", None)]
    store.put(ns, "b", {"text": "black coffee"})  # the first vector again
    store.put(ns, "a", {"text": "green tea"})
    found = store.search(ns, query="green tea")
    assert [it.key for it in found] == ["a", "b"] and found[0].score > found[1].score


def _search_store(ttl=None):
    store = LongTermMemoryStore(InMemoryVectorStore(KeywordEmbeddings()), ttl=ttl)
    for n in range(6):
        store.put(
            ("memories", f"u{n % 2}"),
            f"k{n}",
            {"content": f"tea fact {n}", "n": n},
            ttl=5 if n % 3 == 0 and ttl is not None else None,
        )
    return store


def _as_batch(store, prefix, **kwargs):
    refresh = kwargs.pop("refresh_ttl", None)
    if refresh is None:
        refresh = (store.ttl_config or {}).get("refresh_on_read", True)
    op = SearchOp(prefix, kwargs.get("filter"), kwargs.get("limit", 10),
                  kwargs.get("offset", 0), kwargs.get("query"), refresh)  # fmt: skip
    return store.batch([op])[0]


@pytest.mark.parametrize(
    ("prefix", "kwargs"),
    [
        (("memories", "u0"), {"query": "tea", "limit": 2}),
        (("memories",), {"query": "tea fact 3", "offset": 1}),
        (("memories", "u1"), {"filter": {"n": {"$gte": 3}}}),
        (("memories", "u1"), {"query": "tea", "filter": {"n": 1}, "limit": 1}),
        (["memories", "u0"], {"query": "tea"}),
        ((), {"limit": 3}),
    ],
)
def test_search_answers_what_a_batch_of_one_search_answers(prefix, kwargs):
    store = _search_store()
    assert store.search(prefix, **kwargs) == _as_batch(store, prefix, **kwargs)


@pytest.mark.parametrize(
    ("prefix", "kwargs"),
    [
        (("memories", "u.0"), {}),
        ("memories", {}),
        (("memories", ""), {"query": "tea"}),
        (("memories",), {"limit": -1}),
        (("memories",), {"offset": -2}),
        (("memories",), {"query": 5}),
        (("memories",), {"filter": {"n": {"$regex": "x"}}}),
    ],
)
def test_search_refuses_what_a_batch_refuses(prefix, kwargs):
    store = _search_store()
    refused = (InvalidNamespaceError, ValueError, TypeError)
    with pytest.raises(refused) as alone:
        store.search(prefix, **kwargs)
    with pytest.raises(refused) as batched:
        _as_batch(store, prefix, **kwargs)
    assert type(alone.value) is type(batched.value)
    assert str(alone.value) == str(batched.value)


@pytest.mark.parametrize("refresh", [None, True, False])
@pytest.mark.parametrize("on_read", [True, False])
def test_search_refreshes_ttls_as_batch_does(refresh, on_read):
    ttl = {"default_ttl": None, "refresh_on_read": on_read}
    keys = [(("memories", "u0"), f"k{n}") for n in (0, 2, 4)]  # k0 has a TTL

    def refreshed(store, run) -> set[str]:
        before = [item.expires_at for item in store.backend.get(keys)]
        run(store)
        after = [item.expires_at for item in store.backend.get(keys)]
        return {key for (_, key), b, a in zip(keys, before, after) if a is not None and a > b}

    alone = refreshed(
        _search_store(ttl),
        lambda store: store.search(("memories", "u0"), query="tea", refresh_ttl=refresh),
    )
    batched = refreshed(
        _search_store(ttl),
        lambda store: _as_batch(store, ("memories", "u0"), query="tea", refresh_ttl=refresh),
    )
    assert alone == batched == ({"k0"} if (on_read if refresh is None else refresh) else set())


async def _as_abatch(store, prefix, **kwargs):
    refresh = kwargs.pop("refresh_ttl", None)
    if refresh is None:
        refresh = (store.ttl_config or {}).get("refresh_on_read", True)
    op = SearchOp(prefix, kwargs.get("filter"), kwargs.get("limit", 10),
                  kwargs.get("offset", 0), kwargs.get("query"), refresh)  # fmt: skip
    return (await store.abatch([op]))[0]


@pytest.mark.parametrize(
    ("prefix", "kwargs"),
    [
        (("memories", "u0"), {"query": "tea", "limit": 2}),
        (("memories",), {"query": "tea fact 3", "offset": 1}),
        (("memories", "u1"), {"filter": {"n": {"$gte": 3}}}),
        (("memories", "u1"), {"query": "tea", "filter": {"n": 1}, "limit": 1}),
        (["memories", "u0"], {"query": "tea"}),
        ((), {"limit": 3}),
    ],
)
async def test_asearch_answers_what_an_abatch_of_one_search_answers(prefix, kwargs):
    store = _search_store()
    assert await store.asearch(prefix, **kwargs) == await _as_abatch(store, prefix, **kwargs)


@pytest.mark.parametrize(
    ("prefix", "kwargs"),
    [
        (("memories", "u.0"), {}),
        ("memories", {}),
        (("memories", ""), {"query": "tea"}),
        (("memories",), {"limit": -1}),
        (("memories",), {"offset": -2}),
        (("memories",), {"query": 5}),
        (("memories",), {"filter": {"n": {"$regex": "x"}}}),
    ],
)
async def test_asearch_refuses_what_an_abatch_refuses(prefix, kwargs):
    store = _search_store()
    refused = (InvalidNamespaceError, ValueError, TypeError)
    with pytest.raises(refused) as alone:
        await store.asearch(prefix, **kwargs)
    with pytest.raises(refused) as batched:
        await _as_abatch(store, prefix, **kwargs)
    assert type(alone.value) is type(batched.value)
    assert str(alone.value) == str(batched.value)


@pytest.mark.parametrize("refresh", [None, True, False])
@pytest.mark.parametrize("on_read", [True, False])
async def test_asearch_refreshes_ttls_as_abatch_does(refresh, on_read):
    ttl = {"default_ttl": None, "refresh_on_read": on_read}
    keys = [(("memories", "u0"), f"k{n}") for n in (0, 2, 4)]  # k0 has a TTL

    async def refreshed(store, run) -> set[str]:
        before = [item.expires_at for item in store.backend.get(keys)]
        await run(store)
        after = [item.expires_at for item in store.backend.get(keys)]
        return {key for (_, key), b, a in zip(keys, before, after) if a is not None and a > b}

    alone = await refreshed(
        _search_store(ttl),
        lambda store: store.asearch(("memories", "u0"), query="tea", refresh_ttl=refresh),
    )
    batched = await refreshed(
        _search_store(ttl),
        lambda store: _as_abatch(store, ("memories", "u0"), query="tea", refresh_ttl=refresh),
    )
    assert alone == batched == ({"k0"} if (on_read if refresh is None else refresh) else set())


async def test_a_lone_asearch_runs_without_the_batch_planning(monkeypatch):
    """An ``asearch`` the loop runs alone skips ``plan_batch`` and the batch around its one
    search (a fifth of the store's share of a per-user search), as ``search`` does."""
    import langchain_ltm.store as store_module

    store = _search_store()
    planned = []
    plan_batch_of_store = store_module.plan_batch
    monkeypatch.setattr(
        store_module, "plan_batch", lambda *a: planned.append(a) or plan_batch_of_store(*a)
    )
    runs = store._coalescer.runs
    found = await store.asearch(("memories", "u0"), query="tea", limit=2)
    assert [item.key for item in found] == [
        it.key for it in store.search(("memories", "u0"), query="tea", limit=2)
    ]
    assert planned == []
    assert store._coalescer.runs == runs + 1
