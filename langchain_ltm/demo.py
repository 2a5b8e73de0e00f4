"""The main job, end to end: an agent that remembers a user across conversations.

Run it with ``make demo`` or ``python -m langchain_ltm.demo``. The chat model comes from
``LTM_CHAT_MODEL`` (an ``init_chat_model`` string such as ``openai:gpt-4o-mini``) when set;
otherwise a scripted model emits the tool calls a real model would, and says so.
"""

from __future__ import annotations

import argparse
import json
import os
import uuid
import warnings
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from pydantic import Field

from langchain_ltm.store import LongTermMemoryStore

SYSTEM_PROMPT = (
    "You are a helpful assistant with long-term memory. When the user tells you something "
    "durable about themselves, save it with remember_fact (one fact per call; pinned for "
    "profile facts such as their language). What you remember about the user is shown "
    "below when it is relevant; call recall_facts only to look for something else. Never "
    "store secrets."
)

# (user, thread, message, tool calls a real model would make for it)
SCRIPT: list[tuple[str, str, str, list[tuple[str, dict[str, Any]]]]] = [
    (
        "alice@example.com",
        "session-1",
        "Hi! Please answer me in Spanish from now on. I work on the payments team.",
        [
            ("remember_fact", {"fact": "Prefers answers in Spanish", "pinned": True}),
            ("remember_fact", {"fact": "Works on the payments team"}),
        ],
    ),
    (
        "alice@example.com",
        "session-1",
        "Keep my card for later: 4111 1111 1111 1111.",
        [("remember_fact", {"fact": "Card number is 4111 1111 1111 1111"})],
    ),
    # a new conversation: MemoryMiddleware puts alice's facts in the prompt, no tool call
    (
        "alice@example.com",
        "session-2",
        "Which language should you use with me, and what team am I on?",
        [],
    ),
    ("bob", "session-3", "Which language should you use with me, and what team am I on?", []),
    (
        "carol",
        "session-4",
        "I play the cello in a quartet.",
        [("remember_fact", {"fact": "Plays the cello in a quartet"})],
    ),
]
ERASED_USER = "carol"  # asks to be forgotten at the end: forget_user erases her everywhere


class ScriptedChatModel(GenericFakeChatModel):
    """Emits the tool calls a real model would for the demo's messages, then summarizes.

    It only knows the demo script; it is here so the demo runs with no API key.
    """

    messages: Any = iter(())
    script: dict[str, list[tuple[str, dict[str, Any]]]] = Field(default_factory=dict)
    disable_streaming: bool = True

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:  # noqa: D102
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            return _reply(_summarize(messages))
        human = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
        calls = self.script.get(str(human.content), [])
        tool_calls = [
            {"name": n, "args": a, "id": f"call_{uuid.uuid4().hex[:8]}", "type": "tool_call"}
            for n, a in calls
        ]
        return _reply("" if tool_calls else _from_memory(messages), tool_calls)


def _reply(content: str, tool_calls: list[dict[str, Any]] | None = None) -> ChatResult:
    message = AIMessage(content=content, tool_calls=tool_calls or [])
    return ChatResult(generations=[ChatGeneration(message=message)])


def _from_memory(messages: Sequence[BaseMessage]) -> str:
    """Answer from the memory block MemoryMiddleware put in the system prompt."""
    system = next((m for m in messages if isinstance(m, SystemMessage)), None)
    text = system.text if system is not None else ""
    facts = [line[2:] for line in text.splitlines() if line.startswith("- ")]
    if not facts:
        return "I don't remember anything about you yet."
    return "From what I remember (no tool call needed): " + "; ".join(facts)


def _summarize(messages: Sequence[BaseMessage]) -> str:
    lines = []
    for message in messages[::-1]:
        if not isinstance(message, ToolMessage):
            break
        payload = json.loads(str(message.content))
        if "facts" in payload:
            facts = [f["fact"] for f in payload["facts"]]
            lines.append("I remember: " + "; ".join(facts) if facts else "I know nothing yet.")
        elif payload.get("action") == "rejected":
            lines.append("I did not save that: " + payload["reason"])
        elif "action" in payload:
            lines.append(f"Noted ({payload['action']}): {payload.get('fact')}")
    return "\n".join(reversed(lines))


def chat_model() -> tuple[BaseChatModel, str]:
    """The model named by LTM_CHAT_MODEL, else the scripted one, with a line saying which."""
    name = os.environ.get("LTM_CHAT_MODEL")
    if name:
        from langchain.chat_models import init_chat_model

        return init_chat_model(name), f"chat model: {name} (from LTM_CHAT_MODEL)"
    script = {message: calls for _, _, message, calls in SCRIPT}
    note = (
        "chat model: SCRIPTED (no LTM_CHAT_MODEL set) - it emits the tool calls a real model "
        "would; set LTM_CHAT_MODEL=openai:gpt-4o-mini to use a real one"
    )
    return ScriptedChatModel(script=script), note


def run_demo(store: LongTermMemoryStore, model: BaseChatModel) -> None:
    """Play the script against an agent built with create_agent and print what happens."""
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_ltm.agents.erase import forget_user
    from langchain_ltm.agents.middleware import MemoryMiddleware

    saver = InMemorySaver()
    agent = create_agent(
        model,
        middleware=[MemoryMiddleware(store)],  # automatic recall + the memory tools
        store=store,
        checkpointer=saver,
        system_prompt=SYSTEM_PROMPT,
    )
    for user_id, thread, text, _ in SCRIPT:
        print(f"\n[{user_id} / {thread}] user: {text}")
        config: RunnableConfig = {"configurable": {"user_id": user_id, "thread_id": thread}}
        result = agent.invoke({"messages": [{"role": "user", "content": text}]}, config)
        for message in result["messages"]:
            if isinstance(message, ToolMessage) and message in result["messages"][-4:]:
                print(f"  tool {message.name}: {message.content}")
        print(f"  assistant: {result['messages'][-1].content}")
    print(f"\n[{ERASED_USER}] asks to be forgotten: forget_user(store, {ERASED_USER!r}, ...)")
    report = forget_user(store, ERASED_USER, checkpointer=saver)
    print(f"  erased: {json.dumps(report.to_dict())}")
    print("\nWhat is stored now:")
    _print_table(store, [u for u in dict.fromkeys(u for u, *_ in SCRIPT)])


def _print_table(store: LongTermMemoryStore, users: list[str]) -> None:
    rows = [("user", "fact id", "fact", "updated")]
    for user_id in users:
        facts = store.list_all(user_id)
        if not facts:
            rows.append((user_id, "-", "(nothing)", "-"))
        for fact in facts:
            stamp = fact.updated_at.strftime("%Y-%m-%d %H:%M:%S")
            rows.append((user_id, fact.id[:8], fact.content, stamp))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for n, row in enumerate(rows):
        print("  " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
        if n == 0:
            print("  " + "-+-".join("-" * w for w in widths))


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of ``python -m langchain_ltm.demo``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--store", default=None, help="store URL (default: the SQLite file memories.db in LTM_HOME)"
    )
    args = parser.parse_args(argv)
    from langchain_ltm.defaults import DefaultStoreWarning, open_store

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DefaultStoreWarning)
        store, where = open_store(args.store)
    for warning in caught:  # the old default (a Qdrant folder) is still in use
        print(f"note: {warning.message}")
    with store:
        model, note = chat_model()
        print(note)
        print(f"store: {where} (run the demo again: what alice told it is still there)")
        run_demo(store, model)


if __name__ == "__main__":
    main()
