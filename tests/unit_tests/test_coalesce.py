"""Concurrent async calls on one store share batch runs (``langchain_ltm._coalesce``).

The engine here is the in-memory one behind a probe that counts the engine calls (the round
trips a network engine would make), yields to the event loop in every async call (as a
network engine does) and can hold every call at a gate, which fixes how calls group.
"""

from __future__ import annotations

import asyncio
import gc
import random
import threading
from collections import Counter
from typing import Any

import pytest
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.base import GetOp, InvalidNamespaceError, Item, PutOp, SearchOp

from langchain_ltm import LongTermMemoryStore
from langchain_ltm._coalesce import Coalescer
from langchain_ltm._steps import run_async
from langchain_ltm.backends.memory import MemoryBackend
from langchain_ltm.errors import BackendError
from tests.fakes import KeywordEmbeddings

NS = ("memories", "u1")
DOCS = ("docs", "u1")  # not a user's namespace: a put there is written without a read first


class Probe(MemoryBackend):
    """The memory engine, counting async calls; ``gate`` (when set) holds each one."""

    def __init__(self) -> None:
        super().__init__(InMemoryVectorStore(KeywordEmbeddings(dims=16)))
        self.calls: Counter[str] = Counter()
        self.keys_asked: list[int] = []  # keys per get call
        self.events: list[str] = []
        self.gate: asyncio.Event | None = None
        self.refuse: set[str] = set()  # keys whose write the engine refuses

    async def _visit(self, name: str) -> None:
        self.calls[name] += 1
        await asyncio.sleep(0)  # a network engine suspends here
        if self.gate is not None:
            await self.gate.wait()

    async def aget(self, keys):
        self.keys_asked.append(len(keys))
        await self._visit("get")
        return self.get(keys)

    async def asearch(self, request):
        await self._visit("search")
        return self.search(request)

    async def alist_namespaces(self, request):
        await self._visit("list_namespaces")
        return self.list_namespaces(request)

    async def awrite(self, upserts, deletes):
        await self._visit("write")
        refused = self.refuse.intersection(r.key for r in upserts)
        if refused:
            raise BackendError(f"refused {sorted(refused)}")
        self.events.append("write")
        return self.write(upserts, deletes)

    async def aclose(self) -> None:
        self.events.append("close")

    def close(self) -> None:
        self.events.append("close")


def make_store(backend: Any = None) -> LongTermMemoryStore:
    backend = backend if backend is not None else Probe()
    return LongTermMemoryStore(backend, embeddings=KeywordEmbeddings(dims=16))


async def until(predicate, seconds: float = 5.0) -> None:
    """Let the loop run (embeddings run in a worker thread) until ``predicate()`` holds."""
    for _ in range(int(seconds * 1000)):
        if predicate():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("the condition never held")


async def held_first_call(store: LongTermMemoryStore, probe: Probe) -> asyncio.Task[Any]:
    """A call that runs alone and waits at the gate: every later call queues behind it."""
    probe.gate = asyncio.Event()
    first = asyncio.create_task(store.aget(NS, "first"))
    await until(lambda: probe.calls["get"] >= 1)
    return first


# ---- same answers as calls made one by one -----------------------------------------------


def _plain(result: Any) -> Any:
    if isinstance(result, Item):
        score = getattr(result, "score", None)
        return (
            result.namespace,
            result.key,
            result.value,
            None if score is None else round(score, 4),
        )
    if isinstance(result, list):
        return [_plain(r) for r in result]
    return result


