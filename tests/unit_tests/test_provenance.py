"""When and where a fact came from: ``remember(metadata=, observed_at=)``, ``recall(filter=)``.

On the in-memory engine here; ``tests/engine_facts.py`` re-collects every case on SQLite,
Qdrant, Postgres and ``FactStore``, sync and async (``mem``).
"""

from __future__ import annotations

import enum
import json
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_ltm import InvalidFactError, InvalidFilterError, LongTermMemoryStore, Resolution
from tests.unit_tests.test_facts import emb, mem  # noqa: F401  (fixtures)
from tests.unit_tests.test_versions import ListResolver


@pytest.fixture
def store(emb):
    return LongTermMemoryStore(InMemoryVectorStore(emb), upsert_threshold=0.8)


def at(day: int, month: int = 5, year: int = 2023) -> datetime:
    return datetime(year, month, day, 13, 56, tzinfo=timezone.utc)


TEA, MORE, MOST = "I like green tea", "I like green tea a lot", "I like green tea a lot now"


def spans(versions):
    return [(v.content, v.valid_from, v.valid_to) for v in versions]


async def test_observed_at_is_when_the_fact_was_said(mem):
    before = datetime.now(timezone.utc)
    made = await mem.remember("u1", TEA, observed_at=at(1))
    assert made.action == "created"
    assert (made.fact.created_at, made.fact.valid_from) == (at(1), at(1))
    assert made.fact.updated_at >= before  # written now
    moved = await mem.remember("u1", MORE, observed_at=at(20))
    assert (moved.action, moved.fact.id, moved.previous) == ("updated", made.fact.id, TEA)
    assert spans(await mem.history("u1", made.fact.id)) == [
        (TEA, at(1), at(20)),
        (MORE, at(20), None),
    ]
    (fact,) = await mem.list_all("u1")
    assert (fact.created_at, fact.valid_from) == (at(1), at(20))
    assert fact.to_dict()["valid_from"] == at(20).isoformat()
    then = await mem.recall("u1", "green tea", as_of=at(10))
    assert [(f.content, f.superseded, f.valid_to) for f in then] == [(TEA, True, at(20))]
    later = await mem.recall("u1", "green tea", as_of=at(21))
    assert [(f.content, f.superseded) for f in later] == [(MORE, False)]
    assert await mem.recall("u1", "green tea", as_of=at(30, 4)) == []  # not said yet
    now = await mem.remember("u1", MOST)  # without observed_at: said now, after both
    assert now.action == "updated" and now.fact.valid_from >= before
    assert [v.valid_to for v in now.fact.history] == [at(20), now.fact.valid_from]


async def test_an_out_of_order_backfill_becomes_an_earlier_version(mem):
    first = await mem.remember("u1", TEA, observed_at=at(1))
    await mem.remember("u1", MORE, observed_at=at(20))
    late = await mem.remember("u1", MOST, observed_at=at(10))  # said between the two
    assert (late.action, late.fact.id) == ("updated", first.fact.id)
    assert late.fact.content == MORE  # the text said last stays current
    expected = [(TEA, at(1), at(10)), (MOST, at(10), at(20)), (MORE, at(20), None)]
    assert spans(late.fact.versions) == expected
    assert spans(await mem.history("u1", first.fact.id)) == expected
    (exported,) = await mem.export_user("u1")
    assert [v["content"] for v in exported["history"]] == [TEA, MOST]  # numbered in time
    assert all(v.valid_to is None or v.valid_from <= v.valid_to for v in late.fact.versions)
    then = await mem.recall("u1", "green tea", as_of=at(15))
    assert [(f.content, f.superseded) for f in then] == [(MOST, True)]
    current = await mem.recall("u1", "green tea")
    assert [f.content for f in current] == [MORE]


async def test_a_backfill_before_everything_moves_created_at(mem):
    made = await mem.remember("u1", TEA, observed_at=at(20))
    early = await mem.remember("u1", MORE, observed_at=at(1))
    assert (early.action, early.fact.content) == ("updated", TEA)
    assert spans(early.fact.versions) == [(MORE, at(1), at(20)), (TEA, at(20), None)]
    (fact,) = await mem.list_all("u1")
    assert (fact.id, fact.created_at, fact.valid_from) == (made.fact.id, at(1), at(20))


async def test_a_backfill_run_twice_changes_nothing(mem):
    for day, text in ((1, TEA), (20, MORE), (10, MOST)):
        await mem.remember("u1", text, observed_at=at(day), metadata={"day": day})
    exported = await mem.export_user("u1")
    for day, text in ((1, TEA), (20, MORE), (10, MOST)):
        again = await mem.remember("u1", text, observed_at=at(day), metadata={"day": day})
        assert again.action == "duplicate", text
    assert await mem.export_user("u1") == exported


