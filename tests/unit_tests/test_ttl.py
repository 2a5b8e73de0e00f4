"""TTL values and the TTL sweepers (thread and task) on the engines that expire items."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import weakref
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.base import PutOp

from langchain_ltm import LongTermMemoryStore
from langchain_ltm._ttl import MAX_SWEEP_MINUTES, SweeperThread
from langchain_ltm.backends.base import Capabilities
from langchain_ltm.backends.memory import MemoryBackend
from tests.fakes import KeywordEmbeddings
from tests.store_contract import Clock, wait_until

NS = ("docs",)
TEA = {"text": "green tea"}


@pytest.fixture
def clock(monkeypatch):
    return Clock(monkeypatch)


@pytest.fixture(params=["memory", "sqlite"])
def make_store(request, tmp_path):
    """Builds stores of one engine (keyword args go to the store), closed after the test."""
    made: list[LongTermMemoryStore] = []

    def make(**kwargs):
        emb = KeywordEmbeddings(dims=16)
        if request.param == "memory":
            store = LongTermMemoryStore(InMemoryVectorStore(emb), **kwargs)
        else:
            store = LongTermMemoryStore.from_sqlite(tmp_path / f"{len(made)}.db", emb, **kwargs)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


@pytest.mark.parametrize(
    "minutes", [np.int64(30), np.float32(30.0), Decimal("30"), Fraction(30)], ids=repr
)
def test_a_ttl_is_any_real_number(make_store, clock, minutes):
    """``ttl=np.int64(30)``, ``np.float32``, ``Decimal`` were refused ("a number of minutes
    > 0 ... got np.int64(30)") though ``np.float64`` passed and LangGraph takes them all:
    for ``put``, a batch's ``PutOp``, ``remember``, the TTL config and the sweep interval."""
    store = make_store(ttl={"default_ttl": minutes, "sweep_interval_minutes": minutes})
    assert store.stop_ttl_sweeper(timeout=5)
    store.start_ttl_sweeper(sweep_interval_minutes=minutes)
    assert store.stop_ttl_sweeper(timeout=5)
    store.put(NS, "put", TEA, ttl=minutes)
    store.put(NS, "default", TEA)
    store.batch([PutOp(NS, "batch", TEA, ttl=minutes)])
    fact = store.remember("u1", "Drinks green tea", ttl=minutes).fact
    assert fact.ttl_minutes == 30.0 and type(fact.ttl_minutes) is float
    keys = ("put", "default", "batch")
    clock.advance(29)
    assert all(store.get(NS, key, refresh_ttl=False) for key in keys)
    assert [f.id for f in store.list_all("u1", refresh_ttl=False)] == [fact.id]
    clock.advance(2)
    assert not any(store.get(NS, key, refresh_ttl=False) for key in keys)
    assert store.list_all("u1", refresh_ttl=False) == []


@pytest.mark.parametrize(
    "bad",
    [True, np.True_, Decimal("NaN"), Decimal("sNaN"), Decimal("-1"), Fraction(10**400), "30", 0],
    ids=repr,
)
def test_a_ttl_that_is_no_positive_real_number_is_refused(make_store, bad):
    store = make_store()
    with pytest.raises(ValueError, match=r"number of minutes > 0"):
        store.put(NS, "k", TEA, ttl=bad)
    with pytest.raises(ValueError, match=r"TTLConfig default_ttl is a number of minutes"):
        make_store(ttl={"default_ttl": bad})
    with pytest.raises(ValueError, match=r"sweep_interval_minutes is a number of minutes"):
        store.start_ttl_sweeper(sweep_interval_minutes=bad)


def test_a_sweep_interval_a_thread_cannot_wait_is_refused(make_store):
    """``start_ttl_sweeper(5e8)`` (or ``sweep_interval_minutes`` in the config) passed the
    check, then the thread died at its first wait (``OverflowError``: a thread waits at
    most ``threading.TIMEOUT_MAX`` seconds) and its future reported success."""
    with pytest.raises(ValueError, match=r"sweep_interval_minutes is a number of minutes"):
        make_store(ttl={"sweep_interval_minutes": 5e8})
    store = make_store()
    for minutes in (5e8, MAX_SWEEP_MINUTES):
        with pytest.raises(ValueError, match=rf"below {MAX_SWEEP_MINUTES:,.0f}"):
            store.start_ttl_sweeper(sweep_interval_minutes=minutes)
        with pytest.raises(ValueError, match=r"sweep_interval_minutes is a number of minutes"):
            asyncio.run(store.astart_ttl_sweeper(sweep_interval_minutes=minutes))
    future = store.start_ttl_sweeper(sweep_interval_minutes=MAX_SWEEP_MINUTES * 0.999)
    time.sleep(0.2)
    assert store._sweeper.running and not future.done()  # the longest wait works
    assert store.stop_ttl_sweeper(timeout=5)
    assert future.result(timeout=5) is None


def test_a_refused_sweep_interval_says_what_none_means_for_it(make_store):
    """The messages ended "or None for no expiry", a TTL's meaning: for an interval None is
    the config's interval (else 5 minutes) in ``start_ttl_sweeper``, no sweeper thread in
    the config; a TTL's message keeps "no expiry"."""
    store = make_store()
    interval = r"None for the TTLConfig's interval \(else every 5 minutes\)"
    with pytest.raises(ValueError, match=interval):
        store.start_ttl_sweeper(sweep_interval_minutes=threading.TIMEOUT_MAX)
    with pytest.raises(ValueError, match=interval):
        asyncio.run(store.astart_ttl_sweeper(sweep_interval_minutes=threading.TIMEOUT_MAX))
    with pytest.raises(ValueError, match=r"None for no sweeper thread") as refused:
        make_store(ttl={"sweep_interval_minutes": 0})
    assert "no expiry" not in str(refused.value)
    with pytest.raises(ValueError, match=r"None for no expiry"):
        make_store(ttl={"default_ttl": 0})
    with pytest.raises(ValueError, match=r"None for no expiry"):
        store.put(NS, "k", TEA, ttl=0)


def test_a_sweeper_thread_that_fails_says_so_in_its_future(make_store, caplog):
    """The thread's loop ended the future with ``set_result(None)`` whatever stopped it."""
    store = make_store()
    future = SweeperThread().start(store.sweep_ttl, threading.TIMEOUT_MAX)  # minutes: too long
    with pytest.raises(OverflowError):
        future.result(timeout=5)
    assert "TTL sweeper thread failed" in caplog.text


def _until(check, seconds: float = 10.0) -> bool:
    """Poll ``check`` until it holds (a background sweeper's effect); False on timeout."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return False


def test_a_sweeper_started_from_a_view_outlives_the_view(make_store, clock):
    """A sweeper held its view weakly (``WeakMethod(view.sweep_ttl)``): the view dropped
    (a tool's, a middleware's), the sweeper ended although the store it sweeps lived on."""
    store = make_store()
    view = store.with_options(namespace=("team",)).with_options(secret_guard=False)
    future = view.start_ttl_sweeper(sweep_interval_minutes=0.0005)
    del view
    gc.collect()
    store.put(NS, "k", TEA, ttl=1)
    clock.advance(2)
    assert _until(lambda: store.backend.count(NS) == 0)
    assert store._sweeper.running and not future.done()


async def test_a_sweeper_task_started_from_a_view_outlives_the_view(make_store, clock):
    store = make_store()
    view = store.with_options(namespace=("team",))
    task = await view.astart_ttl_sweeper(sweep_interval_minutes=0.0005)
    del view
    gc.collect()
    await store.aput(NS, "k", TEA, ttl=1)
    clock.advance(2)
    assert await wait_until(lambda: _acount(store, 0))
    assert not task.done()
    assert await store.astop_ttl_sweeper(timeout=5)


async def _acount(store: LongTermMemoryStore, expected: int) -> bool:
    return store.backend.count(NS) == expected


def test_a_store_kept_only_by_its_view_is_swept(make_store, clock):
    """``LongTermMemoryStore(...).with_options(...)`` keeps the view alone: its sweeper runs."""
    view = make_store().with_options(secret_guard=False)
    gc.collect()
    future = view.start_ttl_sweeper(sweep_interval_minutes=0.0005)
    view.put(NS, "k", TEA, ttl=1)
    clock.advance(2)
    assert _until(lambda: view.backend.count(NS) == 0)
    assert not future.done()
    assert view.stop_ttl_sweeper(timeout=5)


@pytest.mark.parametrize("engine", ["memory", "sqlite"])
def test_a_dropped_store_is_collected_and_its_sweepers_end(tmp_path, engine):
    """The sweepers hold the store weakly: a store dropped without ``close()``, with its
    views, is not kept alive by them, and they end at their next tick."""
    emb = KeywordEmbeddings(dims=16)
    if engine == "memory":
        store = LongTermMemoryStore(InMemoryVectorStore(emb))
    else:
        store = LongTermMemoryStore.from_sqlite(tmp_path / "m.db", emb)
    view = store.with_options(namespace=("team",))
    future = view.start_ttl_sweeper(sweep_interval_minutes=0.0005)
    loop = asyncio.new_event_loop()
    task = loop.run_until_complete(view.astart_ttl_sweeper(sweep_interval_minutes=0.0005))
    gone = weakref.ref(store)
    del store, view
    gc.collect()
    assert gone() is None
    assert future.result(timeout=5) is None
    loop.run_until_complete(asyncio.wait_for(task, timeout=5))
    loop.close()


class _NoTTLBackend(MemoryBackend):
    """A custom engine that stores no expiry (every engine that ships has TTL)."""

    capabilities = Capabilities(name="custom", ttl=False)


def test_an_engine_without_ttl_names_the_engines_that_have_it():
    """The message named "the memory, Postgres or Qdrant engine", leaving out SQLite and the
    vectorstore engine (FAISS, Chroma, ...), which support TTL too."""
    emb = KeywordEmbeddings(dims=16)
    names = r"memory, SQLite, Postgres, Qdrant, or any LangChain vectorstore"
    with pytest.raises(NotImplementedError, match=names):
        LongTermMemoryStore(
            _NoTTLBackend(InMemoryVectorStore(emb)), embeddings=emb, ttl={"default_ttl": 1}
        )
    store = LongTermMemoryStore(_NoTTLBackend(InMemoryVectorStore(emb)), embeddings=emb)
    assert store.supports_ttl is False
    with pytest.raises(NotImplementedError, match=names):
        store.start_ttl_sweeper()
    with pytest.raises(NotImplementedError, match=names):  # put(ttl=) is LangGraph's check
        store.batch([PutOp(NS, "k", TEA, ttl=1)])
    assert store.get(NS, "k") is None
