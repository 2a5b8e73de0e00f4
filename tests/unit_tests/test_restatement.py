"""TokenRestatements: restatements in other words merge (opt-in), different facts never do."""

from __future__ import annotations

import numpy as np
import pytest
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.embeddings import LocalMiniLMEmbeddings
from langchain_ltm.facts.decision import DecisionPolicy
from langchain_ltm.restatement import TokenRestatements


@pytest.fixture(scope="module")
def minilm() -> LocalMiniLMEmbeddings:
    return LocalMiniLMEmbeddings()


@pytest.fixture(scope="module")
def check(minilm: LocalMiniLMEmbeddings) -> TokenRestatements:
    return TokenRestatements(minilm)


def _cosine(minilm: LocalMiniLMEmbeddings, a: str, b: str) -> float:
    va, vb = np.asarray(minilm.embed_documents([a, b]))
    return float(va @ vb)


RESTATED = [
    (
        "Leo enjoys exploring the woods with Mia.",
        "Leo enjoys hiking and exploring the forest with Mia.",
    ),
    (
        "Priya is considering a career in nursing to help others.",
        "Priya is looking into nursing jobs to help other people.",
    ),
    (
        "Leo enjoys reading fantasy books in the evening.",
        "Leo loves reading fantasy novels in the evening.",
    ),
]


@pytest.mark.parametrize(("old", "new"), RESTATED)
def test_a_restatement_in_other_words_becomes_a_version_with_the_check(minilm, check, old, new):
    store = LongTermMemoryStore(InMemoryVectorStore(minilm), restatements=check)
    first = store.remember("u", old)
    again = store.remember("u", new)
    assert (again.action, again.fact.id, again.previous) == ("updated", first.fact.id, old)
    assert [v.content for v in store.history("u", first.fact.id)] == [old, new]
    assert [f.content for f in store.list_all("u")] == [new]


@pytest.mark.parametrize(("old", "new"), RESTATED)
def test_without_the_check_a_restatement_is_kept_beside_the_old_text(minilm, old, new):
    store = LongTermMemoryStore(InMemoryVectorStore(minilm))
    first = store.remember("u", old)
    again = store.remember("u", new)
    assert again.action == "created"
    assert [s.id for s in again.similar] == [first.fact.id]
    assert len(store.list_all("u")) == 2


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # another event of the same kind, another person, another name, a lost purpose,
        # a lost reason (a changed number or polarity is a value change: test_coverage.py)
        ("Leo signed up for a climbing course.", "Leo finished a climbing course."),
        ("Melanie signed up for a pottery class.", "Melanie made a plate in pottery class."),
        (
            "Leo enjoys exploring the woods with his dogs.",
            "Mia enjoys exploring the woods with her dogs.",
        ),
        (
            "Leo had dinner with Julia at the Italian place.",
            "Leo had dinner with Julian at the Italian place.",
        ),
        (
            "Priya is considering a career in nursing to help others.",
            "Priya is looking into nursing jobs.",
        ),
        (
            "Sam is starting his own bakery due to his love of baking.",
            "Sam is turning his love of baking into a business by opening a bakery.",
        ),
    ],
)
def test_a_different_fact_is_never_merged_by_the_check(minilm, check, old, new):
    store = LongTermMemoryStore(InMemoryVectorStore(minilm), restatements=check)
    store.remember("u", old)
    result = store.remember("u", new)
    assert result.action == "created"
    assert sorted(f.content for f in store.list_all("u")) == sorted([old, new])


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Leo walks his dogs with Julia.", "Leo walks his pups with Julian."),  # a name
        ("Leo walks his two dogs.", "Leo walks his three pups."),  # a number
        ("Leo walks his dogs on Monday.", "Leo walks his pups on Friday."),  # a date
        ("Leo walks his dogs.", "Leo never walks his pups."),  # the polarity
    ],
)
def test_names_numbers_dates_and_polarity_stay_exact_whatever_the_score(check, old, new):
    assert check(old, new, 0.99) is False


def test_below_its_similarity_nothing_is_checked(minilm, check):
    old, new = RESTATED[0]
    score = _cosine(minilm, old, new)
    assert check(old, new, score) is True
    assert check(old, new, check.min_similarity - 0.01) is False


def test_a_backfill_must_be_carried_by_the_current_text(minilm, check):
    """A text said earlier lands in the history: the current text must restate it."""
    from datetime import datetime, timezone

    old, new = RESTATED[0]
    store = LongTermMemoryStore(InMemoryVectorStore(minilm), restatements=check)
    current = store.remember("u", old, observed_at=datetime(2026, 5, 1, tzinfo=timezone.utc))
    earlier = store.remember("u", new, observed_at=datetime(2026, 1, 1, tzinfo=timezone.utc))
    # the stored (later) text lacks "hiking": it does not restate the earlier one
    assert check(new, old, 0.95) is False
    assert earlier.action == "created"
    assert {f.id: f.content for f in store.list_all("u")}[current.fact.id] == old


def test_the_option_survives_with_options_and_is_checked(minilm, check):
    store = LongTermMemoryStore(InMemoryVectorStore(minilm), restatements=check)
    assert store.with_options(merge_threshold=0.9).policy.restatements is check
    with pytest.raises(TypeError, match="restatements must be a callable"):
        LongTermMemoryStore(InMemoryVectorStore(minilm), restatements="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="restatements must be a callable"):
        DecisionPolicy(0.8, 0.5, restatements=0.6)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_similarity": 1.5}, "min_similarity is a cosine"),
        ({"min_token_similarity": "high"}, "min_token_similarity is a cosine"),
        ({"cache_size": -1}, "cache_size must be an int"),
    ],
)
def test_bad_settings_are_refused_with_what_to_change(minilm, kwargs, message):
    with pytest.raises(ValueError, match=message):
        TokenRestatements(minilm, **kwargs)


def test_token_states_are_cached_by_text_up_to_cache_size(minilm):
    small = TokenRestatements(minilm, cache_size=2)
    old, new = RESTATED[0]
    assert small(old, new, 0.95) is True
    assert set(small._cache) == {old, new}
    other_old, other_new = RESTATED[1]
    assert small(other_old, other_new, 0.95) is True
    assert set(small._cache) == {other_old, other_new}