async def test_each_version_keeps_the_metadata_it_was_said_with(mem):
    first = await mem.remember("u1", TEA, metadata={"session": 1, "speaker": "Caroline"})
    assert dict(first.fact.metadata) == {"session": 1, "speaker": "Caroline"}
    moved = await mem.remember("u1", MORE, metadata={"session": 2})
    assert moved.action == "updated"
    # the new text: only the keys its caller gave (nothing inherited from the one it replaces)
    assert dict(moved.fact.metadata) == {"session": 2}
    assert [dict(v.metadata) for v in moved.fact.versions] == [
        {"session": 1, "speaker": "Caroline"},
        {"session": 2},
    ]
    (fact,) = await mem.list_all("u1")
    assert fact.to_dict()["history"][0]["metadata"] == {"session": 1, "speaker": "Caroline"}
    old = await mem.recall("u1", "green tea", include_history=True, filter={"session": 1})
    assert [(f.content, f.superseded, dict(f.metadata)) for f in old] == [
        (TEA, True, {"session": 1, "speaker": "Caroline"})
    ]
    dup = await mem.remember("u1", MORE, metadata={"session": 3})  # a duplicate writes nothing
    assert dup.action == "duplicate" and dict(dup.fact.metadata)["session"] == 2


def test_metadata_is_a_field_of_the_item(store):
    made = store.remember("u1", TEA, metadata={"source": "chat", "tags": ("a", "b")})
    item = store.get(store.user_namespace("u1"), made.fact.id)
    assert item.value["source"] == "chat" and item.value["tags"] == ["a", "b"]
    assert dict(made.fact.metadata) == {"source": "chat", "tags": ["a", "b"]}
    hits = store.search(store.user_namespace("u1"), filter={"source": "chat"})
    assert [h.key for h in hits] == [made.fact.id]


DISTINCT = [
    "apple",
    "banana",
    "cherry",
    "date",
    "elder",
    "fig",
    "grape",
    "honeydew",
    "kiwi",
    "lemon",
    "mango",
    "nectarine",
    "olive",
    "papaya",
    "quince",
    "raspberry",
    "strawberry",
    "tangerine",
    "ugli",
    "vanilla",
    "walnut",
    "yam",
    "zucchini",
    "almond",
    "basil",
    "cumin",
    "dill",
    "fennel",
    "ginger",
    "hazelnut",
]


async def test_recall_filter_runs_in_the_engine_and_fills_the_limit(mem):
    # facts that match the query do not match the filter, and the other way round: a
    # filter applied after a global top-k would find nothing
    near = [f"tea {DISTINCT[i]}" for i in range(12)]
    far = [f"{DISTINCT[12 + 2 * i]} {DISTINCT[13 + 2 * i]}" for i in range(7)]
    assert {r.action for r in await mem.remember("u1", near, metadata={"kind": "near"})} == {
        "created"
    }
    for n, text in enumerate(far):
        assert (await mem.remember("u1", text, metadata={"kind": "far", "n": n})).action == (
            "created"
        )
    await mem.remember("u2", "tea for someone else", metadata={"kind": "far"})
    found = await mem.recall("u1", "tea", limit=5, filter={"kind": "far"})
    assert len(found) == 5 and {dict(f.metadata)["kind"] for f in found} == {"far"}
    assert {f.user_id for f in found} == {"u1"}
    few = await mem.recall("u1", "tea", limit=5, filter={"kind": "far", "n": {"$gte": 4}})
    assert sorted(f.content for f in few) == sorted(far[4:])  # every match, 3 < limit
    other = await mem.recall("u1", "tea", limit=20, filter={"kind": {"$ne": "far"}})
    assert sorted(f.content for f in other) == sorted(near)
    assert await mem.recall("u1", "tea", filter={"kind": "none"}) == []


async def test_bad_filters_raise(mem):
    await mem.remember("u1", TEA)
    with pytest.raises(InvalidFilterError, match=r"\$regex"):
        await mem.recall("u1", "tea", filter={"source": {"$regex": "c.*"}})
    with pytest.raises(InvalidFilterError, match="'content' is a field of the stored fact"):
        await mem.recall("u1", "tea", filter={"content": TEA})
    with pytest.raises(InvalidFilterError, match="must be a dict"):
        await mem.recall("u1", "tea", filter=["source"])


