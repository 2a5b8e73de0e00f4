"""SessionMemoryMiddleware through real create_agent graphs: what the model is sent."""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from langchain_ltm import LongTermMemoryStore, MissingUserIdError
from langchain_ltm.agents._registry import session_namespace
from langchain_ltm.agents._turns import CONTEXT_HEADER
from langchain_ltm.agents.session import DEFAULT_SESSION_MIN_SCORE, SessionMemoryMiddleware
from langchain_ltm.embeddings import LocalMiniLMEmbeddings
from tests.fakes import KeywordEmbeddings


@tool
def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"notes on {topic}"


class RecordingModel(GenericFakeChatModel):
    """Records every request; ``lookup X`` calls the tool, anything else is answered.

    A pure function of the messages (tool call ids included), so one instance serves
    concurrent runs and sync and async runs give identical transcripts.
    """

    messages: Iterator[Any] = iter(())
    disable_streaming: bool = True
    requests: list[list[BaseMessage]] = []  # noqa: RUF012 (pydantic copies the default)

    def bind_tools(self, tools: Any, **kwargs: Any) -> RecordingModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.requests.append(list(messages))
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(content=f"found {last.text}")
        else:
            text = next(m for m in reversed(messages) if isinstance(m, HumanMessage)).text
            if text.startswith("lookup "):
                topic = text.removeprefix("lookup ")
                call = {"name": "lookup", "args": {"topic": topic}, "id": f"call_{len(messages)}"}
                reply = AIMessage(content="", tool_calls=[call])
            else:
                reply = AIMessage(content=f"sure: {text}")
        return ChatResult(generations=[ChatGeneration(message=reply)])


@pytest.fixture
def emb():
    return KeywordEmbeddings(dims=64)


@pytest.fixture
def store(emb):
    return LongTermMemoryStore(InMemoryVectorStore(emb))


def build(store, model=None, **options):
    model = model or RecordingModel()
    middleware = SessionMemoryMiddleware(store, **options)
    agent = create_agent(
        model, tools=[lookup], middleware=[middleware], checkpointer=InMemorySaver()
    )
    return agent, model


def run(user_id="alice", thread="t1"):
    return {"configurable": {"user_id": user_id, "thread_id": thread}}


def say(text):
    return {"messages": [{"role": "user", "content": text}]}


def shape(messages):
    """Type and text of each message (and the tools an AI message calls)."""
    out = []
    for m in messages:
        calls = [c["name"] for c in getattr(m, "tool_calls", [])]
        out.append((m.type, m.text, *calls))
    return out


def earlier(request):
    """The non-system messages before the request's last user message."""
    last = max(i for i, m in enumerate(request) if isinstance(m, HumanMessage))
    return [m for m in request[:last] if not isinstance(m, SystemMessage)]


def context_of(request):
    """The "Earlier conversations" block of a request ("" if none)."""
    system = next((m for m in request if isinstance(m, SystemMessage)), None)
    if system is None or CONTEXT_HEADER not in system.text:
        return ""
    return system.text[system.text.index(CONTEXT_HEADER) :]


def assert_valid(request):
    """What providers require: every tool result follows its call, every call is answered."""
    open_ids: set[str] = set()
    for m in request:
        if isinstance(m, ToolMessage):
            assert m.tool_call_id in open_ids, f"ToolMessage without its call: {shape(request)}"
            open_ids.discard(m.tool_call_id)
            continue
        assert not open_ids, f"tool call without its result: {shape(request)}"
        if isinstance(m, AIMessage):
            open_ids = {c["id"] for c in m.tool_calls}
    conversation = [m for m in request if not isinstance(m, SystemMessage)]
    assert isinstance(conversation[0], HumanMessage), shape(request)


# ---- (1), (2): the shape of earlier turns --------------------------------------------------


def test_input_output_leaves_out_earlier_tool_calls_but_the_state_keeps_them(store, emb):
    agent, model = build(store)
    agent.invoke(say("lookup tea"), run())
    assert shape(model.requests[-1])[-2:] == [
        ("ai", "", "lookup"),
        ("tool", "notes on tea"),
    ]  # the current turn's tool loop is sent whole
    agent.invoke(say("thanks"), run())
    assert shape(model.requests[-1]) == [
        ("human", "lookup tea"),
        ("ai", "found notes on tea"),
        ("human", "thanks"),
    ]
    state = agent.get_state(run()).values["messages"]
    assert [m.type for m in state] == ["human", "ai", "tool", "ai", "human", "ai"]
    agent.invoke(say("lookup coffee"), run())
    assert shape(model.requests[-1]) == [
        ("human", "lookup tea"),
        ("ai", "found notes on tea"),
        ("human", "thanks"),
        ("ai", "sure: thanks"),
        ("human", "lookup coffee"),
        ("ai", "", "lookup"),
        ("tool", "notes on coffee"),
    ]
    assert emb.document_calls == emb.query_calls == 0  # recency never touches the store


