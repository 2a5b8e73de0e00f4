"""Memory tools for agents: user-scoped, resolved per invocation, never from the model.

``create_memory_tools(store)`` returns ``remember_fact``, ``recall_facts``, ``update_fact``
and ``forget_fact``. The tools hold no per-user state: every call takes the user id from its own
run (the runtime context's ``user_id``, else ``config["configurable"]["user_id"]``), so one
compiled graph serves many users at once. A ``user_id`` the model puts in its arguments is
not part of the schema and is dropped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import InjectedToolArg, StructuredTool, ToolException
from langgraph.prebuilt import ToolRuntime

from langchain_ltm._clock import check_ttl
from langchain_ltm._labels import validate_user_id
from langchain_ltm._steps import Logic, Step, call, run_async, run_sync
from langchain_ltm._utf8 import encodes_as_utf8
from langchain_ltm.agents._registry import RECORDER
from langchain_ltm.agents._store import require_store
from langchain_ltm.agents.config import LongTermMemoryConfig
from langchain_ltm.errors import FactNotFoundError, InvalidFactError, MissingUserIdError
from langchain_ltm.facts import Fact, RecalledFact, RememberResult
from langchain_ltm.store import LongTermMemoryStore

__all__ = ["create_memory_tools", "memory_tools_for", "resolve_user_id"]

UserResolver = Callable[[RunnableConfig | None, Any], str]
# LangGraph's ToolNode fills a parameter named ``runtime``; the marker hides it from the model
# and keeps the tools usable outside a graph (plain ``tool.invoke(args, config)``).
_Runtime = Annotated[ToolRuntime[Any, Any] | None, InjectedToolArg]

_DESCRIPTIONS = {
    "remember_fact": (
        "Save one durable fact about the current user (a preference, a detail of their work "
        "or life) so it is available in future conversations. One short, self-contained fact "
        "per call; say whom it is about ('My sister is allergic to peanuts'). Set pinned "
        "to true for profile facts that matter in every conversation (name, language, how "
        "to address them, standing preferences). Set ttl_minutes for a fact that only "
        "matters for a while ('reported a lost card this morning': 1440); leave it out for "
        "facts that stay true. Never store "
        "passwords, card numbers or keys. Returns the action taken (created, duplicate, "
        "updated, rejected) and the fact id. If the result lists 'similar' facts, the store "
        "was unsure whether the new fact replaces one of them and kept both: if it does, "
        "call update_fact with that fact's id and the same text. The new fact is then "
        "merged into it; there is nothing to forget."
    ),
    "update_fact": (
        "Replace the text of one stored fact about the current user with a new version, by "
        "its id (from recall_facts or remember_fact), when the fact has changed ('moved to "
        "Berlin' replaces 'lives in Paris'). The old text stays in the fact's history. If "
        "another fact already has exactly this text (one remember_fact just created), it "
        "is merged into this one and its id is gone ('merged'); if it cannot be merged, "
        "nothing changes and 'reason' says why: keep that fact. Use remember_fact for new "
        "facts."
    ),
    "recall_facts": (
        "Search what you remember about the current user. Pass two or three different "
        "phrasings of what you are looking for, e.g. ['preferred language', 'which language "
        "should I answer in']. Returns the most relevant facts with their ids."
    ),
    "forget_fact": (
        "Delete one fact about the current user by its id (as returned by recall_facts), "
        "e.g. when the user asks you to forget it or it is no longer true."
    ),
}


def resolve_user_id(config: RunnableConfig | None, runtime: Any, key: str = "user_id") -> str:
    """The user of this run: the runtime context's ``key``, else ``configurable[key]``.

    Args:
        config: The run's config (its ``configurable`` is read), or ``None``.
        runtime: The run's LangGraph runtime (its ``context`` is read first), or ``None``.
        key: Name of the user id in both places.

    Returns:
        The user id, checked.

    Raises:
        MissingUserIdError: Neither place has it (raised before any storage call).
        InvalidUserIdError: It is there but empty or not a string.

    Example:
        >>> resolve_user_id({"configurable": {"user_id": "u1"}}, None)
        'u1'
    """
    value = None
    context = getattr(runtime, "context", None)
    if context is not None:
        value = context.get(key) if isinstance(context, Mapping) else getattr(context, key, None)
    if value is None and config:
        value = (config.get("configurable") or {}).get(key)
    if value is None:
        raise MissingUserIdError(
            f"No {key!r} for this run, so the memory tools cannot tell whose memories to use. "
            f'Pass config={{"configurable": {{"{key}": ...}}}} to invoke(), or a runtime '
            f"context with a {key!r} field (create_agent(..., context_schema=...) and "
            f"invoke(..., context=...))."
        )
    return validate_user_id(value)


def create_memory_tools(
    store: LongTermMemoryStore, *, config: LongTermMemoryConfig | None = None
) -> list[StructuredTool]:
    """Memory tools that take the user from each run.

    Args:
        store: Where the facts live.
        config: Which tools to expose and how they behave.

    Returns:
        The ``StructuredTool`` list, in ``config.tools`` order.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> store = LongTermMemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=16)))
        >>> remember, recall, update, forget = create_memory_tools(store)
        >>> run = {"configurable": {"user_id": "u1"}}
        >>> json.loads(remember.invoke({"fact": "likes green tea"}, config=run))["action"]
        'created'
        >>> json.loads(recall.invoke({"queries": ["tea"]}, config=run))["facts"][0]["fact"]
        'likes green tea'
    """
    options = config or LongTermMemoryConfig()
    key = options.user_id_key

    def from_run(run: RunnableConfig | None, runtime: Any) -> str:
        return resolve_user_id(run, runtime, key)

    store = require_store(store, "create_memory_tools")
    return _build(scoped_store(store, options), options, from_run)


def memory_tools_for(
    store: LongTermMemoryStore,
    run: RunnableConfig | None,
    *,
    config: LongTermMemoryConfig | None = None,
    runtime: Any = None,
) -> list[StructuredTool]:
    """Memory tools bound to the user of one run, for custom graph nodes.

    The user is resolved now, as everywhere else: the runtime context's ``user_id_key``
    (``runtime``'s, else the running graph's, ``langgraph.runtime.get_runtime()``), else
    ``run["configurable"]`` (``MissingUserIdError`` if neither has one). The tools are new
    objects for this call, so concurrent invocations share nothing mutable.

    Args:
        store: Where the facts live.
        run: The node's ``config`` (``None``: the runtime context only).
        config: Which tools to expose and how they behave.
        runtime: The node's ``Runtime`` (default: the running graph's, if any).

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> store = LongTermMemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=16)))
        >>> tools = memory_tools_for(store, {"configurable": {"user_id": "u1"}})
        >>> json.loads(tools[0].invoke({"fact": "works on payments"}))["action"]
        'created'
    """
    store = require_store(store, "memory_tools_for")
    options = config or LongTermMemoryConfig()
    if runtime is None:
        runtime = current_runtime()
    user_id = resolve_user_id(run, runtime, options.user_id_key)
    return _build(scoped_store(store, options), options, lambda _run, _runtime: user_id)


def current_runtime() -> Any:
    """The running graph's ``Runtime`` (its context may carry the user), else ``None``."""
    try:
        from langgraph.runtime import get_runtime

        return get_runtime()
    except Exception:  # outside a graph run: no runtime context
        return None