BAD_METADATA = {
    "reserved key": ({"content": "x"}, "'content' is a field of the stored fact"),
    "reserved pinned": ({"pinned": True}, "'pinned'"),
    "not a dict": (["source"], "must be a dict"),
    "non-string key": ({1: "x"}, "non-empty strings"),
    "a set": ({"tags": {"a"}}, "'tags' is a set, which is not JSON"),
    "a datetime": ({"when": at(1)}, "isoformat"),
    "a numpy array": ({"v": np.zeros(2)}, "'v' is a numpy.ndarray, which is not JSON"),
    "NaN": ({"score": float("nan")}, "JSON cannot hold"),
    "nested int key": ({"by": {1: "x"}}, "JSON object keys are strings"),
    # Postgres' jsonb holds neither, so no engine takes them (a migrate would fail)
    "NUL in a value": ({"k": "a\x00b"}, "metadata 'k' contains a NUL character"),
    "NUL in a key": ({"a\x00": 1}, "metadata key 'a.x00' contains a NUL"),
    "lone surrogate": ({"k": ["ok", "a\ud800"]}, r"metadata 'k\[1\]' is not valid Unicode"),
    "surrogate in a nested key": ({"by": {"x\udc00": 1}}, "metadata key 'by.x"),
}


@pytest.mark.parametrize("case", BAD_METADATA, ids=list(BAD_METADATA))
async def test_bad_metadata_raises_and_stores_nothing(mem, case):
    metadata, message = BAD_METADATA[case]
    with pytest.raises(InvalidFactError, match=message):
        await mem.remember("u1", TEA, metadata=metadata)
    assert await mem.list_all("u1") == []


class Source(enum.StrEnum):
    CHAT = "chat"


class Level(enum.IntEnum):
    HIGH = 3


async def test_metadata_subclasses_and_numpy_scalars_are_stored_as_plain_json(mem):
    """A StrEnum or numpy.float64 was stored as the object itself: engines gave it back
    differently, and a filter on it matched on Postgres only. numpy.bool_ was refused as
    "a bool, which is not JSON"."""
    given = {"source": Source.CHAT, "level": Level.HIGH, "w": np.float64(0.5), "ok": np.bool_(True)}
    given[Source("chat")] = {Source.CHAT: 1}  # keys too
    made = (await mem.remember("u1", TEA, metadata=given)).fact
    assert made.metadata == {
        "source": "chat",
        "level": 3,
        "w": 0.5,
        "ok": True,
        "chat": {"chat": 1},
    }
    assert all(type(k) is str for k in [*made.metadata, *made.metadata["chat"]])
    types = {"source": str, "level": int, "w": float, "ok": bool, "chat": dict}
    assert {k: type(v) for k, v in made.metadata.items()} == types
    (stored,) = await mem.list_all("u1")
    assert {k: type(v) for k, v in stored.metadata.items()} == types
    for wanted in (
        {"source": Source.CHAT},
        {"source": "chat"},
        {"level": 3},
        {"level": {"$gte": np.int64(3)}},
        {"ok": True},
    ):
        assert [f.id for f in await mem.recall("u1", "tea", filter=wanted)] == [made.id], wanted


async def test_bad_observed_at_raises_and_stores_nothing(mem):
    with pytest.raises(ValueError, match="no time zone"):
        await mem.remember("u1", TEA, observed_at=datetime(2023, 5, 8))
    future = datetime.now(timezone.utc) + timedelta(days=1)
    with pytest.raises(ValueError, match="in the future"):
        await mem.remember("u1", TEA, observed_at=future)
    with pytest.raises(TypeError, match="must be a datetime"):
        await mem.remember("u1", TEA, observed_at="2023-05-08")
    assert await mem.list_all("u1") == []


async def test_a_ttl_counts_from_the_write_not_from_observed_at(mem):
    before = datetime.now(timezone.utc)
    made = await mem.remember("u1", TEA, observed_at=at(1, 5, 2020), ttl=60)
    expires = made.fact.expires_at
    assert before + timedelta(minutes=60) <= expires <= before + timedelta(minutes=61)
    (fact,) = await mem.list_all("u1", refresh_ttl=False)  # (a read would push it)
    assert fact.valid_from == at(1, 5, 2020) and fact.expires_at == expires


