"""Postgres near the limit: ingest and per-user search at 1M facts / 100k users, beside floors.

Minutes, not CI. Same run, same server, interleaved, so the ratios hold on a busy machine:

- ingest, ours: ``LongTermMemoryStore(postgres_backend(url)).batch`` of 1,000 ``PutOp``s
  with precomputed vectors (embedding time subtracted), as a new user would load facts;
- ingest, floor: one binary ``COPY`` per 1,000 of the same rows (ns, key, value, vector)
  into a bare table with no index, each committed; its btree on ``ns`` is built after;
- per-user search, ours: ``store.search(ns, query=q, limit=5)``;
- per-user search, floor: one prepared psycopg query over the bare table,
  ``WHERE ns = $1 ORDER BY embedding <=> $2 LIMIT 5`` (btree on ns), on a connection as
  psycopg leaves it and on one keeping the generic plan (as our pools do); ratios are to
  the faster of the two;
- sizes per fact: table, TOAST and indexes of both tables, and the WAL each wrote
  (``pg_current_wal_lsn`` around every batch), then 10M projected from them.

Each fact belongs to a random user, so a user's rows are spread over the table as when
facts arrive over time. Vectors are random 384-d unit rows made batch by batch from the
seed, so 1M rows never sit in memory at once.

Usage:
    python bench/postgres_scale.py                      # 1M facts, 100k users
    python bench/postgres_scale.py --facts 200000 --users 20000
    python bench/postgres_scale.py --quick              # 20k facts, 2k users
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg
from _common import DIMS, LookupEmbeddings, clock, unit_rows
from langgraph.store.base import PutOp
from pgvector.psycopg import register_vector  # type: ignore[import-untyped]
from postgres_search import start_server, with_database
from psycopg.types.json import Jsonb

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.postgres import postgres_backend

BATCH = 1_000
K = 5
TARGET_INGEST = 25_000
TARGET_P50_MS = 1.0
TARGET_VS_FLOOR = 1.5


def batch_rows(seed: int, start: int, count: int, users: int) -> tuple[np.ndarray, np.ndarray]:
    """The vectors and owners of facts ``start .. start + count`` (same for both stores)."""
    rng = np.random.default_rng((seed, start))
    return unit_rows(rng, count), rng.integers(0, users, size=count)


def user_ns(u: int) -> tuple[str, str]:
    return ("memories", f"user-{u:06d}")


def text_of(i: int) -> str:
    return f"fact {i}: something the user told us"


def wal_lsn(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')").fetchone()
    return int(row[0]) if row else 0


def sizes(conn: psycopg.Connection, table: str) -> tuple[int, int]:
    """(heap + TOAST bytes, index bytes) of ``table``."""
    row = conn.execute(
        "SELECT pg_table_size(%s::regclass), pg_indexes_size(%s::regclass)", (table, table)
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


class Searches:
    """Per-user searches, ours and the floor's, interleaved query by query; run per phase."""

    FLOOR_SQL = "SELECT key FROM floor WHERE ns = %s ORDER BY embedding <=> %s LIMIT 5"

    def __init__(
        self,
        warmup: int,
        store: LongTermMemoryStore,
        emb: LookupEmbeddings,
        floor: psycopg.Connection[Any],
        generic: psycopg.Connection[Any],
        queries: np.ndarray,
        qusers: np.ndarray,
        qtexts: list[str],
    ) -> None:
        self.warmup, self.store, self.emb = warmup, store, emb
        self.floor, self.generic = floor, generic
        self.queries, self.qusers, self.qtexts = queries, qusers, qtexts

    def run(self) -> tuple[list[int], list[int], list[int], int]:
        """Latencies (ns) of ours, the floor, the generic-plan floor; answers equal to it."""
        cur = self.floor.cursor(binary=True)
        gcur = self.generic.cursor(binary=True)
        ours_lat: list[int] = []
        floor_lat: list[int] = []
        generic_lat: list[int] = []
        agree = 0
        for j in range(len(self.queries)):
            user = int(self.qusers[j])
            ns = user_ns(user)
            params = (f"memories.user-{user:06d}.", self.queries[j])
            e0, t0 = self.emb.spent_ns, clock()
            mine = [it.key for it in self.store.search(ns, query=self.qtexts[j], limit=K)]
            t1 = clock()
            floors = [(cur, floor_lat), (gcur, generic_lat)]
            for fcur, lat in floors if j % 2 else floors[::-1]:
                f0 = clock()
                fcur.execute(self.FLOOR_SQL, params, prepare=True)
                theirs = [row[0] for row in fcur.fetchall()]
                if j >= self.warmup:
                    lat.append(clock() - f0)
            if j >= self.warmup:
                ours_lat.append(t1 - t0 - (self.emb.spent_ns - e0))
                agree += mine == theirs
        gcur.close()
        cur.close()
        return ours_lat, floor_lat, generic_lat, agree


