"""Trustworthy writes on the in-memory engine: versions, the three-way decision, resolvers,
lossless export and import. Re-collected on Qdrant (test_qdrant_facts.py) and Postgres
(integration_tests/test_postgres_facts.py) with their own ``store`` fixture."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.base import PutOp, SearchOp

from langchain_ltm import (
    ChatModelResolver,
    FactNotFoundError,
    InvalidFactError,
    KeyTakenError,
    LongTermMemoryStore,
    Resolution,
)
from langchain_ltm.backends.base import Record
from langchain_ltm.facts.text import content_hash
from tests.fakes import KeywordEmbeddings
from tests.unit_tests.test_facts import emb, mem  # noqa: F401  (fixtures)
from tests.unit_tests.test_resolvers import ScriptedChatModel, decisions

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


@pytest.fixture
def store(emb):
    return LongTermMemoryStore(InMemoryVectorStore(emb), upsert_threshold=0.8)


class ListResolver:
    """Answers from a script and records every batch it is asked about."""

    def __init__(self, *answers: Resolution) -> None:
        self.answers = list(answers)
        self.asked: list[list[str]] = []

    def resolve(self, items):
        self.asked.append([item.new_fact for item in items])
        return [self.answers.pop(0) for _ in items]

    async def aresolve(self, items):
        return self.resolve(items)


def every_item(store, user_id):
    """Facts and versions: a filter naming ``version_of`` asks search for versions too."""
    return store.search(
        store.user_namespace(user_id), filter={"version_of": {"$ne": ""}}, limit=1000
    )


async def test_updates_keep_every_text_recoverable(mem, store):
    first = await mem.remember("u1", "I live in Paris")
    second = await mem.update_fact("u1", first.fact.id, "I live in Berlin")
    third = await mem.update_fact("u1", first.fact.id, "I live in Lisbon")
    assert (second.action, third.action) == ("updated", "updated")
    assert second.previous == "I live in Paris" and third.previous == "I live in Berlin"
    versions = await mem.history("u1", first.fact.id)
    assert [v.content for v in versions] == [
        "I live in Paris",
        "I live in Berlin",
        "I live in Lisbon",
    ]
    assert versions[-1].valid_to is None and all(v.valid_to for v in versions[:-1])
    assert [v.content for v in third.fact.history] == ["I live in Paris", "I live in Berlin"]
    (fact,) = await mem.list_all("u1")
    assert fact.content == "I live in Lisbon" and len(fact.history) == 2
    current = await mem.recall("u1", "paris", limit=5)
    assert [(f.content, f.superseded) for f in current] == [("I live in Lisbon", False)]
    found = await mem.recall("u1", "paris", limit=5, include_history=True)
    assert [(f.id, f.content, f.superseded) for f in found] == [
        (first.fact.id, "I live in Paris", True)
    ]
    assert found[0].valid_to == versions[0].valid_to


async def test_as_of_answers_with_what_was_true_then(mem):
    before = datetime.now(timezone.utc) - timedelta(seconds=1)
    made = await mem.remember("u1", "I live in Paris")
    in_paris = datetime.now(timezone.utc)
    await mem.update_fact("u1", made.fact.id, "I live in Berlin")
    then = await mem.recall("u1", "where do I live", as_of=in_paris)
    assert [(f.content, f.superseded) for f in then] == [("I live in Paris", True)]
    now = await mem.recall("u1", "where do I live", as_of=datetime.now(timezone.utc))
    assert [(f.content, f.superseded) for f in now] == [("I live in Berlin", False)]
    assert await mem.recall("u1", "where do I live", as_of=before) == []
    with pytest.raises(ValueError, match="time zone"):
        await mem.recall("u1", "live", as_of=datetime(2026, 1, 1))
    # a moment outside UTC's range raised a bare OverflowError ("date value out of range")
    for edge in (
        datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5))),
        datetime(1, 1, 1, 1, tzinfo=timezone(timedelta(hours=5))),
    ):
        with pytest.raises(ValueError, match=r"as_of: .* is out of range in UTC"):
            await mem.recall("u1", "live", as_of=edge)


async def test_different_subject_is_kept_and_listed_as_similar(mem):
    sister = await mem.remember("u1", "My sister is allergic to peanuts")
    son = await mem.remember("u1", "My son is allergic to peanuts")
    assert son.action == "created" and son.fact.id != sister.fact.id
    assert [(s.id, s.reason) for s in son.similar] == [(sister.fact.id, "different_subject")]
    assert son.similar[0].score >= 0.5
    contents = sorted(f.content for f in await mem.list_all("u1"))
    assert contents == ["My sister is allergic to peanuts", "My son is allergic to peanuts"]


async def test_a_changed_number_is_a_new_version(store):
    lenient = store.with_options(review_threshold=0.3)
    one = lenient.remember("u1", "I have one kid")
    two = lenient.remember("u1", "I have two kids now")
    assert two.action == "updated" and two.fact.id == one.fact.id
    assert [v.content for v in lenient.history("u1", one.fact.id)] == [
        "I have one kid",
        "I have two kids now",
    ]


async def test_the_ambiguous_band_creates_with_similar_and_nothing_merges(store):
    store = store.with_options(merge_threshold=0.95, review_threshold=0.3)
    tea = store.remember("u1", "I like green tea")
    more = store.remember("u1", "I like green tea a lot")
    assert more.action == "created"
    assert [(s.id, s.content, s.reason) for s in more.similar] == [
        (tea.fact.id, "I like green tea", "uncertain")
    ]
    assert len(store.list_all("u1")) == 2


@pytest.mark.parametrize(
    ("answer", "action"),
    [("update", "updated"), ("same", "updated"), ("different", "created")],
)
async def test_resolver_answer_decides_the_ambiguous_case(store, answer, action):
    tea = store.remember("u1", "I like green tea")
    verdict = Resolution(answer, tea.fact.id if answer != "different" else None)
    resolver = ListResolver(verdict)
    resolving = store.with_options(merge_threshold=0.95, review_threshold=0.3, resolver=resolver)
    result = await resolving.aremember("u1", "I like green tea a lot")
    assert resolver.asked == [["I like green tea a lot"]]
    assert result.action == action and result.similar == ()
    facts = resolving.list_all("u1")
    if action == "updated":
        assert [(f.content, [v.content for v in f.history]) for f in facts] == [
            ("I like green tea a lot", ["I like green tea"])
        ]
    else:
        assert len(facts) == 2


async def test_chat_model_resolver_is_asked_once_per_batch(store):
    tea = store.remember("u1", "I like green tea")
    paris = store.remember("u1", "I live in Paris")
    model = ScriptedChatModel(answers=[decisions((1, "update", 1), (2, "different", None))])
    resolving = store.with_options(
        merge_threshold=0.95, review_threshold=0.3, resolver=ChatModelResolver(model)
    )
    results = resolving.remember("u1", ["I like green tea a lot", "I live in Paris France"])
    assert len(model.requests) == 1  # one structured call for the whole batch
    prompt = " ".join(str(m.content) for m in model.requests[0])
    assert "I like green tea a lot" in prompt and "I live in Paris" in prompt
    assert [r.action for r in results] == ["updated", "created"]
    assert results[0].fact.id == tea.fact.id and results[1].fact.id != paris.fact.id


async def test_a_failing_resolver_keeps_both_facts(store, caplog):
    store.remember("u1", "I like green tea")
    model = ScriptedChatModel(answers=[RuntimeError("model is down")])
    resolving = store.with_options(
        merge_threshold=0.95, review_threshold=0.3, resolver=ChatModelResolver(model)
    )
    result = resolving.remember("u1", "I like green tea a lot")
    assert result.action == "created" and len(resolving.list_all("u1")) == 2


def test_a_resolver_without_the_protocol_is_refused(store):
    with pytest.raises(TypeError, match="Resolver protocol"):
        store.with_options(resolver=lambda items: items)


async def test_update_fact_of_someone_else_raises_and_changes_nothing(mem):
    alice = await mem.remember("alice", "I like green tea")
    with pytest.raises(FactNotFoundError, match="no fact with id"):
        await mem.update_fact("bob", alice.fact.id, "I like coffee")
    with pytest.raises(FactNotFoundError):
        await mem.update_fact("alice", "no-such-id", "I like coffee")
    assert [f.content for f in await mem.list_all("alice")] == ["I like green tea"]


async def test_update_to_the_text_of_another_fact_merges_that_fact_in(mem):
    """The text was another fact's: update wrote nothing and answered duplicate, so an agent
    that then forgot the other fact (as remember_fact's description said to do with the new
    fact of a 'similar' answer) lost the text everywhere. It is merged in instead."""
    jazz = (await mem.remember("u1", "I listen to jazz", observed_at=T0)).fact
    said = T0 + timedelta(days=30)
    tea = await mem.remember("u1", "I like green tea", metadata={"session": 2}, observed_at=said)
    merged = await mem.update_fact("u1", jazz.id, "i like green tea.")
    assert (merged.action, merged.merged, merged.previous) == (
        "updated",
        tea.fact.id,
        "I listen to jazz",
    )
    assert merged.fact.id == jazz.id and merged.fact.content == "i like green tea."
    (fact,) = await mem.list_all("u1")
    assert (fact.id, fact.content, dict(fact.metadata)) == (
        jazz.id,
        "i like green tea.",
        {"session": 2},  # as the merged fact's text was said
    )
    assert [(v.content, v.valid_from, v.valid_to) for v in fact.history] == [
        ("I listen to jazz", T0, said)  # the tea fact's text began then
    ]
    assert fact.valid_from == said and fact.created_at == jazz.created_at
    assert await mem.forget("u1", tea.fact.id) is False  # gone with the merge: no text lost
    assert [v.content for v in await mem.history("u1", jazz.id)] == [
        "I listen to jazz",
        "i like green tea.",
    ]
    same = await mem.update_fact("u1", jazz.id, "I like green tea")  # its own text now
    assert (same.action, same.fact.id, same.merged) == ("duplicate", jazz.id, None)


async def test_a_merged_text_said_before_the_current_one_is_current_from_now(mem):
    """The other fact's text began before this fact's current text: the update makes it
    current now, as any update (with the other fact's metadata)."""
    old = await mem.remember("u1", "I like green tea", metadata={"s": 1}, observed_at=T0)
    later = (await mem.remember("u1", "I listen to jazz", observed_at=T0 + timedelta(1))).fact
    before = datetime.now(timezone.utc)
    merged = await mem.update_fact("u1", later.id, "I like green tea")
    assert merged.merged == old.fact.id
    (fact,) = await mem.list_all("u1")
    assert fact.content == "I like green tea" and fact.valid_from >= before
    assert fact.history[0].valid_to == fact.valid_from and dict(fact.metadata) == {"s": 1}


async def test_a_pinned_fact_merged_in_leaves_the_fact_pinned(mem):
    spanish = (await mem.remember("u1", "Prefers answers in Spanish")).fact
    french = (await mem.remember("u1", "Prefers answers in French", pinned=True)).fact
    merged = await mem.update_fact("u1", spanish.id, "Prefers answers in French")
    assert merged.merged == french.id and merged.fact.pinned
    (fact,) = await mem.list_all("u1")
    assert fact.id == spanish.id and fact.pinned
    assert [v.content for v in fact.versions] == [
        "Prefers answers in Spanish",
        "Prefers answers in French",
    ]


async def test_update_and_forget_of_the_merged_fact_lose_no_text_in_either_order(mem):
    """An agent that updates the similar fact and forgets the new one (the older tool
    description's advice, or both calls in one message) keeps the new text either way."""
    for order in ("update first", "forget first"):
        user = f"u-{order}"
        spanish = (await mem.remember(user, "Prefers answers in Spanish")).fact
        french = (await mem.remember(user, "Prefers answers in French")).fact
        steps = [
            ("update_fact", (user, spanish.id, "Prefers answers in French")),
            ("forget", (user, french.id)),
        ]
        for name, args in steps if order == "update first" else steps[::-1]:
            await getattr(mem, name)(*args)
        (fact,) = await mem.list_all(user)
        assert [v.content for v in fact.versions] == [
            "Prefers answers in Spanish",
            "Prefers answers in French",
        ], order


async def test_update_to_the_text_of_a_fact_with_history_changes_nothing(mem):
    """Merged in, the other fact's earlier versions would be lost: nothing changes, and the
    answer names the fact that keeps the text and says not to forget it."""
    rent = (await mem.remember("u1", "My rent is 1200 euros")).fact
    await mem.update_fact("u1", rent.id, "My rent is 1300 euros")
    jazz = (await mem.remember("u1", "I listen to jazz")).fact
    before = await mem.export_user("u1")
    kept = await mem.update_fact("u1", jazz.id, "My rent is 1300 euros")
    assert (kept.action, kept.fact.id, kept.merged) == ("duplicate", rent.id, None)
    assert rent.id in kept.reason and "earlier versions" in kept.reason
    assert "do not forget it" in kept.reason and "nothing changed" in kept.reason
    assert await mem.export_user("u1") == before


async def test_update_to_the_text_of_a_clients_fact_merges_that_fact_in(mem, store):
    """A client's fact (LangMem's ``{"content": ...}``, no hash of ours) holds its text:
    ``remember`` of it answers ``duplicate``, but ``update_fact`` to it looked for a hash
    only, so two current facts held one text. It merges as a fact of ours does, and one
    with earlier versions of its own is kept apart as well."""
    namespace = store.user_namespace("u1")
    store.put(namespace, "x1", {"content": "Plays the violin on weekends"})
    paris = (await mem.remember("u1", "Lives in Paris")).fact
    assert (await mem.remember("u1", "Plays the violin on weekends")).action == "duplicate"
    merged = await mem.update_fact("u1", paris.id, "plays the violin on weekends.")
    assert (merged.action, merged.merged, merged.fact.id) == ("updated", "x1", paris.id)
    (fact,) = await mem.list_all("u1")
    assert [v.content for v in fact.versions] == [
        "Lives in Paris",
        "plays the violin on weekends.",
    ]
    store.put(namespace, "x2", {"content": "Owns a red bicycle"})
    store.put(namespace, "x2", {"content": "Owns a blue bicycle"})  # x2 has a version
    jazz = (await mem.remember("u1", "Listens to jazz")).fact
    kept = await mem.update_fact("u1", jazz.id, "Owns a blue bicycle")
    assert (kept.action, kept.fact.id, kept.merged) == ("duplicate", "x2", None)
    assert "earlier versions" in kept.reason
    assert sorted(f.content for f in await mem.list_all("u1")) == [
        "Listens to jazz",
        "Owns a blue bicycle",
        "plays the violin on weekends.",
    ]


async def test_a_text_is_never_merged_into_a_fact_that_expires_sooner(mem, clock):
    """Merged, the text would expire with the fact: a lasting one, or one that expires later
    than the fact would from now, is not merged. A text that was to expire sooner merges
    and takes the fact's lifetime."""
    lost = (await mem.remember("u1", "Reported a lost card", ttl=60)).fact
    card = (await mem.remember("u1", "Has a blue card")).fact
    kept = await mem.update_fact("u1", lost.id, "Has a blue card")
    assert (kept.action, kept.fact.id) == ("duplicate", card.id) and "expire" in kept.reason
    allergy = (await mem.remember("u3", "Allergic to penicillin", ttl=525_600)).fact  # a year
    tennis = (await mem.remember("u3", "Plays tennis on Sundays", ttl=5)).fact
    kept = await mem.update_fact("u3", tennis.id, "Allergic to penicillin")
    assert (kept.action, kept.fact.id) == ("duplicate", allergy.id) and kept.merged is None
    clock.advance(10)  # the 5-minute fact is gone; the year-long text is not
    assert [f.content for f in await mem.list_all("u3")] == ["Allergic to penicillin"]
    soon = (await mem.remember("u4", "Is at the dentist today", ttl=5)).fact
    week = (await mem.remember("u4", "Is on holiday", ttl=10_080)).fact
    merged = await mem.update_fact("u4", week.id, "Is at the dentist today")
    assert merged.merged == soon.id and merged.fact.ttl_minutes == 10_080
    assert sorted(f.content for f in await mem.list_all("u1")) == [
        "Has a blue card",
        "Reported a lost card",
    ]
    brief = (await mem.remember("u2", "Is in Rome this week", ttl=60)).fact
    home = (await mem.remember("u2", "Lives in Paris")).fact
    merged = await mem.update_fact("u2", home.id, "Is in Rome this week")
    assert merged.merged == brief.id and merged.fact.ttl_minutes is None
    clock.advance(120)
    (fact,) = await mem.list_all("u2")
    assert [v.content for v in fact.versions] == ["Lives in Paris", "Is in Rome this week"]


async def test_forget_removes_the_fact_and_its_versions(mem, store):
    made = await mem.remember("u1", "I live in Paris")
    await mem.update_fact("u1", made.fact.id, "I live in Berlin")
    keep = await mem.remember("u1", "I listen to jazz")
    assert len(every_item(store, "u1")) == 3  # two facts, one earlier version
    assert await mem.forget("u1", made.fact.id) is True
    assert [i.key for i in every_item(store, "u1")] == [keep.fact.id]
    assert await mem.history("u1", made.fact.id) == []


async def test_min_score_keeps_weak_matches_out(mem):
    await mem.remember("u1", ["I like green tea", "I listen to jazz"])
    everything = await mem.recall("u1", "green tea", limit=5)
    assert len(everything) == 2 and all(isinstance(f.score, float) for f in everything)
    strong = await mem.recall("u1", "green tea", limit=5, min_score=0.5)
    assert [f.content for f in strong] == ["I like green tea"]
    with pytest.raises(ValueError, match="min_score"):
        await mem.recall("u1", "tea", min_score=2)


async def test_export_then_restore_is_exact_and_idempotent(mem, store):
    made = await mem.remember("u1", "I live in Paris")
    await mem.update_fact("u1", made.fact.id, "I live in Berlin")
    await mem.remember("u1", ["I listen to jazz", "My sister is allergic to peanuts"])
    store.put(store.user_namespace("u1"), "extra", {"content": "I like tea", "mood": "calm"})
    exported = await mem.export_user("u1")
    assert await mem.clear_user("u1") == 5
    restored = await mem.import_user("u1", exported)
    assert restored.restored == 4 and restored.conflicts == ()
    assert await mem.export_user("u1") == exported
    again = await mem.import_user("u1", exported)
    assert again.restored == 4 and await mem.export_user("u1") == exported
    assert len(every_item(store, "u1")) == 5
    berlin = next(e for e in exported if e["content"] == "I live in Berlin")
    assert [v["content"] for v in berlin["history"]] == ["I live in Paris"]
    extra = next(e for e in exported if e["id"] == "extra")
    assert extra["metadata"] == {"mood": "calm"}
    found = await mem.recall("u1", "paris", include_history=True)
    assert found[0].id == made.fact.id and found[0].superseded


async def test_restore_into_another_user_and_conflicts(mem):
    await mem.remember("u1", ["I live in Paris", "I listen to jazz"])
    exported = await mem.export_user("u1")
    await mem.remember("u2", "i listen to jazz")  # same text, another id
    result = await mem.import_user("u2", exported)
    assert result.restored == 1 and len(result.conflicts) == 1
    assert sorted(f.content for f in await mem.list_all("u2")) == [
        "I live in Paris",
        "i listen to jazz",
    ]


async def test_merge_import_redecides_and_dry_run_writes_nothing(mem):
    await mem.remember("u1", "I like green tea")
    lines = ["i like green tea.", "I listen to jazz", {"content": "My cat is called Tom"}]
    dry = await mem.import_user("u1", lines, "merge", dry_run=True)
    assert [r.action for r in dry.results] == ["duplicate", "created", "created"] and dry.dry_run
    assert len(await mem.list_all("u1")) == 1
    done = await mem.import_user("u1", lines, "merge")
    assert done.counts() == {"duplicate": 1, "created": 2}
    assert len(await mem.list_all("u1")) == 3


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"content": ""}, "record 2: content is empty"),
        ({"content": "ok", "created_at": "yesterday"}, "record 2"),
        ({"content": "ok", "history": [{"content": None}]}, r"record 2: history\[0\]: content"),
        ({"content": "ok", "created_at": 5}, "record 2: created_at must be an ISO 8601 string"),
        (
            {"content": "ok", "history": [{"content": "a", "valid_from": 20200101}]},
            r"record 2: history\[0\]: valid_from must be an ISO 8601 string",
        ),
        (
            {
                "content": "ok",
                "history": [
                    {"content": "a", "valid_from": "2020-01-01T00:00:00Z"},
                    {
                        "content": "b",
                        "valid_from": "2022-01-01T00:00:00Z",
                        "valid_to": "2020-06-01T00:00:00Z",
                    },
                ],
            },
            r"record 2: history\[1\]: valid_to 2020-06-01T00:00:00\+00:00 is before valid_from",
        ),
        ({"content": "ok", "metadata": [1]}, "metadata must be an object"),
        ({"content": "ok", "id": "a@1"}, "may not contain '@'"),
        # a NUL passed every check, then failed the write on Postgres part way through
        ({"content": "ok", "id": "bad\x00id"}, r"record 2: id 'bad\\x00id' contains a NUL"),
        ({"content": "ok", "id": "bad\ud800"}, r"record 2: id .* lone surrogate"),
        ({"content": "ok", "id": 7}, "record 2: id must be a non-empty string"),
        (42, "record 2 must be an object"),
        ({"id": "x", "content": "ok", "history": {"content": "a"}}, "history must be a list"),
        ({"id": "x", "content": "ok", "history": "Lived in Paris"}, "history must be a list"),
        ({"content": "my password is hunter2"}, "record 2"),
        (
            {"id": "x", "content": "ok", "history": [{"content": "my password is hunter2"}]},
            r"record 2: history\[0\]: .*password",
        ),
    ],
)
async def test_a_bad_import_record_writes_nothing(mem, bad, message):
    with pytest.raises(InvalidFactError, match=message):
        await mem.import_user("u1", [{"content": "I like green tea"}, bad])
    assert await mem.list_all("u1") == []


