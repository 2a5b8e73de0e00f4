"""MemoryMiddleware through the real create_agent graph, with a model that records requests."""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import create_react_agent
from pydantic import BaseModel

from langchain_ltm import LongTermMemoryStore, MissingUserIdError
from langchain_ltm.agents._extract import BackgroundExtractor
from langchain_ltm.agents._registry import session_namespace, thread_namespace
from langchain_ltm.agents.hooks import memory_pre_model_hook
from langchain_ltm.agents.middleware import MemoryMiddleware
from langchain_ltm.agents.session import SessionMemoryMiddleware
from tests.fakes import KeywordEmbeddings, ScriptedToolModel
from tests.unit_tests.test_resolvers import ScriptedChatModel


class RecordingModel(ScriptedToolModel):
    """ScriptedToolModel that records every request and the tools bound to it."""

    requests: list[list[Any]] = []  # noqa: RUF012  (pydantic field, reset per instance)
    bound: list[list[str]] = []  # noqa: RUF012
    tool_choices: list[Any] = []  # noqa: RUF012

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.requests = []
        self.bound = []
        self.tool_choices = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> RecordingModel:
        self.bound.append([getattr(t, "name", None) or t.get("name", "") for t in tools])
        self.tool_choices.append(kwargs.get("tool_choice"))
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.requests.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)


@pytest.fixture
def emb():
    return KeywordEmbeddings(dims=64)


@pytest.fixture
def store(emb):
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    store.remember("alice", "Prefers answers in Spanish", pinned=True)
    store.remember("alice", ["Works on the payments team", "Has a cat named Tom"])
    store.remember("bob", "Works on the search team")
    return store


def run(user_id: str | None, thread: str = "t1") -> dict[str, Any]:
    configurable: dict[str, Any] = {"thread_id": thread}
    if user_id is not None:
        configurable["user_id"] = user_id
    return {"configurable": configurable}


def system_text(request: list[Any]) -> str:
    first = request[0]
    return str(first.content) if isinstance(first, SystemMessage) else ""


def agent_with(store, model, **middleware_kwargs):
    return create_agent(
        model,
        middleware=[MemoryMiddleware(store, min_score=0.1, **middleware_kwargs)],
        store=store,
        checkpointer=InMemorySaver(),
        system_prompt="You are helpful.",
    )


def test_recalled_facts_reach_the_prompt_and_never_the_state(store):
    model = RecordingModel()
    agent = agent_with(store, model, mode="recall")
    out = agent.invoke({"messages": [("user", "which team do I work on")]}, run("alice"))
    prompt = system_text(model.requests[0])
    assert prompt.startswith("You are helpful.")
    assert "Prefers answers in Spanish" in prompt  # pinned: always there
    assert "Works on the payments team" in prompt  # relevant to the message
    assert "search team" not in prompt  # bob's
    state = agent.get_state(run("alice"))
    for message in [*out["messages"], *state.values["messages"]]:
        assert "payments" not in str(message.content) or isinstance(message, HumanMessage)
        assert not isinstance(message, SystemMessage)


def test_another_users_run_sees_none_of_them(store):
    model = RecordingModel()
    agent = agent_with(store, model, mode="recall")
    agent.invoke({"messages": [("user", "which team do I work on")]}, run("bob"))
    prompt = system_text(model.requests[0])
    assert "search team" in prompt and "payments" not in prompt and "Spanish" not in prompt
    agent.invoke({"messages": [("user", "which team do I work on")]}, run("carol", "t2"))
    assert system_text(model.requests[1]) == "You are helpful."


def test_min_score_and_budget_keep_the_block_small(store):
    model = RecordingModel()
    agent = agent_with(store, model, mode="recall", max_chars=258)  # the least accepted
    agent.invoke({"messages": [("user", "which team do I work on")]}, run("alice"))
    prompt = system_text(model.requests[0])
    block = prompt.removeprefix("You are helpful.\n\n")
    assert len(block) <= 258 and "Spanish" in block


@pytest.mark.parametrize("call", ["sync", "async"])
@pytest.mark.parametrize("build", ["middleware", "hook"])
def test_pinned_facts_come_on_top_of_recall_limit(emb, build, call):
    """The docstring says pinned facts come on top of ``recall_limit``; recall was asked
    for ``recall_limit`` facts, the pinned ones it found again were dropped (they are shown
    under "Profile"), and fewer relevant facts reached the prompt: none here."""
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    store.remember("alice", ["Favourite food sushi", "Favourite food tempura"], pinned=True)
    store.remember("alice", ["Likes ramen food", "Likes curry food", "Works on the payments"])
    said = "favourite food"
    assert [f.pinned for f in store.recall("alice", said, limit=4)] == [True, True, False, False]
    if build == "middleware":
        model = RecordingModel()
        agent = agent_with(store, model, mode="recall", recall_limit=2)
        state = {"messages": [("user", said)]}
        if call == "sync":
            agent.invoke(state, run("alice"))
        else:
            asyncio.run(agent.ainvoke(state, run("alice")))
        prompt = system_text(model.requests[0])
    else:
        hook = memory_pre_model_hook(store, min_score=0.1, recall_limit=2)
        state = {"messages": [HumanMessage(said)]}
        if call == "sync":
            out = hook.invoke(state, run("alice"))
        else:
            out = asyncio.run(hook.ainvoke(state, run("alice")))
        prompt = system_text(out["llm_input_messages"])
    relevant = prompt.split("Relevant to this message:\n", 1)[-1].splitlines()
    assert relevant == ["- Likes ramen food", "- Likes curry food"]  # recall_limit facts
    assert "- Favourite food sushi" in prompt and "- Favourite food tempura" in prompt
    assert prompt.count("Favourite food sushi") == 1


