"""Where SessionMemoryMiddleware's ``min_score`` floor should sit: relevant vs unrelated turns.

Each line of bench/data/session_relevance.jsonl is {"query", "user", "answer", "label"}: a
new user message (``query``), one earlier turn (the user's message and the assistant's
answer) and whether that turn helps answer it: ``relevant``, ``unrelated`` (another topic
of the same user) or ``filler`` (greetings, "ok thanks", "filler message number 0 about
nothing"). We wrote these pairs ourselves (31 queries, 114 pairs): they are a regression
check of the default on one embedding model, not evidence about real conversations.

The numbers are the ones the middleware thresholds: every query's turns are indexed the way
``after_agent`` indexes them (``turn_value``: ``"User: ...\\nAssistant: ..."`` under the
user's session namespace, one put per turn) in a ``LongTermMemoryStore`` over the offline
all-MiniLM-L6-v2 (no download; or any LangChain Embeddings with --embeddings
module:factory), and searched with the query as ``_prepare`` searches; the
score is the store's cosine similarity.

Printed: the score distribution of each label; for candidate floors, how many pairs of each
label pass (recall of relevant turns, precision of what passes); then the middleware's own
choice per query (``relevant_turns=3`` best of that query's turns, above the floor); the
lowest relevant and highest unrelated pairs.

Usage:
    python bench/session_relevance.py
    python bench/session_relevance.py --floors 0.1 0.15 0.2
    python bench/session_relevance.py --embeddings mymodule:make_embeddings  # measure yours
"""

from __future__ import annotations

import argparse
import importlib
import json
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.base import PutOp

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.agents._registry import session_namespace
from langchain_ltm.agents._turns import Turn, turn_value
from langchain_ltm.agents.session import DEFAULT_SESSION_MIN_SCORE
from langchain_ltm.embeddings import LocalMiniLMEmbeddings

HERE = Path(__file__).resolve().parent
LABELS = ("relevant", "unrelated", "filler")
FLOORS = (0.0, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40)
_AT = datetime(2026, 1, 1, tzinfo=timezone.utc)


def load(path: Path) -> list[dict[str, str]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    for row in rows:
        if row.get("label") not in LABELS:
            raise SystemExit(f"{path}: unknown label {row.get('label')!r} in {row}")
    return rows


def make_embeddings(spec: str | None) -> Embeddings:
    if spec:
        module, _, factory = spec.partition(":")
        made: Embeddings = getattr(importlib.import_module(module), factory)()
        return made
    return LocalMiniLMEmbeddings()


def score(rows: list[dict[str, str]], embeddings: Embeddings) -> list[tuple[dict[str, str], float]]:
    """Each pair's score, as the middleware's search returns it (one user per query)."""
    store = LongTermMemoryStore(InMemoryVectorStore(embeddings))
    by_query: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        by_query[row["query"]].append(i)
    scores: dict[int, float] = {}
    for number, (query, members) in enumerate(by_query.items()):
        namespace = session_namespace(f"user{number}")
        ops = [
            PutOp(
                namespace,
                f"t:{i}",
                turn_value("t", Turn(i, rows[i]["user"], rows[i]["answer"]), _AT),
                index=["text"],
            )
            for i in members
        ]
        store.batch(ops)
        for item in store.search(namespace, query=query, limit=len(members)):
            assert item.score is not None
            scores[int(item.key.split(":")[1])] = item.score
    return [(row, scores[i]) for i, row in enumerate(rows)]


def distribution(scored: list[tuple[dict[str, str], float]]) -> None:
    print("| label | pairs | min | p10 | p25 | median | p75 | p90 | max |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label in LABELS:
        s = np.array([x for row, x in scored if row["label"] == label])
        p = np.percentile(s, [10, 25, 50, 75, 90])
        cells = " | ".join(f"{v:.2f}" for v in (s.min(), *p, s.max()))
        print(f"| {label} | {len(s)} | {cells} |")


def floors(scored: list[tuple[dict[str, str], float]], candidates: tuple[float, ...]) -> None:
    total = {label: sum(row["label"] == label for row, _ in scored) for label in LABELS}
    print("| min_score | relevant kept (recall) | unrelated passed | filler passed | precision |")
    print("|---|---|---|---|---|")
    for floor in (None, *candidates):
        passed = {
            label: sum(row["label"] == label and (floor is None or x >= floor) for row, x in scored)
            for label in LABELS
        }
        kept = passed["relevant"]
        sent = sum(passed.values())
        name = "None" if floor is None else f"{floor:.2f}"
        print(
            f"| {name} | {kept}/{total['relevant']} ({kept / total['relevant']:.2f}) "
            f"| {passed['unrelated']}/{total['unrelated']} | {passed['filler']}/{total['filler']} "
            f"| {kept / sent if sent else 1.0:.2f} |"
        )


def as_sent(
    scored: list[tuple[dict[str, str], float]], candidates: tuple[float, ...], k: int = 3
) -> None:
    """What the middleware sends per query: the ``k`` best of its turns, above the floor."""
    by_query: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for row, x in scored:
        by_query[row["query"]].append((row["label"], x))
    n = len(by_query)
    print(f"| min_score | relevant sent | others sent | queries sent no relevant turn (of {n}) |")
    print("|---|---|---|---|")
    for floor in (None, *candidates):
        relevant = other = empty = 0
        for turns in by_query.values():
            best = sorted(turns, key=lambda t: -t[1])[:k]
            sent = [label for label, x in best if floor is None or x >= floor]
            relevant += sent.count("relevant")
            other += len(sent) - sent.count("relevant")
            empty += "relevant" not in sent
        name = "None" if floor is None else f"{floor:.2f}"
        print(f"| {name} | {relevant} | {other} | {empty} |")


def extremes(scored: list[tuple[dict[str, str], float]], n: int = 6) -> None:
    relevant = sorted((x, r) for r, x in scored if r["label"] == "relevant")[:n]
    others = sorted(((x, r) for r, x in scored if r["label"] != "relevant"), reverse=True)
    print("lowest relevant pairs:")
    for x, r in relevant:
        print(f"  {x:.3f}  {r['query']!r} <- {r['user']!r}")
    print("highest unrelated/filler pairs:")
    for x, r in others[:n]:
        print(f"  {x:.3f}  {r['query']!r} <- {r['user']!r} ({r['label']})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=HERE / "data" / "session_relevance.jsonl")
    parser.add_argument("--embeddings", help="module:factory returning a LangChain Embeddings")
    parser.add_argument("--floors", type=float, nargs="+", default=list(FLOORS))
    args = parser.parse_args()
    rows = load(args.data)
    scored = score(rows, make_embeddings(args.embeddings))
    candidates = tuple(args.floors)
    print(
        f"{len(rows)} pairs, {len({r['query'] for r in rows})} queries; "
        f"{args.embeddings or 'all-MiniLM-L6-v2 (offline)'}; "
        f"default min_score {DEFAULT_SESSION_MIN_SCORE:g}"
    )
    print()
    distribution(scored)
    print()
    floors(scored, candidates)
    print()
    as_sent(scored, candidates)
    print()
    extremes(scored)


if __name__ == "__main__":
    main()
