"""The adapter boundary: what a storage engine must do for LongTermMemoryStore.

A backend stores *items* (LangGraph's namespace + key + JSON value + timestamps), each with
zero or more unit-length float32 vectors, and answers scoped searches. It never embeds text
and never decides anything about facts: the store plans, the backend executes.

Rules every backend keeps (the contract suite checks them):
- ``write`` sets ``updated_at = record.now``. It keeps ``created_at`` of an item that already
  exists (a new item gets ``now``), unless ``record.created_at`` is set: then the item gets
  exactly that ``created_at``, new or not (restoring a backup), to the microsecond.
- ``write`` replaces an item's vectors (an item re-written with no vectors is no longer
  scored).
- ``search`` is scoped to ``prefix`` *inside the engine*, matching whole labels only.
- Scores are cosine similarities; an item's score is the best score of its vectors.
- Without vectors, results are ordered by ``updated_at`` descending, then namespace and key.
- With vectors, scored items come first (score descending), unscored ones after them.
- TTL (``capabilities.ttl``): ``write`` stores ``expires_at = record.now + ttl_minutes``
  (or ``None``); ``search`` and ``list_namespaces`` with ``alive_at`` leave out items with
  ``expires_at <= alive_at`` inside the engine, so ``limit`` still fills; ``get`` and
  ``count`` see every stored item (callers check :func:`is_alive`); ``sweep(now)``
  deletes what has expired, vectors included.
- ``lock(scope)`` excludes every other ``lock(scope)`` on the same store, in any process,
  until ``unlock(token)``; it is not reentrant. Engines with a single writer process keep
  the default (no lock: callers in one process serialize themselves, as the store does)
  and say so with ``Capabilities.cross_process_lock = False``.
- ``write`` of a record with ``create_only`` writes it only if no live item is at its key
  (none, or one expired at ``record.now``), checked inside the write's own critical
  section (transaction, lock); if any such key is taken, nothing of the batch is written
  and it raises :class:`~langchain_ltm.errors.KeyTakenError` naming those keys.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from langchain_ltm._filters import Filter
from langchain_ltm.errors import EmbeddingDimensionError

Vectors = npt.NDArray[np.float32]
ItemKey = tuple[tuple[str, ...], str]


@dataclass(frozen=True, slots=True)
class StoredItem:
    """One item as the backend holds it. Backends hand out copies, never their own values."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None  # TTL: gone from every read from this moment
    ttl_minutes: float | None = None  # TTL: what a refresh on read extends by


@dataclass(frozen=True, slots=True)
class Record:
    """An item to write. ``vectors`` has one row per text in ``texts`` (possibly zero rows).

    ``now`` becomes ``updated_at``. ``created_at`` (timezone-aware) is for restoring a
    backup: the item is stored with exactly that ``created_at`` even if it exists already.
    Left ``None``, an existing item keeps its ``created_at`` and a new one gets ``now``.
    ``ttl_minutes`` (TTL engines): the item expires at ``now + ttl_minutes``; ``None``
    means it never expires (a re-write without a TTL clears an earlier one). ``expires_at``
    (timezone-aware) is for restoring a copy: the item expires exactly then, and reads
    refresh it by ``ttl_minutes`` from there (its last refresh need not be ``now``).
    ``create_only``: written only where no live item is at the key when the write runs
    (a compare-and-set of "absent"); else the write raises ``KeyTakenError`` and writes
    nothing (a put read as a new key, written without the user's lock).
    """

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    texts: tuple[str, ...]
    paths: tuple[str, ...]
    vectors: Vectors | None
    now: datetime
    created_at: datetime | None = None
    ttl_minutes: float | None = None
    expires_at: datetime | None = None
    create_only: bool = False

    def __post_init__(self) -> None:
        for name in ("created_at", "expires_at"):
            moment = getattr(self, name)
            if moment is not None and moment.utcoffset() is None:
                raise ValueError(
                    f"Record.{name} must be timezone-aware, got {moment!r}: use "
                    "datetime(..., tzinfo=timezone.utc) or datetime.fromisoformat('...+00:00')."
                )

    @property
    def expires(self) -> datetime | None:
        """When the written item expires: ``expires_at`` if given, else ``now + ttl_minutes``."""
        if self.expires_at is not None:
            return self.expires_at
        return expiry(self.now, self.ttl_minutes)


