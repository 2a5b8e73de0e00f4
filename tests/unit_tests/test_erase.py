"""forget_user / export_user_data through a real create_agent graph with a checkpointer.

Two users each chat on two threads of an agent with ``MemoryMiddleware`` (thread registry) and
``SessionMemoryMiddleware(retrieval="relevance")`` (session index), and have facts with
earlier versions. Erasing one user must leave nothing of them in any namespace of the store
nor in the checkpointer, everything of the other, and be safe to run again.

The scenario helpers are shared with ``tests/integration_tests/test_erase_postgres.py``.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import PutOp

from langchain_ltm import InvalidUserIdError, LongTermMemoryStore, _clock
from langchain_ltm._labels import encode_label
from langchain_ltm.agents._registry import SESSIONS_ROOT, THREADS_ROOT, thread_namespace
from langchain_ltm.agents.erase import (
    ErasureReport,
    aexport_user_data,
    aforget_user,
    export_user_data,
    forget_user,
)
from langchain_ltm.agents.middleware import MemoryMiddleware
from langchain_ltm.agents.session import SessionMemoryMiddleware
from langchain_ltm.backends.base import SearchRequest
from tests.fakes import KeywordEmbeddings, ScriptedToolModel

USERS = ("alice", "bob")
TURNS = ("I love hiking in the alps", "what should I pack for the alps?")


def threads_of(user: str, tag: str = "") -> tuple[str, str]:
    """The user's two thread ids (``tag`` keeps tests sharing a checkpointer apart)."""
    return (f"{user}{tag}-1", f"{user}{tag}-2")


def run(user: str, thread: str) -> dict[str, Any]:
    return {"configurable": {"user_id": user, "thread_id": thread}}