def scoped_store(store: LongTermMemoryStore, options: LongTermMemoryConfig) -> LongTermMemoryStore:
    """``store`` with the config's namespace, thresholds, resolver and secret guard.

    What the memory tools act on, and what ``MemoryMiddleware`` recalls from and extracts
    into, so a configured namespace holds all of a user's memory. An option the config
    leaves at ``None`` keeps the store's own (its ``secret_guard`` too: a store built with
    ``secret_guard=my_guard`` or ``False`` guards the tools the same way).
    """
    return store.with_options(
        namespace=options.namespace,
        merge_threshold=options.merge_threshold,
        review_threshold=options.review_threshold,
        upsert_threshold=options.upsert_threshold,
        resolver=options.resolver,
        secret_guard=options.secret_guard,
    )


# ---- tool bodies, written once ----------------------------------------------------------


def _remember_logic(
    store: LongTermMemoryStore,
    user_id: str,
    fact: str,
    pinned: bool,
    ttl_minutes: float | None = None,
) -> Logic[str]:
    try:
        ttl = check_ttl(ttl_minutes, "ttl_minutes")
    except ValueError as exc:
        raise ToolException(str(exc)) from exc
    try:
        result: RememberResult = yield Step(
            lambda: store.remember(user_id, fact, pinned=pinned, ttl=ttl),
            lambda: store.aremember(user_id, fact, pinned=pinned, ttl=ttl),
        )
    except (InvalidFactError, NotImplementedError) as exc:
        raise ToolException(str(exc)) from exc
    out = _render_result(result)
    if ttl is not None and result.action in ("created", "updated"):
        out["ttl_minutes"] = ttl
    return _dump(out)


