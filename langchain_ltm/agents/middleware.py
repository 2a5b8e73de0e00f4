"""MemoryMiddleware: memory that works without the model asking.

For ``create_agent(..., middleware=[MemoryMiddleware(store)])``:

- *Automatic recall*: before each model call, the user's pinned facts and the facts most
  relevant to the latest user message go into the system prompt of that call only (never
  into the thread's state or the checkpointer).
- *Tools*: the memory tools (``remember_fact``, ``recall_facts``, ``update_fact``,
  ``forget_fact``), registered by the middleware.
- *Extraction* (``extract_with=model``): after each agent turn, one structured-output call
  reads the turn and the user's related facts and returns facts to remember; they go through
  ``remember`` (dedup, versions, secret guard; the same model resolves the ambiguous band),
  inline or in the background.

The user comes from the run as for the tools (runtime context, else ``configurable``); a
missing one raises ``MissingUserIdError`` before any storage call. The middleware records
which threads belong to which user, so ``forget_user`` can erase them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, Literal

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.runtime import Runtime
from typing_extensions import NotRequired

from langchain_ltm._steps import Logic, run_async, run_sync
from langchain_ltm.agents._extract import (
    BackgroundExtractor,
    ExtractionJob,
    check_debounce,
    extract,
    run_job,
)
from langchain_ltm.agents._recall import (
    DEFAULT_HEADER,
    DEFAULT_MIN_SCORE,
    RecallOptions,
    recall_block,
    with_memory,
)
from langchain_ltm.agents._registry import RECORDER, new_input
from langchain_ltm.agents._store import require_store
from langchain_ltm.agents._turns import (
    clear_record,
    current_turn,
    recall_query,
    record_input,
    recorded,
)
from langchain_ltm.agents.config import LongTermMemoryConfig
from langchain_ltm.agents.tools import create_memory_tools, resolve_user_id, scoped_store
from langchain_ltm.store import LongTermMemoryStore

__all__ = ["MemoryMiddleware", "MemoryMode"]

MemoryMode = Literal["both", "recall", "tools"]

_INPUT = "ltm_memory_input"


class MemoryState(AgentState[Any]):
    """The agent state with the user messages of the current input (private to the middleware).

    ``before_agent`` records them, ``after_agent`` extracts them and clears the record: a
    run that stopped before its answer leaves them for the next, and a summary that
    removes them mid-turn leaves their copies here (see ``_turns.record_input``).
    """

    ltm_memory_input: NotRequired[Annotated[list[AnyMessage], PrivateStateAttr]]


class MemoryMiddleware(AgentMiddleware[MemoryState, Any, Any]):
    """Long-term memory for a LangChain agent: automatic recall, tools, extraction.

    Args:
        store: Where the facts live (also pass it as ``create_agent(..., store=store)``).
        mode: ``"both"`` (default): automatic recall and the memory tools; ``"recall"``:
            recall only, no tools; ``"tools"``: the tools only.
        recall_limit: Most relevant facts added to a model call (pinned facts come on top).
        min_score: Relevant facts scoring below this similarity stay out of the prompt.
        max_chars: Size budget of the memory block, in characters, its header included
            (at least 258 with the default header: room for a heading and one fact).
        extract_with: A chat model with structured output: after each turn it reads the
            turn and returns facts to remember (``None``: no extraction).
        background: Extract off the request path (debounced per thread; :meth:`flush`).
        debounce: Seconds a background extraction waits for more turns of its thread (a
            finite number >= 0).
        config: Options of the memory tools (and ``user_id_key``); its namespace,
            thresholds, resolver and secret guard apply to recall and extraction too.
        header: First lines of the memory block.
        show_dates: Start each fact's line in the block with its date (``[2023-05-08]``:
            when its text was said, ``remember(..., observed_at=)``, else remembered), for
            questions about when something happened.

    Example:
        >>> from langchain.agents import create_agent
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        >>> from langchain_core.messages import AIMessage
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> store = LongTermMemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=16)))
        >>> _ = store.remember("u1", "Prefers answers in Spanish", pinned=True)
        >>> model = GenericFakeChatModel(messages=iter([AIMessage("¡Hola!")]))
        >>> agent = create_agent(model, middleware=[MemoryMiddleware(store, mode="recall")])
        >>> run = {"configurable": {"user_id": "u1"}}
        >>> agent.invoke({"messages": [("user", "hi")]}, run)["messages"][-1].content
        '¡Hola!'
    """

    def __init__(
        self,
        store: LongTermMemoryStore,
        *,
        mode: MemoryMode = "both",
        recall_limit: int = 5,
        min_score: float = DEFAULT_MIN_SCORE,
        max_chars: int = 2000,
        extract_with: BaseChatModel | None = None,
        background: bool = False,
        debounce: float = 0.5,
        config: LongTermMemoryConfig | None = None,
        header: str = DEFAULT_HEADER,
        show_dates: bool = False,
    ) -> None:
        super().__init__()
        store = require_store(store, "MemoryMiddleware")
        if mode not in ("both", "recall", "tools"):
            raise ValueError(f'mode must be "both", "recall" or "tools", got {mode!r}.')
        if background and extract_with is None:
            raise ValueError("background=True needs extract_with=<chat model>.")
        check_debounce(debounce)
        self.mode: MemoryMode = mode
        self.options = RecallOptions(recall_limit, min_score, max_chars, header, show_dates)
        self.tool_config = config or LongTermMemoryConfig()
        # recall, extraction and the tools share the config's namespace and options (the
        # store's own where the config leaves one unset): one place for all of a user's memory
        self.store = scoped_store(store, self.tool_config)
        self.extract_with = extract_with
        self.tools = [] if mode == "recall" else create_memory_tools(store, config=self.tool_config)
        self._background = (
            BackgroundExtractor(run_job(self.store, extract_with), debounce)
            if background and extract_with is not None
            else None
        )
        self._threads = RECORDER

    state_schema = MemoryState

    # ---- the user, the thread ------------------------------------------------------------

    def _user(self, runtime: Any) -> str:
        return resolve_user_id(_current_config(), runtime, self.tool_config.user_id_key)

    def _note_thread(self, user_id: str, messages: Sequence[Any]) -> Logic[None]:
        thread_id = (_current_config() or {}).get("configurable", {}).get("thread_id")
        yield from self._threads.note(self.store, user_id, thread_id, check=new_input(messages))

    # ---- automatic recall --------------------------------------------------------------------

    def _prepare(self, request: ModelRequest[Any]) -> Logic[ModelRequest[Any]]:
        user_id = self._user(request.runtime)
        yield from self._note_thread(user_id, request.messages)
        if self.mode == "tools":
            return request
        query = recall_query(request.messages, recorded(request.state, _INPUT))
        block = yield from recall_block(self.store, user_id, query, self.options)
        if block is None:
            return request
        return request.override(system_message=with_memory(request.system_message, block))

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Add the user's facts to this model call's system prompt."""
        return handler(run_sync(self._prepare(request)))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Async twin of :meth:`wrap_model_call`."""
        return await handler(await run_async(self._prepare(request)))

    # ---- the current input, extraction ------------------------------------------------------

    def before_agent(self, state: MemoryState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Record the input's user messages (private state) until the turn is extracted."""
        if self.mode == "tools" and self.extract_with is None:
            return None  # neither recall nor extraction reads it
        return record_input(state, _INPUT)

    async def abefore_agent(
        self, state: MemoryState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`before_agent`."""
        return self.before_agent(state, runtime)

    def _job(self, state: MemoryState, runtime: Runtime[Any]) -> ExtractionJob | None:
        if self.extract_with is None:
            return None
        turn = current_turn(state.get("messages", []), recorded(state, _INPUT))
        if not turn:
            return None
        user_id = self._user(runtime)
        thread_id = (_current_config() or {}).get("configurable", {}).get("thread_id")
        messages: list[BaseMessage] = list(turn)
        return ExtractionJob(user_id, str(thread_id or "default"), [messages])

    def after_agent(self, state: MemoryState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Extract facts from the finished turn (inline, or queued in the background).

        The turn holds every user message since the last run that ended: one of a run
        that stopped before its answer (an abandoned human-in-the-loop pause, a model
        error) is extracted with the next, and one a summary removed mid-turn too.
        """
        job = self._job(state, runtime)
        if job is not None and self.extract_with is not None:
            if self._background is not None:
                self._background.submit(job.user_id, job.thread_id, job.turns[0])
            else:
                run_sync(extract(self.store, self.extract_with, job))
        return clear_record(state, _INPUT)

    async def aafter_agent(
        self, state: MemoryState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`after_agent`."""
        job = self._job(state, runtime)
        if job is not None and self.extract_with is not None:
            if self._background is not None:
                self._background.submit(job.user_id, job.thread_id, job.turns[0])
            else:
                await run_async(extract(self.store, self.extract_with, job))
        return clear_record(state, _INPUT)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait for pending background extractions (tests, shutdown); ``False`` on timeout."""
        return True if self._background is None else self._background.flush(timeout)

    async def aflush(self, timeout: float | None = None) -> bool:
        """Async twin of :meth:`flush` (waits in a worker thread)."""
        return await asyncio.to_thread(self.flush, timeout)


def _current_config() -> RunnableConfig | None:
    try:
        return get_config()
    except RuntimeError:  # called outside a runnable context
        return None