def say(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def build_agent(store: LongTermMemoryStore, saver: Any) -> Any:
    return create_agent(
        ScriptedToolModel(),
        middleware=[
            MemoryMiddleware(store, mode="recall", min_score=0.1),
            SessionMemoryMiddleware(store, retrieval="relevance"),
        ],
        store=store,
        checkpointer=saver,
    )


def add_facts(store: LongTermMemoryStore, user: str) -> None:
    """Two facts, the first with two earlier versions."""
    first, _ = (r.fact for r in store.remember(user, ["Lives in Paris", "Works on payments"]))
    assert first is not None
    store.update_fact(user, first.id, "Lives in Berlin")
    store.update_fact(user, first.id, "Lives in Madrid")


async def aadd_facts(store: LongTermMemoryStore, user: str) -> None:
    first, _ = (
        r.fact for r in await store.aremember(user, ["Lives in Paris", "Works on payments"])
    )
    assert first is not None
    await store.aupdate_fact(user, first.id, "Lives in Berlin")
    await store.aupdate_fact(user, first.id, "Lives in Madrid")


def populate(store: LongTermMemoryStore, agent: Any, tag: str = "") -> None:
    for user in USERS:
        add_facts(store, user)
        for thread in threads_of(user, tag):
            for text in TURNS:
                agent.invoke(say(f"{text} ({user})"), run(user, thread))


async def apopulate(store: LongTermMemoryStore, agent: Any, tag: str = "") -> None:
    for user in USERS:
        await aadd_facts(store, user)
        for thread in threads_of(user, tag):
            for text in TURNS:
                await agent.ainvoke(say(f"{text} ({user})"), run(user, thread))


def expected_report(user: str, tag: str = "") -> ErasureReport:
    return ErasureReport(
        facts=2, versions=2, session_turns=4, threads=2, thread_ids=threads_of(user, tag)
    )


def everything(store: LongTermMemoryStore) -> dict[tuple[tuple[str, ...], str], Any]:
    """Every item of every namespace of the store."""
    out = {}
    for namespace in store.list_namespaces(limit=10_000):
        for item in store.search(namespace, limit=10_000):
            out[(tuple(item.namespace), item.key)] = item.value
    return out


def of_user(items: dict[tuple[tuple[str, ...], str], Any], user: str) -> dict[Any, Any]:
    label = encode_label(user)
    return {k: v for k, v in items.items() if label in k[0]}


def checkpointed_threads(saver: Any) -> set[str]:
    return {t.config["configurable"]["thread_id"] for t in saver.list(None)}


async def acheckpointed_threads(saver: Any) -> set[str]:
    return {t.config["configurable"]["thread_id"] async for t in saver.alist(None)}


def assert_scenario(before: dict[Any, Any], after: dict[Any, Any]) -> None:
    """The store lost alice's items, every one of them, and nothing else."""
    alice = of_user(before, "alice")
    roots = {namespace[0] for namespace, _ in alice}
    assert roots == {"memories", THREADS_ROOT, SESSIONS_ROOT}  # the test saw each kind
    assert of_user(after, "alice") == {}
    assert after == {k: v for k, v in before.items() if k not in alice}
    assert "alice" not in json.dumps([[*k[0], k[1]] for k in after])
    assert "alice" not in json.dumps(list(after.values()))
    assert of_user(after, "bob") == of_user(before, "bob") != {}


@pytest.fixture
def store() -> LongTermMemoryStore:
    return LongTermMemoryStore(InMemoryVectorStore(KeywordEmbeddings(dims=64)))


@pytest.fixture
def saver() -> InMemorySaver:
    return InMemorySaver()


@pytest.fixture
def agent(store: LongTermMemoryStore, saver: InMemorySaver) -> Any:
    agent = build_agent(store, saver)
    populate(store, agent)
    return agent


def test_forget_user_erases_store_and_checkpoints_and_leaves_the_other_user(store, saver, agent):
    before = everything(store)
    assert checkpointed_threads(saver) == {*threads_of("alice"), *threads_of("bob")}

    report = forget_user(store, "alice", checkpointer=saver)

    assert report == expected_report("alice")
    assert_scenario(before, everything(store))
    assert store.list_all("alice") == []
    assert checkpointed_threads(saver) == set(threads_of("bob"))
    for thread in threads_of("alice"):
        assert agent.get_state(run("alice", thread)).values == {}
        # no pending write or channel blob of hers is left in the saver either
        assert not [k for k in saver.writes if k[0] == thread]
        assert not [k for k in saver.blobs if k[0] == thread]
    for thread in threads_of("bob"):
        assert len(agent.get_state(run("bob", thread)).values["messages"]) == 4
        assert [k for k in saver.blobs if k[0] == thread]
    assert [f.content for f in store.list_all("bob")] == ["Lives in Madrid", "Works on payments"]


def test_a_second_run_reports_zeros_and_changes_nothing(store, saver, agent):
    forget_user(store, "alice", checkpointer=saver)
    after = everything(store)
    assert forget_user(store, "alice", checkpointer=saver) == ErasureReport()
    assert forget_user(store, "nobody", checkpointer=saver).to_dict() == {
        "facts": 0,
        "versions": 0,
        "session_turns": 0,
        "threads": 0,
        "thread_ids": [],
    }
    assert everything(store) == after


def test_the_user_can_come_back_after_being_erased(store, saver, agent):
    forget_user(store, "alice", checkpointer=saver)
    out = agent.invoke(say("hello again"), run("alice", "alice-3"))
    assert [m.type for m in out["messages"]] == ["human", "ai"]  # a fresh thread, no context
    report = forget_user(store, "alice", checkpointer=saver)
    assert report == ErasureReport(session_turns=1, threads=1, thread_ids=("alice-3",))


def test_a_crash_while_deleting_checkpoints_deletes_nothing_else_and_a_rerun_finishes(
    store, saver, agent
):
    before = everything(store)

    class Failing(InMemorySaver):
        def delete_thread(self, thread_id: str) -> None:
            if thread_id == threads_of("alice")[1]:
                raise ConnectionError("checkpoint database went away")
            saver.delete_thread(thread_id)

    with pytest.raises(ConnectionError):
        forget_user(store, "alice", checkpointer=Failing())
    assert everything(store) == before  # the records naming her threads are all still there
    assert checkpointed_threads(saver) == {threads_of("alice")[1], *threads_of("bob")}

    assert forget_user(store, "alice", checkpointer=saver) == expected_report("alice")
    assert_scenario(before, everything(store))
    assert checkpointed_threads(saver) == set(threads_of("bob"))


def test_a_crash_before_the_registry_is_deleted_is_finished_by_a_rerun(
    store, saver, agent, monkeypatch
):
    before = everything(store)
    batch = store.batch

    def failing_batch(ops: Any) -> Any:
        ops = list(ops)
        if any(isinstance(op, PutOp) and op.namespace[0] == THREADS_ROOT for op in ops):
            raise ConnectionError("store went away")
        return batch(ops)

    monkeypatch.setattr(store, "batch", failing_batch)
    with pytest.raises(ConnectionError):
        forget_user(store, "alice", checkpointer=saver)
    monkeypatch.undo()
    left = of_user(everything(store), "alice")
    assert {namespace[0] for namespace, _ in left} == {THREADS_ROOT}  # only the registry
    assert checkpointed_threads(saver) == set(threads_of("bob"))

    # the re-run still knows her threads (deleting a deleted thread is a no-op) and finishes
    report = forget_user(store, "alice", checkpointer=saver)
    assert report == ErasureReport(threads=2, thread_ids=threads_of("alice"))
    assert_scenario(before, everything(store))


def test_without_a_checkpointer_the_threads_are_reported_and_kept(store, saver, agent):
    report = forget_user(store, "alice")
    assert report == ErasureReport(
        facts=2, versions=2, session_turns=4, threads=0, thread_ids=threads_of("alice")
    )
    assert of_user(everything(store), "alice") == {}
    assert checkpointed_threads(saver) >= set(threads_of("alice"))  # the caller's to delete


@pytest.mark.parametrize("bad", ["", "   ", None, 42, "x" * 513])
def test_a_bad_user_id_raises_before_anything_is_deleted(store, saver, agent, bad):
    before, threads = everything(store), checkpointed_threads(saver)
    with pytest.raises(InvalidUserIdError):
        forget_user(store, bad, checkpointer=saver)
    with pytest.raises(InvalidUserIdError):
        asyncio.run(aforget_user(store, bad, checkpointer=saver))
    with pytest.raises(InvalidUserIdError):
        export_user_data(store, bad)
    assert everything(store) == before
    assert checkpointed_threads(saver) == threads


@pytest.mark.parametrize("use_async", [False, True])
def test_a_langgraph_store_under_session_memory_alone_is_erased_too(use_async):
    """SessionMemoryMiddleware takes any BaseStore; forget_user and export_user_data refused
    such a store with a TypeError, so the user's indexed turns and threads could not be
    erased or returned."""
    from langgraph.store.memory import InMemoryStore

    emb = KeywordEmbeddings()
    store = InMemoryStore(index={"dims": emb.dims, "embed": emb, "fields": ["text"]})
    saver = InMemorySaver()
    agent = create_agent(
        ScriptedToolModel(),
        middleware=[SessionMemoryMiddleware(store, retrieval="relevance")],
        store=store,
        checkpointer=saver,
    )
    for user in USERS:
        for thread in threads_of(user):
            agent.invoke(say(f"{user} loves hiking in the alps"), run(user, thread))
    sessions = [(SESSIONS_ROOT, encode_label(u)) for u in USERS]
    assert all(store.search(ns, limit=100) for ns in sessions)
    export = (
        (lambda: asyncio.run(aexport_user_data(store, "alice")))
        if use_async
        else (lambda: export_user_data(store, "alice"))
    )
    data = export()
    assert (data["facts"], data["other_items"]) == ([], [])
    assert [t["thread_id"] for t in data["threads"]] == list(threads_of("alice"))
    assert len(data["session_turns"]) == 2
    erase = (
        (lambda: asyncio.run(aforget_user(store, "alice", checkpointer=saver)))
        if use_async
        else (lambda: forget_user(store, "alice", checkpointer=saver))
    )
    report = erase()
    assert (report.facts, report.thread_ids) == (0, threads_of("alice"))
    assert report.session_turns == 2 and report.threads == 2
    assert store.search(sessions[0], limit=100) == []
    assert store.search(thread_namespace("alice"), limit=100) == []
    assert all(saver.get_tuple(run("alice", t)) is None for t in threads_of("alice"))
    assert len(store.search(sessions[1], limit=100)) == 2  # bob is untouched
    assert all(saver.get_tuple(run("bob", t)) is not None for t in threads_of("bob"))
    assert erase().session_turns == 0


def test_something_that_is_not_a_checkpointer_is_refused_first(store, saver, agent):
    before = everything(store)
    with pytest.raises(TypeError, match="BaseCheckpointSaver"):
        forget_user(store, "alice", checkpointer=object())
    assert everything(store) == before


def test_user_ids_that_look_alike_are_different_users(store, saver):
    agent = build_agent(store, saver)
    for user in ("a.b", "a%2Eb", "a.b@x"):
        store.remember(user, f"Fact of {user}")
        agent.invoke(say("hello"), run(user, f"t-{user}"))
    before = everything(store)
    assert forget_user(store, "a.b", checkpointer=saver) == ErasureReport(
        facts=1, session_turns=1, threads=1, thread_ids=("t-a.b",)
    )
    after = everything(store)
    assert after == {k: v for k, v in before.items() if encode_label("a.b") not in k[0]}
    assert checkpointed_threads(saver) == {"t-a%2Eb", "t-a.b@x"}


def test_a_user_whose_namespace_holds_another_configurations_users_erases_only_their_own(
    store,
):
    tenant = store.with_options(namespace=("memories", "acme"))  # tools of one tenant
    tenant.remember("bob", "Bob is allergic to peanuts")
    store.remember("acme", "Acme likes tea")  # a user called acme, default namespace
    report = forget_user(store, "acme")
    assert (report.facts, report.versions) == (1, 0)
    assert store.list_all("acme") == []
    assert [f.content for f in tenant.list_all("bob")] == ["Bob is allergic to peanuts"]
    assert store.clear_user("acme") == 0  # nothing of acme's left; bob's still there
    assert len(tenant.list_all("bob")) == 1


def test_an_erase_through_another_store_object_still_finds_a_thread_reused_after_it(
    tmp_path, saver
):
    path = tmp_path / "memories.db"
    serving = LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(dims=64))
    erasing = LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(dims=64))  # another worker
    agent = build_agent(serving, saver)
    agent.invoke(say("hello"), run("alice", "t1"))
    assert forget_user(erasing, "alice", checkpointer=saver).thread_ids == ("t1",)
    agent.invoke(say("my new secret is in this thread"), run("alice", "t1"))  # she comes back
    assert forget_user(erasing, "alice", checkpointer=saver).thread_ids == ("t1",)
    assert checkpointed_threads(saver) == set()