def _recall_logic(
    store: LongTermMemoryStore,
    user_id: str,
    queries: list[str],
    limit: int,
    min_score: float | None,
) -> Logic[str]:
    try:
        facts: list[RecalledFact] = yield Step(
            lambda: store.recall(user_id, queries, limit, min_score=min_score),
            lambda: store.arecall(user_id, queries, limit, min_score=min_score),
        )
    except (InvalidFactError, ValueError) as exc:
        raise ToolException(str(exc)) from exc
    return _dump({"facts": [_render_fact(f) for f in facts]})


def _update_logic(store: LongTermMemoryStore, user_id: str, fact_id: str, fact: str) -> Logic[str]:
    if not isinstance(fact_id, str) or not fact_id.strip():
        raise ToolException("fact_id is empty: pass an id returned by recall_facts.")
    try:
        result: RememberResult = yield call(store, "update_fact", user_id, fact_id.strip(), fact)
    except FactNotFoundError as exc:
        raise ToolException(str(exc)) from exc
    except InvalidFactError as exc:
        raise ToolException(str(exc)) from exc
    return _dump(_render_result(result))


def _forget_logic(store: LongTermMemoryStore, user_id: str, fact_id: str) -> Logic[str]:
    if not isinstance(fact_id, str) or not fact_id.strip():
        raise ToolException("fact_id is empty: pass an id returned by recall_facts.")
    deleted: bool = yield call(store, "forget", user_id, fact_id.strip())
    if deleted:
        return _dump({"deleted": True, "id": fact_id})
    return _dump(
        {
            "deleted": False,
            "id": fact_id,
            "reason": "The current user has no fact with this id; nothing was deleted.",
        }
    )


def _render_fact(fact: Fact) -> dict[str, Any]:
    out: dict[str, Any] = {"id": fact.id, "fact": fact.content}
    if fact.pinned:
        out["pinned"] = True
    if isinstance(fact, RecalledFact):
        out["score"] = round(fact.score, 3)
        if fact.superseded:
            out["superseded"] = True
    return out


def _render_result(result: RememberResult) -> dict[str, Any]:
    out: dict[str, Any] = {"action": result.action}
    if result.fact is not None:
        out.update(_render_fact(result.fact))
    if result.previous is not None:
        out["previous"] = result.previous
    if result.similar:
        out["similar"] = [s.to_dict() for s in result.similar]
    if result.reason is not None:
        out["reason"] = result.reason
    if result.merged is not None:
        out["merged"] = result.merged
        out["note"] = (
            f"Fact {result.merged} had this same text; it is merged into this fact (its text "
            "is this fact's current version) and no longer exists: there is nothing to forget."
        )
    return out


def _dump(payload: Any) -> str:
    text = json.dumps(payload, ensure_ascii=False)
    if not encodes_as_utf8(text):  # a lone surrogate the model's own arguments carried
        return json.dumps(payload)  # escaped, so the message can be sent back to the model
    return text


