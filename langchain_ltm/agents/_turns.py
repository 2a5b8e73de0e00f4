"""A thread's turns: split at each user message, answered, stored and rendered again.

A turn starts at a user message and holds what follows it up to the next one. These pure
helpers find a turn's final answer (:func:`final_answer`); the current input
(:func:`current_turn`, from the user messages ``before_agent`` recorded with
:func:`record_input`: the one definition extraction and session memory share) and its
turns (:func:`latest_turns`); the recall query of a model call (:func:`recall_query`: the
one rule ``MemoryMiddleware`` and ``memory_pre_model_hook`` share); the value a finished
turn is indexed with (:func:`turn_value`); and the "Earlier conversations" block that
brings stored turns back into the system message (:func:`render_turns`,
:func:`with_context`). Used by
:class:`~langchain_ltm.agents.session.SessionMemoryMiddleware`,
:class:`~langchain_ltm.agents.middleware.MemoryMiddleware`,
:func:`~langchain_ltm.agents.hooks.memory_pre_model_hook` and
:mod:`langchain_ltm.agents._history_view`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_ltm._utf8 import storable
from langchain_ltm.agents._recall import cut, said_by_user, searchable
from langchain_ltm.facts.versions import format_time

CONTEXT_HEADER = (
    "Earlier conversations with this user (most relevant first; they may be out of date):"
)


@dataclass(frozen=True)
class Turn:
    """One finished turn: its number in the thread, the user's message, the final answer.

    ``message_id``: the user message's id (LangGraph gives every message of the state
    one), which names the turn for good; its number changes when the thread's state is
    shortened (a summary replacing the oldest messages).
    """

    number: int
    user: str
    answer: str
    message_id: str | None = None

    @property
    def key(self) -> str:
        """What names the turn in its thread: the message id, else the number."""
        return self.message_id if self.message_id else str(self.number)


def split_turns(
    messages: Sequence[AnyMessage],
) -> tuple[list[AnyMessage], list[list[AnyMessage]]]:
    """Messages before the first user message, and the turns (each starts at one).

    Example:
        >>> head, turns = split_turns([AIMessage("hi"), HumanMessage("a"), AIMessage("b")])
        >>> [m.type for m in head], [[m.type for m in t] for t in turns]
        (['ai'], [['human', 'ai']])
    """
    head: list[AnyMessage] = []
    turns: list[list[AnyMessage]] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            turns.append([message])
        elif turns:
            turns[-1].append(message)
        else:
            head.append(message)
    return head, turns


def final_answer(turn: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The messages that answer a finished turn (``[]``: none).

    The last AI message without tool calls; or, for a run that ended on a tool (a
    structured response, ``ToolStrategy``, or a ``return_direct`` tool), the last AI
    message's tool calls with their results, which then answer the user.

    Example:
        >>> call = AIMessage("", tool_calls=[{"name": "Answer", "args": {}, "id": "1"}])
        >>> done = ToolMessage("Returning structured response: 9am", tool_call_id="1")
        >>> [m.type for m in final_answer([HumanMessage("q"), call, done])]
        ['ai', 'tool']
    """
    for message in reversed(turn):
        if isinstance(message, AIMessage) and not message.tool_calls:
            return [message]
    if not turn or not isinstance(turn[-1], ToolMessage):
        return []
    start = len(turn) - 1
    while start > 0 and isinstance(turn[start], ToolMessage):
        start -= 1
    block = list(turn[start:])
    call = block[0]
    if not isinstance(call, AIMessage) or not call.tool_calls:
        return []
    # every call answered (a result missing: a run that stopped, not an answer)
    answered = {m.tool_call_id for m in block[1:] if isinstance(m, ToolMessage)}
    return block if {c["id"] for c in call.tool_calls} <= answered else []


def answer_text(answer: Sequence[AnyMessage]) -> str:
    """The text of :func:`final_answer`'s messages: the AI message's, or the tool results'."""
    if len(answer) == 1:
        return answer[0].text
    return "\n".join(m.text for m in answer if isinstance(m, ToolMessage))


def tool_blocks(messages: Sequence[AnyMessage]) -> list[list[AnyMessage]]:
    """Group an AI message that calls tools with the tool results that follow it.

    Example:
        >>> call = AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "1"}])
        >>> blocks = tool_blocks([call, ToolMessage("r", tool_call_id="1"), AIMessage("ok")])
        >>> [[m.type for m in b] for b in blocks]
        [['ai', 'tool'], ['ai']]
    """
    blocks: list[list[AnyMessage]] = []
    open_ids: set[str] = set()
    for message in messages:
        if isinstance(message, ToolMessage) and message.tool_call_id in open_ids:
            blocks[-1].append(message)
            continue
        blocks.append([message])
        open_ids = set()
        if isinstance(message, AIMessage):
            open_ids = {c["id"] for c in message.tool_calls if c["id"]}
    return blocks