def test_a_thread_two_users_shared_is_deleted_for_both(store, saver):
    agent = build_agent(store, saver)
    agent.invoke(say("hello"), run("alice", "shared"))
    agent.invoke(say("hello"), run("bob", "shared"))  # a misuse: one thread, two users
    report = forget_user(store, "alice", checkpointer=saver)
    assert report.thread_ids == ("shared",)
    assert checkpointed_threads(saver) == set()
    assert of_user(everything(store), "bob") != {}  # bob's records stay


def test_export_user_data_returns_facts_with_versions_turns_and_threads(store, agent):
    data = export_user_data(store, "alice")
    assert json.loads(json.dumps(data)) == data  # JSON-ready
    assert set(data) == {"user_id", "facts", "other_items", "session_turns", "threads"}
    assert data["user_id"] == "alice"
    assert data["facts"] == store.export_user("alice")
    assert [[v["content"] for v in f["history"]] for f in data["facts"]] == [
        ["Lives in Paris", "Lives in Berlin"],
        [],
    ]
    turns = [(t["thread_id"], t["turn"], t["user"]) for t in data["session_turns"]]
    assert turns == [
        (thread, n, f"{text} (alice)")
        for thread in threads_of("alice")
        for n, text in enumerate(TURNS)
    ]
    assert [t["thread_id"] for t in data["threads"]] == list(threads_of("alice"))
    assert {"first_seen", "last_seen"} <= set(data["threads"][0])
    assert "bob" not in json.dumps(data)
    assert export_user_data(store, "nobody") == {
        "user_id": "nobody",
        "facts": [],
        "other_items": [],
        "session_turns": [],
        "threads": [],
    }