def _random_call(
    rng: random.Random, written: list[tuple[str, ...]], read: list[tuple[str, ...]], n: int
):
    r = rng.random()
    key = f"k{rng.randrange(8)}"
    words = rng.sample(["tea", "coffee", "green", "honey", "milk", "lemon", "mint"], 3)
    value = {"text": f"note {n} {' '.join(words)}", "n": n}
    if r < 0.35:
        return ("aput", rng.choice(written), key, value)
    if r < 0.45:
        return ("adelete", rng.choice(written), key)
    if r < 0.65:
        return ("aget", rng.choice(read), key)
    if r < 0.85:
        return ("asearch", rng.choice(read), " ".join(rng.sample(words, 2)))
    ops = [
        GetOp(rng.choice(read), key),
        PutOp(rng.choice(written), f"k{rng.randrange(8)}", value),
        SearchOp(rng.choice(read), query=words[0], limit=3),
    ]
    return ("abatch", ops)


async def _do(store: LongTermMemoryStore, call: tuple[Any, ...]) -> Any:
    method, *args = call
    if method == "asearch":
        return await store.asearch(args[0], query=args[1], limit=4)
    return await getattr(store, method)(*args)


async def test_concurrent_calls_answer_like_calls_made_one_by_one():
    """Rounds of 150 concurrent calls, each round writing some namespaces and reading others.

    A twin store runs the same calls one by one; answers and final contents must be equal.
    """
    rng = random.Random(7)
    probe = Probe()
    store, twin = (
        make_store(probe),
        make_store(MemoryBackend(InMemoryVectorStore(KeywordEmbeddings(16)))),
    )
    spaces = [("memories", f"u{i}") for i in range(6)]
    n = 0
    for _ in range(10):
        written = rng.sample(spaces, 3)
        read = [ns for ns in spaces if ns not in written]
        calls = []
        for _ in range(150):
            n += 1
            calls.append(_random_call(rng, written, read, n))
        runs = store._coalescer.runs
        together = await asyncio.gather(*(_do(store, c) for c in calls))
        one_by_one = [await _do(twin, c) for c in calls]
        assert _plain(together) == _plain(one_by_one)
        # calls writing one key run one after another: about 70 of the 150 write one of
        # 24 keys (9 runs or so here), still a handful of runs for 150 calls
        assert store._coalescer.runs - runs < 15
    for ns in spaces:
        mine = await store.asearch(ns, limit=100)
        theirs = await twin.asearch(ns, limit=100)
        assert sorted(map(_plain, mine), key=str) == sorted(map(_plain, theirs), key=str)


async def test_concurrent_calls_share_round_trips():
    probe = Probe()
    store = make_store(probe)
    await store.abatch([PutOp(NS, f"k{i}", {"text": f"note {i} about tea"}) for i in range(50)])
    probe.calls.clear()
    embeddings: KeywordEmbeddings = store.embeddings  # type: ignore[assignment]
    embed_calls = embeddings.document_calls + embeddings.query_calls
    await asyncio.gather(
        *(store.aget(NS, f"k{i}") for i in range(100)),
        *(store.aput(NS, f"new{i}", {"text": f"new note {i}"}) for i in range(100)),
        *(store.asearch(NS, query=f"note {i}", limit=3) for i in range(50)),
    )
    # the first get ran alone; the 249 calls queued behind it ran as one batch
    assert probe.calls == {"get": 2, "write": 1, "search": 50}
    assert embeddings.document_calls + embeddings.query_calls - embed_calls == 2
    assert store._coalescer.runs == 2 + 1  # the seeding batch, then two runs


async def test_identical_reads_are_asked_once_and_answered_with_copies():
    probe = Probe()
    store = make_store(probe)
    await store.aput(NS, "k", {"text": "green tea", "tags": ["a"]})
    first = await held_first_call(store, probe)
    gets = [asyncio.create_task(store.aget(NS, "k")) for _ in range(5)]
    searches = [asyncio.create_task(store.asearch(NS, query="tea")) for _ in range(3)]
    await asyncio.sleep(0)
    probe.gate.set()
    await first
    items = await asyncio.gather(*gets)
    hits = await asyncio.gather(*searches)
    assert probe.keys_asked[-1] == 1 and probe.calls["search"] == 1
    assert all(item == items[0] for item in items) and len({id(i) for i in items}) == 5
    items[0].value["tags"].append("changed")
    hits[0][0].value["text"] = "changed"
    assert items[1].value == {"text": "green tea", "tags": ["a"]}
    assert hits[1][0].value["text"] == "green tea"
    assert (await store.aget(NS, "k")).value == {"text": "green tea", "tags": ["a"]}