def latest_turns(
    messages: Sequence[AnyMessage], waiting: Sequence[AnyMessage] | None = None
) -> list[Turn]:
    """The turns of the current input (:func:`current_turn`): one per user message.

    One input may hold several user messages (a fact, then a question): each is a turn of
    its own, and only the last has the answer. A turn's number counts the user messages
    before it in ``messages``.

    Example:
        >>> latest_turns([HumanMessage("a"), AIMessage("b"), HumanMessage("c"), AIMessage("d")])
        [Turn(number=1, user='c', answer='d', message_id=None)]
        >>> [t.user for t in latest_turns([HumanMessage("c"), HumanMessage("e"), AIMessage("f")])]
        ['c', 'e']
    """
    _, thread = split_turns(messages)
    numbers = {id(turn[0]): number for number, turn in enumerate(thread)}
    _, turns = split_turns(current_turn(messages, waiting))
    out: list[Turn] = []
    number = len(thread)
    for turn in reversed(turns):  # a message summarized away: numbered before the next one
        number = numbers.get(id(turn[0]), max(number - 1, 0))
        if not said_by_user(turn[0]):  # a summary of earlier messages: not a turn of the user
            continue
        message_id = str(turn[0].id) if turn[0].id else None
        out.append(Turn(number, turn[0].text, answer_text(final_answer(turn)), message_id))
    return out[::-1]


def current_input(turns: Sequence[Sequence[AnyMessage]]) -> int:
    """Where the latest input starts: the last turn, and the unanswered ones before it."""
    first = len(turns) - 1
    while first > 0 and not final_answer(turns[first - 1]):
        first -= 1
    return max(first, 0)


