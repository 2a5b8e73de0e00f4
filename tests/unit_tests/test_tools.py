"""Memory tools: user from the run, isolation, secrets, and real agent graphs."""

from __future__ import annotations

import asyncio
import json
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.checkpoint.memory import InMemorySaver

from langchain_ltm import (
    InvalidUserIdError,
    LongTermMemoryConfig,
    LongTermMemoryStore,
    MissingUserIdError,
    create_memory_tools,
    memory_tools_for,
)
from tests.fakes import KeywordEmbeddings, ScriptedToolModel, tool_outputs
from tests.unit_tests.test_resolvers import ScriptedChatModel

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from langgraph.prebuilt import create_react_agent


@pytest.fixture
def emb():
    return KeywordEmbeddings(dims=64)


@pytest.fixture
def store(emb):
    return LongTermMemoryStore(InMemoryVectorStore(emb), upsert_threshold=0.8)


def run(user_id, thread="t1"):
    return {"configurable": {"user_id": user_id, "thread_id": thread}}


@dataclass
class Context:
    user_id: str


def build_create_agent(store, model=None, **kwargs):
    return create_agent(
        model or ScriptedToolModel(),
        tools=create_memory_tools(store),
        store=store,
        checkpointer=InMemorySaver(),
        **kwargs,
    )