@pytest.mark.parametrize("build", ["middleware", "hook"])
def test_a_budget_that_cannot_hold_the_header_and_a_fact_is_refused(store, build):
    """``max_chars`` from 100 was accepted, but the default header alone is 171 characters:
    at 100-200 every fact, the pinned ones too, was left out of the prompt."""
    make = MemoryMiddleware if build == "middleware" else memory_pre_model_hook
    for bad in (100, 200, 257):
        with pytest.raises(ValueError, match=r"max_chars must be an int >= 258"):
            make(store, max_chars=bad)
    make(store, max_chars=258)
    make(store, max_chars=100, header="## Memory")  # a shorter header lowers the floor


def test_one_long_fact_never_hides_the_others(emb):
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    long_fact = "Background: " + "the user described their job at length " * 45
    store.remember("alice", long_fact, pinned=True)
    store.remember("alice", ["My name is Alice", "Prefers answers in Spanish"], pinned=True)
    store.remember("alice", "Works on the payments team")
    for budget in (2000, 1000, 400):
        model = RecordingModel()
        agent = agent_with(store, model, mode="recall", max_chars=budget)
        agent.invoke({"messages": [("user", "which team do I work on")]}, run("alice"))
        block = system_text(model.requests[0]).removeprefix("You are helpful.\n\n")
        assert len(block) <= budget, budget
        assert "My name is Alice" in block and "Prefers answers in Spanish" in block, budget
        assert "Works on the payments team" in block, budget
        assert "Background:" in block and "…" in block, budget  # cut to the room left
    tight_store = LongTermMemoryStore(InMemoryVectorStore(emb))
    for fact in ("My name is Alice", long_fact, "Prefers answers in Spanish"):
        tight_store.remember("alice", fact, pinned=True)
    tight = RecordingModel()
    agent = agent_with(tight_store, tight, mode="recall", max_chars=258)
    agent.invoke({"messages": [("user", "which team do I work on")]}, run("alice"))
    block = system_text(tight.requests[0]).removeprefix("You are helpful.\n\n")
    assert "Background:" not in block and "My name is Alice" in block  # too little room: out
    assert "Prefers answers in Spanish" in block  # the facts after it still get their turn
    assert not block.rstrip().endswith(":")  # no heading without a fact under it


@pytest.mark.parametrize(
    ("mode", "tools", "block"),
    [
        ("both", ["remember_fact", "recall_facts", "update_fact", "forget_fact"], True),
        ("recall", [], True),
        ("tools", ["remember_fact", "recall_facts", "update_fact", "forget_fact"], False),
    ],
)
def test_modes(store, mode, tools, block):
    model = RecordingModel()
    agent = agent_with(store, model, mode=mode)
    agent.invoke({"messages": [("user", "which team do I work on")]}, run("alice"))
    assert ("Spanish" in system_text(model.requests[0])) is block
    assert (model.bound[-1] if model.bound else []) == tools


def test_memory_tools_work_with_no_other_tools_and_structured_output(store):
    class Answer(BaseModel):
        text: str

    model = RecordingModel()
    agent = create_agent(
        model,
        tools=[],
        middleware=[MemoryMiddleware(store)],
        store=store,
        response_format=Answer,
    )
    out = agent.invoke({"messages": [("user", "remember: likes green tea")]}, run("alice"))
    assert {"remember_fact", "recall_facts", "update_fact", "forget_fact"} <= set(model.bound[0])
    assert any(f.content == "likes green tea" for f in store.list_all("alice"))
    assert out["messages"][-1] is not None


def test_missing_user_id_fails_before_any_storage_call(store, emb):
    agent = agent_with(store, RecordingModel())
    before = emb.texts_embedded
    with pytest.raises(MissingUserIdError):
        agent.invoke({"messages": [("user", "hello")]}, run(None))
    assert emb.texts_embedded == before


def test_threads_of_a_user_are_recorded(store):
    agent = agent_with(store, RecordingModel(), mode="recall")
    agent.invoke({"messages": [("user", "hi")]}, run("alice", "t-1"))
    agent.invoke({"messages": [("user", "hi again")]}, run("alice", "t-1"))
    agent.invoke({"messages": [("user", "hi")]}, run("alice", "t-2"))
    threads = store.search(thread_namespace("alice"))
    assert sorted(item.key for item in threads) == ["t-1", "t-2"]
    assert store.search(thread_namespace("bob")) == []


USERS = [f"user-{i}@example.com" for i in range(20)]


def test_concurrent_runs_see_only_their_own_facts(emb):
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    for user in USERS:
        store.remember(user, f"The secret word of {user} is tea", pinned=True)
    model = RecordingModel()
    agent = agent_with(store, model, mode="recall")

    def session(user):
        agent.invoke({"messages": [("user", f"I am {user}: secret word?")]}, run(user, user))

    with ThreadPoolExecutor(10) as pool:
        list(pool.map(session, USERS))
    assert len(model.requests) == len(USERS)
    for request in model.requests:
        user = str(request[-1].content).split(":")[0].removeprefix("I am ")
        prompt = system_text(request)
        assert f"secret word of {user} " in prompt
        assert sum(f"secret word of {u} " in prompt for u in USERS) == 1


async def test_concurrent_async_runs_see_only_their_own_facts(emb):
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    for user in USERS:
        await store.aremember(user, f"The secret word of {user} is tea", pinned=True)
    model = RecordingModel()
    agent = agent_with(store, model, mode="recall")
    await asyncio.gather(
        *(
            agent.ainvoke({"messages": [("user", f"I am {u}: secret word?")]}, run(u, u))
            for u in USERS
        )
    )
    for request in model.requests:
        user = str(request[-1].content).split(":")[0].removeprefix("I am ")
        assert sum(f"secret word of {u} " in system_text(request) for u in USERS) == 1
        assert f"secret word of {user} " in system_text(request)


def extraction(*facts: tuple[str, bool], supersede: list[dict[str, Any]] | None = None):
    return {
        "facts": [{"content": text, "pinned": pinned} for text, pinned in facts],
        "supersede": supersede or [],
    }


