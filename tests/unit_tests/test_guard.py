import json
from pathlib import Path

import pytest

from langchain_ltm.guard import find_secret

CORPUS = [
    json.loads(line)
    for line in (Path(__file__).parent.parent / "data" / "secret_corpus.jsonl")
    .read_text()
    .splitlines()
]


@pytest.mark.parametrize("row", CORPUS, ids=[r["text"][:40] for r in CORPUS])
def test_guard_on_corpus(row):
    reason = find_secret(row["text"])
    assert (reason is not None) is row["secret"], reason
    if reason:
        assert reason.startswith("Not stored:") and "Do not store secrets" in reason


def test_corpus_has_both_kinds():
    assert sum(r["secret"] for r in CORPUS) >= 20
    assert sum(not r["secret"] for r in CORPUS) >= 20
