"""The per-user search statement, before and after a change, interleaved in one run.

Minutes, not CI. Loads the search code of a git revision (``--before``, default ``main``)
beside the working tree's, builds one table through the backend, and times
``search(("memories", user), q, limit=5)`` both ways on the same pool (generic plans, as
the backend's own pools keep them), alternating which goes first, with the floor: one
prepared psycopg query over the same vectors (``WHERE ns_path`` range ``ORDER BY
embedding <#> $3 LIMIT 5``), on one connection as psycopg leaves it (Postgres re-plans
it for each call's values) and on one keeping its generic plan, as our pools do; the
ratios are to the faster of the two. Every answer is checked equal to the floor's.

Also ``LongTermMemoryStore.search`` over each: *store, before* runs the revision's
statement as ``main`` drove it (a cursor per call, the server's time zone, its own pool);
*store, after* is the working tree's store and backend. Query texts map to the same vectors
(``LookupEmbeddings``; the lookup's own time is subtracted). Client CPU (thread time) is
reported beside wall time.

Usage:
    python bench/postgres_per_user_statement.py                   # 1M facts, 100k users
    python bench/postgres_per_user_statement.py --facts 300000 --users 30000
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np
import psycopg
from _common import DIMS, LookupEmbeddings, clock, unit_rows, write_random_facts
from pgvector.psycopg import register_vector  # type: ignore[import-untyped]
from postgres_search import start_server, with_database

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.base import Hit, SearchRequest
from langchain_ltm.backends.postgres import _sql, postgres_backend
from langchain_ltm.backends.postgres.backend import PostgresBackend

K = 5
ROOT = Path(__file__).resolve().parent.parent


def load_revision(rev: str) -> types.ModuleType:
    """The search module as it is at ``rev`` (imports resolve to the working tree).

    ``_reads.py``; revisions before the split of ``_sql.py`` kept ``search`` there.
    """
    for name in ("_reads.py", "_sql.py"):
        shown = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:langchain_ltm/backends/postgres/{name}"],
            capture_output=True,
            text=True,
        )
        if shown.returncode == 0:
            break
    else:
        raise SystemExit(f"No Postgres search module at {rev}: {shown.stderr.strip()}")
    module = types.ModuleType(f"search_at_{rev}")
    sys.modules[module.__name__] = module  # dataclasses look their module up there
    exec(compile(shown.stdout, f"{rev}:{name}", "exec"), module.__dict__)
    return module


class _RevisionPath(PostgresBackend):
    """Searches with a revision's search module as ``main`` ran it: a fresh cursor per call."""

    old: types.ModuleType

    def search(self, request: SearchRequest) -> list[list[Hit]]:
        self._check_query(request)
        return self.connector.run(lambda: self.old.search(self.tables, request), "search")


