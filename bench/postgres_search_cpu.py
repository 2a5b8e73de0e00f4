"""Client CPU of one Postgres per-user search: the floor, the backend and the store, interleaved.

Minutes, not CI. Loads ``--facts`` facts over ``--users`` users through the backend (384-d
unit vectors, ``--reuse`` keeps a table already loaded), then runs one worker process per
``--code DIR`` (that checkout's ``langchain_ltm`` first on ``PYTHONPATH``; the first is
"before"), handing them the same queries in chunks, in turn, so load drifts hit every
checkout alike. In each worker every query is timed, interleaved (the order reversed every
other query): the floor (one prepared psycopg query over the same vectors, generic plan,
``key`` and score of the best 5, sync and async), ``backend.search`` / ``asearch``
(``SearchRequest`` with the query vector), and ``LongTermMemoryStore.search`` / ``asearch``
(``limit=5``, query texts mapped to the same vectors by ``LookupEmbeddings``, whose own time
is subtracted). Wall time and the thread's CPU time (``time.thread_time_ns``) per call;
every answer is checked equal to the floor's.

``--profile`` instead runs ``store.search`` (or ``--profile-what astore``, ``backend``,
``abackend``) under cProfile in this process, on this checkout, and prints the top
functions. ``--compact`` runs ``backend.compact()`` after the load, as
``bench/postgres_scale.py --compact`` measures.

Usage:
    python bench/postgres_search_cpu.py --code /path/to/main --code .   # 100k facts, 10k users
    python bench/postgres_search_cpu.py --facts 1000000 --users 100000 --compact --code ...
    python bench/postgres_search_cpu.py --profile                # or --profile-what abackend
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import numpy as np
import psycopg
from _common import DIMS, LookupEmbeddings, unit_rows, write_random_facts

K = 5
TABLE = "cpu"
HERE = Path(__file__).resolve().parent
NAMES = (
    "floor",
    "backend.search",
    "store.search",
    "floor, async",
    "backend.asearch",
    "store.asearch",
)
FLOOR_SQL = (
    f"SELECT key, -(embedding <#> %s) FROM {TABLE}_vectors WHERE ns_path >= %s "
    "AND ns_path < %s ORDER BY embedding <#> %s LIMIT 5"
)


class AsyncLookupEmbeddings(LookupEmbeddings):
    """``LookupEmbeddings`` with native async methods, as an async embedding client has.

    LangChain's default ``aembed_query`` runs ``embed_query`` in a thread pool: a thread
    hop per search that is the benchmark's, not the store's.
    """

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)


def queries(args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    return rng.integers(0, args.users, size=args.queries), unit_rows(rng, args.queries)


def load(url: str, args: argparse.Namespace) -> None:
    from langchain_ltm.backends.postgres import postgres_backend

    with psycopg.connect(url, autocommit=True) as conn:
        (have,) = conn.execute(
            "SELECT count(*) FROM pg_class WHERE relname = %s", (f"{TABLE}_vectors",)
        ).fetchone()  # type: ignore[misc]
        if have and args.reuse:
            return
        conn.execute(f"DROP TABLE IF EXISTS {TABLE}_vectors, {TABLE}, {TABLE}_schema")
    backend = postgres_backend(url, table=TABLE, dims=DIMS)
    rng = np.random.default_rng(5)
    t0 = time.perf_counter()
    write_random_facts(backend, rng, args.facts, args.users, "fact {n}: something the user told us")
    print(f"loaded {args.facts:,} facts / {args.users:,} users in {time.perf_counter() - t0:.0f} s")
    if args.compact:
        t0 = time.perf_counter()
        backend.compact()
        print(f"compact() in {time.perf_counter() - t0:.1f} s")
    backend.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"VACUUM ANALYZE {TABLE}, {TABLE}_vectors")


class Worker:
    """One checkout's searches, timed per call (run in a subprocess by :func:`main`)."""

    def __init__(self, url: str, args: argparse.Namespace) -> None:
        from pgvector.psycopg import register_vector, register_vector_async

        from langchain_ltm import LongTermMemoryStore
        from langchain_ltm.backends.postgres import postgres_backend

        self.users, self.vecs = queries(args)
        self.texts = [f"query {i}" for i in range(len(self.vecs))]
        self.emb = AsyncLookupEmbeddings()
        self.emb.add(self.texts, self.vecs)
        self.backend = postgres_backend(url, table=TABLE, dims=DIMS, setup=False)
        self.store = LongTermMemoryStore(self.backend, embeddings=self.emb)
        self.loop = asyncio.new_event_loop()
        self.floor_conn = psycopg.connect(url, autocommit=True)
        register_vector(self.floor_conn)
        self.floor_conn.execute("SET plan_cache_mode = force_generic_plan")

        async def aconnect() -> psycopg.AsyncConnection:
            conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
            await register_vector_async(conn)
            await conn.execute("SET plan_cache_mode = force_generic_plan")
            return conn

        self.afloor_conn = self.loop.run_until_complete(aconnect())
        self.times: dict[str, list[tuple[int, int]]] = {name: [] for name in NAMES}

    def chunk(self, start: int, end: int) -> None:
        self.loop.run_until_complete(self._chunk(start, end))

    async def _chunk(self, start: int, end: int) -> None:
        from langchain_ltm.backends.base import SearchRequest

        for i in range(start, end):
            ns = ("memories", f"user-{self.users[i]:06d}")
            vec, text = self.vecs[i], self.texts[i]
            low = f"memories.user-{self.users[i]:06d}."
            params = (vec, low, low[:-1] + "/", vec)
            request = SearchRequest(ns, vec[None, :], limit=K)

            def floor(params: tuple = params) -> list[str]:
                return [r[0] for r in self.floor_conn.execute(FLOOR_SQL, params, prepare=True)]

            async def afloor(params: tuple = params) -> list[str]:
                cur = await self.afloor_conn.execute(FLOOR_SQL, params, prepare=True)
                return [r[0] for r in await cur.fetchall()]

            def backend(request: SearchRequest = request) -> list[str]:
                return [h.item.key for h in self.backend.search(request)[0]]

            async def abackend(request: SearchRequest = request) -> list[str]:
                return [h.item.key for h in (await self.backend.asearch(request))[0]]

            def store(ns: tuple = ns, text: str = text) -> list[str]:
                return [item.key for item in self.store.search(ns, query=text, limit=K)]

            async def astore(ns: tuple = ns, text: str = text) -> list[str]:
                return [item.key for item in await self.store.asearch(ns, query=text, limit=K)]

            runs: list[tuple[str, Callable[[], list[str]] | Callable[[], Awaitable[list[str]]]]]
            runs = list(zip(NAMES, (floor, backend, store, afloor, abackend, astore), strict=True))
            if i % 2:
                runs.reverse()
            got = {}
            for name, fn in runs:
                e0, c0, t0 = self.emb.spent_ns, time.thread_time_ns(), time.perf_counter_ns()
                out = fn()
                if asyncio.iscoroutine(out):
                    out = await out
                t1, c1 = time.perf_counter_ns(), time.thread_time_ns()
                spent = self.emb.spent_ns - e0
                self.times[name].append((t1 - t0 - spent, c1 - c0 - spent))
                got[name] = out
            assert all(keys == got["floor"] for keys in got.values()), got

    def serve(self) -> None:
        for line in sys.stdin:
            words = line.split()
            if words[0] == "run":
                self.chunk(int(words[1]), int(words[2]))
                print("ok", flush=True)
            elif words[0] == "clear":
                for values in self.times.values():
                    values.clear()
                print("ok", flush=True)
            else:
                print(json.dumps(self.times), flush=True)
                return