def _build(
    store: LongTermMemoryStore, options: LongTermMemoryConfig, user_of: UserResolver
) -> list[StructuredTool]:
    max_limit = options.recall_limit
    min_score = options.min_score

    def remember_fact(
        fact: str,
        config: RunnableConfig,
        pinned: bool = False,
        ttl_minutes: float | None = None,
        runtime: _Runtime = None,
    ) -> str:
        user_id = user_of(config, runtime)
        body = _remember_logic(store, user_id, fact, bool(pinned), ttl_minutes)
        return run_sync(_recorded(store, user_id, config, body))

    async def aremember_fact(
        fact: str,
        config: RunnableConfig,
        pinned: bool = False,
        ttl_minutes: float | None = None,
        runtime: _Runtime = None,
    ) -> str:
        user_id = user_of(config, runtime)
        body = _remember_logic(store, user_id, fact, bool(pinned), ttl_minutes)
        return await run_async(_recorded(store, user_id, config, body))

    def recall_facts(
        queries: list[str],
        config: RunnableConfig,
        limit: int | None = None,
        runtime: _Runtime = None,
    ) -> str:
        user_id = user_of(config, runtime)
        body = _recall_logic(store, user_id, queries, _clamp(limit, max_limit), min_score)
        return run_sync(_recorded(store, user_id, config, body))

    async def arecall_facts(
        queries: list[str],
        config: RunnableConfig,
        limit: int | None = None,
        runtime: _Runtime = None,
    ) -> str:
        user_id = user_of(config, runtime)
        body = _recall_logic(store, user_id, queries, _clamp(limit, max_limit), min_score)
        return await run_async(_recorded(store, user_id, config, body))

    def update_fact(
        fact_id: str, fact: str, config: RunnableConfig, runtime: _Runtime = None
    ) -> str:
        user_id = user_of(config, runtime)
        body = _update_logic(store, user_id, fact_id, fact)
        return run_sync(_recorded(store, user_id, config, body))

    async def aupdate_fact(
        fact_id: str, fact: str, config: RunnableConfig, runtime: _Runtime = None
    ) -> str:
        user_id = user_of(config, runtime)
        body = _update_logic(store, user_id, fact_id, fact)
        return await run_async(_recorded(store, user_id, config, body))

    def forget_fact(fact_id: str, config: RunnableConfig, runtime: _Runtime = None) -> str:
        user_id = user_of(config, runtime)
        return run_sync(_recorded(store, user_id, config, _forget_logic(store, user_id, fact_id)))

    async def aforget_fact(fact_id: str, config: RunnableConfig, runtime: _Runtime = None) -> str:
        user_id = user_of(config, runtime)
        body = _forget_logic(store, user_id, fact_id)
        return await run_async(_recorded(store, user_id, config, body))

    bodies: dict[str, tuple[Callable[..., str], Callable[..., Any]]] = {
        "remember_fact": (remember_fact, aremember_fact),
        "recall_facts": (recall_facts, arecall_facts),
        "update_fact": (update_fact, aupdate_fact),
        "forget_fact": (forget_fact, aforget_fact),
    }
    tools = []
    for name in options.tools:
        func, coroutine = bodies[name]
        tools.append(
            StructuredTool.from_function(
                func=func,
                coroutine=coroutine,
                name=name,
                description=_DESCRIPTIONS[name],
                handle_tool_error=True,
            )
        )
    return tools


def _clamp(limit: int | None, max_limit: int) -> int:
    """The number of facts to recall: ``recall_limit`` when the model names none."""
    return max_limit if limit is None else max(1, min(int(limit), max_limit))


def _recorded(
    store: LongTermMemoryStore, user_id: str, config: RunnableConfig | None, body: Logic[str]
) -> Logic[str]:
    """``body``, after recording the run's thread under the user (for ``forget_user``).

    An agent whose only memory is these tools still names its checkpoint threads, so
    erasing the user deletes them too. The record is read on each call (one ``get``): an
    erase from another process may have removed it since.
    """
    thread_id = ((config or {}).get("configurable") or {}).get("thread_id")
    yield from RECORDER.note(store, user_id, thread_id)
    return (yield from body)