@pytest.mark.parametrize("records", ["tea", {"content": "Likes tea", "id": "f1"}, None, b"x"])
async def test_records_that_are_not_a_list_are_refused(mem, records):
    """One exported record (a dict) was imported as its field names, a text as its letters."""
    for mode in ("restore", "merge"):
        with pytest.raises(InvalidFactError, match="records must be a list"):
            await mem.import_user("u1", records, mode)
    assert await mem.list_all("u1") == []
    lines = ({"content": text} for text in ("Likes tea", "Has a dog"))  # any iterable is
    assert len((await mem.import_user("u1", lines, "merge")).results) == 2


async def test_a_merge_import_keeps_pinned(mem):
    """A merge (and a record without an id) re-decides each text and dropped ``pinned``:
    the profile fact came back unpinned and left the middleware's profile block."""
    records = [
        {"content": "Name is Alice", "pinned": True},
        {"content": "Likes green tea"},
        {"id": "f9", "content": "Works at a bakery", "pinned": True},
    ]
    done = await mem.import_user("u1", records, "merge")
    assert [(r.action, r.fact.pinned) for r in done.results] == [
        ("created", True),
        ("created", False),
        ("created", True),
    ]
    assert done.sources == ((0, "Name is Alice"), (1, "Likes green tea"), (2, "Works at a bakery"))
    assert sorted(f.content for f in await mem.pinned("u1")) == [
        "Name is Alice",
        "Works at a bakery",
    ]
    again = await mem.import_user("u1", records, "merge")  # duplicates: nothing changes
    assert [r.action for r in again.results] == ["duplicate"] * 3
    assert len(await mem.pinned("u1")) == 2 and len(await mem.list_all("u1")) == 3
    dry = await mem.import_user("u2", records, "merge", dry_run=True)
    assert [r.action for r in dry.results] == ["created"] * 3 and await mem.list_all("u2") == []


async def test_an_older_export_never_restores_over_newer_texts(mem):
    made = await mem.remember("u1", "My rent is 1200")
    older = await mem.export_user("u1")
    await mem.update_fact("u1", made.fact.id, "My rent is 1350")
    newer = await mem.export_user("u1")
    result = await mem.import_user("u1", older)
    assert result.restored == 0 and result.conflicts == (made.fact.id,)
    # its text is an earlier version of the same fact: not "another fact has it"
    assert result.conflict_reasons == ((made.fact.id, "other_texts"),)
    assert await mem.export_user("u1") == newer  # 1350 still current, 1200 its version
    merged = await mem.import_user("u1", older, "merge")  # what the conflict suggests
    assert merged.counts() == {"duplicate": 1} and await mem.export_user("u1") == newer
    # an export carrying every stored text restores over the older state
    await mem.clear_user("u1")
    await mem.import_user("u1", older)
    again = await mem.import_user("u1", newer)
    assert again.restored == 1 and again.conflicts == ()
    assert await mem.export_user("u1") == newer


async def test_an_older_export_never_gives_an_expiry_back_to_a_fact_kept_for_good(mem, clock):
    """Restoring a backup taken while a text had a TTL, after the user said it again for
    good and pinned it, put the old expiry back and unpinned it: the text was gone soon."""
    made = await mem.remember("u1", "Is allergic to penicillin", ttl=1, metadata={"src": "x"})
    backup = await mem.export_user("u1")
    clock.advance(0.25)
    again = await mem.remember("u1", "Is allergic to penicillin", pinned=True)
    assert again.fact.id == made.fact.id and again.fact.expires_at is None
    kept = await mem.export_user("u1")
    result = await mem.import_user("u1", backup)
    assert result.restored == 0 and result.conflicts == (made.fact.id,)
    assert result.conflict_reasons == ((made.fact.id, "newer"),)
    assert await mem.export_user("u1") == kept
    clock.advance(5)  # past the backup's expiry: the text the user keeps is still there
    (fact,) = await mem.list_all("u1")
    assert (fact.content, fact.expires_at, fact.ttl_minutes, fact.pinned) == (
        "Is allergic to penicillin",
        None,
        None,
        True,
    )
    assert [f.id for f in await mem.recall("u1", "penicillin", include_history=True)] == [
        made.fact.id
    ]
    # the backup restores once the fact is gone (forgotten on purpose), and is idempotent
    await mem.forget("u1", made.fact.id)
    assert (await mem.import_user("u1", backup)).expired == (made.fact.id,)
    clock.now -= timedelta(minutes=5)
    assert (await mem.import_user("u1", backup)).restored == 1
    assert (await mem.import_user("u1", backup)).restored == 1
    assert await mem.export_user("u1") == backup


async def test_two_records_with_one_id_are_refused(mem):
    records = [{"id": "abc", "content": "Likes tea"}, {"id": "abc", "content": "Likes jazz"}]
    with pytest.raises(InvalidFactError, match="Records 1 and 2 have the same id 'abc'"):
        await mem.import_user("u1", records)
    assert await mem.list_all("u1") == []


async def test_two_records_with_one_text_restore_the_first(mem):
    """The second was refused with the whole restore (an export holds two such facts when
    a client put one text twice): it is a conflict, as for a text the user already has."""
    records = [{"id": "a", "content": "I like tea"}, {"id": "b", "content": "i like tea."}]
    done = await mem.import_user("u1", records)
    assert (done.restored, done.conflicts) == (1, ("b",))
    assert done.conflict_reasons == (("b", "earlier_record"),)
    assert [(f.id, f.content) for f in await mem.list_all("u1")] == [("a", "I like tea")]
    again = await mem.import_user("u1", records)  # "a" holds it now
    assert again.conflict_reasons == (("b", "same_text"),)
    with pytest.raises(ValueError, match="mode"):
        await mem.import_user("u1", records, "replace")


async def test_a_fact_from_version_0_1_keeps_its_inline_history(mem, store):
    namespace = store.user_namespace("u1")
    store.put(
        namespace,
        "old",
        {"content": "I live in Berlin", "content_hash": "x", "history": ["I live in Paris"]},
    )
    (fact,) = await mem.list_all("u1")
    assert [v.content for v in fact.history] == ["I live in Paris"]
    result = await mem.update_fact("u1", "old", "I live in Lisbon")
    assert [v.content for v in result.fact.history] == ["I live in Paris", "I live in Berlin"]
    assert [v.content for v in await mem.history("u1", "old")] == [
        "I live in Paris",
        "I live in Berlin",
        "I live in Lisbon",
    ]
    assert "history" not in store.get(namespace, "old").value


def put_0_1_fact(store, user_id, fact_id, content, earlier):
    """A fact as 0.1 stored it: its earlier texts inline, no dates, no version items."""
    value = {"content": content, "content_hash": content_hash(content), "history": earlier}
    store.put(store.user_namespace(user_id), fact_id, value)  # a new key: written as it is


def texts_with_dates(versions):
    return [(v.content, v.valid_from, v.valid_to) for v in versions]


async def test_a_client_put_over_a_0_1_fact_keeps_its_inline_texts(mem, store, clock):
    """A put over a fact written by 0.1 (LangMem's update) kept the text it replaced as a
    version but not the earlier texts held inline in the value: they were gone from
    history and export."""
    said = clock.now
    put_0_1_fact(store, "u1", "old", "I live in Rome", ["I live in Paris", "I live in Berlin"])
    clock.advance(5)
    await mem.put(store.user_namespace("u1"), "old", {"content": "I live in Tokyo"})
    assert texts_with_dates(await mem.history("u1", "old")) == [
        ("I live in Paris", said, said),  # as history() read them before the put
        ("I live in Berlin", said, said),
        ("I live in Rome", said, clock.now),
        ("I live in Tokyo", clock.now, None),
    ]
    (record,) = await mem.export_user("u1")
    assert [h["content"] for h in record["history"]] == [
        "I live in Paris",
        "I live in Berlin",
        "I live in Rome",
    ]
    value = store.get(store.user_namespace("u1"), "old").value
    assert "history" not in value and value["versions"] == 3
    # a put with a TTL: every earlier text takes it (versions never outlive their fact)
    put_0_1_fact(store, "u1", "music", "I like jazz", ["I like rock"])
    await mem.put(store.user_namespace("u1"), "music", {"content": "I like blues"}, ttl=60)
    ends = clock.now + timedelta(minutes=60)
    assert [(v.content, v.expires_at) for v in await mem.history("u1", "music")] == [
        ("I like rock", ends),
        ("I like jazz", ends),
        ("I like blues", ends),
    ]


async def test_a_rewrite_of_a_0_1_fact_leaves_its_inline_texts_dated_as_they_were(
    mem, store, clock
):
    """Inline, a 0.1 fact's earlier texts end where the fact was last written: a rewrite
    (a value read, changed and put back; a pin by remember or by a merge import) moved
    their end to the rewrite, overlapping the texts after them."""
    said = clock.now
    put_0_1_fact(store, "u1", "city", "I live in Rome", ["I live in Paris"])
    put_0_1_fact(store, "u1", "music", "I like jazz", ["I like rock"])
    put_0_1_fact(store, "u1", "pet", "I have a dog", ["I have a cat"])
    clock.advance(5)
    namespace = store.user_namespace("u1")
    value = store.get(namespace, "city").value
    await mem.put(namespace, "city", {**value, "content": "I live in Tokyo"})
    assert texts_with_dates(await mem.history("u1", "city")) == [
        ("I live in Paris", said, said),
        ("I live in Rome", said, clock.now),
        ("I live in Tokyo", clock.now, None),
    ]
    assert (await mem.remember("u1", "I like jazz", pinned=True)).action == "duplicate"
    await mem.import_user("u1", [{"content": "I have a dog", "pinned": True}], "merge")
    for fact_id, earlier, current in (
        ("music", "I like rock", "I like jazz"),
        ("pet", "I have a cat", "I have a dog"),
    ):
        assert texts_with_dates(await mem.history("u1", fact_id)) == [
            (earlier, said, said),
            (current, said, None),
        ]
        assert "history" not in store.get(namespace, fact_id).value
    assert [f.id for f in await mem.pinned("u1")] == ["music", "pet"]


async def test_prune_history_counts_a_0_1_facts_inline_texts(mem, store, clock):
    """prune_history only searched version items: a 0.1 fact's inline texts were never
    pruned (keep=0 answered 0 and left them all)."""
    said = clock.now
    namespace = store.user_namespace("u1")
    put_0_1_fact(store, "u1", "city", "I live in Rome", ["I live in Paris", "I live in Berlin"])
    put_0_1_fact(store, "u1", "music", "I like jazz", ["I like rock"])
    made = (await mem.remember("u1", "I have a dog")).fact
    await mem.update_fact("u1", made.id, "I have two dogs")
    clock.advance(5)
    assert await mem.prune_history("u1", "city", keep=1) == 1
    assert texts_with_dates(await mem.history("u1", "city")) == [
        ("I live in Berlin", said, said),  # the one kept, dated as it was
        ("I live in Rome", said, None),
    ]
    assert await mem.prune_history("u1", keep=5) == 0
    assert "history" in store.get(namespace, "music").value  # nothing to prune: as it was
    assert await mem.prune_history("u1", keep=0) == 3  # Berlin, rock and "I have a dog"
    assert sorted((f.content, f.history) for f in await mem.list_all("u1")) == [
        ("I have two dogs", ()),
        ("I like jazz", ()),
        ("I live in Rome", ()),
    ]
    assert "history" not in store.get(namespace, "music").value