def test_full_shows_everything(store):
    agent, model = build(store, save_mode="full")
    agent.invoke(say("lookup tea"), run())
    agent.invoke(say("thanks"), run())
    state = agent.get_state(run()).values["messages"]
    assert shape(model.requests[-1]) == shape(state[:-1])
    assert [m.type for m in model.requests[-1]] == ["human", "ai", "tool", "ai", "human"]


def test_system_messages_of_the_thread_stay_first_and_the_prompt_is_kept(store):
    model = RecordingModel()
    agent = create_agent(
        model,
        tools=[lookup],
        system_prompt="Be brief.",
        middleware=[SessionMemoryMiddleware(store, limit=2)],
        checkpointer=InMemorySaver(),
    )
    first = {"messages": [SystemMessage("Speak French."), HumanMessage("lookup tea")]}
    agent.invoke(first, run())
    for text in ("one", "two"):
        agent.invoke(say(text), run())
    assert shape(model.requests[-1]) == [
        ("system", "Be brief."),
        ("system", "Speak French."),
        ("human", "one"),
        ("ai", "sure: one"),
        ("human", "two"),
    ]


# ---- (3): limit ------------------------------------------------------------------------------


@pytest.mark.parametrize("save_mode", ["full", "input_output"])
@pytest.mark.parametrize("limit", range(1, 13))
def test_limit_keeps_the_latest_messages_and_the_request_valid(store, save_mode, limit):
    agent, model = build(store, save_mode=save_mode, limit=limit)
    for text in ("lookup tea", "hello", "lookup coffee", "lookup cake"):
        agent.invoke(say(text), run())
    agent.invoke(say("bye"), run())
    request = model.requests[-1]
    assert_valid(request)
    shown = earlier(request)
    assert len(shown) <= limit
    assert request[-1].text == "bye"
    history = agent.get_state(run()).values["messages"][:-2]  # without "bye" and its answer
    if save_mode == "input_output":
        history = [m for m in history if m.type == "human" or (m.type == "ai" and not m.tool_calls)]
    assert shown or limit == 1, "the latest earlier question and answer fit in 2"
    # the most recent messages, or the oldest kept turn's question and its latest messages
    tail = shown if shown == history[len(history) - len(shown) :] else shown[1:]
    assert tail == history[len(history) - len(tail) :]
    if tail is not shown:
        turn_start = max(i for i, m in enumerate(history[: -len(tail)]) if m.type == "human")
        assert shown[0] is history[turn_start] or shown[0] == history[turn_start]


def test_limit_drops_whole_tool_exchanges_of_the_oldest_turn_kept(store):
    agent, model = build(store, save_mode="full", limit=3)
    agent.invoke(say("lookup tea"), run())
    agent.invoke(say("lookup cake"), run())
    agent.invoke(say("bye"), run())
    # the cake turn has 4 messages; its user message and its answer fit, the exchange does not
    assert shape(model.requests[-1]) == [
        ("human", "lookup cake"),
        ("ai", "found notes on cake"),
        ("human", "bye"),
    ]


def test_limit_never_cuts_the_current_turn(store):
    agent, model = build(store, save_mode="full", limit=1)
    agent.invoke(say("lookup tea"), run())
    agent.invoke(say("lookup cake"), run())
    assert [m.type for m in model.requests[-1]] == ["human", "ai", "tool"]  # nothing earlier fits
    assert model.requests[-1][0].text == "lookup cake"


# ---- (4), (5): relevance and both -------------------------------------------------------------


def test_relevance_brings_back_the_users_turns_from_other_threads_most_relevant_first(store, emb):
    agent, model = build(store, retrieval="relevance", relevant_turns=2)
    turns = ["I love hiking in the alps", "my cat is named tom", "lookup pasta recipes"]
    for text in turns:
        agent.invoke(say(text), run(thread="A"))
    assert emb.document_calls == len(turns)  # one embedding call per indexed turn
    assert emb.texts_embedded - emb.query_calls == len(turns)

    found = store.search(session_namespace("alice"), limit=10)
    items = {i.value["turn"]: i.value for i in found}  # keyed by the user message's id
    assert sorted(i.key for i in found) == sorted(f"A:{v['message_id']}" for v in items.values())
    assert sorted(items) == [0, 1, 2] and all(v["message_id"] for v in items.values())
    assert items[2]["user"] == "lookup pasta recipes"
    assert items[2]["answer"] == "found notes on pasta recipes"
    assert set(items[0]) == {"thread_id", "turn", "message_id", "user", "answer", "text", "at"}

    agent.invoke(say("hiking tips for the alps and pasta"), run(thread="B"))
    request = model.requests[-1]
    assert [m.type for m in request] == ["system", "human"]  # no earlier thread messages
    block = context_of(request)
    assert block.index("I love hiking in the alps") < block.index("lookup pasta recipes")
    assert "cat" not in block  # relevant_turns=2
    assert emb.document_calls == len(turns) + 1

    agent.invoke(say("hiking tips for the alps"), run(user_id="bob", thread="C"))
    assert context_of(model.requests[-1]) == ""  # bob has no earlier turns; alice's stay hers
    assert "alice" not in str(store.search(session_namespace("bob"), limit=10))


