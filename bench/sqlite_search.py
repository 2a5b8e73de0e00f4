"""Per-user search on the SQLite engine vs the in-memory engine, same vectors, same run.

N facts with random 384-d unit embeddings are spread over U users (each fact owned by a
random user, so a user's rows are scattered over the file as when facts arrive over time)
and written to both stores with the same batches of 1,000 PutOps. Each query is one of its
user's facts plus noise (cosine ~0.7 to it). Per query we time
``store.search(store.user_namespace(uid), query=q, limit=5)`` on

- memory: ``LongTermMemoryStore(InMemoryVectorStore(emb), fields=["content"])``
- sqlite: ``LongTermMemoryStore(sqlite_backend(path), embeddings=emb, fields=["content"])``
  (the default: the vectors of searched users kept while the file is unchanged, 256 MB)
- sqlite, no cache: the same file through ``sqlite_backend(path, vector_cache_mb=0)``: every
  search re-reads the user's vectors (what every search did before the cache, and what the
  first search after any commit does)

interleaved query by query, and check recall@5 against the exact float64 top-5 (both
engines are exact: 1.00 expected). Embedding costs ~0 and is subtracted (texts map to
precomputed vectors). ``open+1st`` is a new backend on the same file (fresh connections, the
OS page cache warm) answering one search: what a short-lived process like ``ltm recall``
pays beyond its imports.

Usage:
    python bench/sqlite_search.py                     # 10k and 100k facts; 100 users and 1
    python bench/sqlite_search.py --facts 10000 --users 10 --queries 200
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np
from _common import LookupEmbeddings, clock, make_layout, unit_rows
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.base import PutOp

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.sqlite import sqlite_backend

K = 5
BATCH = 1_000


def run(facts: int, users: int, queries: int, seed: int = 0) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    vecs = unit_rows(rng, facts)
    layout = make_layout(vecs, users, queries, rng, k=K)
    emb = LookupEmbeddings()
    texts = [f"fact {i}" for i in range(facts)]
    emb.add(texts, vecs)
    qtexts = [f"query {j}" for j in range(queries)]
    emb.add(qtexts, layout.query_vecs)
    folder = tempfile.mkdtemp(prefix="ltm-bench-")
    path = os.path.join(folder, "bench.sqlite")
    memory = LongTermMemoryStore(InMemoryVectorStore(emb), fields=["content"])
    sqlite = LongTermMemoryStore(sqlite_backend(path), embeddings=emb, fields=["content"])
    ingest = {}
    for name, store in (("memory", memory), ("sqlite", sqlite)):
        t0 = time.perf_counter()
        for start in range(0, facts, BATCH):
            store.batch(
                [
                    PutOp(
                        store.user_namespace(f"u{layout.owner[i]}"), f"k{i}", {"content": texts[i]}
                    )
                    for i in range(start, min(start + BATCH, facts))
                ]
            )
        ingest[name] = time.perf_counter() - t0
    # warm-up: one search per engine (not a measured query text)
    emb.add(["warm"], layout.query_vecs[:1])
    uncached = LongTermMemoryStore(
        sqlite_backend(path, vector_cache_mb=0), embeddings=emb, fields=["content"]
    )
    stores = (("memory", memory), ("sqlite", sqlite), ("uncached", uncached))
    for _, store in stores:
        store.search(store.user_namespace("u0"), query="warm", limit=K)
    times: dict[str, list[float]] = {name: [] for name, _ in stores}
    hits = {name: 0 for name, _ in stores}
    for j in range(queries):
        ns_user = f"u{layout.query_user[j]}"
        for name, store in stores:
            spent = emb.spent_ns
            t0 = clock()
            found = store.search(store.user_namespace(ns_user), query=qtexts[j], limit=K)
            elapsed = clock() - t0 - (emb.spent_ns - spent)
            times[name].append(elapsed / 1e6)
            hits[name] += len({int(item.key[1:]) for item in found} & layout.truth[j])
    # a new backend on the file: fresh connections, then one search
    emb.add(["cold"], layout.query_vecs[:1])
    t0 = time.perf_counter()
    again = LongTermMemoryStore(sqlite_backend(path), embeddings=emb, fields=["content"])
    again.search(again.user_namespace(f"u{layout.query_user[0]}"), query="cold", limit=K)
    cold = time.perf_counter() - t0
    again.close()
    sqlite.close()
    uncached.close()
    size = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder) if "." in f)
    return {
        "facts": facts,
        "users": users,
        "per_user": facts // users,
        "memory": np.percentile(times["memory"], [50, 95]),
        "sqlite": np.percentile(times["sqlite"], [50, 95]),
        "uncached": np.percentile(times["uncached"], [50, 95]),
        "recall": tuple(hits[name] / (K * queries) for name in ("memory", "sqlite", "uncached")),
        "ingest": ingest,
        "cold_ms": cold * 1e3,
        "file_mb": size / 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--facts", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--users", type=int, nargs="*", default=[100, 1])
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, {os.cpu_count()} cores")
    print(
        "| facts | users | facts/user | memory p50 / p95 ms | sqlite p50 / p95 ms | "
        "sqlite, no cache p50 / p95 ms | recall@5 mem / sqlite / no cache | "
        "ingest mem / sqlite s | sqlite open+1st ms | file MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for facts in args.facts:
        for users in args.users:
            queries = args.queries if facts // users < 50_000 else max(20, args.queries // 5)
            r = run(facts, users, queries)
            m, s, u, rc, ing = r["memory"], r["sqlite"], r["uncached"], r["recall"], r["ingest"]
            print(
                f"| {facts:,} | {users} | {r['per_user']:,} | {m[0]:.2f} / {m[1]:.2f} | "
                f"{s[0]:.2f} / {s[1]:.2f} | {u[0]:.2f} / {u[1]:.2f} | "
                f"{rc[0]:.2f} / {rc[1]:.2f} / {rc[2]:.2f} | "
                f"{ing['memory']:.1f} / {ing['sqlite']:.1f} | {r['cold_ms']:.1f} | "
                f"{r['file_mb']:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