def input_messages(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The user messages a run's input added: those at the end of the state.

    Example:
        >>> said = [HumanMessage("a"), AIMessage("b"), HumanMessage("c"), HumanMessage("d")]
        >>> [m.text for m in input_messages(said)]
        ['c', 'd']
    """
    start = len(messages)
    while start > 0 and isinstance(messages[start - 1], HumanMessage):
        start -= 1
    return [m for m in messages[start:] if said_by_user(m)]


def record_input(state: Any, key: str) -> dict[str, Any] | None:
    """``before_agent``'s state update: the input's user messages join those waiting.

    The messages wait under ``key`` until ``after_agent`` handles them and clears it. A run
    that stops before its answer (a human-in-the-loop pause the user abandons, a model
    error after a tool call) leaves them waiting, so the next run that ends handles them
    too; and their copies survive a summary that removes them from the thread mid-turn.
    """
    waiting = list(state.get(key) or [])
    known = {m.id for m in waiting if m.id}
    new = [m for m in input_messages(state.get("messages") or []) if not m.id or m.id not in known]
    return {key: [*waiting, *new]} if new else None


def recorded(state: Any, key: str) -> list[AnyMessage] | None:
    """The user messages :func:`record_input` keeps under ``key`` (``None``: no record)."""
    waiting = state.get(key)
    return None if waiting is None else list(waiting)


def clear_record(state: Any, key: str) -> dict[str, Any] | None:
    """``after_agent``'s state update once the input's turn is handled: the record cleared."""
    return {key: []} if state.get(key) else None


def current_turn(
    messages: Sequence[AnyMessage], waiting: Sequence[AnyMessage] | None = None
) -> list[AnyMessage]:
    """The messages of the current input: its user messages and everything after them.

    The one definition of "the current input" that extraction and session memory share.
    ``waiting``: the user messages :func:`record_input` kept since the last run that ended
    (``[]``: the user said nothing new); those still in ``messages`` start the turn, and
    those a summary removed come first, copied. ``None`` (a state without that record), or
    a record holding a message without an id (a state that gives none: nothing can be
    matched): the last turn and the turns before it that have no final answer
    (:func:`current_input`).

    Example:
        >>> call = AIMessage("", tool_calls=[{"name": "book", "args": {}, "id": "1"}])
        >>> paused = HumanMessage("I'm vegan; book it", id="h1")
        >>> thread = [HumanMessage("hi", id="h0"), AIMessage("hello"), paused, call,
        ...           HumanMessage("never mind", id="h2"), AIMessage("Sure.")]
        >>> [m.text for m in current_turn(thread, [paused, thread[4]])]
        ["I'm vegan; book it", '', 'never mind', 'Sure.']
        >>> [m.text for m in current_turn(thread[4:], [paused, thread[4]])]  # summarized away
        ["I'm vegan; book it", 'never mind', 'Sure.']
        >>> said = [HumanMessage("hi"), AIMessage("hello"), HumanMessage("bye"), AIMessage("ok")]
        >>> [m.text for m in current_turn(said, [said[2]])]  # no ids: the thread tells
        ['bye', 'ok']
    """
    if waiting is None or any(not m.id for m in waiting):
        _, turns = split_turns(messages)
        if not any(said_by_user(turn[0]) for turn in turns):
            return []
        return [m for turn in turns[current_input(turns) :] for m in turn]
    if not waiting:
        return []
    where = {m.id: i for i, m in enumerate(messages) if m.id}
    kept = [where[m.id] for m in waiting if m.id in where]
    gone = [m for m in waiting if m.id not in where]
    if kept:
        start = min(kept)
    else:  # all summarized away: what followed the summary
        start = next(
            (i + 1 for i in range(len(messages) - 1, -1, -1) if _is_summary(messages[i])), 0
        )
    return [*gone, *messages[start:]]


def input_query(
    messages: Sequence[AnyMessage], waiting: Sequence[AnyMessage] | None
) -> AnyMessage | None:
    """The latest user message of the current input (``None``: none).

    The last one in ``messages``; or, when a summary removed it mid-turn, its copy in
    ``waiting``, so the turn's later model calls still search for what the user asked.
    """
    ids = {m.id for m in messages if m.id}
    if waiting and waiting[-1].id and waiting[-1].id not in ids:
        return waiting[-1]
    return next((m for m in reversed(messages) if said_by_user(m)), None)


def recall_query(
    messages: Sequence[AnyMessage], waiting: Sequence[AnyMessage] | None = None
) -> str | None:
    """The query automatic recall searches with (``None``: none, or nothing to search).

    The one rule ``MemoryMiddleware`` and ``memory_pre_model_hook`` share: the latest
    user message of the current input (:func:`input_query`; a summary of earlier messages
    is not the user's), its text parts only (an image or a file adds nothing), through
    :func:`~langchain_ltm.agents._recall.searchable` (its first 2,000 characters; a
    message of punctuation only has nothing to search). ``waiting``: the record of
    :func:`record_input` (``None``: a caller that keeps none, the pre-model hook).

    Example:
        >>> summary = HumanMessage("Summary: ...", additional_kwargs={"lc_source": "summarization"})
        >>> recall_query([HumanMessage("where do I live?"), AIMessage("Oslo"), summary])
        'where do I live?'
        >>> photo = {"type": "image", "url": "https://example.com/cat.png"}
        >>> recall_query([HumanMessage([{"type": "text", "text": "what is it?"}, photo])])
        'what is it?'
        >>> recall_query([summary], [HumanMessage("book a table", id="h1")])  # summarized away
        'book a table'
        >>> recall_query([HumanMessage("?!")]) is None
        True
    """
    said = input_query(messages, waiting)
    return None if said is None else searchable(said.text)


def _is_summary(message: Any) -> bool:
    return isinstance(message, HumanMessage) and not said_by_user(message)


def turn_value(thread_id: str | None, turn: Turn, at: datetime) -> dict[str, Any]:
    """The stored value of one indexed turn (layout in :mod:`langchain_ltm.agents._registry`).

    ``thread_id`` is the run's own (``None`` for a run without one: no checkpoint thread
    to erase). A NUL or a lone surrogate in the texts is replaced (:func:`storable`): a turn
    never fails over what memory cannot store.
    """
    user, answer = storable(turn.user), storable(turn.answer)
    return {
        "thread_id": thread_id,
        "turn": turn.number,
        "message_id": turn.message_id,
        "user": user,
        "answer": answer,
        "text": f"User: {user}\nAssistant: {answer}",
        "at": format_time(at),
    }


def render_turns(values: Sequence[dict[str, Any]], max_chars: int = 4000) -> str:
    """The "Earlier conversations" block for the system message.

    Each turn gets ``max_chars / len(values)`` characters, half for the user's message and
    half for the answer (a text that does not fit is cut, ending in ``…``), and at least
    40 for each: turns past ``max_chars / 80`` are left out, so the turns' text stays within
    ``max_chars`` (ten turns at ``max_chars=400`` made 797).

    Example:
        >>> print(render_turns([{"user": "I like tea", "answer": "Noted."}]))
        Earlier conversations with this user (most relevant first; they may be out of date):
        1. User: I like tea
           Assistant: Noted.
        >>> len(render_turns([{"user": "x" * 9000, "answer": "ok"}], 400)) < 500
        True
    """
    values = values[: max(max_chars // (2 * _LEAST_SHARE), 1)]
    share = max(max_chars // max(len(values), 1) // 2, _LEAST_SHARE)
    lines = [CONTEXT_HEADER]
    for i, value in enumerate(values, start=1):
        lines.append(f"{i}. User: {cut(str(value.get('user', '')), share)}")
        lines.append(f"   Assistant: {cut(str(value.get('answer', '')), share)}")
    return "\n".join(lines)


_LEAST_SHARE = 40
"""The fewest characters a turn's message (and its answer) is cut to."""


def with_context(system: SystemMessage | None, block: str) -> SystemMessage:
    """The system message with ``block`` appended (a new message; the original is unchanged)."""
    if system is None:
        return SystemMessage(block)
    if isinstance(system.content, str):
        content: Any = f"{system.content}\n\n{block}" if system.content else block
    else:
        content = [*system.content, {"type": "text", "text": block}]
    return system.model_copy(update={"content": content})