def build_react_agent(store, model=None, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_react_agent(
            model or ScriptedToolModel(),
            tools=create_memory_tools(store),
            store=store,
            checkpointer=InMemorySaver(),
            **kwargs,
        )


BUILDERS = [build_create_agent, build_react_agent]


def say(text):
    return {"messages": [{"role": "user", "content": text}]}


def test_tool_schemas_hide_the_user_and_the_runtime(store):
    remember, recall, update, forget = create_memory_tools(store)
    assert [t.name for t in (remember, recall, update, forget)] == [
        "remember_fact",
        "recall_facts",
        "update_fact",
        "forget_fact",
    ]
    assert set(update.tool_call_schema.model_json_schema()["properties"]) == {"fact_id", "fact"}
    remember_schema = remember.tool_call_schema.model_json_schema()
    assert set(remember_schema["properties"]) == {"fact", "pinned", "ttl_minutes"}
    assert remember_schema["required"] == ["fact"]
    assert "ttl_minutes" in remember.description
    assert set(recall.tool_call_schema.model_json_schema()["properties"]) == {"queries", "limit"}
    assert set(forget.tool_call_schema.model_json_schema()["properties"]) == {"fact_id"}
    assert "phrasings" in recall.description


def test_config_chooses_tools_and_options(store):
    tools = create_memory_tools(
        store, config=LongTermMemoryConfig(tools=("recall_facts",), namespace=("team",))
    )
    assert [t.name for t in tools] == ["recall_facts"]
    with pytest.raises(ValueError, match="at least one"):
        LongTermMemoryConfig(tools=())
    with pytest.raises(ValueError, match="recall_limit"):
        LongTermMemoryConfig(recall_limit=0)


def test_tools_use_the_configured_namespace(store):
    (remember,) = create_memory_tools(
        store, config=LongTermMemoryConfig(tools=("remember_fact",), namespace=("team",))
    )
    remember.invoke({"fact": "likes tea"}, config=run("u1"))
    assert store.list_all("u1") == []
    assert [f.content for f in store.with_options(namespace=("team",)).list_all("u1")] == [
        "likes tea"
    ]


def test_missing_user_id_fails_before_any_storage_call(store, emb):
    remember, recall, _update, forget = create_memory_tools(store)
    for tool, args in [
        (remember, {"fact": "x"}),
        (recall, {"queries": ["x"]}),
        (forget, {"fact_id": "x"}),
    ]:
        with pytest.raises(MissingUserIdError, match="configurable"):
            tool.invoke(args, config={"configurable": {}})
    with pytest.raises(InvalidUserIdError):
        remember.invoke({"fact": "x"}, config={"configurable": {"user_id": 42}})
    assert emb.texts_embedded == 0


def test_user_id_key_is_configurable(store):
    (remember,) = create_memory_tools(
        store, config=LongTermMemoryConfig(tools=("remember_fact",), user_id_key="customer")
    )
    with pytest.raises(MissingUserIdError, match="customer"):
        remember.invoke({"fact": "likes tea"}, config=run("u1"))
    remember.invoke({"fact": "likes tea"}, config={"configurable": {"customer": "c9"}})
    assert [f.content for f in store.list_all("c9")] == ["likes tea"]


def test_smuggled_user_id_is_ignored(store):
    remember, recall, _, _ = create_memory_tools(store)
    remember.invoke({"fact": "likes tea", "user_id": "victim"}, config=run("attacker"))
    assert store.list_all("victim") == []
    store.remember("victim", "victim secret plan")
    out = json.loads(
        recall.invoke({"queries": ["victim secret plan"], "user_id": "victim"}, config=run("a"))
    )
    assert out == {"facts": []}


def test_forget_another_users_fact_deletes_nothing(store):
    _, _, _, forget = create_memory_tools(store)
    fact = store.remember("alice", "likes tea").fact
    out = json.loads(forget.invoke({"fact_id": fact.id}, config=run("mallory")))
    assert out["deleted"] is False and "nothing was deleted" in out["reason"]
    assert store.list_all("alice") == [store.list_all("alice")[0]]
    assert json.loads(forget.invoke({"fact_id": fact.id}, config=run("alice")))["deleted"]
    assert store.list_all("alice") == []


def test_bad_arguments_become_tool_errors_the_model_can_read(store):
    remember, recall, update, forget = create_memory_tools(store)
    assert "empty" in remember.invoke({"fact": "   "}, config=run("u1"))
    assert "no fact with id" in update.invoke({"fact_id": "nope", "fact": "x"}, config=run("u1"))
    assert "fact_id is empty" in update.invoke({"fact_id": " ", "fact": "x"}, config=run("u1"))
    made = json.loads(remember.invoke({"fact": "likes tea"}, config=run("u9")))
    assert "empty" in update.invoke({"fact_id": made["id"], "fact": ""}, config=run("u9"))
    assert "no fact" in update.invoke({"fact_id": made["id"], "fact": "x"}, config=run("u8"))
    assert [f.content for f in store.list_all("u9")] == ["likes tea"]
    assert "update_fact" in remember.description and "history" in update.description
    assert "limit" in remember.invoke({"fact": "x" * 5000}, config=run("u1"))
    assert "at least one" in recall.invoke({"queries": []}, config=run("u1"))
    assert "empty" in forget.invoke({"fact_id": " "}, config=run("u1"))
    assert store.list_all("u1") == []


def test_secret_is_rejected_with_a_reason(store):
    remember, _, _, _ = create_memory_tools(store)
    out = json.loads(remember.invoke({"fact": "my card is 4111 1111 1111 1111"}, config=run("u1")))
    assert out["action"] == "rejected" and "card" in out["reason"]
    assert store.list_all("u1") == []
    (lenient,) = create_memory_tools(
        store, config=LongTermMemoryConfig(tools=("remember_fact",), secret_guard=False)
    )
    out = json.loads(lenient.invoke({"fact": "my pin is 4821"}, config=run("u1")))
    assert out["action"] == "created"


def no_health_data(text):
    """An application's own guard, stricter than the built-in one."""
    return "health data is not stored" if "diagnosed" in text.lower() else None


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_tools_keep_the_stores_own_secret_guard(emb, mode):
    """A store's ``secret_guard=`` guards its tools: the config's default replaced it.

    A custom guard was bypassed (health data stored as ``created``), and a store built
    with ``secret_guard=False`` still had its tools refuse a wifi password.
    """

    def remember(tool, fact, user):
        args, config = {"fact": fact}, run(user)
        if mode == "sync":
            return json.loads(tool.invoke(args, config=config))
        return json.loads(asyncio.run(tool.ainvoke(args, config=config)))

    guarded = LongTermMemoryStore(InMemoryVectorStore(emb), secret_guard=no_health_data)
    assert guarded.remember("u1", "Was diagnosed with diabetes").action == "rejected"
    for tool in (create_memory_tools(guarded)[0], memory_tools_for(guarded, run("u1"))[0]):
        out = remember(tool, "Was diagnosed with diabetes", "u1")
        assert out == {"action": "rejected", "reason": "health data is not stored"}
    assert guarded.list_all("u1") == []
    (scoped,) = create_memory_tools(
        guarded, config=LongTermMemoryConfig(tools=("remember_fact",), recall_limit=3)
    )
    assert remember(scoped, "Was diagnosed with diabetes", "u1")["action"] == "rejected"

    lenient = LongTermMemoryStore(InMemoryVectorStore(emb), secret_guard=False)
    out = remember(create_memory_tools(lenient)[0], "My wifi password is hunter2", "u2")
    assert out["action"] == "created"
    # the config still decides when it says so
    (strict,) = create_memory_tools(
        lenient, config=LongTermMemoryConfig(tools=("remember_fact",), secret_guard=True)
    )
    assert remember(strict, "My wifi password is hunter3", "u2")["action"] == "rejected"
    (own,) = create_memory_tools(
        lenient,
        config=LongTermMemoryConfig(tools=("remember_fact",), secret_guard=no_health_data),
    )
    assert remember(own, "Was diagnosed with asthma", "u2")["action"] == "rejected"
    assert remember(own, "My wifi password is hunter4", "u3")["action"] == "created"


def test_the_configs_secret_guard_is_checked():
    assert LongTermMemoryConfig().secret_guard is None  # the store's
    with pytest.raises(ValueError, match="secret_guard"):
        LongTermMemoryConfig(secret_guard="yes")  # type: ignore[arg-type]


def test_recall_limit_is_capped_by_config(store):
    store.remember(
        "u1",
        [f"tea note {w}" for w in ["ab", "cd", "ef", "gh", "ij", "kl", "mn", "op", "qr", "st"]],
    )
    (recall,) = create_memory_tools(
        store, config=LongTermMemoryConfig(tools=("recall_facts",), recall_limit=3)
    )
    out = json.loads(recall.invoke({"queries": ["tea"], "limit": 50}, config=run("u1")))
    assert len(out["facts"]) == 3


def test_recall_without_a_limit_returns_the_configured_recall_limit(store):
    """``recall_limit`` is the default too: a call without ``limit`` returned 5."""
    store.remember("u1", [f"tea note {w}" for w in ["ab", "cd", "ef", "gh", "ij", "kl", "mn"]])
    (recall,) = create_memory_tools(
        store, config=LongTermMemoryConfig(tools=("recall_facts",), recall_limit=7)
    )
    out = json.loads(recall.invoke({"queries": ["tea"]}, config=run("u1")))
    assert len(out["facts"]) == 7
    out = json.loads(recall.invoke({"queries": ["tea"], "limit": 2}, config=run("u1")))
    assert len(out["facts"]) == 2


async def test_async_tools_share_the_logic(store):
    remember, recall, update, forget = create_memory_tools(store)
    made = json.loads(await remember.ainvoke({"fact": "works on payments"}, config=run("u1")))
    assert made["action"] == "created"
    args = {"fact_id": made["id"], "fact": "works on the search team"}
    changed = json.loads(await update.ainvoke(args, config=run("u1")))
    assert changed["action"] == "updated" and changed["previous"] == "works on payments"
    assert [v.content for v in store.history("u1", made["id"])] == [
        "works on payments",
        "works on the search team",
    ]
    found = json.loads(await recall.ainvoke({"queries": ["payments"]}, config=run("u1")))
    assert found["facts"][0]["id"] == made["id"]
    gone = json.loads(await forget.ainvoke({"fact_id": made["id"]}, config=run("u1")))
    assert gone["deleted"] is True


def test_memory_tools_for_binds_one_run(store):
    tools = memory_tools_for(store, run("bob"))
    assert isinstance(tools[0], StructuredTool)
    tools[0].invoke({"fact": "bob likes jazz"})
    tools[0].invoke({"fact": "still bob"}, config=run("someone-else"))  # bound: stays bob
    assert {f.content for f in store.list_all("bob")} == {"bob likes jazz", "still bob"}
    with pytest.raises(MissingUserIdError):
        memory_tools_for(store, {"configurable": {}})
    assert memory_tools_for(store, run("x"))[0] is not memory_tools_for(store, run("x"))[0]


def test_memory_tools_for_in_a_graph_node_takes_the_user_from_the_runtime_context(store):
    """It read ``configurable`` only: with the user in the runtime context it raised
    ``MissingUserIdError`` (whose message says to pass a context), and with a context and a
    ``configurable`` user it bound the latter, where everything else lets the context win."""
    from typing import TypedDict

    from langchain_core.runnables import RunnableConfig
    from langgraph.graph import END, START, StateGraph
    from langgraph.runtime import Runtime

    class State(TypedDict):
        fact: str

    def node(state: State, config: RunnableConfig) -> State:
        memory_tools_for(store, config)[0].invoke({"fact": state["fact"]})
        return state

    def explicit(state: State, config: RunnableConfig, runtime: Runtime[Context]) -> State:
        memory_tools_for(store, None, runtime=runtime)[0].invoke({"fact": state["fact"]})
        return state

    for body in (node, explicit):
        graph = StateGraph(State, context_schema=Context)
        graph.add_node("n", body)
        graph.add_edge(START, "n")
        graph.add_edge("n", END)
        app = graph.compile()
        app.invoke({"fact": f"likes jazz ({body.__name__})"}, context=Context(user_id="alice"))
        app.invoke({"fact": f"likes tea ({body.__name__})"}, run("bob"), context=Context("alice"))
    assert sorted(f.content for f in store.list_all("alice")) == [
        "likes jazz (explicit)",
        "likes jazz (node)",
        "likes tea (explicit)",
        "likes tea (node)",
    ]
    assert store.list_all("bob") == []


@pytest.mark.parametrize("build", BUILDERS)
def test_agent_remembers_across_threads_and_isolates_users(store, build):
    agent = build(store)
    first = agent.invoke(say("remember: prefers answers in Spanish"), run("u1", "thread-1"))
    assert tool_outputs(first)[0]["action"] == "created"
    later = agent.invoke(say("recall: preferred language | answers in Spanish"), run("u1", "t2"))
    facts = tool_outputs(later)[0]["facts"]
    assert [f["fact"] for f in facts] == ["prefers answers in Spanish"]
    other = agent.invoke(say("recall: preferred language | answers in Spanish"), run("u2", "t3"))
    assert tool_outputs(other)[0] == {"facts": []}


@pytest.mark.parametrize("build", BUILDERS)
def test_agent_sees_similar_facts_and_resolves_with_update_fact(store, build):
    agent = build(store)
    first = agent.invoke(say("remember: my sister likes green tea"), run("u1", "t1"))
    sister = tool_outputs(first)[0]["id"]
    second = agent.invoke(say("remember: my son likes green tea"), run("u1", "t2"))
    (made,) = tool_outputs(second)
    assert made["action"] == "created"
    assert [(s["id"], s["reason"]) for s in made["similar"]] == [(sister, "different_subject")]
    third = agent.invoke(say(f"update: {sister} => my sister likes black tea"), run("u1", "t3"))
    (changed,) = tool_outputs(third)
    assert changed["action"] == "updated" and changed["previous"] == "my sister likes green tea"
    assert [v.content for v in store.history("u1", sister)] == [
        "my sister likes green tea",
        "my sister likes black tea",
    ]
    other = agent.invoke(say(f"update: {sister} => stolen"), run("u2", "t4"))
    assert "no fact with id" in other["messages"][-1].content
    assert store.list_all("u1")[0].content == "my sister likes black tea"


def calls(*pairs):
    """One model message with these tool calls: ``calls(("forget_fact", {...}), ...)``."""
    return AIMessage(
        "",
        tool_calls=[
            {"name": name, "args": args, "id": f"call-{n}-{name}", "type": "tool_call"}
            for n, (name, args) in enumerate(pairs)
        ],
    )


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("plan", ["update, then forget", "both at once", "forget first at once"])
async def test_an_agent_acting_on_a_similar_answer_keeps_the_new_text(store, mode, plan):
    """remember_fact's description said, for a 'similar' answer: call update_fact with that
    fact's id and forget_fact with the new id. update_fact found the text was the new
    fact's, wrote nothing and answered duplicate; forget_fact then deleted the only copy of
    the text. Now the update merges the new fact in, and a forget of it, after or in the
    same message in either order, loses nothing."""
    store.remember("u1", "prefers answers in Spanish")
    ids = {}

    def act_on_similar(messages):
        made = json.loads(messages[-1].content)
        assert made["action"] == "created" and len(made["similar"]) == 1
        ids["new"], ids["old"] = made["id"], made["similar"][0]["id"]
        update = ("update_fact", {"fact_id": ids["old"], "fact": made["fact"]})
        forget = ("forget_fact", {"fact_id": ids["new"]})
        if plan == "update, then forget":
            return calls(update)
        return calls(update, forget) if plan == "both at once" else calls(forget, update)

    answers = [calls(("remember_fact", {"fact": "prefers answers in French"})), act_on_similar]
    if plan == "update, then forget":
        answers.append(lambda messages: calls(("forget_fact", {"fact_id": ids["new"]})))
    model = ScriptedChatModel(answers=[*answers, AIMessage("Done: French from now on.")])
    agent = build_create_agent(store, model)
    request = say("From now on answer me in French, not Spanish")
    if mode == "sync":
        out = agent.invoke(request, run("u1"))
    else:
        out = await agent.ainvoke(request, run("u1"))
    (fact,) = store.list_all("u1")
    assert fact.id == ids["old"]
    assert [v.content for v in fact.versions] == [
        "prefers answers in Spanish",
        "prefers answers in French",
    ]
    (updated,) = [o for o in tool_outputs(out) if o.get("action") == "updated"]
    assert updated["fact"] == "prefers answers in French"
    if updated.get("merged"):  # the update ran first: the forget found nothing
        assert updated["merged"] == ids["new"] and "nothing to forget" in updated["note"]
    forgot = [o for o in tool_outputs(out) if "deleted" in o]
    assert len(forgot) == 1 and forgot[0]["id"] == ids["new"]
    assert forgot[0]["deleted"] is not bool(updated.get("merged"))


def test_update_fact_says_to_keep_a_fact_it_could_not_merge(store):
    """The text is another fact's, which has history: nothing changes, and the answer names
    that fact and tells the model not to forget it."""
    remember, _, update, _ = create_memory_tools(store)
    rent = json.loads(remember.invoke({"fact": "my rent is 1200 euros"}, config=run("u1")))
    update.invoke({"fact_id": rent["id"], "fact": "my rent is 1300 euros"}, config=run("u1"))
    jazz = json.loads(remember.invoke({"fact": "I listen to jazz"}, config=run("u1")))
    args = {"fact_id": jazz["id"], "fact": "my rent is 1300 euros"}
    answer = json.loads(update.invoke(args, config=run("u1")))
    assert (answer["action"], answer["id"]) == ("duplicate", rent["id"])
    assert "merged" not in answer and f"Fact {rent['id']} keeps the text" in answer["reason"]
    assert "do not forget it" in answer["reason"]
    assert sorted(f.content for f in store.list_all("u1")) == [
        "I listen to jazz",
        "my rent is 1300 euros",
    ]
    assert "forget_fact with the new id" not in remember.description
    assert "nothing to forget" in remember.description and "merged" in update.description


@pytest.mark.parametrize("build", BUILDERS)
def test_agent_takes_the_user_from_the_runtime_context(store, build):
    agent = build(store, context_schema=Context)
    agent.invoke(
        say("remember: works on the payments team"),
        {"configurable": {"thread_id": "t1"}},
        context=Context(user_id="ctx-user"),
    )
    assert [f.content for f in store.list_all("ctx-user")] == ["works on the payments team"]


@pytest.mark.parametrize("build", BUILDERS)
def test_agent_ignores_a_smuggled_user_id(store, build):
    store.remember("victim", "victim lives in Paris")
    agent = build(store, ScriptedToolModel(smuggle_user_id="victim"))
    out = agent.invoke(say("recall: where does the victim live | Paris"), run("attacker"))
    assert tool_outputs(out)[0] == {"facts": []}
    agent.invoke(say("remember: attacker note"), run("attacker", "t2"))
    assert [f.content for f in store.list_all("victim")] == ["victim lives in Paris"]
    assert [f.content for f in store.list_all("attacker")] == ["attacker note"]


def test_agent_without_user_id_fails_clearly(store, emb):
    agent = build_create_agent(store)
    with pytest.raises(MissingUserIdError):
        agent.invoke(say("remember: likes tea"), {"configurable": {"thread_id": "t"}})
    assert emb.texts_embedded == 0


USERS = [f"user-{i}@example.com" for i in range(20)]


@pytest.mark.parametrize("build", BUILDERS)
def test_concurrent_runs_threads_see_only_their_own_facts(store, build):
    agent = build(store)

    def session(user_id):
        agent.invoke(say(f"remember: secret of {user_id}; likes tea"), run(user_id, user_id))
        out = agent.invoke(say("recall: secret of | tea"), run(user_id, user_id + "-2"))
        return user_id, tool_outputs(out)[0]["facts"]

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(session, USERS))
    for user_id, facts in results:
        assert {f["fact"] for f in facts} == {f"secret of {user_id}", "likes tea"}


