"""The restatements seam of the write decision: when it is asked, and what its answer does.

No check ships (``bench/_restatement.py`` holds the one measured); these tests plug in a
scripted one that records its calls.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

import pytest
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.embeddings import LocalMiniLMEmbeddings
from langchain_ltm.facts.decision import DecisionPolicy

# a restatement in other words: the word check keeps both (cosine 0.94 with MiniLM)
OLD = "Leo enjoys exploring the woods with Mia."
NEW = "Leo enjoys hiking and exploring the forest with Mia."


@pytest.fixture(scope="module")
def minilm() -> LocalMiniLMEmbeddings:
    return LocalMiniLMEmbeddings()


class Scripted:
    """Answers ``answer`` and records every ``(old, new, score)`` it is asked."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.calls: list[tuple[str, str, float]] = []

    def __call__(self, old: str, new: str, score: float) -> bool:
        self.calls.append((old, new, score))
        return self.answer


def _store(minilm: LocalMiniLMEmbeddings, check: Scripted | None) -> LongTermMemoryStore:
    store = LongTermMemoryStore(InMemoryVectorStore(minilm))
    store.policy = dataclasses.replace(store.policy, restatements=check)
    return store


def test_by_default_a_restatement_in_other_words_is_kept_beside_the_old_text(minilm):
    store = LongTermMemoryStore(InMemoryVectorStore(minilm))
    assert store.policy.restatements is None
    first = store.remember("u", OLD)
    again = store.remember("u", NEW)
    assert again.action == "created"
    assert [(s.id, s.reason) for s in again.similar] == [(first.fact.id, "loses_information")]


def test_a_check_that_says_restated_makes_a_version_and_keeps_the_old_text(minilm):
    check = Scripted(True)
    store = _store(minilm, check)
    first = store.remember("u", OLD)
    again = store.remember("u", NEW)
    assert (again.action, again.fact.id, again.previous) == ("updated", first.fact.id, OLD)
    assert [v.content for v in store.history("u", first.fact.id)] == [OLD, NEW]
    [(old, new, score)] = check.calls
    assert (old, new) == (OLD, NEW)
    assert score == pytest.approx(again.similarity)


def test_a_check_that_says_no_keeps_both(minilm):
    check = Scripted(False)
    store = _store(minilm, check)
    store.remember("u", OLD)
    assert store.remember("u", NEW).action == "created"
    assert len(check.calls) == 1
    assert len(store.list_all("u")) == 2


@pytest.mark.parametrize(
    ("old", "new", "action"),
    [
        # another subject: never a version, whatever the check would say
        ("Leo enjoys exploring the woods with Mia.", "Mia enjoys exploring the woods.", "created"),
        ("My sister is allergic to peanuts", "My son is allergic to peanuts", "created"),
        # the words already carry it, or a value changed: decided without the check
        ("I prefer answers in Spanish", "I prefer my answers in Spanish, please", "updated"),
        ("Has one kid", "Has two kids now", "updated"),
    ],
)
def test_the_check_is_asked_only_when_the_word_checks_leave_it_open(minilm, old, new, action):
    check = Scripted(True)
    store = _store(minilm, check)
    store.remember("u", old)
    assert store.remember("u", new).action == action
    assert check.calls == []


def test_a_backfill_asks_whether_the_current_text_restates_it(minilm):
    """A text said earlier lands in the history, so the question is asked the other way."""
    check = Scripted(False)
    store = _store(minilm, check)
    current = store.remember("u", OLD, observed_at=datetime(2026, 5, 1, tzinfo=timezone.utc))
    earlier = store.remember("u", NEW, observed_at=datetime(2026, 1, 1, tzinfo=timezone.utc))
    assert earlier.action == "created"
    assert [(old, new) for old, new, _ in check.calls] == [(NEW, OLD)]
    assert {f.id: f.content for f in store.list_all("u")}[current.fact.id] == OLD


def test_the_check_survives_with_options_and_must_be_callable(minilm):
    check = Scripted(True)
    store = _store(minilm, check)
    assert store.with_options(merge_threshold=0.9).policy.restatements is check
    assert store.with_options(review_threshold=0.6).policy.restatements is check
    with pytest.raises(TypeError, match="restatements must be None or a callable"):
        DecisionPolicy(0.8, 0.5, restatements=0.6)  # type: ignore[arg-type]
