"""The generic engine on a real Chroma server (``chroma run``, client and server over HTTP).

The unit suites' cases, re-collected here on ``chroma-server``: the engine fact cases, the
BaseStore contract and the isolation fuzz. Then two OS processes writing at once through
one catalog file and one server: nothing lost, nothing duplicated, users kept apart.
"""

from __future__ import annotations

import json

import chromadb
import pytest
from langchain_chroma import Chroma

from langchain_ltm import CatalogMismatchError, LongTermMemoryStore
from langchain_ltm.backends.vectorstore import vectorstore_backend
from tests.engine_facts import *  # noqa: F403  (every engine runs these)
from tests.fakes import KeywordEmbeddings
from tests.isolation import run_isolation, summary
from tests.processes import PARAPHRASES, check_two_writers, note, run_together
from tests.unit_tests import test_vectorstore_backend as unit
from tests.vectorstores import (
    CHROMA_SERVER,
    SERVER_KINDS,
    VectorStoreContract,
    chroma_settings,
    open_store,
)

pytestmark = pytest.mark.usefixtures("chroma_server")


@pytest.fixture(params=SERVER_KINDS)
def store(request, emb, tmp_path):
    store = open_store(request.param, emb, tmp_path, upsert_threshold=0.8)
    yield store
    store.close()


class TestChromaServerContract(VectorStoreContract):
    kind = "chroma-server"


def test_no_leaks_and_nothing_lost_on_a_chroma_server(tmp_path, capsys):
    store = open_store("chroma-server", KeywordEmbeddings(64), tmp_path, upsert_threshold=0.999)
    report = run_isolation(store, n_users=50, steps=40, seed=29)
    with capsys.disabled():
        print("\nisolation", summary(report, "chroma-server", 50))
    assert report.operations >= 50 * 40 * 0.9
    assert report.leaks == []
    assert report.missing == []
    store.close()


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_repair_deletes_what_an_older_copy_brought_back(kind, tmp_path):
    unit.check_repair_drops_strays(kind, tmp_path)


def test_a_batch_above_the_servers_max_batch_size_is_stored_whole(tmp_path):
    """The server's upsert refuses more than its ``max_batch_size``: the write is split."""
    from langgraph.store.base import PutOp

    from tests.vectorstores import count_documents

    store = open_store("chroma-server", KeywordEmbeddings(64), tmp_path)
    vs = store.backend.vectorstore
    n = vs._client.get_max_batch_size() + 100
    store.batch([PutOp(("docs",), f"k{i}", {"text": f"note {i}"}) for i in range(n)])
    assert count_documents(vs) == n
    assert len(store.search(("docs",), query="note", limit=n)) == n
    store.close()


WORKER = """
import json, sys
import chromadb
from chromadb.config import Settings
from langchain_chroma import Chroma
from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.vectorstore import vectorstore_backend
from tests.fakes import KeywordEmbeddings

host, port, collection, catalog, me, texts, notes = sys.argv[1:8]
emb = KeywordEmbeddings(dims=64)
client = chromadb.HttpClient(host=host, port=int(port),
                             settings=Settings(anonymized_telemetry=False))
vs = Chroma(collection, emb, client=client)
store = LongTermMemoryStore(vectorstore_backend(vs, catalog=catalog), embeddings=emb,
                            merge_threshold=0.6)
store.list_all("warm-up")  # connected before the start signal
print("ready", flush=True)
sys.stdin.readline()
out = {"shared": [], "own": []}
for i, (text, mine) in enumerate(zip(json.loads(texts), json.loads(notes))):
    r = store.remember("alice", text)  # the same user from both processes
    out["shared"].append([r.action, r.fact.id])
    r = store.remember(me, mine)
    out["own"].append([r.action, r.fact.id])
    store.put(("docs", "shared"), f"{me}-{i}", {"text": f"{me} document {i}"})
print(json.dumps(out), flush=True)
store.close()
"""


def test_two_processes_writing_at_once_lose_and_duplicate_nothing(chroma_server, tmp_path):
    collection = "ltm-two-processes"
    catalog = str(tmp_path / "catalog.sqlite")
    users = ["worker-a", "worker-b"]
    halves = [PARAPHRASES[0::2], PARAPHRASES[1::2]]
    argv = [
        [WORKER, chroma_server["host"], str(chroma_server["port"]), collection, catalog, me,
         json.dumps(texts), json.dumps([note(me, i) for i in range(len(texts))])]
        for me, texts in zip(users, halves, strict=True)
    ]  # fmt: skip
    outputs = [json.loads(out.strip().splitlines()[-1]) for out in run_together(argv)]

    emb = KeywordEmbeddings(dims=64)
    client = chromadb.HttpClient(
        host=chroma_server["host"], port=chroma_server["port"], settings=chroma_settings()
    )
    vs = Chroma(collection, emb, client=client)
    backend = vectorstore_backend(vs, catalog=catalog)
    store = LongTermMemoryStore(backend, embeddings=emb)
    # the shared user's paraphrases are one fact, each process's notes there once
    check_two_writers(store, outputs, users)
    # the shared namespace holds both processes' documents, once each
    items = store.search(("docs", "shared"), limit=100)
    expected = {
        f"{me}-{i}" for me, half in zip(users, halves, strict=True) for i in range(len(half))
    }
    assert sorted(it.key for it in items) == sorted(expected)
    ranked = store.search(("docs", "shared"), query="document", limit=100)
    assert sorted(h.key for h in ranked) == sorted(expected)
    # the server holds exactly the current documents: no orphan, no duplicate
    assert backend.repair(grace_seconds=0) == 0
    assert vs._collection.count() == backend.catalog.vector_count(())
    store.close()
    client.delete_collection(collection)