def test_relevance_context_is_appended_to_the_system_prompt(store):
    model = RecordingModel()
    agent = create_agent(
        model,
        tools=[lookup],
        system_prompt="Be brief.",
        middleware=[SessionMemoryMiddleware(store, retrieval="relevance")],
        checkpointer=InMemorySaver(),
    )
    agent.invoke(say("my cat is named tom"), run(thread="A"))
    agent.invoke(say("what is my cat named?"), run(thread="B"))
    system = model.requests[-1][0]
    assert system.text.startswith("Be brief.\n\n" + CONTEXT_HEADER)
    assert "1. User: my cat is named tom\n   Assistant: sure: my cat is named tom" in system.text
    # the state is untouched: thread B holds only its own turn
    state = agent.get_state(run(thread="B")).values["messages"]
    assert [m.type for m in state] == ["human", "ai"]


def test_both_sends_the_window_and_relevant_turns_not_already_in_it(store):
    # no floor: the cat turn scores ~0 here, and this test is about which turns fill the slots
    agent, model = build(store, retrieval="both", limit=2, relevant_turns=2, min_score=None)
    for text in ("I love hiking in the alps", "my cat is named tom", "pasta with alps cheese"):
        agent.invoke(say(text), run())
    agent.invoke(say("hiking in the alps again"), run())
    request = model.requests[-1]
    assert shape(earlier(request)) == [
        ("human", "pasta with alps cheese"),
        ("ai", "sure: pasta with alps cheese"),
    ]
    block = context_of(request)
    assert "I love hiking in the alps" in block
    assert "pasta" not in block  # already in the window, not repeated
    assert block.count("User:") == 2  # the window's turn left out, the next best brought in


# ---- min_score: a floor on relevance, with the real offline embeddings -----------------------

FILLER = "filler message number 0 about nothing"
MARATHON = "I signed up for the Berlin marathon on September 29"


@pytest.fixture(scope="module")
def minilm():
    return LocalMiniLMEmbeddings()


@pytest.fixture
def real_store(minilm):
    return LongTermMemoryStore(InMemoryVectorStore(minilm))


async def ask(agent, text, config, mode):
    if mode == "sync":
        return agent.invoke(say(text), config)
    return await agent.ainvoke(say(text), config)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_new_users_filler_turn_is_not_sent_as_relevant(real_store, mode):
    agent, model = build(real_store, retrieval="relevance")
    await ask(agent, FILLER, run(thread="A"), mode)
    await ask(agent, "when is my marathon", run(thread="B"), mode)
    assert [m.type for m in model.requests[-1]] == ["human"]  # nothing scored 0.2

    await ask(agent, MARATHON, run(thread="C"), mode)
    await ask(agent, "when is my marathon", run(thread="D"), mode)
    block = context_of(model.requests[-1])
    users = [line.split("User: ", 1)[1] for line in block.splitlines() if "User: " in line]
    # relevant_turns=3, but the filler turn scores below 0.2: the marathon turn and the same
    # question asked in thread B are sent
    assert users == ["when is my marathon", MARATHON]
    assert FILLER not in block


def test_without_a_floor_every_relevant_turn_is_sent_as_before(real_store):
    agent, model = build(real_store, retrieval="relevance", min_score=None)
    for thread, text in (("A", FILLER), ("B", "ok thanks"), ("C", MARATHON)):
        agent.invoke(say(text), run(thread=thread))
    agent.invoke(say("when is my marathon"), run(thread="D"))
    block = context_of(model.requests[-1])
    assert block.count("User:") == 3  # relevant_turns=3, whatever they score
    assert block.index(MARATHON) < block.index(FILLER)  # still most relevant first
    assert "ok thanks" in block


