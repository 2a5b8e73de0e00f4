"""Bursts of concurrent async calls: ours (coalesced) vs LangGraph AsyncPostgresStore, one server.

A burst is N coroutines started at once with ``asyncio.gather`` on one event loop, each one
call: a third ``aput`` (``i % 3 == 0``; half overwrite a seeded item, half create one), a
third ``aget`` of a seeded item, a third ``asearch(namespace, limit=5)`` of a random user.
Before each burst the store holds 1,000 seeded items over 100 users (``("memories",
"user-NNN")``, 10 each) and has been warmed up by a 60-call burst (pool connections open,
statements prepared); every burst runs on a fresh table, after a ``gc.collect()``.

Two mixes:
- ``vector``: puts embed ``value["content"]``, every search has a query (one of 500
  phrasings), so searches are ranked by cosine;
- ``plain``: ``aput(..., index=False)`` and searches without a query (LangGraph's own
  ``test_large_batches_async`` is of this kind); identical searches repeat often.

Embeddings: ``LookupEmbeddings`` (bench/_common.py): 384-d precomputed random unit vectors
looked up by text, the same object for every store, called through LangChain's default
``aembed_*`` (the default executor) by every store alike.

Stores (pool sizes in the table):
- ours, Postgres: ``LongTermMemoryStore(postgres_backend(url, dims=384))``, the default pool
  (``max_size=10``); concurrent calls coalesced (``langchain_ltm._coalesce``);
- LangGraph ``AsyncPostgresStore.from_conn_string(url, pool_config={"min_size": 1,
  "max_size": 10}, index={"dims": 384, "embed": ..., "fields": ["content"]})`` (its default
  HNSW index; ``AsyncBatchedBaseStore``: a background task runs what is queued), on another
  database of the same server;
- "not coalesced": our store with ``abatch`` running every call on its own (the behaviour
  before coalescing);
- ours in memory (``InMemoryVectorStore``), Qdrant embedded (``:memory:``) and SQLite (a
  temporary file), coalesced and not.

Each (mix, N, store) burst runs ``--repeat`` times, interleaved with the other stores; the
table shows the run with the median wall time. Latency runs from the burst's start to the
call's end. ``errors`` counts raised calls and wrong answers (an ``aget`` of a seeded key
that is ``None``, an ``asearch`` without 5 hits). ``batch runs`` counts batch executions:
our ``_batch`` runs, LangGraph's ``abatch`` calls.

Usage:
    python bench/async_burst.py                  # both mixes, N = 1,000 and 10,000, 3 repeats
    python bench/async_burst.py --mixes plain --sizes 1000 --repeat 1 --only Postgres
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import shutil
import sys
import tempfile
import uuid
import warnings
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg
from _common import DIMS, LookupEmbeddings, clock, unit_rows
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.base import BaseStore, Op, PutOp, Result
from postgres_search import start_server, with_database

from langchain_ltm import LongTermMemoryStore
from langchain_ltm._steps import Logic, run_async
from langchain_ltm.backends.postgres import postgres_backend

USERS = 100
PER_USER = 10
POOL = 10
WARMUP = 60
LIMIT = 5


@dataclass
class Workload:
    names: list[tuple[str, ...]]
    seed: list[PutOp]
    texts: list[str]  # seeded texts, then new put texts
    queries: list[str]
    rng_seed: int

    def seed_ops(self, plain: bool) -> list[PutOp]:
        return (
            [PutOp(op.namespace, op.key, op.value, False) for op in self.seed]
            if plain
            else self.seed
        )

    def burst(self, n: int, tag: str, plain: bool = False) -> list[tuple[str, tuple[Any, ...]]]:
        """``n`` calls: (method, args), the same for every store; ``plain``: no vectors."""
        rng = np.random.default_rng(self.rng_seed + n)
        calls: list[tuple[str, tuple[Any, ...]]] = []
        seeded = len(self.seed)
        for i in range(n):
            kind = i % 3
            if kind == 0:
                j = int(rng.integers(seeded)) if i % 2 else None
                if j is None:
                    u, key = int(rng.integers(USERS)), f"new-{tag}-{i}"
                    text = self.texts[seeded + (i % (len(self.texts) - seeded))]
                else:
                    u, key, text = j // PER_USER, f"s{j}", self.texts[int(rng.integers(seeded))]
                value = {"content": text, "i": i}
                calls.append(("aput", (self.names[u], key, value, False if plain else None)))
            elif kind == 1:
                j = int(rng.integers(seeded))
                calls.append(("aget", (self.names[j // PER_USER], f"s{j}")))
            else:
                q = None if plain else self.queries[int(rng.integers(len(self.queries)))]
                calls.append(("asearch", (self.names[int(rng.integers(USERS))], q)))
        return calls


def make_workload(emb: LookupEmbeddings, seed: int) -> Workload:
    rng = np.random.default_rng(seed)
    names = [("memories", f"user-{u:03d}") for u in range(USERS)]
    n_seed = USERS * PER_USER
    texts = [f"fact {i}: something the user said" for i in range(n_seed + 2_000)]
    queries = [f"query {j}: what did the user say?" for j in range(500)]
    emb.add(texts, unit_rows(rng, len(texts)))
    emb.add(queries, unit_rows(rng, len(queries)))
    ops = [
        PutOp(names[j // PER_USER], f"s{j}", {"content": texts[j], "i": -1}) for j in range(n_seed)
    ]
    return Workload(names, ops, texts, queries, seed)


@dataclass
class Outcome:
    store: str
    mix: str
    n: int
    wall_s: float
    lat_ms: np.ndarray
    errors: int
    runs: int | None
    pool: str
    notes: list[str] = field(default_factory=list)


async def one_call(
    store: BaseStore, method: str, args: tuple[Any, ...], t0: int
) -> tuple[int, Any]:
    if method == "asearch":
        result: Any = await store.asearch(args[0], query=args[1], limit=LIMIT)
    else:
        result = await getattr(store, method)(*args)
    return clock() - t0, result


async def burst(
    store: BaseStore, calls: list[tuple[str, tuple[Any, ...]]]
) -> tuple[float, np.ndarray, int, list[str]]:
    t0 = clock()
    done = await asyncio.gather(
        *(one_call(store, m, a, t0) for m, a in calls), return_exceptions=True
    )
    wall = (clock() - t0) / 1e9
    lat, errors, kinds = [], 0, {}
    for (method, _), out in zip(calls, done, strict=True):
        if isinstance(out, BaseException):
            errors += 1
            kinds[type(out).__name__] = kinds.get(type(out).__name__, 0) + 1
            continue
        ns, result = out
        lat.append(ns)
        wrong = (method == "aget" and result is None) or (
            method == "asearch" and len(result) != LIMIT
        )
        if wrong:
            errors += 1
            kinds["wrong answer"] = kinds.get("wrong answer", 0) + 1
    notes = [f"{k}: {v}" for k, v in kinds.items()]
    return wall, np.asarray(lat, dtype=np.float64) / 1e6, errors, notes


# ---- the stores: each factory opens a fresh one, seeds and warms it


class Counting(LongTermMemoryStore):
    """Our store, counting its batch runs (coalesced calls share one)."""

    runs = 0

    def _batch(self, ops: Iterable[Op]) -> Logic[list[Result]]:
        self.runs += 1
        return (yield from super()._batch(ops))


class Uncoalesced(Counting):
    """Our store with ``abatch`` as it was before coalescing: every call runs on its own."""

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await run_async(self._batch(ops))


@dataclass
class Opened:
    store: BaseStore
    close: Callable[[], Awaitable[None]]
    runs: Callable[[], int]


Factory = Callable[[Workload, bool], Awaitable[Opened]]


async def seed_and_warm(store: BaseStore, wl: Workload, plain: bool) -> None:
    await store.abatch(wl.seed_ops(plain))
    await burst(store, wl.burst(WARMUP, "warm", plain))


def ours(kind: str, url: str, emb: LookupEmbeddings, cls: type[Counting]) -> Factory:
    async def make(wl: Workload, plain: bool) -> Opened:
        if kind == "postgres":
            table = f"b_{uuid.uuid4().hex[:10]}"
            backend: Any = postgres_backend(url, table=table, dims=DIMS, setup=False)
            await backend.asetup()
        elif kind == "qdrant":
            from langchain_ltm.backends.qdrant import qdrant_backend

            backend = qdrant_backend(":memory:", dims=DIMS)
        elif kind == "sqlite":
            from langchain_ltm.backends.sqlite import sqlite_backend

            folder = tempfile.mkdtemp(prefix="ltm-burst-")
            backend = sqlite_backend(os.path.join(folder, "burst.db"), dims=DIMS)
        else:
            backend = InMemoryVectorStore(emb)
        store = cls(backend, embeddings=emb, fields=["content"])
        await seed_and_warm(store, wl, plain)
        runs0 = store.runs

        async def close() -> None:
            if kind == "postgres":
                await backend.adrop()
            await store.aclose()
            if kind == "sqlite":
                shutil.rmtree(folder, ignore_errors=True)

        return Opened(store, close, lambda: store.runs - runs0)

    return make


def langgraph_postgres(url: str, emb: LookupEmbeddings) -> Factory:
    from langgraph.store.postgres import AsyncPostgresStore

    async def make(wl: Workload, plain: bool) -> Opened:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "DROP TABLE IF EXISTS store_vectors, store, store_migrations, vector_migrations"
            )
        index = None if plain else {"dims": DIMS, "embed": emb, "fields": ["content"]}
        cm = AsyncPostgresStore.from_conn_string(
            url,
            pool_config={"min_size": 1, "max_size": POOL},
            index=index,  # type: ignore[arg-type]
        )
        store = await cm.__aenter__()
        await store.setup()
        calls = [0]
        inner = store.abatch

        async def counted(ops: Iterable[Op]) -> list[Result]:
            calls[0] += 1
            return await inner(ops)

        store.abatch = counted  # type: ignore[method-assign]
        await seed_and_warm(store, wl, plain)
        runs0 = calls[0]

        async def close() -> None:
            await cm.__aexit__(None, None, None)

        return Opened(store, close, lambda: calls[0] - runs0)

    return make


def markdown(outcomes: Sequence[Outcome]) -> str:
    rows = [
        "| mix | store | pool | N | wall s | ops/s | p50 ms | p95 ms | errors | batch runs |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        p50, p95 = np.percentile(o.lat_ms, [50, 95]) if len(o.lat_ms) else (float("nan"),) * 2
        errors = f"{o.errors} ({', '.join(o.notes)})" if o.notes else f"{o.errors}"
        rows.append(
            f"| {o.mix} | {o.store} | {o.pool} | {o.n:,} | {o.wall_s:.2f} | "
            f"{o.n / o.wall_s:,.0f} | {p50:.0f} | {p95:.0f} | {errors} | {o.runs:,} |"
        )
    return "\n".join(rows)


async def run(args: argparse.Namespace, url: str) -> int:
    emb = LookupEmbeddings()
    wl = make_workload(emb, args.seed)
    ours_url = with_database(url, "ltm_burst_ours")
    lg_url = with_database(url, "ltm_burst_langgraph")
    with psycopg.connect(ours_url) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
    pool = f"{POOL}"
    stores: list[tuple[str, str, Factory]] = [
        ("ours, Postgres", pool, ours("postgres", ours_url, emb, Counting)),
        ("LangGraph AsyncPostgresStore", pool, langgraph_postgres(lg_url, emb)),
        ("ours, Postgres, not coalesced", pool, ours("postgres", ours_url, emb, Uncoalesced)),
        ("ours, memory", "-", ours("memory", "", emb, Counting)),
        ("ours, memory, not coalesced", "-", ours("memory", "", emb, Uncoalesced)),
        ("ours, Qdrant embedded", "-", ours("qdrant", "", emb, Counting)),
        ("ours, Qdrant embedded, not coalesced", "-", ours("qdrant", "", emb, Uncoalesced)),
        ("ours, SQLite", "-", ours("sqlite", "", emb, Counting)),
        ("ours, SQLite, not coalesced", "-", ours("sqlite", "", emb, Uncoalesced)),
    ]
    if args.only:
        stores = [s for s in stores if any(o in s[0] for o in args.only)]
    print(
        f"# async_burst: mixed aput/aget/asearch (1/3 each), {USERS * PER_USER:,} seeded items "
        f"over {USERS} users, {DIMS}-d LookupEmbeddings, median of {args.repeat}; PostgreSQL "
        f"{version}, python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load avg "
        f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())}",
        flush=True,
    )
    outcomes: list[Outcome] = []
    for mix in args.mixes:
        plain = mix == "plain"
        for n in args.sizes:
            per_store: dict[str, list[Outcome]] = {name: [] for name, _, _ in stores}
            for rep in range(args.repeat):
                for name, pool_size, factory in stores:
                    opened = await factory(wl, plain)
                    try:
                        gc.collect()  # every burst starts from a collected heap
                        wall, lat, errors, notes = await burst(
                            opened.store, wl.burst(n, f"r{rep}", plain)
                        )
                        outcome = Outcome(
                            name, mix, n, wall, lat, errors, opened.runs(), pool_size, notes
                        )
                        per_store[name].append(outcome)
                    finally:
                        await opened.close()
                    print(f"  {mix} {name} N={n:,} run {rep + 1}: {wall:.2f} s, {errors} errors")
            for name, _, _ in stores:
                by_wall = sorted(per_store[name], key=lambda o: o.wall_s)
                outcomes.append(by_wall[len(by_wall) // 2])
    print(f"\nload avg after: {'/'.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    print(markdown(outcomes))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument(
        "--mixes", nargs="+", choices=["vector", "plain"], default=["vector", "plain"]
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", nargs="*", help="run the stores whose name contains one of these")
    parser.add_argument("--url", help="use this server (its databases ltm_burst_* are replaced)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        url, stop = (args.url, lambda: None) if args.url else start_server()
    try:
        return asyncio.run(run(args, url))
    finally:
        stop()


if __name__ == "__main__":
    sys.exit(main())
