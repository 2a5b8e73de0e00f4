"""Session memory: what the model is shown of the conversation, and of earlier ones.

:class:`SessionMemoryMiddleware` changes the *request* only: the checkpointer still holds the
whole thread, every tool call and tool result included. Before each model call the thread
is split into turns (a turn starts at a user message); the current turn, from the latest user
message on, is always sent whole, so the tool loop of that turn works. Earlier turns are sent
in one of two shapes (``save_mode``) and within a budget of messages (``limit``), and with
``retrieval="relevance"`` or ``"both"`` the most relevant earlier turns of the same user, from
any of their threads, are added to the system message.

Finished turns are indexed by ``after_agent`` under ``("ltm_sessions", label(user))`` (see
:mod:`langchain_ltm.agents._registry`), one batched put (one embedding call) per turn. A turn
the secret guard refuses (a pasted card number, a password) is not indexed, so it is never
replayed into another thread's prompt.

The logic is written once: pure helpers shape the messages (:mod:`._history_view`, the
earlier turns sent; :mod:`._turns`, a thread's turns, their stored value and the "Earlier
conversations" block), and two sans-I/O generators (:mod:`langchain_ltm._steps`) do the one
store call of each hook, run by thin sync and async shells.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from typing import Annotated, Any, Literal, get_args

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ModelCallResult,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
)
from langchain_core.messages import AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore, PutOp, SearchItem
from typing_extensions import NotRequired

from langchain_ltm._steps import Logic, Step, call, run_async, run_sync
from langchain_ltm._utf8 import storable
from langchain_ltm.agents._history_view import SaveMode, history_view
from langchain_ltm.agents._registry import (
    DEFAULT_THREAD,
    RECORDER,
    new_input,
    session_namespace,
)
from langchain_ltm.agents._turns import (
    Turn,
    clear_record,
    input_query,
    latest_turns,
    record_input,
    recorded,
    render_turns,
    turn_value,
    with_context,
)
from langchain_ltm.agents.tools import resolve_user_id
from langchain_ltm.errors import BackendError, MissingUserIdError
from langchain_ltm.facts.options import guard_for
from langchain_ltm.guard import SecretGuard
from langchain_ltm.store import LongTermMemoryStore

__all__ = ["DEFAULT_SESSION_MIN_SCORE", "Retrieval", "SaveMode", "SessionMemoryMiddleware"]

logger = logging.getLogger(__name__)

Retrieval = Literal["recency", "relevance", "both"]

DEFAULT_SESSION_MIN_SCORE = 0.2
"""Measured by ``bench/session_relevance.py`` with all-MiniLM-L6-v2 on 114 query/turn pairs
we wrote ourselves: relevant earlier turns scored 0.13-0.80 (median 0.47), unrelated turns
-0.10-0.21 and filler ("ok thanks", "filler message number 0 about nothing") -0.06-0.20.
At 0.2, 46 of 47 relevant turns pass and 2 of 67 others; at 0.15, 7 others pass; at 0.25,
6 relevant turns are lost. Other embedding models score differently: measure yours."""


_INPUT = "ltm_session_input"


class SessionState(AgentState[Any]):
    """The agent state with the user messages of the current input (private to the middleware).

    ``before_agent`` records them, ``after_agent`` indexes their turns and clears the
    record (see ``_turns.record_input``).
    """

    ltm_session_input: NotRequired[Annotated[list[AnyMessage], PrivateStateAttr]]


class SessionMemoryMiddleware(AgentMiddleware[SessionState, Any, Any]):
    """Show the model a compact history: earlier turns trimmed, relevant past turns added.

    Nothing is removed from the agent state; only the request sent to the model changes.

    - ``save_mode="input_output"`` (default): each earlier turn is shown as the user's message
      and the final answer; its tool calls, tool results and intermediate AI messages are left
      out. ``"full"`` shows earlier turns as they are.
    - ``limit``: at most this many earlier messages, the most recent kept. Whole older turns
      are dropped; of the oldest turn kept, its user message stays and whole tool exchanges
      are dropped from its start, so no tool result is sent without its call (nor a call
      without its results). Messages before the first user message count as one more
      earlier turn, kept whole or not at all; system messages of the history are always kept
      (first) and not counted. The current turn is never cut.
    - ``retrieval="recency"`` (default) is the above and never touches the store.
      ``"relevance"`` sends no earlier messages of the thread; instead the ``relevant_turns``
      earlier turns of the user (from any of their threads) most similar to the latest user
      message are appended to the system message as an "Earlier conversations" block, most
      relevant first. ``"both"`` sends the recency window and the relevant turns not already
      in it. With either, turns scoring below ``min_score`` (0.2) are not sent, so a
      greeting or an "ok thanks" is not brought back as relevant to an unrelated question.
      Every finished turn is indexed in ``store`` by ``after_agent`` (one batched put, one
      embedding call), and every model call runs one search (a ``LongTermMemoryStore``
      caches the query's embedding, so a tool loop embeds it once).
      Without a thread id, a run's turns are indexed under the thread ``"default"`` (their
      ``thread_id`` is ``None``), each keyed by its user message's id, so every run adds
      its turns beside the earlier ones and they all come back as relevant; the recency
      window then holds only the run's own messages: use a checkpointer and a
      ``thread_id`` for a thread's history.
    - ``secret_guard``: a finished turn whose user message or answer the guard refuses (a
      card number, an IBAN, an API key, a password) is not indexed, so it is never brought
      back into another thread (the checkpointer still holds the thread's own messages).
      The refusal is logged at warning, without the turn's text.

    The user comes from each run (the runtime context's ``user_id_key``, else
    ``config["configurable"][user_id_key]``), the thread from
    ``config["configurable"]["thread_id"]`` (``"default"`` when missing). The middleware holds
    no per-user state: one instance serves concurrent users.

    Args:
        store: Where turns are indexed and searched (a ``LongTermMemoryStore``, or any
            ``BaseStore`` with an embedding index), and where a run's thread is recorded
            for ``forget_user``. ``None`` only with ``retrieval="recency"`` (nothing
            recorded).
        save_mode: ``"input_output"`` or ``"full"``: the shape of earlier turns.
        limit: Maximum number of earlier messages sent (``None``: no cap).
        retrieval: ``"recency"``, ``"relevance"`` or ``"both"``.
        relevant_turns: How many relevant earlier turns to bring back per model call.
        min_score: Relevant earlier turns scoring below this cosine similarity to the
            latest user message are not sent (``None``: the ``relevant_turns`` best are sent
            whatever they score). The default, 0.2, was measured with all-MiniLM-L6-v2
            (:data:`DEFAULT_SESSION_MIN_SCORE`); with another embedding model, measure
            (``bench/session_relevance.py``). Items a store returns without a score are
            not filtered.
        max_chars: Budget of the "Earlier conversations" block's turns: each relevant turn
            gets an equal share, its user message and answer cut (ending in ``…``) to
            fit, so one pasted log cannot fill the model's context.
        user_id_key: Name of the user id in the runtime context and in ``configurable``.
        secret_guard: What keeps secrets out of the indexed turns, as in
            ``LongTermMemoryConfig``: ``None`` (default) the store's own guard (its
            ``secret_guard``) for a ``LongTermMemoryStore``, the built-in
            :func:`~langchain_ltm.find_secret` for any other store; ``True`` the built-in
            one; ``False`` none (every turn is indexed); or your own ``guard(text) ->
            reason | None``.

    Raises:
        ValueError: An option has an unknown name, is not a positive int, or ``min_score``
            is not a number in [-1, 1] (nor ``None``).
        TypeError: ``secret_guard`` is not a bool, a callable or ``None``.

    Example:
        >>> from langchain.agents import create_agent
        >>> from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        >>> from langchain_core.messages import AIMessage
        >>> from langchain_core.outputs import ChatGeneration, ChatResult
        >>> from langchain_core.tools import tool
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> from langchain_ltm import LongTermMemoryStore
        >>> from langchain_ltm.embeddings import LocalMiniLMEmbeddings
        >>> @tool
        ... def weather(city: str) -> str:
        ...     '''The weather in a city.'''
        ...     return "sunny"
        >>> class Scripted(GenericFakeChatModel):  # calls the tool, then says what it was sent
        ...     messages: Any = iter(())
        ...     def bind_tools(self, tools, **kwargs): return self
        ...     def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        ...         last = messages[-1]
        ...         if last.type == "human" and "weather" in last.text:
        ...             call = {"name": "weather", "args": {"city": "Oslo"}, "id": "c1"}
        ...             reply = AIMessage("", tool_calls=[call])
        ...         else:
        ...             reply = AIMessage(" ".join(m.type for m in messages))
        ...         return ChatResult(generations=[ChatGeneration(message=reply)])
        >>> store = LongTermMemoryStore(InMemoryVectorStore(LocalMiniLMEmbeddings()))
        >>> agent = create_agent(
        ...     Scripted(), tools=[weather], checkpointer=InMemorySaver(),
        ...     middleware=[SessionMemoryMiddleware(store, retrieval="both")],
        ... )
        >>> run = {"configurable": {"user_id": "u1", "thread_id": "t1"}}
        >>> say = lambda text: {"messages": [{"role": "user", "content": text}]}
        >>> agent.invoke(say("weather in Oslo?"), run)["messages"][-1].text
        'human ai tool'
        >>> state = agent.invoke(say("thanks"), run)  # the tool call is left out of the request
        >>> state["messages"][-1].text, len(state["messages"])
        ('human ai human', 6)
        >>> other = {"configurable": {"user_id": "u1", "thread_id": "t2"}}
        >>> agent.invoke(say("will it rain in Oslo?"), other)["messages"][-1].text  # as context
        'system human'
        >>> third = {"configurable": {"user_id": "u1", "thread_id": "t3"}}
        >>> agent.invoke(say("tell me a joke"), third)["messages"][-1].text  # none above 0.2
        'human'
    """

    def __init__(
        self,
        store: BaseStore | None,
        *,
        save_mode: SaveMode = "input_output",
        limit: int | None = 20,
        retrieval: Retrieval = "recency",
        relevant_turns: int = 3,
        min_score: float | None = DEFAULT_SESSION_MIN_SCORE,
        max_chars: int = 4000,
        user_id_key: str = "user_id",
        secret_guard: bool | SecretGuard | None = None,
    ) -> None:
        super().__init__()
        self.store = store
        self.secret_guard = secret_guard
        self._guard = _guard_of(store, secret_guard)
        self.save_mode: SaveMode = _choice("save_mode", save_mode, get_args(SaveMode))
        self.limit = None if limit is None else _positive("limit", limit)
        self.retrieval: Retrieval = _choice("retrieval", retrieval, get_args(Retrieval))
        if store is None and self.retrieval != "recency":
            raise ValueError(
                f'retrieval="{self.retrieval}" searches earlier turns in a store: pass one '
                '(a LongTermMemoryStore), or use retrieval="recency".'
            )
        self.relevant_turns = _positive("relevant_turns", relevant_turns)
        self.min_score = None if min_score is None else _cosine("min_score", min_score)
        self.max_chars = _positive("max_chars", max_chars)
        if self.max_chars < 200:
            raise ValueError(f"max_chars must be at least 200, got {max_chars!r}.")
        if not isinstance(user_id_key, str) or not user_id_key:
            raise ValueError(f"user_id_key must be a non-empty str, got {user_id_key!r}.")
        self.user_id_key = user_id_key
        self._threads = RECORDER

    state_schema = SessionState

    # ---- hooks: thin shells over the logic below ---------------------------------------

    def before_agent(self, state: SessionState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Record the input's user messages (private state) until their turns are indexed.

        Args:
            state: The agent state with the run's input.
            runtime: The run's runtime.

        Returns:
            The record's update (``None`` with ``retrieval="recency"``: nothing is indexed).
        """
        return None if self.retrieval == "recency" else record_input(state, _INPUT)

    async def abefore_agent(
        self, state: SessionState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`before_agent`.

        Args:
            state: The agent state with the run's input.
            runtime: The run's runtime.

        Returns:
            The record's update (``None`` with ``retrieval="recency"``: nothing is indexed).
        """
        return self.before_agent(state, runtime)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelCallResult[Any]:
        """Send the model the compacted history (and relevant earlier turns).

        Args:
            request: The model request built from the agent state.
            handler: Calls the model.

        Returns:
            The model's response to the rewritten request.
        """
        return handler(run_sync(self._prepare(request, _run_config())))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelCallResult[Any]:
        """Async twin of :meth:`wrap_model_call`.

        Args:
            request: The model request built from the agent state.
            handler: Calls the model.

        Returns:
            The model's response to the rewritten request.
        """
        return await handler(await run_async(self._prepare(request, _run_config())))

    def after_agent(self, state: SessionState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Index the finished turns for relevance retrieval.

        Every user message since the last run that ended is a turn: one of a run that
        stopped before its answer (an abandoned human-in-the-loop pause, a model error) is
        indexed with the next run's, and one a summary removed mid-turn too.

        Args:
            state: The agent state at the end of the run.
            runtime: The run's runtime (its context may carry the user id).

        Returns:
            The cleared record of the input's user messages (``None``: nothing to clear).
        """
        run_sync(self._index(state, runtime, _run_config()))
        return clear_record(state, _INPUT)

    async def aafter_agent(
        self, state: SessionState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`after_agent`.

        Args:
            state: The agent state at the end of the run.
            runtime: The run's runtime (its context may carry the user id).

        Returns:
            The cleared record of the input's user messages (``None``: nothing to clear).
        """
        await run_async(self._index(state, runtime, _run_config()))
        return clear_record(state, _INPUT)

    # ---- logic, written once ------------------------------------------------------------

    def _prepare(
        self, request: ModelRequest[Any], config: RunnableConfig | None
    ) -> Logic[ModelRequest[Any]]:
        limit = 0 if self.retrieval == "relevance" else self.limit
        view = history_view(request.messages, self.save_mode, limit)
        if self.retrieval == "recency":
            # no user needed; but when the run has one, record the thread for forget_user
            # (without a store nothing is recorded, and the user is not even read)
            if self.store is not None:
                user_id = _user_or_none(config, request.runtime, self.user_id_key)
                if user_id is not None:
                    check = new_input(request.messages)
                    thread = _raw_thread_id(config)
                    yield from self._threads.note(self.store, user_id, thread, check=check)
            return request.override(messages=view.messages)
        store = self.store
        if store is None:  # refused by __init__ outside recency
            return request.override(messages=view.messages)
        user_id = resolve_user_id(config, request.runtime, self.user_id_key)
        yield from self._threads.note(
            store, user_id, _raw_thread_id(config), check=new_input(request.messages)
        )
        # the latest user message, or its copy when a summary removed it mid-turn
        said = input_query(request.messages, recorded(request.state, _INPUT))
        text = "" if said is None else said.text
        if not text.strip():
            return request.override(messages=view.messages)
        thread_id = _thread_of_turns(config)
        shown = {(thread_id, turn) for turn in view.turns}
        # a lone surrogate in a message cannot be embedded: searched with "?" in its place
        namespace, query = session_namespace(user_id), storable(text)
        fetch = self.relevant_turns + len(shown)
        try:
            found: list[SearchItem] = yield Step(
                lambda: store.search(namespace, query=query, limit=fetch),
                lambda: store.asearch(namespace, query=query, limit=fetch),
            )
        except BackendError as exc:  # the database is down: answer without earlier turns
            logger.warning("session memory search failed; answering without it: %s", exc)
            return request.override(messages=view.messages)
        picked = [
            item.value
            for item in found
            if not _in_view(item.value, shown, view.ids) and _passes(item, self.min_score)
        ]
        picked = picked[: self.relevant_turns]
        if not picked:
            return request.override(messages=view.messages)
        system = with_context(request.system_message, render_turns(picked, self.max_chars))
        return request.override(messages=view.messages, system_message=system)

    def _index(
        self, state: SessionState, runtime: Any, config: RunnableConfig | None
    ) -> Logic[None]:
        if self.retrieval == "recency":
            return
        user_id = resolve_user_id(config, runtime, self.user_id_key)
        turns = latest_turns(state["messages"], recorded(state, _INPUT))
        if not turns:
            return
        prefix = _thread_id(config)
        thread_id = _thread_of_turns(config)
        now = datetime.now(timezone.utc)
        namespace = session_namespace(user_id)
        kept = [turn for turn in turns if not self._refused(turn)]
        if len(kept) < len(turns):  # the reason may quote the secret: not logged
            logger.warning(
                "session memory left %d turn(s) of thread %r unindexed: the secret guard "
                "refused them (a card number, key or password?)",
                len(turns) - len(kept),
                thread_id,
            )
        if not kept:
            return
        ops = [
            PutOp(namespace, f"{prefix}:{turn.key}", turn_value(thread_id, turn, now), ["text"])
            for turn in kept
        ]
        try:
            yield call(self.store, "batch", ops)
        except BackendError as exc:  # after the answer: the turn stands, unindexed
            logger.warning("session memory could not index %d turns: %s", len(ops), exc)

    def _refused(self, turn: Turn) -> bool:
        """Whether the guard refuses the turn's user message or its answer."""
        guard = self._guard
        return guard is not None and any(guard(text) for text in (turn.user, turn.answer) if text)


# ---- helpers -----------------------------------------------------------------------------


def _in_view(
    value: dict[str, Any], shown: set[tuple[str | None, int]], ids: frozenset[str]
) -> bool:
    """Whether a stored turn is among the earlier turns the request already shows.

    By its user message's id; a turn stored without one (before ids were kept), by thread
    and number.
    """
    if value.get("message_id"):
        return str(value["message_id"]) in ids
    return (value.get("thread_id"), value.get("turn")) in shown


def _thread_id(config: RunnableConfig | None) -> str:
    """The thread part of a turn's key (``"default"`` for a run without a thread id)."""
    thread = ((config or {}).get("configurable") or {}).get("thread_id")
    return str(thread) if thread is not None and str(thread) else DEFAULT_THREAD


def _thread_of_turns(config: RunnableConfig | None) -> str | None:
    """The thread id a turn records: the run's own, ``None`` without one.

    Never ``"default"`` for a run without a thread: ``forget_user`` deletes the checkpoint
    threads the turns name, and another user's thread may be called ``"default"``.
    """
    thread = _raw_thread_id(config)
    return None if thread is None else str(thread)


def _run_config() -> RunnableConfig | None:
    try:
        return get_config()
    except RuntimeError:  # called outside a graph run
        return None


def _guard_of(store: BaseStore | None, secret_guard: Any) -> SecretGuard | None:
    """The guard of the indexed turns (``secret_guard`` as documented on the class).

    ``None``: the store's own guard; any other store's turns get the built-in one. The
    rest is read as the stores read it (``guard_for``: a TypeError for anything else).
    """
    if secret_guard is None and isinstance(store, LongTermMemoryStore):
        return store._guard
    return guard_for(secret_guard)


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> Any:
    if value not in allowed:
        names = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"{name} must be one of {names}; got {value!r}.")
    return value


def _positive(name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}.")
    return value


def _cosine(name: str, value: Any) -> float:
    if (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or not -1.0 <= value <= 1.0  # also refuses nan
    ):
        raise ValueError(
            f"{name} must be a cosine similarity in [-1, 1], or None for no floor; got {value!r}."
        )
    return float(value)


def _passes(item: SearchItem, min_score: float | None) -> bool:
    """Whether a found turn scores at least ``min_score`` (unscored items always pass)."""
    return min_score is None or item.score is None or item.score >= min_score


def _user_or_none(config: RunnableConfig | None, runtime: Any, key: str) -> str | None:
    try:
        return resolve_user_id(config, runtime, key)
    except MissingUserIdError:
        return None


def _raw_thread_id(config: RunnableConfig | None) -> Any:
    return ((config or {}).get("configurable") or {}).get("thread_id")