@pytest.mark.parametrize(("min_score", "sent"), [(None, 3), (0.2, 1)])
def test_both_applies_the_floor_to_the_relevant_turns_not_to_the_window(
    real_store, min_score, sent
):
    agent, model = build(real_store, retrieval="both", limit=2, min_score=min_score)
    for text in (MARATHON, FILLER, "ok thanks"):
        agent.invoke(say(text), run(thread="A"))
    agent.invoke(say("hi"), run(thread="B"))
    agent.invoke(say("when is my marathon"), run(thread="B"))
    request = model.requests[-1]
    assert shape(earlier(request)) == [("human", "hi"), ("ai", "sure: hi")]  # window unfiltered
    block = context_of(request)
    assert MARATHON in block
    assert block.count("User:") == sent
    assert (FILLER in block) is (min_score is None)


def test_the_floor_keeps_a_turn_scoring_exactly_min_score(real_store):
    query = "did I register for a race?"
    indexer, _ = build(real_store, retrieval="relevance")
    indexer.invoke(say(MARATHON), run("measured", thread="A"))
    (hit,) = real_store.search(session_namespace("measured"), query=query, limit=5)
    assert hit.score is not None
    for user, floor, kept in (
        ("at", hit.score, True),
        ("above", math.nextafter(hit.score, 2.0), False),
    ):
        indexer.invoke(say(MARATHON), run(user, thread="A"))  # the same single turn, scored alike
        agent, model = build(real_store, retrieval="relevance", min_score=floor)
        agent.invoke(say(query), run(user, thread="B"))
        assert (MARATHON in context_of(model.requests[-1])) is kept, (floor, hit.score)


def test_turns_a_store_returns_without_a_score_are_not_filtered():
    store = InMemoryStore()  # no embedding index: search returns items with score None
    agent, model = build(store, retrieval="relevance")
    agent.invoke(say(FILLER), run(thread="A"))
    agent.invoke(say("when is my marathon"), run(thread="B"))
    assert FILLER in context_of(model.requests[-1])


# ---- (6): async -------------------------------------------------------------------------------

SCRIPT = [
    ("A", "I love hiking in the alps"),
    ("A", "lookup tea"),
    ("A", "thanks for the tea"),
    ("B", "lookup alps huts"),
    ("B", "hiking with tea"),
]


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"save_mode": "full", "limit": 3},
        {"retrieval": "relevance"},
        {"retrieval": "both", "limit": 4, "relevant_turns": 2},
    ],
)
async def test_async_gives_the_same_requests(options):
    sync_emb, async_emb = KeywordEmbeddings(), KeywordEmbeddings()
    agent, sync_model = build(LongTermMemoryStore(InMemoryVectorStore(sync_emb)), **options)
    for thread, text in SCRIPT:
        agent.invoke(say(text), run(thread=thread))
    agent, async_model = build(LongTermMemoryStore(InMemoryVectorStore(async_emb)), **options)
    for thread, text in SCRIPT:
        await agent.ainvoke(say(text), run(thread=thread))
    assert len(sync_model.requests) >= len(SCRIPT) + 2  # two lookups: two calls each
    assert [shape(r) for r in async_model.requests] == [shape(r) for r in sync_model.requests]
    assert async_emb.document_calls == sync_emb.document_calls
    assert async_emb.query_calls == sync_emb.query_calls


# ---- (7): the user -----------------------------------------------------------------------------


@pytest.mark.parametrize("retrieval", ["relevance", "both"])
async def test_missing_user_id_raises_before_any_storage_call(store, emb, retrieval):
    agent, model = build(store, retrieval=retrieval)
    with pytest.raises(MissingUserIdError, match="user_id"):
        agent.invoke(say("hello"), {"configurable": {"thread_id": "t1"}})
    with pytest.raises(MissingUserIdError):
        await agent.ainvoke(say("hello"), {"configurable": {"thread_id": "t2"}})
    assert model.requests == []
    assert emb.document_calls == emb.query_calls == 0


def test_after_agent_without_a_user_writes_nothing(store, emb):
    middleware = SessionMemoryMiddleware(store, retrieval="relevance")
    state = {"messages": [HumanMessage("hi"), AIMessage("hello")]}
    with pytest.raises(MissingUserIdError):
        middleware.after_agent(state, None)  # outside a graph: no config either
    with pytest.raises(MissingUserIdError):
        asyncio.run(middleware.aafter_agent(state, None))
    assert emb.document_calls == 0
    assert store.search(("ltm_sessions",), limit=10) == []


def test_recency_needs_no_user(store):
    agent, model = build(store)
    agent.invoke(say("hello"), {"configurable": {"thread_id": "t1"}})
    assert len(model.requests) == 1


@dataclass
class Context:
    account: str