async def test_metadata_and_times_survive_export_and_import(mem, store):
    await mem.remember("u1", TEA, metadata={"session": 1}, observed_at=at(1))
    await mem.remember("u1", MORE, metadata={"session": 2}, observed_at=at(20))
    await mem.remember("u1", "I have a cat named Tom", metadata={"session": 3})
    exported = await mem.export_user("u1")
    json.dumps(exported)  # JSON-ready
    result = await mem.import_user("u2", exported)
    assert result.restored == 2
    assert _without_user(await mem.export_user("u2")) == _without_user(exported)
    merged = await mem.import_user("u3", exported, "merge")
    assert [r.action for r in merged.results] == ["created", "updated", "created"]
    tea = next(f for f in await mem.list_all("u3") if f.content == MORE)
    assert spans(tea.versions) == [(TEA, at(1), at(20)), (MORE, at(20), None)]
    assert [dict(v.metadata) for v in tea.versions] == [{"session": 1}, {"session": 2}]
    again = await mem.import_user("u3", exported, "merge")
    assert {r.action for r in again.results} == {"duplicate"}
    hit = await mem.recall("u2", "green tea", filter={"session": 2})
    assert [f.content for f in hit] == [MORE]


def _without_user(records):
    return [{k: v for k, v in r.items() if k != "user_id"} for r in records]


# ---- review of remember(metadata=, observed_at=): regressions ---------------------------

ONE, TWO, THREE = "I have one kid", "I have two kids", "I have three kids"
HONEY = "I like green tea with honey"


async def test_the_last_of_a_b_a_in_one_batch_is_current(mem):
    # all three said at one moment: the third is not 'already recorded' by the first
    results = await mem.remember("u1", [ONE, TWO, ONE])
    assert [r.action for r in results] == ["created", "updated", "updated"]
    (fact,) = await mem.list_all("u1")
    assert fact.content == ONE
    assert [v.content for v in fact.history] == [ONE, TWO]
    merged = await mem.import_user("u2", [ONE, TWO, ONE], "merge")  # an undated file
    assert [r.action for r in merged.results] == ["created", "updated", "updated"]
    assert [f.content for f in await mem.list_all("u2")] == [ONE]


async def test_a_b_a_gives_one_answer_whatever_the_calls_it_is_split_into(mem):
    """An import re-decided a text against what was stored before its call only: "one kid",
    "two kids", "one kid" in one call ended on "one kid", split into calls (``ltm import
    --batch-size 1`` or 2, or a repeat past line 256) the third was a duplicate of the
    replaced text and "two kids" stayed current, so the dry run (one call) reported what
    the import did not do. A text said again follows remember's rule in every call."""
    texts = [ONE, TWO, ONE]
    for mode in ("merge", "restore"):  # a plain line is merged in a restore too
        for size in (1, 2, 3):
            user = f"{mode}{size}"
            actions = []
            for start in range(0, len(texts), size):
                part = await mem.import_user(user, texts[start : start + size], mode)
                actions += [r.action for r in part.results]
            assert actions == ["created", "updated", "updated"], (mode, size)
            (fact,) = await mem.list_all(user)
            assert [v.content for v in fact.versions] == [ONE, TWO, ONE], (mode, size)
    # remember agrees, one call or three
    together = await mem.remember("r1", texts)
    apart = [await mem.remember("r3", text) for text in texts]
    assert [r.action for r in together] == [r.action for r in apart]
    for user in ("r1", "r3"):
        (fact,) = await mem.list_all(user)
        assert [v.content for v in fact.versions] == [ONE, TWO, ONE]


async def test_dated_lines_out_of_order_give_one_timeline_whatever_the_split(mem):
    """ "one kid" 2022, "two kids" 2021, "one kid" 2020: one merge call sorted them and kept
    three versions, but split into calls (``ltm import --batch-size 1``), or remembered one
    by one, the last was a duplicate of the current text and 2020 was lost (``recall(as_of=
    2020)`` found nothing). A text said before its fact's current text began, while another
    text held, is an earlier version then."""
    texts, years = [ONE, TWO, ONE], [2022, 2021, 2020]
    records = [{"content": t, "valid_from": f"{y}-01-01T00:00:00Z"} for t, y in zip(texts, years)]
    jan = {y: datetime(y, 1, 1, tzinfo=timezone.utc) for y in (2020, 2021, 2022)}
    expected = [(ONE, jan[2020], jan[2021]), (TWO, jan[2021], jan[2022]), (ONE, jan[2022], None)]
    for size in (1, 2, 3):
        user = f"m{size}"
        actions = []
        for start in range(0, len(records), size):
            part = await mem.import_user(user, records[start : start + size], "merge")
            actions += [r.action for r in part.results]
        assert sorted(actions) == ["created", "updated", "updated"], size
        (fact,) = await mem.list_all(user)
        assert spans(fact.versions) == expected, size
        then = await mem.recall(user, "kids", as_of=at(1, 6, 2020))
        assert [f.content for f in then] == [ONE], size
    apart = [await mem.remember("r", t, observed_at=jan[y]) for t, y in zip(texts, years)]
    assert [r.action for r in apart] == ["created", "updated", "updated"]
    (fact,) = await mem.list_all("r")
    assert spans(fact.versions) == expected
    # each said again where it held: nothing changes
    for t, y in zip(texts, years):
        again = await mem.remember("r", t, observed_at=datetime(y, 6, 1, tzinfo=timezone.utc))
        assert again.action == "duplicate", y
    (fact,) = await mem.list_all("r")
    assert spans(fact.versions) == expected


