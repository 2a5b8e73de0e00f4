"""A randomized check of the promise: every text a user had remembered stays recoverable.

Hundreds of mixed writes (remember single and batched, update_fact, merge imports, export
and restore) on texts from the labelled pairs, with thresholds low enough that many writes
merge; after every step, each text ever accepted must be the current text or an earlier
version of some fact of the user (normalized as exact dedup compares), until forget.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_ltm import LongTermMemoryStore, normalize_fact
from tests.fakes import KeywordEmbeddings

PAIRS = Path(__file__).resolve().parents[2] / "bench" / "data" / "fact_pairs.jsonl"
TEXTS = sorted(
    {
        t
        for line in PAIRS.read_text().splitlines()
        for t in (json.loads(line)["a"], json.loads(line)["b"])
    }
)


def recoverable(store: LongTermMemoryStore, user: str) -> set[str]:
    return {normalize_fact(v.content) for f in store.list_all(user) for v in f.versions}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_no_accepted_text_ever_vanishes(seed):
    store = LongTermMemoryStore(
        InMemoryVectorStore(KeywordEmbeddings(dims=64)), merge_threshold=0.5, review_threshold=0.2
    )
    check_nothing_is_lost(store, seed)


def check_nothing_is_lost(store: LongTermMemoryStore, seed: int, steps: int = 250) -> None:
    """Random writes on ``store`` (user ``u``); after each, every accepted text is recoverable.

    The store should merge eagerly (``merge_threshold=0.5, review_threshold=0.2`` with
    :class:`~tests.fakes.KeywordEmbeddings` of 64 dims), so that many writes are updates.
    """
    rng = random.Random(seed)
    accepted: set[str] = set()
    for step in range(steps):
        kind = rng.choice(["one", "batch", "update", "merge", "restore", "forget"])
        if kind == "one":
            text = rng.choice(TEXTS)
            if store.remember("u", text).action != "rejected":
                accepted.add(normalize_fact(text))
        elif kind == "batch":
            batch = rng.sample(TEXTS, 5)
            for text, result in zip(batch, store.remember("u", batch), strict=True):
                if result.action != "rejected":
                    accepted.add(normalize_fact(text))
        elif kind == "update" and (facts := store.list_all("u")):
            text = rng.choice(TEXTS)
            result = store.update_fact("u", rng.choice(facts).id, text)
            if result.action == "updated":
                accepted.add(normalize_fact(text))
        elif kind == "merge":
            lines = rng.sample(TEXTS, 3)
            result = store.import_user("u", lines, "merge")
            for text, one in zip(lines, result.results, strict=True):
                if one.action != "rejected":
                    accepted.add(normalize_fact(text))
        elif kind == "restore":
            exported = store.export_user("u")
            store.import_user("u", exported)  # restoring an export in place changes nothing
            assert store.export_user("u") == exported
        elif kind == "forget" and (facts := store.list_all("u")) and rng.random() < 0.2:
            gone = rng.choice(facts)
            assert store.forget("u", gone.id)
            accepted -= {normalize_fact(v.content) for v in gone.versions}
            # a forgotten text may live on in another fact: put those back
            accepted |= recoverable(store, "u") & {normalize_fact(v.content) for v in gone.versions}
        missing = accepted - recoverable(store, "u")
        assert not missing, f"step {step} ({kind}) lost {sorted(missing)[:3]}"
