"""Calibrate the semantic-upsert threshold on labelled pairs of user facts.

Each line of bench/data/fact_pairs.jsonl is {"a": ..., "b": ..., "label": ...} with label
``duplicate`` (paraphrases of one fact), ``updated`` (same slot, new value: "lives in Paris" /
"lives in Berlin") or ``distinct`` (two different facts about the same user).

The script embeds every text once with LocalMiniLMEmbeddings (another ONNX export with
--model-dir, or any LangChain Embeddings with --embeddings module:factory), then prints
per-label cosine quantiles, the cut that best separates duplicate from distinct, and
precision/recall of "duplicate" at thresholds 0.700-0.950.

Usage:
    python bench/calibrate_threshold.py [--data PATH] [--model-dir DIR] [--batch-size N]
    python bench/calibrate_threshold.py --embeddings langchain_openai:OpenAIEmbeddings

Thresholds are model-specific: calibrate again for any other embedding model.
"""

from __future__ import annotations

import argparse
import importlib
import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_ltm.embeddings import LocalMiniLMEmbeddings

HERE = Path(__file__).resolve().parent
LABELS = ("duplicate", "updated", "distinct")


def load_pairs(path: Path) -> list[dict[str, str]]:
    pairs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    unknown = {p["label"] for p in pairs} - set(LABELS)
    if unknown:
        raise SystemExit(f"{path}: unknown labels {sorted(unknown)}")
    return pairs


def similarities(
    pairs: Sequence[dict[str, str]], embeddings: Embeddings
) -> tuple[np.ndarray, float]:
    texts = sorted({p["a"] for p in pairs} | {p["b"] for p in pairs})
    start = time.perf_counter()
    vectors = np.asarray(embeddings.embed_documents(texts), dtype=np.float64)
    seconds = time.perf_counter() - start
    row = {text: i for i, text in enumerate(texts)}
    a = vectors[[row[p["a"]] for p in pairs]]
    b = vectors[[row[p["b"]] for p in pairs]]
    return (a * b).sum(axis=1), seconds


def best_cut(positives: np.ndarray, negatives: np.ndarray) -> tuple[float, float]:
    """Midpoint threshold maximizing balanced accuracy (ties: the higher, safer cut)."""
    scores = np.unique(np.concatenate([positives, negatives]))
    cuts = (scores[:-1] + scores[1:]) / 2
    best_t, best_acc = float(cuts[0]), -1.0
    for t in cuts:
        acc = ((positives >= t).mean() + (negatives < t).mean()) / 2
        if acc >= best_acc:
            best_t, best_acc = float(t), float(acc)
    return best_t, best_acc


def quantile_table(sims: np.ndarray, labels: np.ndarray) -> None:
    print(f"{'label':<10} {'n':>4} {'min':>6} {'p5':>6} {'p50':>6} {'p95':>6} {'max':>6}")
    for label in LABELS:
        s = sims[labels == label]
        q = np.quantile(s, [0.0, 0.05, 0.5, 0.95, 1.0])
        print(f"{label:<10} {len(s):>4} " + " ".join(f"{v:6.3f}" for v in q))


def bootstrap_cut(positives: np.ndarray, negatives: np.ndarray, rounds: int = 1000) -> np.ndarray:
    """5th and 95th percentile of the best cut over resampled label sets."""
    rng = np.random.default_rng(0)
    cuts = [
        best_cut(rng.choice(positives, len(positives)), rng.choice(negatives, len(negatives)))[0]
        for _ in range(rounds)
    ]
    return np.quantile(cuts, [0.05, 0.95])


