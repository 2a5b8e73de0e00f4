"""One contract for LangGraph ``BaseStore`` semantics, run against every engine, sync and async.

Subclass :class:`BaseStoreContract` (named ``Test...``) and provide a ``store_factory`` fixture:
``store_factory(fields: list[str] | None = None, ttl: TTLConfig | None = None) -> BaseStore``
returns a fresh, empty store with semantic search over ``fields`` (default ``["$"]``),
``tests.fakes.KeywordEmbeddings(dims=64)`` and the TTL configuration ``ttl`` (LangGraph's
``TTLConfig``; only the TTL tests pass it).

Time in the TTL tests is injected, never slept through: the ``clock`` fixture patches
``langchain_ltm._clock.utcnow``, the one clock our store reads (every engine is handed its
moments: record timestamps, ``alive_at``, ``touch(now)``, ``sweep(now)``), and moves it with
``clock.advance(minutes)``. Only the sweeper tests wait, polling for the sweeper's effect.

Every test is written once as ``async def`` against :class:`StoreAPI` and runs twice, through the
sync methods (``put``, ``search``, ...) and through the async ones (``aput``, ``asearch``, ...).

Order of results without a query is not part of the contract (InMemoryStore returns insertion
order, PostgresStore ``updated_at DESC``), so such results are compared as sorted keys.

Behaviour an upstream store gets wrong is marked per subclass, never skipped::

    known_upstream_failures: ClassVar[dict[str, str]] = {
        "test_created_at_is_kept_on_update": "langgraph #7411: put() resets created_at",
    }

Each named test then runs as ``xfail(strict=True)``: it must fail, so a fixed upstream shows up.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar

import pytest
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from langchain_ltm import _clock

NS = ("memories", "u1")
TEA = {"text": "green tea with honey"}

_METHODS = frozenset({"get", "put", "delete", "search", "list_namespaces", "batch"})


class StoreAPI:
    """The store's public methods as coroutines: the sync twin called directly, or the async one."""

    def __init__(self, store: BaseStore, mode: str) -> None:
        self.store = store
        self.mode = mode

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        if name not in _METHODS:
            raise AttributeError(name)
        if self.mode == "async":
            return getattr(self.store, f"a{name}")
        method = getattr(self.store, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return method(*args, **kwargs)

        return call


def keys(items: Iterable[Item]) -> list[str]:
    """Sorted keys: the comparison for results whose order is not part of the contract."""
    return sorted(item.key for item in items)


def as_json(value: Any) -> str:
    """Canonical JSON, so ``True`` differs from ``1`` and ``3`` from ``3.0``."""
    return json.dumps(value, sort_keys=True)


async def put_many(api: StoreAPI, n: int) -> list[str]:
    names = [f"k{i:02d}" for i in range(n)]
    for i, key in enumerate(names):
        await api.put(NS, key, {"text": f"note {i} about tea", "i": i})
    return names


async def score_of(api: StoreAPI, key: str, query: str) -> float | None:
    return next(h.score for h in await api.search(NS, query=query) if h.key == key)


TREE = [
    ("a", "b", "c"),
    ("a", "b", "d", "e"),
    ("a", "b", "d", "i"),
    ("a", "b", "f"),
    ("a", "c", "f"),
    ("x", "b", "f"),
]


async def put_tree(api: StoreAPI) -> None:
    for ns in TREE:
        await api.put(ns, "k", {"v": 1})


class Clock:
    """The store's clock, frozen at the start of the test and moved by hand."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = datetime.now(timezone.utc)
        monkeypatch.setattr(_clock, "utcnow", lambda: self.now)

    def advance(self, minutes: float) -> None:
        self.now += timedelta(minutes=minutes)


async def wait_until(check: Callable[[], Awaitable[bool]], seconds: float = 20.0) -> bool:
    """Poll ``check`` until it holds (a background sweeper's effect); False on timeout."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if await check():
            return True
        await asyncio.sleep(0.02)
    return False


class BaseStoreContract:
    """LangGraph ``BaseStore`` semantics every engine of ours must honour (see module docstring)."""

    known_upstream_failures: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        unknown = sorted(
            name
            for name in cls.known_upstream_failures
            if not (name.startswith("test_") and callable(getattr(cls, name, None)))
        )
        if unknown:
            raise TypeError(f"{cls.__name__}.known_upstream_failures names no test: {unknown}")

    @pytest.fixture
    def store_factory(self) -> Callable[..., BaseStore]:
        raise NotImplementedError("subclasses provide store_factory(fields=None) -> BaseStore")

    @pytest.fixture(params=["sync", "async"])
    def mode(self, request: pytest.FixtureRequest) -> str:
        return request.param

    @pytest.fixture
    def make_api(self, store_factory: Callable[..., BaseStore], mode: str):
        return lambda fields=None: StoreAPI(store_factory(fields), mode)

    @pytest.fixture
    def api(self, make_api) -> StoreAPI:
        return make_api()

    @pytest.fixture
    def make_ttl_api(self, store_factory: Callable[..., BaseStore], mode: str):
        made: list[BaseStore] = []

        def make(ttl: dict[str, Any] | None = None) -> StoreAPI:
            store = store_factory(None, ttl=ttl)
            made.append(store)
            return StoreAPI(store, mode)

        yield make
        for store in made:  # sweepers started by a config stop with the test
            stop = getattr(store, "stop_ttl_sweeper", None)
            if stop is not None:
                stop(timeout=10)

    @pytest.fixture
    def clock(self, monkeypatch: pytest.MonkeyPatch) -> Clock:
        return Clock(monkeypatch)

    @pytest.fixture(autouse=True)
    def _xfail_known_upstream_failures(self, request: pytest.FixtureRequest) -> None:
        reason = self.known_upstream_failures.get(request.function.__name__)
        if reason:
            request.applymarker(pytest.mark.xfail(strict=True, reason=reason))

    # put / get / delete

    async def test_values_round_trip(self, api):
        value = {
            "s": "héllo ✓ 日本語",
            "ключ": "значение",
            "i": 42,
            "neg": -7,
            "f": 3.5,
            "t": True,
            "no": False,
            "none": None,
            "list": [1, "two", None, {"three": [3.0]}],
            "nested": {"a": {"b": [True, 1.25]}, "empty": {}},
            "empty": [],
        }
        ns = ("memories", "ünï")
        await api.put(ns, "k.1/é", value)
        item = await api.get(ns, "k.1/é")
        assert (item.namespace, item.key) == (ns, "k.1/é")
        assert as_json(item.value) == as_json(value)
        assert item.created_at.tzinfo is not None
        assert item.created_at <= item.updated_at
        [hit] = await api.search(("memories",))
        assert as_json(hit.value) == as_json(value)

    async def test_get_missing_is_none(self, api):
        await api.put(NS, "k", {"v": 1})
        assert await api.get(NS, "other") is None
        assert await api.get(("never", "written"), "k") is None

    async def test_put_overwrites_whole_value(self, api):
        await api.put(NS, "k", {"a": 1, "b": 2})
        await api.put(NS, "k", {"c": 3})
        assert (await api.get(NS, "k")).value == {"c": 3}
        assert [h.value for h in await api.search(NS)] == [{"c": 3}]

    async def test_a_clients_own_fields_over_a_text_are_kept_as_put(self, api):
        """A put over a text item of a user's namespace wrote the put's time over the
        client's own ``valid_from`` and a count over its list of ``versions`` (and, with a
        ``version_of`` field, a hash over its own); InMemoryStore keeps what was put. (A
        text put over another without a ``valid_from`` gets one in a user's namespace: when
        it took over.)"""
        puts = [
            ("contract", {"content": "Lease for flat 3", "valid_from": "2025-01-01"}),
            ("contract", {"content": "Lease for flat 4", "valid_from": "2026-03-01"}),
            ("doc", {"content": "draft", "content_hash": "sha1:ab", "versions": ["r1", "r2"]}),
            ("doc", {"content": "final", "content_hash": "sha1:cd", "versions": ["r1", "r3"]}),
            ("x", {"content": "Q report", "content_hash": "any", "versions": 1, "version_of": "d"}),
        ]
        for key, value in puts:  # every field as put (a fact's valid_from may be added)
            await api.put(NS, key, value)
            got = (await api.get(NS, key)).value
            assert as_json({field: got.get(field) for field in value}) == as_json(value)

    async def test_copies_of_a_fact_shaped_value_under_other_keys_are_all_stored(self, api):
        """Postgres refused a second copy of a value with ``content``, ``content_hash`` and
        ``versions`` under another key of a namespace outside the users' (a snapshot of a
        fact's value): ``DuplicateFactError``. Every copy is stored; on Postgres a second
        copy of a fact's hash in one namespace goes without it, which its fact-hash
        constraint keeps to one item; a client's own document with a list of versions is
        no fact's value and is stored as put everywhere."""
        fact = {"content": "I live in Berlin", "content_hash": "abc", "versions": 0}
        doc = {"content": "same file body", "content_hash": "sha-of-file", "versions": [1, 2]}
        for ns in (("snapshots", "u1"), (*NS, "backup")):
            for key in ("a", "b"):
                await api.put(ns, key, dict(fact))
                await api.put(ns, f"doc-{key}", dict(doc))
            first, second = [(await api.get(ns, key)).value for key in ("a", "b")]
            assert first == fact
            assert second == fact or second == {"content": "I live in Berlin", "versions": 0}
            for key in ("doc-a", "doc-b"):
                assert (await api.get(ns, key)).value == doc
            assert keys(await api.search(ns)) == ["a", "b", "doc-a", "doc-b"]

    async def test_delete(self, api):
        await api.put(NS, "k", {"v": 1})
        await api.put(NS, "other", {"v": 2})
        await api.delete(NS, "k")
        assert await api.get(NS, "k") is None
        assert keys(await api.search(NS)) == ["other"]
        await api.delete(NS, "k")  # deleting a missing key is a no-op
        assert keys(await api.search(NS)) == ["other"]

    async def test_created_at_is_kept_on_update(self, api):
        await api.put(NS, "k", {"v": 1})
        first = await api.get(NS, "k")
        await asyncio.sleep(0.01)
        await api.put(NS, "k", {"v": 2})
        second = await api.get(NS, "k")
        assert second.created_at == first.created_at
        assert second.updated_at > first.updated_at

    async def test_returned_values_do_not_alias_the_store(self, api):
        await api.put(NS, "k", {"tags": ["a"], "meta": {"n": 1}})
        item = await api.get(NS, "k")
        item.value["meta"]["n"] = 2
        item.value["tags"].append("b")
        item.value["extra"] = True
        assert (await api.get(NS, "k")).value == {"tags": ["a"], "meta": {"n": 1}}
        [hit] = await api.search(NS)
        hit.value["meta"]["n"] = 3
        hit.value.pop("tags")
        assert (await api.get(NS, "k")).value == {"tags": ["a"], "meta": {"n": 1}}

    async def test_put_copies_the_value(self, api):
        value = {"tags": ["a"], "meta": {"n": 1}}
        await api.put(NS, "k", value)
        value["meta"]["n"] = 2
        value["tags"].append("b")
        value["extra"] = True
        assert (await api.get(NS, "k")).value == {"tags": ["a"], "meta": {"n": 1}}

    # search without a query

    async def test_search_namespace_prefix(self, api):
        await api.put(("docs",), "root", {"v": 1})
        await api.put(("docs", "u1"), "mid", {"v": 2})
        await api.put(("docs", "u1", "x"), "deep", {"v": 3})
        await api.put(("other",), "elsewhere", {"v": 4})
        assert keys(await api.search(("docs",))) == ["deep", "mid", "root"]
        assert keys(await api.search(("docs", "u1"))) == ["deep", "mid"]
        assert keys(await api.search(())) == ["deep", "elsewhere", "mid", "root"]
        assert await api.search(("docs", "u1", "x", "y")) == []
        hits = await api.search(("docs", "u1"))
        assert sorted(h.namespace for h in hits) == [("docs", "u1"), ("docs", "u1", "x")]
        assert all(h.score is None for h in hits)

    async def test_search_prefix_matches_whole_labels(self, api):
        for ns in [
            ("m", "u"),
            ("m", "u1"),
            ("m", "u1", "x"),
            ("m", "u10"),
            ("m", "u_1"),
            ("m", "u%1"),
        ]:
            await api.put(ns, "k", TEA)
        for query in (None, "green tea"):
            hits = await api.search(("m", "u1"), query=query)
            assert sorted(h.namespace for h in hits) == [("m", "u1"), ("m", "u1", "x")], query
            assert [h.namespace for h in await api.search(("m", "u"), query=query)] == [("m", "u")]

    async def test_filter_equality(self, api):
        await api.put(NS, "a", {"kind": "fruit", "n": 1, "meta": {"lang": "en", "v": 1}})
        await api.put(NS, "b", {"kind": "fruit", "n": 2, "meta": {"lang": "fr", "v": 1}})
        await api.put(NS, "c", {"kind": "veg", "n": 1, "ok": True, "meta": {"lang": "en", "v": 2}})
        cases = [
            ({"kind": "fruit"}, ["a", "b"]),
            ({"kind": "fruit", "n": 1}, ["a"]),
            ({"ok": True}, ["c"]),
            ({"meta": {"lang": "en", "v": 1}}, ["a"]),
            ({"meta": {"lang": "de", "v": 1}}, []),
            ({"kind": "nut"}, []),
            ({"missing": 1}, []),
        ]
        for flt, expected in cases:
            assert keys(await api.search(NS, filter=flt)) == expected, flt

    async def test_a_nested_filter_needs_an_object_parent(self, api):
        # as InMemoryStore (and PostgresStore's containment): a nested key never matches
        # when its parent is missing or not an object, and {} matches any object
        values = {
            "full": {"meta": {"lang": "en"}},
            "empty": {"meta": {}},
            "none": {},
            "scalar": {"meta": 5},
            "hasn": {"meta": {"n": 1}},
            "other": {"meta": {"m": 2}},
        }
        for key, value in values.items():
            await api.put(NS, key, value)
        cases = [
            ({"meta": {}}, ["empty", "full", "hasn", "other"]),
            ({"meta": {"n": None}}, ["empty", "full", "other"]),
            ({"meta": {"n": {"$ne": 1}}}, ["empty", "full", "other"]),
            ({"meta": {"n": 1}}, ["hasn"]),
            ({"meta": 5}, ["scalar"]),
            ({"meta": None}, ["none"]),
        ]
        for flt, expected in cases:
            for query in (None, "meta"):
                assert keys(await api.search(NS, query=query, filter=flt)) == expected, flt

    async def test_filter_comparison_operators(self, api):
        for n in range(1, 6):
            await api.put(NS, f"n{n}", {"n": n})
        cases = [
            ({"$eq": 3}, [3]),
            ({"$ne": 3}, [1, 2, 4, 5]),
            ({"$gt": 3}, [4, 5]),
            ({"$gte": 3}, [3, 4, 5]),
            ({"$lt": 3}, [1, 2]),
            ({"$lte": 3}, [1, 2, 3]),
            ({"$gt": 1, "$lt": 4}, [2, 3]),
        ]
        for condition, expected in cases:
            hits = await api.search(NS, filter={"n": condition})
            assert keys(hits) == [f"n{n}" for n in expected], condition

    async def test_numeric_range_filters_compare_numbers(self, api):
        for n in (1, 2.5, 9, 10, 100):
            await api.put(NS, f"k{n}", {"n": n})
        cases = [
            ({"$gt": 9}, ["k10", "k100"]),
            ({"$gte": 10}, ["k10", "k100"]),
            ({"$lt": 10}, ["k1", "k2.5", "k9"]),
            ({"$lte": 9}, ["k1", "k2.5", "k9"]),
            ({"$gt": 2, "$lt": 50}, ["k10", "k2.5", "k9"]),
        ]
        for condition, expected in cases:
            assert keys(await api.search(NS, filter={"n": condition})) == expected, condition

    async def test_range_filter_skips_items_without_the_field(self, api):
        await api.put(NS, "with", {"n": 5})
        await api.put(NS, "without", {"m": 5})
        assert keys(await api.search(NS, filter={"n": {"$gt": 1}})) == ["with"]
        assert keys(await api.search(NS, filter={"n": {"$lte": 9}})) == ["with"]

    async def test_unknown_filter_operator_raises(self, api):
        await api.put(NS, "k", {"n": 1})
        with pytest.raises(ValueError, match=r"\$foo"):
            await api.search(NS, filter={"n": {"$foo": 1}})
        with pytest.raises(ValueError, match=r"\$in"):
            await api.search(NS, filter={"n": {"$in": [1]}})

    async def test_negative_limit_or_offset_raises(self, api):
        await api.put(NS, "k", {"n": 1})
        with pytest.raises(ValueError, match="limit"):
            await api.search(NS, limit=-1)
        with pytest.raises(ValueError, match="offset"):
            await api.search(NS, offset=-1)

    async def test_a_value_holding_nan_or_infinity_is_refused_whole(self, api):
        await api.put(NS, "k", {"n": 1.5})
        for bad in (float("nan"), float("inf"), -float("inf")):
            for value in ({"n": bad}, {"deep": {"list": [1, bad]}}):
                with pytest.raises(ValueError, match="NaN or Infinity"):
                    await api.put(NS, "k", value)
                with pytest.raises(ValueError, match="NaN or Infinity"):
                    await api.batch([PutOp(NS, "other", {"n": 2}), PutOp(NS, "k2", value)])
        assert [(item.key, item.value) for item in await api.search(NS)] == [("k", {"n": 1.5})]

    async def test_search_defaults_to_limit_10_offset_0(self, api):
        names = await put_many(api, 12)
        first = await api.search(NS)
        assert len(first) == 10
        assert [h.key for h in first] == [h.key for h in await api.search(NS, limit=10, offset=0)]
        rest = await api.search(NS, offset=10)
        assert keys(first + rest) == names
        assert len(await api.search(NS, query="note about tea")) == 10

    async def test_paging_without_query_covers_every_item_once(self, api):
        names = await put_many(api, 12)
        pages = [await api.search(NS, limit=5, offset=offset) for offset in (0, 5, 10)]
        assert [len(page) for page in pages] == [5, 5, 2]
        assert keys(h for page in pages for h in page) == names
        assert await api.search(NS, limit=5, offset=12) == []

    # search with a query

    async def test_query_ranks_the_most_similar_first(self, api):
        await api.put(NS, "tea", TEA)
        await api.put(NS, "bike", {"text": "mountain bike trail"})
        await api.put(NS, "coffee", {"text": "espresso coffee beans"})
        hits = await api.search(NS, query="green tea honey")
        assert [h.key for h in hits][:1] == ["tea"]
        assert keys(hits) == ["bike", "coffee", "tea"]
        scores = [h.score for h in hits]
        assert all(isinstance(s, float) for s in scores)
        assert scores == sorted(scores, reverse=True)
        assert (await api.search(NS, query="mountain bike"))[0].key == "bike"

    async def test_query_respects_prefix_and_filter(self, api):
        await api.put(NS, "en", {"text": "green tea", "lang": "en"})
        await api.put(NS, "fr", {"text": "green tea", "lang": "fr"})
        await api.put(("memories", "u2"), "other", {"text": "green tea", "lang": "en"})
        hits = await api.search(NS, query="green tea", filter={"lang": "en"})
        assert [h.key for h in hits] == ["en"]
        assert hits[0].score is not None

    async def test_index_false_items_are_not_scored(self, api):
        await api.put(NS, "indexed", TEA)
        await api.put(NS, "plain", TEA, index=False)
        hits = await api.search(NS, query="green tea honey")
        assert [(h.key, h.score is None) for h in hits] == [("indexed", False), ("plain", True)]

    async def test_reput_with_index_false_drops_the_vector(self, api):
        await api.put(NS, "k", TEA)
        await api.put(NS, "k", TEA, index=False)
        hits = await api.search(NS, query="green tea honey")
        assert [(h.key, h.score) for h in hits] == [("k", None)]

    async def test_put_index_overrides_store_fields(self, api):
        await api.put(NS, "a", {"title": "green tea", "body": "mountain bike"}, index=["body"])
        await api.put(NS, "b", {"title": "mountain bike", "body": "green tea"}, index=["body"])
        assert (await api.search(NS, query="green tea"))[0].key == "b"
        assert (await api.search(NS, query="mountain bike"))[0].key == "a"

    async def test_a_field_named_twice_is_embedded_once(self, make_api):
        api = make_api(["text", "text"])  # the store's fields, and a put's own index
        await api.put(NS, "a", {"text": "green tea"}, index=["text", "text"])
        await api.put(NS, "b", {"text": "mountain bike"})
        await api.put(NS, "c", {"items": ["green tea", "black tea"]}, index=["items", "items.0"])
        assert (await api.search(NS, query="green tea"))[0].key in ("a", "c")
        assert (await api.search(NS, query="mountain bike"))[0].key == "b"
        assert {item.key for item in await api.search(NS, query="tea")} == {"a", "b", "c"}

    async def test_store_fields_choose_what_is_embedded(self, make_api):
        api = make_api(["text"])
        await api.put(NS, "a", {"text": "green tea", "note": "mountain bike"})
        await api.put(NS, "b", {"text": "mountain bike", "note": "green tea"})
        assert (await api.search(NS, query="green tea"))[0].key == "a"
        assert (await api.search(NS, query="mountain bike"))[0].key == "b"

    async def test_multi_valued_path_scores_best_element(self, make_api):
        api = make_api(["tags[*]"])
        await api.put(NS, "many", {"tags": ["kayak river", "green tea"]})
        await api.put(NS, "one", {"tags": ["green tea"]})
        await api.put(NS, "none", {"tags": ["espresso coffee", "mountain bike"]})
        hits = await api.search(NS, query="green tea")
        assert sorted(h.key for h in hits[:2]) == ["many", "one"]
        assert [h.key for h in hits[2:]] == ["none"]
        assert hits[0].score == pytest.approx(hits[1].score)
        assert hits[1].score > hits[2].score
        assert (await api.search(NS, query="mountain bike"))[0].key == "none"

    async def test_items_without_the_indexed_field(self, make_api):
        api = make_api(["text"])
        await api.put(NS, "with", {"text": "green tea"})
        await api.put(NS, "without", {"other": "green tea"})
        hits = await api.search(NS, query="green tea")
        assert [(h.key, h.score is None) for h in hits] == [("with", False), ("without", True)]
        assert (await api.get(NS, "without")).value == {"other": "green tea"}

    async def test_paging_with_query_reaches_every_item(self, api):
        names = await put_many(api, 30)
        pages = [await api.search(NS, query="tea note", limit=5, offset=o) for o in range(0, 30, 5)]
        assert [len(page) for page in pages] == [5] * 6
        flat = [h for page in pages for h in page]
        assert keys(flat) == names
        scores = [h.score for h in flat]
        assert None not in scores
        assert scores == sorted(scores, reverse=True)

    async def test_paging_over_tied_scores_shows_every_item_once(self, api):
        """Items with one text score alike; an engine that ranks approximately (Qdrant's
        server, Chroma) returned ties in an order that changed with the window, so pages
        repeated some items and skipped others."""
        for i in range(30):
            await api.put(NS, f"k{i:02d}", {"text": "same words"})
        for size in (1, 4, 7):
            pages = [
                await api.search(NS, query="same words", limit=size, offset=o)
                for o in range(0, 30, size)
            ]
            flat = [h.key for page in pages for h in page]
            assert sorted(flat) == [f"k{i:02d}" for i in range(30)], size

    async def test_query_lists_scored_items_then_unscored_ones(self, api):
        await api.put(NS, "s1", {"text": "green tea"})
        await api.put(NS, "s2", {"text": "green tea with honey"})
        for key in ("u1", "u2", "u3"):
            await api.put(NS, key, {"text": "green tea"}, index=False)
        pages = [await api.search(NS, query="green tea", limit=2, offset=o) for o in (0, 2, 4)]
        assert [len(page) for page in pages] == [2, 2, 1]
        flat = [h for page in pages for h in page]
        assert [h.key for h in flat[:2]] == ["s1", "s2"]
        assert flat[0].score > flat[1].score
        assert keys(flat[2:]) == ["u1", "u2", "u3"]
        assert all(h.score is None for h in flat[2:])

    # list_namespaces

    async def test_list_namespaces_prefix_suffix_and_wildcards(self, api):
        await put_tree(api)
        abc, abde, abdi, abf, acf, xbf = TREE
        assert await api.list_namespaces() == sorted(TREE)
        assert await api.list_namespaces(prefix=("a", "b")) == [abc, abde, abdi, abf]
        assert await api.list_namespaces(prefix=("a", "b", "c")) == [abc]
        assert await api.list_namespaces(suffix=("f",)) == [abf, acf, xbf]
        assert await api.list_namespaces(prefix=("a",), suffix=("f",)) == [abf, acf]
        assert await api.list_namespaces(prefix=("z",)) == []
        assert await api.list_namespaces(prefix=("a", "*", "f")) == [abf, acf]
        assert await api.list_namespaces(prefix=("*", "b")) == [abc, abde, abdi, abf, xbf]
        assert await api.list_namespaces(suffix=("b", "*")) == [abc, abf, xbf]
        assert await api.list_namespaces(prefix=("*", "*", "*", "*")) == [abde, abdi]

    async def test_list_namespaces_max_depth(self, api):
        await put_tree(api)
        assert await api.list_namespaces(max_depth=1) == [("a",), ("x",)]
        assert await api.list_namespaces(max_depth=2) == [("a", "b"), ("a", "c"), ("x", "b")]
        assert await api.list_namespaces(prefix=("a", "b"), max_depth=3) == [
            ("a", "b", "c"),
            ("a", "b", "d"),
            ("a", "b", "f"),
        ]
        assert await api.list_namespaces(max_depth=10) == sorted(TREE)

    async def test_list_namespaces_limit_offset_sorted(self, api):
        await put_tree(api)
        everything = sorted(TREE)
        assert await api.list_namespaces(limit=2) == everything[:2]
        assert await api.list_namespaces(limit=2, offset=2) == everything[2:4]
        assert await api.list_namespaces(offset=5) == everything[5:]
        assert await api.list_namespaces(offset=6) == []
        assert await api.list_namespaces(max_depth=2, limit=1, offset=1) == [("a", "c")]

    async def test_list_namespaces_matches_whole_labels(self, api):
        for ns in [("m", "u1"), ("m", "u1", "x"), ("m", "u10"), ("m", "u_1"), ("m", "u%1")]:
            await api.put(ns, "k", {"v": 1})
        assert await api.list_namespaces(prefix=("m", "u1")) == [("m", "u1"), ("m", "u1", "x")]
        assert await api.list_namespaces(suffix=("1",)) == []
        assert await api.list_namespaces(suffix=("u1",)) == [("m", "u1")]

    async def test_reads_do_not_create_namespaces(self, api):
        await api.put(("real",), "k", {"v": 1})
        assert await api.get(("ghost",), "k") is None
        assert await api.search(("ghost", "a")) == []
        assert await api.search(("ghost", "b"), query="green tea") == []
        assert await api.list_namespaces() == [("real",)]

    async def test_namespace_disappears_with_its_last_item(self, api):
        await api.put(("a", "b"), "k1", {"v": 1})
        await api.put(("a", "b"), "k2", {"v": 2})
        await api.put(("a", "c"), "k", {"v": 3})
        await api.delete(("a", "b"), "k1")
        assert await api.list_namespaces() == [("a", "b"), ("a", "c")]
        await api.delete(("a", "b"), "k2")
        await api.delete(("ghost",), "k")
        assert await api.list_namespaces() == [("a", "c")]

    # batch

    async def test_batch_results_align_with_ops(self, api):
        await api.put(NS, "k1", {"v": 1})
        results = await api.batch(
            [
                GetOp(NS, "k1"),
                PutOp(NS, "k2", {"v": 2}),
                SearchOp(NS),
                ListNamespacesOp(),
                GetOp(NS, "missing"),
                PutOp(NS, "k1", None),
            ]
        )
        assert len(results) == 6
        assert results[0].value == {"v": 1}
        assert results[1] is None
        assert keys(results[2]) == ["k1"]
        assert results[3] == [NS]
        assert results[4] is None
        assert results[5] is None
        assert keys(await api.search(NS)) == ["k2"]

    async def test_batch_reads_see_state_before_its_puts(self, api):
        await api.put(NS, "k", {"v": 1})
        results = await api.batch(
            [
                PutOp(NS, "k", {"v": 2}),
                PutOp(NS, "new", {"v": 3}),
                PutOp(("fresh",), "n", {"v": 4}),
                GetOp(NS, "k"),
                GetOp(NS, "new"),
                SearchOp(NS),
                ListNamespacesOp(),
            ]
        )
        assert results[3].value == {"v": 1}
        assert results[4] is None
        assert [h.value for h in results[5]] == [{"v": 1}]
        assert results[6] == [NS]
        assert (await api.get(NS, "k")).value == {"v": 2}
        assert await api.list_namespaces() == [("fresh",), NS]

    async def test_batch_repeated_puts_collapse_to_the_last(self, api):
        await api.batch(
            [
                PutOp(NS, "k", {"text": "mountain bike"}),
                PutOp(NS, "k", {"text": "green tea"}),
                PutOp(NS, "gone", {"v": 1}),
                PutOp(NS, "gone", None),
                PutOp(NS, "back", None),
                PutOp(NS, "back", {"v": 2}),
            ]
        )
        assert (await api.get(NS, "k")).value == {"text": "green tea"}
        assert await api.get(NS, "gone") is None
        assert (await api.get(NS, "back")).value == {"v": 2}
        assert keys(await api.search(NS)) == ["back", "k"]
        assert await score_of(api, "k", "green tea") > await score_of(api, "k", "mountain bike")

    async def test_batch_puts_sharing_a_text(self, api):
        other = ("memories", "u2")
        await api.batch([PutOp(NS, "a", TEA), PutOp(other, "b", TEA), PutOp(NS, "c", TEA)])
        hits = await api.search(("memories",), query="green tea honey")
        assert sorted((h.namespace, h.key) for h in hits) == [(NS, "a"), (NS, "c"), (other, "b")]
        assert hits[0].score is not None
        assert {h.score for h in hits} == {hits[0].score}

    async def test_batch_validates_ops_like_the_methods(self, api):
        bad_ops = [
            PutOp(("a.b",), "k", {"v": 1}),
            PutOp((), "k", {"v": 1}),
            PutOp(("langgraph", "x"), "k", {"v": 1}),
            GetOp(("a.b",), "k"),
            SearchOp(("a.b",)),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("a.b",)),)),
        ]
        for op in bad_ops:
            with pytest.raises(InvalidNamespaceError):
                await api.batch([op])
        assert await api.list_namespaces() == []

    # threads

    async def test_calls_from_many_threads_at_once(self, api):
        """Threads sharing one store (LangGraph runs sync nodes in a thread pool) all succeed.

        Each thread writes, reads, lists and searches its own namespace while the others do
        the same; in async mode each thread drives the async methods on its own event loop.
        """
        threads, rounds = 8, 12

        async def work(t: int) -> list[str]:
            ns = ("threads", f"t{t}")
            for i in range(rounds):
                await api.put(ns, f"k{i}", {"text": f"note {i} of thread {t}", "i": i})
                got = await api.get(ns, f"k{i}")
                assert got is not None and got.value["i"] == i
                assert ns in await api.list_namespaces(prefix=("threads",))
                assert f"k{i}" in keys(await api.search(ns, limit=rounds))
                if i % 3 == 2:
                    await api.delete(ns, f"k{i - 1}")
            return keys(await api.search(ns, limit=rounds))

        def run(t: int) -> list[str]:
            return asyncio.run(work(t))

        with ThreadPoolExecutor(threads) as pool:
            found = list(pool.map(run, range(threads)))
        expected = sorted(f"k{i}" for i in range(rounds) if i % 3 != 1)
        assert found == [expected] * threads
        assert len(await api.list_namespaces(prefix=("threads",))) == threads

    # validation through the methods

    async def test_invalid_namespace_labels_are_rejected(self, api):
        for ns in [("a.b",), ("a", ""), ("a", 1), ("a\x00b",)]:
            with pytest.raises(InvalidNamespaceError):
                await api.put(ns, "k", {"v": 1})
            with pytest.raises(InvalidNamespaceError):
                await api.get(ns, "k")
            with pytest.raises(InvalidNamespaceError):
                await api.delete(ns, "k")
            with pytest.raises(InvalidNamespaceError):
                await api.search(ns)
            with pytest.raises(InvalidNamespaceError):
                await api.list_namespaces(prefix=ns)
            with pytest.raises(InvalidNamespaceError):
                await api.list_namespaces(suffix=ns)
        assert await api.list_namespaces() == []

    async def test_a_string_is_not_a_namespace(self, api):
        """``"docs"`` where a namespace or match path belongs raises, instead of finding nothing."""
        await api.put(("docs",), "k", {"v": 1})
        with pytest.raises(InvalidNamespaceError, match=r"\('docs',\)"):
            await api.put("docs", "k2", {"v": 2})
        suffix_op = ListNamespacesOp(match_conditions=(MatchCondition("suffix", "docs"),))
        for call in (
            lambda: api.get("docs", "k"),
            lambda: api.delete("docs", "k"),
            lambda: api.search("docs"),
            lambda: api.list_namespaces(prefix="docs"),
            lambda: api.list_namespaces(suffix="docs"),
            lambda: api.batch([suffix_op]),
        ):
            with pytest.raises(InvalidNamespaceError):
                await call()
        assert await api.list_namespaces() == [("docs",)]
        assert (await api.get(("docs",), "k")).value == {"v": 1}

    async def test_put_rejects_empty_and_reserved_namespaces(self, api):
        for ns in [(), ("langgraph",), ("langgraph", "x")]:
            with pytest.raises(InvalidNamespaceError):
                await api.put(ns, "k", {"v": 1})
        await api.put(("x", "langgraph"), "k", {"v": 1})  # reserved only as the root label
        assert await api.list_namespaces() == [("x", "langgraph")]

    # TTL (LangGraph's TTLConfig and put(ttl=) semantics; minutes, time injected by `clock`)

    async def test_ttl_store_says_it_supports_ttl(self, make_ttl_api):
        config = {"default_ttl": 2.0, "refresh_on_read": False}
        api = make_ttl_api(config)
        assert api.store.supports_ttl is True
        assert api.store.ttl_config == config

    async def test_ttl_put_then_expiry(self, make_ttl_api, clock):
        api = make_ttl_api()
        await api.put(NS, "short", TEA, ttl=1)
        await api.put(NS, "long", {"text": "green tea"}, ttl=10)
        await api.put(NS, "forever", {"text": "green tea honey"})
        clock.advance(0.9)
        assert (await api.get(NS, "short", refresh_ttl=False)).value == TEA
        clock.advance(0.2)  # 1.1 minutes after the put: expired, not yet swept
        assert await api.get(NS, "short") is None
        assert keys(await api.search(NS)) == ["forever", "long"]
        assert keys(await api.search(NS, query="green tea honey")) == ["forever", "long"]
        assert keys(await api.search(NS, filter={"text": TEA["text"]})) == []
        clock.advance(10)
        assert keys(await api.search(NS)) == ["forever"]

    async def test_ttl_putting_an_expired_item_again_creates_it_anew(self, make_ttl_api, clock):
        api = make_ttl_api()
        await api.put(NS, "k", TEA, ttl=1)
        await api.put(NS, "kept", TEA, ttl=10)
        first = await api.get(NS, "kept", refresh_ttl=False)
        clock.advance(2)  # "k" expired, not yet swept: it is gone
        await api.put(NS, "k", {"text": "again"})
        await api.put(NS, "kept", {"text": "updated"}, ttl=10)  # alive: an update
        again = await api.get(NS, "k")
        assert again.value == {"text": "again"}
        assert again.created_at == again.updated_at == clock.now  # not the expired one's
        kept = await api.get(NS, "kept", refresh_ttl=False)
        assert kept.created_at == first.created_at and kept.updated_at == clock.now

    async def test_ttl_refresh_on_get(self, make_ttl_api, clock):
        api = make_ttl_api()
        await api.put(NS, "k", TEA, ttl=1)
        clock.advance(0.6)
        assert await api.get(NS, "k") is not None  # refresh_ttl defaults to True
        clock.advance(0.6)  # 1.2 after the put, 0.6 after the read
        assert await api.get(NS, "k", refresh_ttl=False) is not None
        clock.advance(0.6)  # 1.2 after the last refresh
        assert await api.get(NS, "k") is None
        results = await api.batch([PutOp(NS, "k", TEA, ttl=1), GetOp(NS, "k")])
        assert results[1] is None  # the batch's reads see the state before its puts
        assert await api.get(NS, "k") is not None

    async def test_ttl_refresh_on_search(self, make_ttl_api, clock):
        api = make_ttl_api()
        await api.put(NS, "plain", {"v": 1}, ttl=1)
        await api.put(NS, "ranked", TEA, ttl=1)
        clock.advance(0.6)
        assert keys(await api.search(NS, filter={"v": 1})) == ["plain"]
        assert [h.key for h in await api.search(NS, query="green tea honey", limit=1)] == ["ranked"]
        clock.advance(0.6)  # refreshed 0.6 ago, put 1.2 ago
        assert keys(await api.search(NS, refresh_ttl=False)) == ["plain", "ranked"]
        clock.advance(0.6)
        assert await api.search(NS) == []

    async def test_ttl_refresh_on_read_false_in_the_config(self, make_ttl_api, clock):
        api = make_ttl_api({"refresh_on_read": False})
        await api.put(NS, "k", TEA, ttl=1)
        clock.advance(0.6)
        assert await api.get(NS, "k") is not None
        assert len(await api.search(NS)) == 1
        clock.advance(0.6)
        assert await api.get(NS, "k") is None
        await api.put(NS, "k", TEA, ttl=1)
        clock.advance(0.6)
        assert await api.get(NS, "k", refresh_ttl=True) is not None  # the call wins
        clock.advance(0.6)
        assert await api.get(NS, "k") is not None

    async def test_ttl_put_again_sets_or_clears_the_ttl(self, make_ttl_api, clock):
        api = make_ttl_api()
        await api.put(NS, "k", TEA, ttl=1)
        await api.put(NS, "k", TEA)  # no TTL now
        await api.put(NS, "j", TEA)
        await api.put(NS, "j", TEA, ttl=1)  # a TTL now
        clock.advance(5)
        assert await api.get(NS, "k") is not None
        assert await api.get(NS, "j") is None

    async def test_ttl_default_ttl_and_ttl_none_override(self, make_ttl_api, clock):
        api = make_ttl_api({"default_ttl": 1})
        await api.put(NS, "default", TEA)
        await api.put(NS, "never", TEA, ttl=None)
        await api.put(NS, "longer", TEA, ttl=3)
        await api.batch([PutOp(NS, "raw", TEA)])  # an op's ttl is its own: None, no expiry
        clock.advance(1.5)
        assert keys(await api.search(NS)) == ["longer", "never", "raw"]
        clock.advance(3)
        assert keys(await api.search(NS)) == ["never", "raw"]

    async def test_ttl_batch_put_op_ttl_is_honoured(self, make_ttl_api, clock):
        api = make_ttl_api()
        await api.batch([PutOp(NS, "a", TEA, ttl=1), PutOp(NS, "b", TEA, ttl=None)])
        await api.batch([PutOp(NS, "c", TEA, ttl=1), PutOp(NS, "c", TEA, ttl=4)])
        clock.advance(2)
        reads = [GetOp(NS, key, refresh_ttl=False) for key in ("a", "b", "c")]
        results = await api.batch(reads)
        assert [r is None for r in results] == [True, False, False]
        clock.advance(3)
        assert await api.get(NS, "c") is None

    async def test_ttl_expired_items_leave_room_for_live_ones(self, make_ttl_api, clock):
        api = make_ttl_api()
        for i in range(6):
            await api.put(NS, f"gone{i}", {"text": "green tea honey", "n": i}, ttl=1)
        for i in range(3):
            await api.put(NS, f"live{i}", {"text": "green tea", "n": i})
        clock.advance(2)
        expected = ["live0", "live1", "live2"]
        assert keys(await api.search(NS, limit=3)) == expected
        assert keys(await api.search(NS, query="green tea honey", limit=3)) == expected
        assert keys(await api.search(NS, filter={"n": {"$lt": 5}}, limit=3)) == expected
        assert keys(await api.search(NS, query="tea", filter={"n": {"$gte": 0}})) == expected

    async def test_ttl_list_namespaces_hides_expired_only_namespaces(self, make_ttl_api, clock):
        api = make_ttl_api()
        await api.put(("a", "gone"), "k", {"v": 1}, ttl=1)
        await api.put(("a", "mixed"), "k1", {"v": 1}, ttl=1)
        await api.put(("a", "mixed"), "k2", {"v": 2})
        await api.put(("a", "later"), "k", {"v": 1}, ttl=5)
        await api.put(("b",), "k", {"v": 1}, ttl=1)
        clock.advance(2)
        assert await api.list_namespaces() == [("a", "later"), ("a", "mixed")]
        assert await api.list_namespaces(max_depth=1) == [("a",)]
        assert await api.list_namespaces(suffix=("gone",)) == []

    async def test_ttl_omit_expired_false_shows_expired_until_swept(self, make_ttl_api, clock):
        api = make_ttl_api({"omit_expired": False})
        await api.put(NS, "k", TEA, ttl=1)
        await api.put(NS, "keep", TEA)
        clock.advance(2)
        assert (await api.get(NS, "k", refresh_ttl=False)).value == TEA
        assert keys(await api.search(NS, refresh_ttl=False)) == ["k", "keep"]
        assert await api.list_namespaces() == [NS]
        swept = await _sweep(api)
        assert swept == 1
        assert await api.get(NS, "k") is None
        assert keys(await api.search(NS)) == ["keep"]

    async def test_ttl_refresh_never_brings_an_expired_item_back(self, make_ttl_api, clock):
        api = make_ttl_api({"omit_expired": False})
        await api.put(NS, "k", TEA, ttl=1)
        clock.advance(2)
        assert await api.get(NS, "k", refresh_ttl=True) is not None  # shown, not refreshed
        assert len(await api.search(NS, query="green tea", refresh_ttl=True)) == 1
        assert await _sweep(api) == 1
        assert await api.get(NS, "k") is None

    async def test_ttl_sweep_deletes_only_what_expired(self, make_ttl_api, clock):
        api = make_ttl_api()
        await api.put(NS, "a", TEA, ttl=1)
        await api.put(("other",), "b", TEA, ttl=1)
        await api.put(NS, "c", TEA, ttl=10)
        await api.put(NS, "d", TEA)
        assert await _sweep(api) == 0
        clock.advance(2)
        assert await _sweep(api) == 2
        assert await _sweep(api) == 0
        assert keys(await api.search(())) == ["c", "d"]
        assert await api.list_namespaces() == [NS]
        await api.put(NS, "a", TEA)  # the key is free again, and new
        assert (await api.get(NS, "a")).value == TEA

    async def test_ttl_sweeper_deletes_and_stops(self, make_ttl_api, clock):
        api = make_ttl_api({"omit_expired": False})
        store = api.store
        await api.put(NS, "k", TEA, ttl=1)
        await api.put(NS, "keep", TEA)
        clock.advance(2)
        if api.mode == "async":
            task = await store.astart_ttl_sweeper(sweep_interval_minutes=0.0005)
            assert await store.astart_ttl_sweeper() is task  # one sweeper at a time
        else:
            future = store.start_ttl_sweeper(sweep_interval_minutes=0.0005)
            assert not future.done()

        async def swept() -> bool:
            return await api.get(NS, "k", refresh_ttl=False) is None

        assert await wait_until(swept)
        await api.put(NS, "later", TEA, ttl=1)
        if api.mode == "async":
            assert await store.astop_ttl_sweeper(timeout=10) is True
            assert task.done()
            assert await store.astop_ttl_sweeper() is True  # stopping twice is fine
        else:
            assert store.stop_ttl_sweeper(timeout=10) is True
            assert future.result(timeout=10) is None
            assert store.stop_ttl_sweeper() is True
        clock.advance(2)
        await asyncio.sleep(0.05)  # ten sweeper periods: a running sweeper would delete it
        assert await api.get(NS, "later", refresh_ttl=False) is not None
        assert keys(await api.search(NS, refresh_ttl=False)) == ["keep", "later"]

    async def test_ttl_sweeper_starts_from_the_config(self, make_ttl_api, clock):
        api = make_ttl_api({"sweep_interval_minutes": 0.0005, "omit_expired": False})
        await api.put(NS, "k", TEA, ttl=1)
        clock.advance(2)

        async def swept() -> bool:
            return await api.get(NS, "k", refresh_ttl=False) is None

        assert await wait_until(swept)
        assert api.store.stop_ttl_sweeper(timeout=10) is True

    async def test_ttl_bad_ttl_values_raise(self, make_ttl_api):
        api = make_ttl_api()
        for bad in (0, -1, "5", True, float("nan")):
            with pytest.raises(ValueError, match="ttl"):
                await api.put(NS, "k", TEA, ttl=bad)
            with pytest.raises(ValueError, match="ttl"):
                await api.batch([PutOp(NS, "k", TEA, ttl=bad)])
        assert await api.search(NS) == []

    # sequences and index_config

    async def test_namespaces_may_be_lists(self, api):
        await api.put(["test", "docs"], "d1", {"text": "green tea"})
        await api.put(("test", "images"), "i1", {"text": "mountain bike"})
        await api.put(("prod", "docs"), "d2", {"text": "green tea"})
        assert keys(await api.search(["test"])) == ["d1", "i1"]
        assert keys(await api.search(["test", "docs"], query="green tea")) == ["d1"]
        assert await api.list_namespaces(prefix=["test"]) == [("test", "docs"), ("test", "images")]
        assert await api.list_namespaces(suffix=["docs"]) == [("prod", "docs"), ("test", "docs")]
        item = await api.get(["test", "docs"], "d1")
        assert item.namespace == ("test", "docs")
        [hit] = await api.search(["test", "images"])
        assert hit.namespace == ("test", "images")
        await api.delete(["test", "docs"], "d1")
        assert keys(await api.search(["test"])) == ["i1"]
        results = await api.batch([SearchOp(["prod"]), GetOp(["prod", "docs"], "d2")])
        assert keys(results[0]) == ["d2"] and results[1].key == "d2"
        with pytest.raises(InvalidNamespaceError):
            await api.put(["a.b"], "k", {"v": 1})

    async def test_index_config_has_langgraph_shape(self, make_api):
        api = make_api(["text"])
        config = api.store.index_config
        assert config["dims"] == 64
        assert config["fields"] == ["text"]
        assert config["embed"] is not None
        assert len(api.store.embeddings.embed_query("green tea")) == config["dims"]


async def _sweep(api: StoreAPI) -> int:
    if api.mode == "async":
        return await api.store.asweep_ttl()
    return api.store.sweep_ttl()