def test_user_from_the_runtime_context_and_default_thread(store):
    model = RecordingModel()
    agent = create_agent(
        model,
        tools=[lookup],
        context_schema=Context,
        middleware=[SessionMemoryMiddleware(store, retrieval="relevance", user_id_key="account")],
    )
    agent.invoke(say("my cat is named tom"), context=Context(account="carol"))
    agent.invoke(say("what about my cat"), context=Context(account="carol"))
    assert "my cat is named tom" in context_of(model.requests[-1])
    # no checkpointer, no thread id: every run is turn 0 of the "default" thread, each
    # named by its own message id, so none replaces another
    items = store.search(session_namespace("carol"), limit=10)
    assert sorted((i.value["turn"], i.value["user"]) for i in items) == [
        (0, "my cat is named tom"),
        (0, "what about my cat"),
    ]
    assert all(i.key == f"default:{i.value['message_id']}" for i in items)


def test_every_user_message_of_one_input_is_indexed(store):
    agent, _ = build(store, retrieval="relevance")
    said = [("user", "My sister Eva is allergic to peanuts."), ("user", "lookup pasta recipes")]
    agent.invoke({"messages": said}, run(thread="A"))
    items = store.search(session_namespace("alice"), limit=10)
    assert sorted((i.value["turn"], i.value["user"], i.value["answer"]) for i in items) == [
        (0, "My sister Eva is allergic to peanuts.", ""),
        (1, "lookup pasta recipes", "found notes on pasta recipes"),
    ]


def test_turns_keep_their_names_when_the_state_is_shortened(store):
    from langchain_core.messages import RemoveMessage

    agent, _ = build(store, retrieval="relevance")
    said = ["My sister is Eva", "I run a marathon in June", "lookup pasta recipes"]
    for text in said:
        agent.invoke(say(text), run(thread="A"))
    state = agent.get_state(run(thread="A"))
    oldest = [m for m in state.values["messages"]][:4]  # what a summary would replace
    agent.update_state(run(thread="A"), {"messages": [RemoveMessage(id=m.id) for m in oldest]})
    for text in ("My dentist is Dr. Lee", "lookup hiking maps"):
        agent.invoke(say(text), run(thread="A"))
    kept = sorted(i.value["user"] for i in store.search(session_namespace("alice"), limit=20))
    assert kept == sorted([*said, "My dentist is Dr. Lee", "lookup hiking maps"])


# ---- (8): concurrency --------------------------------------------------------------------------

USERS = {"alice": ["alps", "hiking", "glacier"], "bob": ["jazz", "saxophone", "vinyl"]}


def words_of(user):
    return USERS[user]


def script(user, thread):
    return [f"{w} {user} {thread}" for w in words_of(user)]


def check_no_mixing(model, store):
    owners = {w: user for user, ws in USERS.items() for w in ws}
    for request in model.requests:
        asker = next(owners[w] for w in request[-1].text.split() if w in owners)
        text = " ".join(m.text for m in request)
        strangers = [w for w, user in owners.items() if user != asker and w in text]
        assert not strangers, (asker, strangers, text)
    for user in USERS:
        for item in store.search(session_namespace(user), limit=100):
            assert user in item.value["user"]


def test_concurrent_runs_of_two_users_do_not_mix(store):
    agent, model = build(store, retrieval="both", limit=4)
    barrier = threading.Barrier(6, timeout=30)

    def conversation(user, thread):
        barrier.wait()
        for text in script(user, thread):
            agent.invoke(say(text), run(user, thread))

    jobs = [(u, f"{u}-{i}") for u in USERS for i in range(3)]
    with ThreadPoolExecutor(len(jobs)) as pool:
        for future in [pool.submit(conversation, u, t) for u, t in jobs]:
            future.result()
    assert len(model.requests) == len(jobs) * 3
    assert sum(bool(context_of(r)) for r in model.requests) >= 6  # other threads' turns came back
    check_no_mixing(model, store)
    assert len(store.search(session_namespace("alice"), limit=100)) == 9


async def test_concurrent_async_runs_of_two_users_do_not_mix(store):
    agent, model = build(store, retrieval="both", limit=4)

    async def conversation(user, thread):
        for text in script(user, thread):
            await agent.ainvoke(say(text), run(user, thread))

    await asyncio.gather(*(conversation(u, f"{u}-{i}") for u in USERS for i in range(3)))
    assert len(model.requests) == 18
    assert sum(bool(context_of(r)) for r in model.requests) >= 6
    check_no_mixing(model, store)
    assert len(store.search(session_namespace("bob"), limit=100)) == 9


