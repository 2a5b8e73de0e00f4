"""The history a model call is sent: earlier turns compacted and trimmed, the current one whole.

:func:`history_view` is the pure core of
:class:`~langchain_ltm.agents.session.SessionMemoryMiddleware`'s recency window: it shapes
the earlier turns (``save_mode``), keeps the most recent within ``limit`` messages (never
a tool result without its call), and says which turns it kept, so relevance retrieval does
not bring them back twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_ltm.agents._turns import current_input, final_answer, split_turns, tool_blocks

SaveMode = Literal["input_output", "full"]


@dataclass(frozen=True)
class HistoryView:
    """What the model is sent of a thread.

    Attributes:
        messages: The request's messages (system messages of the history, the earlier turns
            kept, then the current turn whole).
        turns: Numbers of the earlier turns (whole or in part) among ``messages``.
        ids: The message ids of those turns' user messages (the ones that have an id).
    """

    messages: list[AnyMessage]
    turns: frozenset[int]
    ids: frozenset[str] = frozenset()


def history_view(
    messages: Sequence[AnyMessage], save_mode: SaveMode, limit: int | None
) -> HistoryView:
    """The messages to send: earlier turns compacted and trimmed, the current turn whole.

    Args:
        messages: The request's messages (the thread, without the agent's system prompt).
        save_mode: ``"input_output"`` keeps each earlier turn's user message and final
            answer; ``"full"`` keeps earlier turns as they are.
        limit: Maximum number of earlier messages (``None``: no cap; ``0``: none).

    Returns:
        The :class:`HistoryView`.

    Example:
        >>> call = AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "1"}])
        >>> thread = [HumanMessage("q1"), call, ToolMessage("r", tool_call_id="1"),
        ...           AIMessage("a1"), HumanMessage("q2")]
        >>> [m.text for m in history_view(thread, "input_output", 20).messages]
        ['q1', 'a1', 'q2']
        >>> len(history_view(thread, "full", 20).messages), history_view(thread, "full", 2).turns
        (5, frozenset({0}))
    """
    head, turns = split_turns(messages)
    if not turns:
        return HistoryView(list(messages), frozenset())
    first = current_input(turns)  # an input may hold several user messages: all are sent
    # of the unanswered turns before the last, their user messages (a tool call left
    # without its result, by a run that stopped, would make the request invalid)
    waiting = [m for turn in turns[first:-1] for m in turn if isinstance(m, HumanMessage)]
    earlier, current = turns[:first], [*waiting, *turns[-1]]
    pinned: list[AnyMessage] = [m for m in head if isinstance(m, SystemMessage)]
    units: list[tuple[int | None, list[AnyMessage]]] = []
    preamble: list[AnyMessage] = [m for m in head if not isinstance(m, SystemMessage)]
    for number, turn in enumerate([preamble, *earlier], start=-1):
        pinned += [m for m in turn if isinstance(m, SystemMessage)]
        kept: list[AnyMessage] = [m for m in turn if not isinstance(m, SystemMessage)]
        if save_mode == "input_output":
            kept = _compact(kept, is_turn=number >= 0)
        if kept:
            units.append((number if number >= 0 else None, kept))
    kept_units = _trim(units, limit)
    out = [*pinned]
    for _, unit in kept_units:
        out += unit
    numbers = {n for n, _ in kept_units if n is not None}
    ids = {str(earlier[n][0].id) for n in numbers if earlier[n][0].id}
    return HistoryView([*out, *current], frozenset(numbers), frozenset(ids))


def _compact(messages: list[AnyMessage], *, is_turn: bool) -> list[AnyMessage]:
    if not is_turn:  # before the first user message: keep what is not a tool exchange
        return [
            m
            for m in messages
            if not isinstance(m, ToolMessage) and not (isinstance(m, AIMessage) and m.tool_calls)
        ]
    return [messages[0], *final_answer(messages)]


def _trim(
    units: list[tuple[int | None, list[AnyMessage]]], limit: int | None
) -> list[tuple[int | None, list[AnyMessage]]]:
    """The most recent units within ``limit`` messages; the oldest one kept may be partial."""
    if limit is None:
        return units
    kept: list[tuple[int | None, list[AnyMessage]]] = []
    budget = limit
    for number, unit in reversed(units):
        if len(unit) <= budget:
            kept.append((number, unit))
            budget -= len(unit)
            continue
        if number is not None and budget >= 2:  # its user message and its latest whole blocks
            tail: list[AnyMessage] = []
            for block in reversed(tool_blocks(unit[1:])):
                if len(tail) + len(block) > budget - 1:
                    break
                tail[:0] = block
            if tail:
                kept.append((number, [unit[0], *tail]))
        break
    kept.reverse()
    return kept