def test_export_user_data_holds_every_item_forget_user_deletes(store):
    """Other clients' items in the user's namespace (a LangMem memory with a structured
    content, a deepagents file, an item without content) were deleted by forget_user but
    left out of export_user_data: a data-access request missed them."""
    ns = store.user_namespace("alice")
    store.remember("alice", "Lives in Paris")
    store.put(ns, "langmem-1", {"kind": "Memory", "content": {"content": "User likes tea"}})
    store.put(ns, "/notes.md", {"content": ["line one"], "created_at": "2026-01-01"})
    store.put(ns, "settings", {"theme": "dark"}, index=False)
    store.put(ns, "text-memory", {"content": "Plays the cello"})  # a text: a fact
    store.put((*ns, "child"), "other", {"theme": "not alice's"})  # another user's, below
    data = export_user_data(store, "alice")
    assert json.loads(json.dumps(data)) == data
    others = {item["key"]: item["value"] for item in data["other_items"]}
    assert others == {
        "/notes.md": {"content": ["line one"], "created_at": "2026-01-01"},
        "langmem-1": {"kind": "Memory", "content": {"content": "User likes tea"}},
        "settings": {"theme": "dark"},
    }
    assert all(item["namespace"] == list(ns) for item in data["other_items"])
    assert sorted(f["content"] for f in data["facts"]) == ["Lives in Paris", "Plays the cello"]
    exported = {f["id"] for f in data["facts"]} | set(others)
    held = {item.key for item in store.search(ns, limit=100) if item.namespace == ns}
    assert exported == held  # everything forget_user deletes is in the export
    report = forget_user(store, "alice")
    assert report.facts == 2
    assert export_user_data(store, "alice")["other_items"] == []