# ---- options --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"save_mode": "summary"}, "save_mode must be one of 'input_output', 'full'"),
        ({"retrieval": "semantic"}, "retrieval must be one of 'recency', 'relevance', 'both'"),
        ({"limit": 0}, "limit must be a positive int"),
        ({"limit": -3}, "limit must be a positive int"),
        ({"limit": True}, "limit must be a positive int"),
        ({"limit": 2.5}, "limit must be a positive int"),
        ({"relevant_turns": 0}, "relevant_turns must be a positive int"),
        ({"user_id_key": ""}, "user_id_key must be a non-empty str"),
        *(
            ({"min_score": bad}, r"min_score must be a cosine similarity in \[-1, 1\], or None")
            for bad in (1.5, -1.01, float("nan"), float("inf"), True, "0.2", [0.2])
        ),
    ],
)
def test_bad_options_are_refused(store, options, message):
    with pytest.raises(ValueError, match=message):
        SessionMemoryMiddleware(store, **options)


@pytest.mark.parametrize("good", [-1, -1.0, 0, 0.2, 1, 1.0, None])
def test_min_score_accepts_any_cosine_or_none(store, good):
    middleware = SessionMemoryMiddleware(store, min_score=good)
    assert middleware.min_score == good
    assert middleware.min_score is None or isinstance(middleware.min_score, float)


def test_min_score_defaults_to_the_measured_floor(store):
    assert SessionMemoryMiddleware(store).min_score == DEFAULT_SESSION_MIN_SCORE == 0.2


def test_no_limit(store):
    agent, model = build(store, save_mode="full", limit=None)
    for text in ("lookup a", "lookup b", "lookup c", "lookup d", "lookup e", "lookup f"):
        agent.invoke(say(text), run())
    assert len(earlier(model.requests[-1])) == 20


# ---- inputs of several messages, structured answers, odd text, size -----------------------


def test_relevance_sends_every_user_message_of_the_current_input(store):
    """With ``retrieval="relevance"`` no earlier turn is sent, and the first of two user
    messages given in one input was treated as one: the model never saw the flight."""
    agent, model = build(store, retrieval="relevance")
    said = [("user", "My flight to Rome leaves at 9am"), ("user", "When should I leave home?")]
    agent.invoke({"messages": said}, run(thread="A"))
    humans = [m.text for m in model.requests[0] if isinstance(m, HumanMessage)]
    assert humans == ["My flight to Rome leaves at 9am", "When should I leave home?"]
    agent.invoke(say("thanks"), run(thread="A"))  # answered turns are earlier turns again
    assert [m.text for m in model.requests[-1] if isinstance(m, HumanMessage)] == ["thanks"]


class StructuredModel(RecordingModel):
    """Answers every user message through the ``Answer`` structured-output tool."""

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.requests.append(list(messages))
        text = next(m for m in reversed(messages) if isinstance(m, HumanMessage)).text
        call = {"name": "Answer", "args": {"text": f"sure: {text}"}, "id": f"c{len(messages)}"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


def test_a_structured_answer_is_kept_as_the_turns_answer(store):
    """``ToolStrategy`` answers with a tool call and its result: the earlier turn lost its
    answer (the user's message was sent alone, and indexed with an empty answer)."""
    from langchain.agents.structured_output import ToolStrategy
    from pydantic import BaseModel

    class Answer(BaseModel):
        text: str

    model = StructuredModel()
    agent = create_agent(
        model,
        response_format=ToolStrategy(Answer),
        middleware=[SessionMemoryMiddleware(store, retrieval="both", min_score=None)],
        checkpointer=InMemorySaver(),
    )
    agent.invoke(say("My flight is at 9am"), run(thread="S"))
    agent.invoke(say("what did you answer before?"), run(thread="S"))
    shown = shape(model.requests[-1])
    assert ("human", "My flight is at 9am") in shown
    assert ("ai", "", "Answer") in shown
    assert any(kind == "tool" and "sure: My flight is at 9am" in text for kind, text, *_ in shown)
    assert_valid(model.requests[-1])
    items = store.search(session_namespace("alice"), limit=10)
    answers = {i.value["user"]: i.value["answer"] for i in items}
    assert "sure: My flight is at 9am" in answers["My flight is at 9am"]


def test_a_lone_surrogate_or_nul_in_a_message_never_fails_the_run(store):
    agent, _ = build(store, retrieval="relevance")
    out = agent.invoke(say("my name is \ud800 Eva\x00"), run(thread="U"))
    assert out["messages"][-1].text.startswith("sure:")
    (item,) = store.search(session_namespace("alice"), limit=10)
    assert item.value["user"] == "my name is ? Eva "


def test_the_earlier_conversations_block_keeps_to_max_chars(store):
    agent, model = build(store, retrieval="relevance", min_score=None, max_chars=1000)
    log = "ERROR disk full on server oslo\n" * 2000
    agent.invoke(say("my server oslo says: " + log), run(thread="L1"))
    agent.invoke(say("what was wrong with my server oslo"), run(thread="L2"))
    block = context_of(model.requests[-1])
    assert "my server oslo says: ERROR disk full" in block
    assert len(block) < 1000 + len(CONTEXT_HEADER) + 100


def test_recency_needs_no_store_and_relevance_says_it_does():
    model = RecordingModel()
    agent = create_agent(model, middleware=[SessionMemoryMiddleware(None)])
    agent.invoke(say("hello"), run())
    assert [m.text for m in model.requests[-1] if isinstance(m, HumanMessage)] == ["hello"]
    for retrieval in ("relevance", "both"):
        with pytest.raises(ValueError, match="searches earlier turns in a store"):
            SessionMemoryMiddleware(None, retrieval=retrieval)


@pytest.mark.parametrize("user_id", [42, "", "  "])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_recency_without_a_store_never_reads_the_user(user_id, mode):
    """No store, nothing recorded: an app's user id the store would refuse is no error.

    ``InvalidUserIdError`` was raised for an int or empty ``user_id`` in ``configurable``.
    """
    model = RecordingModel()
    agent = create_agent(
        model, middleware=[SessionMemoryMiddleware(None, limit=4)], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "t1", "user_id": user_id}}
    for text in ("hello", "again"):
        if mode == "async":
            out = asyncio.run(agent.ainvoke(say(text), config))
        else:
            out = agent.invoke(say(text), config)
        assert out["messages"][-1].text == f"sure: {text}"
    assert [m.text for m in model.requests[-1] if isinstance(m, HumanMessage)] == [
        "hello",
        "again",
    ]


