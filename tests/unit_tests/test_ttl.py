"""TTL values and the TTL sweepers (thread and task) on the engines that expire items."""

from __future__ import annotations

import asyncio
import threading
import time
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.base import PutOp

from langchain_ltm import LongTermMemoryStore
from langchain_ltm._ttl import MAX_SWEEP_MINUTES, SweeperThread
from tests.fakes import KeywordEmbeddings
from tests.store_contract import Clock

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
    assert [f.id for f in store.list_all("u1")] == [fact.id]
    clock.advance(2)
    assert not any(store.get(NS, key, refresh_ttl=False) for key in keys)
    assert store.list_all("u1") == []


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


def test_a_sweeper_thread_that_fails_says_so_in_its_future(make_store, caplog):
    """The thread's loop ended the future with ``set_result(None)`` whatever stopped it."""
    store = make_store()
    future = SweeperThread().start(store.sweep_ttl, threading.TIMEOUT_MAX)  # minutes: too long
    with pytest.raises(OverflowError):
        future.result(timeout=5)
    assert "TTL sweeper thread failed" in caplog.text