def test_extraction_stores_facts_once_when_turns_repeat_them(emb):
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    extractor = ScriptedChatModel(
        answers=[
            extraction(("My name is Ana", True), ("Works on the payments team", False)),
            extraction(("my name is ana.", True)),
        ]
    )
    agent = agent_with(store, RecordingModel(), mode="recall", extract_with=extractor)
    agent.invoke({"messages": [("user", "Hi, I'm Ana, I work on payments")]}, run("ana"))
    agent.invoke({"messages": [("user", "As I said, I'm Ana")]}, run("ana"))
    assert len(extractor.requests) == 2
    assert "Hi, I'm Ana, I work on payments" in str(extractor.requests[0][-1].content)
    assert "My name is Ana" in str(extractor.requests[1][-1].content)  # related facts shown
    facts = store.list_all("ana")
    assert sorted(f.content for f in facts) == ["My name is Ana", "Works on the payments team"]
    assert [f.content for f in store.pinned("ana")] == ["My name is Ana"]


def test_extraction_supersedes_a_stored_fact_by_number(emb):
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    made = store.remember("ana", "Lives in Paris")
    extractor = ScriptedChatModel(
        answers=[extraction(supersede=[{"fact": 1, "content": "Lives in Berlin"}])]
    )
    agent = agent_with(store, RecordingModel(), mode="recall", extract_with=extractor)
    agent.invoke({"messages": [("user", "I moved from Paris to Berlin")]}, run("ana"))
    assert [v.content for v in store.history("ana", made.fact.id)] == [
        "Lives in Paris",
        "Lives in Berlin",
    ]


def _numbered(messages, text: str) -> int:
    """The number the extraction prompt gives the stored fact ``text``."""
    prompt = str(messages[-1].content)
    (line,) = [line for line in prompt.splitlines() if line.endswith(f". {text}")]
    return int(line.split(".", 1)[0].strip())


def test_a_later_extraction_superseding_with_a_text_stored_earlier_keeps_one_fact(emb):
    """Turn 1 stored the new text apart from the old one (similar); turn 2 supersedes the
    old one with it: ``update_fact`` answered duplicate and wrote nothing, so both stayed
    current. The stored text is merged in now: one fact, the old text its earlier version."""
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    spanish = store.remember("ana", "Prefers answers in Spanish").fact
    french = "Prefers answers in French"
    extractor = ScriptedChatModel(
        answers=[
            extraction((french, True)),
            AIMessage("not sure"),  # the resolver's turn, if asked
            lambda messages: extraction(
                supersede=[{"fact": _numbered(messages, spanish.content), "content": french}]
            ),
        ]
    )
    agent = agent_with(store, RecordingModel(), mode="recall", extract_with=extractor)
    agent.invoke({"messages": [("user", "Answer me in French from now on")]}, run("ana"))
    assert sorted(f.content for f in store.list_all("ana")) == [french, spanish.content]
    if extractor.answers and isinstance(extractor.answers[0], AIMessage):
        extractor.answers.pop(0)  # no resolver was asked
    agent.invoke({"messages": [("user", "Yes, French, not Spanish")]}, run("ana"))
    (fact,) = store.list_all("ana")
    assert fact.id == spanish.id and fact.pinned  # the merged fact's pin is kept
    assert [v.content for v in fact.versions] == [spanish.content, french]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_supersede_whose_text_is_also_listed_as_a_fact_still_supersedes(emb, mode):
    """The new text listed both as a fact and as a supersede: the old fact is outdated.

    Facts were remembered first, so the supersede then answered ``duplicate`` (another fact
    had the text) and was dropped without a word: both languages stayed current.
    """
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    spanish = store.remember("ana", "Prefers answers in Spanish").fact
    french = "Prefers answers in French"
    extractor = ScriptedChatModel(
        answers=[
            extraction(
                ("prefers answers in french.", False),  # the same text, as dedup compares
                ("Has a cat named Tom", False),
                supersede=[{"fact": 1, "content": french}],
            )
        ]
    )
    agent = agent_with(store, RecordingModel(), mode="recall", extract_with=extractor)
    said = {"messages": [("user", "Answer me in French from now on. My cat is Tom.")]}
    if mode == "async":
        asyncio.run(agent.ainvoke(said, run("ana")))
    else:
        agent.invoke(said, run("ana"))
    facts = {f.content: f for f in store.list_all("ana")}
    assert sorted(facts) == ["Has a cat named Tom", french]
    assert facts[french].id == spanish.id
    assert [v.content for v in store.history("ana", spanish.id)] == [spanish.content, french]


def test_a_fact_listed_beside_a_supersede_that_fails_is_still_remembered(emb):
    """Only a supersede that stored the text spares remembering it: nothing said is lost."""
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    made = store.remember("ana", "Lives in Paris")
    extractor = ScriptedChatModel(
        answers=[
            extraction(
                ("Lives in Berlin", False),
                ("Name is Ana", True),
                supersede=[
                    {"fact": 1, "content": "Lives in Berlin"},
                    {"fact": 7, "content": "Name is Ana"},  # no stored fact 7
                ],
            )
        ]
    )
    agent = agent_with(store, RecordingModel(), mode="recall", extract_with=extractor)
    store.forget("ana", made.fact.id)  # between the recall and the update, say
    agent.invoke({"messages": [("user", "I'm Ana and I live in Berlin")]}, run("ana"))
    assert sorted(f.content for f in store.list_all("ana")) == ["Lives in Berlin", "Name is Ana"]
    assert [f.content for f in store.pinned("ana")] == ["Name is Ana"]


