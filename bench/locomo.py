"""The write decision and recall on real conversations: LoCoMo (snap-research/locomo).

    python bench/locomo.py --data path/to/locomo10.zip

LoCoMo's 10 conversations come with "observations": short LLM-written facts per session,
each tagged with the dialog turns it came from, the same kind of text
``MemoryMiddleware(extract_with=...)`` produces. The data is CC BY-NC 4.0: fetch it yourself;
it is never committed and never read by tests or CI. Training conversations (26, 30, 41, 42,
43, 44: labels built and rules tuned there) and held-out ones (47, 48, 49, 50: never looked at
while tuning) are reported apart.

It prints, per part:

1. **Decisions**: every observation remembered in order, session by session, one user per
   conversation, with ``observed_at`` the session's date and the dialog ids as metadata,
   through ``LongTermMemoryStore`` on the in-memory engine with the store's defaults.
   The updates are checked against the labelled pairs (``bench/data/locomo_pairs*.jsonl``).
2. **Merges on labelled pairs** (each new observation and its nearest earlier one,
   cosine >= 0.70, labelled same / update / different by the rubric in
   ``bench/data/locomo_rubric.md``): what the decision does with each pair alone, per cosine
   band: how many ``different`` pairs merge (must stay at most 5%) and how many
   ``same``/``update`` pairs do.
3. **Recall**: for each question whose evidence turns have an observation (adversarial
   questions, category 5, left out: the conversation has no answer), whether an
   observation from an evidence turn is among the top 5 / 10 recalled facts (by the dialog
   ids stored with the text that is returned: a merged fact counts only for the text it
   shows). Ours current-only and with history, beside plain vector memory on the same
   embeddings (LangGraph's ``InMemoryStore``: every observation kept, no decision).

``--restatements`` runs all of it with a candidate check that is not shipped,
``bench/_restatement.py``'s ``TokenRestatements`` (restatements in other words, by contextual
token coverage), at its defaults; ``--curve`` prints, for the training pairs only, what that
check merges at other settings (the held-out pairs were measured once, at the defaults).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.memory import InMemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import LookupEmbeddings
from _locomo_data import HELD_OUT, TRAINING, Conversation, load
from _restatement import TokenRestatements
from dedup_quality import outcome

from langchain_ltm import (
    DEFAULT_MERGE_THRESHOLD,
    DEFAULT_REVIEW_THRESHOLD,
    LongTermMemoryStore,
)
from langchain_ltm.facts.decision import DecisionPolicy, _Candidate

HERE = Path(__file__).resolve().parent
PAIRS = {
    "training": HERE / "data/locomo_pairs.jsonl",
    "held-out": HERE / "data/locomo_pairs_holdout.jsonl",
}
ADVERSARIAL = 5  # LoCoMo's category of questions the conversation cannot answer
BANDS = ((0.70, 0.80), (0.80, 0.85), (0.85, 0.90), (0.90, 0.93), (0.93, 1.01))


def embed_all(convs: dict[str, Conversation], embeddings) -> LookupEmbeddings:
    texts = sorted(
        {obs.text for c in convs.values() for _, obs in c.observations()}
        | {q.question for c in convs.values() for q in c.questions}
    )
    vectors = np.asarray(embeddings.embed_documents(texts), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    lookup = LookupEmbeddings()
    lookup.add(texts, vectors)
    return lookup


def remember_all(convs: dict[str, Conversation], lookup: LookupEmbeddings, policy: DecisionPolicy):
    store = LongTermMemoryStore(InMemoryVectorStore(lookup))
    store.policy = policy  # with a candidate check (--restatements) if one is given
    plain = InMemoryStore(index={"dims": 384, "embed": lookup, "fields": ["content"]})
    actions: Counter[str] = Counter()
    updates: list[tuple[str, str, str, float]] = []
    for cid, conv in convs.items():
        for n, (session, obs) in enumerate(conv.observations()):
            meta = {"dialog_ids": list(obs.dialog_ids), "session": session.number}
            result = store.remember(cid, obs.text, metadata=meta, observed_at=session.observed_at)
            actions[result.action] += 1
            if result.action == "updated":
                updates.append((cid, result.previous or "", obs.text, result.similarity or 0.0))
            plain.put(("plain", cid), str(n), {"content": obs.text, **meta})
    return store, plain, actions, updates


def load_labels(part: str) -> list[dict]:
    path = PAIRS[part]
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line]


def decision_table(part: str, actions: Counter[str], updates, labels: list[dict]) -> None:
    by_pair = {(p["conversation"], p["old"], p["new"]): p["label"] for p in labels}
    checked = Counter(by_pair.get((cid, old, new), "unlabelled") for cid, old, new, _ in updates)
    total = sum(actions.values())
    print(f"\n### {part}: decisions, {total} observations remembered session by session\n")
    print(
        "| created | duplicate | updated | updated: labelled same/update "
        "| labelled different | not a labelled pair |"
    )
    print("|---|---|---|---|---|---|")
    print(
        f"| {actions['created']} | {actions['duplicate']} | {actions['updated']} | "
        f"{checked['same'] + checked['update']} | {checked['different']} "
        f"| {checked['unlabelled']} |"
    )


def pair_table(
    part: str, labels: list[dict], lookup: LookupEmbeddings, policy: DecisionPolicy
) -> dict:
    vectors = {t: lookup.rows[t] for p in labels for t in (p["old"], p["new"])}
    rows = {band: Counter() for band in BANDS}
    for p in labels:
        band = next(b for b in BANDS if b[0] <= p["cosine"] < b[1])
        merged = outcome(p["old"], p["new"], vectors, policy) == "merged"
        kind = "different" if p["label"] == "different" else "same"
        rows[band][(kind, merged)] += 1
    print(f"\n### {part}: merges on {len(labels)} labelled pairs, per cosine band\n")
    print(
        "| cosine | pairs | same/update | merged | different | merged (wrong) | precision "
        "| share of different merged |"
    )
    print("|---|---|---|---|---|---|---|---|")
    total = Counter()
    for band, c in [*rows.items(), ("all", None)]:
        c = total if c is None else c
        if band != "all":
            total.update(c)
        same = c[("same", True)] + c[("same", False)]
        diff = c[("different", True)] + c[("different", False)]
        merged = c[("same", True)] + c[("different", True)]
        name = "all" if band == "all" else f"{band[0]:.2f}-{min(band[1], 1.0):.2f}"
        precision = f"{c[('same', True)] / merged:.2f}" if merged else "n/a"
        share = f"{c[('different', True)] / diff:.3f}" if diff else "n/a"
        print(
            f"| {name} | {same + diff} | {same} | {c[('same', True)]} | {diff} | "
            f"{c[('different', True)]} | {precision} | {share} |"
        )
    same = total[("same", True)] + total[("same", False)]
    return {"same_merged": total[("same", True)], "same": same}


def recall_table(part: str, convs: dict[str, Conversation], store, plain) -> None:
    hits = {name: Counter() for name in ("plain", "ours", "ours+history")}
    asked = 0
    for cid, conv in convs.items():
        seen = {d for _, obs in conv.observations() for d in obs.dialog_ids}
        for q in conv.questions:
            evidence = set(q.evidence)
            if q.category == ADVERSARIAL or not evidence & seen:
                continue
            asked += 1
            found = {
                "plain": [
                    set(i.value["dialog_ids"])
                    for i in plain.search(("plain", cid), query=q.question, limit=10)
                ],
                "ours": [
                    set(f.metadata.get("dialog_ids", ()))
                    for f in store.recall(cid, q.question, limit=10)
                ],
                "ours+history": [
                    set(f.metadata.get("dialog_ids", ()))
                    for f in store.recall(cid, q.question, limit=10, include_history=True)
                ],
            }
            for name, ranked in found.items():
                for k in (5, 10):
                    hits[name][k] += any(ids & evidence for ids in ranked[:k])
    print(f"\n### {part}: evidence in the recalled facts, {asked} questions\n")
    print("| memory | hit@5 | hit@10 | hit@10 vs plain |")
    print("|---|---|---|---|")
    base = hits["plain"][10] or 1
    for name, label in (
        ("plain", "plain vector memory (InMemoryStore, every observation)"),
        ("ours", "ours, current facts"),
        ("ours+history", "ours, include_history=True"),
    ):
        h = hits[name]
        print(f"| {label} | {h[5] / asked:.3f} | {h[10] / asked:.3f} | {h[10] / base:.3f} |")


def word_check_cost(labels: list[dict], policy: DecisionPolicy) -> None:
    """Microseconds per candidate for the offline checks the decision runs, caches cold."""
    from langchain_ltm.facts import conflicts, coverage
    from langchain_ltm.facts.decision import _reason, _replaces

    pairs = [(p["old"], p["new"]) for p in labels]
    coverage.read_words.cache_clear()
    conflicts.subjects.cache_clear()
    check = policy.restatements
    if isinstance(check, TokenRestatements):
        check._cache.clear()
    t0 = time.perf_counter()
    for old, new in pairs:
        candidate = _Candidate(key="k", content=old, score=0.85, item=None)
        _replaces(candidate, new, policy)
        _reason(old, new)
    spent = time.perf_counter() - t0
    what = "word checks" if check is None else "word checks and TokenRestatements"
    print(
        f"\n{what}: {spent / len(pairs) * 1e6:.0f} us per candidate "
        f"(replace check and reason, {len(pairs)} pairs at cosine 0.85, caches cold)"
    )
    if isinstance(check, TokenRestatements):
        texts = sorted(check._cache)
        check._cache.clear()
        t0 = time.perf_counter()
        for text in texts:
            check._states(text)
        each = (time.perf_counter() - t0) / max(1, len(texts))
        print(
            f"of which token states: {len(texts)} texts run through the model, "
            f"{each * 1e3:.1f} ms each"
        )


CURVE = (
    (0.80, (0.45, 0.5, 0.55, 0.6, 0.65)),
    (0.85, (0.45, 0.5, 0.55, 0.6, 0.65)),
    (0.90, (0.45, 0.5, 0.55, 0.6, 0.65)),
)


def restatement_curve(labels: list[dict], lookup: LookupEmbeddings, check: TokenRestatements):
    """Training pairs only: what TokenRestatements merges at other settings."""
    vectors = {t: lookup.rows[t] for p in labels for t in (p["old"], p["new"])}
    kinds = Counter("different" if p["label"] == "different" else "same" for p in labels)
    policy = DecisionPolicy(DEFAULT_MERGE_THRESHOLD, DEFAULT_REVIEW_THRESHOLD)
    print(f"\n### training: TokenRestatements settings, {len(labels)} labelled pairs\n")
    print(
        "| min_similarity | min_token_similarity | same/update merged | different merged "
        "| precision |"
    )
    print("|---|---|---|---|---|")
    rows = [("word checks alone", "", policy)]
    for similarity, tokens in CURVE:
        for token in tokens:
            tuned = TokenRestatements(
                check.encoder, min_similarity=similarity, min_token_similarity=token
            )
            tuned._cache = check._cache  # the token states do not depend on the settings
            rows.append((f"{similarity:.2f}", f"{token:.2f}", policy_with(policy, tuned)))
    for similarity, token, p in rows:
        merged = Counter(
            ("different" if x["label"] == "different" else "same")
            for x in labels
            if outcome(x["old"], x["new"], vectors, p) == "merged"
        )
        both = merged["same"] + merged["different"]
        print(
            f"| {similarity} | {token} | {merged['same']} ({merged['same'] / kinds['same']:.0%}) "
            f"| {merged['different']} ({merged['different'] / kinds['different']:.1%}) "
            f"| {merged['same'] / both if both else float('nan'):.2f} |"
        )


def policy_with(policy: DecisionPolicy, check: TokenRestatements | None) -> DecisionPolicy:
    return DecisionPolicy(policy.merge_threshold, policy.review_threshold, restatements=check)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="locomo10.zip or its folder")
    parser.add_argument("--merge", type=float, default=DEFAULT_MERGE_THRESHOLD)
    parser.add_argument("--review", type=float, default=DEFAULT_REVIEW_THRESHOLD)
    parser.add_argument("--part", choices=("training", "held-out", "both"), default="both")
    parser.add_argument(
        "--restatements", action="store_true", help="with the candidate TokenRestatements() check"
    )
    parser.add_argument(
        "--curve", action="store_true", help="TokenRestatements settings on training pairs"
    )
    args = parser.parse_args()
    from langchain_ltm.embeddings import LocalMiniLMEmbeddings

    everything = load(args.data)
    encoder = LocalMiniLMEmbeddings()
    lookup = embed_all(everything, encoder)
    check = TokenRestatements(encoder) if args.restatements or args.curve else None
    policy = policy_with(
        DecisionPolicy(args.merge, args.review), check if args.restatements else None
    )
    print(
        f"merge_threshold={args.merge} review_threshold={args.review}, "
        f"offline all-MiniLM-L6-v2, no resolver, restatements={policy.restatements!r}"
    )
    parts = {"training": TRAINING, "held-out": HELD_OUT}
    for part, ids in parts.items():
        if args.part not in (part, "both"):
            continue
        convs = {cid: everything[cid] for cid in ids if cid in everything}
        labels = load_labels(part)
        store, plain, actions, updates = remember_all(convs, lookup, policy)
        decision_table(part, actions, updates, labels)
        if labels:
            pair_table(part, labels, lookup, policy)
            word_check_cost(labels, policy)
            if args.curve and part == "training" and check is not None:
                restatement_curve(labels, lookup, check)
        recall_table(part, convs, store, plain)


if __name__ == "__main__":
    main()