class Hit(NamedTuple):
    """A search result: the item and its score (``None`` when it was not ranked)."""

    item: StoredItem
    score: float | None


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """Items under ``prefix`` that pass ``filter``, ranked against each row of ``vectors``.

    With ``vectors`` of shape ``(q, d)`` the answer has ``q`` lists (one per query row);
    without vectors it has one list. ``limit=None`` means every match.
    """

    prefix: tuple[str, ...]
    vectors: Vectors | None = None
    filter: Filter = ()
    limit: int | None = 10
    offset: int = 0
    alive_at: datetime | None = None  # TTL: leave out items with expires_at <= alive_at
    # one user's namespace: exact over the user's rows, never an approximate index walk,
    # however many rows the user has (engines that choose by scope size read it)
    one_user: bool = False


@dataclass(frozen=True, slots=True)
class ListRequest:
    """LangGraph's ListNamespacesOp, validated."""

    conditions: tuple[tuple[str, tuple[str, ...]], ...] = ()
    max_depth: int | None = None
    limit: int = 100
    offset: int = 0
    alive_at: datetime | None = None  # TTL: namespaces holding only expired items vanish


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What an engine can do natively (the store works around what it cannot)."""

    name: str
    persistent: bool = False
    native_async: bool = False
    multi_process: bool = False
    cross_process_lock: bool = False  # lock() excludes other processes, not only a no-op
    ttl: bool = False  # expires_at is stored and honoured; touch() and sweep() work
    extra: dict[str, Any] = field(default_factory=dict)


class VectorBackend(ABC):
    """One engine behind LongTermMemoryStore.

    Subclasses implement the sync methods. The async twins default to calling the sync
    method directly, which is right for in-process engines that never block on I/O;
    network engines override them with native async code.
    """

    capabilities: Capabilities

    @abstractmethod
    def get(self, keys: Sequence[ItemKey]) -> list[StoredItem | None]:
        """Items by (namespace, key), aligned with ``keys``."""

    @abstractmethod
    def search(self, request: SearchRequest) -> list[list[Hit]]:
        """Scoped, filtered, optionally ranked items; see :class:`SearchRequest`."""

    @abstractmethod
    def list_namespaces(self, request: ListRequest) -> list[tuple[str, ...]]:
        """Namespaces holding at least one item, sorted, matched on whole labels."""

    def indexed_paths(self, keys: Sequence[ItemKey]) -> list[tuple[str, ...] | None]:
        """The paths each item's texts were embedded from (``Record.paths``, in any order).

        Aligned with ``keys``: ``()`` for an item without vectors (``index=False``), ``None``
        for a key the engine does not hold. A copy (``ltm migrate``) uses it to index an
        item as the source did. An engine that cannot tell raises ``NotImplementedError``
        (the default), and the copy indexes the store's default fields.
        """
        raise NotImplementedError

    @abstractmethod
    def write(self, upserts: Sequence[Record], deletes: Sequence[ItemKey]) -> int:
        """Apply a batch of writes atomically; return how many of ``deletes`` existed."""

    @abstractmethod
    def count(self, prefix: tuple[str, ...]) -> int:
        """Number of items under ``prefix``."""

    def touch(self, keys: Sequence[ItemKey], now: datetime) -> None:
        """TTL engines: a refresh on read, ``expires_at = now + ttl_minutes``.

        Items without a TTL are left alone, and so are items already expired at ``now``
        (a refresh never brings an expired item back: LangGraph's PostgresStore with
        ``omit_expired`` does the same). Missing keys are ignored.
        """
        raise NotImplementedError(f"{self.capabilities.name} does not support TTL.")

    def sweep(self, now: datetime) -> int:
        """TTL engines: delete every item with ``expires_at <= now``; return how many."""
        raise NotImplementedError(f"{self.capabilities.name} does not support TTL.")

    async def atouch(self, keys: Sequence[ItemKey], now: datetime) -> None:
        """Async twin of :meth:`touch`."""
        self.touch(keys, now)

    async def asweep(self, now: datetime) -> int:
        """Async twin of :meth:`sweep`."""
        return self.sweep(now)

    def lock(self, scope: str) -> Any:
        """Block until this caller holds the exclusive lock ``scope``; return its token.

        The lock spans processes on engines with ``capabilities.cross_process_lock``; it is
        not reentrant (a holder asking again for the same scope waits for itself). Always
        pair it with :meth:`unlock` in a ``finally``. Default: no lock at all (token
        ``None``), which is right for an engine with a single writer process, whose callers
        serialize themselves in process (the store holds its own per-user lock).

        Example:
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> from langchain_core.vectorstores import InMemoryVectorStore
            >>> from langchain_ltm.backends import backend_for
            >>> backend = backend_for(InMemoryVectorStore(DeterministicFakeEmbedding(size=8)))
            >>> token = backend.lock("alice")
            >>> try:
            ...     n = backend.count(("memories", "alice"))  # read, then write...
            ... finally:
            ...     backend.unlock(token)
        """
        return None

    def unlock(self, token: Any) -> None:
        """Release the lock :meth:`lock` returned ``token`` for. Default: nothing."""
        return None

    async def alock(self, scope: str) -> Any:
        """Async twin of :meth:`lock`.

        Default: calls :meth:`lock`, right for the no-op lock; an engine whose lock waits
        overrides it to wait without blocking the event loop.
        """
        return self.lock(scope)

    async def aunlock(self, token: Any) -> None:
        """Async twin of :meth:`unlock`."""
        self.unlock(token)

    def close(self) -> None:
        """Release what the backend opened (connections, file locks). Default: nothing."""
        return None

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        self.close()

    async def aget(self, keys: Sequence[ItemKey]) -> list[StoredItem | None]:
        """Async twin of :meth:`get`."""
        return self.get(keys)

    async def asearch(self, request: SearchRequest) -> list[list[Hit]]:
        """Async twin of :meth:`search`."""
        return self.search(request)

    async def alist_namespaces(self, request: ListRequest) -> list[tuple[str, ...]]:
        """Async twin of :meth:`list_namespaces`."""
        return self.list_namespaces(request)

    async def awrite(self, upserts: Sequence[Record], deletes: Sequence[ItemKey]) -> int:
        """Async twin of :meth:`write`."""
        return self.write(upserts, deletes)

    async def acount(self, prefix: tuple[str, ...]) -> int:
        """Async twin of :meth:`count`."""
        return self.count(prefix)


def normalize_batch(
    upserts: Sequence[Record], deletes: Sequence[ItemKey]
) -> tuple[list[Record], list[ItemKey]]:
    """A write's own order, as every engine applies it: the last upsert of a key wins.

    A delete beats upserts of its key.
    """
    gone = dict.fromkeys(deletes)
    last: dict[ItemKey, Record] = {}
    for record in upserts:
        last[(record.namespace, record.key)] = record
    return [r for k, r in last.items() if k not in gone], list(gone)


def namespace_matches(
    namespace: tuple[str, ...], conditions: tuple[tuple[str, tuple[str, ...]], ...]
) -> bool:
    """LangGraph's match conditions on whole labels, ``*`` matching any one label."""
    for match_type, path in conditions:
        if len(namespace) < len(path):
            return False
        labels = namespace if match_type == "prefix" else namespace[len(namespace) - len(path) :]
        if any(p != "*" and p != n for p, n in zip(path, labels, strict=False)):
            return False
    return True