def test_a_pinned_fact_listed_beside_its_supersede_pins_the_updated_fact(emb):
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    made = store.remember("ana", "Prefers answers in Spanish")
    extractor = ScriptedChatModel(
        answers=[
            extraction(
                ("Prefers answers in French", True),
                supersede=[{"fact": 1, "content": "Prefers answers in French"}],
            )
        ]
    )
    agent = agent_with(store, RecordingModel(), mode="recall", extract_with=extractor)
    agent.invoke({"messages": [("user", "Answer me in French, always")]}, run("ana"))
    assert [(f.id, f.content) for f in store.pinned("ana")] == [
        (made.fact.id, "Prefers answers in French")
    ]
    assert len(store.list_all("ana")) == 1


def test_a_supersede_onto_another_facts_text_is_logged(emb, caplog):
    """The new text is another fact, one with history of its own, which ``update_fact``
    does not merge: the old fact stays current, and the extraction says so in the log
    (never a silent no-op)."""
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    spanish = store.remember("ana", "Prefers answers in Spanish").fact
    french = store.remember("ana", "Prefers answers in Italian").fact
    store.update_fact("ana", french.id, "Prefers answers in French")  # history: Italian
    extractor = ScriptedChatModel(
        answers=[
            lambda messages: extraction(
                supersede=[
                    {
                        "fact": _numbered(messages, spanish.content),
                        "content": "Prefers answers in French",
                    }
                ]
            )
        ]
    )
    agent = agent_with(store, RecordingModel(), mode="recall", extract_with=extractor)
    with caplog.at_level(logging.WARNING):
        agent.invoke({"messages": [("user", "Only French, not Spanish")]}, run("ana"))
    facts = {f.id: f for f in store.list_all("ana")}
    assert facts[spanish.id].content == spanish.content  # not merged: still current
    assert [v.content for v in store.history("ana", french.id)] == [
        "Prefers answers in Italian",
        "Prefers answers in French",
    ]
    assert any("could not supersede" in r.getMessage() for r in caplog.records)


def test_a_failing_extractor_logs_and_the_answer_still_comes(emb, caplog):
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    extractor = ScriptedChatModel(answers=[RuntimeError("extractor down")])
    agent = agent_with(store, RecordingModel(), mode="recall", extract_with=extractor)
    with caplog.at_level(logging.WARNING):
        out = agent.invoke({"messages": [("user", "hello")]}, run("ana"))
    assert out["messages"][-1].content == "ok"
    assert "extraction failed" in caplog.text and store.list_all("ana") == []


def test_an_extracted_fact_with_a_nul_or_a_surrogate_is_stored_cleaned(emb):
    """The extractor echoed a pasted NUL or lone surrogate: the fact was refused and left
    out without a word. A fact longer than the store's limit was left out whole."""
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    long_fact = "Likes tea " + "very " * 500
    extractor = ScriptedChatModel(
        answers=[
            extraction(
                ("Name is Ana\x00Lopez", True),
                ("Lives on Caf\udce9 street", False),
                (long_fact, False),
            )
        ]
    )
    agent = agent_with(store, RecordingModel(), mode="recall", extract_with=extractor)
    agent.invoke({"messages": [("user", "I'm Ana")]}, run("ana"))
    long_one, *stored = sorted(f.content for f in store.list_all("ana"))
    assert stored == ["Lives on Caf? street", "Name is Ana Lopez"]
    assert long_one.startswith("Likes tea very") and len(long_one) == 2000


def test_the_extraction_request_carries_at_most_a_share_of_a_pasted_log(emb):
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    extractor = ScriptedChatModel(answers=[extraction(("Works on the payments team", False))])
    agent = agent_with(store, RecordingModel(), mode="recall", extract_with=extractor)
    paste = "I'm on the payments team. Here is the log: " + "ERROR disk full\n" * 100_000
    agent.invoke({"messages": [("user", paste)]}, run("ana"))
    (request,) = extractor.requests
    assert len(str(request[-1].content)) < 6000  # 1.6 million characters before
    assert [f.content for f in store.list_all("ana")] == ["Works on the payments team"]


@pytest.mark.parametrize("down", ["pinned", "recall", "remember"])
def test_a_store_that_is_down_never_fails_the_turn(emb, caplog, down):
    """Recall before the answer gives no memory block, extraction after it stores
    nothing; each logs a warning. (Noting the thread, which ``forget_user`` needs, still
    fails the turn: a thread it could not erase later is not run.)"""
    from langchain_ltm import BackendError

    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    store.remember("alice", "Prefers tea", pinned=True)

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise BackendError("connection dropped")

    async def afail(*args: Any, **kwargs: Any) -> Any:
        raise BackendError("connection dropped")

    setattr(store, down, fail)
    setattr(store, "a" + down, afail)
    extractor = ScriptedChatModel(answers=[extraction(("Likes green tea", False))] * 2)
    model = RecordingModel()
    agent = agent_with(store, model, mode="recall", extract_with=extractor)
    with caplog.at_level(logging.WARNING):
        out = agent.invoke({"messages": [("user", "hello there")]}, run("alice"))
        again = asyncio.run(agent.ainvoke({"messages": [("user", "hi")]}, run("alice", "t2")))
    assert out["messages"][-1].content == again["messages"][-1].content == "ok"
    assert "connection dropped" in caplog.text
    if down != "remember":  # extracted with no related facts when recall is down
        assert sorted(f.content for f in store.list_all("alice")) == [
            "Likes green tea",
            "Prefers tea",
        ]


def test_the_extraction_call_is_kept_out_of_the_users_stream(emb):
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    extractor = ScriptedChatModel(answers=[extraction(("Works at ACME as a nurse", False))])
    agent = agent_with(store, RecordingModel(), mode="recall", extract_with=extractor)
    streamed = list(
        agent.stream(
            {"messages": [("user", "I'm a nurse at ACME")]}, run("ana"), stream_mode="messages"
        )
    )
    assert [message.content for message, _ in streamed] == ["ok"]
    assert [f.content for f in store.list_all("ana")] == ["Works at ACME as a nurse"]