async def test_inline_texts_written_out_never_overwrite_a_stored_version(mem, store):
    """A client's own ``history`` field put over a fact with versions reads as 0.1 inline
    texts; written out as @1..@n they would have replaced the stored version @1."""
    namespace = store.user_namespace("u1")
    made = (await mem.remember("u1", "I live in Paris")).fact
    await mem.update_fact("u1", made.id, "I live in Berlin")  # Paris is @1
    await mem.put(namespace, made.id, {"content": "I live in Berlin", "history": ["a note"]})
    assert (await mem.remember("u1", "I live in Berlin", pinned=True)).action == "duplicate"
    texts = [v.content for v in await mem.history("u1", made.id)]
    assert sorted(texts) == ["I live in Berlin", "I live in Paris", "a note"]
    assert "history" not in store.get(namespace, made.id).value


async def test_upgrading_0_1_facts_lets_recall_find_their_earlier_texts(mem, store, clock):
    """A 0.1 fact's inline texts are no embedded items: recall(include_history=True) and
    as_of never found them, until some write of that fact wrote them out."""
    namespace = store.user_namespace("u1")
    made = clock.now
    store.put(namespace, "city", {"content": {"draft": 1}})  # no fact: kept as it is
    clock.advance(10)  # 0.1 wrote the fact then, and updated it 10 minutes later
    put_0_1_fact(store, "u1", "city", "I live in Rome", ["I live in Paris"])
    put_0_1_fact(store, "u2", "music", "I like jazz", ["I like rock"])
    assert await mem.upgrade_legacy_facts() == 2
    assert await mem.upgrade_legacy_facts() == 0  # once is enough
    found = await mem.recall("u1", "paris", limit=5, include_history=True)
    assert [(f.id, f.content, f.superseded) for f in found] == [("city", "I live in Paris", True)]
    then = await mem.recall("u1", "where do I live", as_of=made + timedelta(minutes=5))
    assert [(f.content, f.superseded) for f in then] == [("I live in Paris", True)]
    assert texts_with_dates(await mem.history("u1", "city")) == [
        ("I live in Paris", made, made + timedelta(minutes=10)),
        ("I live in Rome", made + timedelta(minutes=10), None),
    ]
    assert [v.content for v in await mem.history("u2", "music")] == ["I like rock", "I like jazz"]


async def test_upgrading_a_0_1_fact_keeps_its_stored_versions_as_long_as_the_fact(
    mem, store, clock
):
    """The upgrade rewrites the fact, which counts its TTL from then; its stored versions
    kept their old expiry and went while the fact they belong to still lived."""
    namespace = store.user_namespace("u1")
    made = (await mem.remember("u1", "I live in Paris", ttl=60)).fact
    await mem.update_fact("u1", made.id, "I live in Berlin")  # Paris is @1, TTL 60
    value = {"content": "I live in Berlin", "history": ["a note"]}  # read as 0.1's inline
    await mem.put(namespace, made.id, value, ttl=60)
    clock.advance(50)
    assert await mem.upgrade_legacy_facts() == 1  # the fact now lasts until minute 110
    clock.advance(20)
    texts = [v.content for v in await mem.history("u1", made.id)]
    assert sorted(texts) == ["I live in Berlin", "I live in Paris", "a note"]


def test_thresholds_are_checked():
    vs = InMemoryVectorStore(KeywordEmbeddings())
    with pytest.raises(ValueError, match="must not exceed"):
        LongTermMemoryStore(vs, merge_threshold=0.6, review_threshold=0.7)
    with pytest.raises(ValueError, match="cosine"):
        LongTermMemoryStore(vs, merge_threshold=1.5)
    with pytest.raises(ValueError, match="not both"):
        LongTermMemoryStore(vs, merge_threshold=0.8, upsert_threshold=0.7)
    with pytest.raises(ValueError, match="history_limit"):
        LongTermMemoryStore(vs, history_limit=-1)


async def test_pinned_facts_stay_pinned_across_versions(mem, store):
    plain = await mem.remember("u1", "I listen to jazz")
    name = await mem.remember("u1", "My name is Ana", pinned=True)
    assert name.fact.pinned and not plain.fact.pinned
    assert [f.id for f in await mem.pinned("u1")] == [name.fact.id]
    again = await mem.remember("u1", "i listen to jazz.", pinned=True)  # pins the stored one
    assert again.action == "duplicate" and again.fact.pinned
    assert [f.content for f in await mem.pinned("u1")] == ["I listen to jazz", "My name is Ana"]
    changed = await mem.update_fact("u1", name.fact.id, "My name is Ana Lima")
    assert changed.fact.pinned and [v.content for v in changed.fact.history] == ["My name is Ana"]
    assert await mem.pinned("u2") == []
    exported = await mem.export_user("u1")
    await mem.clear_user("u1")
    await mem.import_user("u1", exported)
    assert [f.content for f in await mem.pinned("u1")] == [
        "I listen to jazz",
        "My name is Ana Lima",
    ]


async def test_restoring_plain_texts_merges_them_and_overwrites_nothing(mem):
    made = await mem.remember("u1", "I live in Paris")
    await mem.update_fact("u1", made.fact.id, "I live in Berlin")
    result = await mem.import_user("u1", ["I live in Paris", "I listen to jazz"])
    # an undated text is said now, as remember's: the replaced text leads again (a
    # duplicate here made the outcome depend on how an import was split into calls), and
    # the text it replaces stays in the history
    assert [r.action for r in result.results] == ["updated", "created"]
    assert [v.content for v in await mem.history("u1", made.fact.id)] == [
        "I live in Paris",
        "I live in Berlin",
        "I live in Paris",
    ]
    again = await mem.import_user("u1", ["I live in Paris"])  # the current text: nothing
    assert [r.action for r in again.results] == ["duplicate"]


async def test_merging_an_export_back_brings_no_replaced_text_back(mem):
    made = await mem.remember("u1", "I live in Paris")
    await mem.update_fact("u1", made.fact.id, "I live in Berlin")
    before = await mem.export_user("u1")
    result = await mem.import_user("u1", before, "merge")
    assert result.counts() == {"duplicate": 2}
    assert await mem.export_user("u1") == before


async def test_a_secret_in_a_merge_is_rejected_alone(mem):
    result = await mem.import_user("u1", ["I like tea", "my password is hunter2"], "merge")
    assert [r.action for r in result.results] == ["created", "rejected"]
    assert [f.content for f in await mem.list_all("u1")] == ["I like tea"]


async def test_a_restore_checks_for_secrets_only_what_it_stores(mem):
    """A restore refused a record whose secret was in what it leaves out: a record expired
    whole, whose id is reported in ``expired``; an earlier text expired on its own is
    dropped, not refused. A secret in a live earlier text is named by its place in the
    record (it was its place among the live ones)."""
    old = {"created_at": "2023-01-01T00:00:00+00:00", "updated_at": "2024-01-01T00:00:00+00:00"}
    old["valid_from"] = old["updated_at"]
    gone = {
        "content": "my password is hunter22",
        "valid_from": "2023-01-01T00:00:00+00:00",
        "valid_to": "2023-06-01T00:00:00+00:00",
        "expires_at": "2023-07-01T00:00:00+00:00",
    }
    expired = {"id": "x1", "content": "my password is hunter22", **old}
    expired["expires_at"] = "2024-06-01T00:00:00+00:00"
    dropped = {"id": "x2", "content": "I like tea", "history": [gone], **old}
    result = await mem.import_user("u1", [expired, dropped])
    assert (result.restored, result.expired) == (1, ("x1",))
    (fact,) = await mem.list_all("u1")
    assert (fact.content, fact.history) == ("I like tea", ())
    alive = {"content": "my password is hunter22", "valid_from": "2023-06-01T00:00:00+00:00"}
    alive["valid_to"] = "2024-01-01T00:00:00+00:00"
    record = {**dropped, "id": "x3", "content": "I like coffee", "history": [gone, alive]}
    with pytest.raises(InvalidFactError, match=r"^record 1: history\[1\]: Not stored"):
        await mem.import_user("u1", [record])


async def test_a_version_0_1_export_restores(mem):
    record = {
        "id": "3f2c",
        "content": "I live in Berlin",
        "created_at": "2025-01-01T00:00:00+00:00",
        "updated_at": "2025-06-01T00:00:00+00:00",
        "history": ["I live in Paris"],
        "score": None,
    }
    assert (await mem.import_user("u1", [record])).restored == 1
    assert [v.content for v in await mem.history("u1", "3f2c")] == [
        "I live in Paris",
        "I live in Berlin",
    ]
    # Paris held until updated_at, and Berlin from then (it was made current at created_at,
    # so in March both held, and as_of answered with either)
    (fact,) = await mem.list_all("u1")
    assert fact.valid_from == datetime(2025, 6, 1, tzinfo=timezone.utc)
    march = datetime(2025, 3, 1, tzinfo=timezone.utc)
    then = await mem.recall("u1", "where do I live", as_of=march)
    assert [(f.content, f.superseded) for f in then] == [("I live in Paris", True)]


async def test_items_of_a_child_namespace_are_not_versions(mem, store):
    made = await mem.remember("u1", "I live in Paris")
    child = (*store.user_namespace("u1"), "notes")
    fake = {"content": "not a version", "version_of": made.fact.id, "version": 1}
    store.put(child, "x", fake)
    (fact,) = await mem.list_all("u1")
    assert fact.history == ()
    assert await mem.forget("u1", made.fact.id) is True
    assert store.get(child, "x") is not None


def test_a_users_fact_never_merges_into_a_relatives(store):
    lenient = store.with_options(review_threshold=0.3)
    step = lenient.remember("u1", "My stepmother gets up at 6:30 on weekdays")
    mine = lenient.remember("u1", "Gets up at 7:00 on weekdays")
    assert mine.action == "created" and mine.fact.id != step.fact.id
    assert [s.reason for s in mine.similar] == ["different_subject"]


# ---- facts with a TTL (time injected through langchain_ltm._clock.utcnow) ---------------


class _Clock:
    def __init__(self, monkeypatch):
        from langchain_ltm import _clock

        self.now = datetime.now(timezone.utc)
        monkeypatch.setattr(_clock, "utcnow", lambda: self.now)

    def advance(self, minutes):
        self.now += timedelta(minutes=minutes)


@pytest.fixture
def clock(monkeypatch):
    return _Clock(monkeypatch)


async def test_an_expired_version_never_comes_back(mem, clock):
    """A write read a fact's versions expired or not and rewrote them with the fact's TTL:
    the same text remembered again after its fact expired (same id) brought back the
    expired versions, and a backfill into a lasting fact brought back its expired one."""
    first = (await mem.remember("u1", "Lost my card at the station", ttl=1)).fact
    await mem.update_fact("u1", first.id, "Lost my blue card at the station")
    await mem.update_fact("u1", first.id, "Lost my blue card at the train station")
    clock.advance(5)  # the fact and its versions expired, not swept
    again = (await mem.remember("u1", "Lost my card at the station", ttl=60)).fact
    assert again.id == first.id and again.history == ()
    for text in ("Lost my card at the station today", "Lost my card at the station today at 9"):
        await mem.update_fact("u1", again.id, text)
    history = [v.content for v in await mem.history("u1", again.id)]
    assert history == [
        "Lost my card at the station",
        "Lost my card at the station today",
        "Lost my card at the station today at 9",
    ]

    rent = (await mem.remember("u2", "My rent is 1200 euros", ttl=10)).fact
    await mem.update_fact("u2", rent.id, "My rent is 1300 euros")  # 1200: a version, 10 min
    assert (await mem.remember("u2", "My rent is 1300 euros")).fact.ttl_minutes is None
    clock.advance(20)  # the lasting fact's version "1200" expired
    said = datetime(2020, 1, 1, tzinfo=timezone.utc)
    await mem.remember("u2", "My rent is 1100 euros", observed_at=said)
    history = [v.content for v in await mem.history("u2", rent.id)]
    assert "My rent is 1200 euros" not in history and history[-1] == "My rent is 1300 euros"


async def test_history_says_when_the_current_text_expires(mem, clock):
    """``history()`` (and ``Fact.versions``) gave the current text ``expires_at=None``, as
    if it lasted, though its fact expires: it carries the fact's expiry and TTL now."""
    made = (await mem.remember("u1", "I live in Paris", ttl=60)).fact
    await mem.update_fact("u1", made.id, "I live in Berlin")
    (fact,) = await mem.list_all("u1")
    earlier, current = await mem.history("u1", made.id)
    assert (earlier.content, current.content) == ("I live in Paris", "I live in Berlin")
    assert current.is_current and current.expires_at is not None
    assert (current.expires_at, current.ttl_minutes) == (fact.expires_at, 60.0)
    assert fact.versions[-1] == current
    lasting = (await mem.remember("u1", "I like green tea")).fact
    (only,) = await mem.history("u1", lasting.id)
    assert (only.expires_at, only.ttl_minutes) == (None, None)


async def test_a_fact_with_a_ttl_expires_with_its_versions(mem, store, clock):
    lasting = await mem.remember("u1", "I like green tea")
    made = await mem.remember("u1", "I live in Paris", ttl=60)
    assert made.action == "created"
    clock.advance(30)
    moved = await mem.update_fact("u1", made.fact.id, "I live in Berlin")  # TTL kept, refreshed
    assert moved.action == "updated"
    clock.advance(50)  # 80 after remember, 50 after the update (these reads refresh nothing)
    listed = await mem.list_all("u1", refresh_ttl=False)
    (fact,) = [f for f in listed if f.id == made.fact.id]
    assert fact.content == "I live in Berlin"
    assert [v.content for v in await mem.history("u1", made.fact.id, refresh_ttl=False)] == [
        "I live in Paris",
        "I live in Berlin",
    ]
    found = await mem.recall("u1", "paris", include_history=True, refresh_ttl=False)
    assert [(f.id, f.superseded) for f in found][:1] == [(made.fact.id, True)]
    clock.advance(15)  # 65 after the update: the fact and its version are gone at once
    assert [f.id for f in await mem.list_all("u1")] == [lasting.fact.id]
    assert await mem.history("u1", made.fact.id) == []
    found = await mem.recall("u1", ["paris", "berlin"], include_history=True)
    assert [f.id for f in found] == [lasting.fact.id]
    assert [i.key for i in every_item(store, "u1")] == [lasting.fact.id]
    with pytest.raises(FactNotFoundError):
        await mem.update_fact("u1", made.fact.id, "I live in Rome")
    assert store.sweep_ttl() == 2  # the fact and its one version
    assert [f.content for f in await mem.list_all("u1")] == ["I like green tea"]


async def test_an_earlier_text_keeps_its_own_expiry_through_export_and_import(mem, clock):
    """A fact said again for good lasts while its earlier texts keep their expiry; the
    export carried only the fact's, so a restored "1200" lasted for good."""
    rent = (await mem.remember("u1", "My rent is 1200 euros", ttl=10)).fact
    await mem.update_fact("u1", rent.id, "My rent is 1300 euros")
    lasting = (await mem.remember("u1", "My rent is 1300 euros")).fact  # said again, no TTL
    assert lasting.ttl_minutes is None and lasting.history[0].ttl_minutes == 10
    exported = await mem.export_user("u1")
    (entry,) = exported[0]["history"]
    assert entry["ttl_minutes"] == 10 and entry["expires_at"] is not None
    await mem.import_user("u2", exported)
    assert await mem.export_user("u2") == [{**exported[0], "user_id": "u2"}]
    clock.advance(11)  # the earlier text expired, in the source and in the copy
    for user in ("u1", "u2"):
        assert [v.content for v in await mem.history(user, rent.id)] == ["My rent is 1300 euros"]
    late = await mem.import_user("u3", exported)  # restored after it expired: left out
    assert late.restored == 1
    (fact,) = await mem.list_all("u3")
    assert (fact.content, fact.history) == ("My rent is 1300 euros", ())


async def test_a_version_rewritten_by_a_backfill_keeps_its_own_expiry(mem, clock):
    """A backfill renumbers the versions after it; the one rewritten lost its own expiry
    and lasted for good with the fact."""
    rent = (await mem.remember("u1", "My rent is 1200 euros", ttl=10)).fact
    await mem.update_fact("u1", rent.id, "My rent is 1300 euros")
    await mem.remember("u1", "My rent is 1300 euros")  # said again for good
    said = datetime(2020, 1, 1, tzinfo=timezone.utc)
    await mem.remember("u1", "My rent is 1100 euros", observed_at=said)  # before 1200
    history = await mem.history("u1", rent.id)
    assert [(v.content, v.ttl_minutes) for v in history] == [
        ("My rent is 1100 euros", None),
        ("My rent is 1200 euros", 10),
        ("My rent is 1300 euros", None),
    ]
    clock.advance(11)
    assert [v.content for v in await mem.history("u1", rent.id)] == [
        "My rent is 1100 euros",
        "My rent is 1300 euros",
    ]


