"""The generic engine over a vectorstore whose database stops answering.

The probe is a real store (an ``InMemoryVectorStore`` subclass with precomputed-vector
calls, sync and native async) that raises what a client raises when its server is gone
(``ConnectionRefusedError``) once told to. What the client raises must reach the caller as
``BackendError`` naming the store and the call, the cause chained, with nothing of the call
written; ``MemoryMiddleware`` then answers without memory instead of failing the turn, and
once the store answers again everything works and no text is lost. The same with a real
Chroma server stopped mid-test: tests/integration_tests/test_vectorstore_servers.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sys
from typing import Any

import pytest
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.base import PutOp

from langchain_ltm import BackendError, LongTermMemoryStore, UnsupportedVectorStoreError
from langchain_ltm.backends.vectorstore import StoreFamily, VectorStoreBackend, vectorstore_backend
from tests.fakes import KeywordEmbeddings
from tests.unit_tests.test_memory_middleware import RecordingModel, agent_with, run

DIMS = 64
NATIVE = StoreFamily("down", filter_builder=dict, distance="similarity")
THREADS = StoreFamily("down", filter_builder=dict, distance="similarity", native_async=False)


class _Down(InMemoryVectorStore):
    """A real in-memory store whose every call raises ``failure`` while it is set."""

    def __init__(self, embedding: Any) -> None:
        super().__init__(embedding)
        self.failure: BaseException | None = None

    def _answer(self) -> None:
        if self.failure is not None:
            raise self.failure

    def add_embeddings(self, text_embeddings, metadatas=None, ids=None):
        self._answer()
        for (text, vector), meta, id_ in zip(text_embeddings, metadatas, ids, strict=True):
            self.store[id_] = {"id": id_, "vector": vector, "text": text, "metadata": meta}
        return ids

    async def aadd_embeddings(self, text_embeddings, metadatas=None, ids=None):
        await asyncio.sleep(0)
        return self.add_embeddings(text_embeddings, metadatas, ids)

    def similarity_search_with_score_by_vector(self, embedding, k=4, filter=None):
        self._answer()
        keep = lambda doc: all(doc.metadata.get(k_) == v for k_, v in filter.items())  # noqa: E731
        found = self._similarity_search_with_score_by_vector(embedding, k, filter=keep)
        return [(doc, score) for doc, score, _ in found]

    async def asimilarity_search_with_score_by_vector(self, embedding, k=4, filter=None):
        await asyncio.sleep(0)
        return self.similarity_search_with_score_by_vector(embedding, k, filter)

    def get_by_ids(self, ids):
        self._answer()
        return super().get_by_ids(ids)

    async def aget_by_ids(self, ids):
        return self.get_by_ids(ids)

    def delete(self, ids=None, **kwargs):
        self._answer()
        return super().delete(ids, **kwargs)

    async def adelete(self, ids=None, **kwargs):
        return self.delete(ids, **kwargs)


def _refused() -> ConnectionRefusedError:
    return ConnectionRefusedError(111, "Connection refused")


def _open(tmp_path, family=NATIVE):
    emb = KeywordEmbeddings(DIMS)
    vs = _Down(emb)
    backend = vectorstore_backend(vs, catalog=tmp_path / "c.db", family=family)
    return LongTermMemoryStore(backend, embeddings=emb), vs


def _fill(store: LongTermMemoryStore) -> None:
    store.remember("alice", ["Lives in Lisbon", "Has a dog named Rex"])
    store.put(("docs",), "d1", {"text": "green tea notes"})


def _calls(store: LongTermMemoryStore, mode: str) -> dict[str, Any]:
    """Every call that reaches the vectorstore, as the caller makes it (sync or async)."""
    fact_id = store.list_all("alice")[0].id
    sync = {
        "recall": lambda: store.recall("alice", "Lisbon"),
        "remember": lambda: store.remember("alice", "Plays tennis on Sundays"),
        "remember an update": lambda: store.remember("alice", "Lives in Lisbon, Portugal"),
        "update_fact": lambda: store.update_fact("alice", fact_id, "Lives in Porto"),
        "put": lambda: store.put(("docs",), "d2", {"text": "black coffee notes"}),
        "search": lambda: store.search(("docs",), query="tea"),
    }
    if mode == "sync":
        return sync
    coros = {
        "recall": lambda: store.arecall("alice", "Lisbon"),
        "remember": lambda: store.aremember("alice", "Plays tennis on Sundays"),
        "remember an update": lambda: store.aremember("alice", "Lives in Lisbon, Portugal"),
        "update_fact": lambda: store.aupdate_fact("alice", fact_id, "Lives in Porto"),
        "put": lambda: store.aput(("docs",), "d2", {"text": "black coffee notes"}),
        "search": lambda: store.asearch(("docs",), query="tea"),
    }
    return {name: (lambda c=c: asyncio.run(c())) for name, c in coros.items()}


@pytest.mark.parametrize("family", [NATIVE, THREADS], ids=["native-async", "threads"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_store_that_is_down_raises_backend_error_and_loses_nothing(tmp_path, mode, family):
    store, vs = _open(tmp_path, family)
    _fill(store)
    before = store.export_user("alice")
    vs.failure = _refused()
    for name, call in _calls(store, mode).items():
        with pytest.raises(BackendError) as info:
            call()
        message = str(info.value)
        assert message.startswith("_Down failed to "), name
        assert "(ConnectionRefusedError: [Errno 111] Connection refused)" in message, name
        assert "retry once it answers" in message, name
        assert info.value.__cause__ is vs.failure, name  # chained, not swallowed
    # nothing of the failed calls was written
    assert store.export_user("alice") == before
    assert store.get(("docs",), "d2") is None
    vs.failure = None  # the store answers again: every call works, no text is lost
    assert [f.content for f in store.recall("alice", "Lisbon")][:1] == ["Lives in Lisbon"]
    assert store.remember("alice", "Plays tennis on Sundays").action == "created"
    store.put(("docs",), "d2", {"text": "black coffee notes"})
    assert [i.key for i in store.search(("docs",), query="coffee", limit=1)] == ["d2"]
    found = {f.content for f in store.recall("alice", ["Lisbon", "dog Rex", "tennis"], limit=5)}
    assert found == {"Lives in Lisbon", "Has a dog named Rex", "Plays tennis on Sundays"}
    assert store.backend.repair(grace_seconds=0) == 0  # nothing the failures left behind
    store.close()


def test_the_message_says_nothing_of_a_failed_write_was_stored(tmp_path):
    store, vs = _open(tmp_path)
    _fill(store)
    vs.failure = _refused()
    with pytest.raises(BackendError, match=r"_Down failed to add documents .* Nothing of this"):
        store.put(("docs",), "d1", {"text": "rewritten"})
    vs.failure = None
    assert store.get(("docs",), "d1").value == {"text": "green tea notes"}
    assert [i.value for i in store.search(("docs",), query="tea notes", limit=1)] == [
        {"text": "green tea notes"}
    ]
    store.close()


class _KLimit(_Down):
    """A store whose search refuses a k above 16, in sqlite-vec's words."""

    def similarity_search_with_score_by_vector(self, embedding, k=4, filter=None):
        if k > 16:
            import sqlite3

            raise sqlite3.OperationalError(
                f"k value in knn query too large, provided {k} and the limit is 16"
            )
        return super().similarity_search_with_score_by_vector(embedding, k, filter)


