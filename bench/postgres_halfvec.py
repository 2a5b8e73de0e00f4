"""halfvec against vector on Postgres, on real sentence embeddings: recall, sizes, latency.

The texts are our fact sets (``bench/data``: the fact pairs we wrote and the LoCoMo
observations), embedded offline with the packaged all-MiniLM-L6-v2
(``langchain_ltm.embeddings.LocalMiniLMEmbeddings``). The same rows go into two tables on
one server, one ``vector`` (float32), one ``halfvec`` (float16); a fifth of the texts, held
out, are the queries. Measured, same run, interleaved:

- per-user recall@10 of the ``halfvec`` table against the exact float32 top-10 (facts
  spread over users of ``--per-user`` facts; each query asks one user);
- whole-table recall@10 (prefix ``("memories",)``: every user), the harder case;
- vectors table and HNSW index sizes of both;
- per-user search p50 of both.

Usage:
    python bench/postgres_halfvec.py              # ~5k texts, 50 facts per user
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import psycopg
from _common import clock
from postgres_search import start_server, with_database

from langchain_ltm.backends.base import Record, SearchRequest
from langchain_ltm.backends.postgres import postgres_backend

K = 10
DATA = Path(__file__).parent / "data"


def texts() -> list[str]:
    """Every distinct fact text of the bench data sets, in a stable order."""
    seen: dict[str, None] = {}
    for name in sorted(DATA.glob("*pairs*.jsonl")):
        for line in name.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            for field in ("a", "b", "old", "new"):
                if isinstance(row.get(field), str):
                    seen.setdefault(row[field].strip(), None)
    session = DATA / "session_relevance.jsonl"
    for line in session.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        for field in ("user", "answer"):
            seen.setdefault(str(row[field]).strip(), None)
    return [t for t in seen if t]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--per-user", type=int, default=50)
    parser.add_argument("--url", help="use this server (database ltm_bench_halfvec is replaced)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    from langchain_ltm.embeddings import LocalMiniLMEmbeddings

    corpus = texts()
    t0 = time.perf_counter()
    vectors = np.asarray(LocalMiniLMEmbeddings().embed_documents(corpus), dtype=np.float32)
    embed_s = time.perf_counter() - t0
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(corpus))
    held = order[: len(corpus) // 5]
    kept = order[len(corpus) // 5 :]
    facts, queries = vectors[kept], vectors[held]
    users = max(1, len(facts) // args.per_user)
    owner = rng.permutation(np.arange(len(facts)) % users)
    query_user = rng.integers(0, users, size=len(queries))
    print(
        f"# postgres_halfvec: {len(facts):,} facts ({users} users x ~{args.per_user}), "
        f"{len(queries):,} queries, MiniLM 384-d (embedded in {embed_s:.0f} s); "
        f"load avg {'/'.join(f'{x:.1f}' for x in os.getloadavg())}",
        flush=True,
    )
    url, stop = (args.url, lambda: None) if args.url else start_server()
    try:
        conninfo = with_database(url, "ltm_bench_halfvec")
        now = datetime.now(timezone.utc)
        backends = {
            kind: postgres_backend(conninfo, table=f"facts_{kind}", dims=384, vector_type=kind)
            for kind in ("vector", "halfvec")
        }
        records = [
            Record(("memories", f"u{owner[i]}"), f"f{i}", {"i": i}, ("t",), ("t",), vec[None], now)
            for i, vec in enumerate(facts)
        ]
        for backend in backends.values():
            for start in range(0, len(records), 1000):
                backend.write(records[start : start + 1000], [])
            backend.create_hnsw_index()
        with psycopg.connect(conninfo, autocommit=True) as conn:
            size = {}
            for kind, backend in backends.items():
                conn.execute(f"VACUUM ANALYZE {backend.tables.vectors}")
                row = conn.execute(
                    "SELECT pg_table_size(%s::regclass), pg_relation_size(%s::regclass)",
                    (backend.tables.vectors, f'"{backend.tables.table}_vectors_hnsw"'),
                ).fetchone()
                assert row is not None
                size[kind] = (int(row[0]), int(row[1]))

        def exact(j: int, prefix_all: bool) -> list[str]:
            rows = np.arange(len(facts)) if prefix_all else np.flatnonzero(owner == query_user[j])
            scores = facts[rows].astype(np.float64) @ queries[j].astype(np.float64)
            return [f"f{rows[i]}" for i in np.argsort(-scores, kind="stable")[:K]]

        hits = {(kind, scope): 0 for kind in backends for scope in ("user", "all")}
        lat: dict[str, list[int]] = {kind: [] for kind in backends}
        for j in range(len(queries)):
            for scope in ("user", "all"):
                prefix = ("memories",) if scope == "all" else ("memories", f"u{query_user[j]}")
                truth = set(exact(j, scope == "all"))
                for kind, backend in backends.items():
                    t0 = clock()
                    (found,) = backend.search(SearchRequest(prefix, queries[j][None], limit=K))
                    if scope == "user":
                        lat[kind].append(clock() - t0)
                    hits[kind, scope] += len(truth.intersection(h.item.key for h in found))
        for backend in backends.values():
            backend.drop()
            backend.close()
    finally:
        stop()

    total = K * len(queries)
    print(f"\n### halfvec vs vector, {len(facts):,} MiniLM facts, {len(queries):,} queries\n")
    print(
        "| column | recall@10, per user | recall@10, whole table | vectors table | HNSW index "
        "| per-user p50 ms |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for kind in backends:
        p50 = float(np.percentile(np.asarray(lat[kind]) / 1e6, 50))
        print(
            f"| {kind} | {hits[kind, 'user'] / total:.4f} | {hits[kind, 'all'] / total:.4f} "
            f"| {size[kind][0] / 1e6:.1f} MB | {size[kind][1] / 1e6:.1f} MB | {p50:.3f} |"
        )
    ratio_t = size["halfvec"][0] / size["vector"][0]
    ratio_i = size["halfvec"][1] / size["vector"][1]
    print(f"\nhalfvec / vector: table {ratio_t:.2f}x, HNSW index {ratio_i:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