def profile(url: str, args: argparse.Namespace) -> None:
    from langchain_ltm.backends.base import SearchRequest

    worker = Worker(url, args)
    store, backend = worker.store, worker.backend
    calls = []
    for i in range(args.queries):
        ns = ("memories", f"user-{worker.users[i]:06d}")
        if args.profile_what == "backend":
            request = SearchRequest(ns, worker.vecs[i][None, :], limit=K)
            calls.append(lambda request=request: backend.search(request))
        elif args.profile_what == "abackend":
            request = SearchRequest(ns, worker.vecs[i][None, :], limit=K)

            async def one(request: SearchRequest = request) -> object:
                return await backend.asearch(request)

            calls.append(lambda one=one: worker.loop.run_until_complete(one()))
        elif args.profile_what == "astore":

            async def each(ns: tuple = ns, text: str = worker.texts[i]) -> object:
                return await store.asearch(ns, query=text, limit=K)

            calls.append(lambda each=each: worker.loop.run_until_complete(each()))
        else:
            calls.append(lambda ns=ns, text=worker.texts[i]: store.search(ns, query=text, limit=K))
    for call in calls[: args.warmup]:
        call()
    prof = cProfile.Profile(time.thread_time_ns, 1e-9)  # CPU, not the server's time
    c0 = time.thread_time_ns()
    prof.enable()
    for call in calls:
        call()
    prof.disable()
    print(f"{(time.thread_time_ns() - c0) / len(calls) / 1e3:.0f} us CPU per call (profiled)")
    stats = pstats.Stats(prof)
    stats.sort_stats(args.sort).print_stats(args.top)


