"""Ingest through the generic engine, this tree beside an older revision, interleaved.

Per store (Chroma in process, FAISS in memory) and per pattern: ``put`` of one new item at
a time, ``put`` replacing an existing item (its old document deleted), and ``batch`` of 50
puts (one vectorstore add). Each round runs every tree once in a fresh process, trees
alternating, so both see the same machine load; the table shows medians over rounds and
the ratio new / old (above 1: faster).

    python bench/vectorstore_ingest.py [--against cd76a16] [--rounds 3] [--items 300]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
PATTERNS = ("new", "replace", "batch50")


def worker(root: str, kind: str, items: int) -> dict[str, float]:
    sys.path.insert(0, root)
    from langgraph.store.base import PutOp

    from langchain_ltm import LongTermMemoryStore
    from langchain_ltm.backends.vectorstore import vectorstore_backend
    from tests.fakes import KeywordEmbeddings

    emb = KeywordEmbeddings(64)
    tmp = Path(tempfile.mkdtemp(prefix="ltm-bench-vs-"))
    try:
        return _rates(LongTermMemoryStore, vectorstore_backend, PutOp, emb, tmp, kind, items)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _rates(store_class, vectorstore_backend, PutOp, emb, tmp, kind, items):
    """Put rates of one store in ``tmp`` (the worker's tree's classes, passed in)."""
    from tests.vectorstores import chroma, faiss

    vs = chroma(emb) if kind == "chroma" else faiss(emb, tmp / "f")
    backend = vectorstore_backend(vs, catalog=tmp / "catalog.sqlite")
    store = store_class(backend, embeddings=emb, fields=["text"])
    rates: dict[str, float] = {}
    start = time.perf_counter()
    for i in range(items):
        store.put(("docs", f"u{i % 10}"), str(i), {"text": f"tea coffee note {i}", "n": i})
    rates["new"] = items / (time.perf_counter() - start)
    start = time.perf_counter()
    for i in range(items):
        store.put(("docs", f"u{i % 10}"), str(i), {"text": f"green tea note {i}", "n": i})
    rates["replace"] = items / (time.perf_counter() - start)
    start = time.perf_counter()
    for b in range(0, items, 50):
        store.batch(
            [
                PutOp(("docs", f"b{b}"), str(i), {"text": f"rain garden {i}", "n": i})
                for i in range(b, min(b + 50, items))
            ]
        )
    rates["batch50"] = items / (time.perf_counter() - start)
    store.close()
    return rates


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--against", default="cd76a16", help="git revision to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--worker", nargs=2, metavar=("ROOT", "KIND"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], args.items)))
        return
    old = tempfile.mkdtemp(prefix="ltm-old-")
    archive = subprocess.run(
        ["git", "-C", str(HERE), "archive", args.against], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", old], input=archive, check=True)
    try:
        compare(args, old)
    finally:
        shutil.rmtree(old, ignore_errors=True)


def compare(args: argparse.Namespace, old: str) -> None:
    """The rounds, alternating the trees, and the table."""
    trees = {"old": old, "new": str(HERE)}
    runs: dict[tuple[str, str], list[dict[str, float]]] = {}
    for r in range(args.rounds):
        for kind in ("chroma", "faiss"):
            order = list(trees) if r % 2 == 0 else list(reversed(trees))
            for name in order:
                env = {**os.environ, "PYTHONPATH": trees[name], "PYTHONWARNINGS": "ignore"}
                command = [sys.executable, __file__, "--items", str(args.items)]
                out = subprocess.run(
                    [*command, "--worker", trees[name], kind],
                    check=True,
                    capture_output=True,
                    text=True,
                    env=env,
                ).stdout
                runs.setdefault((kind, name), []).append(json.loads(out.splitlines()[-1]))
    print(f"against {args.against}, {args.rounds} rounds, {args.items} items, puts/s (median)")
    print("| store | pattern | before | after | after / before |")
    print("|---|---|---|---|---|")
    for kind in ("chroma", "faiss"):
        for pattern in PATTERNS:
            before = statistics.median(x[pattern] for x in runs[(kind, "old")])
            after = statistics.median(x[pattern] for x in runs[(kind, "new")])
            print(f"| {kind} | {pattern} | {before:,.0f} | {after:,.0f} | {after / before:.2f} |")


if __name__ == "__main__":
    main()