TIE = 1e-6
"""Scores closer than this are tied (equal texts can differ in the last float bits)."""


def by_score_then_key(hits: list[Hit]) -> list[Hit]:
    """Ranked ``hits`` in one order, whatever order the engine returned them in.

    Best score first, ties by namespace and key. An engine that ranks approximately
    (Qdrant's server, Chroma) returns tied items in an order that changes with the number
    asked for, so one page repeated items of the page before and another skipped some.
    Scores within :data:`TIE` are equal here.
    """
    return sorted(
        hits, key=lambda h: (-round((h.score or 0.0) / TIE), h.item.namespace, h.item.key)
    )


TIED_WINDOW = 256
"""How far past ``4 * wanted`` a window widens to take in a tied group whole: an engine
that ranks approximately read every copy of a text many users share (13 times slower);
past it, ties at a page's edge keep the order of what the window held."""


def tied_past_window(hits: Sequence[Hit], wanted: int, lowest: float, window: int) -> bool:
    """Whether the hit at place ``wanted`` ties with the lowest score of a full ``window``.

    ``lowest``: the lowest score a window that was not exhausted returned. More items of
    that score may lie past the window, and which of them the page holds would depend on
    the window: search again, wider (up to :data:`TIED_WINDOW` past ``4 * wanted``).
    """
    if len(hits) < wanted or window >= 4 * wanted + TIED_WINDOW:
        return False
    score = hits[wanted - 1].score
    return score is not None and abs(score - lowest) <= TIE