def run(args: argparse.Namespace, url: str) -> int:
    n, users = args.facts, args.users
    conninfo = with_database(url, "ltm_bench_scale")
    probe = psycopg.connect(conninfo, autocommit=True)
    version = probe.execute("SHOW server_version").fetchone()
    print(
        f"# postgres_scale: {n:,} facts, {users:,} users ({n / users:.0f}/user), {DIMS}-d, "
        f"batches of {BATCH:,}; PostgreSQL {version[0] if version else '?'}, "
        f"{os.cpu_count()} CPUs, load avg {'/'.join(f'{x:.1f}' for x in os.getloadavg())}",
        flush=True,
    )
    emb = LookupEmbeddings()
    backend = postgres_backend(conninfo, table="facts", dims=DIMS)
    store = LongTermMemoryStore(backend, embeddings=emb, fields=["content"])
    floor = psycopg.connect(conninfo)
    register_vector(floor)
    floor.execute(
        f'CREATE TABLE floor (ns text COLLATE "C" NOT NULL, key text NOT NULL, '
        f"value jsonb NOT NULL, embedding vector({DIMS}) NOT NULL)"
    )
    floor.commit()

    # ---- ingest, interleaved batch by batch
    ours_ns = floor_ns = ours_wal = floor_wal = 0
    report_every = max(1, (n // BATCH) // 10)
    for b, start in enumerate(range(0, n, BATCH)):
        count = min(BATCH, n - start)
        vecs, owners = batch_rows(args.seed, start, count, users)
        texts = [text_of(start + i) for i in range(count)]
        emb.rows.clear()
        emb.add(texts, vecs)
        ops = [
            PutOp(user_ns(int(owners[i])), f"f{start + i}", {"content": texts[i]})
            for i in range(count)
        ]
        gc.collect()
        w0 = wal_lsn(probe)
        e0, t0 = emb.spent_ns, clock()
        store.batch(ops)
        ours_ns += clock() - t0 - (emb.spent_ns - e0)
        w1 = wal_lsn(probe)
        t0 = clock()
        with floor.cursor().copy("COPY floor FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["text", "text", "jsonb", "vector"])
            for i in range(count):
                copy.write_row(
                    (
                        f"memories.user-{int(owners[i]):06d}.",
                        f"f{start + i}",
                        Jsonb({"content": texts[i]}),
                        vecs[i],
                    )
                )
        floor.commit()
        floor_ns += clock() - t0
        w2 = wal_lsn(probe)
        ours_wal += w1 - w0
        floor_wal += w2 - w1
        if (b + 1) % report_every == 0:
            done = start + count
            print(
                f"  {done:,} facts: ours {done / (ours_ns / 1e9):,.0f}/s, "
                f"COPY {done / (floor_ns / 1e9):,.0f}/s",
                flush=True,
            )
    ours_rate, floor_rate = n / (ours_ns / 1e9), n / (floor_ns / 1e9)
    t0 = clock()
    floor.execute('CREATE INDEX floor_ns ON floor (ns COLLATE "C")')
    floor.commit()
    btree_s = (clock() - t0) / 1e9
    floor.autocommit = True
    for table in ("facts", "facts_vectors", "floor"):
        floor.execute(f"VACUUM ANALYZE {table}")
    items_t, items_i = sizes(probe, "facts")
    vec_t, vec_i = sizes(probe, "facts_vectors")
    floor_t, floor_i = sizes(probe, "floor")

    # ---- per-user search, interleaved query by query
    rng = np.random.default_rng((args.seed, 1 << 40))
    queries = unit_rows(rng, args.warmup + args.queries)
    qusers = rng.integers(0, users, size=len(queries))
    qtexts = [f"query {j}" for j in range(len(queries))]
    emb.rows.clear()
    emb.add(qtexts, queries)
    # the same query on a connection keeping its generic plan, as our pools do (left to
    # plan_cache_mode = auto, Postgres may re-plan it on every call); ratios use the faster
    generic = psycopg.connect(conninfo, autocommit=True)
    register_vector(generic)
    generic.execute("SET plan_cache_mode = force_generic_plan")
    search = Searches(args.warmup, store, emb, floor, generic, queries, qusers, qtexts)
    phases = [("as loaded", search.run())]
    compacted, floor_cluster_s = None, 0.0
    if args.compact:
        compacted = backend.compact()  # ours in user order; the floor as loaded
        phases.append(("ours compacted, floor as loaded", search.run()))
        t0 = clock()
        floor.execute("CLUSTER floor USING floor_ns")
        floor.execute("ANALYZE floor")
        floor_cluster_s = (clock() - t0) / 1e9
        phases.append(("both in user order (floor clustered too)", search.run()))
    generic.close()
    backend.close()
    probe.close()
    floor.close()
    ours_lat, floor_lat, generic_lat, agree = phases[0][1]

    o50, o95 = (float(x) for x in np.percentile(np.asarray(ours_lat) / 1e6, [50, 95]))
    f50, f95 = (float(x) for x in np.percentile(np.asarray(floor_lat) / 1e6, [50, 95]))
    g50, g95 = (float(x) for x in np.percentile(np.asarray(generic_lat) / 1e6, [50, 95]))
    best = min(f50, g50)
    ours_bytes = items_t + items_i + vec_t + vec_i
    floor_bytes = floor_t + floor_i
    print(f"\n### Ingest, {n:,} facts ({users:,} users), facts/s, same run, interleaved\n")
    print("| writer | facts/s | vs COPY | WAL bytes/fact |")
    print("|---|---:|---:|---:|")
    print(
        f"| ours (`store.batch`, 1,000 puts) | {ours_rate:,.0f} | {ours_rate / floor_rate:.2f}x "
        f"| {ours_wal / n:,.0f} |"
    )
    print(
        f"| floor (binary COPY, bare table, no index) | {floor_rate:,.0f} | 1.00x "
        f"| {floor_wal / n:,.0f} |"
    )
    print(f"\nfloor btree on ns built after: {btree_s:.1f} s")
    print("\n### Sizes per fact, bytes\n")
    print("| relation | table + TOAST | indexes |")
    print("|---|---:|---:|")
    print(f"| ours: items | {items_t / n:,.0f} | {items_i / n:,.0f} |")
    print(f"| ours: vectors | {vec_t / n:,.0f} | {vec_i / n:,.0f} |")
    print(f"| floor | {floor_t / n:,.0f} | {floor_i / n:,.0f} |")
    print(f"\n### Per-user search (limit={K}), {len(ours_lat):,} queries, ms\n")
    print("| query | p50 | p95 | vs floor (p50) |")
    print("|---|---:|---:|---:|")
    print(f"| ours (`store.search`) | {o50:.3f} | {o95:.3f} | {o50 / best:.2f}x |")
    print(f"| floor (prepared psycopg, btree on ns) | {f50:.3f} | {f95:.3f} | {f50 / best:.2f}x |")
    print(f"| floor, generic plan kept | {g50:.3f} | {g95:.3f} | {g50 / best:.2f}x |")
    print(f"\nsame top-{K} keys as the floor: {agree}/{len(ours_lat)}")
    if compacted is not None:
        print(
            f"\n### After `backend.compact()` ({compacted.seconds:.1f} s: "
            f"{compacted.before / n:,.0f} -> {compacted.after / n:,.0f} bytes/fact of our "
            f"tables and indexes); the floor clustered by ns after it ({floor_cluster_s:.1f} s)\n"
        )
        print("| phase | ours p50 / p95 | floor p50 / p95 | generic floor p50 | vs floor | same |")
        print("|---|---:|---:|---:|---:|---:|")
        for label, (o, f, g, same) in phases:
            ms = [np.percentile(np.asarray(x) / 1e6, [50, 95]) for x in (o, f, g)]
            ratio = ms[0][0] / min(ms[1][0], ms[2][0])
            print(
                f"| {label} | {ms[0][0]:.3f} / {ms[0][1]:.3f} | {ms[1][0]:.3f} / {ms[1][1]:.3f} "
                f"| {ms[2][0]:.3f} | {ratio:.2f}x | {same}/{len(o)} |"
            )
    scale = 10_000_000 / n
    print("\n### 10M facts, projected linearly from this run (on paper)\n")
    print(
        f"- ours: {ours_bytes * scale / 1e9:,.1f} GB of tables and indexes, WAL "
        f"{ours_wal * scale / 1e9:,.1f} GB to load, {10_000_000 / ours_rate / 60:,.0f} min "
        "at this rate"
    )
    print(
        f"- floor: {floor_bytes * scale / 1e9:,.1f} GB, WAL {floor_wal * scale / 1e9:,.1f} GB, "
        f"{10_000_000 / floor_rate / 60:,.0f} min"
    )
    print(
        "- per-user search reads one btree range and the user's rows: its cost follows the "
        "facts per user, not the table (one more btree level at most from 1M to 10M)"
    )
    verdicts = [
        (ours_rate >= TARGET_INGEST, f"ingest >= {TARGET_INGEST:,}/s: {ours_rate:,.0f}/s"),
        (o50 <= TARGET_P50_MS, f"per-user p50 <= {TARGET_P50_MS} ms: {o50:.3f} ms"),
        (
            o50 <= TARGET_VS_FLOOR * best,
            f"per-user p50 <= {TARGET_VS_FLOOR}x floor: {o50 / best:.2f}x",
        ),
    ]
    print("\n### Targets\n")
    for ok, line in verdicts:
        print(f"- {'PASS' if ok else 'FAIL'} {line}")
    return 0 if all(ok for ok, _ in verdicts) else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--facts", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=2_000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--url", help="use this server (its database ltm_bench_scale is replaced)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="20k facts, 2k users")
    parser.add_argument(
        "--compact",
        action="store_true",
        help="search again after backend.compact() (ours in user order), then with the floor "
        "clustered by ns too",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.facts, args.users, args.queries, args.warmup = 20_000, 2_000, 300, 50
    url, stop = (args.url, lambda: None) if args.url else start_server()
    try:
        t0 = time.perf_counter()
        code = run(args, url)
        print(f"\n(wall time {time.perf_counter() - t0:,.0f} s)")
        return code
    finally:
        stop()


if __name__ == "__main__":
    sys.exit(main())