def run(url: str, args: argparse.Namespace) -> int:
    load(url, args)
    workers = []
    for code in args.code:
        env = {**os.environ, "PYTHONPATH": os.path.abspath(code)}
        cmd = [sys.executable, __file__, "--worker", url, *sys.argv[1:]]
        workers.append(
            subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        )

    def say(worker: subprocess.Popen, line: str) -> str:
        assert worker.stdin is not None
        assert worker.stdout is not None
        worker.stdin.write(line + "\n")
        worker.stdin.flush()
        return worker.stdout.readline()

    order = list(range(len(workers)))
    for start in range(0, args.warmup, args.chunk):
        for w in order:
            assert say(workers[w], f"run {start} {min(start + args.chunk, args.warmup)}")
    for w in order:
        say(workers[w], "clear")
    for n, start in enumerate(range(0, args.queries, args.chunk)):
        for w in order if n % 2 == 0 else order[::-1]:
            assert say(workers[w], f"run {start} {min(start + args.chunk, args.queries)}")
    results = [json.loads(say(w, "done")) for w in workers]
    for w in workers:
        w.wait()
    print(
        f"\n{args.facts:,} facts / {args.users:,} users, {args.queries} per-user queries "
        f"(limit {K}), interleaved; load {os.getloadavg()[0]:.1f}\n"
    )
    print("| checkout | call | p50 ms | p95 ms | vs floor | client CPU p50 us | vs floor |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for code, res in zip(args.code, results, strict=True):
        for name in NAMES:
            wall = np.asarray([t for t, _ in res[name]]) / 1e6
            cpu = np.asarray([c for _, c in res[name]]) / 1e3
            floor_name = "floor, async" if "async" in name or "asearch" in name else "floor"
            fwall = statistics.median(t for t, _ in res[floor_name]) / 1e6
            fcpu = statistics.median(c for _, c in res[floor_name]) / 1e3
            print(
                f"| {code} | {name} | {np.percentile(wall, 50):.3f} | "
                f"{np.percentile(wall, 95):.3f} | {np.median(wall) / fwall:.2f}x | "
                f"{np.median(cpu):.0f} | {np.median(cpu) / fcpu:.2f}x |"
            )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=3_000)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--chunk", type=int, default=250, help="queries per turn of a worker")
    parser.add_argument("--code", action="append", default=[], help="a checkout (repeat)")
    parser.add_argument("--url", help="a running server (default: start one)")
    parser.add_argument("--reuse", action="store_true", help="keep a table already loaded")
    parser.add_argument("--compact", action="store_true", help="backend.compact() after loading")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--profile-what", default="store", choices=("store", "astore", "backend", "abackend")
    )
    parser.add_argument("--sort", default="tottime")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        Worker(args.worker, args).serve()
        return 0
    if not args.code:
        args.code = ["."]
    stop = None
    url = args.url
    if url is None:
        from postgres_search import start_server, with_database

        server, stop = start_server()
        url = with_database(server, "ltm_search_cpu")
    try:
        if args.profile:
            load(url, args)
            profile(url, args)
            return 0
        return run(url, args)
    finally:
        if stop is not None:
            stop()


if __name__ == "__main__":
    sys.exit(main())