@pytest.mark.parametrize("said", ["?", "...", "!?", "hello\x00world", "caf\udce9"])
def test_a_message_memory_cannot_search_never_fails_the_turn(store, said):
    extractor = ScriptedChatModel(answers=[extraction(("Works on the payments team", False))])
    model = RecordingModel()
    agent = agent_with(store, model, mode="both", extract_with=extractor)
    out = agent.invoke({"messages": [("user", said)]}, run("alice"))
    assert out["messages"][-1].content == "ok"
    assert "Prefers answers in Spanish" in system_text(model.requests[0])  # pinned still shown
    assert len(extractor.requests) == 1  # the turn was still extracted
    hook = memory_pre_model_hook(store, min_score=0.1)
    assert hook.invoke({"messages": [HumanMessage(said)]}, run("alice"))["llm_input_messages"]


def test_a_store_with_a_short_query_limit_still_recalls_for_a_long_message(emb):
    """``max_fact_chars=500``: recall and extraction cut the message to the store's limit
    (both failed every turn with "query is 1,109 characters long")."""
    store = LongTermMemoryStore(InMemoryVectorStore(emb), max_fact_chars=500)
    store.remember("alice", "Lives in Oslo")
    extractor = ScriptedChatModel(answers=[extraction(("Has a cat named Tom", False))])
    model = RecordingModel()
    agent = agent_with(store, model, mode="recall", extract_with=extractor)
    said = "Here is my long question about Oslo. " * 30
    out = agent.invoke({"messages": [("user", said)]}, run("alice"))
    assert out["messages"][-1].content == "ok"
    assert "Lives in Oslo" in system_text(model.requests[0])
    assert sorted(f.content for f in store.list_all("alice")) == [
        "Has a cat named Tom",
        "Lives in Oslo",
    ]
    hook = memory_pre_model_hook(store, min_score=0.1)
    assert hook.invoke({"messages": [HumanMessage(said)]}, run("alice"))["llm_input_messages"]


def test_a_malformed_entry_of_an_extraction_leaves_the_others_stored(emb, caplog):
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    answer = {
        "facts": [{"content": "Lives in Oslo"}, {"content": None}, "Has a dog"],
        "supersede": [{"fact": None, "content": "Moved"}],
    }
    agent = agent_with(
        store, RecordingModel(), mode="recall", extract_with=ScriptedChatModel(answers=[answer])
    )
    with caplog.at_level(logging.WARNING):
        agent.invoke({"messages": [("user", "I live in Oslo")]}, run("ana"))
    assert [f.content for f in store.list_all("ana")] == ["Lives in Oslo"]
    assert caplog.text.count("memory extraction left out") == 3


@pytest.mark.parametrize("bad", [1001, 5000, -1, True])
def test_a_recall_limit_recall_cannot_serve_is_refused_up_front(store, bad):
    with pytest.raises(ValueError, match="recall_limit must be an int from 0 to 1000"):
        MemoryMiddleware(store, recall_limit=bad)
    with pytest.raises(ValueError, match="recall_limit must be an int from 0 to 1000"):
        memory_pre_model_hook(store, recall_limit=bad)


def background(emb, answer, mode: str, debounce: float):
    """A store, its scripted extractor, a background MemoryMiddleware and its agent."""
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    extractor = ScriptedChatModel(answers=[answer])
    middleware = MemoryMiddleware(
        store, mode=mode, extract_with=extractor, background=True, debounce=debounce
    )
    agent = create_agent(RecordingModel(), middleware=[middleware], checkpointer=InMemorySaver())
    return store, extractor, middleware, agent


def test_a_punctuation_turn_debounced_with_a_real_one_loses_nothing(emb):
    store, _, middleware, agent = background(
        emb, extraction(("Lives in Paris", False)), "tools", 0.3
    )
    for said in ("I live in Paris now", "ok", "!"):
        agent.invoke({"messages": [("user", said)]}, run("ana"))
    assert middleware.flush(timeout=10)
    assert [f.content for f in store.list_all("ana")] == ["Lives in Paris"]


def test_every_user_message_of_one_input_is_extracted(emb):
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    extractor = ScriptedChatModel(
        answers=[extraction(("Sister Eva is allergic to peanuts", False))]
    )
    agent = agent_with(store, RecordingModel(), mode="recall", extract_with=extractor)
    agent.invoke({"messages": [("user", "Hi")]}, run("ana"))
    said = [("user", "My sister Eva is allergic to peanuts."), ("user", "What should I cook?")]
    agent.invoke({"messages": said}, run("ana"))
    transcript = str(extractor.requests[-1][-1].content)
    assert "User: My sister Eva is allergic to peanuts." in transcript
    assert "User: What should I cook?" in transcript and "User: Hi" not in transcript


@pytest.mark.parametrize("call", ["sync", "async", "background"])
def test_extraction_recalls_within_the_stores_max_queries(emb, call):
    """More user messages in a job than the store's ``max_queries``: the related facts of
    the latest ones are recalled (recall raised, and the whole job was dropped)."""
    store = LongTermMemoryStore(InMemoryVectorStore(emb), max_queries=2)
    made = store.remember("ana", "Lives in Paris")
    extractor = ScriptedChatModel(
        answers=[
            extraction(
                ("Allergic to peanuts", False),
                supersede=[{"fact": 1, "content": "Lives in Berlin"}],
            )
        ]
    )
    later = {"background": True, "debounce": 0.5} if call == "background" else {}
    middleware = MemoryMiddleware(store, mode="recall", extract_with=extractor, **later)
    agent = create_agent(RecordingModel(), middleware=[middleware], checkpointer=InMemorySaver())
    said = [("user", "I am allergic to peanuts"), ("user", "My sister is Eva")]
    moved = [("user", "I moved from Paris to Berlin")]
    if call == "sync":
        agent.invoke({"messages": [*said, *moved]}, run("ana"))
    elif call == "async":
        asyncio.run(agent.ainvoke({"messages": [*said, *moved]}, run("ana")))
    else:  # two turns debounced into one job: three messages too
        agent.invoke({"messages": said}, run("ana"))
        agent.invoke({"messages": moved}, run("ana"))
        assert middleware.flush(timeout=10)
    assert len(extractor.requests) == 1
    assert "1. Lives in Paris" in str(extractor.requests[0][-1].content)
    assert [v.content for v in store.history("ana", made.fact.id)] == [
        "Lives in Paris",
        "Lives in Berlin",
    ]
    assert sorted(f.content for f in store.list_all("ana")) == [
        "Allergic to peanuts",
        "Lives in Berlin",
    ]


