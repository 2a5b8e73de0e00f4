"""Postgres batched ingest: two checkouts of the code, interleaved, beside binary COPY.

Before/after for write-path work, in one run on one server: each round runs the same
ingest (``LongTermMemoryStore.batch`` of 1,000 ``PutOp``s with precomputed vectors,
embedding time subtracted) in a subprocess per checkout (``--code DIR``, first one is
"before"), each into a fresh database, then a binary ``COPY`` of the same rows (ns, key,
value, vector) into a bare table with no index, one COPY per batch, committed. Rounds
alternate the order, so load drifts hit both sides alike; the table gives medians of the
rounds and ratios. ``--profile`` instead runs one ingest in process under cProfile and
prints where the time goes, store layer and backend. "client CPU" is the ingesting
process's own CPU time (``time.process_time``), which a busy machine inflates far less
than wall time; "server CPU" is the CPU time of the server processes on the run's database
(``/proc/<pid>/schedstat``, so only with the server on this machine), per 1,000 facts over
the whole ingest.

``--langgraph`` adds LangGraph's ``PostgresStore`` (``index`` with the same field, a flat
vector index) on the same batches, one more subprocess per round.

Usage:
    python bench/postgres_ingest.py --code /work/main --code .   # before, after, COPY
    python bench/postgres_ingest.py --code /work/main --code . --langgraph
    python bench/postgres_ingest.py --profile                    # this checkout, cProfile
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

import numpy as np
import psycopg
from _common import DIMS, LookupEmbeddings, clock, unit_rows
from langgraph.store.base import PutOp
from pgvector.psycopg import register_vector  # type: ignore[import-untyped]
from postgres_search import start_server, with_database
from psycopg.types.json import Jsonb

BATCH = 1_000
LANGGRAPH = "<langgraph>"  # run_worker's code for LangGraph's PostgresStore


def batches(seed: int, n: int, users: int) -> list[tuple[list[str], np.ndarray, list[PutOp]]]:
    out = []
    for start in range(0, n, BATCH):
        count = min(BATCH, n - start)
        rng = np.random.default_rng((seed, start))
        vecs = unit_rows(rng, count)
        owners = rng.integers(0, users, size=count)
        texts = [f"fact {start + i}: something the user told us" for i in range(count)]
        ops = [
            PutOp(("memories", f"user-{int(owners[i]):06d}"), f"f{start + i}", {"content": t})
            for i, t in enumerate(texts)
        ]
        out.append((texts, vecs, ops))
    return out


def wal_lsn(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')").fetchone()
    return int(row[0]) if row else 0


def server_cpu_ns(probe: psycopg.Connection) -> dict[int, int]:
    """CPU time (ns) of each other server process on this database (``/proc``, local only)."""
    rows = probe.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid <> pg_backend_pid()"
    ).fetchall()
    out = {}
    for (pid,) in rows:
        try:
            with open(f"/proc/{pid}/schedstat", encoding="ascii") as f:
                out[pid] = int(f.read().split()[0])
        except OSError:  # another machine, or the process ended
            continue
    return out


def server_ms(probe: psycopg.Connection, before: dict[int, int], n: int) -> float:
    """Server CPU ms per 1,000 facts since ``before`` (processes started since count whole)."""
    after = server_cpu_ns(probe)
    spent = sum(ns - before.get(pid, 0) for pid, ns in after.items())
    return spent / 1e6 * BATCH / n


def ingest(conninfo: str, n: int, users: int, seed: int, profile: bool) -> dict[str, float]:
    """Our ingest of ``n`` facts; ms per 1,000 puts (median batch) and WAL bytes per fact."""
    from langchain_ltm import LongTermMemoryStore
    from langchain_ltm.backends.postgres import postgres_backend

    emb = LookupEmbeddings()
    backend = postgres_backend(conninfo, table="facts", dims=DIMS)
    store = LongTermMemoryStore(backend, embeddings=emb, fields=["content"])
    probe = psycopg.connect(conninfo, autocommit=True)
    data = batches(seed, n, users)
    per_batch: list[float] = []
    cpu: list[float] = []
    prof = cProfile.Profile() if profile else None
    w0, s0 = wal_lsn(probe), server_cpu_ns(probe)
    for texts, vecs, ops in data:
        emb.rows.clear()
        emb.add(texts, vecs)
        gc.collect()
        e0, t0, c0 = emb.spent_ns, clock(), time.process_time_ns()
        if prof is not None:
            prof.enable()
        store.batch(ops)
        if prof is not None:
            prof.disable()
        spent = emb.spent_ns - e0
        per_batch.append((clock() - t0 - spent) / 1e6 * BATCH / len(ops))
        cpu.append((time.process_time_ns() - c0 - spent) / 1e6 * BATCH / len(ops))
    wal = (wal_lsn(probe) - w0) / n
    server = server_ms(probe, s0, n)
    if prof is not None:
        stats = pstats.Stats(prof).sort_stats("cumulative")
        stats.print_stats(45)
        stats.sort_stats("tottime").print_stats(25)
    store.close() if hasattr(store, "close") else backend.close()
    return {
        "ms": statistics.median(per_batch),
        "cpu": statistics.median(cpu),
        "server": server,
        "wal": wal,
    }


def ingest_langgraph(conninfo: str, n: int, users: int, seed: int) -> dict[str, float]:
    """LangGraph's ``PostgresStore`` on the same batches (flat vector index, same field)."""
    from langgraph.store.postgres import PostgresStore

    emb = LookupEmbeddings()
    index = {
        "dims": DIMS,
        "embed": emb,
        "fields": ["content"],
        "ann_index_config": {"kind": "flat"},
    }
    probe = psycopg.connect(conninfo, autocommit=True)
    per_batch: list[float] = []
    cpu: list[float] = []
    with PostgresStore.from_conn_string(conninfo, index=index) as store:  # type: ignore[arg-type]
        store.setup()
        w0, s0 = wal_lsn(probe), server_cpu_ns(probe)
        for texts, vecs, ops in batches(seed, n, users):
            emb.rows.clear()
            emb.add(texts, vecs)
            gc.collect()
            e0, t0, c0 = emb.spent_ns, clock(), time.process_time_ns()
            store.batch(ops)
            spent = emb.spent_ns - e0
            per_batch.append((clock() - t0 - spent) / 1e6 * BATCH / len(ops))
            cpu.append((time.process_time_ns() - c0 - spent) / 1e6 * BATCH / len(ops))
        wal = (wal_lsn(probe) - w0) / n
        server = server_ms(probe, s0, n)
    return {
        "ms": statistics.median(per_batch),
        "cpu": statistics.median(cpu),
        "server": server,
        "wal": wal,
    }


