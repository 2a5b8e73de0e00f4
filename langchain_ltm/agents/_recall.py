"""Automatic recall: the user's pinned and relevant facts as a block for the system prompt.

Shared by ``MemoryMiddleware`` (``wrap_model_call``) and :func:`memory_pre_model_hook`
(``create_react_agent``). The logic is a sans-I/O generator, run sync or async.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timezone
from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage

from langchain_ltm._steps import Logic, Step, call
from langchain_ltm._utf8 import storable
from langchain_ltm.errors import BackendError, InvalidFactError
from langchain_ltm.facts.model import Fact, RecalledFact
from langchain_ltm.facts.reads import MAX_LIMIT as MAX_RECALL_LIMIT
from langchain_ltm.facts.text import validate_text
from langchain_ltm.store import LongTermMemoryStore

__all__ = [
    "DEFAULT_MIN_SCORE",
    "RecallOptions",
    "cut",
    "recall_block",
    "said_by_user",
    "with_memory",
]

logger = logging.getLogger(__name__)

DEFAULT_HEADER = (
    "## What you remember about this user\n"
    "Facts saved in earlier conversations. Use them when they help; they may be out of date, "
    "and the user's words in this conversation win."
)


DEFAULT_MIN_SCORE = 0.15
"""With all-MiniLM-L6-v2, questions and the facts that answer them score 0.16-0.81 (10
hand-made pairs), unrelated pairs 0.06 at the median and 0.22 at the 99th percentile: a
weak fact in the prompt costs less than a missing one, and ``limit`` caps the block."""


@dataclass(frozen=True)
class RecallOptions:
    """How much automatic recall adds to a model call.

    Attributes:
        limit: Most relevant facts added (pinned facts come on top).
        min_score: Relevant facts scoring below this cosine similarity are left out.
        max_chars: Size budget of the whole block, in characters (pinned facts first), the
            header included: at least :func:`least_max_chars` (258 with the default
            header), so one fact always fits.
        header: The block's first lines.
        show_dates: Start each fact's line with the date its text was said or remembered
            (``valid_from``, UTC, e.g. ``[2023-05-08]``), for questions about when.
    """

    limit: int = 5
    min_score: float = DEFAULT_MIN_SCORE
    max_chars: int = 2000
    header: str = DEFAULT_HEADER
    show_dates: bool = False

    def __post_init__(self) -> None:
        if (
            not isinstance(self.limit, int)
            or isinstance(self.limit, bool)
            or not 0 <= self.limit <= MAX_RECALL_LIMIT
        ):
            raise ValueError(
                f"recall_limit must be an int from 0 to {MAX_RECALL_LIMIT} (recall's most), "
                f"got {self.limit!r}."
            )
        if not isinstance(self.min_score, (int, float)) or not -1.0 <= self.min_score <= 1.0:
            raise ValueError(f"min_score is a cosine in [-1, 1], got {self.min_score!r}.")
        least = least_max_chars(self.header)
        if (
            not isinstance(self.max_chars, int)
            or isinstance(self.max_chars, bool)
            or self.max_chars < least
        ):
            raise ValueError(
                f"max_chars must be an int >= {least}: the header ({len(self.header)} "
                f"characters), a heading and one fact cut to {_MIN_CUT}; got "
                f"{self.max_chars!r}. A shorter header= lowers that floor."
            )
        if not isinstance(self.show_dates, bool):
            raise TypeError(f"show_dates must be True or False, got {self.show_dates!r}.")


def least_max_chars(header: str) -> int:
    """The smallest ``max_chars`` that holds ``header``, a heading and one fact.

    A budget under the header's length passed the checks (100 did, the default header is
    171 characters) and then left every fact, pinned ones too, out of the prompt.

    Example:
        >>> least_max_chars(DEFAULT_HEADER)
        258
    """
    return len(header) + len("\n" + _LONGEST_HEADING + "\n") + _MIN_CUT


def said_by_user(message: Any) -> bool:
    """Whether ``message`` is a human message the user wrote.

    Not the summary langchain's ``SummarizationMiddleware`` puts in place of earlier
    messages (a ``HumanMessage`` too), which was taken for the user's words: the recall
    query, extracted, and indexed as a turn.
    """
    return isinstance(message, HumanMessage) and (
        getattr(message, "additional_kwargs", {}).get("lc_source") != "summarization"
    )


def searchable(text: str, max_chars: int = 2000) -> str | None:
    r"""``text`` as a recall query, or ``None`` if it has none.

    Its first 2,000 characters (``max_chars``, the store's ``max_fact_chars``, if fewer).
    A message of punctuation only ("?", "...") has nothing to search for, and recall would
    refuse it; a NUL or a lone surrogate is replaced, not refused. A turn never fails over
    what memory cannot search.

    Example:
        >>> searchable("  where do I live?  "), searchable("?!"), searchable("a\x00b")
        ('where do I live?', None, 'a b')
    """
    limit = min(2000, max_chars)
    text = storable(text).strip()[:limit]
    try:
        return validate_text(text, "query", limit)
    except InvalidFactError:
        return None


def recall_block(
    store: LongTermMemoryStore, user_id: str, query: str | None, options: RecallOptions
) -> Logic[str | None]:
    """Pinned facts, then the facts most relevant to ``query``: one embedding call at most.

    Pinned facts come on top of ``options.limit``: recall is asked for that many more
    (within recall's most), so the pinned ones it finds again, which the block shows once
    under "Profile", take none of the relevant facts' places.

    An engine that fails (``BackendError``: the database is down) gives no block and a
    warning: the model answers without memories rather than the turn failing.
    """
    try:
        pinned: list[Fact] = yield call(store, "pinned", user_id)
        relevant: list[RecalledFact] = []
        if query:  # within a store's own query limit (max_fact_chars) too
            query = searchable(query, getattr(store, "max_fact_chars", 2000))
        if query and options.limit:
            wanted = min(options.limit + len(pinned), MAX_RECALL_LIMIT)
            relevant = yield Step(
                lambda: store.recall(user_id, query, wanted, min_score=options.min_score),
                lambda: store.arecall(user_id, query, wanted, min_score=options.min_score),
            )
    except BackendError as exc:
        logger.warning("memory recall failed; answering without memories: %s", exc)
        return None
    return render_block(pinned, relevant, options)


def cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, ending in ``…`` when it was longer.

    Example:
        >>> cut("green tea", 20), cut("green tea", 6)
        ('green tea', 'green…')
    """
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_block(
    pinned: Sequence[Fact], relevant: Sequence[RecalledFact], options: RecallOptions
) -> str | None:
    """The block, within ``max_chars``; ``None`` when there is nothing to say.

    Facts are taken in order while they fit, each cut (ending in ``…``) to a quarter of
    the budget at most. One that does not fit is cut to the room left when at least
    :data:`_MIN_CUT` characters are left, else left out, and the facts after it still get
    their turn: one long fact never hides the rest (the recall tool returns whole texts).
    A section heading only appears with a fact under it. At most ``options.limit``
    relevant facts, the pinned ones left out of them (they are shown under "Profile").
    """
    cap = max(_MIN_CUT, options.max_chars // 4)
    seen = {f.id for f in pinned}
    extra = [f for f in relevant if f.id not in seen][: options.limit]
    sections = [
        (_PROFILE, [_line(f, options.show_dates) for f in pinned]),
        (_LONGEST_HEADING, [_line(f, options.show_dates) for f in extra]),
    ]
    out = options.header
    for heading, lines in sections:
        started = False
        for line in lines:
            line = cut(line, cap)
            room = options.max_chars - len(out) - 1 - (0 if started else len(heading) + 1)
            if len(line) > room:
                if room < _MIN_CUT:
                    continue
                line = cut(line, room)
            if not started:
                out += "\n" + heading
                started = True
            out += "\n" + line
    return out if out != options.header else None


_MIN_CUT = 60
"""The fewest characters a fact that does not fit is cut to (less: it is left out)."""

_PROFILE = "Profile:"
_LONGEST_HEADING = "Relevant to this message:"
"""The block's section headings (the longer one counts in :func:`least_max_chars`)."""


def _line(fact: Fact, show_dates: bool) -> str:
    """``- text``, or ``- [2023-05-08] text`` with the date the text became the fact's."""
    if not show_dates:
        return f"- {fact.content}"
    when = fact.valid_from.astimezone(timezone.utc).date().isoformat()
    return f"- [{when}] {fact.content}"


def with_memory(system: SystemMessage | None, block: str | None) -> SystemMessage | None:
    """The system message with the block appended (a new message; the original is kept)."""
    if block is None:
        return system
    if system is None:
        return SystemMessage(content=block)
    content = system.content
    if isinstance(content, str):
        return SystemMessage(content=f"{content}\n\n{block}" if content else block)
    return SystemMessage(content=[*content, {"type": "text", "text": block}])


def memory_messages(messages: Sequence[AnyMessage], block: str | None) -> list[AnyMessage]:
    """``messages`` with the block as (or appended to) a leading system message."""
    out = list(messages)
    if block is None:
        return out
    if out and isinstance(out[0], SystemMessage):
        merged = with_memory(out[0], block)
        assert merged is not None
        return [merged, *out[1:]]
    return [SystemMessage(content=block), *out]