@pytest.mark.parametrize("bad", [0, 199, -5, True, 2.5, "4000"])
def test_bad_max_chars_are_refused(store, bad):
    with pytest.raises(ValueError, match="max_chars must be"):
        SessionMemoryMiddleware(store, max_chars=bad)


def test_an_earlier_turn_left_with_a_dangling_tool_call_sends_only_its_message():
    """A run that stopped after the model asked for a tool (no result, no answer), then a
    new message: the stopped turn's user message is sent, its dangling call is not."""
    from langchain_ltm.agents._history_view import history_view

    call = AIMessage("", tool_calls=[{"name": "lookup", "args": {}, "id": "c1"}])
    thread = [
        HumanMessage("q1"),
        AIMessage("a1"),
        HumanMessage("lookup pasta"),
        call,  # the run stopped here
        HumanMessage("never mind, what time is it?"),
    ]
    for limit in (0, 20):
        view = history_view(thread, "input_output", limit)
        kinds = [(m.type, m.text) for m in view.messages]
        assert ("ai", "") not in kinds
        assert kinds[-2:] == [("human", "lookup pasta"), ("human", "never mind, what time is it?")]
        assert_valid(view.messages)


def test_a_turn_that_stopped_with_a_call_unanswered_is_not_taken_as_answered():
    from langchain_ltm.agents._history_view import history_view
    from langchain_ltm.agents._turns import final_answer

    calls = [{"name": "lookup", "args": {}, "id": i} for i in ("a", "b")]
    stopped = [HumanMessage("lookup two things"), AIMessage("", tool_calls=calls)]
    stopped.append(ToolMessage("result a", tool_call_id="a"))
    assert final_answer(stopped) == []
    done = [*stopped, ToolMessage("result b", tool_call_id="b")]
    assert [m.type for m in final_answer(done)] == ["ai", "tool", "tool"]
    view = history_view([*stopped, HumanMessage("and now?")], "input_output", 20)
    assert_valid(view.messages)


def test_a_store_that_is_down_never_fails_a_turn_over_session_memory(store, caplog):
    """A failed search of earlier turns (before the answer) and a failed index of this
    turn (after it) failed the turn; each logs a warning now, and the answer comes."""
    import logging

    from langchain_ltm import BackendError

    agent, _ = build(store, retrieval="relevance")
    agent.invoke(say("my marathon is in May"), run(thread="D1"))

    def fail(*args, **kwargs):
        raise BackendError("connection dropped")

    real_batch = store.batch

    def batch_without_puts(ops):
        ops = list(ops)
        if any(type(op).__name__ == "PutOp" for op in ops):
            fail()
        return real_batch(ops)

    store.search = fail
    store.batch = batch_without_puts
    with caplog.at_level(logging.WARNING):
        out = agent.invoke(say("when is my marathon"), run(thread="D1"))  # noted already
    assert out["messages"][-1].text.startswith("sure:")
    assert "session memory search failed" in caplog.text
    assert "could not index" in caplog.text