def run(args: argparse.Namespace, url: str) -> int:
    old = load_revision(args.before)
    backend = postgres_backend(url, table="pu", dims=DIMS)
    rng = np.random.default_rng(5)
    t0 = time.perf_counter()
    write_random_facts(backend, rng, args.facts, args.users, "fact {n}")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE pu, pu_vectors")
    print(
        f"{args.facts:,} facts / {args.users:,} users, {DIMS}-d: "
        f"loaded in {time.perf_counter() - t0:.0f} s"
    )
    floor_conn = psycopg.connect(url, autocommit=True)
    register_vector(floor_conn)
    # the floor's query planned once, as a prepared statement under the generic plan our
    # pools keep; left to plan_cache_mode = auto, Postgres re-plans it on every call
    generic_conn = psycopg.connect(url, autocommit=True)
    register_vector(generic_conn)
    generic_conn.execute("SET plan_cache_mode = force_generic_plan")
    floor_sql = (
        "SELECT key, -(embedding <#> %s) FROM pu_vectors WHERE ns_path >= %s "
        "AND ns_path < %s ORDER BY embedding <#> %s LIMIT 5"
    )
    names = ("before", "after", "store, before", "store, after", "floor", "floor, generic plan")
    times: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    users = rng.integers(0, args.users, size=args.queries)
    queries = unit_rows(rng, args.queries)
    emb = LookupEmbeddings()
    texts = [f"query {i}" for i in range(args.queries)]
    emb.add(texts, queries)
    revision = postgres_backend(url, table="pu", dims=DIMS, setup=False)
    # main's pools: generic plans, timestamps in the server's zone
    revision.connector._SESSION_SETTINGS = "SET plan_cache_mode = force_generic_plan"
    old_path = _RevisionPath(revision.connector, table="pu", dims=DIMS)
    old_path.old = old
    store_before = LongTermMemoryStore(old_path, embeddings=emb)
    store_after = LongTermMemoryStore(backend, embeddings=emb)

    def before(request: SearchRequest) -> list[str]:
        (hits,) = backend.connector.run(lambda: old.search(backend.tables, request), "search")
        return [h.item.key for h in hits]

    def after(request: SearchRequest) -> list[str]:
        return [h.item.key for h in backend.search(request)[0]]

    def floor_keys(conn: psycopg.Connection, query: np.ndarray, low: str) -> list[str]:
        params = (query, low, low[:-1] + "/", query)
        return [r[0] for r in conn.execute(floor_sql, params, prepare=True).fetchall()]

    def store_keys(store: LongTermMemoryStore, ns: tuple[str, ...], text: str) -> list[str]:
        return [item.key for item in store.search(ns, query=text, limit=K)]

    def call(name: str, fn: Callable[[], list[str]]) -> list[str]:
        e0, c0, t = emb.spent_ns, time.thread_time_ns(), clock()
        keys = fn()
        spent = emb.spent_ns - e0
        times[name].append((clock() - t - spent) / 1e9)
        cpu[name].append((time.thread_time_ns() - c0 - spent) / 1e3)
        return keys

    for n in range(args.warmup + args.queries):
        i = n % args.queries
        ns = ("memories", f"user-{users[i]:06d}")
        request = SearchRequest(ns, queries[i][None, :], limit=K)
        low = _sql.ns_path(ns)
        runs: list[tuple[str, Callable[[], list[str]]]] = [
            ("before", partial(before, request)),
            ("after", partial(after, request)),
            ("store, before", partial(store_keys, store_before, ns, texts[i])),
            ("store, after", partial(store_keys, store_after, ns, texts[i])),
            ("floor", partial(floor_keys, floor_conn, queries[i], low)),
            ("floor, generic plan", partial(floor_keys, generic_conn, queries[i], low)),
        ]
        if n % 2:
            runs.reverse()
        got = {}
        for name, fn in runs:
            got[name] = call(name, fn)
        assert all(keys == got["floor"] for keys in got.values()), got
        if n + 1 == args.warmup:
            for values in (*times.values(), *cpu.values()):
                values.clear()

    print(f"\n{args.queries} per-user queries, interleaved; machine shared (2 cores, others)\n")
    print("| per-user search | p50 ms | p95 ms | vs floor p50 | client CPU p50 us |")
    print("|---|---:|---:|---:|---:|")
    # the ratios are to the faster of the two floors
    floor = min(statistics.median(times["floor"]), statistics.median(times["floor, generic plan"]))
    for name in names:
        values = np.asarray(times[name]) * 1e3
        print(
            f"| {name} | {np.percentile(values, 50):.3f} | {np.percentile(values, 95):.3f} "
            f"| {statistics.median(times[name]) / floor:.2f}x "
            f"| {statistics.median(cpu[name]):.0f} |"
        )
    for low, high in (("before", "after"), ("store, before", "store, after")):
        ratio = statistics.median(times[high]) / statistics.median(times[low])
        print(f"\n{high} / {low} p50: {ratio:.3f}")
    floor_conn.close()
    generic_conn.close()
    revision.close()
    backend.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=2_000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--before", default="main", help="git revision to compare with")
    args = parser.parse_args(argv)
    url, stop = start_server()
    try:
        return run(args, with_database(url, "ltm_per_user"))
    finally:
        stop()


if __name__ == "__main__":
    sys.exit(main())