@tool
def book_table(restaurant: str) -> str:
    """Book a table."""
    return f"booked {restaurant}"


def calling(name: str, call_id: str, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])


def both_memories(store, model, extractor, *first: Any, **options: Any):
    """An agent with session memory and extraction (and the middlewares ``first`` before)."""
    middleware = [
        *first,
        SessionMemoryMiddleware(store, retrieval="both"),
        MemoryMiddleware(store, mode="recall", extract_with=extractor, **options),
    ]
    return create_agent(
        model, tools=[book_table], middleware=middleware, store=store, checkpointer=InMemorySaver()
    )


def indexed_turns(store, user_id: str) -> list[str]:
    return sorted(item.value["user"] for item in store.search(session_namespace(user_id)))


def test_a_message_of_a_pause_the_user_abandons_is_extracted_and_indexed(emb):
    """A human-in-the-loop pause, then a new message instead of a resume: extraction began
    at the latest AI message (the paused tool call) and never saw the peanuts, while
    session memory indexed them: the two middlewares disagreed on the turn."""
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    extractor = ScriptedChatModel(answers=[extraction(("Is allergic to peanuts", False))])
    model = ScriptedChatModel(answers=[calling("book_table", "b1", restaurant="Chez Paul")])
    model.answers.append(AIMessage("Sure."))
    pause = HumanInTheLoopMiddleware(interrupt_on={"book_table": True})
    agent = both_memories(store, model, extractor, pause)
    said = "I'm allergic to peanuts; book Chez Paul for tonight"
    assert agent.invoke({"messages": [("user", said)]}, run("ana"))["__interrupt__"]
    agent.invoke({"messages": [("user", "actually never mind, thanks")]}, run("ana"))
    transcript = str(extractor.requests[-1][-1].content)
    assert f"User: {said}" in transcript and "User: actually never mind" in transcript
    assert [f.content for f in store.list_all("ana")] == ["Is allergic to peanuts"]
    assert indexed_turns(store, "ana") == [said, "actually never mind, thanks"]
    extractor.answers.append(extraction())  # handled once: the next turn is its own
    model.answers.append(AIMessage("Bye."))
    agent.invoke({"messages": [("user", "bye")]}, run("ana"))
    conversation = str(extractor.requests[-1][-1].content).split("Conversation:")[1]
    assert conversation.strip() == "User: bye\nAssistant: Bye."


async def test_a_message_of_a_run_that_failed_after_a_tool_is_extracted_with_the_next(emb):
    """The model failed after a tool result; the user wrote "try again": neither the
    extraction nor session memory saw the first message (the tool exchange was taken
    for its answer)."""
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    extractor = ScriptedChatModel(answers=[extraction(("Is allergic to peanuts", False))])
    model = ScriptedChatModel(answers=[calling("book_table", "b1", restaurant="Chez Paul")])
    model.answers += [TimeoutError("provider timed out"), AIMessage("Booked: Chez Paul.")]
    agent = both_memories(store, model, extractor)
    said = "I'm allergic to peanuts, book me a table in Lyon"
    with pytest.raises(TimeoutError):
        await agent.ainvoke({"messages": [("user", said)]}, run("ana"))
    await agent.ainvoke({"messages": [("user", "try again please")]}, run("ana"))
    transcript = str(extractor.requests[-1][-1].content)
    assert f"User: {said}" in transcript and "User: try again please" in transcript
    assert [f.content for f in await store.alist_all("ana")] == ["Is allergic to peanuts"]
    assert indexed_turns(store, "ana") == [said, "try again please"]


def test_a_message_summarized_away_mid_turn_is_extracted_indexed_and_still_the_query(emb):
    """A summary removed the user's message during its own tool loop: the turn was not
    extracted nor indexed, and the later model calls of the turn recalled with no query."""
    from langchain.agents.middleware import SummarizationMiddleware

    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    store.remember("ana", "Likes quiet places")  # relevant to any query at min_score=-1
    summarizer = ScriptedChatModel(answers=[AIMessage("The user asked for tables.")] * 5)
    summary = SummarizationMiddleware(summarizer, trigger=("messages", 5), keep=("messages", 2))
    extractor = ScriptedChatModel(answers=[extraction(("Is vegan", False))])
    model = ScriptedChatModel(
        answers=[calling("book_table", f"b{i}", restaurant=f"place {i}") for i in range(3)]
    )
    model.answers.append(AIMessage("Booked three vegan places."))
    agent = both_memories(store, model, extractor, summary, min_score=-1.0)
    said = "I'm vegan - book me tables in Lyon"
    state = agent.invoke({"messages": [("user", said)]}, run("ana"))
    assert said not in [m.text for m in state["messages"]]  # summarized away mid-turn
    assert len(summarizer.requests) >= 1
    assert all("Likes quiet places" in system_text(r) for r in model.requests)
    assert f"User: {said}" in str(extractor.requests[-1][-1].content)
    assert sorted(f.content for f in store.list_all("ana")) == ["Is vegan", "Likes quiet places"]
    assert indexed_turns(store, "ana") == [said]