async def test_a_merge_makes_a_text_held_only_with_an_expiry_last(mem, clock):
    """A merged text the user held only with a TTL was reported a duplicate and written
    nowhere: it expired with the user's fact, though the import acknowledged it."""
    text = "Prefers answers in Spanish"
    await mem.remember("alice", text)
    await mem.remember("bob", text, ttl=5)
    exported = await mem.export_user("alice")
    done = await mem.import_user("bob", exported, mode="merge")
    assert [(r.action, r.fact.expires_at) for r in done.results] == [("duplicate", None)]
    clock.advance(10)
    assert [f.content for f in await mem.list_all("bob")] == [text]


async def test_a_ttl_travels_through_export_and_import(mem, clock):
    """Exported with its expiry; restored, it still expires then; merged, it is new."""
    made = await mem.remember("u1", "Reported one lost card this morning", ttl=60)
    await mem.update_fact("u1", made.fact.id, "Reported two lost cards this morning")
    kept = await mem.remember("u1", "Prefers answers in Spanish")
    assert made.fact.expires_at == made.fact.updated_at + timedelta(minutes=60)
    assert kept.fact.expires_at is None
    exported = await mem.export_user("u1")
    expiring = next(r for r in exported if r["id"] == made.fact.id)
    ends = datetime.fromisoformat(expiring["expires_at"])  # the update restarted the hour
    assert ends == clock.now + timedelta(minutes=60)
    assert next(r for r in exported if r["id"] == kept.fact.id)["expires_at"] is None

    restored = await mem.import_user("u2", exported)  # restore: ids, versions, expiry
    assert (restored.restored, restored.expired) == (2, ())
    (fact,) = [f for f in await mem.list_all("u2") if f.id == made.fact.id]
    assert abs((fact.expires_at - ends).total_seconds()) < 0.01
    merged = await mem.import_user("u3", exported, mode="merge")  # re-decided, without TTLs
    # in the export's order (by id): the two card texts are one fact, Spanish another
    assert sorted(r.action for r in merged.results) == ["created", "created", "updated"]
    clock.advance(61)  # past the hour: gone from the store and the restored copy
    assert sorted(f.content for f in await mem.list_all("u3")) == [
        "Prefers answers in Spanish",
        "Reported two lost cards this morning",
    ]
    for user in ("u1", "u2"):
        assert [f.content for f in await mem.list_all(user)] == ["Prefers answers in Spanish"]
        found = await mem.recall(user, "lost card", include_history=True, min_score=-1)
        assert [f.content for f in found] == ["Prefers answers in Spanish"]

    late = await mem.import_user("u4", exported)  # an old export: the expired fact stays out
    assert (late.restored, late.expired) == (1, (made.fact.id,))
    assert [f.content for f in await mem.list_all("u4")] == ["Prefers answers in Spanish"]
    late = await mem.import_user("u5", exported, mode="merge")
    assert late.expired == (made.fact.id,) and len(late.results) == 1
    bad = {**expiring, "expires_at": expiring["updated_at"]}
    with pytest.raises(InvalidFactError, match=r"expires_at .* is not after updated_at"):
        await mem.import_user("u6", [bad])
    assert await mem.list_all("u6") == []


async def test_a_restored_fact_keeps_its_ttl_when_reads_have_moved_its_expiry(mem, store, clock):
    """Reads push ``expires_at`` without touching ``updated_at``: the export carries the TTL
    itself (``ttl_minutes``), so the copy expires when the source does and each later read
    pushes both by the same hour (the TTL came back as ``expires_at - updated_at``, 110
    minutes, and the copy outlived the source)."""
    made = await mem.remember("u1", "Reported a lost card this morning", ttl=60)
    assert made.fact.ttl_minutes == 60
    clock.advance(50)
    assert store.get(store.user_namespace("u1"), made.fact.id) is not None  # refreshed
    (record,) = await mem.export_user("u1")
    assert record["ttl_minutes"] == 60
    assert datetime.fromisoformat(record["expires_at"]) == clock.now + timedelta(minutes=60)
    assert (await mem.import_user("u2", [record])).restored == 1
    (copy,) = await mem.list_all("u2")
    assert copy.ttl_minutes == 60 and copy.expires_at == datetime.fromisoformat(
        record["expires_at"]
    )
    for step in (50, 50):  # read both, then wait less than an hour: both alive
        clock.advance(step)
        for user in ("u1", "u2"):
            assert store.get(store.user_namespace(user), made.fact.id) is not None
    clock.advance(61)
    assert await mem.list_all("u1") == [] and await mem.list_all("u2") == []


async def test_restoring_an_export_over_its_fact_keeps_the_expiry_reads_pushed(mem, clock):
    """A read pushes the expiry of a fact and its versions, not ``updated_at``: a restore of
    an export taken before the read (``import_user`` twice, ``ltm import``, ``ltm migrate``
    run again) found no newer fact, wrote the export's expiry back, and both texts went 45
    minutes before they would have. An item that lasts stays lasting."""

    def near(a, b):
        return a is not None and abs((a - b).total_seconds()) < 0.01

    made = await mem.remember("u1", "Pam's rental car is a red Fiat", ttl=60)
    await mem.update_fact("u1", made.fact.id, "Pam's rental car is a blue Fiat")
    exported = await mem.export_user("u1")
    pushed = clock.now + timedelta(minutes=110)
    clock.advance(50)
    assert len(await mem.history("u1", made.fact.id)) == 2  # a read: both expire at +110
    clock.advance(5)
    done = await mem.import_user("u1", exported)
    assert (done.restored, done.conflicts) == (1, ())
    (fact,) = await mem.list_all("u1", refresh_ttl=False)
    assert near(fact.expires_at, pushed) and fact.ttl_minutes == 60
    assert [near(v.expires_at, pushed) for v in fact.history] == [True]
    clock.advance(10)  # the export's expiry has passed, the read's has not
    assert [v.content for v in await mem.history("u1", made.fact.id, refresh_ttl=False)] == [
        "Pam's rental car is a red Fiat",
        "Pam's rental car is a blue Fiat",
    ]
    clock.advance(46)  # past the read's: gone, as without the restore
    assert await mem.list_all("u1") == []

    made = await mem.remember("u2", "Pam's hotel is the Ritz", ttl=60)
    (record,) = await mem.export_user("u2")
    await mem.clear_user("u2")
    lasting = {**record, "expires_at": None, "ttl_minutes": None}
    assert (await mem.import_user("u2", [lasting])).restored == 1
    assert (await mem.import_user("u2", [record])).restored == 1
    clock.advance(61)
    (fact,) = await mem.list_all("u2")
    assert (fact.content, fact.expires_at, fact.ttl_minutes) == (
        "Pam's hotel is the Ritz",
        None,
        None,
    )


async def test_restoring_a_later_state_of_a_fact_takes_its_expiry_even_a_shorter_one(mem, clock):
    """The later expiry was kept for any restore over a live fact of the same text, also
    one of a later write: a TTL the user shortened (or added) after the copy was made came
    back as the copy's, so the text outlived what the user asked (``ltm migrate`` run again
    said every fact verified). Only a restore of the same state keeps the expiry reads
    pushed (the test above); a later state is restored as it is."""
    made = await mem.remember("u1", "Pam's rental car is a red Fiat", ttl=60 * 24 * 30)
    (copy,) = await mem.export_user("u1")
    clock.advance(1)
    later = clock.now
    shortened = {
        **copy,
        "updated_at": later.isoformat(),
        "expires_at": (later + timedelta(minutes=5)).isoformat(),
        "ttl_minutes": 5,
    }
    lasting_then_ttl = [{**copy, "expires_at": None, "ttl_minutes": None}, shortened]
    for records in ([copy, shortened], lasting_then_ttl):
        await mem.clear_user("u1")
        for record in records:
            assert (await mem.import_user("u1", [record])).restored == 1
        (fact,) = await mem.list_all("u1", refresh_ttl=False)
        assert fact.id == made.fact.id and fact.ttl_minutes == 5
        assert fact.expires_at is not None
        assert abs((fact.expires_at - (later + timedelta(minutes=5))).total_seconds()) < 0.01
    clock.advance(6)
    assert await mem.list_all("u1") == []


@pytest.mark.parametrize(
    ("ttl", "match"),
    [
        ("60", "positive number"),
        (0, "positive number"),
        (-5, "positive number"),
        (True, "positive number"),
        (float("inf"), "positive number"),
        (float("nan"), "positive number"),
        # put and remember refuse these: a restored one overflowed every refreshing read
        (1e12, r"record 1: ttl_minutes .* below 1,000,000,000"),
        (1e9, r"record 1: ttl_minutes .* below 1,000,000,000"),
    ],
)
async def test_a_bad_ttl_minutes_in_an_export_is_refused_and_nothing_is_stored(
    mem, clock, ttl, match
):
    made = await mem.remember("u1", "Reported a lost card this morning", ttl=60)
    await mem.update_fact("u1", made.fact.id, "Reported a lost blue card this morning")
    (record,) = await mem.export_user("u1")
    with pytest.raises(InvalidFactError, match=match):
        await mem.import_user("u2", [{**record, "ttl_minutes": ttl}])
    (earlier,) = record["history"]
    with pytest.raises(
        InvalidFactError, match=match.replace("record 1:", r"record 1: history\[0\]:")
    ):
        await mem.import_user("u2", [{**record, "history": [{**earlier, "ttl_minutes": ttl}]}])
    assert await mem.list_all("u2") == []
    assert [f.id for f in await mem.list_all("u1")] == [made.fact.id]


async def test_an_old_export_expiring_in_the_far_future_restores_a_ttl_reads_can_use(
    mem, store, clock
):
    """An export without ``ttl_minutes`` gets ``expires_at - updated_at`` as its TTL: for a
    fact expiring in year 9000 that was 3.7e9 minutes, past what ``put`` takes, and every
    refreshing read (``store.get``, ``store.search``) and update of the user overflowed."""
    made = await mem.remember("u1", "My locker code changes weekly", ttl=60)
    await mem.update_fact("u1", made.fact.id, "My locker code changes daily")
    (record,) = await mem.export_user("u1")
    far = "9000-01-01T00:00:00+00:00"
    old = {k: v for k, v in record.items() if k != "ttl_minutes"}
    old = {**old, "expires_at": far, "history": [{**record["history"][0], "expires_at": far}]}
    old["history"][0].pop("ttl_minutes", None)
    assert (await mem.import_user("u2", [old])).restored == 1
    (fact,) = await mem.list_all("u2")
    assert fact.ttl_minutes == 999_999_999 and fact.history[0].ttl_minutes == 999_999_999
    if hasattr(store, "get"):  # a LongTermMemoryStore; FactStore has no BaseStore API
        ns = store.user_namespace("u2")
        assert store.get(ns, made.fact.id).value["content"] == "My locker code changes daily"
        assert [i.value["content"] for i in store.search(ns, query="locker")] == [
            "My locker code changes daily"
        ]
    await mem.update_fact("u2", made.fact.id, "My locker code changes every hour")
    (again,) = await mem.export_user("u2")  # and the copy restores again
    await mem.clear_user("u2")
    assert (await mem.import_user("u2", [again])).restored == 1
    assert [v.content for v in await mem.history("u2", made.fact.id)] == [
        "My locker code changes weekly",
        "My locker code changes daily",
        "My locker code changes every hour",
    ]


async def test_importing_a_ttl_never_shortens_or_drops_what_is_stored(mem, clock):
    """A merge never gives a lasting fact an expiry; an expired line hides no live one."""
    lasting = await mem.remember("u1", "My favourite colour is blue")
    soon = (clock.now + timedelta(minutes=30)).isoformat()
    change = {"content": "My favourite colour is green", "expires_at": soon}
    merged = await mem.import_user("u1", [change], mode="merge")
    assert [r.action for r in merged.results] == ["updated"]
    clock.advance(31)
    (fact,) = await mem.list_all("u1")  # still there, with both texts
    assert (fact.id, fact.content, fact.expires_at) == (
        lasting.fact.id,
        "My favourite colour is green",
        None,
    )
    past = (clock.now - timedelta(minutes=1)).isoformat()
    lines = [{"content": "Likes tea", "expires_at": past}, {"content": "Likes tea"}]
    for mode in ("merge", "restore"):  # id-less lines are merged either way
        user = f"u2-{mode}"
        done = await mem.import_user(user, lines, mode=mode)
        assert len(done.expired) == 1 and [r.action for r in done.results] == ["created"]
        assert [f.content for f in await mem.list_all(user)] == ["Likes tea"]


async def test_an_expired_fact_can_be_remembered_again(mem, clock):
    first = await mem.remember("u1", "Reported a lost card this morning", ttl=1)
    clock.advance(2)
    again = await mem.remember("u1", "reported a lost card this morning.")
    assert again.action == "created"  # not a duplicate of the expired one
    clock.advance(10_000)  # remembered without a TTL this time: for good
    assert [f.content for f in await mem.list_all("u1")] == ["reported a lost card this morning."]
    assert (await mem.remember("u1", "Reported a lost card this morning")).action == "duplicate"
    assert first.fact.created_at <= again.fact.created_at
    # an expired text held under another key (Paris's key holds Berlin now): its row goes
    # with the new write, so Postgres' unique (namespace, content hash) never trips
    paris = await mem.remember("u2", "I live in Paris", ttl=1)
    await mem.update_fact("u2", paris.fact.id, "I live in Berlin")
    clock.advance(2)
    berlin = await mem.remember("u2", "I live in Berlin")
    assert berlin.action == "created" and berlin.fact.id != paris.fact.id
    assert [(f.id, f.content) for f in await mem.list_all("u2")] == [
        (berlin.fact.id, "I live in Berlin")
    ]


async def test_a_new_version_keeps_the_ttl_or_takes_the_one_given(mem, store, clock):
    made = await mem.remember("u1", "I have one kid", ttl=10)
    clock.advance(8)
    kept = await mem.update_fact("u1", made.fact.id, "I have two kids")  # keeps it, from now
    assert kept.action == "updated" and kept.fact.id == made.fact.id
    clock.advance(9)  # 17 after the first write, 9 after the update
    assert [f.content for f in await mem.list_all("u1", refresh_ttl=False)] == ["I have two kids"]
    longer = await mem.remember("u1", "I have three kids", ttl=100)  # the call's TTL wins
    assert longer.action == "updated"
    clock.advance(50)
    (fact,) = await mem.list_all("u1", refresh_ttl=False)
    assert fact.content == "I have three kids" and len(fact.history) == 2
    clock.advance(51)
    assert await mem.list_all("u1") == []
    assert store.sweep_ttl() == 3


async def test_a_lasting_text_and_an_expiring_one_are_never_merged(mem, store, clock):
    # one lifetime per fact: merging would make a lasting text expire with the fact, or
    # keep one the user wanted gone
    lasting = await mem.remember("u1", "My rent is 1200")
    brief = await mem.remember("u1", "My rent is 1350", ttl=60)
    assert brief.action == "created" and lasting.fact.id in [s.id for s in brief.similar]
    expiring = await mem.remember("u2", "I have one kid", ttl=10)
    kept = await mem.remember("u2", "I have two kids")  # no TTL: not merged into it
    assert kept.action == "created" and expiring.fact.id in [s.id for s in kept.similar]
    # word for word: said again for good, a fact that was to expire lasts; said again
    # with a TTL, a lasting one stays lasting
    await mem.remember("u3", "I like green tea", ttl=1)
    lasting_now = await mem.remember("u3", "I like green tea")
    assert lasting_now.action == "duplicate" and lasting_now.fact.expires_at is None
    still = await mem.remember("u1", "My rent is 1200", ttl=1)
    assert still.action == "duplicate" and still.fact.expires_at is None
    clock.advance(61)
    assert [f.content for f in await mem.list_all("u1")] == ["My rent is 1200"]
    assert [f.content for f in await mem.list_all("u2")] == ["I have two kids"]
    assert [f.content for f in await mem.list_all("u3")] == ["I like green tea"]
    assert store.sweep_ttl() == 2


async def test_rewriting_a_fact_with_a_ttl_keeps_its_versions_alive_as_long(mem, clock):
    made = await mem.remember("u1", "I live in Paris", ttl=10)
    await mem.update_fact("u1", made.fact.id, "I live in Berlin")
    clock.advance(8)
    pinned = await mem.remember("u1", "I live in Berlin", pinned=True, ttl=10)  # a rewrite
    assert pinned.action == "duplicate" and pinned.fact.expires_at == clock.now + timedelta(
        minutes=10
    )
    clock.advance(5)  # 13 after the update: the old expiry is past, the rewrite's is not
    assert [v.content for v in await mem.history("u1", made.fact.id)] == [
        "I live in Paris",
        "I live in Berlin",
    ]


