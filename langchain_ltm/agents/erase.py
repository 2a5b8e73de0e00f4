"""Erase or export everything kept about one user: facts, session turns, threads.

:func:`forget_user` deletes the user's facts and every earlier version, the session turns
indexed by :class:`~langchain_ltm.agents.session.SessionMemoryMiddleware`, the thread
registry written by :class:`~langchain_ltm.agents.middleware.MemoryMiddleware` and, given a
LangGraph checkpointer, the checkpoints of every recorded thread. :func:`export_user_data`
returns the same data as one JSON-ready dict. Both are written once as sans-I/O generators
(:mod:`langchain_ltm._steps`) with thin sync and async shells.

The order of :func:`forget_user` is what makes it safe to re-run: the thread ids are read
first, the checkpoints are deleted, and the records that name the threads (session turns,
then the registry) go last. A run that stops half way leaves those records behind, so
running it again finds the same threads and finishes the job; a finished run leaves
nothing, and a second run reports zeros.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

from langgraph.store.base import BaseStore, PutOp

from langchain_ltm._labels import validate_user_id
from langchain_ltm._steps import Logic, Step, call, run_async, run_sync
from langchain_ltm.agents._registry import (
    DEFAULT_THREAD,
    RECORDER,
    session_namespace,
    thread_namespace,
)
from langchain_ltm.agents._store import require_store
from langchain_ltm.backends.base import SearchRequest, StoredItem
from langchain_ltm.facts import Fact
from langchain_ltm.facts import versions as layout
from langchain_ltm.store import LongTermMemoryStore

__all__ = [
    "ErasureReport",
    "aexport_user_data",
    "aforget_user",
    "export_user_data",
    "forget_user",
    "user_namespaces",
]

_PAGE = 500  # items read per search, and keys deleted per batch


@dataclass(frozen=True)
class ErasureReport:
    """What :func:`forget_user` deleted.

    Attributes:
        facts: Current facts deleted.
        versions: Earlier versions of those facts deleted (and any other item stored under
            the user's fact namespace).
        session_turns: Indexed session turns deleted.
        threads: Threads whose checkpoints were deleted (``0`` without a checkpointer).
        thread_ids: Every thread recorded for the user, sorted. Without a checkpointer their
            checkpoints are left as they are, but the records naming them are deleted: keep
            this list if you delete the checkpoints yourself.

    Example:
        >>> ErasureReport(facts=2, versions=1).to_dict()["versions"]
        1
    """

    facts: int = 0
    versions: int = 0
    session_turns: int = 0
    threads: int = 0
    thread_ids: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict (``thread_ids`` as a list)."""
        out = asdict(self)
        out["thread_ids"] = list(self.thread_ids)
        return out


def forget_user(
    store: LongTermMemoryStore | BaseStore, user_id: str, *, checkpointer: Any = None
) -> ErasureReport:
    """Erase one user everywhere: facts with versions, session turns, threads.

    Deletes, in this order: the checkpoints of every thread recorded for the user (when
    ``checkpointer`` is given), the user's facts and all their versions
    (``store.clear_user``), the session turns indexed for the user, and last the thread
    registry. Threads are found in the registry (both middlewares and the pre-model hook
    record every thread of the user; the memory tools alone only a thread where one of them
    was called) and in the session turns ``SessionMemoryMiddleware`` indexes. Other users
    are untouched.

    Idempotent: if it stops half way (a crash, a dropped connection), run it again; the
    records naming the threads are deleted last, so the second run finds the same threads
    and finishes. Once everything is gone it returns a report of zeros.

    A thread id belongs to one user. A thread that two users both used (a misuse: the
    checkpointer would mix their messages) is deleted for both, since its checkpoints hold
    the erased user's messages.

    Stop the user's runs first (and ``flush()`` a ``MemoryMiddleware`` that extracts in the
    background): a run still going can write new facts or turns after the erasure. Facts
    kept under another namespace (``LongTermMemoryConfig(namespace=...)``) are erased by
    passing ``store.with_options(namespace=...)``.

    Given a LangGraph store that is not a ``LongTermMemoryStore`` (``InMemoryStore``,
    ``PostgresStore``: what ``SessionMemoryMiddleware`` alone may run on), it erases what
    the package keeps there, the session turns and the thread registry, with the threads'
    checkpoints; the report counts no facts (such a store keeps none of ours: what other
    tools wrote in it under their own namespaces is theirs to delete).

    Args:
        store: The store the agent used (its facts, session turns and thread registry).
        user_id: Whose data to erase.
        checkpointer: The agent's LangGraph checkpointer (a ``BaseCheckpointSaver``, e.g.
            ``InMemorySaver``, ``PostgresSaver``); ``None`` leaves checkpoints alone (their
            ids are in the report).

    Returns:
        The counts deleted, as an :class:`ErasureReport`.

    Raises:
        InvalidUserIdError: ``user_id`` is missing, empty, not a string or too long
            (nothing is read or deleted).
        TypeError: ``checkpointer`` cannot delete threads (nothing is deleted).
        ValueError: ``checkpointer`` is a ``SqliteSaver`` (``AsyncSqliteSaver`` for
            :func:`aforget_user`) whose database has no checkpoint
            tables, so not the agent's (nothing is deleted, no table is created).

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> store = LongTermMemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=16)))
        >>> _ = store.remember("alice", ["Lives in Paris", "Has a cat"])
        >>> forget_user(store, "alice", checkpointer=InMemorySaver()).facts
        2
        >>> store.list_all("alice"), forget_user(store, "alice").facts
        ([], 0)
    """
    return run_sync(
        _forget(_erasable(store, "forget_user"), validate_user_id(user_id), _checked(checkpointer))
    )


async def aforget_user(
    store: LongTermMemoryStore | BaseStore, user_id: str, *, checkpointer: Any = None
) -> ErasureReport:
    """Async twin of :func:`forget_user`.

    A checkpointer without async deletion (the sync ``PostgresSaver``) is called in a worker
    thread.

    Args:
        store: The store the agent used (its facts, session turns and thread registry).
        user_id: Whose data to erase.
        checkpointer: The agent's LangGraph checkpointer; ``None`` leaves checkpoints alone.

    Returns:
        The counts deleted, as an :class:`ErasureReport`.

    Example:
        >>> import asyncio
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> store = LongTermMemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=16)))
        >>> _ = store.remember("alice", ["Lives in Paris", "Has a cat"])
        >>> asyncio.run(aforget_user(store, "alice")).facts
        2
    """
    erasable = _erasable(store, "aforget_user")
    return await run_async(_forget(erasable, validate_user_id(user_id), _checked(checkpointer)))


def export_user_data(store: LongTermMemoryStore | BaseStore, user_id: str) -> dict[str, Any]:
    """Everything kept about one user, as one JSON-ready dict (a data-access request).

    Args:
        store: The store the user's facts, session turns and thread records are in.
        user_id: Whose data to export.

    Returns:
        ``{"user_id", "facts", "other_items", "session_turns", "threads"}``: ``facts`` is
        ``store.export_user(user_id)`` (every field and every version, restorable with
        ``store.import_user``); ``other_items`` the other items of the user's fact
        namespace, which other clients wrote there (a LangMem memory with a structured
        ``content``, a deepagents file, any item without a text ``content``) and
        :func:`forget_user` deletes with the facts: ``namespace``, ``key``, ``value``,
        ``created_at`` and ``updated_at`` of each, by key; ``session_turns`` are the
        values of the indexed session turns, oldest first; ``threads`` the thread
        registry's values (``thread_id``,
        ``first_seen``, ``last_seen``), oldest first. Turns and thread records whose TTL
        has passed but that the engine still holds (until its sweep) are included, as
        :func:`forget_user` deletes them; expired facts are not (``export_user`` leaves
        them out). The checkpoints themselves are the checkpointer's: read them with
        ``agent.get_state`` for each ``thread_id``. Given a LangGraph store that is not a
        ``LongTermMemoryStore`` (what ``SessionMemoryMiddleware`` alone may run on, see
        :func:`forget_user`), ``facts`` and ``other_items`` are empty: it keeps none of ours.

    Raises:
        InvalidUserIdError: ``user_id`` is missing, empty, not a string or too long.
        TypeError: ``store`` is not a LangGraph store (a bare vectorstore: wrap it).

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> store = LongTermMemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=16)))
        >>> _ = store.remember("alice", "Lives in Paris")
        >>> data = export_user_data(store, "alice")
        >>> [f["content"] for f in data["facts"]], data["session_turns"], data["threads"]
        (['Lives in Paris'], [], [])
        >>> store.put(store.user_namespace("alice"), "m1", {"content": {"note": "tea"}})
        >>> [i["value"] for i in export_user_data(store, "alice")["other_items"]]
        [{'content': {'note': 'tea'}}]
    """
    erasable = _erasable(store, "export_user_data")
    return run_sync(_export(erasable, validate_user_id(user_id)))


async def aexport_user_data(store: LongTermMemoryStore | BaseStore, user_id: str) -> dict[str, Any]:
    """Async twin of :func:`export_user_data`.

    Args:
        store: The store the user's facts, session turns and thread records are in.
        user_id: Whose data to export.

    Returns:
        What :func:`export_user_data` returns.

    Raises:
        InvalidUserIdError: ``user_id`` is missing, empty, not a string or too long.

    Example:
        >>> import asyncio
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> store = LongTermMemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=16)))
        >>> _ = store.remember("alice", "Lives in Paris")
        >>> [f["content"] for f in asyncio.run(aexport_user_data(store, "alice"))["facts"]]
        ['Lives in Paris']
    """
    erasable = _erasable(store, "aexport_user_data")
    return await run_async(_export(erasable, validate_user_id(user_id)))


def user_namespaces(store: LongTermMemoryStore, user_id: str) -> tuple[tuple[str, ...], ...]:
    """Every namespace that holds something of ``user_id``'s in ``store``.

    The user's facts with their versions, the session turns and the thread registry: what
    :func:`forget_user` erases and :func:`export_user_data` returns (checkpoints aside),
    and what ``ltm migrate --user`` copies.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> store = LongTermMemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=16)))
        >>> user_namespaces(store, "alice")
        (('memories', 'alice'), ('ltm_sessions', 'alice'), ('ltm_threads', 'alice'))
    """
    return (store.user_namespace(user_id), session_namespace(user_id), thread_namespace(user_id))


# ---- logic, written once ----------------------------------------------------------------


def _erasable(store: Any, helper: str) -> LongTermMemoryStore | BaseStore:
    """``store`` if a user's data in it can be found: ours, or any other LangGraph store."""
    if isinstance(store, BaseStore) and not isinstance(store, LongTermMemoryStore):
        return store  # session turns and thread records only (SessionMemoryMiddleware's)
    return require_store(store, helper)


def _forget(
    store: LongTermMemoryStore | BaseStore, user_id: str, checkpointer: Any
) -> Logic[ErasureReport]:
    registry = yield from _scan(store, thread_namespace(user_id))
    turns = yield from _scan(store, session_namespace(user_id))
    thread_ids = _thread_ids(registry, turns)
    if checkpointer is not None and thread_ids:  # first: the records naming them still exist
        yield _has_checkpoint_tables(checkpointer)  # not a wrong file, before any delete
        for thread_id in thread_ids:
            yield _delete_thread(checkpointer, thread_id)
    facts: list[Fact] = []
    deleted = 0
    if isinstance(store, LongTermMemoryStore):
        # counted, not refreshed: the TTLs of what is about to go are no one's concern
        facts = yield Step(
            partial(store.list_all, refresh_ttl=False),
            partial(store.alist_all, refresh_ttl=False),
            (user_id,),
        )
        deleted = yield call(store, "clear_user", user_id)
    yield from _delete(store, turns)
    yield from _delete(store, registry)  # last: a re-run finds the threads until here
    RECORDER.forget(store, user_id)  # a thread the user reuses is recorded again
    return ErasureReport(
        facts=len(facts),
        versions=max(deleted - len(facts), 0),
        session_turns=len(turns),
        threads=len(thread_ids) if checkpointer is not None else 0,
        thread_ids=thread_ids,
    )


def _export(store: LongTermMemoryStore | BaseStore, user_id: str) -> Logic[dict[str, Any]]:
    facts: list[dict[str, Any]] = []
    others: list[StoredItem] = []
    if isinstance(store, LongTermMemoryStore):
        facts = yield call(store, "export_user", user_id)
        own = yield from _scan(store, store.user_namespace(user_id))
        others = [i for i in own if not (layout.is_fact(i) or layout.is_version(i))]
    turns = yield from _scan(store, session_namespace(user_id))
    registry = yield from _scan(store, thread_namespace(user_id))
    turns.sort(key=lambda i: (str(i.value.get("at", "")), i.created_at, _turn_order(i)))
    registry.sort(key=lambda i: (str(i.value.get("first_seen", "")), i.key))
    return {
        "user_id": user_id,
        "facts": facts,
        "other_items": [_item_record(item) for item in sorted(others, key=lambda i: i.key)],
        "session_turns": [dict(item.value) for item in turns],
        "threads": [dict(item.value) for item in registry],
    }


def _item_record(item: StoredItem) -> dict[str, Any]:
    """A client's item of the user's namespace, JSON-ready."""
    return {
        "namespace": list(item.namespace),
        "key": item.key,
        "value": dict(item.value),
        "created_at": layout.format_time(item.created_at),
        "updated_at": layout.format_time(item.updated_at),
    }


def _scan(store: LongTermMemoryStore | BaseStore, namespace: tuple[str, ...]) -> Logic[list[Any]]:
    """Every item of one namespace, expired ones too: the engine holds them until its sweep.

    A thread record or a session turn written with a TTL (the store's ``default_ttl``, in
    earlier releases) still names the user's data once it has expired; an erase that
    skipped it left that thread's checkpoints behind. Another LangGraph store is read
    page by page through its own ``search`` (what it shows).
    """
    if not isinstance(store, LongTermMemoryStore):
        found: list[Any] = []
        while True:
            page = yield Step(
                partial(store.search, limit=_PAGE, offset=len(found), refresh_ttl=False),
                partial(store.asearch, limit=_PAGE, offset=len(found), refresh_ttl=False),
                (namespace,),
            )
            found += page
            if len(page) < _PAGE:
                return [i for i in found if tuple(i.namespace) == namespace]  # not a child's
    request = SearchRequest(namespace, None, (), None, 0)  # no alive_at: expired ones too
    (hits,) = yield call(store.backend, "search", request)
    return [hit.item for hit in hits if hit.item.namespace == namespace]  # not a child's


def _delete(store: LongTermMemoryStore | BaseStore, items: list[Any]) -> Logic[None]:
    for start in range(0, len(items), _PAGE):
        ops = [PutOp(tuple(i.namespace), i.key, None) for i in items[start : start + _PAGE]]
        yield call(store, "batch", ops)


def _thread_ids(registry: Iterable[StoredItem], turns: Iterable[StoredItem]) -> tuple[str, ...]:
    """The checkpoint threads of a user: those recorded, and those their turns name.

    A turn stored before runs without a thread id recorded ``None`` names ``"default"``;
    that thread is the user's only if the registry says so (another user's thread may
    have that name).
    """
    ids = {str(i.value["thread_id"]) for i in registry if i.value.get("thread_id") is not None}
    for item in turns:
        thread = item.value.get("thread_id")
        if thread is not None and (str(thread) != DEFAULT_THREAD or DEFAULT_THREAD in ids):
            ids.add(str(thread))
    return tuple(sorted(ids))


def _turn_order(item: StoredItem) -> tuple[str, int]:
    turn = item.value.get("turn")
    return str(item.value.get("thread_id", "")), turn if isinstance(turn, int) else 0


def _delete_thread(checkpointer: Any, thread_id: str) -> Step:
    async def adelete(thread: str) -> None:
        try:
            await checkpointer.adelete_thread(thread)
        except NotImplementedError:  # a sync-only saver (PostgresSaver): run it off the loop
            await asyncio.to_thread(checkpointer.delete_thread, thread)

    return Step(checkpointer.delete_thread, adelete, (thread_id,))


SQLITE_CHECKPOINT_TABLES = ("checkpoints", "writes")  # what LangGraph's SqliteSaver.setup() creates


def _has_checkpoint_tables(checkpointer: Any) -> Step:
    """Refuse a ``SqliteSaver`` (or ``AsyncSqliteSaver``) whose file has no checkpoint tables.

    Its ``delete_thread`` creates the tables first (``setup()``), so on the wrong file (a
    typo'd path, another application's database) it deletes nothing and raises nothing;
    the erase would then delete the thread records, the only index of the user's threads,
    and the real checkpoints could never be found again. A checkpointer an agent wrote to
    has the tables; other savers need no check (Postgres raises on a missing table).
    """
    query = "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)"
    conn = getattr(checkpointer, "conn", None)

    def check() -> None:
        sqlite3 = sys.modules.get("sqlite3")  # not imported: not a SqliteSaver
        if sqlite3 is None or not isinstance(conn, sqlite3.Connection):
            return
        with getattr(checkpointer, "lock", None) or contextlib.nullcontext():
            rows = conn.execute(query, SQLITE_CHECKPOINT_TABLES).fetchall()
        _refuse_without_tables(rows)

    async def acheck() -> None:
        aiosqlite = sys.modules.get("aiosqlite")  # an AsyncSqliteSaver's connection
        if aiosqlite is None or not isinstance(conn, aiosqlite.Connection):
            check()  # one query on sqlite_master
            return
        lock = getattr(checkpointer, "lock", None) or contextlib.nullcontext()
        async with lock, conn.execute(query, SQLITE_CHECKPOINT_TABLES) as cursor:
            rows = await cursor.fetchall()
        _refuse_without_tables(list(rows))

    return Step(check, acheck)


def _refuse_without_tables(rows: list[Any]) -> None:
    if len(rows) < len(SQLITE_CHECKPOINT_TABLES):
        raise ValueError(
            "checkpointer: its SQLite database has no LangGraph checkpoint tables "
            f"({', '.join(SQLITE_CHECKPOINT_TABLES)}), so it is not the one the agent "
            "wrote its threads to. Nothing was deleted; pass the agent's checkpointer, or "
            "None to keep the checkpoints (their thread ids are then in the report)."
        )


def _checked(checkpointer: Any) -> Any:
    if checkpointer is not None and not callable(getattr(checkpointer, "delete_thread", None)):
        raise TypeError(
            f"checkpointer must be a LangGraph checkpointer (BaseCheckpointSaver) with "
            f"delete_thread, got {type(checkpointer).__name__}; pass the agent's "
            "checkpointer, or None to leave checkpoints alone."
        )
    return checkpointer