def test_a_configured_namespace_holds_all_of_a_users_memory(emb):
    from langchain_ltm import LongTermMemoryConfig

    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    extractor = ScriptedChatModel(
        answers=[extraction(), extraction(("Has a dog named Rex", False))]
    )
    model = RecordingModel()
    config = LongTermMemoryConfig(namespace=("app_memories",))
    middleware = MemoryMiddleware(store, config=config, extract_with=extractor, min_score=-1.0)
    agent = create_agent(model, middleware=[middleware], store=store, checkpointer=InMemorySaver())
    agent.invoke({"messages": [("user", "remember: Prefers answers in Spanish")]}, run("ana"))
    agent.invoke({"messages": [("user", "I have a dog, Rex. My language?")]}, run("ana"))
    assert "Prefers answers in Spanish" in system_text(model.requests[-1])  # recalled there
    scoped = store.with_options(namespace=("app_memories",))
    assert sorted(f.content for f in scoped.list_all("ana")) == [
        "Has a dog named Rex",
        "Prefers answers in Spanish",
    ]
    assert store.list_all("ana") == []  # nothing in the store's default namespace


def no_health_data(text):
    return "health data is not stored" if "diagnosed" in text.lower() else None


@pytest.mark.parametrize("with_config", [False, True])
def test_tools_and_extraction_keep_the_stores_own_secret_guard(emb, with_config):
    """The store's ``secret_guard=`` guards the middleware's tools and its extraction.

    The tools replaced it with the built-in guard, and so did extraction once a config was
    passed: a custom guard let health data in, ``secret_guard=False`` still refused.
    """
    from langchain_ltm import LongTermMemoryConfig

    config = LongTermMemoryConfig(recall_limit=3) if with_config else None
    guarded = LongTermMemoryStore(InMemoryVectorStore(emb), secret_guard=no_health_data)
    extractor = ScriptedChatModel(answers=[extraction(("Was diagnosed with asthma", False))])
    middleware = MemoryMiddleware(guarded, config=config, extract_with=extractor)
    agent = create_agent(RecordingModel(), middleware=[middleware], store=guarded)
    said = {"messages": [("user", "remember: Was diagnosed with diabetes")]}
    out = agent.invoke(said, run("alice"))
    assert "health data is not stored" in str(out["messages"][2].content)  # the tool's answer
    assert guarded.list_all("alice") == []  # neither the tool nor the extraction stored it

    lenient = LongTermMemoryStore(InMemoryVectorStore(emb), secret_guard=False)
    extractor = ScriptedChatModel(answers=[extraction(("My bank PIN is 4821", False))])
    middleware = MemoryMiddleware(lenient, config=config, extract_with=extractor)
    agent = create_agent(RecordingModel(), middleware=[middleware], store=lenient)
    asyncio.run(
        agent.ainvoke({"messages": [("user", "remember: My wifi password is hunter2")]}, run("bob"))
    )
    assert sorted(f.content for f in lenient.list_all("bob")) == [
        "My bank PIN is 4821",
        "My wifi password is hunter2",
    ]


class BlockingExtractor(ScriptedChatModel):
    """Waits for ``gate`` before answering, so a test can see the agent return first."""

    gate: Any = None

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        assert self.gate.wait(10)
        return super()._generate(messages, stop, run_manager, **kwargs)


def test_background_extraction_never_blocks_and_is_flushed(emb):
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    gate = threading.Event()
    extractor = BlockingExtractor(
        answers=[extraction(("Works on the payments team", False))], gate=gate
    )
    middleware = MemoryMiddleware(
        store, mode="recall", extract_with=extractor, background=True, debounce=0.05
    )
    agent = create_agent(RecordingModel(), middleware=[middleware], checkpointer=InMemorySaver())
    out = agent.invoke({"messages": [("user", "I work on payments")]}, run("ana"))
    assert out["messages"][-1].content == "ok"  # answered while the extractor is blocked
    assert store.list_all("ana") == []
    gate.set()
    assert middleware.flush(timeout=10)
    assert [f.content for f in store.list_all("ana")] == ["Works on the payments team"]


def test_background_turns_of_one_thread_are_debounced_into_one_call(emb):
    _, extractor, middleware, agent = background(
        emb, extraction(("Likes tea", False)), "recall", 0.5
    )
    agent.invoke({"messages": [("user", "I like tea")]}, run("ana"))
    agent.invoke({"messages": [("user", "green tea especially")]}, run("ana"))
    assert middleware.flush(timeout=10)
    assert len(extractor.requests) == 1  # one extraction of both turns
    transcript = str(extractor.requests[0][-1].content)
    assert "I like tea" in transcript and "green tea especially" in transcript


async def test_background_failure_is_logged_and_aflush_returns(emb, caplog):
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    extractor = ScriptedChatModel(answers=[RuntimeError("down")])
    middleware = MemoryMiddleware(
        store, mode="recall", extract_with=extractor, background=True, debounce=0.0
    )
    agent = create_agent(RecordingModel(), middleware=[middleware], checkpointer=InMemorySaver())
    with caplog.at_level(logging.WARNING):
        await agent.ainvoke({"messages": [("user", "hello")]}, run("ana"))
        assert await middleware.aflush(timeout=10)
    assert "extraction failed" in caplog.text


def test_options_are_checked(store):
    with pytest.raises(ValueError, match="mode"):
        MemoryMiddleware(store, mode="auto")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="extract_with"):
        MemoryMiddleware(store, background=True)
    with pytest.raises(ValueError, match="min_score"):
        MemoryMiddleware(store, min_score=3)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1, "1", True])
def test_a_debounce_the_worker_cannot_wait_is_refused(store, bad):
    """``nan`` and ``inf`` were accepted: the worker's sleep raised, the worker died with
    the thread marked busy, the turn was never extracted and ``flush()`` hung."""
    extractor = ScriptedChatModel()
    with pytest.raises(ValueError, match="finite number of seconds"):
        MemoryMiddleware(store, extract_with=extractor, background=True, debounce=bad)
    with pytest.raises(ValueError, match="finite number of seconds"):
        BackgroundExtractor(lambda job: None, debounce=bad)