def test_a_store_refusing_a_large_k_is_told_of_max_k_not_that_it_is_down(tmp_path):
    # it said "Check that _KLimit's database is up and reachable; retry once it answers":
    # retrying never helps, registering the store's limit does
    emb = KeywordEmbeddings(DIMS)
    vs = _KLimit(emb)
    store = LongTermMemoryStore(
        vectorstore_backend(vs, catalog=tmp_path / "c.db", family=NATIVE),
        embeddings=emb,
        fields=["text"],
    )
    store.batch([PutOp(("docs",), str(i), {"text": f"tea note {i}"}) for i in range(30)])
    with pytest.raises(BackendError, match=r"register_vectorstore\(\.\.\., max_k=N\)") as err:
        store.search(("docs",), query="tea", limit=20)  # asks for k = 40
    assert "k value in knn query too large" in str(err.value)
    store.close()
    capped = dataclasses.replace(NATIVE, max_k=16)  # as the message says
    store = LongTermMemoryStore(
        vectorstore_backend(vs, catalog=tmp_path / "c.db", family=capped),
        embeddings=emb,
        fields=["text"],
    )
    assert len(store.search(("docs",), query="tea", limit=20)) == 20
    vs.failure = _refused()  # a store that is down is still told to check it is up
    with pytest.raises(BackendError, match=r"failed to search .* is up and reachable") as err:
        store.search(("docs",), query="tea", limit=5)
    assert "max_k" not in str(err.value)
    store.close()