# ---- LangGraph's batch semantics ---------------------------------------------------------


async def test_calls_merged_into_one_run_read_the_state_before_its_writes():
    probe = Probe()
    store = make_store(probe)
    await store.aput(NS, "k", {"v": 1})
    first = await held_first_call(store, probe)
    put = asyncio.create_task(store.aput(NS, "k", {"v": 2}))
    get = asyncio.create_task(store.aget(NS, "k"))
    other_put = asyncio.create_task(store.aput(NS, "k2", {"v": 3}))
    search = asyncio.create_task(store.asearch(NS))
    await asyncio.sleep(0)
    writes = probe.calls["write"]
    probe.gate.set()
    await asyncio.gather(first, put, other_put)
    assert (await get).value == {"v": 1}  # merged with the puts: the state before them
    assert [item.value for item in await search] == [{"v": 1}]
    assert probe.calls["write"] - writes == 1  # four calls, one write
    assert (await store.aget(NS, "k")).value == {"v": 2}


async def test_a_call_sees_every_write_completed_before_it():
    store = make_store()
    for i in range(20):
        put = store.aput(NS, "counter", {"n": i})
        others = [store.aget(NS, f"x{j}") for j in range(5)]
        await asyncio.gather(put, *others)
        assert (await store.aget(NS, "counter")).value == {"n": i}


async def test_calls_writing_one_key_run_one_after_another():
    """A batch keeps the last put of a key: two calls putting one key merged into one run
    lost the first call's write (and the version a put over a fact keeps of the text it
    replaces). The later call waits for the next run, the others go on; the last put made
    still wins."""
    probe = Probe()
    store = make_store(probe)
    await store.aput(NS, "k", {"v": 1})
    first = await held_first_call(store, probe)
    calls = [
        store.aput(NS, "k", {"v": 2}),
        store.aget(NS, "k"),
        store.adelete(NS, "k"),  # a delete writes the key too: the next run
        store.aput(NS, "other", {"v": 0}),  # goes on in this run
        store.aput(NS, "k", {"v": 3}),  # after the delete: the run after it
        store.aget(NS, "k"),  # a read goes on: merged, it sees the state before the run
    ]
    tasks = [asyncio.create_task(c) for c in calls]
    await asyncio.sleep(0)
    runs, writes = store._coalescer.runs, probe.calls["write"]
    probe.gate.set()
    await first
    results = await asyncio.gather(*tasks)
    assert [r.value if isinstance(r, Item) else r for r in results] == [
        None,
        {"v": 1},
        None,
        None,
        None,
        {"v": 1},
    ]
    assert store._coalescer.runs - runs == 3 and probe.calls["write"] - writes == 3
    assert (await store.aget(NS, "k")).value == {"v": 3}
    assert (await store.aget(NS, "other")).value == {"v": 0}


async def test_a_batch_call_keeps_its_own_semantics_when_merged():
    probe = Probe()
    store = make_store(probe)
    await store.aput(NS, "a", {"v": 0})
    first = await held_first_call(store, probe)
    mine = asyncio.create_task(
        store.abatch([PutOp(NS, "a", {"v": 1}), GetOp(NS, "a"), PutOp(NS, "a", {"v": 2})])
    )
    other = asyncio.create_task(store.abatch([GetOp(NS, "a"), PutOp(NS, "b", {"v": 9})]))
    await asyncio.sleep(0)
    probe.gate.set()
    await first
    put1, got, put2 = await mine
    assert (put1, put2) == (None, None) and got.value == {"v": 0}
    got_other, put_other = await other
    assert got_other.value == {"v": 0} and put_other is None
    assert (await store.aget(NS, "a")).value == {"v": 2}


