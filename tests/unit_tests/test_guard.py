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


@pytest.mark.parametrize(
    "text",
    [
        "User's account password was changed to Summer2024!",
        "User's password has been reset to Winter2025",
        "User uses the password 'hunter2' for everything",
        "User's card CVV is 123",
        "The CVC: 4821",
        "User's SSN is 123-45-6789",
        "User's social security number is 078051120",
    ],
)
def test_forms_an_extractor_writes_are_secrets(text):
    """An extracting model wrote these; each was stored."""
    assert find_secret(text) is not None


@pytest.mark.parametrize(
    "text",
    [
        "User's password was changed yesterday",
        "User reset their password last week",
        "Takes the 123 bus to work",
        "Asked what a CVV is",
        "Works at the social security office since 2019",
    ],
)
def test_talk_about_secrets_is_not_a_secret(text):
    assert find_secret(text) is None
