"""Fact extraction after an agent turn: one structured-output call, then ``remember``.

The model reads the turn's messages and the user's related facts (numbered, so it never
sees or invents ids) and returns facts to remember and stored facts to supersede. Writes go
through the store: dedup, versions, the secret guard, and (``ChatModelResolver`` on the same
model) the ambiguous band. :class:`BackgroundExtractor` runs jobs off the request path,
debounced and serialized per thread.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from langchain_ltm._steps import Logic, Step, call, run_sync
from langchain_ltm._utf8 import storable
from langchain_ltm.agents._recall import cut, said_by_user, searchable
from langchain_ltm.facts.model import RecalledFact, RememberResult
from langchain_ltm.facts.resolvers import ChatModelResolver, internal_call_config
from langchain_ltm.facts.text import normalize_fact
from langchain_ltm.store import LongTermMemoryStore

__all__ = ["BackgroundExtractor", "ExtractionJob", "extract"]

logger = logging.getLogger(__name__)

_INSTRUCTIONS = """You maintain long-term memory about one user of an assistant.
Read the conversation turn and the facts already stored about the user. Return:
- facts: new durable facts about the user worth remembering in future conversations \
(preferences, details of their life or work, people and things in it). One short, \
self-contained sentence each, saying whom it is about ("My sister is allergic to peanuts"). \
Mark as pinned the profile facts that matter in every conversation (name, language, how to \
address them, standing preferences about answers).
- supersede: stored facts (by number) that the turn shows are no longer true, with their \
new text ("Lives in Paris" -> "Moved to Berlin").
Never return passwords, card or account numbers, keys or other secrets, nor facts about \
the assistant, small talk, or things true only for this conversation. Return empty lists \
when there is nothing to remember."""


class _NewFact(BaseModel):
    model_config = ConfigDict(extra="ignore")
    content: str = Field(description="One short, self-contained fact about the user.")
    pinned: bool = Field(default=False, description="A profile fact for every conversation.")


class _Supersede(BaseModel):
    model_config = ConfigDict(extra="ignore")
    fact: int = Field(description="Number of the stored fact that is no longer true.")
    content: str = Field(description="Its new text.")


class MemoryExtraction(BaseModel):
    """Facts to remember from one conversation turn, and stored facts it changes."""

    model_config = ConfigDict(extra="ignore")
    facts: list[_NewFact] = Field(default_factory=list)
    supersede: list[_Supersede] = Field(default_factory=list)


@dataclass
class ExtractionJob:
    """The turns of one thread waiting for extraction (several when debounced together)."""

    user_id: str
    thread_id: str
    turns: list[list[BaseMessage]] = field(default_factory=list)


MESSAGE_CHARS = 4000
"""Most characters of one message the extraction request carries (a tool result: 500).

A pasted log made the request 2 million characters long; the model refused it, and the
facts said beside the paste were lost with it."""


def _transcript(turns: Sequence[Sequence[BaseMessage]]) -> str:
    lines = []
    for turn in turns:
        for m in turn:
            if said_by_user(m):
                lines.append(f"User: {cut(m.text, MESSAGE_CHARS)}")
            elif isinstance(m, HumanMessage):  # a summary of earlier messages
                lines.append(f"Summary of earlier messages: {cut(m.text, MESSAGE_CHARS)}")
            elif isinstance(m, AIMessage) and m.text:
                lines.append(f"Assistant: {cut(m.text, MESSAGE_CHARS)}")
            elif isinstance(m, ToolMessage):
                lines.append(f"Tool result: {cut(str(m.content), 500)}")
    return "\n".join(lines)


def prompt(
    turns: Sequence[Sequence[BaseMessage]], known: Sequence[RecalledFact]
) -> list[BaseMessage]:
    """The extraction request: instructions, stored facts (numbered), the turn(s)."""
    stored = "\n".join(f"{i}. {f.content}" for i, f in enumerate(known, 1)) or "(none)"
    return [
        SystemMessage(content=_INSTRUCTIONS),
        HumanMessage(content=f"Stored facts:\n{stored}\n\nConversation:\n{_transcript(turns)}"),
    ]


RELATED_QUERIES = 8
"""Most user messages of a job whose related stored facts extraction recalls.

Fewer if the store's ``max_queries`` is lower: the latest ones."""


