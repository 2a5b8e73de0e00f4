"""How well `remember` decides "same fact or not" on labelled pairs, per category.

Each line of bench/data/fact_pairs.jsonl is {"a", "b", "category", "label"}: ``a`` is a stored
fact, ``b`` a new one; label ``same`` (paraphrase), ``update`` (changed value, negation,
numbers and dates) or ``different`` (different subject, different attribute, unrelated).
Every text is embedded once (the offline all-MiniLM-L6-v2 by default, or any LangChain
Embeddings with --embeddings module:factory); each pair then runs through the store's own
decision (``langchain_ltm.facts.decision.decide_batch``) with the given thresholds.

Outcomes: ``merged`` (duplicate or updated: one fact, the old text kept as a version),
``open`` (created, with the stored fact listed in ``similar``: both kept, the caller or a
resolver decides), ``apart`` (created, nothing similar).

Usage:
    python bench/dedup_quality.py                 # the defaults, per category
    python bench/dedup_quality.py --sweep         # which thresholds merge no distinct pair
    python bench/dedup_quality.py --merge 0.8 --review 0.5 --embeddings mod:factory
"""

from __future__ import annotations

import argparse
import importlib
import json
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_ltm import DEFAULT_MERGE_THRESHOLD, DEFAULT_REVIEW_THRESHOLD
from langchain_ltm.backends.base import Hit, StoredItem
from langchain_ltm.facts import content_hash
from langchain_ltm.facts.decision import DecisionPolicy, decide_batch

HERE = Path(__file__).resolve().parent
CATEGORIES = {
    "paraphrase": "same",
    "changed_value": "update",
    "negation": "update",
    "numbers_dates": "update",
    "different_subject": "different",
    "different_attribute": "different",
    "unrelated": "different",
}
_NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def load_pairs(path: Path) -> list[dict[str, str]]:
    pairs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    for p in pairs:
        if CATEGORIES.get(p["category"]) != p["label"]:
            raise SystemExit(f"{path}: bad category/label {p['category']}/{p['label']}")
    return pairs