def is_alive(item: StoredItem, at: datetime | None) -> bool:
    """Whether ``item`` has not expired at ``at`` (``None``: no TTL check at all)."""
    return at is None or item.expires_at is None or item.expires_at > at


def taken_keys(upserts: Sequence[Record], stored: Sequence[StoredItem | None]) -> list[ItemKey]:
    """The keys of ``upserts`` marked ``create_only`` whose ``stored`` item is alive.

    ``stored``: the items at the upserts' keys as the write sees them, aligned with
    ``upserts``. An engine raises ``KeyTakenError(taken_keys(...))`` when it is not empty.
    """
    return [
        (r.namespace, r.key)
        for r, item in zip(upserts, stored, strict=True)
        if r.create_only and item is not None and is_alive(item, r.now)
    ]


def expiry(now: datetime, ttl_minutes: float | None) -> datetime | None:
    """``now + ttl_minutes``, or ``None`` without a TTL: the one place engines compute it."""
    return None if ttl_minutes is None else now + timedelta(minutes=ttl_minutes)


def dimension_error(stored: int, given: int, elsewhere: str) -> EmbeddingDimensionError:
    """The error for embeddings whose size differs from the stored vectors'.

    ``elsewhere`` names where new memories could go instead ("a new file (or table)").
    """
    return EmbeddingDimensionError(
        f"The stored vectors have {stored} dimensions but the embeddings return {given}. "
        "The embedding model changed: keep the original model, or store the new memories "
        f"in {elsewhere} and re-remember them there."
    )


def batch_dims(upserts: Sequence[Record], known: int | None, elsewhere: str) -> int | None:
    """The one vector size of a batch (``None`` without vectors), checked.

    Raises ``EmbeddingDimensionError`` when the batch mixes sizes, or when its size differs
    from ``known`` (the engine's stored size; ``elsewhere`` as in :func:`dimension_error`).
    """
    sizes = {r.vectors.shape[1] for r in upserts if r.vectors is not None and len(r.vectors)}
    if len(sizes) > 1:
        raise EmbeddingDimensionError(
            f"One batch holds vectors of several sizes: {sorted(sizes)}. "
            "Use one embedding model per store."
        )
    dims = sizes.pop() if sizes else None
    if dims is not None and known is not None and dims != known:
        raise dimension_error(known, dims, elsewhere)
    return dims


def check_scope(scope: Any) -> str:
    """The scope of ``lock(scope)``, checked."""
    if not isinstance(scope, str):
        raise TypeError(f"lock() takes a str scope, got {type(scope).__name__}.")
    return scope


def check_token(token: Any, kind: type[Any]) -> Any:
    """The token of ``unlock(token)``, checked to be the engine's own (``kind``)."""
    if not isinstance(token, kind):
        raise TypeError(f"unlock() takes the token lock() returned, got {token!r}.")
    return token