def test_a_background_worker_that_cannot_wait_still_extracts_and_flushes():
    """A worker whose sleep raised died with its thread marked busy: turns were lost and
    ``flush()`` waited forever."""
    done: list[str] = []
    worker = BackgroundExtractor(lambda job: done.append(job.thread_id), debounce=0)
    worker.debounce = float("nan")  # set after the checks
    worker.submit("ana", "t1", [HumanMessage("I like tea")])
    assert worker.flush(timeout=5) and done == ["t1"]


@pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
def test_pre_model_hook_gives_create_react_agent_the_same_recall(store):
    model = RecordingModel()
    agent = create_react_agent(
        model,
        tools=[],
        pre_model_hook=memory_pre_model_hook(store, min_score=0.1),
        checkpointer=InMemorySaver(),
    )
    out = agent.invoke({"messages": [("user", "which team do I work on")]}, run("alice"))
    prompt = system_text(model.requests[0])
    assert "Spanish" in prompt and "payments team" in prompt and "search" not in prompt
    assert not any(isinstance(m, SystemMessage) for m in out["messages"])
    assert isinstance(out["messages"][-1], AIMessage)


def test_session_memory_records_threads_too(store):
    from langchain_ltm import SessionMemoryMiddleware

    agent = create_agent(
        RecordingModel(),
        middleware=[SessionMemoryMiddleware(store)],  # recency: nothing else is stored
        checkpointer=InMemorySaver(),
    )
    agent.invoke({"messages": [("user", "hi")]}, run("alice", "s-1"))
    agent.invoke({"messages": [("user", "hi")]}, run(None, "anonymous"))  # no user: fine
    assert [item.key for item in store.search(thread_namespace("alice"))] == ["s-1"]


def test_a_thread_reused_after_an_erase_is_erased_again(store):
    from langchain_ltm.agents.erase import forget_user

    saver = InMemorySaver()
    agent = create_agent(
        RecordingModel(),
        middleware=[MemoryMiddleware(store, mode="recall")],
        store=store,
        checkpointer=saver,
    )
    agent.invoke({"messages": [("user", "hi")]}, run("alice", "t1"))
    assert forget_user(store, "alice", checkpointer=saver).threads == 1
    agent.invoke({"messages": [("user", "hi again")]}, run("alice", "t1"))
    assert forget_user(store, "alice", checkpointer=saver).threads == 1
    assert list(saver.list(run("alice", "t1"))) == []


def test_memory_tools_survive_a_forced_tool_choice(store):
    from langchain.agents.middleware import wrap_model_call

    @wrap_model_call
    def force_remember(request, handler):
        return handler(request.override(tool_choice="remember_fact"))

    model = RecordingModel()
    agent = create_agent(
        model, tools=[], middleware=[force_remember, MemoryMiddleware(store)], store=store
    )
    agent.invoke({"messages": [("user", "remember: plays chess")]}, run("alice"))
    assert model.tool_choices[0] == "remember_fact"
    assert "remember_fact" in model.bound[0]
    assert any(f.content == "plays chess" for f in store.list_all("alice"))


@pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
def test_show_dates_puts_each_facts_date_in_the_block(emb):
    from datetime import datetime, timezone

    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    said = datetime(2023, 5, 8, 23, 30, tzinfo=timezone.utc)
    store.remember("alice", "Prefers answers in Spanish", pinned=True, observed_at=said)
    store.remember("alice", "Went to a support group on Sunday", observed_at=said.replace(day=7))
    question = {"messages": [("user", "when did I go to the support group")]}
    dated, plain = RecordingModel(), RecordingModel()
    agent_with(store, dated, mode="recall", show_dates=True).invoke(question, run("alice"))
    agent_with(store, plain, mode="recall").invoke(question, run("alice"))
    assert system_text(dated.requests[0]).splitlines()[-4:] == [
        "Profile:",
        "- [2023-05-08] Prefers answers in Spanish",
        "Relevant to this message:",
        "- [2023-05-07] Went to a support group on Sunday",
    ]
    assert system_text(plain.requests[0]).splitlines()[-4:] == [  # the default: no dates
        "Profile:",
        "- Prefers answers in Spanish",
        "Relevant to this message:",
        "- Went to a support group on Sunday",
    ]
    hooked = RecordingModel()
    hook = memory_pre_model_hook(store, min_score=0.1, show_dates=True)
    create_react_agent(hooked, tools=[], pre_model_hook=hook).invoke(question, run("alice"))
    assert "- [2023-05-07] Went to a support group" in system_text(hooked.requests[0])
    with pytest.raises(TypeError, match="show_dates"):
        MemoryMiddleware(store, show_dates="yes")  # type: ignore[arg-type]


def test_the_thread_record_is_read_once_per_user_message_not_per_model_call(store, monkeypatch):
    from langchain_ltm.agents._registry import THREADS_ROOT

    reads: list[tuple[str, ...]] = []
    get = store.get

    def counting(namespace, key, **kwargs):
        if namespace[0] == THREADS_ROOT:
            reads.append(tuple(namespace))
        return get(namespace, key, **kwargs)

    monkeypatch.setattr(store, "get", counting)
    agent = agent_with(store, RecordingModel(), mode="recall")
    agent.invoke({"messages": [("user", "remember: Likes tea; Has a cat")]}, run("alice", "tl"))
    assert len(reads) == 1  # two model calls (tool calls, then the answer), one read
    agent.invoke({"messages": [("user", "hello again")]}, run("alice", "tl"))
    assert len(reads) == 2  # a new user message checks again (an erase may have run)
    tools = agent_with(store, RecordingModel(), mode="both")
    tools.invoke({"messages": [("user", "remember: Likes tea; Has a cat")]}, run("alice", "tl"))
    assert len(reads) == 5  # and each memory tool call (two here) checks for itself