async def test_a_text_said_twice_in_a_merge_keeps_each_time_and_metadata(mem):
    records = [
        {"content": ONE, "valid_from": "2020-01-01T00:00:00Z", "metadata": {"s": 1}},
        {"content": TWO, "valid_from": "2021-01-01T00:00:00Z"},
        {"content": ONE, "valid_from": "2022-01-01T00:00:00Z", "metadata": {"s": 3}},
        {"content": THREE, "valid_from": "2023-01-01T00:00:00Z"},
    ]
    merged = await mem.import_user("u1", records, "merge")
    assert [r.action for r in merged.results] == ["created", "updated", "updated", "updated"]
    (fact,) = await mem.list_all("u1")
    year = [datetime(y, 1, 1, tzinfo=timezone.utc) for y in (2020, 2021, 2022, 2023)]
    assert [(v.content, v.valid_from, v.valid_to, dict(v.metadata)) for v in fact.versions] == [
        (ONE, year[0], year[1], {"s": 1}),
        (TWO, year[1], year[2], {}),
        (ONE, year[2], year[3], {"s": 3}),
        (THREE, year[3], None, {}),
    ]
    then = await mem.recall("u1", "how many kids", as_of=datetime(2022, 6, 1, tzinfo=timezone.utc))
    assert [(f.content, dict(f.metadata)) for f in then] == [(ONE, {"s": 3})]


async def test_a_restore_refuses_times_in_the_future(mem):
    far = {"id": "f1", "content": TWO, "valid_from": "2099-01-01T00:00:00Z"}
    with pytest.raises(InvalidFactError, match=r"record 1: valid_from 2099-01-01.* future"):
        await mem.import_user("u1", [far])
    old = {"id": "f1", "content": TWO, "valid_from": "2020-01-01T00:00:00Z"}
    later = {"valid_from": "2099-01-01T00:00:00Z", "valid_to": "2099-02-01T00:00:00Z"}
    bad = {**old, "history": [{"content": ONE, **later}]}
    with pytest.raises(InvalidFactError, match=r"record 2: history\[0\]: valid_from 2099.* future"):
        await mem.import_user("u1", [old, bad])
    assert await mem.list_all("u1") == []
    merged = await mem.import_user(
        "u1", [{"content": TWO, "valid_from": far["valid_from"]}], "merge"
    )
    assert merged.results[0].fact.valid_from <= datetime.now(timezone.utc)  # merge: now


async def test_a_writer_clock_ahead_never_keeps_a_later_write_from_being_current(mem):
    # another writer's clock a little ahead (within the restore's allowance)
    ahead = (datetime.now(timezone.utc) + timedelta(minutes=2)).isoformat()
    for user in ("u1", "u2"):
        record = {"id": "f1", "content": TWO, "valid_from": ahead}
        assert (await mem.import_user(user, [record])).restored == 1
    moved = await mem.update_fact("u1", "f1", THREE)
    assert (moved.action, moved.fact.content) == ("updated", THREE)
    assert [f.content for f in await mem.list_all("u1")] == [THREE]
    assert [v.content for v in moved.fact.history] == [TWO]
    again = await mem.remember("u2", ONE)  # without observed_at: after the current text
    assert (again.action, again.fact.content) == ("updated", ONE)
    assert [f.content for f in await mem.list_all("u2")] == [ONE]
    assert [v.content for v in again.fact.history] == [TWO]