def test_reading_a_version_through_the_base_store_refreshes_its_fact(store, clock):
    made = store.remember("u1", "I live in Paris", ttl=10)
    store.update_fact("u1", made.fact.id, "I live in Berlin")
    clock.advance(8)
    # the version: a filter naming version_of asks for versions
    hits = store.search(store.user_namespace("u1"), filter={"version_of": made.fact.id})
    assert [h.value["content"] for h in hits] == ["I live in Paris"]
    clock.advance(5)  # 13 after the writes, 5 after the read: fact and version both live
    assert [v.content for v in store.history("u1", made.fact.id, refresh_ttl=False)] == [
        "I live in Paris",
        "I live in Berlin",
    ]
    clock.advance(6)
    assert store.history("u1", made.fact.id) == [] and store.list_all("u1") == []


async def test_versions_expire_with_their_fact_after_a_restore(mem, store, clock):
    made = await mem.remember("u1", "I have one kid", ttl=60)
    await mem.update_fact("u1", made.fact.id, "I have two kids")
    exported = await mem.export_user("u1")
    await mem.clear_user("u1")
    assert (await mem.import_user("u1", exported)).restored == 1
    items = store.search(
        store.user_namespace("u1"), filter={"version_of": {"$ne": ""}}, refresh_ttl=False
    )
    assert {i.key: i.value.get("content") for i in items} == {
        made.fact.id: "I have two kids",
        f"{made.fact.id}@1": "I have one kid",
    }
    clock.advance(30)
    store.search(store.user_namespace("u1"))  # a read refreshes both by the same TTL
    clock.advance(61)
    assert store.search(store.user_namespace("u1")) == [] and await mem.list_all("u1") == []


async def test_an_expired_fact_not_yet_swept_holds_no_text(mem, clock):
    gone = await mem.remember("u1", "Parks in garage level 3", ttl=5)
    other = await mem.remember("u1", "Parks on the street")
    exported = [dict(gone.fact.to_dict(), id="w1")]
    clock.advance(6)
    moved = await mem.update_fact("u1", other.fact.id, "Parks in garage level 3")
    assert moved.action == "updated" and moved.fact.content == "Parks in garage level 3"
    await mem.forget("u1", other.fact.id)
    restored = await mem.import_user("u1", [{**exported[0], "expires_at": None}])
    assert restored.restored == 1 and restored.conflicts == ()
    (lasting,) = await mem.list_all("u1")  # no expiry: no TTL, whatever ttl_minutes says
    assert (lasting.expires_at, lasting.ttl_minutes) == (None, None)


async def test_forgetting_an_expired_fact_deletes_its_rows_and_answers_false(mem, store, clock):
    """A fact whose TTL has passed (not yet swept) is gone for the fact API: ``forget``
    deleted its rows and answered True (the ``forget_fact`` tool: "deleted"), while
    ``update_fact`` and ``history`` found no such fact."""
    made = await mem.remember("u1", "Alice's hotel room is 412", ttl=5)
    await mem.update_fact("u1", made.fact.id, "Alice's hotel room is 415")
    kept = await mem.remember("u1", "Alice listens to jazz")
    namespace = store.user_namespace("u1")
    clock.advance(6)  # the fact and its version expired, not swept
    with pytest.raises(FactNotFoundError):
        await mem.update_fact("u1", made.fact.id, "Alice's hotel room is 420")
    assert await mem.history("u1", made.fact.id) == []
    assert store.backend.count(namespace) == 3  # its two rows are still there
    assert await mem.forget("u1", made.fact.id) is False
    assert store.backend.count(namespace) == 1  # ... deleted all the same
    assert await mem.forget("u1", made.fact.id) is False
    assert [f.id for f in await mem.list_all("u1")] == [kept.fact.id]
    assert await mem.forget("u1", kept.fact.id) is True  # a live fact: True, as before


async def test_an_observed_at_before_the_year_1000_reads_back(mem):
    early = datetime(999, 1, 2, tzinfo=timezone.utc)
    await mem.remember("u1", "Was born in Rome", observed_at=early)
    (fact,) = await mem.list_all("u1")
    assert fact.valid_from == early
    found = await mem.recall("u1", "born in Rome", as_of=datetime(1000, 1, 1, tzinfo=timezone.utc))
    assert [f.content for f in found] == ["Was born in Rome"]
    assert await mem.recall("u1", "born", as_of=datetime(998, 1, 1, tzinfo=timezone.utc)) == []


def test_the_backend_tells_which_paths_each_item_embedded(store):
    """``indexed_paths``: what ``ltm migrate`` needs to index a copy as the source did."""
    ns = ("docs",)
    store.put(ns, "private", {"text": "launch codes"}, index=False)
    store.put(ns, "titled", {"title": "weather", "text": "launch codes"}, index=["title"])
    store.put(ns, "tagged", {"tags": ["a", "b", "c"]}, index=["tags[*]"])
    store.put(ns, "none", {"body": "x"}, index=["title"])  # no title: no vectors
    fact = store.remember("u1", "Likes green tea").fact
    assert fact is not None
    keys = [(ns, k) for k in ("private", "titled", "tagged", "none", "missing")]
    keys.append((store.user_namespace("u1"), fact.id))
    assert [None if p is None else sorted(p) for p in store.backend.indexed_paths(keys)] == [
        [],
        ["title"],
        ["tags[*].0", "tags[*].1", "tags[*].2"],
        [],
        None,
        ["content"],
    ]
    store.put(ns, "titled", {"title": "weather", "text": "launch codes"}, index=False)
    store.delete(ns, "tagged")
    assert store.backend.indexed_paths([(ns, "titled"), (ns, "tagged")]) == [(), None]
    assert store.backend.indexed_paths([]) == []


def test_deleting_a_fact_through_the_base_store_deletes_its_versions(store):
    made = store.remember("u1", "My gym locker number is 100").fact
    assert made is not None
    store.update_fact("u1", made.id, "My gym locker number is 200")
    store.put(store.user_namespace("u1"), "note", {"content": "Likes tea"})
    namespace = store.user_namespace("u1")
    store.delete(namespace, made.id)  # a client's delete (LangMem's delete action)
    assert [i.key for i in store.search(namespace)] == ["note"]  # no version left behind
    assert [f["content"] for f in store.export_user("u1")] == ["Likes tea"]
    store.batch([PutOp(namespace, "note", None)])  # a plain item: nothing else to delete
    assert store.search(namespace) == []


def test_a_text_another_client_stored_is_a_duplicate_not_a_new_version(store):
    namespace = store.user_namespace("u1")
    store.put(namespace, "lm-1", {"content": "Prefers dark mode"})  # LangMem's own layout
    again = store.remember("u1", "prefers dark mode.")
    assert again.action == "duplicate" and again.fact is not None and again.fact.id == "lm-1"
    assert [(i.key, i.value) for i in store.search(namespace)] == [
        ("lm-1", {"content": "Prefers dark mode"})  # left as the client wrote it
    ]


@pytest.mark.parametrize("index", [None, False])
def test_a_restore_of_a_text_another_client_stored_is_a_conflict(store, index):
    """A client's ``{"content": "Has a cat named Tom"}`` has no hash of ours: a restore of
    a record with that text under another id made a second current fact of it."""
    namespace = store.user_namespace("u1")
    store.put(namespace, "langmem-1", {"content": "Has a cat named Tom"}, index=index)
    record = {"id": "f-1", "content": "has a cat named Tom.", "created_at": T0.isoformat()}
    done = store.import_user("u1", [record, {"id": "f-2", "content": "Likes tea"}])
    assert (done.restored, done.conflicts) == (1, ("f-1",))
    assert sorted(f.id for f in store.list_all("u1")) == ["f-2", "langmem-1"]
    assert store.get(namespace, "langmem-1").value == {"content": "Has a cat named Tom"}


def test_a_restore_of_an_export_holding_one_text_twice_restores_the_first(store):
    """Two LangMem puts of one text are two facts, and ``export_user`` gives both:
    restoring the user's own export raised InvalidFactError ("a store keeps one current
    fact per text") and restored nothing."""
    namespace = store.user_namespace("u1")
    store.put(namespace, "m1", {"content": "Is not vegetarian anymore"})
    store.put(namespace, "m2", {"content": "Is not vegetarian anymore"})
    store.put(namespace, "m3", {"content": "Likes tea"})
    backup = store.export_user("u1")
    store.clear_user("u1")
    for _ in range(2):  # a second restore changes nothing
        done = store.import_user("u1", backup)
        assert (done.restored, done.conflicts) == (2, ("m2",))
        assert sorted((f.id, f.content) for f in store.list_all("u1")) == [
            ("m1", "Is not vegetarian anymore"),
            ("m3", "Likes tea"),
        ]
    twice = [backup[0], {**backup[1], "id": backup[0]["id"]}]
    with pytest.raises(InvalidFactError, match="have the same id"):  # one id: still refused
        store.import_user("u1", twice)


def test_a_restore_reads_the_text_an_item_holds_not_the_hash_it_stores(store, emb):
    """Earlier releases wrote a fact's value copied under another key with the old text's
    ``content_hash``: a restore took the copy for the holder of that text, and reported
    the record as a conflict though no fact held its text."""
    namespace = store.user_namespace("u1")
    made = store.remember("u1", "Plays cello").fact
    assert made is not None
    backup = store.export_user("u1")
    copied = store.get(namespace, made.id).value
    store.forget("u1", made.id)
    text = "Owns a bicycle"  # the copy as an earlier release wrote it: the cello's hash
    vector = np.asarray(emb.embed_documents([text]))
    stale = Record(
        namespace, "copy-1", {**copied, "content": text}, (text,), ("content",), vector, T0
    )
    store.backend.write([stale], [])
    done = store.import_user("u1", backup)
    assert (done.restored, done.conflicts) == (1, ())
    assert sorted(f.content for f in store.list_all("u1")) == [text, "Plays cello"]


def test_facts_of_another_configurations_users_below_this_user_are_not_this_users(store):
    tenant = store.with_options(namespace=("memories", "acme"))  # its users live below acme's
    bob = tenant.remember("bob", "Prefers dark mode").fact
    assert bob is not None
    store.put(tenant.user_namespace("bob"), "lm-bob", {"content": "Likes tea"})  # a client's
    for text in ("Prefers dark mode", "Likes tea"):
        made = store.remember("acme", text)  # user acme, the store's own namespace
        assert made.action == "created", text
        assert made.fact is not None and made.fact.id not in (bob.id, "lm-bob")
    assert sorted(f.content for f in store.list_all("acme")) == ["Likes tea", "Prefers dark mode"]
    assert sorted(f.content for f in tenant.list_all("bob")) == ["Likes tea", "Prefers dark mode"]


def test_as_of_finds_the_facts_a_client_put_without_valid_from(store, emb, clock):
    """LangMem's create action puts a new key with its text only, no ``valid_from``:
    ``list_all`` and ``history`` showed it valid since the put, but ``recall(as_of=...)``
    asked the engine for a stored ``valid_from`` and never returned it. It holds from its
    last write (``updated_at``), also when later puts crowd its window."""
    emb.vectors.update({"tea": crafted((0, 1)), "Likes green tea": crafted((0, 0.5), (1, 0.866))})
    namespace = store.user_namespace("alice")
    start = clock.now
    clock.advance(1)
    store.put(namespace, "mem-1", {"content": "Likes green tea"})  # LangMem's create
    clock.advance(1)
    moment = clock.now
    clock.advance(1)
    for k in range(4):  # written after the moment, scoring higher: they take the window
        emb.vectors[f"Tea note {k}"] = crafted((0, 0.9), (2 + k, 0.436))
        store.put(namespace, f"note-{k}", {"content": f"Tea note {k}"})
    then = store.recall("alice", "tea", limit=1, as_of=moment)
    assert [(f.id, f.content, f.superseded) for f in then] == [("mem-1", "Likes green tea", False)]
    assert store.recall("alice", "tea", as_of=start) == []
    now = store.recall("alice", "tea", limit=5, as_of=clock.now)
    assert sorted(f.id for f in now) == ["mem-1", "note-0", "note-1", "note-2", "note-3"]
    assert now[-1].id == "mem-1"


async def test_as_of_reads_a_clients_own_valid_from_as_every_read_does(store, emb, clock):
    """A client's put keeps its own ``valid_from``, which ``list_all`` and ``history`` read
    (an unreadable one, or a number, as the put time), but ``recall(as_of=)`` compared it
    as text with the store's format: "2021-01-01T05:00:00+09:00" (20:00 UTC the day before)
    was missed at midnight UTC, one west of UTC that sorts early was found before it
    began, and "yesterday" or an epoch number was never found. Each fact is found at
    ``as_of`` exactly when the ``valid_from`` every read shows is by then."""
    emb.vectors["hobbies"] = crafted((0, 1))
    namespace = store.user_namespace("u")
    values = {
        "k_offset": {"content": "Plays chess", "valid_from": "2021-01-01T05:00:00+09:00"},
        "k_later": {"content": "Grows tomatoes", "valid_from": "2021-01-01T10:00:00+09:00"},
        "k_west": {"content": "Bakes bread", "valid_from": "2020-12-31T20:00:00-05:00"},
        "k_date": {"content": "Collects stamps", "valid_from": "2020-06-01"},
        "k_zulu": {"content": "Knits scarves", "valid_from": "2021-01-01T00:00:00Z"},
        "k_word": {"content": "Likes jazz", "valid_from": "yesterday"},
        "k_number": {"content": "Speaks Dutch", "valid_from": 1609459200},
        "k_none": {"content": "Runs marathons"},
    }
    for i, (key, value) in enumerate(values.items()):
        emb.vectors[value["content"]] = crafted((0, 1), (i + 1, 0.1))
        store.put(namespace, key, value)
    emb.vectors["Sings in a choir"] = crafted((0, 1), (20, 0.1))
    midnight = datetime(2021, 1, 1, tzinfo=timezone.utc)
    await store.aremember("u", "Sings in a choir", observed_at=midnight - timedelta(days=1))
    put_at = clock.now
    clock.advance(1)

    async def found(at):
        sync = {f.id for f in store.recall("u", "hobbies", limit=20, as_of=at)}
        assert {f.id for f in await store.arecall("u", "hobbies", limit=20, as_of=at)} == sync
        return sync

    facts = store.list_all("u")
    assert len(facts) == 9
    choir = next(f.id for f in facts if f.content == "Sings in a choir")
    assert await found(midnight) == {"k_offset", "k_date", "k_zulu", choir}
    assert await found(put_at - timedelta(minutes=1)) == {
        "k_offset",
        "k_later",
        "k_west",
        "k_date",
        "k_zulu",
        choir,
    }
    assert await found(clock.now) == {f.id for f in facts}
    for fact in facts:  # as_of agrees with the valid_from reads show
        assert fact.id in await found(fact.valid_from)
        assert fact.id not in await found(fact.valid_from - timedelta(microseconds=1))
    assert {f.id: f.valid_from for f in facts}["k_number"] == put_at


def test_a_rewrite_keeps_when_a_client_put_fact_began(store, emb, clock):
    """A fact a client put under a new key has no ``valid_from``: it holds from its last
    write. A rewrite (``remember`` of its text with ``pinned=True``, a merge import's pin)
    wrote it again without one, so it seemed to begin at the rewrite and
    ``recall(as_of=...)`` before it found nothing."""
    emb.vectors.update({"tea": crafted((0, 1)), "Likes green tea": crafted((0, 1))})
    namespace = store.user_namespace("alice")
    store.put(namespace, "mem-1", {"content": "Likes green tea"})  # LangMem's create
    clock.advance(1)
    moment = clock.now
    clock.advance(1)
    assert store.remember("alice", "Likes green tea", pinned=True).fact.pinned
    clock.advance(1)
    then = store.recall("alice", "tea", limit=1, as_of=moment)
    assert [(f.id, f.content, f.pinned) for f in then] == [("mem-1", "Likes green tea", True)]
    (version,) = store.history("alice", "mem-1")
    assert version.valid_from < moment


def test_recall_fills_its_limit_past_another_configurations_users_below(store):
    """The engine's window holds the items of namespaces below the user's too: another
    configuration's users (``namespace=("memories", "acme")``) took every place, and user
    acme's recall came back empty, and a restatement was not compared with acme's fact."""
    tenant = store.with_options(namespace=("memories", "acme"))
    for i in range(3):
        store.remember("acme", f"Acme office fact {i} about coffee machines")
    for i in range(40):
        tenant.remember(f"bob{i % 3}", f"Bob coffee machines coffee machines note {i}")
    for include_history in (False, True):
        got = store.recall("acme", "coffee machines", limit=3, include_history=include_history)
        assert sorted(f.content for f in got) == [
            f"Acme office fact {i} about coffee machines" for i in range(3)
        ]
    store.remember("acme", "I live in Paris")
    for i in range(10):
        tenant.remember(f"bob{i}", ["I live in Paris", "I live in Berlin"])
    assert store.remember("acme", "I live in Berlin").action == "updated"
    assert len(tenant.list_all("bob0")) == 15  # theirs are untouched


