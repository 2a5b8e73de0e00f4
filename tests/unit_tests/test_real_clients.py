"""Real clients of the store, run against it: LangMem's memory tools and deepagents'
``StoreBackend`` (the packages themselves, not imitations), on the in-memory, SQLite and
Qdrant engines, each beside LangGraph's ``InMemoryStore`` doing the same work."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from deepagents.backends.store import StoreBackend
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langmem import create_manage_memory_tool, create_search_memory_tool

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.qdrant import qdrant_backend
from langchain_ltm.backends.sqlite import sqlite_backend
from tests.fakes import KeywordEmbeddings

DIMS = 64


@pytest.fixture(params=["oracle", "memory", "sqlite", "qdrant"])
def store(request, tmp_path) -> Iterator[BaseStore]:
    emb = KeywordEmbeddings(dims=DIMS)
    if request.param == "oracle":
        yield InMemoryStore(index={"dims": DIMS, "embed": emb, "fields": ["content"]})
        return
    if request.param == "memory":
        made = LongTermMemoryStore(InMemoryVectorStore(emb), fields=["content"])
    elif request.param == "sqlite":
        made = LongTermMemoryStore(
            sqlite_backend(tmp_path / "clients.sqlite"), embeddings=emb, fields=["content"]
        )
    else:
        made = LongTermMemoryStore(
            qdrant_backend(":memory:", dims=DIMS), embeddings=emb, fields=["content"]
        )
    yield made
    made.close()


def _files(backend: StoreBackend, path: str) -> list[str]:
    listed = backend.ls(path)
    assert listed.error is None
    return sorted(entry["path"] for entry in listed.entries)


async def test_deepagents_files_round_trip(store):
    files = StoreBackend(store=store, namespace=lambda _rt: ("filesystem", "alice"))
    other = StoreBackend(store=store, namespace=lambda _rt: ("filesystem", "bob"))
    assert files.write("/notes.md", "hello world\nline two").error is None
    assert (await files.awrite("/dir/sub/a.py", "print('x')\n" * 3)).error is None
    assert files.write("/dir/empty.txt", "").error is None
    assert files.edit("/notes.md", "line two", "line 2").occurrences == 1
    read = files.read("/notes.md")
    assert read.file_data is not None
    assert read.file_data["content"] == "hello world\nline 2"
    assert _files(files, "/") == ["/dir/", "/notes.md"]
    assert _files(files, "/dir/") == ["/dir/empty.txt", "/dir/sub/"]
    assert [m["path"] for m in files.grep("line").matches] == ["/notes.md"]
    assert [m["path"] for m in files.glob("**/*.py").matches] == ["/dir/sub/a.py"]
    for i in range(120):  # more than one page of the backend's search
        files.write(f"/many/f{i:03d}.txt", f"file {i}")
    assert len(_files(files, "/many/")) == 120
    assert files.delete("/dir/empty.txt").error is None
    assert _files(files, "/dir/") == ["/dir/sub/"]
    data = bytes(range(256))
    assert files.upload_files([("/bin.dat", data)])[0].error is None
    assert files.download_files(["/bin.dat"])[0].content == data
    assert _files(other, "/") == []  # bob sees nothing of alice's


def _config(user: str) -> dict[str, Any]:
    return {"configurable": {"langgraph_user_id": user}}


async def test_langmem_tools_create_update_search_delete(store):
    namespace = ("memories", "{langgraph_user_id}")
    manage = create_manage_memory_tool(namespace, store=store)
    search = create_search_memory_tool(
        namespace, store=store, response_format="content_and_artifact"
    )
    made = manage.invoke({"content": "Prefers dark mode"}, _config("alice"))
    memory_id = made.split()[-1]
    await manage.ainvoke({"content": "Has a cat named Tom"}, _config("alice"))
    manage.invoke(
        {"action": "update", "id": memory_id, "content": "Prefers light mode now"}, _config("alice")
    )
    call = {"type": "tool_call", "id": "1", "name": "search_memory", "args": {"query": "mode"}}
    found = search.invoke(call, _config("alice")).artifact
    assert [i.value["content"] for i in found] == ["Prefers light mode now", "Has a cat named Tom"]
    assert search.invoke({**call, "id": "2"}, _config("bob")).artifact == []
    await manage.ainvoke({"action": "delete", "id": memory_id}, _config("alice"))
    found = (await search.ainvoke({**call, "id": "3"}, _config("alice"))).artifact
    assert [i.value["content"] for i in found] == ["Has a cat named Tom"]


def test_langmem_update_of_a_fact_keeps_its_history_and_search_shows_the_current_text(tmp_path):
    store = LongTermMemoryStore(
        sqlite_backend(tmp_path / "facts.sqlite"), embeddings=KeywordEmbeddings(dims=DIMS)
    )
    try:
        fact = store.remember("alice", "I live in Paris").fact
        assert fact is not None
        store.update_fact("alice", fact.id, "I live in Berlin")
        manage = create_manage_memory_tool(("memories", "{langgraph_user_id}"), store=store)
        search = create_search_memory_tool(
            ("memories", "{langgraph_user_id}"), store=store, response_format="content_and_artifact"
        )
        manage.invoke(
            {"action": "update", "id": fact.id, "content": "I live in Rome"}, _config("alice")
        )
        store.update_fact("alice", fact.id, "I live in Madrid")
        call = {"type": "tool_call", "id": "1", "name": "search_memory", "args": {"query": "live"}}
        seen = [i.value["content"] for i in search.invoke(call, _config("alice")).artifact]
        assert seen == ["I live in Madrid"]  # the agent sees what is true now
        assert [v.content for v in store.history("alice", fact.id)] == [
            "I live in Paris",
            "I live in Berlin",  # the text LangMem's update replaced: kept as a version
            "I live in Rome",
            "I live in Madrid",
        ]
    finally:
        store.close()


def test_a_client_put_is_not_guarded_and_the_readme_wrapper_guards_langmem():
    """README and SECURITY.md say the secret guard covers the fact API, the tools and the
    middleware, not a client's BaseStore put; and show how to guard LangMem's manage tool."""
    import asyncio
    import textwrap

    from tests.unit_tests.test_readme import python_block

    store = LongTermMemoryStore(InMemoryVectorStore(KeywordEmbeddings(dims=DIMS)))
    card = "Her card number is 4111 1111 1111 1111"
    assert store.remember("alice", card).action == "rejected"
    raw = create_manage_memory_tool(("memories", "{langgraph_user_id}"), store=store)
    raw.invoke({"content": card}, _config("alice"))  # a put: stored as given
    assert [f.content for f in store.list_all("alice")] == [card]

    scope: dict[str, Any] = {"store": store}
    code = textwrap.dedent(python_block("Real clients: LangMem's tools and deepagents' files"))
    exec(compile(code, "README LangMem guard", "exec"), scope)
    manage = scope["manage_memory"]
    said = manage.invoke({"content": card}, _config("bob"))
    assert said.startswith("Not stored: it contains what looks like a payment card number")
    said = asyncio.run(manage.ainvoke({"content": "my password is hunter22"}, _config("bob")))
    assert said.startswith("Not stored")
    assert manage.invoke({"content": "Has a cat named Tom"}, _config("bob")).startswith("created")
    assert [f.content for f in store.list_all("bob")] == ["Has a cat named Tom"]
