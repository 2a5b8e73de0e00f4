"""One SQLite file for a personal agent: LangGraph's SqliteSaver checkpoints and our memories.

The saver and the store each keep their own tables in the same file and their own
connections; both are in WAL mode, so the agent's checkpoint writes and the store's writes
take turns on the file's write lock for a few milliseconds each. Reopening the file brings
back the threads and the facts; erasing a user removes both.
"""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import pytest
from langchain.agents import create_agent
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_ltm import (
    LongTermMemoryStore,
    MemoryMiddleware,
    aforget_user,
    create_memory_tools,
    forget_user,
)
from tests.fakes import KeywordEmbeddings, ScriptedToolModel


def run(user: str, thread: str) -> dict[str, Any]:
    return {"configurable": {"user_id": user, "thread_id": thread}}


def say(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def open_agent(path: str) -> tuple[Any, LongTermMemoryStore, SqliteSaver]:
    store = LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(64))
    saver = SqliteSaver(sqlite3.connect(path, check_same_thread=False))
    agent = create_agent(
        ScriptedToolModel(),
        tools=create_memory_tools(store),
        middleware=[MemoryMiddleware(store, mode="tools")],  # records the user's threads
        store=store,
        checkpointer=saver,
    )
    return agent, store, saver


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "agent.sqlite")


def test_checkpoints_and_memories_share_one_file(path):
    agent, store, saver = open_agent(path)
    agent.invoke(
        say("remember: Prefers answers in Spanish; Works on the payments team"), run("alice", "t1")
    )
    agent.invoke(say("remember: Likes green tea"), run("bob", "t2"))
    with sqlite3.connect(path) as conn:
        tables = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert {"checkpoints", "writes", "ltm_items", "ltm_items_vectors"} <= tables
    store.close()
    saver.conn.close()

    # a new process, in effect: everything comes back from the file
    agent, store, saver = open_agent(path)
    state = agent.get_state(run("alice", "t1"))
    assert "Prefers answers in Spanish" in str(state.values["messages"][0].content)
    assert sorted(f.content for f in store.list_all("alice")) == [
        "Prefers answers in Spanish",
        "Works on the payments team",
    ]
    answer = agent.invoke(say("recall: which language?"), run("alice", "t1"))
    assert "Prefers answers in Spanish" in str(answer["messages"][-1].content)

    report = forget_user(store, "alice", checkpointer=saver)
    assert (report.facts, report.threads, report.thread_ids) == (2, 1, ("t1",))
    assert store.list_all("alice") == []
    assert saver.get_tuple(run("alice", "t1")) is None
    assert [f.content for f in store.list_all("bob")] == ["Likes green tea"]
    assert saver.get_tuple(run("bob", "t2")) is not None
    store.close()
    saver.conn.close()


def tables(path: str) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}


def test_a_saver_on_the_wrong_file_is_refused_before_anything_is_deleted(path, tmp_path):
    """SqliteSaver.delete_thread creates its tables first: on the wrong file it raised nothing.

    The erase then deleted the thread records, the only index of the user's threads, and the
    real checkpoints could never be found again.
    """
    agent, store, saver = open_agent(path)
    agent.invoke(say("remember: Likes green tea"), run("alice", "t1"))
    wrong = str(tmp_path / "other-app.db")
    with sqlite3.connect(wrong) as conn:
        conn.execute("CREATE TABLE other (x)")
    before = sorted(item.key for ns in store.list_namespaces() for item in store.search(ns))

    with SqliteSaver.from_conn_string(wrong) as other:
        with pytest.raises(ValueError, match="no LangGraph checkpoint tables"):
            forget_user(store, "alice", checkpointer=other)
        with pytest.raises(ValueError, match="no LangGraph checkpoint tables"):
            asyncio.run(aforget_user(store, "alice", checkpointer=other))
    assert tables(wrong) == {"other"}  # no table created in it
    after = sorted(item.key for ns in store.list_namespaces() for item in store.search(ns))
    assert after == before  # facts, turns and the thread record all kept
    assert saver.get_tuple(run("alice", "t1")) is not None

    report = forget_user(store, "alice", checkpointer=saver)  # the right one finishes the job
    assert (report.facts, report.thread_ids) == (1, ("t1",))
    assert saver.get_tuple(run("alice", "t1")) is None
    with SqliteSaver.from_conn_string(wrong) as other:  # no thread left: nothing to refuse
        assert forget_user(store, "alice", checkpointer=other).thread_ids == ()
    store.close()
    saver.conn.close()


async def test_an_async_saver_on_the_wrong_file_is_refused_with_the_same_message(path, tmp_path):
    """``aforget_user`` with an ``AsyncSqliteSaver`` on the wrong file raised a raw
    ``sqlite3.OperationalError`` (no such table) where the sync twin says what is wrong."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    agent, store, saver = open_agent(path)
    agent.invoke(say("remember: Likes green tea"), run("alice", "t1"))
    wrong = str(tmp_path / "typo.db")
    async with AsyncSqliteSaver.from_conn_string(wrong) as other:
        with pytest.raises(ValueError, match="no LangGraph checkpoint tables"):
            await aforget_user(store, "alice", checkpointer=other)
    assert [f.content for f in store.list_all("alice")] == ["Likes green tea"]  # kept
    async with AsyncSqliteSaver.from_conn_string(path) as right:  # the agent's file: erased
        report = await aforget_user(store, "alice", checkpointer=right)
    assert (report.facts, report.thread_ids) == (1, ("t1",))
    assert saver.get_tuple(run("alice", "t1")) is None
    store.close()
    saver.conn.close()