def test_recall_with_history_fills_its_limit_past_one_facts_many_versions(store):
    made = store.remember("carol", "My rent is 1000 euros per month").fact
    assert made is not None
    for n in range(1, 12):
        store.update_fact("carol", made.id, f"My rent is {1000 + n * 50} euros per month")
    store.remember("carol", ["My rent includes heating", "My landlord is called Bob"])
    for include_history in (False, True):
        got = store.recall(
            "carol", "my rent euros per month", limit=3, include_history=include_history
        )
        assert len({f.id for f in got}) == 3, [f.content for f in got]


def crafted(*parts: tuple[int, float]) -> list[float]:
    """A 64-dimension vector with the given weights on the given axes (exact scores)."""
    vector = [0.0] * 64
    for axis, weight in parts:
        vector[axis] = weight
    return vector


def test_recall_with_phrasings_ranks_past_a_window_full_of_one_facts_versions(store, emb):
    """Each phrasing searches its own window; widening stopped once all windows held
    ``limit`` facts together, though one window held only the versions of fact X: fact A,
    just past that window's edge, outranks fact B, which the other window supplied."""
    emb.vectors.update(
        {
            "q one": crafted((0, 1)),
            "q two": crafted((1, 1)),
            "Fact A about thing one": crafted((0, 0.5), (2, 0.866)),  # 0.5 to q one
            "Fact B about thing two": crafted((1, 0.45), (3, 0.893)),  # 0.45 to q two
            "Fact C about thing two": crafted((1, 0.4), (4, 0.9165)),
        }
    )
    for k in range(8):  # X and its versions: 0.6 to q one, 8 texts in a window of 6
        emb.vectors[f"Fact X version {k}"] = crafted((0, 0.6), (5 + k, 0.8))
    x = store.remember("u1", "Fact X version 0").fact
    assert x is not None
    for k in range(1, 8):
        assert store.update_fact("u1", x.id, f"Fact X version {k}").action == "updated"
    for text in ("Fact A about thing one", "Fact B about thing two", "Fact C about thing two"):
        assert store.remember("u1", text).action == "created"
    got = store.recall("u1", ["q one", "q two"], limit=2, include_history=True)
    assert [(f.content, round(f.score, 3)) for f in got] == [
        ("Fact X version 7", 0.6),
        ("Fact A about thing one", 0.5),
    ]


def test_recall_with_phrasings_ranks_past_a_window_full_of_users_below(store, emb):
    """Current facts, two phrasings: another configuration's users below acme's
    (``namespace=("memories", "acme")``) filled the first phrasing's window; the second
    supplied two facts, so recall stopped and left out fact A, the best of acme's."""
    emb.vectors.update(
        {
            "q one": crafted((0, 1)),
            "q two": crafted((1, 1)),
            "Fact A about thing one": crafted((0, 0.5), (2, 0.866)),
            "Fact B about thing two": crafted((1, 0.45), (3, 0.893)),
            "Fact C about thing two": crafted((1, 0.4), (4, 0.9165)),
        }
    )
    tenant = store.with_options(namespace=("memories", "acme"))
    for k in range(4):
        emb.vectors[f"Bob fact {k}"] = crafted((0, 0.6), (5 + k, 0.8))
        assert tenant.remember("bob", f"Bob fact {k}").action == "created"
    for text in ("Fact A about thing one", "Fact B about thing two", "Fact C about thing two"):
        assert store.remember("acme", text).action == "created"
    for queries in (["q one"], ["q one", "q two"]):
        got = store.recall("acme", queries, limit=2)
        assert [f.content for f in got][:1] == ["Fact A about thing one"], queries
    got = store.recall("acme", ["q one", "q two"], limit=2)
    assert [f.content for f in got] == ["Fact A about thing one", "Fact B about thing two"]


def test_recall_as_of_ranks_past_a_window_full_of_users_below(store, emb):
    """``as_of`` searches current facts and versions in two windows: users below acme's
    filled the current facts' one, the versions' one supplied ``limit`` facts, and recall
    answered with a version scoring 0.3 instead of fact A (0.5), current since 2020."""
    emb.vectors.update(
        {
            "q": crafted((0, 1)),
            "Fact A about the thing": crafted((0, 0.5), (2, 0.866)),
            "Fact V old text": crafted((0, 0.3), (3, 0.954)),
            "Fact V new text": crafted((4, 1)),
        }
    )
    year = [datetime(y, 1, 1, tzinfo=timezone.utc) for y in (2019, 2020, 2021)]
    tenant = store.with_options(namespace=("memories", "acme"))
    for k in range(4):
        emb.vectors[f"Bob fact {k}"] = crafted((0, 0.6), (5 + k, 0.8))
        assert tenant.remember("bob", f"Bob fact {k}", observed_at=year[0]).action == "created"
    store.remember("acme", "Fact A about the thing", observed_at=year[1])
    v = store.remember("acme", "Fact V old text", observed_at=year[1]).fact
    assert v is not None
    store.update_fact("acme", v.id, "Fact V new text")
    got = store.recall("acme", "q", limit=1, as_of=year[2])
    assert [(f.content, f.superseded) for f in got] == [("Fact A about the thing", False)]
    got = store.recall("acme", "q", limit=3, as_of=year[2])
    assert [(f.content, f.superseded) for f in got] == [
        ("Fact A about the thing", False),
        ("Fact V old text", True),
    ]


def test_a_clients_item_with_a_version_of_field_is_not_a_version(store):
    """Any item with a ``version_of`` field in a user's namespace was taken for a version:
    deleting ``doc1`` deleted a client's ``doc2`` naming it, and ``forget``,
    ``prune_history`` and ``ltm migrate`` treated it as part of the fact it named."""
    ns = store.user_namespace("alice")
    store.put(ns, "doc1", {"text": "first draft"})
    store.put(ns, "doc2", {"text": "second draft", "version_of": "doc1"})
    fact = store.remember("alice", "I have one kid").fact
    assert fact is not None
    store.update_fact("alice", fact.id, "I have two kids now")
    note = {"content": "a client note", "version_of": fact.id, "version": 7}
    store.put(ns, "note", note)
    store.delete(ns, "doc1")
    assert store.get(ns, "doc2").value == {"text": "second draft", "version_of": "doc1"}
    history = [v.content for v in store.history("alice", fact.id)]
    assert history == ["I have one kid", "I have two kids now"]
    assert store.prune_history("alice", fact.id, keep=0) == 1  # the real version only
    assert store.forget("alice", fact.id) is True
    assert store.get(ns, "note").value == note
    assert store.get(ns, "doc2") is not None


def test_a_clients_item_with_a_version_of_field_never_blocks_its_text(store):
    """A client's item in the fact layout with a ``version_of`` field of its own: puts
    took it for a fact (its hash computed again) and Postgres' constraint covered it, but
    ``remember`` looks up hashes among current facts only (no ``version_of``): every later
    ``remember`` or ``update_fact`` of its text raised ``DuplicateFactError``. It is a
    client's own item, stored as given, and the text is the user's to remember."""
    ns = store.user_namespace("alice")
    odd = {"content": "Quarterly report", "content_hash": "anything", "versions": 1}
    store.put(ns, "x", {**odd, "version_of": "draft-7"})
    copied = store.remember("alice", "Yearly report").fact  # a fact's value, copied
    assert copied is not None
    store.put(ns, "y", {**store.get(ns, copied.id).value, "version_of": "draft-8"})
    assert store.get(ns, "x").value == {**odd, "version_of": "draft-7"}
    for text in ("Quarterly report", "Yearly report"):
        made = store.remember("alice", text)
        assert made.action in ("created", "duplicate"), text
        assert store.remember("alice", text).action == "duplicate"
    other = store.remember("alice", "Monthly report").fact
    assert other is not None
    assert store.update_fact("alice", other.id, "Quarterly report").action == "updated"
    assert "Quarterly report" in [f.content for f in store.list_all("alice")]


def test_a_clients_own_valid_from_over_a_text_is_kept(store, clock):
    """A put over a text item with a ``valid_from`` of its own wrote the put's time over
    it; the replaced text is still kept as a version. A value read, changed and put back
    carries the stored ``valid_from``: that one is moved to when the new text took over."""
    ns = store.user_namespace("alice")
    store.put(ns, "lease", {"content": "Lease for flat 3", "valid_from": "2025-01-01"})
    clock.advance(5)
    store.put(ns, "lease", {"content": "Lease for flat 4", "valid_from": "2026-03-01"})
    assert store.get(ns, "lease").value["valid_from"] == "2026-03-01"
    (fact,) = store.list_all("alice")
    assert fact.valid_from == datetime(2026, 3, 1, tzinfo=timezone.utc)
    assert [v.content for v in store.history("alice", "lease")] == [
        "Lease for flat 3",
        "Lease for flat 4",
    ]
    clock.advance(5)
    store.put(ns, "lease", {**store.get(ns, "lease").value, "content": "Lease for flat 5"})
    assert store.list_all("alice")[0].valid_from > datetime(2026, 3, 1, tzinfo=timezone.utc)
    assert len(store.history("alice", "lease")) == 3


def _in_order(store, user_id, fact_id):
    """The fact's texts as history gives them; each ends where the next one begins."""
    texts = store.history(user_id, fact_id)
    for earlier, later in zip(texts, texts[1:]):
        assert earlier.valid_from <= earlier.valid_to == later.valid_from, texts
    return texts


def test_a_clients_valid_from_is_kept_only_within_the_facts_timeline(store):
    """A put over a fact with a ``valid_from`` of its own was kept whatever it said: with
    2099, ``recall(as_of=now)`` missed the fact and its history had a gap (the replaced
    text ended at the put, the new one began in 2099); one before the replaced text began
    put the versions out of order. It is kept as given between the replaced text's start
    and now (plus the restore's clock skew), the replaced text ending there; otherwise the
    text holds from the put. Another fact's value copied over one carries that fact's
    ``valid_from``, no word of the client's: the copy holds from the put too."""
    ns = store.user_namespace("alice")
    day_ago = datetime.now(timezone.utc) - timedelta(days=1)
    fact = store.remember("alice", "I like tea", observed_at=day_ago).fact
    assert fact is not None
    # within bounds: kept as put, and the replaced text ends there
    hour_ago = datetime.now(timezone.utc) - timedelta(hours=1)
    value = dict(store.get(ns, fact.id).value)
    store.put(ns, fact.id, {**value, "content": "I like cocoa", "valid_from": hour_ago.isoformat()})
    assert store.get(ns, fact.id).value["valid_from"] == hour_ago.isoformat()
    texts = _in_order(store, "alice", fact.id)
    assert [t.content for t in texts] == ["I like tea", "I like cocoa"]
    assert texts[0].valid_to == hour_ago
    found = store.recall("alice", "cocoa", as_of=hour_ago + timedelta(minutes=1))
    assert [f.content for f in found] == ["I like cocoa"]
    # the same text with a valid_from in the future: it keeps holding since it did
    store.put(ns, fact.id, {**store.get(ns, fact.id).value, "valid_from": "2099-01-01"})
    assert store.list_all("alice")[0].valid_from == hour_ago
    # after now (+ skew), before the replaced text began, no time: from the put
    for said in ("2099-01-01T00:00:00+00:00", "2000-01-01T00:00:00+00:00", "yesterday"):
        value = dict(store.get(ns, fact.id).value)
        text = f"I like coffee ({said})"
        before = datetime.now(timezone.utc)
        store.put(ns, fact.id, {**value, "content": text, "valid_from": said})
        (current,) = store.list_all("alice")
        assert before <= current.valid_from <= datetime.now(timezone.utc), said
        found = store.recall("alice", "coffee", as_of=datetime.now(timezone.utc))
        assert [f.content for f in found] == [text], said
        assert _in_order(store, "alice", fact.id)[-1].content == text
    # another fact's whole value, copied over this one: not this text's start
    other = store.remember("alice", "I live in Paris").fact
    assert other is not None
    before = datetime.now(timezone.utc)
    store.put(ns, fact.id, dict(store.get(ns, other.id).value))
    assert store.get(ns, fact.id).value["content"] == "I live in Paris"
    assert {f.id: f.valid_from for f in store.list_all("alice")}[fact.id] >= before
    assert len(_in_order(store, "alice", fact.id)) == 6


async def test_a_new_facts_valid_from_out_of_bounds_holds_from_the_put(store):
    """A put of a new key kept any ``valid_from``: "2099-02-30T00:00:00.000000Z" (the
    store's format, no date) read as the write time in ``list_all`` while the engine's
    ``as_of`` filter compared the text and ``recall(as_of=now)`` dropped the fact; one in
    2099 was missed until 2099. Both hold from the put, as over a fact; one in bounds, or
    in another form ("yesterday": read as the write), is kept as given."""
    hour_ago = (datetime.now(timezone.utc) - timedelta(hours=1)).isoformat()
    said = {
        "k1": "2099-02-30T00:00:00.000000Z",
        "k2": "2099-02-28T00:00:00.000000Z",
        "k3": "2099-01-01T00:00:00+00:00",
        "k4": "2026-04-31T00:00:00.000000Z",
        "k5": hour_ago,
        "k6": "yesterday",
    }
    kept = {"k5", "k6"}
    for sync in (True, False):
        user = "alice" if sync else "bob"
        ns = store.user_namespace(user)
        before = datetime.now(timezone.utc)
        for key, when in said.items():
            value = {"content": f"I like tea number {key}", "valid_from": when}
            if sync:
                store.put(ns, key, value)
            else:
                await store.aput(ns, key, value)
        after = datetime.now(timezone.utc)
        for key, when in said.items():
            stored = store.get(ns, key).value["valid_from"]
            assert (stored == when) == (key in kept), (key, stored)
        for fact in store.list_all(user):
            if fact.id != "k5":
                assert before <= fact.valid_from <= after, fact.id
        found = store.recall(user, "tea", limit=10, as_of=datetime.now(timezone.utc))
        assert sorted(f.id for f in found) == sorted(said)


def test_forget_never_loses_to_an_update_running_at_once(store):
    import threading
    import time

    made = store.remember("u1", "Secret code 0").fact
    assert made is not None
    stop = threading.Event()

    def update_until_gone() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            try:
                store.update_fact("u1", made.id, f"Secret code {n}")
            except FactNotFoundError:
                return

    for _ in range(3):  # the race, a few times
        stop.clear()
        updater = threading.Thread(target=update_until_gone)
        updater.start()
        time.sleep(0.02)
        assert store.forget("u1", made.id) is True
        stop.set()
        updater.join()
        assert store.list_all("u1") == [] and store.history("u1", made.id) == []
        assert every_item(store, "u1") == []  # no version left behind either
        with pytest.raises(FactNotFoundError):
            store.update_fact("u1", made.id, "Secret code again")
        made = store.remember("u1", "Secret code 0").fact


def test_reading_a_fact_through_the_base_store_refreshes_its_versions(store, clock):
    made = store.remember("u1", "I live in Paris", ttl=10)
    store.update_fact("u1", made.fact.id, "I live in Berlin")
    clock.advance(8)
    assert store.get(store.user_namespace("u1"), made.fact.id) is not None  # refresh_ttl
    clock.advance(5)  # 13 after the writes, 5 after the read
    assert len(store.history("u1", made.fact.id, refresh_ttl=False)) == 2
    clock.advance(6)
    assert store.history("u1", made.fact.id) == []


_FACT_READS = {
    "recall": lambda mem, fact_id, **kw: mem.recall("u1", "lost card", **kw),
    "list_all": lambda mem, fact_id, **kw: mem.list_all("u1", **kw),
    "history": lambda mem, fact_id, **kw: mem.history("u1", fact_id, **kw),
    "pinned": lambda mem, fact_id, **kw: mem.pinned("u1", **kw),
}


@pytest.mark.parametrize("read", sorted(_FACT_READS))
async def test_reading_a_fact_through_the_fact_api_refreshes_it_and_its_versions(mem, clock, read):
    """The fact API's reads never pushed an expiry (``store.get``/``search`` did): a fact
    remembered with ``ttl=60`` and recalled every 30 minutes expired at 90, so an agent
    recalling it each turn lost it, and its earlier texts with it."""
    made = (await mem.remember("u1", "Reported a lost card", ttl=60, pinned=True)).fact
    await mem.update_fact("u1", made.id, "Reported a lost blue card")
    other = (await mem.remember("u2", "Reported a lost card", ttl=60)).fact  # not read
    for _ in range(3):
        clock.advance(30)
        found = await _FACT_READS[read](mem, made.id)
        assert found
        if read != "history":  # the facts returned show the expiry they now have
            (fact,) = [getattr(f, "fact", f) for f in found]
            assert fact.expires_at == clock.now + timedelta(minutes=60)
    clock.advance(50)  # 140 after the writes, 50 after the last read
    (fact,) = await mem.list_all("u1", refresh_ttl=False)
    assert fact.expires_at == clock.now + timedelta(minutes=10)
    assert [v.content for v in fact.versions] == [
        "Reported a lost card",
        "Reported a lost blue card",
    ]
    assert fact.history[0].expires_at == fact.expires_at  # the version went with it
    assert await mem.list_all("u2") == []  # another user's fact is not refreshed
    assert await mem.history("u2", other.id) == []
    clock.advance(11)  # nothing expired comes back
    assert await _FACT_READS[read](mem, made.id) == []
    assert await mem.list_all("u1") == []