def extract(
    store: LongTermMemoryStore, model: BaseChatModel, job: ExtractionJob, related_limit: int = 10
) -> Logic[list[RememberResult]]:
    """Run one extraction: recall related facts, one model call, then remember/update."""
    humans = [m.text for turn in job.turns for m in turn if said_by_user(m)]
    limit = getattr(store, "max_fact_chars", 2000)
    found = [searchable(text, limit) for text in humans]
    # the latest messages, within the store's max_queries: more made recall raise, and the
    # whole turn (a debounced job merges several) was dropped
    most = min(RELATED_QUERIES, getattr(store, "max_queries", RELATED_QUERIES))
    queries = list(dict.fromkeys(q for q in found if q is not None))[-most:]
    known: list[RecalledFact] = []
    if queries:
        try:
            known = yield Step(
                lambda: store.recall(job.user_id, queries, related_limit),
                lambda: store.arecall(job.user_id, queries, related_limit),
            )
        except Exception as exc:  # extract anyway: the turn's facts must not be lost
            logger.warning(
                "memory extraction for thread %r could not recall related facts (%s); "
                "extracting without them",
                job.thread_id,
                exc,
            )
    structured = model.with_structured_output(MemoryExtraction, include_raw=True)
    messages = prompt(job.turns, known)
    internal = internal_call_config("memory_extraction")  # kept out of the user's stream
    try:
        raw = yield Step(structured.invoke, structured.ainvoke, (messages, internal))
        answer = _answer(raw)
    except Exception as exc:  # a failing extractor must never fail the agent
        logger.warning("memory extraction failed for thread %r: %s", job.thread_id, exc)
        return []
    results: list[RememberResult] = []
    resolving = store.with_options(resolver=ChatModelResolver(model))
    # supersedes first: a model often lists the new text as a fact too, and remembered
    # first it made the update a duplicate of it, leaving the outdated fact current
    superseded: dict[str, RememberResult] = {}  # normalized new text -> its update
    for change in answer.supersede:
        content = _storable_fact(change.content, limit)
        if 1 <= change.fact <= len(known) and content:
            target = known[change.fact - 1]
            try:
                result = yield call(resolving, "update_fact", job.user_id, target.id, content)
            except Exception as exc:  # forgotten meanwhile, a bad text: keep going
                logger.warning("memory extraction could not update %r: %s", target.id, exc)
                continue
            if result.action == "duplicate" and result.fact and result.fact.id != target.id:
                logger.warning(
                    "memory extraction could not supersede %r: its new text %r is "
                    "already the fact %r, so both stay current",
                    target.id,
                    content[:80],
                    result.fact.id,
                )
            superseded[normalize_fact(content)] = result
            results.append(result)
    for pinned in (True, False):
        texts = [_storable_fact(f.content, limit) for f in answer.facts if f.pinned is pinned]
        texts = [t for t in texts if t and not _stored_by(superseded, t, pinned)]
        if texts:
            done = yield from _remember(resolving, job.user_id, texts, pinned)
            results.extend(done)
    return results


def _stored_by(superseded: Mapping[str, RememberResult], text: str, pinned: bool) -> bool:
    """Whether a supersede of this extraction already stored ``text`` (pinned if asked).

    A text to pin whose fact is not pinned is remembered anyway: ``remember`` pins the
    duplicate. A supersede that failed stored nothing, so its text is remembered as new.
    """
    result = superseded.get(normalize_fact(text))
    if result is None:
        return False
    return not pinned or (result.fact is not None and result.fact.pinned)


def _answer(out: Any) -> MemoryExtraction:
    """The extractor's answer, from ``with_structured_output(..., include_raw=True)``.

    When the whole answer does not validate, its tool call's arguments are read entry by
    entry: one malformed entry (``{"fact": null}``) is left out with a warning, and the
    facts beside it are still remembered.
    """
    if isinstance(out, Mapping) and "raw" in out and "parsed" in out:
        if isinstance(out["parsed"], MemoryExtraction):
            return out["parsed"]
        calls = getattr(out["raw"], "tool_calls", None)
        if not calls:
            error = out.get("parsing_error")
            raise error if isinstance(error, Exception) else ValueError("no structured answer")
        out = calls[0].get("args")
    if isinstance(out, MemoryExtraction) or not isinstance(out, Mapping):
        return MemoryExtraction.model_validate(out)
    raw = out
    kept: dict[str, list[Any]] = {}
    for name, entry_type in (("facts", _NewFact), ("supersede", _Supersede)):
        entries = raw.get(name) or []
        if not isinstance(entries, list):
            raise TypeError(f"{name} must be a list, got {type(entries).__name__}")
        kept[name] = []
        for entry in entries:
            try:
                kept[name].append(entry_type.model_validate(entry))
            except ValidationError as exc:
                logger.warning("memory extraction left out %s entry %r: %s", name, entry, exc)
    return MemoryExtraction(facts=kept["facts"], supersede=kept["supersede"])