def test_the_turns_shown_keep_within_max_chars_however_many_are_relevant():
    """Each turn's message and answer kept 40 characters at least: ten turns at
    ``max_chars=400`` made 797 characters of turns."""
    from langchain_ltm.agents._turns import render_turns

    turns = [{"user": f"message {i} " + "x" * 300, "answer": "y" * 300} for i in range(10)]
    block = render_turns(turns, 400)
    shown = block.count("User: ")
    texts = len(block) - len(CONTEXT_HEADER) - shown * len("\n1. User: \n   Assistant: ")
    assert shown == 5 and texts <= 400
    assert "1. User: message 0" in block and "5. User: message 4" in block


def test_a_summary_of_earlier_messages_is_not_a_turn_of_the_user():
    """langchain's SummarizationMiddleware puts its summary in a HumanMessage: it was
    indexed as something the user said, and became the recall query."""
    from langchain_ltm.agents._turns import latest_turns, recall_query

    summary = HumanMessage(
        "Here is a summary of the conversation to date: ...",
        additional_kwargs={"lc_source": "summarization"},
    )
    messages = [summary, HumanMessage("my marathon is in May"), AIMessage("noted")]
    assert [t.user for t in latest_turns(messages)] == ["my marathon is in May"]
    assert recall_query([HumanMessage("when is my marathon"), summary]) == "when is my marathon"
    assert latest_turns([summary]) == []


# ---- secrets: a pasted card is not indexed, so never replayed into another thread -----------

CARD = "4111 1111 1111 1111"


def indexed(store, user_id="alice"):
    return sorted(i.value["user"] for i in store.search(session_namespace(user_id), limit=20))


@pytest.mark.parametrize("use_async", [False, True])
def test_a_pasted_secret_is_not_indexed_nor_replayed_into_another_thread(store, caplog, use_async):
    """The store's default guard refused remember() of the card, but the session index kept
    the turn and replayed it into thread t2's system prompt (SECURITY.md: a pasted card must
    not leak into every later prompt)."""
    import logging

    agent, model = build(store, retrieval="relevance", min_score=None)

    def invoke(text, thread):
        if use_async:
            return asyncio.run(agent.ainvoke(say(text), run(thread=thread)))
        return agent.invoke(say(text), run(thread=thread))

    with caplog.at_level(logging.WARNING, logger="langchain_ltm.agents.session"):
        invoke(f"Use my card {CARD} for the order", "t1")
    assert indexed(store) == []
    assert "secret guard refused" in caplog.text and CARD not in caplog.text
    invoke("My order ships to Paris", "t1")  # a harmless turn is still indexed
    assert indexed(store) == ["My order ships to Paris"]
    # the thread's own history still holds the turn (the checkpointer's, not the index)
    state = agent.get_state(run(thread="t1")).values["messages"]
    assert CARD in state[0].text

    invoke("Which card for the order?", "t2")
    block = context_of(model.requests[-1])
    assert "My order ships to Paris" in block
    assert CARD not in str(model.requests[-1])


def test_an_answer_that_repeats_a_secret_is_not_indexed(store):
    agent, _ = build(store, retrieval="both")
    agent.invoke(say(f"lookup {CARD}"), run(thread="t1"))  # the tool result repeats it
    agent.invoke(say("password is hunter22"), run(thread="t1"))  # the answer repeats it
    assert indexed(store) == []


def test_session_secret_guard_follows_the_store_custom_or_off(emb):
    refuse_tea = lambda text: "no tea talk" if "tea" in text else None  # noqa: E731
    turns = [f"my card is {CARD}", "I like tea"]

    def kept(store, **options):
        agent, _ = build(store, retrieval="relevance", **options)
        for text in turns:
            agent.invoke(say(text), run(thread="t1"))
        return indexed(store)

    def fresh(**options):
        return LongTermMemoryStore(InMemoryVectorStore(emb), **options)

    assert kept(fresh()) == ["I like tea"]  # the store's guard (the built-in one)
    assert kept(fresh(secret_guard=False)) == sorted(turns)  # the store's: off
    assert kept(fresh(secret_guard=refuse_tea)) == [turns[0]]  # the store's: custom
    assert kept(fresh(), secret_guard=refuse_tea) == [turns[0]]  # ours, over the store's
    assert kept(fresh(), secret_guard=False) == sorted(turns)
    assert kept(fresh(secret_guard=False), secret_guard=True) == ["I like tea"]
    # any other BaseStore: the built-in guard
    other = InMemoryStore(index={"dims": 64, "embed": emb})
    assert kept(other) == ["I like tea"]


@pytest.mark.parametrize("bad", ["yes", 0, 1])
def test_a_bad_session_secret_guard_is_refused(store, bad):
    with pytest.raises(TypeError, match="secret_guard must be True or None"):
        SessionMemoryMiddleware(store, secret_guard=bad)