def test_failed_deletes_and_repair_while_down_lose_nothing(tmp_path, caplog):
    """A forget lands in the catalog; its documents stay journaled for ``repair()``."""
    store, vs = _open(tmp_path)
    _fill(store)
    rex = next(f for f in store.list_all("alice") if "Rex" in f.content)
    vs.failure = _refused()
    with caplog.at_level(logging.WARNING):
        assert store.forget("alice", rex.id) is True
    assert "_Down failed to delete documents" in caplog.text
    with pytest.raises(BackendError, match=r"_Down failed to read documents by id"):
        store.backend.repair()
    with pytest.raises(BackendError, match=r"_Down failed to read documents by id"):
        VectorStoreBackend(vs, catalog=tmp_path / "c.db", family=NATIVE)  # opening repairs
    store.close()
    vs.failure = None
    again = VectorStoreBackend(vs, catalog=tmp_path / "c.db", family=NATIVE)  # repairs
    assert again.repair() == 0
    emb = KeywordEmbeddings(DIMS)
    reopened = LongTermMemoryStore(again, embeddings=emb)
    assert [f.content for f in reopened.list_all("alice")] == ["Lives in Lisbon"]
    assert [f.content for f in reopened.recall("alice", "Lisbon dog Rex")] == ["Lives in Lisbon"]
    reopened.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_memory_middleware_answers_without_memory_while_the_store_is_down(tmp_path, caplog, mode):
    store, vs = _open(tmp_path)
    store.remember("alice", "Prefers answers in Spanish", pinned=True)
    store.remember("alice", "Lives in Lisbon")
    vs.failure = _refused()
    model = RecordingModel()
    agent = agent_with(store, model, mode="recall")
    question = {"messages": [("user", "do I still live in Lisbon?")]}
    with caplog.at_level(logging.WARNING):
        if mode == "sync":
            out = agent.invoke(question, run("alice"))
        else:
            out = asyncio.run(agent.ainvoke(question, run("alice")))
    assert out["messages"][-1].content == "ok"  # the turn completed
    assert "_Down failed to search" in caplog.text
    assert str(model.requests[-1][0].content) == "You are helpful."  # no memory block
    vs.failure = None
    model = RecordingModel()
    agent_with(store, model, mode="recall").invoke(question, run("alice", "t2"))
    assert "Lives in Lisbon" in str(model.requests[-1][0].content)  # recalled again
    store.close()


class _Cancelled(asyncio.CancelledError):
    pass


@pytest.mark.parametrize(
    "failure",
    [
        ValueError("Expected where to have exactly one operator"),  # what it was sent
        TypeError("unexpected keyword argument 'filter'"),
        UnsupportedVectorStoreError("ours, raised from a family function"),
    ],
    ids=["ValueError", "TypeError", "LTMError"],
)
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_what_the_store_refuses_and_our_own_errors_are_not_backend_errors(tmp_path, mode, failure):
    """Repeating a call the store refuses for what it was sent fails the same way: it is no
    ``BackendError`` (which ``MemoryMiddleware`` would take for an outage); the caller
    gets the store's own exception, with a note naming the store and the call."""
    store, vs = _open(tmp_path)
    _fill(store)
    vs.failure = failure
    for name, call in _calls(store, mode).items():
        with pytest.raises(type(failure)) as info:
            call()
        assert info.value is failure, name
        assert not isinstance(info.value, BackendError), name
    if sys.version_info >= (3, 11) and not isinstance(failure, UnsupportedVectorStoreError):
        notes = failure.__notes__  # each once, however often it passed
        assert notes[0] == (
            "langchain-ltm: raised by _Down asked to search; repeating the call will not help."
        )
        assert len(notes) == len(set(notes))
    store.close()


def test_interrupts_and_cancellation_pass_through(tmp_path):
    store, vs = _open(tmp_path)
    _fill(store)
    vs.failure = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        store.recall("alice", "Lisbon")
    vs.failure = _Cancelled()
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(store.arecall("alice", "Lisbon"))
    vs.failure = None
    assert [f.content for f in store.recall("alice", "Lisbon")][:1] == ["Lives in Lisbon"]
    store.close()