def test_two_catalogs_on_one_server_collection_keep_apart(tmp_path):
    """What two machines get (a catalog each): separate stores that never touch each other."""
    emb = KeywordEmbeddings(dims=64)
    client = chromadb.HttpClient(
        host=CHROMA_SERVER["host"], port=CHROMA_SERVER["port"], settings=chroma_settings()
    )
    vs = Chroma("ltm-two-catalogs", emb, client=client)
    a = LongTermMemoryStore(vectorstore_backend(vs, catalog=tmp_path / "a.sqlite"), embeddings=emb)
    a.remember("alice", "likes green tea")
    vs = Chroma("ltm-two-catalogs", emb, client=client)
    # a new catalog over a's documents is refused unless a second store is meant
    with pytest.raises(CatalogMismatchError, match=r"a\.sqlite"):
        vectorstore_backend(vs, catalog=tmp_path / "b.sqlite")
    backend = vectorstore_backend(vs, catalog=tmp_path / "b.sqlite", share_collection=True)
    b = LongTermMemoryStore(backend, embeddings=emb)
    stores = [a, b]
    b.remember("alice", "likes black coffee")
    assert [f.content for f in a.recall("alice", "likes")] == ["likes green tea"]
    assert [f.content for f in b.recall("alice", "likes")] == ["likes black coffee"]
    b.clear_user("alice")
    assert [f.content for f in a.recall("alice", "likes")] == ["likes green tea"]
    assert a.backend.repair(grace_seconds=0) == 0
    assert b.backend.repair(grace_seconds=0) == 0
    assert Chroma("ltm-two-catalogs", emb, client=client)._collection.count() == 1
    for store in stores:
        store.close()
    client.delete_collection("ltm-two-catalogs")


def test_a_chroma_server_that_stops_fails_calls_with_backend_error_and_loses_nothing(
    tmp_path, caplog
):
    """A server of its own, stopped mid-test: every call that needs it raises
    ``BackendError`` (sync and async; it raised ``httpx.ConnectError``), MemoryMiddleware
    answers without memory, and after a restart on the same port everything works and
    every text is there."""
    import asyncio
    import logging

    from langchain.agents import create_agent

    from langchain_ltm import BackendError, MemoryMiddleware
    from tests.chroma_server import ChromaServer
    from tests.fakes import ScriptedToolModel

    emb = KeywordEmbeddings(64)
    server = ChromaServer(tmp_path / "server").start()
    try:
        client = chromadb.HttpClient(host=server.host, port=server.port, settings=chroma_settings())
        vs = Chroma("ltm-down", emb, client=client)
        backend = vectorstore_backend(vs, catalog=tmp_path / "catalog.sqlite")
        store = LongTermMemoryStore(backend, embeddings=emb)
        store.remember("alice", ["Lives in Lisbon", "Has a dog named Rex"])
        store.put(("docs",), "d1", {"text": "green tea notes"})
        before = store.export_user("alice")
        lisbon = next(f.id for f in store.list_all("alice") if "Lisbon" in f.content)
        server.stop()

        calls = {
            "recall": lambda: store.recall("alice", "Lisbon"),
            "remember": lambda: store.remember("alice", "Plays tennis on Sundays"),
            "update_fact": lambda: store.update_fact("alice", lisbon, "Lives in Porto"),
            "put": lambda: store.put(("docs",), "d2", {"text": "black coffee notes"}),
            "search": lambda: store.search(("docs",), query="tea"),
            "arecall": lambda: asyncio.run(store.arecall("alice", "Lisbon")),
            "aremember": lambda: asyncio.run(store.aremember("alice", "Works at Acme")),
            "aput": lambda: asyncio.run(store.aput(("docs",), "d3", {"text": "more notes"})),
        }
        for call in calls.values():
            with pytest.raises(BackendError, match=r"^Chroma failed to .*httpx\.ConnectError"):
                call()
        assert store.export_user("alice") == before  # nothing of the failed calls written
        assert store.get(("docs",), "d2") is None

        question = {"messages": [("user", "do I still live in Lisbon?")]}
        agent = create_agent(
            ScriptedToolModel(), middleware=[MemoryMiddleware(store, mode="recall")], store=store
        )
        with caplog.at_level(logging.WARNING):
            out = agent.invoke(question, {"configurable": {"user_id": "alice"}})
            again = asyncio.run(agent.ainvoke(question, {"configurable": {"user_id": "alice"}}))
        assert out["messages"][-1].content == again["messages"][-1].content == "ok"
        assert "Chroma failed to search" in caplog.text

        server.restart(timeout=90)
        assert store.export_user("alice") == before
        assert store.remember("alice", "Plays tennis on Sundays").action == "created"
        assert store.update_fact("alice", lisbon, "Lives in Lisbon, Portugal").action == "updated"
        store.put(("docs",), "d2", {"text": "black coffee notes"})
        texts = {f.content for f in store.recall("alice", ["Lisbon", "dog Rex", "tennis"])}
        assert texts == {
            "Lives in Lisbon, Portugal",
            "Has a dog named Rex",
            "Plays tennis on Sundays",
        }
        assert "Lives in Lisbon" in [v.content for v in store.history("alice", lisbon)]
        assert [i.key for i in store.search(("docs",), query="coffee notes", limit=1)] == ["d2"]
        assert backend.repair(grace_seconds=0) == 0
        assert vs._collection.count() == backend.catalog.vector_count(())
        store.close()
    finally:
        server.stop()