# ---- failures stay with their call -------------------------------------------------------


async def test_a_bad_op_fails_only_its_own_call():
    probe = Probe()
    store = make_store(probe)
    await store.aput(NS, "k", {"v": 1})
    first = await held_first_call(store, probe)
    good = [asyncio.create_task(store.aput(NS, f"g{i}", {"v": i})) for i in range(20)]
    bad_label = asyncio.create_task(store.abatch([GetOp(("bad.label",), "k")]))
    bad_filter = asyncio.create_task(store.asearch(NS, filter={"v": {"$nope": 1}}))
    get = asyncio.create_task(store.aget(NS, "k"))
    await asyncio.sleep(0)
    probe.gate.set()
    await first
    with pytest.raises(InvalidNamespaceError):
        await bad_label
    with pytest.raises(ValueError, match="nope"):
        await bad_filter
    await asyncio.gather(*good)
    assert (await get).value == {"v": 1}
    assert len(await store.asearch(NS, limit=100)) == 21


async def test_an_engine_error_fails_only_the_calls_it_concerns():
    probe = Probe()
    probe.refuse = {"poison"}
    store = make_store(probe)
    first = await held_first_call(store, probe)
    good = [asyncio.create_task(store.aput(NS, f"g{i}", {"v": i})) for i in range(63)]
    poisoned = asyncio.create_task(store.aput(NS, "poison", {"v": -1}))
    good += [asyncio.create_task(store.aput(NS, f"h{i}", {"v": i})) for i in range(64)]
    await asyncio.sleep(0)
    probe.gate.set()
    await first
    with pytest.raises(BackendError, match="poison"):
        await poisoned
    await asyncio.gather(*good)
    stored = {item.key for item in await store.asearch(NS, limit=200)}
    assert len(stored) == 127 and "poison" not in stored
    # 128 calls: the failing half is split again, 7 times, the good halves land whole
    assert probe.calls["write"] <= 2 * 8


async def test_a_lone_call_raises_its_own_error():
    store = make_store()
    with pytest.raises(InvalidNamespaceError):
        await store.abatch([GetOp(("bad.label",), "k")])
    assert await store.aget(NS, "k") is None  # the store still works


# ---- cancellation ------------------------------------------------------------------------


async def test_a_cancelled_waiting_call_is_dropped_and_the_others_run():
    probe = Probe()
    store = make_store(probe)
    first = await held_first_call(store, probe)
    a = asyncio.create_task(store.aput(NS, "a", {"v": 1}))
    b = asyncio.create_task(store.aput(NS, "b", {"v": 2}))
    c = asyncio.create_task(store.aget(NS, "a"))
    await asyncio.sleep(0)
    b.cancel()
    probe.gate.set()
    await asyncio.gather(first, a)
    with pytest.raises(asyncio.CancelledError):
        await b
    assert await c is None
    assert await store.aget(NS, "b") is None  # dropped before its run
    assert (await store.aget(NS, "a")).value == {"v": 1}


async def test_cancelling_a_call_during_its_run_leaves_the_run_alone():
    probe = Probe()
    store = make_store(probe)
    first = await held_first_call(store, probe)
    a = asyncio.create_task(store.aput(DOCS, "a", {"v": 1}))
    b = asyncio.create_task(store.aput(DOCS, "b", {"v": 2}))
    await asyncio.sleep(0)
    probe.gate.set()
    await first
    probe.gate = asyncio.Event()  # hold the merged run
    await until(lambda: probe.calls["write"] >= 1)
    a.cancel()
    probe.gate.set()
    await b
    with pytest.raises(asyncio.CancelledError):
        await a
    assert (await store.aget(DOCS, "a")).value == {"v": 1}  # its write was under way: it landed