def embed_pairs(pairs: list[dict[str, str]], embeddings: Embeddings) -> dict[str, np.ndarray]:
    texts = sorted({p["a"] for p in pairs} | {p["b"] for p in pairs})
    vectors = np.asarray(embeddings.embed_documents(texts), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return dict(zip(texts, vectors, strict=True))


def outcome(a: str, b: str, vectors: dict[str, np.ndarray], policy: DecisionPolicy) -> str:
    """What remembering ``b`` after ``a`` does, through the store's decision code."""
    stored = StoredItem(
        ("memories", "u"), "a", {"content": a, "content_hash": content_hash(a)}, _NOW, _NOW
    )
    score = float(vectors[a] @ vectors[b])
    exact = {content_hash(a): stored} if content_hash(a) == content_hash(b) else {}
    decision = decide_batch(
        [b],
        [content_hash(b)],
        vectors[b][None, :],
        exact=exact,
        neighbours=[[Hit(stored, score)]],
        taken_keys=set(),
        new_key=lambda digest: "b",
        policy=policy,
    ).decisions[0]
    if decision.action in ("duplicate", "updated"):
        return "merged"
    return "open" if decision.similar else "apart"


def category_table(pairs, vectors, policy: DecisionPolicy) -> dict[str, Counter[str]]:
    counts: dict[str, Counter[str]] = {c: Counter() for c in CATEGORIES}
    for p in pairs:
        counts[p["category"]][outcome(p["a"], p["b"], vectors, policy)] += 1
    merge, review = policy.merge_threshold, policy.review_threshold
    print(f"merge_threshold={merge:.3f} review_threshold={review:.3f}")
    print()
    print("| category | expected | pairs | merged | open (similar) | apart | precision | recall |")
    print("|---|---|---|---|---|---|---|---|")
    for category, label in CATEGORIES.items():
        c = counts[category]
        n = sum(c.values())
        if label == "different":
            # kept apart is right; "open" keeps both facts too (and says they look alike)
            right = c["open"] + c["apart"]
            precision = "n/a"
        else:
            right = c["merged"]
            precision = "1.00" if c["merged"] else "n/a"
        print(
            f"| {category} | {label} | {n} | {c['merged']} | {c['open']} | {c['apart']} "
            f"| {precision} | {right / n:.2f} |"
        )
    merged_right = sum(counts[k]["merged"] for k, v in CATEGORIES.items() if v != "different")
    merged_wrong = sum(counts[k]["merged"] for k, v in CATEGORIES.items() if v == "different")
    positives = sum(sum(counts[k].values()) for k, v in CATEGORIES.items() if v != "different")
    merged = merged_right + merged_wrong
    print()
    print(
        f"merges: {merged} ({merged_wrong} of distinct facts); "
        f"precision {merged_right / merged if merged else 1.0:.3f}, "
        f"recall {merged_right / positives:.3f} of {positives} same/update pairs"
    )
    open_right = sum(counts[k]["open"] for k, v in CATEGORIES.items() if v != "different")
    print(
        f"same/update pairs left open (both kept, listed as similar): {open_right}; "
        f"lost: 0 (a merge keeps the old text as a version)"
    )
    return counts


def sweep(pairs, vectors, restatements=None) -> None:
    """Each (merge, review) threshold pair's merges, with ``restatements`` (the check given by
    ``--restatements``, or ``None``) in every policy, as the category table uses it."""
    print("| merge | review | distinct merged | same/update merged | same/update open |")
    print("|---|---|---|---|---|")
    positives = [p for p in pairs if p["label"] != "different"]
    negatives = [p for p in pairs if p["label"] == "different"]
    for merge in np.arange(0.70, 0.951, 0.025):
        for review in (0.40, 0.45, 0.50, 0.55, 0.60, 0.65):
            policy = DecisionPolicy(
                float(merge), min(review, float(merge)), restatements=restatements
            )
            wrong = sum(outcome(p["a"], p["b"], vectors, policy) == "merged" for p in negatives)
            results = Counter(outcome(p["a"], p["b"], vectors, policy) for p in positives)
            print(
                f"| {merge:.3f} | {review:.2f} | {wrong} | {results['merged']}/{len(positives)} "
                f"| {results['open']} |"
            )


def print_errors(pairs, vectors, policy: DecisionPolicy) -> None:
    print()
    print("Distinct pairs that merged, and same/update pairs kept apart:")
    for p in pairs:
        result = outcome(p["a"], p["b"], vectors, policy)
        score = float(vectors[p["a"]] @ vectors[p["b"]])
        wrong = (p["label"] == "different" and result == "merged") or (
            p["label"] != "different" and result == "apart"
        )
        if wrong:
            print(f"  {p['category']:20} {result:6} {score:.2f}  {p['a']!r} / {p['b']!r}")


def make_embeddings(spec: str | None) -> Embeddings:
    if spec:
        module, _, factory = spec.partition(":")
        return getattr(importlib.import_module(module), factory)()  # type: ignore[no-any-return]
    from langchain_ltm.embeddings import LocalMiniLMEmbeddings

    return LocalMiniLMEmbeddings()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=HERE / "data" / "fact_pairs.jsonl")
    parser.add_argument("--embeddings", help="module:factory returning a LangChain Embeddings")
    parser.add_argument("--merge", type=float, default=DEFAULT_MERGE_THRESHOLD)
    parser.add_argument("--review", type=float, default=DEFAULT_REVIEW_THRESHOLD)
    parser.add_argument("--sweep", action="store_true", help="also print a threshold sweep")
    parser.add_argument("--errors", action="store_true", help="list the pairs decided wrongly")
    parser.add_argument(
        "--restatements",
        action="store_true",
        help="with the candidate TokenRestatements() check (bench/_restatement.py)",
    )
    args = parser.parse_args()
    pairs = load_pairs(args.data)
    embeddings = make_embeddings(args.embeddings)
    vectors = embed_pairs(pairs, embeddings)
    print(f"{len(pairs)} labelled pairs from {args.data.name}")
    print()
    check = None
    if args.restatements:
        from _restatement import TokenRestatements

        check = TokenRestatements()
        print(f"restatements={check!r}")
    if args.sweep:
        sweep(pairs, vectors, check)
        print()
    policy = DecisionPolicy(args.merge, args.review, restatements=check)
    category_table(pairs, vectors, policy)
    if args.errors:
        print_errors(pairs, vectors, policy)


if __name__ == "__main__":
    main()
