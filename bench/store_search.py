"""Per-user search and batched ingest: LongTermMemoryStore vs LangGraph InMemoryStore vs numpy.

Same run, same vectors: N facts with random 384-d unit embeddings are spread evenly over U
users and written to both stores with the same batches of PutOps. Each query is one of its
user's facts plus noise (cosine ~0.7 to it), so its top-5 is meaningful. Per query we time

- ours:          ``LongTermMemoryStore(InMemoryVectorStore(emb), fields=["content"])``
                 ``.search(store.user_namespace(uid), query=q, limit=5)``
- InMemoryStore: ``langgraph.store.memory.InMemoryStore(index=...)``
                 ``.search(("memories", uid), query=q, limit=5)``
- numpy scan:    ``M @ q`` + ``argpartition`` top-5 over the user's rows, pre-stacked float32

and compare the returned keys with the exact top-5 by cosine in float64 (recall@5).

Fairness rules:
- Embedding costs nothing: texts map to precomputed vectors by a dict lookup, returned as
  fresh lists of floats like a real embedding client, and the time spent inside the fake
  embeddings is subtracted from every measurement. Both stores see identical vectors.
- Measured queries never appear in a warm-up, so they miss our query-embedding cache the way
  a new user question does. Ours first answers one warm-up search per user (a user's block
  is stacked on its first search); that pass is timed and reported as its own row.
- The three methods run interleaved, query by query, so background load on a shared machine
  hits them alike; InMemoryStore answers only the first ``--lg-queries`` queries (it is slow).
  The numpy scan and ours then run again, each alone in a tight loop (no other work between
  queries, so code and data stay hot; ours on new query texts, so its embedding cache still
  misses): the "within 3x" target (and issue 19's "within 5x") compares those two.
  Targets are judged at p50; p95 ratios and the interleaved ratio are printed alongside.
- Each store's ingest starts with the earlier objects frozen (``gc.freeze``), so it pays the
  garbage collector for its own objects only, not for the data set or the other store.

Usage:
    python bench/store_search.py           # the issue's sizes: 100k facts, 1,000 and 100 users
    python bench/store_search.py --quick   # 10k facts, fewer queries (smoke run)
    python bench/store_search.py --facts 50000 --users 500 --queries 1000 --lg-queries 100
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from _common import DIMS, Layout, LookupEmbeddings, clock, make_layout, unit_rows
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

from langchain_ltm import LongTermMemoryStore

K = 5
BATCH = 1_000
QUERY_NOISE = 1.0  # noise norm relative to the unit fact vector: cosine(query, fact) ~ 0.7
LG_WARMUP = 20
NP_WARMUP = 200

# targets from the issue, judged at p50 (p95 ratios are printed alongside)
TARGET_VS_LANGGRAPH = 10.0  # ours at least this many times faster than InMemoryStore
TARGET_VS_NUMPY = 3.0  # ours at most this many times slower than the numpy scan
TARGET_VS_NUMPY_19 = 5.0  # issue 19, at 100 facts a user: within 5x of the numpy floor


def uid(u: int) -> str:
    return f"user-{u:05d}"


def fact_text(i: int) -> str:
    return f"fact {i}: something the user told us"


def make_config(
    fact_vecs: np.ndarray, users: int, queries: int, rng: np.random.Generator
) -> Layout:
    return make_layout(fact_vecs, users, queries, rng, k=K, noise=QUERY_NOISE)


@dataclass
class Method:
    """A search under test: ``search(j)`` answers query ``j``; ``to_facts`` maps its result."""

    name: str
    search: Callable[[int], Any]
    to_facts: Callable[[int, Any], Iterable[int]]
    limit: int  # answers queries 0 .. limit-1
    lat_ns: list[int] = field(default_factory=list)
    hits: int = 0

    def stats(self) -> tuple[float, float, float]:
        lat = np.asarray(self.lat_ns, dtype=np.float64) / 1e3
        p50, p95 = np.percentile(lat, [50, 95])
        return float(p50), float(p95), float(lat.mean())

    @property
    def recall(self) -> float:
        return self.hits / (K * len(self.lat_ns))


def run_interleaved(
    methods: list[Method], queries: int, truth: list[set[int]], emb: LookupEmbeddings
) -> None:
    """Each query through every method in turn; embedding time is subtracted."""
    for j in range(queries):
        for m in methods:
            if j >= m.limit:
                continue
            e0 = emb.spent_ns
            t0 = clock()
            found = m.search(j)
            m.lat_ns.append(clock() - t0 - (emb.spent_ns - e0))
            m.hits += len(truth[j].intersection(m.to_facts(j, found)))


def ingest(store: BaseStore, ops: list[PutOp], emb: LookupEmbeddings) -> float:
    """Seconds to write ``ops`` through ``store.batch`` in batches of BATCH (minus embedding)."""
    gc.collect()
    gc.freeze()  # objects so far (data set, other store) are not this store's GC cost
    e0 = emb.spent_ns
    t0 = clock()
    for start in range(0, len(ops), BATCH):
        store.batch(ops[start : start + BATCH])
    return (clock() - t0 - (emb.spent_ns - e0)) / 1e9


def rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _ok(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def run_config(
    args: argparse.Namespace,
    users: int,
    fact_vecs: np.ndarray,
    texts: list[str],
    emb: LookupEmbeddings,
    rng: np.random.Generator,
) -> tuple[list[str], list[str], list[str]]:
    n = len(fact_vecs)
    per = n / users
    t_setup = time.perf_counter()
    cfg = make_config(fact_vecs, users, args.queries, rng)
    qtexts = [f"query {users}/{j}" for j in range(args.queries)]
    warm_texts = [f"warm-up {users}/{u}" for u in range(users)]
    warm_vecs = fact_vecs[[int(r[0]) for r in cfg.rows]]
    emb.add(qtexts, cfg.query_vecs)
    emb.add(warm_texts, warm_vecs)
    key_index = {f"f{i}": i for i in range(n)}
    print(
        f"\n## {n:,} facts over {users:,} users ({per:,.0f} facts/user): "
        f"setup {time.perf_counter() - t_setup:.1f}s",
        flush=True,
    )

    # ---- ingest: the same PutOps into both stores
    ours = LongTermMemoryStore(InMemoryVectorStore(emb), fields=["content"])
    names = [ours.user_namespace(uid(u)) for u in range(users)]
    lg_names = [("memories", uid(u)) for u in range(users)]
    assert names == lg_names, "both stores use the same namespaces"
    ops = [PutOp(names[cfg.owner[i]], f"f{i}", {"content": texts[i]}, None) for i in range(n)]
    ours_ingest = ingest(ours, ops, emb)
    print(f"ours ingest: {ours_ingest:.2f}s, peak RSS {rss_gib():.1f} GiB", flush=True)
    lg = InMemoryStore(index={"dims": DIMS, "embed": emb, "fields": ["content"]})
    lg_ingest = ingest(lg, ops, emb)
    print(f"InMemoryStore ingest: {lg_ingest:.2f}s, peak RSS {rss_gib():.1f} GiB", flush=True)
    del ops

    # ---- ours.remember, batched per user, on a slice into a fresh store (it also dedups)
    m = min(args.remember_facts, n)
    per_user: dict[int, list[str]] = {}
    for i in range(m):
        per_user.setdefault(int(cfg.owner[i]), []).append(texts[i])
    fresh = LongTermMemoryStore(InMemoryVectorStore(emb), fields=["content"])
    gc.collect()
    gc.freeze()
    actions: dict[str, int] = {}
    e0, t0 = emb.spent_ns, clock()
    for u, facts in per_user.items():
        for r in fresh.remember(uid(u), facts):
            actions[r.action] = actions.get(r.action, 0) + 1
    remember_s = (clock() - t0 - (emb.spent_ns - e0)) / 1e9
    assert actions == {"created": m}, f"unexpected remember actions: {actions}"
    del fresh
    gc.unfreeze()
    gc.collect()
    gc.freeze()  # searches pay the collector for their own garbage only

    # ---- per-user search
    user_of = cfg.query_user

    def ours_search(text: str, u: int) -> list[str]:
        return [it.key for it in ours.search(names[u], query=text, limit=K)]

    def lg_search(text: str, u: int) -> list[str]:
        return [it.key for it in lg.search(lg_names[u], query=text, limit=K)]

    mats = [np.ascontiguousarray(fact_vecs[r]) for r in cfg.rows]
    qv = list(cfg.query_vecs)  # float32 rows, as ready as a query vector can be

    def np_scan(q: np.ndarray, u: int) -> np.ndarray:
        s = mats[u] @ q
        part = np.argpartition(-s, K - 1)[:K] if len(s) > K else np.arange(len(s))
        return part[np.argsort(-s[part])]

    # warm-ups: ours stacks each user's block on the first search, so that pass is per user
    cold = np.empty(users, dtype=np.int64)
    for u in range(users):
        e0, t0 = emb.spent_ns, clock()
        ours_search(warm_texts[u], u)
        cold[u] = clock() - t0 - (emb.spent_ns - e0)
    for u in range(min(LG_WARMUP, users)):
        lg_search(warm_texts[u], u)
    for j in range(NP_WARMUP):
        np_scan(warm_vecs[j % users], j % users)

    def keys_to_facts(_j: int, keys: list[str]) -> list[int]:
        return [key_index[k] for k in keys]

    def np_method(name: str) -> Method:
        return Method(
            name,
            lambda j: np_scan(qv[j], user_of[j]),
            lambda j, rows: cfg.rows[user_of[j]][rows].tolist(),
            args.queries,
        )

    methods = [
        np_method("numpy scan, interleaved"),
        Method(
            "ours (LongTermMemoryStore)",
            lambda j: ours_search(qtexts[j], user_of[j]),
            keys_to_facts,
            args.queries,
        ),
        Method(
            "LangGraph InMemoryStore",
            lambda j: lg_search(qtexts[j], user_of[j]),
            keys_to_facts,
            args.lg_queries,
        ),
    ]
    run_interleaved(methods, args.queries, cfg.truth, emb)
    # the strict baseline: the numpy scan alone in a tight loop (warm caches)
    tight = np_method("numpy scan, tight loop (M @ q + argpartition)")
    run_interleaved([tight], args.queries, cfg.truth, emb)
    # ours alone in a tight loop too, on new texts for the same vectors (so the query
    # embedding cache misses as before): the like-for-like comparison with the tight scan
    tight_texts = [f"{t} (tight)" for t in qtexts]
    emb.add(tight_texts, np.asarray(cfg.query_vecs))
    ours_tight = Method(
        "ours, tight loop",
        lambda j: ours_search(tight_texts[j], user_of[j]),
        keys_to_facts,
        args.queries,
    )
    run_interleaved([ours_tight], args.queries, cfg.truth, emb)
    emb.remove(tight_texts)
    np_m, ours_m, lg_m = methods

    table_rows = []
    for meth in (ours_m, ours_tight, lg_m, np_m, tight):
        p50, p95, mean = meth.stats()
        table_rows.append(
            f"| {users:,} | {per:,.0f} | {meth.name} | {len(meth.lat_ns):,} "
            f"| {p50:,.1f} | {p95:,.1f} | {mean:,.1f} | {meth.recall:.4f} |"
        )
    cold_us = cold / 1e3
    table_rows.append(
        f"| {users:,} | {per:,.0f} | ours, first search per user (stacks the block) | {users:,} "
        f"| {np.percentile(cold_us, 50):,.1f} | {np.percentile(cold_us, 95):,.1f} "
        f"| {cold_us.mean():,.1f} | n/a |"
    )
    ingest_rows = [
        f"| {users:,} | ours `batch([PutOp] x {BATCH:,})` | {n:,} | {ours_ingest:.2f} "
        f"| {n / ours_ingest:,.0f} |",
        f"| {users:,} | InMemoryStore `batch([PutOp] x {BATCH:,})` | {n:,} | {lg_ingest:.2f} "
        f"| {n / lg_ingest:,.0f} |",
        f"| {users:,} | ours `remember(uid, [facts])` per user, fresh store | {m:,} "
        f"| {remember_s:.2f} | {m / remember_s:,.0f} |",
    ]
    (o50, o95, _), (l50, l95, _) = ours_m.stats(), lg_m.stats()
    (n50, n95, _), (i50, _, _) = tight.stats(), np_m.stats()
    t50, t95, _ = ours_tight.stats()
    verdicts = [
        f"{_ok(l50 / o50 >= TARGET_VS_LANGGRAPH)} [{users:,} users] ours >= "
        f"{TARGET_VS_LANGGRAPH:g}x faster than InMemoryStore: {l50 / o50:,.1f}x at p50 "
        f"({l95 / o95:,.1f}x at p95)",
        f"{_ok(t50 / n50 <= TARGET_VS_NUMPY)} [{users:,} users] ours within "
        f"{TARGET_VS_NUMPY:g}x of the numpy scan (both in a tight loop): {t50 / n50:,.2f}x at "
        f"p50 ({t95 / n95:,.2f}x at p95; interleaved: {o50 / i50:,.2f}x at p50)",
        f"{_ok(t50 / n50 <= TARGET_VS_NUMPY_19)} [{users:,} users] ours within "
        f"{TARGET_VS_NUMPY_19:g}x of the numpy scan (issue 19, both in a tight loop): "
        f"{t50 / n50:,.2f}x at p50",
        f"{_ok(ours_m.recall == 1.0)} [{users:,} users] ours recall@5 = 1.0: "
        f"{ours_m.recall:.4f} (InMemoryStore {lg_m.recall:.4f}, numpy {tight.recall:.4f})",
    ]
    for row in table_rows:
        print(row, flush=True)
    emb.remove(qtexts + warm_texts)
    gc.unfreeze()  # the stores go with this frame; main() collects before the next config
    return table_rows, ingest_rows, verdicts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--facts", type=int, default=100_000, help="facts in each layout")
    parser.add_argument(
        "--users", type=int, nargs="+", default=[1_000, 100], help="user counts, one run each"
    )
    parser.add_argument("--queries", type=int, default=2_000, help="queries for ours and numpy")
    parser.add_argument("--lg-queries", type=int, default=200, help="queries for InMemoryStore")
    parser.add_argument(
        "--remember-facts", type=int, default=10_000, help="facts for the remember() ingest"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 10k facts, 500/100 queries, 2k remember"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.facts, args.queries, args.lg_queries = 10_000, 500, 100
        args.remember_facts = min(args.remember_facts, 2_000)
    args.lg_queries = min(args.lg_queries, args.queries)
    for users in args.users:
        if args.facts // users < K + 1:
            parser.error(f"--users {users}: fewer than {K + 1} facts per user")

    wall = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    fact_vecs = unit_rows(rng, args.facts)
    texts = [fact_text(i) for i in range(args.facts)]
    emb = LookupEmbeddings()
    emb.add(texts, fact_vecs)
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"# store_search: {args.facts:,} facts, {DIMS}-d, users {args.users}, "
        f"{args.queries:,} queries (InMemoryStore {args.lg_queries:,}); "
        f"python {sys.version.split()[0]}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
        f"load avg {load}",
        flush=True,
    )

    search_rows: list[str] = []
    ingest_rows: list[str] = []
    verdicts: list[str] = []
    for users in args.users:
        s, i, v = run_config(args, users, fact_vecs, texts, emb, rng)
        gc.collect()  # free this config's stores before the next one
        search_rows += s
        ingest_rows += i
        verdicts += v

    print("\n### Per-user search (limit=5), latency in microseconds, embedding excluded\n")
    print("| users | facts/user | method | queries | p50 µs | p95 µs | mean µs | recall@5 |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|")
    print("\n".join(search_rows))
    print("\n### Batched ingest, embedding excluded\n")
    print("| users | store / call | items | seconds | items/s |")
    print("|---:|---|---:|---:|---:|")
    print("\n".join(ingest_rows))
    print("\n### Targets\n")
    print("\n".join(verdicts))
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"\nwall time {time.perf_counter() - wall:.1f}s, peak RSS {rss_gib():.1f} GiB, "
        f"load avg {load}"
    )
    return 0 if all(v.startswith("PASS") for v in verdicts) else 1


if __name__ == "__main__":
    raise SystemExit(main())
