"""Automatic recall for ``create_react_agent``: the same block as a ``pre_model_hook``."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig, RunnableLambda

from langchain_ltm._steps import Logic, run_async, run_sync
from langchain_ltm.agents._recall import (
    DEFAULT_HEADER,
    DEFAULT_MIN_SCORE,
    RecallOptions,
    memory_messages,
    recall_block,
)
from langchain_ltm.agents._registry import RECORDER, new_input
from langchain_ltm.agents._store import require_store
from langchain_ltm.agents._turns import recall_query
from langchain_ltm.agents.tools import current_runtime, resolve_user_id
from langchain_ltm.store import LongTermMemoryStore

__all__ = ["memory_pre_model_hook"]


def memory_pre_model_hook(
    store: LongTermMemoryStore,
    *,
    recall_limit: int = 5,
    min_score: float = DEFAULT_MIN_SCORE,
    max_chars: int = 2000,
    user_id_key: str = "user_id",
    header: str = DEFAULT_HEADER,
    show_dates: bool = False,
) -> RunnableLambda[Any, dict[str, Any]]:
    """A ``pre_model_hook`` that shows the model the user's pinned and relevant facts.

    It returns ``llm_input_messages``, so the facts reach the model call only, never the
    thread's state. The user comes from the run (runtime context or ``configurable``).
    The options are ``MemoryMiddleware``'s.

    Args:
        store: Where the facts live.
        recall_limit: Most relevant facts added to a model call (pinned facts come on top).
        min_score: Relevant facts scoring below this similarity stay out of the prompt.
        max_chars: Size budget of the memory block, in characters, its header included.
        user_id_key: Name of the user id in the runtime context and ``configurable``.
        header: First lines of the memory block.
        show_dates: Start each fact's line in the block with its date (``[2023-05-08]``).

    Returns:
        The hook, for ``create_react_agent(..., pre_model_hook=hook)``.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> store = LongTermMemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=16)))
        >>> _ = store.remember("u1", "Prefers answers in Spanish", pinned=True)
        >>> hook = memory_pre_model_hook(store)
        >>> out = hook.invoke({"messages": [("user", "hi")]}, {"configurable": {"user_id": "u1"}})
        >>> "Prefers answers in Spanish" in out["llm_input_messages"][0].content
        True
    """
    store = require_store(store, "memory_pre_model_hook")
    options = RecallOptions(recall_limit, min_score, max_chars, header, show_dates)

    def logic(state: Any, config: RunnableConfig) -> Logic[dict[str, Any]]:
        user_id = resolve_user_id(config, current_runtime(), user_id_key)
        messages = _messages(state)
        thread_id = ((config or {}).get("configurable") or {}).get("thread_id")
        # the thread is the user's: forget_user deletes its checkpoints too
        yield from RECORDER.note(store, user_id, thread_id, check=new_input(messages))
        block = yield from recall_block(store, user_id, recall_query(messages), options)
        return {"llm_input_messages": memory_messages(messages, block)}

    def hook(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return run_sync(logic(state, config))

    async def ahook(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return await run_async(logic(state, config))

    return RunnableLambda(hook, afunc=ahook, name="memory_pre_model_hook")


def _messages(state: Any) -> list[Any]:
    from langchain_core.messages import convert_to_messages

    raw = state.get("messages", []) if isinstance(state, dict) else getattr(state, "messages", [])
    return list(convert_to_messages(raw))