async def test_cancelling_the_call_that_runs_alone_hands_over_to_the_waiting_ones():
    probe = Probe()
    store = make_store(probe)
    first = await held_first_call(store, probe)
    waiting = asyncio.create_task(store.aput(NS, "w", {"v": 1}))
    await asyncio.sleep(0)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    probe.gate.set()
    await waiting
    assert (await store.aget(NS, "w")).value == {"v": 1}


async def test_a_cancelled_flush_cancels_its_calls_and_the_store_goes_on():
    probe = Probe()
    store = make_store(probe)
    first = await held_first_call(store, probe)
    waiting = [asyncio.create_task(store.aput(DOCS, f"w{i}", {"v": i})) for i in range(3)]
    await asyncio.sleep(0)
    probe.gate.set()
    await first
    probe.gate = asyncio.Event()
    await until(lambda: probe.calls["write"] >= 1)
    queue = store._coalescer._queue(asyncio.get_running_loop())
    later = asyncio.create_task(store.aget(DOCS, "w0"))  # waits behind the held run
    await asyncio.sleep(0)
    queue.task.cancel()
    results = await asyncio.gather(*waiting, later, return_exceptions=True)
    assert all(isinstance(r, asyncio.CancelledError) for r in results)
    probe.gate.set()
    assert await store.aget(NS, "nothing") is None  # not stuck
    assert not queue.busy and not queue.futures


# ---- event loops, threads, close ---------------------------------------------------------


def test_a_store_shared_by_event_loops_in_several_threads():
    probe = Probe()
    store = make_store(probe)
    errors: list[BaseException] = []

    async def burst(t: int) -> None:
        ns = ("memories", f"t{t}")
        await asyncio.gather(*(store.aput(ns, f"k{i}", {"v": i}) for i in range(200)))
        got = await asyncio.gather(*(store.aget(ns, f"k{i}") for i in range(200)))
        assert [item.value["v"] for item in got] == list(range(200))

    def worker(t: int) -> None:
        try:
            asyncio.run(burst(t))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    asyncio.run(burst(9))  # a new loop in this thread
    assert probe.calls["write"] < 5 * 200 / 10  # coalesced in every loop
    gc.collect()
    assert len(store._coalescer._queues) == 0  # finished loops leave nothing behind


async def test_aclose_lets_waiting_and_running_calls_finish_first():
    probe = Probe()
    store = make_store(probe)
    first = await held_first_call(store, probe)
    waiting = [asyncio.create_task(store.aput(NS, f"k{i}", {"v": i})) for i in range(10)]
    await asyncio.sleep(0)
    closing = asyncio.create_task(store.aclose())
    for _ in range(5):
        await asyncio.sleep(0)
    assert not closing.done()
    probe.gate.set()
    await closing
    await asyncio.gather(first, *waiting)
    assert probe.events == ["write", "close"]


@pytest.mark.parametrize("closing", ["close", "aclose"])
def test_close_from_another_thread_waits_for_a_loops_calls(closing):
    probe = Probe()
    store = make_store(probe)
    started = threading.Event()
    outcome: list[Any] = []

    async def main() -> None:
        first = await held_first_call(store, probe)
        waiting = [asyncio.create_task(store.aput(NS, f"k{i}", {"v": i})) for i in range(10)]
        asyncio.get_running_loop().call_later(0.2, probe.gate.set)
        started.set()
        outcome.extend(await asyncio.gather(first, *waiting, return_exceptions=True))

    thread = threading.Thread(target=asyncio.run, args=(main(),))
    thread.start()
    started.wait(5)
    if closing == "close":
        store.close()
    else:
        asyncio.run(store.aclose())  # another loop: waits for that one without blocking its own
    assert probe.events == ["write", "close"]
    thread.join()
    assert outcome == [None] * 11


# ---- the coalescer alone -----------------------------------------------------------------