@pytest.mark.parametrize("build", BUILDERS)
async def test_concurrent_runs_asyncio_see_only_their_own_facts(store, build):
    agent = build(store)

    async def session(user_id):
        await agent.ainvoke(
            say(f"remember: secret of {user_id}; likes tea"), run(user_id, user_id + "-a")
        )
        out = await agent.ainvoke(say("recall: secret of | tea"), run(user_id, user_id + "-b"))
        return user_id, tool_outputs(out)[0]["facts"]

    results = await asyncio.gather(*(session(u) for u in USERS))
    for user_id, facts in results:
        assert {f["fact"] for f in facts} == {f"secret of {user_id}", "likes tea"}
    assert sum(len(store.list_all(u)) for u in USERS) == 40


async def test_remember_fact_with_ttl_minutes_expires(store, monkeypatch):
    from datetime import datetime, timedelta, timezone

    from langchain_ltm import _clock

    now = [datetime.now(timezone.utc)]
    monkeypatch.setattr(_clock, "utcnow", lambda: now[0])
    remember, recall, _, _ = create_memory_tools(store)
    out = json.loads(
        remember.invoke(
            {"fact": "Reported a lost card this morning", "ttl_minutes": 60}, config=run("u1")
        )
    )
    assert out["action"] == "created" and out["ttl_minutes"] == 60
    out = json.loads(await remember.ainvoke({"fact": "Likes green tea"}, config=run("u1")))
    assert "ttl_minutes" not in out
    error = remember.invoke({"fact": "Owns a bike", "ttl_minutes": -5}, config=run("u1"))
    assert "ttl_minutes" in error and "bike" not in str(store.list_all("u1"))
    now[0] += timedelta(minutes=61)
    facts = json.loads(recall.invoke({"queries": ["lost card", "tea"]}, config=run("u1")))
    assert [f["fact"] for f in facts["facts"]] == ["Likes green tea"]


