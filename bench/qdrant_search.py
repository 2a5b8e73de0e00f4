"""Per-user search and ingest on embedded Qdrant: our backend vs raw ``QdrantVectorStore``.

Same run, same vectors: N facts with random 384-d unit vectors, ``--per-user`` facts per user
(100 by default), written to

- ours:  ``LongTermMemoryStore(qdrant_backend(":memory:" | folder))`` through ``store.batch``
         in batches of 1,000 PutOps (one embedding call and one Qdrant upsert per batch);
- raw:   ``langchain_qdrant.QdrantVectorStore`` on its own local client, ``add_texts`` with
         ``metadata={"user": ...}`` in batches of 1,000;
- ours, ``mirror=False``: our server code path (every read a Qdrant request with a
         ``models.Filter``) against local mode, to show what the mirror saves;
- the floor: the same user's vectors pre-stacked as one float32 matrix, ``M @ q`` plus
         ``argpartition`` (what any exact per-user search must at least do), same run.

Each query is a random fact of a random user plus noise (cosine ~0.7 to it), asked within
that user's facts with ``limit=5``: ``store.search(user_ns, query=..., limit=5)`` for ours,
``similarity_search(query, k=5, filter=<metadata.user == u>)`` for raw. Recall@5 is against
the exact top-5 by cosine (float64). Embedding is a dict lookup whose time is subtracted.
Raw local mode takes seconds per query at 100k points, so it answers ``--raw-queries``.

Usage:
    python bench/qdrant_search.py                         # 10k and 100k points, in memory
    python bench/qdrant_search.py --sizes 10000 --disk    # on a folder (sqlite commits)
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence

import numpy as np
from _common import DIMS, LookupEmbeddings, clock, unit_rows
from langchain_qdrant import QdrantVectorStore
from langgraph.store.base import PutOp
from qdrant_client import QdrantClient, models

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.qdrant import qdrant_backend

K = 5
BATCH = 1_000
QUERY_NOISE = 1.0


def timed(emb: LookupEmbeddings, fn: Callable[[], object]) -> tuple[float, object]:
    """Seconds spent in ``fn`` minus embedding lookups, and its result."""
    e0, t0 = emb.spent_ns, clock()
    out = fn()
    return (clock() - t0 - (emb.spent_ns - e0)) / 1e9, out


def run_size(args: argparse.Namespace, n: int, rng: np.random.Generator, workdir: str) -> list[str]:
    users = n // args.per_user
    vecs = unit_rows(rng, n)
    owner = rng.permutation(np.arange(n) % users)
    texts = [f"fact {i} of user {owner[i]}" for i in range(n)]
    emb = LookupEmbeddings()
    emb.rows.update(zip(texts, vecs, strict=True))
    emb.rows["dummy_text"] = vecs[0]  # QdrantVectorStore embeds this once to check the size
    rows = [np.flatnonzero(owner == u) for u in range(users)]
    q_users = rng.integers(0, users, size=args.queries)
    anchors = np.array([rng.choice(rows[u]) for u in q_users])
    qv = vecs[anchors] + unit_rows(rng, args.queries) * QUERY_NOISE
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    qtexts = [f"query {j}" for j in range(args.queries)]
    emb.rows.update(zip(qtexts, qv.astype(np.float32), strict=True))
    truth = []
    for j, u in enumerate(q_users):
        s = vecs[rows[u]].astype(np.float64) @ qv[j].astype(np.float64)
        truth.append({int(i) for i in rows[u][np.argsort(-s)[:K]]})
    mode = "folder" if args.disk else ":memory:"
    print(f"\n## {n:,} points, {users:,} users x {args.per_user}, {mode}", flush=True)

    # ---- ingest
    where = os.path.join(workdir, f"ours{n}") if args.disk else ":memory:"
    backend = qdrant_backend(where, dims=DIMS)
    ours = LongTermMemoryStore(backend, embeddings=emb, fields=["content"])
    names = [ours.user_namespace(f"user-{u}") for u in range(users)]
    ops = [PutOp(names[owner[i]], f"f{i}", {"content": texts[i]}) for i in range(n)]
    gc.collect()
    ours_ingest, _ = timed(
        emb, lambda: [ours.batch(ops[s : s + BATCH]) for s in range(0, n, BATCH)]
    )
    print(f"ours ingest {ours_ingest:.1f}s", flush=True)
    open_s = None
    if args.disk:
        backend.close()
        t0 = time.perf_counter()
        backend = qdrant_backend(where)
        open_s = time.perf_counter() - t0
        ours = LongTermMemoryStore(backend, embeddings=emb, fields=["content"])
        print(f"reopen (loads the mirror) {open_s:.1f}s", flush=True)

    raw_where = os.path.join(workdir, f"raw{n}") if args.disk else None
    raw_client = QdrantClient(path=raw_where) if raw_where else QdrantClient(":memory:")
    raw_client.create_collection(
        "raw", models.VectorParams(size=DIMS, distance=models.Distance.COSINE)
    )
    raw = QdrantVectorStore(raw_client, "raw", emb)
    metas = [{"user": f"user-{owner[i]}"} for i in range(n)]
    raw_ingest, _ = timed(emb, lambda: raw.add_texts(texts, metadatas=metas, batch_size=BATCH))
    print(f"raw ingest {raw_ingest:.1f}s", flush=True)
    server_path = LongTermMemoryStore(
        qdrant_backend(backend.client, dims=DIMS, mirror=False), embeddings=emb
    )

    # ---- search
    def ours_search(j: int, store: LongTermMemoryStore = ours) -> list[int]:
        hits = store.search(names[q_users[j]], query=qtexts[j], limit=K)
        return [int(h.key[1:]) for h in hits]

    def raw_search(j: int) -> list[int]:
        flt = models.Filter(
            must=[
                models.FieldCondition(
                    key="metadata.user", match=models.MatchValue(value=f"user-{q_users[j]}")
                )
            ]
        )
        docs = raw.similarity_search(qtexts[j], k=K, filter=flt)
        return [int(d.page_content.split()[1]) for d in docs]

    # the floor: the same user's vectors pre-stacked as one float32 matrix, M @ q + top-k
    blocks = [vecs[r].astype(np.float32) for r in rows]

    def floor_search(j: int) -> list[int]:
        scores = blocks[q_users[j]] @ qv[j]
        top = np.argpartition(-scores, K)[:K] if len(scores) > K else np.arange(len(scores))
        top = top[np.argsort(-scores[top])]
        return [int(i) for i in rows[q_users[j]][top]]

    methods: list[tuple[str, Callable[[int], list[int]], int]] = [
        ("numpy floor (the user's vectors, M @ q + argpartition)", floor_search, args.queries),
        ("ours (embedded, mirror)", ours_search, args.queries),
        ("raw QdrantVectorStore + user filter", raw_search, args.raw_queries),
        (
            "ours, mirror=False (Filter to local mode)",
            lambda j: ours_search(j, server_path),
            args.raw_queries,
        ),
    ]
    out = []
    # ours stacks a user's block on that user's first search: measured apart, once per user
    warm = [f"warm-up {u}" for u in range(users)]
    emb.rows.update(zip(warm, vecs[[int(r[0]) for r in rows]], strict=True))
    cold = [
        timed(emb, lambda u=u: ours.search(names[u], query=warm[u], limit=K))[0] * 1e3
        for u in range(users)
    ]
    c50, c95 = np.percentile(cold, [50, 95])
    for _, search, _ in methods:
        search(args.queries - 1)  # warm-up (not a measured query)
    for name, search, count in methods:
        lat, hits = [], 0
        for j in range(min(count, args.queries - 1)):
            seconds, found = timed(emb, lambda j=j, s=search: s(j))
            lat.append(seconds * 1e3)
            hits += len(truth[j].intersection(found))  # type: ignore[call-overload]
        p50, p95 = np.percentile(lat, [50, 95])
        recall = hits / (K * len(lat))
        row = f"| {n:,} | {name} | {len(lat):,} | {p50:,.3f} | {p95:,.3f} | {recall:.3f} |"
        print(row, flush=True)
        out.append(row)
    row = f"| {n:,} | ours, first search of each user (stacks its block) | {users:,} | "
    out.append(row + f"{c50:,.3f} | {c95:,.3f} | n/a |")
    reopen = f"; reopen + mirror load {open_s:.1f}s" if open_s is not None else ""
    out.append(
        f"| {n:,} | ingest ({mode}), points/s | ours {n / ours_ingest:,.0f} | "
        f"raw {n / raw_ingest:,.0f}{reopen} | | |"
    )
    print(out[-1], flush=True)
    backend.close()
    raw_client.close()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--per-user", type=int, default=100)
    parser.add_argument("--queries", type=int, default=1_000, help="queries for ours")
    parser.add_argument(
        "--raw-queries", type=int, default=None, help="default: 50 at 10k, 10 above"
    )
    parser.add_argument("--disk", action="store_true", help="store in temporary folders")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", message="Local mode is not recommended")
    warnings.filterwarnings("ignore", message="Payload indexes have no effect")
    print(
        f"# qdrant_search: {DIMS}-d, {args.per_user} points/user, python "
        f"{sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    rng = np.random.default_rng(args.seed)
    workdir = tempfile.mkdtemp(prefix="ltm-qdrant-bench-")
    rows = []
    try:
        for n in args.sizes:
            size_args = argparse.Namespace(**vars(args))
            if size_args.raw_queries is None:
                size_args.raw_queries = 50 if n <= 10_000 else 10
            rows += run_size(size_args, n, rng, workdir)
            gc.collect()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print("\n| points | method | queries | p50 ms | p95 ms | recall@5 |")
    print("|---:|---|---:|---:|---:|---:|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
