"""forget_user on Postgres: the store on the Postgres engine, LangGraph's Postgres checkpointer.

The scenario of ``tests/unit_tests/test_erase.py`` (two users, two threads each through
``create_agent`` with both middlewares, facts with versions) with real checkpoint tables:
``PostgresSaver`` for the sync path and ``AsyncPostgresSaver`` for the async one. The
checkpoint tables are shared by the session, so thread ids carry a per-test tag.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.agents._registry import thread_namespace
from langchain_ltm.agents.erase import (
    ErasureReport,
    aexport_user_data,
    aforget_user,
    export_user_data,
    forget_user,
)
from tests.fakes import KeywordEmbeddings
from tests.unit_tests.test_erase import (
    acheckpointed_threads,
    add_facts,
    apopulate,
    assert_scenario,
    build_agent,
    checkpointed_threads,
    everything,
    expected_report,
    populate,
    run,
    threads_of,
)


@pytest.fixture
def store(make_backend: Any) -> LongTermMemoryStore:
    return LongTermMemoryStore(make_backend(dims=64), embeddings=KeywordEmbeddings(dims=64))


@pytest.fixture
def saver(pg_url: str) -> Iterator[PostgresSaver]:
    with PostgresSaver.from_conn_string(pg_url) as saver:
        saver.setup()
        yield saver


@pytest.fixture
def tag() -> str:
    return f"-{uuid.uuid4().hex[:8]}"


def ours(threads: set[str], tag: str) -> set[str]:
    return {t for t in threads if tag in t}


def test_forget_user_on_postgres_store_and_postgres_checkpointer(store, saver, tag):
    agent = build_agent(store, saver)
    populate(store, agent, tag)
    before = everything(store)
    assert ours(checkpointed_threads(saver), tag) == {
        *threads_of("alice", tag),
        *threads_of("bob", tag),
    }
    exported = export_user_data(store, "alice")
    assert len(exported["facts"]) == 2 and len(exported["session_turns"]) == 4

    assert forget_user(store, "alice", checkpointer=saver) == expected_report("alice", tag)

    assert_scenario(before, everything(store))
    assert ours(checkpointed_threads(saver), tag) == set(threads_of("bob", tag))
    for thread in threads_of("alice", tag):
        assert agent.get_state(run("alice", thread)).values == {}
    for thread in threads_of("bob", tag):
        assert len(agent.get_state(run("bob", thread)).values["messages"]) == 4
    assert forget_user(store, "alice", checkpointer=saver) == ErasureReport()


def test_no_row_of_the_erased_threads_is_left_in_the_checkpoint_tables(store, saver, tag, pg_conn):
    agent = build_agent(store, saver)
    populate(store, agent, tag)
    forget_user(store, "alice", checkpointer=saver)
    for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
        rows = pg_conn.execute(
            f"SELECT thread_id, count(*) FROM {table} WHERE thread_id LIKE %s GROUP BY 1",
            (f"%{tag}%",),
        ).fetchall()
        assert {r[0] for r in rows} <= set(threads_of("bob", tag)), table
    rows = pg_conn.execute(
        "SELECT count(*) FROM checkpoints WHERE thread_id = ANY(%s)",
        (list(threads_of("bob", tag)),),
    ).fetchone()
    assert rows is not None and rows[0] > 0


async def test_aforget_user_with_async_postgres_saver(store, pg_url, tag):
    async with AsyncPostgresSaver.from_conn_string(pg_url) as saver:
        await saver.setup()
        agent = build_agent(store, saver)
        await apopulate(store, agent, tag)
        before = everything(store)
        assert await aexport_user_data(store, "alice") == export_user_data(store, "alice")

        report = await aforget_user(store, "alice", checkpointer=saver)

        assert report == expected_report("alice", tag)
        assert_scenario(before, everything(store))
        assert ours(await acheckpointed_threads(saver), tag) == set(threads_of("bob", tag))
        for thread in threads_of("alice", tag):
            assert (await agent.aget_state(run("alice", thread))).values == {}
        assert await aforget_user(store, "alice", checkpointer=saver) == ErasureReport()


async def test_aforget_user_with_the_sync_postgres_saver(store, saver, tag):
    agent = build_agent(store, saver)
    populate(store, agent, tag)  # PostgresSaver has no async methods: the graph runs sync
    report = await aforget_user(store, "alice", checkpointer=saver)  # deletes in a thread
    assert report == expected_report("alice", tag)
    assert ours(checkpointed_threads(saver), tag) == set(threads_of("bob", tag))


def test_ltm_forget_user_with_a_postgres_checkpointer(
    saver, pg_url, tmp_path, monkeypatch, tag, capsys
):
    from langchain_ltm import cli
    from langchain_ltm.cli import session as cli_session
    from langchain_ltm.defaults import open_store

    monkeypatch.setenv("LTM_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("LTM_STORE", raising=False)
    folder = str(tmp_path / "q")
    store, _ = open_store(folder, embeddings=cli_session.default_embeddings())
    with store:
        populate(store, build_agent(store, saver), tag)
        before = everything(store)

    args = ["forget-user", "--user", "alice", "--store", folder, "--checkpointer", pg_url]
    assert cli.main(args) == 2  # no --yes
    assert "--yes" in capsys.readouterr().err
    assert ours(checkpointed_threads(saver), tag) == {
        *threads_of("alice", tag),
        *threads_of("bob", tag),
    }
    assert cli.main([*args, "--yes", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["threads"] == 2 and report["thread_ids"] == list(threads_of("alice", tag))
    assert report["facts"] == 2 and report["versions"] == 2 and report["session_turns"] == 4
    assert ours(checkpointed_threads(saver), tag) == set(threads_of("bob", tag))
    store, _ = open_store(folder, embeddings=cli_session.default_embeddings())
    with store:
        assert_scenario(before, everything(store))


def test_ltm_forget_user_refuses_a_database_without_checkpoint_tables(
    saver, pg_url, pg_conn, tmp_path, monkeypatch, capsys
):
    from langchain_ltm import cli
    from langchain_ltm.cli import session as cli_session
    from langchain_ltm.defaults import open_store

    database = f"empty_{uuid.uuid4().hex[:8]}"
    pg_conn.execute(f"CREATE DATABASE {database}")
    parts = urlsplit(pg_url)
    empty = urlunsplit(parts._replace(path=f"/{database}"))
    monkeypatch.setenv("LTM_HOME", str(tmp_path / "home"))
    folder = str(tmp_path / "q")
    store, _ = open_store(folder, embeddings=cli_session.default_embeddings())
    with store:
        add_facts(store, "alice")
        store.put(thread_namespace("alice"), "t1", {"thread_id": "t1"}, index=False)
        before = everything(store)
    try:
        args = ["forget-user", "--user", "alice", "--store", folder, "--yes"]
        assert cli.main([*args, "--checkpointer", empty]) == 2
        assert "no LangGraph checkpoint tables" in capsys.readouterr().err  # UndefinedTable
        store, _ = open_store(folder, embeddings=cli_session.default_embeddings())
        with store:
            assert everything(store) == before
    finally:
        pg_conn.execute(f"DROP DATABASE {database}")