def test_export_reads_every_page(store, monkeypatch):
    monkeypatch.setattr("langchain_ltm.agents.erase._PAGE", 3)
    agent = build_agent(store, InMemorySaver())
    for n in range(7):
        agent.invoke(say(f"message number {n}"), run("alice", f"t{n}"))
    data = export_user_data(store, "alice")
    assert [t["thread_id"] for t in data["session_turns"]] == [f"t{n}" for n in range(7)]
    assert len(data["threads"]) == 7
    assert forget_user(store, "alice").session_turns == 7
    assert of_user(everything(store), "alice") == {}


def test_threads_are_erased_after_the_stores_default_ttl_has_passed(saver, monkeypatch):
    """The thread record took the store's ``default_ttl``: once a user had been idle for
    longer, forget_user no longer found the thread and left its checkpoints (the whole
    conversation) behind. A record an earlier release wrote with that TTL, expired but
    not yet swept, is found too."""
    now = [datetime.now(timezone.utc)]
    monkeypatch.setattr(_clock, "utcnow", lambda: now[0])
    store = LongTermMemoryStore(
        InMemoryVectorStore(KeywordEmbeddings(dims=64)), ttl={"default_ttl": 60}
    )
    agent = build_agent(store, saver)
    agent.invoke(say("My test came back positive"), run("alice", "alice-1"))
    agent.invoke(say("Hello"), run("alice", "alice-old"))
    agent.invoke(say("Hello"), run("bob", "bob-1"))
    old = store.get(thread_namespace("alice"), "alice-old")
    assert old is not None
    store.put(thread_namespace("alice"), "alice-old", old.value, index=False, ttl=60)
    now[0] += timedelta(minutes=61)  # alice comes back a day later, say
    assert store.get(thread_namespace("alice"), "alice-1") is not None
    assert store.get(thread_namespace("alice"), "alice-old") is None  # expired, not swept

    report = forget_user(store, "alice", checkpointer=saver)

    assert report.thread_ids == ("alice-1", "alice-old") and report.threads == 2
    assert checkpointed_threads(saver) == {"bob-1"}
    (held,) = store.backend.search(SearchRequest((THREADS_ROOT,), None, (), None, 0))
    assert [hit.item.key for hit in held] == ["bob-1"]  # the expired record went too


# ---- async twins -------------------------------------------------------------------------