def threshold_table(sims: np.ndarray, labels: np.ndarray, low: float) -> None:
    dup, upd, dis = (sims[labels == label] for label in LABELS)
    print(
        "t      | dup recall | dup precision vs distinct | dup precision vs all "
        "| updated merged | distinct merged | merge precision (dup+upd)"
    )
    for t in np.round(np.arange(low, 0.950 + 1e-9, 0.025), 3):
        tp, fu, fd = (dup >= t).sum(), (upd >= t).sum(), (dis >= t).sum()
        p_dis = tp / (tp + fd) if tp + fd else float("nan")
        p_all = tp / (tp + fu + fd) if tp + fu + fd else float("nan")
        p_merge = (tp + fu) / (tp + fu + fd) if tp + fu + fd else float("nan")
        print(
            f"{t:.3f}  |   {tp / len(dup):6.3f}   |          {p_dis:6.3f}           "
            f"|        {p_all:6.3f}       |     {fu / len(upd):6.3f}     "
            f"|     {fd / len(dis):6.3f}      |          {p_merge:6.3f}"
        )


def extremes(pairs: Sequence[dict[str, str]], sims: np.ndarray, labels: np.ndarray) -> None:
    for label, reverse, what in (
        ("duplicate", False, "lowest duplicates"),
        ("updated", True, "highest updated"),
        ("distinct", True, "highest distinct"),
    ):
        idx = [i for i in np.argsort(sims) if labels[i] == label]
        print(f"{what}:")
        for i in (idx[::-1] if reverse else idx)[:5]:
            print(f"  {sims[i]:.3f}  {pairs[i]['a']!r} / {pairs[i]['b']!r}")


def make_embeddings(args: argparse.Namespace) -> Embeddings:
    if args.embeddings:
        module, _, factory = args.embeddings.partition(":")
        made: Embeddings = getattr(importlib.import_module(module), factory)()
        return made
    return LocalMiniLMEmbeddings(args.model_dir, batch_size=args.batch_size)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=HERE / "data" / "fact_pairs.jsonl")
    parser.add_argument("--model-dir", type=Path, default=None)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--embeddings", help="module:factory returning a LangChain Embeddings")
    parser.add_argument("--table-from", type=float, default=0.700, help="lowest threshold shown")
    args = parser.parse_args()

    pairs = load_pairs(args.data)
    labels = np.array([p["label"] for p in pairs])
    embeddings = make_embeddings(args)
    start = time.perf_counter()
    embeddings.embed_query("warm up")  # first call loads the ONNX session
    load_seconds = time.perf_counter() - start
    sims, embed_seconds = similarities(pairs, embeddings)
    n_texts = len({p["a"] for p in pairs} | {p["b"] for p in pairs})
    print(f"{len(pairs)} pairs, {n_texts} texts; embeddings {embeddings!r}")
    print(
        f"load + first call {load_seconds * 1000:.0f} ms; embedded {n_texts} texts in "
        f"{embed_seconds * 1000:.0f} ms ({n_texts / embed_seconds:.0f} texts/s, "
        f"batch_size {args.batch_size})\n"
    )

    quantile_table(sims, labels)
    dup, upd, dis = (sims[labels == label] for label in LABELS)
    t, acc = best_cut(dup, dis)
    low, high = bootstrap_cut(dup, dis)
    print(
        f"\nbest duplicate/distinct cut: {t:.3f} (balanced accuracy {acc:.3f}); "
        f"overlap zone [{dis.max():.3f} max distinct, {dup.min():.3f} min duplicate]"
        if dis.max() >= dup.min()
        else f"\nbest duplicate/distinct cut: {t:.3f}; no overlap "
        f"(max distinct {dis.max():.3f} < min duplicate {dup.min():.3f})"
    )
    print(
        f"bootstrap 90% interval of that cut: [{low:.3f}, {high:.3f}]; lowest threshold that "
        f"merges no distinct pair: above {dis.max():.3f}"
    )
    print(
        f"at {t:.3f}: {(upd >= t).mean():.0%} of updated pairs would merge; updated p50 "
        f"{np.median(upd):.3f} vs duplicate p50 {np.median(dup):.3f}: cosine alone cannot "
        f"tell a paraphrase from a changed value\n"
    )
    threshold_table(sims, labels, args.table_from)
    print()
    extremes(pairs, sims, labels)


if __name__ == "__main__":
    main()
