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

Beside them, in the same loop and on the same vectors:

- numpy floor: the user's rows pre-stacked as one float32 matrix, ``M @ q`` plus
  ``argpartition`` top-5: the physical floor of an exact per-user search
- LangGraph ``SqliteStore`` (``langgraph-checkpoint-sqlite``) with vector search
  (``index={"dims", "embed", "text_fields"}``, sqlite-vec), fed the same PutOps. It needs a
  ``sqlite3`` that can load extensions; a Python built without it (pyenv's default) uses
  ``pysqlite3`` (``pip install pysqlite3-binary``) if installed, else the column says why
  not. It answers the first ``--lg-queries`` queries only (it scans the whole table).

Usage:
    python bench/sqlite_search.py                     # 10k and 100k facts; 100 users and 1
    python bench/sqlite_search.py --facts 10000 --users 10 --queries 200
    python bench/sqlite_search.py --facts 10000 --users 100 --lg-queries 0  # no SqliteStore
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from types import ModuleType
from typing import Any

import numpy as np
from _common import DIMS, LookupEmbeddings, clock, make_layout, unit_rows
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.base import PutOp

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.sqlite import sqlite_backend

K = 5
BATCH = 1_000


def sqlite_with_extensions() -> tuple[ModuleType | None, str]:
    """A ``sqlite3`` module that can load sqlite-vec (what SqliteStore needs), or why not."""
    try:
        import sqlite_vec  # noqa: F401
        from langgraph.store.sqlite import SqliteStore  # noqa: F401
    except ImportError as exc:
        return None, f"not installed ({exc.name}): pip install langgraph-checkpoint-sqlite"
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3, "stdlib sqlite3"
    try:
        import pysqlite3  # type: ignore[import-not-found]
    except ImportError:
        return None, (
            "this Python's sqlite3 cannot load extensions (sqlite-vec); "
            "pip install pysqlite3-binary"
        )
    return pysqlite3, "pysqlite3 (this Python's sqlite3 cannot load extensions)"


def langgraph_sqlite(module: ModuleType, path: str, emb: LookupEmbeddings) -> Any:
    from langgraph.store.sqlite import SqliteStore

    conn = module.connect(path, check_same_thread=False, isolation_level=None)
    # SqliteStore reads "text_fields" (not "fields", which it ignores)
    store = SqliteStore(conn, index={"dims": DIMS, "embed": emb, "text_fields": ["content"]})
    store.setup()
    return store


def run(facts: int, users: int, queries: int, lg_queries: int, seed: int = 0) -> dict[str, object]:
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
    module, _ = sqlite_with_extensions()
    lg = None
    if module is not None and lg_queries > 0:
        lg = langgraph_sqlite(module, os.path.join(folder, "langgraph.sqlite"), emb)
    ingest = {}
    writers: list[tuple[str, Any]] = [("memory", memory), ("sqlite", sqlite)]
    if lg is not None:
        writers.append(("langgraph", lg))
    for name, store in writers:
        t0 = time.perf_counter()
        for start in range(0, facts, BATCH):
            store.batch(
                [
                    PutOp(("memories", f"u{layout.owner[i]}"), f"k{i}", {"content": texts[i]})
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
    assert memory.user_namespace("u0") == ("memories", "u0"), "all stores share namespaces"
    for _, store in stores:
        store.search(("memories", "u0"), query="warm", limit=K)
    if lg is not None:
        lg.search(("memories", "u0"), query="warm", limit=K)
    mats = [np.ascontiguousarray(vecs[rows]) for rows in layout.rows]

    def np_scan(j: int) -> set[int]:
        user = layout.query_user[j]
        s = mats[user] @ layout.query_vecs[j]
        part = np.argpartition(-s, K - 1)[:K] if len(s) > K else np.arange(len(s))
        return set(layout.rows[user][part[np.argsort(-s[part])]].tolist())

    names = [name for name, _ in stores] + ["numpy", "langgraph"]
    times: dict[str, list[float]] = {name: [] for name in names}
    hits = {name: 0 for name in names}
    for j in range(queries):
        ns_user = ("memories", f"u{layout.query_user[j]}")
        t0 = clock()
        found_rows = np_scan(j)
        times["numpy"].append((clock() - t0) / 1e6)
        hits["numpy"] += len(found_rows & layout.truth[j])
        timed: list[tuple[str, Any]] = list(stores)
        if lg is not None and j < lg_queries:
            timed.append(("langgraph", lg))
        for name, store in timed:
            spent = emb.spent_ns
            t0 = clock()
            found = store.search(ns_user, query=qtexts[j], limit=K)
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
    if lg is not None:
        lg.conn.close()
    size = sum(
        os.path.getsize(os.path.join(folder, f))
        for f in os.listdir(folder)
        if f.startswith("bench.sqlite")
    )
    shutil.rmtree(folder, ignore_errors=True)  # about 1 GB a run at the default sizes
    return {
        "facts": facts,
        "users": users,
        "per_user": facts // users,
        **{name: np.percentile(times[name], [50, 95]) if times[name] else None for name in names},
        "recall": {
            name: hits[name] / (K * len(times[name])) if times[name] else None for name in names
        },
        "lg_queries": len(times["langgraph"]),
        "ingest": ingest,
        "cold_ms": cold * 1e3,
        "file_mb": size / 1e6,
    }


def _times(ratio: float) -> str:
    """LangGraph's time against ours, in words that stay true either way round."""
    return f"{ratio:.1f}x slower" if ratio >= 1 else f"{1 / ratio:.1f}x faster"


def _cell(p: Any) -> str:
    return "n/a" if p is None else f"{p[0]:.2f} / {p[1]:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--facts", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--users", type=int, nargs="*", default=[100, 1])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--lg-queries", type=int, default=50, help="queries for LangGraph's SqliteStore (0: off)"
    )
    args = parser.parse_args()
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"python {sys.version.split()[0]}, numpy {np.__version__}, {os.cpu_count()} cores, "
        f"load avg {load}; LangGraph SqliteStore: {sqlite_with_extensions()[1]}"
    )
    print(
        "| facts | users | facts/user | numpy floor p50 / p95 ms | memory p50 / p95 ms | "
        "sqlite p50 / p95 ms | sqlite, no cache p50 / p95 ms | LangGraph SqliteStore p50 / "
        "p95 ms (queries) | sqlite vs floor | SqliteStore vs sqlite | recall@5 mem / sqlite / "
        "no cache / SqliteStore | ingest mem / sqlite / SqliteStore s | sqlite open+1st ms "
        "| file MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for facts in args.facts:
        for users in args.users:
            queries = args.queries if facts // users < 50_000 else max(20, args.queries // 5)
            r: dict[str, Any] = run(facts, users, queries, min(args.lg_queries, queries))
            rc, ing = r["recall"], r["ingest"]
            s50, lg = r["sqlite"][0], r["langgraph"]
            lg_cell = "n/a" if lg is None else f"{_cell(lg)} ({r['lg_queries']})"
            recalls = " / ".join(
                "n/a" if rc[n] is None else f"{rc[n]:.2f}"
                for n in ("memory", "sqlite", "uncached", "langgraph")
            )
            ingests = " / ".join(
                f"{ing[n]:.1f}" if n in ing else "n/a" for n in ("memory", "sqlite", "langgraph")
            )
            print(
                f"| {facts:,} | {users} | {r['per_user']:,} | {_cell(r['numpy'])} | "
                f"{_cell(r['memory'])} | {_cell(r['sqlite'])} | {_cell(r['uncached'])} | "
                f"{lg_cell} | {s50 / r['numpy'][0]:.1f}x | "
                f"{'n/a' if lg is None else _times(lg[0] / s50)} | {recalls} | "
                f"{ingests} | {r['cold_ms']:.1f} | {r['file_mb']:.0f} |",
                flush=True,
            )
    if sqlite_with_extensions()[0] is None:
        print(f"\nLangGraph SqliteStore not measured: {sqlite_with_extensions()[1]}")


if __name__ == "__main__":
    main()