async def test_aforget_user_erases_everything_of_one_user():
    store = LongTermMemoryStore(InMemoryVectorStore(KeywordEmbeddings(dims=64)))
    saver = InMemorySaver()
    agent = build_agent(store, saver)
    await apopulate(store, agent)
    before = everything(store)
    exported = await aexport_user_data(store, "alice")
    assert exported == export_user_data(store, "alice")
    assert len(exported["session_turns"]) == 4

    report = await aforget_user(store, "alice", checkpointer=saver)

    assert report == expected_report("alice")
    assert_scenario(before, everything(store))
    assert await acheckpointed_threads(saver) == set(threads_of("bob"))
    for thread in threads_of("alice"):
        assert (await agent.aget_state(run("alice", thread))).values == {}
    for thread in threads_of("bob"):
        state = await agent.aget_state(run("bob", thread))
        assert len(state.values["messages"]) == 4
    assert await aforget_user(store, "alice", checkpointer=saver) == ErasureReport()


async def test_aforget_user_runs_a_sync_only_checkpointer_in_a_thread(store, saver, agent):
    class SyncOnly(InMemorySaver):
        async def adelete_thread(self, thread_id: str) -> None:
            raise NotImplementedError

        def delete_thread(self, thread_id: str) -> None:
            saver.delete_thread(thread_id)

    report = await aforget_user(store, "alice", checkpointer=SyncOnly())
    assert report == expected_report("alice")
    assert checkpointed_threads(saver) == set(threads_of("bob"))


# ---- which threads are a user's ----------------------------------------------------------


def test_a_run_without_a_thread_never_erases_another_users_default_thread():
    """A run without a thread id indexed its turns under the thread "default", and erasing
    that user deleted the checkpoints of whoever has a thread called "default"."""
    store = LongTermMemoryStore(InMemoryVectorStore(KeywordEmbeddings(dims=64)))
    saver = InMemorySaver()
    session = SessionMemoryMiddleware(store, retrieval="relevance")
    stateless = create_agent(ScriptedToolModel(), middleware=[session], store=store)
    stateful = create_agent(
        ScriptedToolModel(), middleware=[session], store=store, checkpointer=saver
    )
    stateless.invoke(say("I live in Oslo"), {"configurable": {"user_id": "alice"}})
    stateful.invoke(say("bob's private note"), run("bob", "default"))
    (turn,) = store.search(("ltm_sessions", encode_label("alice")))
    assert turn.value["thread_id"] is None  # no thread: none to erase
    # a turn stored by an older release, which wrote "default" for a run without a thread
    store.put(turn.namespace, "default:9", {**turn.value, "thread_id": "default", "turn": 9})
    report = forget_user(store, "alice", checkpointer=saver)
    assert report.thread_ids == ()
    assert saver.get_tuple(run("bob", "default")) is not None
    assert store.search(("ltm_sessions", encode_label("alice"))) == []
    assert forget_user(store, "bob", checkpointer=saver).thread_ids == ("default",)
    assert saver.get_tuple(run("bob", "default")) is None


