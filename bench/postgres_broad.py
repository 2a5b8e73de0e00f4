"""Broad-scope search on Postgres: the HNSW iterative scan beside the exact scan, one run.

Minutes, not CI. One table of facts spread over many users, an HNSW index (cosine, as
``PostgresBackend.create_hnsw_index`` makes it), ``VACUUM ANALYZE``; then, interleaved per
query on the same server:

- broad, exact: ``backend.search(("memories",), q, limit=10)`` with ``broad_min_rows=None``
  (every vector in scope scored: the exact answers recall is measured against);
- broad, index: the same search with the default ``broad_min_rows`` (iterative scan), at
  the default ``ef_search`` and any given with ``--ef``; with ``--calibrate``, also at the
  value ``backend.calibrate_broad_search()`` chose after the build (stored vectors as its
  queries, so the bench's queries, noisy copies, are unseen by it);
- broad, rare filter (1 fact in 1,000) through the default backend, checked against the
  exact answers with the same filter;
- per-user search through both backends (the per-user plan must not change).

Vectors are clustered like sentence embeddings (topics plus noise, unit rows), queries are
noisy copies of stored facts; a uniform random 384-d cloud is HNSW's worst case and is
reported with ``--uniform``.

Usage:
    python bench/postgres_broad.py                     # 300k facts, 30k users
    python bench/postgres_broad.py --facts 1000000 --users 100000
    python bench/postgres_broad.py --quick             # 30k facts
    python bench/postgres_broad.py --facts 1000000 --users 100000 --calibrate --url URL
    python bench/postgres_broad.py ... --reuse --url URL  # that table and index again
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np
import psycopg
from _common import DIMS, clock
from postgres_search import start_server, with_database

from langchain_ltm._filters import compile_filter
from langchain_ltm.backends.base import Record, SearchRequest
from langchain_ltm.backends.postgres import _broad, postgres_backend
from langchain_ltm.errors import RecallTargetError

K = 10
RARE_EVERY = 1_000
TARGET_RECALL = 0.95
TARGET_P50_MS = 20.0
_Search = tuple[str, Any, tuple[str, ...], Any]  # row name, backend, prefix, filter


def make_vectors(rng: np.random.Generator, n: int, centers: np.ndarray | None) -> np.ndarray:
    if centers is None:
        v = rng.standard_normal((n, DIMS), dtype=np.float32)
    else:
        v = centers[rng.integers(0, len(centers), n)] + 0.35 * rng.standard_normal(
            (n, DIMS), dtype=np.float32
        ) / np.sqrt(DIMS)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v.astype(np.float32)


def p(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1e3, q))


def run(args: argparse.Namespace, url: str) -> int:
    rng = np.random.default_rng(11)
    centers = None if args.uniform else make_vectors(rng, 2_000, None)
    vectors = np.empty((args.facts, DIMS), dtype=np.float32)
    owner = rng.integers(0, args.users, size=args.facts)
    exact = postgres_backend(url, table="broad", dims=DIMS)
    index = postgres_backend(url, table="broad", dims=DIMS)
    exact.broad_min_rows = None
    if args.min_rows is not None:
        index.broad_min_rows = args.min_rows
    now = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    for start in range(0, args.facts, 1_000):
        chunk = make_vectors(rng, min(1_000, args.facts - start), centers)
        vectors[start : start + len(chunk)] = chunk
        if args.reuse:
            continue
        exact.write(
            [
                Record(
                    ("memories", f"user-{owner[n]:06d}"),
                    f"f{n}",
                    {"content": f"fact {n}", "rare": n % RARE_EVERY == 0},
                    ("fact",),
                    ("content",),
                    chunk[n - start][None, :],
                    now,
                )
                for n in range(start, start + len(chunk))
            ],
            [],
        )
    ingest = time.perf_counter() - t0
    if args.reuse:
        print(f"reusing the table and index of {url} (same seed: same rows)")
    t0 = time.perf_counter()
    if not args.reuse:
        with psycopg.connect(url, autocommit=True) as conn:
            # the graph of 1M 384-d vectors needs ~2.5 GB; a build that outgrows
            # maintenance_work_mem slows down many times (pgvector warns, then writes
            # pages). For the build only: the server's own setting is put back after it
            conn.execute(f"ALTER SYSTEM SET maintenance_work_mem = '{args.build_memory}'")
            conn.execute("SELECT pg_reload_conf()")
        try:
            exact.create_hnsw_index(m=args.m, ef_construction=args.ef_construction)
        finally:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("ALTER SYSTEM RESET maintenance_work_mem")
                conn.execute("SELECT pg_reload_conf()")
    build = time.perf_counter() - t0
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE broad, broad_vectors")
    calibrated = None
    if args.calibrate:
        t0 = time.perf_counter()
        try:
            calibrated = index.calibrate_broad_search(target_recall=TARGET_RECALL)
        except RecallTargetError as exc:
            print(f"calibration: {exc}")
            calibrated = exc.calibration
        print(
            f"calibration ({calibrated.queries} stored vectors moved off the graph as queries, "
            f"{time.perf_counter() - t0:.0f} s, exact p50 {calibrated.exact_p50_ms:.0f} ms): "
            f"ef_search={calibrated.ef_search}; steps "
            + ", ".join(
                f"{s.ef_search}: {s.recall:.3f} ±{s.stderr:.3f} (min {s.min_recall:.2f}, "
                f"{s.p50_ms:.1f} ms)"
                for s in calibrated.steps
            )
        )
    built = (
        "reused (no ingest, no build)"
        if args.reuse
        else f"ingest {ingest:.0f} s, HNSW (m={args.m}, ef_construction={args.ef_construction}) "
        f"build {build:.0f} s"
    )
    print(
        f"{args.facts:,} facts / {args.users:,} users, {DIMS}-d "
        f"{'uniform' if args.uniform else 'clustered'}: {built}"
    )

    rare = compile_filter({"rare": True})
    picks = rng.integers(0, args.facts, size=args.queries)
    queries = vectors[picks] + 0.3 * rng.standard_normal(
        (args.queries, DIMS), dtype=np.float32
    ) / np.sqrt(DIMS)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    times: dict[str, list[float]] = {}
    recall: dict[int, list[float]] = {}
    default = _broad.EF_SEARCH
    efs = sorted({default, *args.ef})
    calibrated_name = (
        f"broad, index, calibrated ef_search={calibrated.ef_search}"
        if calibrated and calibrated.reached
        else None
    )
    rare_ok = 0

    def timed(name: str, call: Callable[[], list[str]]) -> list[str]:
        t = clock()
        keys = call()
        times.setdefault(name, []).append((clock() - t) / 1e9)
        return keys

    def keys_of(backend, prefix, query, flt=()) -> Callable[[], list[str]]:  # type: ignore[no-untyped-def]
        request = SearchRequest(prefix, query[None, :], flt, K, 0)
        return lambda: [h.item.key for h in backend.search(request)[0]]

    for _ in range(2):  # warm both plans and the stats cache
        keys_of(exact, ("memories",), queries[0])()
        keys_of(index, ("memories",), queries[0])()

    def searches(n: int) -> list[_Search]:
        user = ("memories", f"user-{owner[picks[n]]:06d}")
        pairs = [
            ("broad, exact", exact, ("memories",), ()),
            *[(f"broad, index, ef_search={ef}", index, ("memories",), ()) for ef in efs],
            *([(calibrated_name, index, ("memories",), ())] if calibrated_name else []),
            ("broad rare, exact", exact, ("memories",), rare),
            ("broad rare, index", index, ("memories",), rare),
            ("per-user, exact backend", exact, user, ()),
            ("per-user, default backend", index, user, ()),
        ]
        return pairs[::-1] if n % 2 else pairs

    def run_searches(n: int, pairs: list[_Search]) -> None:
        got = answers.setdefault(n, {})
        for name, backend, prefix, flt in pairs:
            explicit = "ef_search=" in name and name != calibrated_name
            # the calibrated row and the non-walk rows search as the backend's default does
            index.broad_ef_search = int(name.rsplit("=", 1)[1]) if explicit else None
            got[name] = timed(name, keys_of(backend, prefix, query_of[n], flt))
        index.broad_ef_search = None

    # --apart: every exact broad scan first, then the rest with no full scan between two
    # walks (a server answering broad searches from the index does not also scan the table)
    scans = {"broad, exact", "broad rare, exact"}
    answers: dict[int, dict[str, list[str]]] = {}
    query_of = list(queries)
    for phase in ("scans", "rest") if args.apart else ("all",):
        for n in range(len(queries)):
            pairs = searches(n)
            if phase == "scans":
                pairs = [pair for pair in pairs if pair[0] in scans]
            elif phase == "rest":
                pairs = [pair for pair in pairs if pair[0] not in scans]
            run_searches(n, pairs)
    for n in range(len(queries)):
        got = answers[n]
        truth = set(got["broad, exact"])
        for ef in efs:
            recall.setdefault(ef, []).append(
                len(truth & set(got[f"broad, index, ef_search={ef}"])) / K
            )
        if calibrated_name:
            recall.setdefault(-1, []).append(len(truth & set(got[calibrated_name])) / K)
        rare_ok += got["broad rare, index"] == got["broad rare, exact"]
        assert got["per-user, exact backend"] == got["per-user, default backend"]

    order = (
        "exact scans first, then the walks and per-user searches interleaved"
        if args.apart
        else "interleaved"
    )
    print(f"\n{args.queries} queries, {order}; machine shared (2 cores, other agents)\n")
    print("| search | p50 ms | p95 ms | vs broad exact p50 |")
    print("|---|---:|---:|---:|")
    base = statistics.median(times["broad, exact"])
    for name, values in times.items():
        ratio = statistics.median(values) / base
        print(f"| {name} | {p(values, 50):.2f} | {p(values, 95):.2f} | {ratio:.3f}x |")
    print(f"\nrare filter (1 in {RARE_EVERY:,}): {rare_ok}/{args.queries} equal to exact")
    for ef in [*efs, *([-1] if calibrated_name else [])]:
        mean_recall = float(np.mean(recall[ef]))
        name = calibrated_name if ef == -1 else f"broad, index, ef_search={ef}"
        p50 = p(times[name], 50)
        print(
            f"{name.removeprefix('broad, index, ')}: recall@{K} vs exact mean {mean_recall:.3f}, "
            f"min {min(recall[ef]):.2f}; targets: recall >= {TARGET_RECALL} "
            f"{'ok' if mean_recall >= TARGET_RECALL else 'MISSED'}, p50 <= {TARGET_P50_MS:g} ms "
            f"{'ok' if p50 <= TARGET_P50_MS else 'MISSED'}"
        )
    exact.close()
    index.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=300_000)
    parser.add_argument("--users", type=int, default=30_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--uniform", action="store_true", help="uniform random vectors")
    parser.add_argument("--quick", action="store_true", help="30k facts, 3k users")
    parser.add_argument(
        "--ef", type=int, nargs="*", default=[], help="more ef_search values to compare"
    )
    parser.add_argument("--min-rows", type=int, help="broad_min_rows of the index backend")
    parser.add_argument("--m", type=int, default=16, help="HNSW m (create_hnsw_index)")
    parser.add_argument("--ef-construction", type=int, default=128, help="HNSW ef_construction")
    parser.add_argument(
        "--build-memory", default="4GB", help="maintenance_work_mem for the HNSW build"
    )
    parser.add_argument("--url", help="an existing server (default: start pgserver)")
    parser.add_argument(
        "--calibrate",
        action="store_true",
        help="run backend.calibrate_broad_search() after the build; its value is the default",
    )
    parser.add_argument(
        "--apart",
        action="store_true",
        help="time the exact broad scans in a phase of their own, before the walks",
    )
    parser.add_argument(
        "--reuse", action="store_true", help="--url's table and index are there: no ingest/build"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.facts, args.users, args.queries = 30_000, 3_000, 30
    if args.url:
        return run(args, args.url)
    url, stop = start_server()
    try:
        return run(args, with_database(url, "ltm_broad"))
    finally:
        stop()


if __name__ == "__main__":
    sys.exit(main())