async def test_a_backfill_run_again_is_a_duplicate_of_the_version_it_became(mem):
    said = [(TEA, at(1)), (HONEY, at(20))]
    first = [
        await mem.remember("u1", t, observed_at=w, metadata={"n": i})
        for i, (t, w) in enumerate(said)
    ]
    assert [r.action for r in first] == ["created", "updated"]
    exported = await mem.export_user("u1")
    # TEA is no longer current (and does not carry HONEY), but it is on record at at(1)
    again = [
        await mem.remember("u1", t, observed_at=w, metadata={"n": i})
        for i, (t, w) in enumerate(said)
    ]
    assert [(r.action, r.fact.id) for r in again] == [("duplicate", first[0].fact.id)] * 2
    assert again[0].fact.content == HONEY
    assert await mem.export_user("u1") == exported
    both = await mem.remember("u1", [TEA, HONEY], observed_at=at(1))  # only TEA was said then
    assert [r.action for r in both] == ["duplicate", "duplicate"]
    assert await mem.export_user("u1") == exported
    moved = await mem.remember("u1", TEA, observed_at=at(25))  # said again later: a new version
    assert moved.action != "duplicate"


async def test_a_new_text_keeps_only_the_metadata_it_was_given(mem):
    await mem.remember("u1", TEA, metadata={"source": "import", "private": True})
    moved = await mem.remember("u1", MORE, metadata={"source": "chat"})
    assert (moved.action, dict(moved.fact.metadata)) == ("updated", {"source": "chat"})
    (fact,) = await mem.list_all("u1")
    assert dict(fact.metadata) == {"source": "chat"}
    assert await mem.recall("u1", "green tea", filter={"private": True}) == []
    old = await mem.recall("u1", "green tea", include_history=True, filter={"private": True})
    assert [(f.content, f.superseded) for f in old] == [(TEA, True)]
    updated = await mem.update_fact("u1", fact.id, MOST)  # update_fact gives none
    assert dict(updated.fact.metadata) == {}


def test_history_limit_never_prunes_the_backfill_it_adds(emb):
    store = LongTermMemoryStore(InMemoryVectorStore(emb), upsert_threshold=0.8, history_limit=1)
    store.remember("u1", ONE, observed_at=at(1, 1, 2021))
    store.remember("u1", TWO, observed_at=at(1, 1, 2022))
    early = store.remember("u1", THREE, observed_at=at(1, 1, 2019))  # older than all kept
    assert (early.action, early.fact.content) == ("updated", TWO)
    assert [v.content for v in early.fact.history] == [THREE, ONE]
    (fact,) = store.list_all("u1")
    assert [v.content for v in fact.history] == [THREE, ONE]
    store.remember("u1", "I have four kids")  # the next write prunes to the limit
    (fact,) = store.list_all("u1")
    assert [v.content for v in fact.history] == [TWO]


async def test_a_backfill_richer_than_the_current_text_is_a_fact_of_its_own(mem):
    await mem.remember("u1", TEA)
    # said earlier, it would land in the history while the shorter text stays current
    early = await mem.remember("u1", HONEY, observed_at=at(1))
    assert (early.action, early.fact.content, early.fact.valid_from) == ("created", HONEY, at(1))
    assert sorted(f.content for f in await mem.list_all("u1")) == sorted([TEA, HONEY])
    assert [f.content for f in await mem.recall("u1", "green tea with honey", limit=1)] == [HONEY]
    # the other way round it is an earlier version: the current text carries it
    await mem.remember("u2", HONEY)
    back = await mem.remember("u2", TEA, observed_at=at(1))
    assert (back.action, back.fact.content) == ("updated", HONEY)
    assert [v.content for v in back.fact.history] == [TEA]
    # an older value of the same attribute is an earlier version too
    await mem.remember("u3", TWO)
    older = await mem.remember("u3", ONE, observed_at=at(1))
    assert (older.action, older.fact.content) == ("updated", TWO)
    assert spans(older.fact.history) == [(ONE, at(1), older.fact.valid_from)]
    # in one batch: a merge whose second record was said before the first (undated: now)
    records = [{"content": TEA}, {"content": HONEY, "valid_from": at(1).isoformat()}]
    merged = await mem.import_user("u4", records, "merge")
    assert [r.action for r in merged.results] == ["created", "created"]
    assert sorted(f.content for f in await mem.list_all("u4")) == sorted([TEA, HONEY])


async def test_a_resolver_update_never_hides_a_richer_backfill(store):
    tea = store.remember("u1", TEA)
    resolver = ListResolver(Resolution("update", tea.fact.id))
    resolving = store.with_options(merge_threshold=0.95, review_threshold=0.3, resolver=resolver)
    result = await resolving.aremember("u1", HONEY, observed_at=at(1))
    assert resolver.asked == [[HONEY]]
    assert (result.action, result.fact.content) == ("created", HONEY)
    assert sorted(f.content for f in resolving.list_all("u1")) == sorted([TEA, HONEY])


