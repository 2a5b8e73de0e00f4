"""Keys and namespace labels with a lone surrogate: a clear error on every engine.

Only Python strings can hold one; SQLite and Postgres (UTF-8 text) cannot store it, and
the error they gave was a bare ``UnicodeEncodeError`` from the driver, naming nothing.
"""

from __future__ import annotations

import pytest
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.base import InvalidNamespaceError

from langchain_ltm import LongTermMemoryStore
from tests.fakes import KeywordEmbeddings


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    emb = KeywordEmbeddings(dims=16)
    if request.param == "memory":
        return LongTermMemoryStore(InMemoryVectorStore(emb))
    return LongTermMemoryStore.from_sqlite(tmp_path / "m.db", emb)


def test_a_lone_surrogate_in_a_key_or_label_is_refused_before_any_write(store):
    store.put(("docs",), "kept", {"text": "kept as it was"})
    with pytest.raises(ValueError, match="not valid Unicode"):
        store.put(("docs",), "a\ud800", {"text": "x"})
    with pytest.raises(InvalidNamespaceError, match="not valid Unicode"):
        store.put(("d\udc00",), "k", {"text": "x"})
    with pytest.raises(InvalidNamespaceError, match="not valid Unicode"):
        store.search(("d\udc00",))
    assert [i.key for i in store.search(("docs",))] == ["kept"]
    store.put(("dócs", "ユーザー"), "clé", {"text": "fine"})  # any real Unicode is
    assert store.get(("dócs", "ユーザー"), "clé").value == {"text": "fine"}


async def test_a_lone_surrogate_in_a_search_query_is_a_clear_error(store):
    """The packaged tokenizer failed on one with a bare ``TypeError`` (a search is a read:
    nothing to lose, but the caller is told what to change)."""
    store.put(("docs",), "k", {"text": "green tea"})
    with pytest.raises(ValueError, match="query is not valid Unicode"):
        store.search(("docs",), query="tea \ud83d")
    with pytest.raises(ValueError, match="query is not valid Unicode"):
        await store.asearch(("docs",), query="tea \ud83d")
    assert [i.key for i in store.search(("docs",), query="tea")] == ["k"]
