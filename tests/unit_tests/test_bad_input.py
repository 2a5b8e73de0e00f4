"""Bad input: each case gets a clear error (or a safe answer) and loses nothing.

This is the table in the README's security section, run on the embedded engines.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.base import InvalidNamespaceError, PutOp, SearchOp

from langchain_ltm import (
    EmbeddingDimensionError,
    InvalidFactError,
    InvalidFilterError,
    InvalidUserIdError,
    LongTermMemoryStore,
)
from tests.fakes import KeywordEmbeddings

SQLISH = [
    "'; DROP TABLE ltm_items; --",
    "u1' OR '1'='1",
    "%') OR 1=1 --",
    "$where: sleep(1000)",
    "\\x00\\'",
]


@pytest.fixture(params=["memory", "qdrant", "sqlite"])
def store(request, tmp_path):
    emb = KeywordEmbeddings(64)
    if request.param == "memory":
        s = LongTermMemoryStore(InMemoryVectorStore(emb))
    elif request.param == "sqlite":
        s = LongTermMemoryStore.from_sqlite(tmp_path / "bad-input.sqlite", emb)
    else:
        s = LongTermMemoryStore.from_qdrant(":memory:", emb)
    s.remember("keeper", "a fact that must survive")
    yield s
    assert [f.content for f in s.list_all("keeper")] == ["a fact that must survive"]
    assert s.remember("keeper", "still writable afterwards").action == "created"
    s.close()


FACT_CASES = {
    "empty": ("", "empty"),
    "whitespace": ("  \n\t ", "empty"),
    "1 MB": ("x" * 1_000_000, "limit is 2,000"),
    "int": (42, "must be a str"),
    "None": (None, "must be a str"),
    "bytes": (b"likes tea", "must be a str"),
    "NUL byte": ("likes\x00tea", "NUL"),
    "lone surrogate": ("likes \udc80 tea", "surrogate"),
    "only punctuation": ("?!...", "no content"),
}


@pytest.mark.parametrize("case", FACT_CASES, ids=list(FACT_CASES))
def test_bad_fact(store, case):
    fact, message = FACT_CASES[case]
    with pytest.raises(InvalidFactError, match=message):
        store.remember("keeper", fact)
    with pytest.raises(InvalidFactError, match=message):
        store.remember("keeper", ["a good fact in the same batch", fact])
    assert len(store.list_all("keeper")) == 1  # the good fact of the batch was not stored


USER_CASES = {
    "missing": (None, "missing"),
    "empty": ("", "empty"),
    "blank": ("   ", "empty"),
    "int": (123, "must be a str"),
    "too long": ("u" * 513, "limit is 512"),
}


@pytest.mark.parametrize("case", USER_CASES, ids=list(USER_CASES))
def test_bad_user_id(store, case):
    user_id, message = USER_CASES[case]
    for call in (
        lambda: store.remember(user_id, "x"),
        lambda: store.recall(user_id, "x"),
        lambda: store.forget(user_id, "x"),
        lambda: store.list_all(user_id),
        lambda: store.clear_user(user_id),
    ):
        with pytest.raises(InvalidUserIdError, match=message):
            call()


@pytest.mark.parametrize(
    ("namespace", "message"),
    [
        (("memories", "a.b"), "cannot contain"),
        (("memories", ""), "empty"),
        (("langgraph", "x"), "langgraph"),
        ((), "empty"),
        (("memories", 7), "must be strings"),
    ],
)
def test_bad_namespace(store, namespace, message):
    with pytest.raises(InvalidNamespaceError, match=message):
        store.put(namespace, "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(namespace, "k", {"v": 1})])


def test_filters_limits_and_offsets(store):
    with pytest.raises(InvalidFilterError, match=r"\$regex"):
        store.search(("memories",), filter={"content": {"$regex": ".*"}})
    for bad in ({"limit": -1}, {"offset": -5}, {"limit": 1.5}):
        with pytest.raises(ValueError, match="must be an int"):
            store.search(("memories",), **bad)
    huge = store.search(("memories",), query="fact", limit=10**9, offset=0)
    assert [i.value["content"] for i in huge] == ["a fact that must survive"]
    assert store.search(("memories",), limit=5, offset=10**9) == []
    # recall's limit is 1 to 1,000 (the README says so where recall is described and here)
    assert [f.content for f in store.recall("keeper", "fact", limit=1000)] == [
        "a fact that must survive"
    ]
    for bad in (0, 1001, 10**9):
        with pytest.raises(ValueError, match="limit must be an int from 1 to 1000"):
            store.recall("keeper", "fact", limit=bad)


PROVENANCE_CASES = {
    "metadata with a reserved key": (
        {"metadata": {"valid_from": "x"}},
        InvalidFactError,
        "'valid_from' is a field of the stored fact",
    ),
    "metadata not JSON": ({"metadata": {"tags": {1, 2}}}, InvalidFactError, "not JSON"),
    "metadata not a dict": ({"metadata": "chat"}, InvalidFactError, "must be a dict"),
    "naive observed_at": (
        {"observed_at": datetime(2023, 5, 8)},
        ValueError,
        "no time zone",
    ),
    "future observed_at": (
        {"observed_at": datetime.now(timezone.utc) + timedelta(days=1)},
        ValueError,
        "in the future",
    ),
    "observed_at a string": ({"observed_at": "2023-05-08"}, TypeError, "must be a datetime"),
    # "no" is truthy: it pinned the stored fact while the result said pinned="no"
    "pinned a string": ({"pinned": "no"}, TypeError, "pinned must be True or False"),
    "pinned an int": ({"pinned": 1}, TypeError, "pinned must be True or False"),
}


@pytest.mark.parametrize("case", PROVENANCE_CASES, ids=list(PROVENANCE_CASES))
def test_bad_metadata_and_observed_at(store, case):
    kwargs, error, message = PROVENANCE_CASES[case]
    with pytest.raises(error, match=message):
        store.remember("keeper", ["a good fact in the same batch", "another"], **kwargs)
    assert len(store.list_all("keeper")) == 1


async def test_aremember_refuses_a_pinned_that_is_no_bool(store):
    with pytest.raises(TypeError, match="pinned must be True or False, got 'no'"):
        await store.aremember("keeper", "another fact", pinned="no")
    assert len(await store.alist_all("keeper")) == 1


def test_bad_recall_filters(store):
    with pytest.raises(InvalidFilterError, match=r"\$regex"):
        store.recall("keeper", "fact", filter={"source": {"$regex": ".*"}})
    with pytest.raises(InvalidFilterError, match="'content' is a field of the stored fact"):
        store.recall("keeper", "fact", filter={"content": "a fact that must survive"})
    for text in SQLISH:  # stored and matched as plain text
        assert store.recall("keeper", "fact", filter={text: text}) == []


def test_ten_thousand_phrasings(store):
    with pytest.raises(InvalidFactError, match="limit is 32"):
        store.recall("keeper", [f"q{i}" for i in range(10_000)])


def test_changed_embedding_model(store):
    other = LongTermMemoryStore(store.backend, embeddings=KeywordEmbeddings(dims=32))
    with pytest.raises(EmbeddingDimensionError, match="model changed"):
        other.remember("keeper", "written with another model")
    with pytest.raises(EmbeddingDimensionError):
        other.search(("memories",), query="fact")


@pytest.mark.parametrize("text", SQLISH)
def test_sql_looking_strings_are_just_text(store, text):
    result = store.remember(text, f"note {text}")
    assert result.action == "created"
    assert [f.content for f in store.recall(text, text)] == [f"note {text}"]
    store.put(("docs", "x"), text, {"k": text}, index=False)
    assert store.get(("docs", "x"), text).value == {"k": text}
    assert [i.key for i in store.search(("docs",), filter={"k": text})] == [text]
    assert store.search(("docs",), filter={text: text}) == []
    assert store.forget("keeper", text) is False
    assert store.clear_user(text) == 1


def test_raw_batch_ops_are_validated(store):
    with pytest.raises(ValueError, match="limit"):
        store.batch([SearchOp(("memories",), None, -3, 0, None)])
    with pytest.raises(ValueError, match="Unknown operation"):
        store.batch(["not an op"])  # type: ignore[list-item]


@pytest.mark.parametrize(
    "prefix", [None, ("a", ""), ("a", 5), ("a", "b.c"), ("a", "x\x00y"), "memories"]
)
async def test_search_and_asearch_refuse_a_bad_prefix_alike(prefix):
    store = LongTermMemoryStore(InMemoryVectorStore(KeywordEmbeddings(dims=16)))
    with pytest.raises((InvalidNamespaceError, TypeError, ValueError)) as sync:
        store.search(prefix, query="tea")
    with pytest.raises((InvalidNamespaceError, TypeError, ValueError)) as async_:
        await store.asearch(prefix, query="tea")
    assert type(async_.value) is type(sync.value)
    assert str(async_.value) == str(sync.value)


@pytest.mark.parametrize(
    "value",
    [{"text": "x\ud800y"}, {"a": [1, {"b": "\udfff"}]}, {"bad\ud800name": 1}],
)
async def test_a_value_with_a_lone_surrogate_is_refused_and_keeps_the_old_one(value, tmp_path):
    from langchain_ltm.backends.sqlite import sqlite_backend

    for store in (
        LongTermMemoryStore(InMemoryVectorStore(KeywordEmbeddings(dims=16))),
        LongTermMemoryStore(
            sqlite_backend(tmp_path / "v.sqlite"), embeddings=KeywordEmbeddings(dims=16)
        ),
    ):
        store.put(("docs",), "k", {"text": "old"})
        with pytest.raises(ValueError, match="lone surrogate"):
            store.put(("docs",), "k", value)
        with pytest.raises(ValueError, match="lone surrogate"):
            await store.aput(("docs",), "k", value)
        assert store.get(("docs",), "k").value == {"text": "old"}
        store.close()


def _nested(depth: int) -> dict:
    """A value ``depth`` levels deep (objects and lists in turn) under its top object."""
    value: Any = "x"
    for i in range(depth):
        value = {"k": value} if i % 2 else [value]
    return {"top": value}


async def test_a_value_nested_too_deep_is_refused_clearly_and_keeps_the_old_one(tmp_path):
    """Nesting past a few hundred levels raised a bare ``RecursionError`` from copying the
    value, at a depth that depended on the caller's stack."""
    from langchain_ltm._ops import MAX_DEPTH
    from langchain_ltm.backends.sqlite import sqlite_backend

    for store in (
        LongTermMemoryStore(InMemoryVectorStore(KeywordEmbeddings(dims=16))),
        LongTermMemoryStore(
            sqlite_backend(tmp_path / "d.sqlite"), embeddings=KeywordEmbeddings(dims=16)
        ),
    ):
        store.put(("docs",), "k", {"text": "old"})
        for depth in (MAX_DEPTH + 1, 600, 5000):
            with pytest.raises(ValueError, match=f"nested more than {MAX_DEPTH} levels"):
                store.put(("docs",), "k", _nested(depth))
            with pytest.raises(ValueError, match=f"nested more than {MAX_DEPTH} levels"):
                await store.aput(("docs",), "k", _nested(depth))
        assert store.get(("docs",), "k").value == {"text": "old"}
        deep = _nested(MAX_DEPTH - 5)  # within the limit: stored and read back whole
        store.put(("docs",), "deep", deep)
        assert store.get(("docs",), "deep").value == deep
        store.close()