async def test_the_current_text_said_earlier_has_held_since_then(mem):
    await mem.remember("u1", TEA, metadata={"session": 9})
    again = await mem.remember("u1", TEA, metadata={"session": 1}, observed_at=at(1, 1, 2019))
    assert again.action == "duplicate" and again.fact.valid_from == at(1, 1, 2019)
    (fact,) = await mem.list_all("u1")
    assert fact.valid_from == fact.created_at == at(1, 1, 2019)
    assert fact.metadata == {"session": 9}  # a duplicate keeps the stored text's metadata
    found = await mem.recall("u1", "green tea", as_of=at(1, 1, 2020))
    assert [f.content for f in found] == [TEA]
    assert (await mem.remember("u1", TEA, observed_at=at(1, 1, 2021))).fact.valid_from == at(
        1, 1, 2019
    )  # a later saying moves nothing


async def test_said_earlier_ends_the_value_it_replaced_there(mem):
    await mem.remember("u1", ONE, observed_at=at(1, 1, 2018))
    assert (await mem.remember("u1", TWO)).action == "updated"
    moved = await mem.remember("u1", TWO, observed_at=at(1, 1, 2020), pinned=True)
    assert moved.action == "duplicate" and moved.fact.pinned
    assert spans(await mem.history("u1", moved.fact.id)) == [
        (ONE, at(1, 1, 2018), at(1, 1, 2020)),
        (TWO, at(1, 1, 2020), None),
    ]
    as_of = {year: await mem.recall("u1", "kids", as_of=at(1, 6, year)) for year in (2019, 2021)}
    assert [[f.content for f in found] for found in as_of.values()] == [[ONE], [TWO]]
    # said before the older value began: an earlier version then (it was a duplicate, and
    # the moment was lost), the current text and its start stay
    before = await mem.remember("u1", TWO, observed_at=at(1, 1, 2017))
    assert before.action == "updated" and before.fact.valid_from == at(1, 1, 2020)
    assert spans(await mem.history("u1", moved.fact.id)) == [
        (TWO, at(1, 1, 2017), at(1, 1, 2018)),
        (ONE, at(1, 1, 2018), at(1, 1, 2020)),
        (TWO, at(1, 1, 2020), None),
    ]


async def test_a_merge_decides_texts_in_the_order_they_were_said(mem):
    records = [
        {"content": TEA, "valid_from": "2021-01-01T00:00:00Z", "metadata": {"s": 2}},
        {"content": TEA, "valid_from": "2019-01-01T00:00:00Z", "metadata": {"s": 1}},
    ]
    merged = await mem.import_user("u1", records, "merge")
    assert [r.action for r in merged.results] == ["duplicate", "created"]  # as given
    (fact,) = await mem.list_all("u1")
    assert (fact.valid_from, dict(fact.metadata)) == (
        at(1, 1, 2019).replace(hour=0, minute=0),
        {"s": 1},
    )


PARIS, BERLIN = "I live in Paris", "I live in Berlin"


def _dated(text: str, year: int, **fields: object) -> dict[str, object]:
    return {"content": text, "valid_from": f"{year}-01-01T00:00:00Z", **fields}


def _lived(fact) -> list[tuple[str, int, int | None]]:
    return [(v.content, v.valid_from.year, v.valid_to and v.valid_to.year) for v in fact.versions]


async def test_a_merge_backfill_in_a_batch_never_hides_a_later_saying_of_it(mem):
    """A merge batch's backfill row (said before the stored text) was taken for the new
    current text: a later saying of the same text in the batch was then a "duplicate", and
    the stored older value stayed current."""
    await mem.import_user("u1", [_dated(BERLIN, 2022)], "merge")
    history = [{"content": PARIS, "valid_from": "2021-01-01T00:00:00Z"}]
    history.append({"content": BERLIN, "valid_from": "2022-01-01T00:00:00Z"})
    record = _dated(PARIS, 2023, id="x1", history=history)
    merged = await mem.import_user("u1", [record], "merge")
    assert [r.action for r in merged.results] == ["updated", "duplicate", "updated"]
    (fact,) = await mem.list_all("u1")
    assert _lived(fact) == [(PARIS, 2021, 2022), (BERLIN, 2022, 2023), (PARIS, 2023, None)]
    then = await mem.recall(
        "u1", "where do I live", as_of=datetime(2023, 6, 1, tzinfo=timezone.utc)
    )
    assert [f.content for f in then] == [PARIS]