def _storable_fact(text: str, limit: int) -> str:
    """An extracted text as a fact can hold it, cut to ``limit`` characters.

    What no engine stores is replaced: a NUL, or a lone surrogate the model echoed from a
    paste (the fact was refused, and dropped without a word).
    """
    return cut(storable(text).strip(), limit)


def _remember(
    store: LongTermMemoryStore, user_id: str, texts: list[str], pinned: bool
) -> Logic[list[RememberResult]]:
    try:
        results: list[RememberResult] = yield Step(
            lambda: store.remember(user_id, texts, pinned=pinned),
            lambda: store.aremember(user_id, texts, pinned=pinned),
        )
    except ValueError as exc:  # one bad text refuses the batch: retry one by one
        logger.warning("memory extraction: %s; remembering the facts one by one", exc)
        results = []
        for text in texts:
            try:
                one = yield Step(
                    lambda t=text: store.remember(user_id, t, pinned=pinned),
                    lambda t=text: store.aremember(user_id, t, pinned=pinned),
                )
            except Exception as refused:  # a bad text, or the store went down meanwhile
                logger.warning("memory extraction left out %r: %s", text[:80], refused)
                continue
            results.append(one)
    except Exception as exc:  # the store is down: a failing extractor never fails the agent
        logger.warning("memory extraction could not store %d facts: %s", len(texts), exc)
        return []
    return results


class BackgroundExtractor:
    """Runs extraction jobs in worker threads, off the request path.

    Per thread: turns that arrive while a job waits (``debounce`` seconds) or runs are
    merged into the next job, so one extraction of a thread runs at a time and sees every
    turn once. A failing job logs a warning. :meth:`flush` waits until nothing is pending.
    """

    def __init__(self, run: Callable[[ExtractionJob], object], debounce: float = 0.5) -> None:
        self._run = run
        self.debounce = check_debounce(debounce)
        self._pending: dict[tuple[str, str], ExtractionJob] = {}
        self._active: set[tuple[str, str]] = set()
        self._idle = threading.Condition()

    def submit(self, user_id: str, thread_id: str, turn: list[BaseMessage]) -> None:
        """Queue one finished turn; returns at once."""
        key = (user_id, thread_id)
        with self._idle:
            job = self._pending.setdefault(key, ExtractionJob(user_id, thread_id))
            job.turns.append(turn)
            if key in self._active:
                return  # the running worker picks it up when it is done
            self._active.add(key)
        threading.Thread(target=self._drain, args=(key,), daemon=True).start()

    def _drain(self, key: tuple[str, str]) -> None:
        released = False
        try:
            while True:
                try:
                    time.sleep(self.debounce)
                except (ValueError, OverflowError, TypeError) as exc:  # debounce set since
                    logger.warning("background memory extraction did not wait: %s", exc)
                with self._idle:
                    job = self._pending.pop(key, None)
                    if job is None:  # released under the lock a submit takes: none is missed
                        self._active.discard(key)
                        self._idle.notify_all()
                        released = True
                        return
                try:
                    self._run(job)
                except Exception as exc:
                    logger.warning("background memory extraction failed: %s", exc)
        finally:
            if not released:  # the worker died: the next submit starts one for what waits
                with self._idle:
                    self._active.discard(key)
                    self._idle.notify_all()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued turn is extracted; ``False`` on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._active, timeout)


def check_debounce(debounce: Any) -> float:
    """``debounce`` as seconds to wait: a finite number >= 0, else ``ValueError``.

    ``nan`` or ``inf`` made the worker's ``time.sleep`` raise: the worker died, the
    thread's turns were never extracted and ``flush()`` waited forever.
    """
    if (
        isinstance(debounce, bool)
        or not isinstance(debounce, (int, float))
        or not math.isfinite(debounce)
        or debounce < 0
    ):
        raise ValueError(f"debounce must be a finite number of seconds >= 0, got {debounce!r}.")
    return float(debounce)


def run_job(store: LongTermMemoryStore, model: BaseChatModel) -> Callable[[ExtractionJob], object]:
    """The sync runner of a job (the background threads use it)."""

    def run(job: ExtractionJob) -> object:
        return run_sync(extract(store, model, job))

    return run