async def test_fact_reads_asked_not_to_and_exports_leave_expiries_alone(mem, clock):
    made = (await mem.remember("u1", "Reported a lost card", ttl=60, pinned=True)).fact
    await mem.update_fact("u1", made.id, "Reported a lost blue card")
    for read in sorted(_FACT_READS):
        clock.advance(10)
        assert await _FACT_READS[read](mem, made.id, refresh_ttl=False)
    clock.advance(10)
    (record,) = await mem.export_user("u1")  # a backup copies expiries, pushes none
    assert datetime.fromisoformat(record["expires_at"]) == made.expires_at
    clock.advance(11)  # 61 after the writes
    assert await mem.list_all("u1") == []


async def test_a_fact_read_makes_no_refresh_call_without_a_ttl_to_refresh(
    mem, store, clock, monkeypatch
):
    touched: list[list[tuple[tuple[str, ...], str]]] = []
    for name in ("touch", "atouch"):
        real = getattr(store.backend, name)

        def spy(keys, now, _real=real):
            touched.append(sorted(keys))
            return _real(keys, now)

        monkeypatch.setattr(store.backend, name, spy)
    lasting = (await mem.remember("u1", "Reported a lost card", pinned=True)).fact
    await mem.update_fact("u1", lasting.id, "Reported a lost blue card")
    for read in _FACT_READS.values():
        assert await read(mem, lasting.id)
    assert touched == []
    await mem.forget("u1", lasting.id)
    made = (await mem.remember("u1", "Reported a lost card", ttl=60)).fact
    await mem.update_fact("u1", made.id, "Reported a lost blue card")
    assert await mem.recall("u1", "lost card")
    ns = store.user_namespace("u1")
    # one call with the fact and its version (an engine's atouch may run its touch)
    assert {tuple(keys) for keys in touched} == {((ns, made.id), (ns, f"{made.id}@1"))}


def test_a_store_without_refresh_on_read_leaves_fact_reads_alone(emb, clock):
    store = LongTermMemoryStore(InMemoryVectorStore(emb), ttl={"refresh_on_read": False})
    made = store.remember("u1", "Reported a lost card", ttl=60, pinned=True).fact
    assert made is not None
    for read in (
        lambda: store.recall("u1", "lost card"),
        lambda: store.list_all("u1"),
        lambda: store.history("u1", made.id),
        lambda: store.pinned("u1"),
    ):
        clock.advance(10)
        assert read()
    clock.advance(21)
    assert store.list_all("u1") == []
    assert store.recall("u1", "lost card", refresh_ttl=True) == []  # expired: not brought back


@pytest.mark.parametrize("shape", ["langmem", "copied"])
def test_reads_of_a_fact_a_client_put_over_refresh_its_versions(store, clock, shape):
    """A client's put over a fact (LangMem's update: no ``content_hash`` in its value) left
    an item reads no longer took for a fact: they refreshed it but not its versions, which
    expired while it lived on (README: a read of the fact refreshes them all)."""
    made = store.remember("u1", "I live in Paris", ttl=10).fact
    namespace = store.user_namespace("u1")
    copied = store.get(namespace, made.id).value if shape == "copied" else {}
    store.put(namespace, made.id, {**copied, "content": "I live in Berlin"}, ttl=10)
    for _ in range(3):  # every 8 minutes: each read restarts the 10 minutes
        clock.advance(8)
        assert store.search(namespace, query="where do I live")  # refresh_on_read
    assert [v.content for v in store.history("u1", made.id)] == [
        "I live in Paris",
        "I live in Berlin",
    ]
    clock.advance(8)
    assert store.get(namespace, f"{made.id}@1") is not None  # a version's read: all of them
    clock.advance(8)
    assert len(store.history("u1", made.id)) == 2
    clock.advance(11)
    assert store.history("u1", made.id) == []


async def test_remember_ttl_is_checked(mem):
    for bad in (0, -3, "10", True):
        with pytest.raises(ValueError, match="ttl"):
            await mem.remember("u1", "I like green tea", ttl=bad)
    assert await mem.list_all("u1") == []


def test_a_client_put_over_a_fact_loses_none_of_its_versions(store):
    made = store.remember("u1", "I live in Paris").fact
    assert made is not None
    store.update_fact("u1", made.id, "I live in Berlin")  # Paris is version 1
    namespace = store.user_namespace("u1")
    # LangMem's update action: a plain put, no version count left in the value; the text
    # it replaces (Berlin) was lost, it is a version now
    store.put(namespace, made.id, {"content": "I live in Rome", "kind": "Memory"})
    assert [v.content for v in store.history("u1", made.id)] == [
        "I live in Paris",
        "I live in Berlin",
        "I live in Rome",
    ]
    store.update_fact("u1", made.id, "I live in Madrid")  # Rome becomes a version too
    assert [v.content for v in store.history("u1", made.id)] == [
        "I live in Paris",
        "I live in Berlin",
        "I live in Rome",
        "I live in Madrid",
    ]
    assert [h.content for h in store.list_all("u1")[0].history] == [
        "I live in Paris",
        "I live in Berlin",
        "I live in Rome",
    ]
    store.put(namespace, made.id, {"content": "i live in madrid."})  # the same text: no version
    assert len(store.list_all("u1")[0].history) == 3
    found = store.recall("u1", "Berlin", include_history=True, limit=1)
    assert (found[0].content, found[0].superseded) == ("I live in Berlin", True)


def test_a_client_put_read_changed_and_put_back_keeps_every_text(store):
    """A value read, changed and put back carried the old text's hash, version count and
    valid_from: every put wrote version 1 over the last, and the old hash made the first
    text a "duplicate" of the fact holding another one."""
    made = store.remember("u1", "I live in Paris").fact
    assert made is not None
    namespace = store.user_namespace("u1")
    for city in ("Berlin", "Rome", "Oslo"):
        value = store.get(namespace, made.id).value
        store.put(namespace, made.id, {**value, "content": f"I live in {city}"})
    assert [v.content for v in store.history("u1", made.id)] == [
        f"I live in {city}" for city in ("Paris", "Berlin", "Rome", "Oslo")
    ]
    (fact,) = store.list_all("u1")
    assert fact.valid_from > fact.history[-1].valid_from
    assert store.remember("u1", "I live in Oslo").action == "duplicate"
    assert store.remember("u1", "I live in Paris").action != "duplicate"


def test_a_client_put_of_the_same_text_keeps_when_the_text_began(store, clock):
    """A put of the text a fact holds (LangMem's update with unchanged content, a deepagents
    write of the same file, a put changing only other fields) dropped its ``valid_from``:
    the text seemed to start at the put, and ``as_of`` before it found nothing."""
    made = store.remember("u1", "I live in Paris").fact
    namespace = store.user_namespace("u1")
    clock.advance(5)
    store.put(namespace, made.id, {"content": "I live in Berlin", "kind": "Memory"})
    began = store.list_all("u1")[0].valid_from
    clock.advance(5)
    between = clock.now
    clock.advance(5)
    for value in (
        {"content": "I live in Berlin", "kind": "Memory"},  # LangMem's update, unchanged
        {"content": "I live in Berlin", "source": "chat"},  # another field only
    ):
        store.put(namespace, made.id, value)
        found = store.recall("u1", "where do I live", as_of=between)
        assert [f.content for f in found] == ["I live in Berlin"]
        (fact,) = store.list_all("u1")
        assert fact.valid_from == began
        assert [(v.content, v.valid_to) for v in fact.history] == [("I live in Paris", began)]
    # a value that says when its text began keeps what it says, within the fact's
    # timeline: not before the earlier text ended (nor after now)
    said = began + timedelta(minutes=1)
    store.put(namespace, made.id, {"content": "I live in Berlin", "valid_from": said.isoformat()})
    assert store.list_all("u1")[0].valid_from == said
    for said in (datetime(2020, 1, 1, tzinfo=timezone.utc), clock.now + timedelta(days=1)):
        value = {"content": "I live in Berlin", "valid_from": said.isoformat()}
        store.put(namespace, made.id, value)
        assert store.list_all("u1")[0].valid_from == began + timedelta(minutes=1)


@pytest.mark.parametrize("copied", [True, False])
def test_a_client_put_over_a_fact_from_a_clock_ahead_keeps_versions_in_order(store, copied):
    """A fact restored from a machine whose clock runs ahead (allowed up to 5 minutes)
    and then put over: the replaced text ended before it began, no `as_of` found it, and
    the store's own export could not be imported again."""
    ahead = (datetime.now(timezone.utc) + timedelta(minutes=3)).isoformat()
    record = {"id": "f1", "content": "I live in Paris", "created_at": ahead}
    store.import_user("u1", [{**record, "updated_at": ahead, "valid_from": ahead}])
    namespace = store.user_namespace("u1")
    value = store.get(namespace, "f1").value
    plain = {"content": "I live in Berlin"}  # LangMem's shape: no layout fields
    store.put(namespace, "f1", {**value, **plain} if copied else plain)
    paris, berlin = store.history("u1", "f1")
    assert paris.valid_from <= paris.valid_to == berlin.valid_from
    assert berlin.content == "I live in Berlin" and berlin.valid_to is None
    exported = store.export_user("u1")
    store.clear_user("u1")
    assert store.import_user("u1", exported).restored == 1  # its own export is valid
    assert store.export_user("u1") == exported


def test_a_client_put_without_a_text_over_a_fact_is_refused(store):
    made = store.remember("u1", "I live in Paris").fact
    assert made is not None
    store.update_fact("u1", made.id, "I live in Berlin")
    namespace = store.user_namespace("u1")
    for value in ({"text": "a note"}, {"content": None}, {"content": ["I live in Rome"]}):
        with pytest.raises(ValueError, match="is one of the user's facts"):
            store.put(namespace, made.id, value)
    assert [v.content for v in store.history("u1", made.id)] == [
        "I live in Paris",
        "I live in Berlin",
    ]
    store.delete(namespace, made.id)  # deleting it is how: its versions go with it
    assert store.search(namespace, filter={"version_of": made.id}) == []


def test_a_fact_value_copied_under_another_key_carries_the_hash_of_its_own_text(store):
    """A fact's value read, changed and put under a key that is no live fact (a copy, or a
    read-modify-write of a fact forgotten meanwhile) kept the old text's ``content_hash``:
    a restore of the old text was a conflict though no fact held it, and on Postgres every
    later ``remember`` of it failed ("Another writer stored the same fact")."""
    namespace = store.user_namespace("u1")
    made = store.remember("u1", "Plays cello").fact
    assert made is not None
    backup = store.export_user("u1")
    copied = dict(store.get(namespace, made.id).value)
    store.forget("u1", made.id)
    store.put(namespace, "copy-1", {**copied, "content": "Owns a bicycle"})
    store.put(namespace, "copy-2", {**copied, "content": {"text": "a note"}})  # no text
    assert store.get(namespace, "copy-1").value["content_hash"] == content_hash("Owns a bicycle")
    assert "content_hash" not in store.get(namespace, "copy-2").value
    done = store.import_user("u1", backup)
    assert (done.restored, done.conflicts) == (1, ())
    store.forget("u1", made.id)
    again = store.remember("u1", "Plays cello")
    assert again.action == "created" and again.fact is not None and again.fact.id == made.id
    found = store.remember("u1", "Owns a bicycle")
    assert found.action == "duplicate" and found.fact is not None and found.fact.id == "copy-1"
    assert sorted(f.content for f in store.list_all("u1")) == ["Owns a bicycle", "Plays cello"]


def test_a_clients_document_with_a_hash_field_of_its_own_is_stored_as_given(store):
    """Puts recomputed or dropped any ``content_hash`` in a user's namespace, so a client's
    own document (not in the fact layout) came back changed, unlike InMemoryStore's."""
    namespace = store.user_namespace("u1")
    docs = {
        "doc1": {"content": "Quarterly report", "content_hash": "sha256:deadbeef"},
        "doc2": {"content": "Quarterly report", "content_hash": "sha256:deadbeef"},
        "doc3": {"content": {"title": "x"}, "content_hash": "md5:1"},
    }
    for key, value in docs.items():
        store.put(namespace, key, value)
    for key, value in docs.items():
        item = store.get(namespace, key)
        assert item is not None and item.value == value


def test_a_client_put_of_a_text_another_fact_holds_is_stored_on_every_engine(store):
    """A read-modify-write put over fact A with fact B's text: the in-memory and SQLite
    engines stored it, Postgres refused it ("Another writer stored the same fact ... Call
    remember() again"; its constraint keeps one fact per text). Every engine stores it now,
    without a hash of ours (as LangMem's puts are), and ``remember`` of it finds B."""
    namespace = store.user_namespace("u1")
    a = store.remember("u1", "Lives in Paris").fact
    b = store.remember("u1", "Works at Acme").fact
    assert a is not None and b is not None
    store.put(namespace, a.id, {**store.get(namespace, a.id).value, "content": "Works at Acme"})
    store.put(namespace, "copy-b", dict(store.get(namespace, b.id).value))  # a copy of B
    assert [v.content for v in store.history("u1", a.id)] == ["Lives in Paris", "Works at Acme"]
    for key in (a.id, "copy-b"):
        assert "content_hash" not in store.get(namespace, key).value
    assert store.get(namespace, b.id).value["content_hash"] == content_hash("Works at Acme")
    again = store.remember("u1", "Works at Acme")
    assert again.action == "duplicate" and again.fact is not None and again.fact.id == b.id
    assert sorted(f.id for f in store.list_all("u1")) == sorted([a.id, b.id, "copy-b"])
    # two facts swapping texts in one batch keep their hashes: each text is held once
    c = store.remember("u1", "Plays cello").fact
    d = store.remember("u1", "Owns a bicycle").fact
    assert c is not None and d is not None
    vc, vd = store.get(namespace, c.id).value, store.get(namespace, d.id).value
    store.batch(
        [
            PutOp(namespace, c.id, {**vc, "content": vd["content"]}),
            PutOp(namespace, d.id, {**vd, "content": vc["content"]}),
        ]
    )
    assert store.get(namespace, c.id).value["content_hash"] == content_hash("Owns a bicycle")
    assert store.get(namespace, d.id).value["content_hash"] == content_hash("Plays cello")


def test_a_client_put_keeps_expiries_and_the_history_limit(store, clock):
    """A put with a TTL left the fact's older versions lasting (orphans once it expired);
    one without a TTL kept a replaced text meant to expire for good; puts ignored
    ``history_limit``."""
    namespace = store.user_namespace("u1")
    lasting = store.remember("u1", "I live in Paris").fact
    store.update_fact("u1", lasting.id, "I live in Berlin")
    store.put(namespace, lasting.id, {"content": "I live in Rome"}, ttl=1)
    code = store.remember("u1", "My locker is number 4711", ttl=1).fact
    store.put(namespace, code.id, {"content": "My locker changed"})  # lasting now
    clock.advance(5)
    assert [f.content for f in store.list_all("u1")] == ["My locker changed"]
    assert store.search(namespace, filter={"version_of": lasting.id}) == []  # no orphan
    assert [v.content for v in store.history("u1", code.id)] == ["My locker changed"]

    store.history_limit = 2  # as LongTermMemoryStore(..., history_limit=2)
    made = store.remember("u2", "My rent is 1000").fact
    for rent in (1100, 1200, 1300, 1400):
        store.put(store.user_namespace("u2"), made.id, {"content": f"My rent is {rent}"})
    assert [v.content for v in store.history("u2", made.id)] == [
        "My rent is 1200",
        "My rent is 1300",
        "My rent is 1400",
    ]


async def test_concurrent_client_puts_over_a_fact_keep_every_text(store):
    """Concurrent ``aput``s to one fact (LangMem's parallel update tool calls under
    ``ainvoke``) were merged into one batch, which keeps the last put of a key: the middle
    texts were neither current nor a version. Threads kept them all."""
    import asyncio

    made = store.remember("u1", "I live in Paris").fact
    namespace = store.user_namespace("u1")
    cities = ["Berlin", "Rome", "Oslo", "Lima", "Kyiv"]
    await asyncio.gather(
        *(store.aput(namespace, made.id, {"content": f"I live in {c}"}) for c in cities)
    )
    assert [v.content for v in await store.ahistory("u1", made.id)] == [
        f"I live in {c}" for c in ["Paris", *cities]
    ]