async def test_a_merge_of_a_newer_export_leads_with_its_last_word(mem):
    """Merging a newer export (Paris, Berlin, Paris again) into an older copy that holds
    only Paris: every text the copy held was a duplicate whatever its date, so Paris said
    again in 2023 was dropped and Berlin stayed current."""
    await mem.import_user("u1", [_dated(PARIS, 2021)], "merge")
    history = [{"content": PARIS, "valid_from": "2021-01-01T00:00:00Z"}]
    history.append({"content": BERLIN, "valid_from": "2022-01-01T00:00:00Z"})
    newer = [_dated(PARIS, 2023, id="x1", history=history)]
    merged = await mem.import_user("u1", newer, "merge")
    assert [r.action for r in merged.results] == ["duplicate", "updated", "updated"]
    (fact,) = await mem.list_all("u1")
    assert _lived(fact) == [(PARIS, 2021, 2022), (BERLIN, 2022, 2023), (PARIS, 2023, None)]
    # an older export merged again changes nothing: its texts were all said by then
    again = await mem.import_user("u1", newer, "merge")
    assert {r.action for r in again.results} == {"duplicate"}
    old = await mem.import_user("u1", [_dated(PARIS, 2021)], "merge")
    assert [r.action for r in old.results] == ["duplicate"]
    (same,) = await mem.list_all("u1")
    assert _lived(same) == _lived(fact)


async def test_a_backfill_said_twice_in_a_merge_is_one_earlier_version(mem):
    """Two records of one merge carrying the same dated text, said before the stored one:
    each became another zero-length version, and they pushed real texts out of history."""
    history = [{"content": "I live in London", "valid_from": "2019-01-01T00:00:00Z"}]
    history.append({"content": BERLIN, "valid_from": "2022-01-01T00:00:00Z"})
    await mem.import_user("u1", [_dated(BERLIN, 2022, id="x0", history=history)], "merge")
    twice = [_dated(PARIS, 2021, id=name) for name in ("x1", "x2", "x3")]
    merged = await mem.import_user("u1", twice, "merge")
    assert [r.action for r in merged.results] == ["updated", "duplicate", "duplicate"]
    (fact,) = await mem.list_all("u1")
    assert _lived(fact) == [
        ("I live in London", 2019, 2021),
        (PARIS, 2021, 2022),
        (BERLIN, 2022, None),
    ]


CARD = "4111 1111 1111 1111"


@pytest.mark.parametrize(
    "metadata",
    [
        {"note": f"paid with {CARD}"},
        {"source": "api_key=sk-proj-aBcDeFgHiJkLmNoPqRsTuVwXyZ012345"},
        {"password": "hunter22"},  # read as "password: hunter22"
        {"pin": 4821},
        {"deep": {"tags": ["chat", f"card {CARD}"]}},
        {f"card {CARD}": True},  # a key
    ],
)
async def test_a_secret_in_metadata_is_rejected_like_one_in_the_text(mem, metadata):
    """remember(..., metadata=) stored a card number or an API key in a metadata value
    (and export_user gave it back) while the same text as the fact was rejected."""
    result = await mem.remember("u1", "Has a cat named Tom", metadata=metadata)
    assert (result.action, result.fact) == ("rejected", None)
    assert result.reason.startswith("metadata '") and "Not stored" in result.reason
    assert await mem.list_all("u1") == []
    # an import: a restore refuses the record, a merge rejects its text
    record = {"id": "x1", "content": "Has a cat named Tom", "metadata": metadata}
    with pytest.raises(InvalidFactError, match=r"^record 1: metadata '.*Not stored"):
        await mem.import_user("u2", [record])
    earlier = {"content": "Has a kitten", "valid_from": "2024-01-01T00:00:00+00:00"}
    record = {**record, "metadata": {}, "history": [{**earlier, "metadata": metadata}]}
    with pytest.raises(InvalidFactError, match=r"^record 1: history\[0\]: metadata '"):
        await mem.import_user("u2", [record])
    merged = await mem.import_user("u2", [{"content": "Has a cat", "metadata": metadata}], "merge")
    assert [r.action for r in merged.results] == ["rejected"]
    assert await mem.list_all("u2") == []


async def test_harmless_metadata_is_kept(mem):
    metadata = {"source": "chat", "session": 3, "token_count": 1234, "password_reset": True}
    metadata |= {"order": "4111 1111 1111 1112", "tags": ["pin", "card"]}  # not Luhn-valid
    made = await mem.remember("u1", "Has a cat named Tom", metadata=metadata)
    assert made.action == "created" and made.fact.metadata == metadata


def test_secret_guard_false_keeps_secrets_in_metadata_too(emb):
    store = LongTermMemoryStore(InMemoryVectorStore(emb), secret_guard=False)
    made = store.remember("u1", "Has a cat named Tom", metadata={"note": f"card {CARD}"})
    assert made.action == "created"