@pytest.mark.parametrize("kind", ["tools", "hook"])
def test_agents_built_on_the_tools_or_the_hook_have_their_threads_erased(kind):
    """The README's agents with memory tools only, or ``create_react_agent`` with the
    pre-model hook, recorded no thread: ``forget_user`` left their checkpoints behind."""
    from langgraph.prebuilt import create_react_agent

    from langchain_ltm import create_memory_tools, memory_pre_model_hook

    store = LongTermMemoryStore(InMemoryVectorStore(KeywordEmbeddings(dims=64)))
    saver = InMemorySaver()
    tools = create_memory_tools(store)
    if kind == "tools":
        agent = create_agent(ScriptedToolModel(), tools=tools, store=store, checkpointer=saver)
    else:
        hook = memory_pre_model_hook(store)
        agent = create_react_agent(
            ScriptedToolModel(), [], pre_model_hook=hook, store=store, checkpointer=saver
        )
    text = "remember: My diagnosis is diabetes" if kind == "tools" else "hello"
    for user in USERS:
        agent.invoke(say(text), run(user, f"{user}-t1"))
    report = forget_user(store, "alice", checkpointer=saver)
    assert report.thread_ids == ("alice-t1",)
    assert saver.get_tuple(run("alice", "alice-t1")) is None
    assert saver.get_tuple(run("bob", "bob-t1")) is not None
    if kind == "tools":
        assert store.list_all("alice") == [] and len(store.list_all("bob")) == 1


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", ["middleware", "tools"])
def test_last_seen_moves_when_the_user_comes_back_and_is_written_at_most_once_a_minute(
    saver, monkeypatch, mode, kind
):
    """``last_seen`` of a thread record never changed after its first write.

    It moves now when the user comes back, rewritten only once it is a minute old, so a
    tool loop (two memory tool calls in one turn) or a quick reply costs no extra write.
    """
    from langchain_ltm import create_memory_tools

    now = [datetime(2026, 12, 7, 9, 0, tzinfo=timezone.utc)]
    monkeypatch.setattr(_clock, "utcnow", lambda: now[0])
    store = LongTermMemoryStore(InMemoryVectorStore(KeywordEmbeddings(dims=64)))
    writes: list[str] = []
    put, aput = store.put, store.aput

    def counting(namespace, key, *args, **kwargs):
        if namespace[0] == THREADS_ROOT:
            writes.append(key)
        return put(namespace, key, *args, **kwargs)

    async def acounting(namespace, key, *args, **kwargs):
        if namespace[0] == THREADS_ROOT:
            writes.append(key)
        return await aput(namespace, key, *args, **kwargs)

    monkeypatch.setattr(store, "put", counting)  # before the tools take their view of it
    monkeypatch.setattr(store, "aput", acounting)
    if kind == "tools":
        tools = create_memory_tools(store)
        agent = create_agent(ScriptedToolModel(), tools=tools, store=store, checkpointer=saver)
    else:
        agent = build_agent(store, saver)

    def turn(text: str) -> None:
        said = say(f"remember: {text}; Has a cat" if kind == "tools" else text)
        if mode == "async":
            asyncio.run(agent.ainvoke(said, run("alice", "t1")))
        else:
            agent.invoke(said, run("alice", "t1"))

    def record() -> tuple[str, str]:
        (thread,) = export_user_data(store, "alice")["threads"]
        return thread["first_seen"], thread["last_seen"]

    turn("Likes tea")
    assert record() == ("2026-12-07T09:00:00.000000Z", "2026-12-07T09:00:00.000000Z")
    assert writes == ["t1"]  # the turn's two tool calls write the record once
    now[0] += timedelta(seconds=30)
    turn("Likes green tea")
    assert record() == ("2026-12-07T09:00:00.000000Z", "2026-12-07T09:00:00.000000Z")
    assert writes == ["t1"]  # fresh enough: no write
    now[0] += timedelta(minutes=2)
    turn("Likes black tea")
    assert record() == ("2026-12-07T09:00:00.000000Z", "2026-12-07T09:02:30.000000Z")
    assert writes == ["t1", "t1"]

    assert forget_user(store, "alice", checkpointer=saver).thread_ids == ("t1",)
    assert export_user_data(store, "alice")["threads"] == []
    now[0] += timedelta(seconds=10)
    turn("Likes coffee")  # back right after the erase: recorded again, from now
    assert record() == ("2026-12-07T09:02:40.000000Z", "2026-12-07T09:02:40.000000Z")


def test_tools_through_the_middleware_have_every_thread_erased(saver):
    """What the README recommends over ``create_memory_tools`` alone, which records a thread
    only when the model calls a memory tool: ``MemoryMiddleware(mode="tools")``."""
    store = LongTermMemoryStore(InMemoryVectorStore(KeywordEmbeddings(dims=64)))
    middleware = MemoryMiddleware(store, mode="tools")
    agent = create_agent(
        ScriptedToolModel(), middleware=[middleware], store=store, checkpointer=saver
    )
    agent.invoke(say("remember: Works on the payments team"), run("alice", "t1"))
    agent.invoke(say("My doctor says I have diabetes"), run("alice", "t2"))  # no tool called
    assert "remember_fact" in [t.name for t in middleware.tools]
    assert forget_user(store, "alice", checkpointer=saver).thread_ids == ("t1", "t2")
    assert checkpointed_threads(saver) == set()