async def test_every_agent_helper_refuses_another_store_saying_to_wrap_it(emb, tmp_path):
    # they raised AttributeError ('with_options', 'backend', 'export_user'), and the hook
    # took it and failed at the first run ('pinned')
    from langgraph.store.memory import InMemoryStore

    from langchain_ltm import (
        FactStore,
        MemoryMiddleware,
        SessionMemoryMiddleware,
        aexport_user_data,
        aforget_user,
        export_user_data,
        forget_user,
        memory_pre_model_hook,
    )

    run = {"configurable": {"user_id": "u1"}}
    helpers = {
        "MemoryMiddleware": MemoryMiddleware,
        "create_memory_tools": create_memory_tools,
        "memory_tools_for": lambda s: memory_tools_for(s, run),
        "memory_pre_model_hook": memory_pre_model_hook,
        "forget_user": lambda s: forget_user(s, "u1"),
        "export_user_data": lambda s: export_user_data(s, "u1"),
    }
    for wrong in (InMemoryStore(), InMemoryVectorStore(emb)):
        for name, helper in helpers.items():
            if name in ("forget_user", "export_user_data") and isinstance(wrong, InMemoryStore):
                continue  # they find the session turns and threads of any LangGraph store
            with pytest.raises(TypeError, match=rf"^{name} needs a LongTermMemoryStore, got "):
                helper(wrong)
    with pytest.raises(TypeError, match=r"wrap your vectorstore: LongTermMemoryStore\("):
        await aforget_user(InMemoryVectorStore(emb), "u1")
    with pytest.raises(TypeError, match="aexport_user_data needs a LongTermMemoryStore"):
        await aexport_user_data(InMemoryVectorStore(emb), "u1")
    with (
        FactStore.from_sqlite(tmp_path / "f.db", emb) as facts,
        pytest.raises(TypeError, match="open a LongTermMemoryStore on the same engine"),
    ):
        create_memory_tools(facts)  # type: ignore[arg-type]
    SessionMemoryMiddleware(InMemoryStore())  # documented to take any BaseStore


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_an_id_with_a_lone_surrogate_is_no_fact_and_the_run_goes_on(emb, tmp_path, mode):
    """A model's JSON can carry a lone surrogate into a fact id: on SQLite (and Postgres)
    update_fact and forget_fact raised ``UnicodeEncodeError``, which failed the agent's
    run. They answer that the user has no such fact."""
    with LongTermMemoryStore.from_sqlite(tmp_path / "m.db", emb) as store:
        fact = store.remember("u1", "lives in Paris").fact
        acting = calls(
            ("update_fact", {"fact_id": fact.id + "\ud800", "fact": "lives in Rome"}),
            ("forget_fact", {"fact_id": "\udfff"}),
        )
        model = ScriptedChatModel(answers=[acting, AIMessage("Nothing changed.")])
        agent = build_create_agent(store, model)
        request = say("I moved to Rome; forget where I lived")
        if mode == "sync":
            out = agent.invoke(request, run("u1"))
        else:
            out = await agent.ainvoke(request, run("u1"))
        assert out["messages"][-1].content == "Nothing changed."
        updated, forgot = [m.content for m in out["messages"] if m.type == "tool"]
        assert "has no fact with id" in updated
        assert json.loads(forgot)["deleted"] is False
        for answer in (updated, forgot):  # sent back to the model: it must encode
            answer.encode("utf-8")
        assert [v.content for v in store.history("u1", fact.id)] == ["lives in Paris"]