def copy_floor(conninfo: str, n: int, users: int, seed: int) -> dict[str, float]:
    """Binary COPY of the same rows into a bare table, one COPY per batch, committed."""
    conn = psycopg.connect(conninfo)
    register_vector(conn)
    conn.execute(
        'CREATE TABLE floor (ns text COLLATE "C" NOT NULL, key text NOT NULL, '
        f"value jsonb NOT NULL, embedding vector({DIMS}) NOT NULL)"
    )
    conn.commit()
    probe = psycopg.connect(conninfo, autocommit=True)
    per_batch: list[float] = []
    w0, s0 = wal_lsn(probe), server_cpu_ns(probe)
    for _texts, vecs, ops in batches(seed, n, users):
        gc.collect()
        t0 = clock()
        with conn.cursor().copy("COPY floor FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["text", "text", "jsonb", "vector"])
            for op, vec in zip(ops, vecs, strict=True):
                path = "".join(label + "." for label in op.namespace)
                copy.write_row((path, op.key, Jsonb(op.value), vec))
        conn.commit()
        per_batch.append((clock() - t0) / 1e6 * BATCH / len(ops))
    wal = (wal_lsn(probe) - w0) / n
    server = server_ms(probe, s0, n)
    return {"ms": statistics.median(per_batch), "cpu": 0.0, "server": server, "wal": wal}


def worker(args: argparse.Namespace) -> int:
    if args.copy:
        result = copy_floor(args.worker, args.facts, args.users, args.seed)
    elif args.langgraph_worker:
        result = ingest_langgraph(args.worker, args.facts, args.users, args.seed)
    else:
        result = ingest(args.worker, args.facts, args.users, args.seed, profile=False)
    print(json.dumps(result))
    return 0


def run_worker(url: str, db: str, code: str | None, args: argparse.Namespace) -> dict[str, float]:
    conninfo = with_database(url, db)
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ)
    if code is not None and code != LANGGRAPH:
        env["PYTHONPATH"] = os.path.abspath(code)
    cmd = [sys.executable, os.path.join(here, "postgres_ingest.py"), "--worker", conninfo]
    cmd += ["--facts", str(args.facts), "--users", str(args.users), "--seed", str(args.seed)]
    if code is None:
        cmd.append("--copy")
    elif code == LANGGRAPH:
        cmd.append("--langgraph-worker")
    done = subprocess.run(cmd, env=env, check=False, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"worker for {code or 'COPY'} failed:\n{done.stderr[-3000:]}")
    out = done.stdout
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--code", action="append", default=[], help="a checkout (repeat)")
    parser.add_argument("--facts", type=int, default=20_000)
    parser.add_argument("--users", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--copy", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--langgraph-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--langgraph", action="store_true", help="also LangGraph's PostgresStore (slow)"
    )
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    url, stop = start_server()
    try:
        if args.profile:
            result = ingest(
                with_database(url, "ltm_ingest_prof"),
                args.facts,
                args.users,
                args.seed,
                profile=True,
            )
            print(json.dumps(result))
            return 0
        codes: list[str | None] = [*args.code, None]
        names = [f"ours ({c})" for c in args.code] + ["floor: binary COPY, bare table"]
        if args.langgraph:
            codes.insert(-1, LANGGRAPH)
            names.insert(-1, "LangGraph PostgresStore (flat index)")
        results: list[list[dict[str, float]]] = [[] for _ in codes]
        print(
            f"# postgres_ingest: {args.facts:,} facts, {args.users:,} users, {DIMS}-d, batches "
            f"of {BATCH:,}, {args.rounds} rounds interleaved; {os.cpu_count()} CPUs, load avg "
            f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())}",
            flush=True,
        )
        for r in range(args.rounds):
            order = list(range(len(codes)))
            if r % 2:
                order.reverse()
            for i in order:
                results[i].append(run_worker(url, f"ltm_ingest_{r}_{i}", codes[i], args))
                print(f"  round {r} {names[i]}: {results[i][-1]}", flush=True)
        floor_ms = statistics.median(x["ms"] for x in results[-1])
        first_ms = statistics.median(x["ms"] for x in results[0])
        print(
            "\n| writer | ms / 1,000 puts | facts/s | vs first | vs COPY "
            "| client CPU ms / 1,000 | server CPU ms / 1,000 | WAL bytes/fact |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for name, rows in zip(names, results, strict=True):
            ms = statistics.median(x["ms"] for x in rows)
            wal = statistics.median(x["wal"] for x in rows)
            cpu = statistics.median(x["cpu"] for x in rows)
            server = statistics.median(x["server"] for x in rows)
            print(
                f"| {name} | {ms:.0f} | {1000 / ms * 1000:,.0f} | {first_ms / ms:.2f}x | "
                f"{floor_ms / ms:.2f}x | {cpu:.0f} | {server:.0f} | {wal:,.0f} |"
            )
        print(f"load avg after: {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")
    finally:
        stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