def _another_client_puts_after_the_read(monkeypatch, store, key, value, nth=1):
    """Another client's put of ``value`` at ``key`` lands right after a put's ``nth`` read of it.

    What two clients putting at once do when both read before either writes (threads of
    one process, or processes): the read is stale when the put writes. The first read is
    the put's own, before any lock; the second, one under the user's lock.
    """
    namespace = store.user_namespace("u1")
    read = store.backend.get
    landed: list[bool] = []
    reads: list[bool] = []

    def get(keys):
        found = read(keys)
        if (namespace, key) in keys and not landed:
            reads.append(True)
            if len(reads) == nth:
                landed.append(True)
                store.put(namespace, key, value)
        return found

    monkeypatch.setattr(store.backend, "get", get)
    return landed


def test_two_clients_putting_at_one_new_key_at_once_keep_both_texts(monkeypatch, store):
    """Two LangMem ``{"content": ...}`` puts at one new key at once: neither found a fact
    there when it read, so neither took the user's lock, and the later write replaced the
    fact the other had just made, its text in no version (SQLite and Postgres, 40 times in
    40). Done one after the other, the first text is kept as a version; so it is now."""
    namespace = store.user_namespace("u1")
    landed = _another_client_puts_after_the_read(
        monkeypatch, store, "k1", {"content": "I like green tea"}
    )
    store.put(namespace, "k1", {"content": "I play chess daily"})
    assert landed
    assert [v.content for v in store.history("u1", "k1")] == [
        "I like green tea",
        "I play chess daily",
    ]


def test_a_batch_with_a_key_taken_meanwhile_writes_the_other_puts_as_put(monkeypatch, store):
    """The write of a batch's new keys is refused whole when one was taken meanwhile: the
    puts of that key's user are written again under the lock (both texts kept), the other
    user's put as it came."""
    mine, theirs = store.user_namespace("u1"), store.user_namespace("u2")
    _another_client_puts_after_the_read(monkeypatch, store, "k1", {"content": "I like green tea"})
    store.batch(
        [
            PutOp(mine, "k1", {"content": "I play chess daily"}),
            PutOp(mine, "k2", {"content": "I live in Oslo"}),
            PutOp(theirs, "k1", {"content": "I sing in a choir"}),
        ]
    )
    assert [v.content for v in store.history("u1", "k1")] == [
        "I like green tea",
        "I play chess daily",
    ]
    assert [v.content for v in store.history("u1", "k2")] == ["I live in Oslo"]
    assert [v.content for v in store.history("u2", "k1")] == ["I sing in a choir"]


def test_a_fact_layout_put_at_a_new_key_keeps_a_text_put_there_under_its_lock(monkeypatch, store):
    """A put of a fact's value (its hash and version count) at a new key is written under
    the user's lock, which a LangMem put at a new key does not take: landing between the
    read under the lock and the write, its text was overwritten, in no version."""
    namespace = store.user_namespace("u1")
    landed = _another_client_puts_after_the_read(
        monkeypatch, store, "k1", {"content": "I like green tea"}, nth=2
    )
    text = "I play chess daily"
    store.put(namespace, "k1", {"content": text, "content_hash": content_hash(text), "versions": 1})
    assert landed
    assert [v.content for v in store.history("u1", "k1")] == ["I like green tea", text]
    assert store.get(namespace, "k1").value["content_hash"] == content_hash(text)


def test_a_create_only_write_over_a_live_item_writes_nothing_of_the_batch(store):
    """The engine's compare-and-set: a ``create_only`` record whose key holds a live item
    fails the write whole (``KeyTakenError`` naming the key); over a free key, or an item
    expired at the write (engines with TTL), it is written."""
    namespace = store.user_namespace("u1")
    now = datetime.now(timezone.utc)

    def record(key: str, text: str, **given) -> Record:
        return Record(namespace, key, {"content": text}, (), (), None, now, **given)

    store.backend.write([record("k0", "I like tea"), record("k1", "I play chess")], [])
    with pytest.raises(KeyTakenError) as raised:
        store.backend.write(
            [
                record("k2", "I live in Oslo"),
                record("k1", "I like coffee", create_only=True),
                record("k3", "I sing", create_only=True),
            ],
            [(namespace, "k0")],
        )
    assert raised.value.keys == [(namespace, "k1")]
    keys = [(namespace, k) for k in ("k0", "k1", "k2", "k3")]
    assert [i and i.value["content"] for i in store.backend.get(keys)] == [
        "I like tea",
        "I play chess",
        None,
        None,
    ]
    restored = record("k1", "I like coffee", create_only=True, created_at=now - timedelta(days=1))
    with pytest.raises(KeyTakenError):  # a restore's record (created_at given) alike
        store.backend.write([restored, record("k5", "I restore", created_at=now)], [])
    store.backend.write([record("k3", "I sing", create_only=True)], [])
    assert [
        i and i.value["content"] for i in store.backend.get([*keys[1:], (namespace, "k5")])
    ] == [
        "I play chess",
        None,
        "I sing",
        None,
    ]
    if store.backend.capabilities.ttl:
        gone = now - timedelta(hours=1)
        store.backend.write([record("k4", "I swim", ttl_minutes=1.0, expires_at=gone)], [])
        store.backend.write([record("k4", "I run", create_only=True)], [])
        (item,) = store.backend.get([(namespace, "k4")])
        assert item.value == {"content": "I run"} and item.expires_at is None


def test_a_put_without_a_text_racing_a_new_fact_at_its_key_is_refused(monkeypatch, store):
    """A put of a structured ``content`` at a key where another client just made a fact:
    it overwrote the fact, its text lost; done after it, it raises ``ValueError``."""
    namespace = store.user_namespace("u1")
    _another_client_puts_after_the_read(monkeypatch, store, "k1", {"content": "I like tea"})
    with pytest.raises(ValueError, match="is one of the user's facts"):
        store.put(namespace, "k1", {"content": {"title": "a note"}})
    assert [f.content for f in store.list_all("u1")] == ["I like tea"]


@pytest.mark.parametrize("when", ["yesterday", "0001-01-01T00:00:00+05:00", "2024-13-45"])
def test_a_clients_unreadable_valid_from_reads_as_the_items_own_time(store, when):
    """One client item with ``{"content": "Call mum", "valid_from": "yesterday"}`` made
    every read of the user's facts raise (list_all, recall, export_user), and forget_user
    too: the user's data could not be exported nor erased."""
    from langchain_ltm import forget_user

    namespace = store.user_namespace("u1")
    store.remember("u1", "Likes green tea")
    store.put(namespace, "note-1", {"content": "Call mum", "valid_from": when})
    put_at = store.get(namespace, "note-1").updated_at
    facts = {f.id: f for f in store.list_all("u1")}
    assert facts["note-1"].valid_from == put_at
    found = store.recall("u1", "Call mum", limit=5, include_history=True)
    assert "note-1" in {f.id for f in found}
    exported = store.export_user("u1")
    (note,) = [r for r in exported if r["id"] == "note-1"]
    assert note["valid_from"] == put_at.isoformat()
    store.clear_user("u1")
    assert store.import_user("u1", exported).restored == 2
    store.put(namespace, "note-2", {"content": "Call dad", "valid_from": when})
    assert forget_user(store, "u1").facts == 3
    assert store.list_all("u1") == []


def test_an_item_whose_content_is_not_a_text_is_no_fact(store):
    """LangMem's memory store manager puts ``{"kind": "Memory", "content": {"content":
    ...}}`` in a user's namespace: the fact API listed and recalled it as a fact with a
    Python repr for text, exported it as one (an import wrote the repr back as text), and
    ``update_fact`` replaced its value; ``remember`` could merge a text into it."""
    namespace = store.user_namespace("u1")
    structured = [
        {"kind": "Memory", "content": {"content": f"User lives in Paris {i}"}, "pinned": True}
        for i in range(12)
    ]
    for i, value in enumerate(structured):
        store.put(namespace, f"m{i}", value)
    store.put(namespace, "list", {"content": ["User lives in Paris"]})
    made = store.remember("u1", ["User lives in Lyon", "User likes tea"], pinned=True)
    ids = sorted(r.fact.id for r in made)
    assert sorted(f.id for f in store.list_all("u1")) == ids
    assert sorted(f.id for f in store.pinned("u1")) == ids
    assert sorted(r["id"] for r in store.export_user("u1")) == ids
    # the structured items crowd the window: recall still fills its limit with facts
    found = store.recall("u1", "User lives in Paris", limit=2)
    assert sorted(f.id for f in found) == ids
    assert store.history("u1", "m0") == []
    with pytest.raises(FactNotFoundError):
        store.update_fact("u1", "m0", "User lives in Berlin")
    assert store.forget("u1", "m0") is False
    said = store.remember("u1", "User lives in Paris 0")  # never merged into the item
    assert said.fact.id not in {f"m{i}" for i in range(12)}
    for i, value in enumerate(structured):
        assert store.get(namespace, f"m{i}").value == value
    assert store.get(namespace, "list").value == {"content": ["User lives in Paris"]}


def test_a_search_above_the_users_shows_versions_unless_filtered_out(store):
    """What the README says of ``store.search(("memories",))`` (a deepagents backend or a
    LangMem tool whose namespace is above the users'): every item, earlier versions too,
    and ``filter={"version_of": None}`` leaves those out on every engine."""
    made = store.remember("u1", "I live in Paris").fact
    store.update_fact("u1", made.id, "I live in Berlin")
    store.put(store.user_namespace("u2"), "/a.md", {"content": "one"})
    above = store.user_namespace("u1")[:-1]
    assert sorted(i.key for i in store.search(above)) == ["/a.md", made.id, f"{made.id}@1"]
    current = {"version_of": None}
    assert sorted(i.key for i in store.search(above, filter=current)) == ["/a.md", made.id]
    found = store.search(above, query="where do I live", filter=current)
    assert sorted(i.key for i in found) == ["/a.md", made.id]


def test_base_store_search_of_a_user_shows_current_texts_only(store):
    made = store.remember("u1", "I live in Paris").fact
    assert made is not None
    store.update_fact("u1", made.id, "I live in Berlin")
    namespace = store.user_namespace("u1")
    # what LangMem's search tool or a prompt's store.search sees: no superseded text
    assert [i.value["content"] for i in store.search(namespace, query="where do I live")] == [
        "I live in Berlin"
    ]
    assert [i.value["content"] for i in store.search(namespace)] == ["I live in Berlin"]
    store.remember("u1", ["I like jazz", "I live near a park"])
    paged = [
        item.value["content"]
        for offset in range(4)
        for item in store.search(namespace, query="I live in Paris", limit=1, offset=offset)
    ]
    assert sorted(paged) == ["I like jazz", "I live in Berlin", "I live near a park"]
    # a filter naming version_of asks for versions; get reads any item
    asked = store.search(namespace, filter={"version_of": made.id})
    assert [i.value["content"] for i in asked] == ["I live in Paris"]
    assert store.get(namespace, f"{made.id}@1").value["content"] == "I live in Paris"
    # outside the users' namespaces a version_of field is a client's own: never hidden
    store.put(("docs",), "notes", {"text": "Changes in 2.0", "version_of": "langgraph"})
    assert [i.key for i in store.search(("docs",))] == ["notes"]
    store.put((*namespace, "child"), "c", {"text": "x", "version_of": "y"})
    assert [i.key for i in store.search((*namespace, "child"))] == ["c"]


@pytest.mark.parametrize("pinned", ["true", 1, "yes", [True]])
async def test_a_pinned_that_is_not_a_boolean_is_refused_and_nothing_is_stored(mem, pinned):
    """``"pinned": "true"`` was restored as not pinned (a profile fact silently dropped
    from every model call)."""
    with pytest.raises(InvalidFactError, match="pinned must be true or false"):
        await mem.import_user("u1", [{"id": "f1", "content": "Likes tea", "pinned": pinned}])
    assert await mem.list_all("u1") == []
    done = await mem.import_user("u1", [{"id": "f1", "content": "Likes tea", "pinned": None}])
    assert done.restored == 1 and [f.pinned for f in await mem.list_all("u1")] == [False]


async def test_an_observed_at_out_of_range_in_utc_is_refused(mem):
    from datetime import timedelta as td

    early = datetime(1, 1, 1, tzinfo=timezone(td(hours=1)))  # year 0 in UTC
    with pytest.raises(ValueError, match="out of range in UTC"):
        await mem.remember("u1", "Was born long ago", observed_at=early)
    record = {"content": "Was born long ago", "created_at": early.isoformat()}
    for mode in ("restore", "merge"):
        with pytest.raises(InvalidFactError):
            await mem.import_user("u1", [{**record, "id": "f1"}], mode=mode)
    assert await mem.list_all("u1") == []


async def test_an_export_with_a_client_text_the_store_does_not_take_restores_the_rest(mem):
    """An export holds the texts other clients put (LangMem's ``{"content": ...}``): one
    longer than the store's max_fact_chars, or with a NUL, made the whole import refused,
    so none of the user's other records came back. That record alone is refused now,
    named with why; every other record is restored (restore and merge)."""
    source = LongTermMemoryStore(InMemoryVectorStore(KeywordEmbeddings(64)), max_fact_chars=5000)
    source.remember("u1", ["I live in Paris", "I like green tea"])
    namespace = source.user_namespace("u1")
    source.put(namespace, "langmem-long", {"content": "notes " * 500})  # 3,000 characters
    source.put(namespace, "langmem-nul", {"content": "a \x00 b"})
    records = source.export_user("u1")
    assert len(records) == 4
    for mode, user in (("restore", "u1"), ("merge", "u2")):
        done = await mem.import_user(user, records, mode)
        assert [(i, why.split(":")[0]) for i, why in done.refused] == [
            ("langmem-long", "record 3"),
            ("langmem-nul", "record 4"),
        ]
        assert "3,000 characters long" in done.refused[0][1] and "NUL" in done.refused[1][1]
        kept = sorted(f.content for f in await mem.list_all(user))
        assert kept == ["I like green tea", "I live in Paris"]
    # a record without an id is new input, checked as remember's: still refused whole
    with pytest.raises(InvalidFactError, match="record 2: content is 3,000"):
        await mem.import_user("u3", [{"content": "ok fact"}, {"content": "x " * 1500}])


async def test_a_conflict_names_the_texts_the_user_holds_nowhere(mem):
    """A record left alone (another fact of the user took its current text) brought
    earlier texts the user held nowhere: the result said only "conflict", and those texts
    were in the export alone. The result names them; a merge of that record folds them
    in as earlier versions."""
    source = LongTermMemoryStore(InMemoryVectorStore(KeywordEmbeddings(64)))
    source.remember("u1", "I live in Paris")
    source.remember("u1", "I live in Berlin now")
    (record,) = source.export_user("u1")
    assert [v["content"] for v in record["history"]] == ["I live in Paris"]
    await mem.remember("u1", "I live in Berlin now")  # said again since, as another fact
    for dry_run in (True, False):
        done = await mem.import_user("u1", [record], dry_run=dry_run)
        assert done.conflicts == (record["id"],)
        assert done.conflict_texts == ((record["id"], ("I live in Paris",)),)
        assert done.conflict_reasons == ((record["id"], "same_text"),)
    merged = await mem.import_user("u1", [record], "merge")
    assert [r.action for r in merged.results][-1] == "duplicate"
    (fact,) = await mem.list_all("u1")
    assert [v.content for v in fact.versions] == ["I live in Paris", "I live in Berlin now"]
    # nothing is named once the user holds every text of the record
    again = await mem.import_user("u1", [record])
    assert again.conflicts == (record["id"],) and again.conflict_texts == ()


async def test_a_views_async_calls_run_with_the_views_options(store):
    """A ``with_options`` view shared its store's coalescer, whose batches ran with the
    store's options: ``view.aput`` over a fact of the view's namespace stored a plain item
    (the replaced text gone), and ``view.asearch`` showed the fact's versions when it waited
    for another call, not when it ran alone (as ``view.search`` does)."""
    view = store.with_options(namespace=("team",))
    ns = view.user_namespace("u1")
    fact = (await view.aremember("u1", "I live in Paris")).fact
    assert fact is not None
    moved = {**(await view.aget(ns, fact.id)).value, "content": "I live in Berlin"}
    await view.aput(ns, fact.id, moved)
    assert [v.content for v in await view.ahistory("u1", fact.id)] == [
        "I live in Paris",
        "I live in Berlin",
    ]
    expected = [item.key for item in view.search(ns, query="where do I live")]
    assert expected == [fact.id]  # a user's namespace hides versions
    together = await asyncio.gather(*(view.asearch(ns, query="where do I live") for _ in range(3)))
    assert [[item.key for item in items] for items in together] == [expected] * 3
    (batched,) = await view.abatch([SearchOp(ns, query="where do I live")])
    assert [item.key for item in batched] == expected
    assert [f.content for f in store.list_all("u1")] == []  # the store's own users: none