async def test_runs_take_whole_calls_in_order_up_to_max_ops():
    seen: list[list[str]] = []

    async def run(ops):
        seen.append([op.key for op in ops])
        await asyncio.sleep(0)
        return [op.key for op in ops]

    coalescer = Coalescer(run, max_ops=4)
    sizes = [1, 2, 2, 3, 1, 5, 1]
    calls = [[GetOp(("ns",), f"c{c}o{o}") for o in range(size)] for c, size in enumerate(sizes)]
    results = await asyncio.gather(*(coalescer.submit(ops) for ops in calls))
    assert results == [[op.key for op in ops] for ops in calls]
    assert [len(run) for run in seen] == [1, 4, 4, 5, 1]  # a 5-op call runs alone
    assert [key for run in seen for key in run] == [op.key for ops in calls for op in ops]


async def test_a_call_writing_a_key_the_run_writes_waits_for_the_next_run():
    seen: list[list[str]] = []

    async def run(ops):
        seen.append([op.key for op in ops])
        await asyncio.sleep(0)
        return [None for _ in ops]

    coalescer = Coalescer(run)
    ns = ["ns"]  # a namespace given as a list is the same key
    calls = [
        [GetOp(("ns",), "a")],  # runs alone
        [PutOp(("ns",), "a", {"v": 1}), PutOp(("ns",), "a", {"v": 2})],  # one call: merged
        [PutOp(("ns",), "b", {"v": 1}), GetOp(("ns",), "c")],
        [PutOp(ns, "a", None)],  # type: ignore[arg-type]  # a again: waits
        [GetOp(("ns",), "a")],  # reads go on
        [PutOp(("other",), "a", {"v": 1})],  # another namespace's a
        [PutOp(("ns",), "b", {"v": 2})],  # b again: waits
        [PutOp(("ns",), "d", {"v": 1}), PutOp(("ns",), "a", {"v": 3})],  # a waits: so does d
        [PutOp(("ns",), "d", {"v": 2})],  # after the call above that waits
        [PutOp(("ns",), "e", {"v": 1})],
    ]
    await asyncio.gather(*(coalescer.submit(ops) for ops in calls))
    assert seen == [
        ["a"],
        ["a", "a", "b", "c", "a", "a", "e"],
        ["a", "b"],
        ["d", "a"],
        ["d"],
    ]


async def test_a_lone_call_runs_without_waiting_for_the_loop():
    store = make_store(MemoryBackend(InMemoryVectorStore(KeywordEmbeddings(16))))
    await store.aput(NS, "k", {"v": 1})
    assert asyncio.current_task() is not None
    runs = store._coalescer.runs
    assert (await store.aget(NS, "k")).value == {"v": 1}
    assert store._coalescer.runs == runs + 1


def test_max_ops_is_checked():
    with pytest.raises(ValueError, match="max_ops"):
        Coalescer(run_async, max_ops=0)  # type: ignore[arg-type]


async def test_asearches_made_during_a_run_still_share_the_next_run():
    """The first of concurrent ``asearch`` calls runs alone (without the batch planning);
    the others, made while it runs, wait and share one batch run and one embedding call."""
    probe = Probe()
    store = make_store(probe)
    await store.abatch([PutOp(NS, f"k{i}", {"text": f"note {i} about tea"}) for i in range(20)])
    probe.calls.clear()
    embeddings: KeywordEmbeddings = store.embeddings  # type: ignore[assignment]
    query_calls, document_calls = embeddings.query_calls, embeddings.document_calls
    runs = store._coalescer.runs
    found = await asyncio.gather(
        *(store.asearch(NS, query=f"note {i}", limit=3) for i in range(30))
    )
    assert store._coalescer.runs == runs + 2
    assert probe.calls == {"search": 30}
    # one query embedded alone, then the 29 others in one call
    assert (embeddings.query_calls - query_calls, embeddings.document_calls - document_calls) == (
        1,
        1,
    )
    one_by_one = [await store.asearch(NS, query=f"note {i}", limit=3) for i in range(30)]
    assert found == one_by_one
