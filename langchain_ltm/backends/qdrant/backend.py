"""Qdrant engine: embedded (``:memory:`` or a folder) for development, a server for production.

Items are stored in one collection as points laid out for ``langchain_qdrant``'s
``QdrantVectorStore`` (``page_content`` + ``metadata``), one point per embedded text, with
our own payload fields next to them (see ``_layout``). Point ids are deterministic
(``uuid5`` of namespace, key and index path), so writing an item twice, even from two
processes at once, is an idempotent upsert.

**Server** (``http(s)://`` URL or a remote ``QdrantClient``): every read is one Qdrant
request scoped by a ``models.Filter`` (the user label is a tenant payload index,
``is_tenant=True``; namespace, namespace prefixes, key and content hash have keyword
indexes). Per-user vector queries run with ``exact=True``: Qdrant finds the user's points
through the tenant index and scores them all, so recall is exact. The async twins use
``AsyncQdrantClient``.

**Embedded** (``qdrant-client`` local mode): local mode scores every point of the
collection and then checks filters in a Python loop, and ignores payload indexes. A local
collection has a single writer (this process), so the backend mirrors it in per-namespace
numpy blocks, loaded once when opened and updated on every write, and answers reads from
the mirror with exact scores (see ``_index``). Writes go to Qdrant first, which
stays the system of record. The async twins call the sync methods (the engine runs in this
process; a write to a folder blocks for its sqlite commit). Write through this backend
only: points another writer adds to the collection are not seen until :meth:`reload`.
Local mode is not thread-safe (a facet racing an upsert indexes past its arrays), so every
request to an embedded client holds one lock per client; mirror reads need none.

**Locks**: :meth:`~QdrantBackend.lock` is the base class's no-op in both modes
(``capabilities.cross_process_lock`` is ``False``). Embedded, that is exact: qdrant-client
locks the folder to one process, whose callers serialize themselves. Opening a folder that
another client holds waits up to ``lock_timeout`` seconds (2) for it, then raises a
``BackendError`` saying what to do (``_folder``), instead of qdrant-client's bare
``RuntimeError``. A Qdrant server has
no lock to take, so writers in several processes are not kept apart: their writes stay
idempotent upserts, but two read-modify-write sequences on one user may interleave. In one
process, the stores over one collection share their per-user locks (``lock_domain``): those
over one embedded client, and those over one server address, whichever client reaches it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import threading
from collections.abc import Awaitable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from langchain_ltm.errors import (
    BackendError,
    IncompatibleCollectionError,
    KeyTakenError,
    MissingDependencyError,
)

try:
    from qdrant_client import AsyncQdrantClient, QdrantClient
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise MissingDependencyError(
        "The Qdrant engine needs qdrant-client and langchain-qdrant: "
        'pip install "langchain-ltm[qdrant]"'
    ) from exc

from langchain_ltm.backends._index import NamespaceIndex
from langchain_ltm.backends.base import (
    Capabilities,
    Hit,
    ItemKey,
    ListRequest,
    Record,
    SearchRequest,
    StoredItem,
    VectorBackend,
)
from langchain_ltm.backends.qdrant._collection import CollectionSetup
from langchain_ltm.backends.qdrant._domains import (
    MIRRORS,
    Shared,
    domain_for,
    is_local,
    local_lock_for,
    shared_for,
)
from langchain_ltm.backends.qdrant._plans import (
    Layout,
    Plan,
    Written,
    drive_async,
    drive_sync,
    plan_count,
    plan_get,
    plan_indexed_paths,
    plan_load,
    plan_namespaces,
    plan_search,
    plan_sweep,
    plan_touch,
    plan_write,
)

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings
    from langchain_qdrant import QdrantVectorStore

logger = logging.getLogger(__name__)

__all__ = ["IncompatibleCollectionError", "QdrantBackend", "qdrant_backend"]

T = TypeVar("T")


class QdrantBackend(CollectionSetup, VectorBackend):
    """LongTermMemoryStore's engine over one Qdrant collection (embedded or server).

    Use :func:`qdrant_backend` to open one from a URL, a folder or ``":memory:"``.

    Args:
        client: A ``QdrantClient`` (local mode or remote).
        collection: Collection name; created on first use if missing.
        dims: Vector size. Needed only to create the collection before anything with
            vectors is written; checked against an existing collection.
        vector_name: The collection's dense vector name (``""``: the unnamed vector, as
            ``QdrantVectorStore`` uses by default).
        tenant_depth: Which namespace label is the tenant (user) label: 2 for the fact API's
            default ``("memories", <user>)``; use ``len(store namespace) + 1``.
        mirror: Serve reads from the in-process mirror (default: in embedded mode only).
            ``False`` in embedded mode sends every read to local mode as the server's read
            plans do (a ``models.Filter`` request); writes keep embedded mode's plan.
        aclient: ``AsyncQdrantClient`` for the async twins on a server (default: one built
            from ``client.init_options`` on first use).

    ``lock()``/``unlock()`` do nothing (see the module notes): embedded, one process owns
    the folder; a server offers no lock, so processes sharing one are not excluded.

    Example:
        >>> from qdrant_client import QdrantClient
        >>> backend = QdrantBackend(QdrantClient(":memory:"), collection="docs", dims=8)
        >>> backend.capabilities.extra["mode"], backend.count(("memories",))
        ('embedded', 0)
    """

    def __init__(
        self,
        client: QdrantClient,
        *,
        collection: str = "ltm_items",
        dims: int | None = None,
        vector_name: str = "",
        tenant_depth: int = 2,
        mirror: bool | None = None,
        aclient: AsyncQdrantClient | None = None,
    ) -> None:
        if not isinstance(client, QdrantClient):
            raise TypeError(
                f"client must be a qdrant_client.QdrantClient, got {type(client).__name__}; "
                "use qdrant_backend(url_or_path_or_client) for URLs, folders and async clients."
            )
        if tenant_depth < 1:
            raise ValueError(f"tenant_depth must be >= 1, got {tenant_depth!r}.")
        self.client = client
        self.collection = collection
        self.local = is_local(client)
        # local mode is not thread-safe: its requests take turns (a server needs no lock)
        self._client_lock: contextlib.AbstractContextManager[Any] = (
            local_lock_for(client) if self.local else contextlib.nullcontext()
        )
        self.layout = Layout(collection, vector_name, tenant_depth, server=not self.local)
        self.dims: int | None = None
        self._aclient = aclient
        self._owned: list[Any] = []
        self._closed = False
        self._setup_lock = threading.Lock()
        self._exists = self._check_collection(dims)
        use_mirror = self.local if mirror is None else mirror
        if use_mirror and not self.local:
            raise ValueError("mirror=True needs an embedded (local mode) client.")
        self._shared = shared_for(client, collection) if use_mirror else None
        # the stores over this collection (this client embedded, this server's address
        # otherwise) share their per-user locks
        self.lock_domain = domain_for(client, collection)
        if self._shared is not None:
            with self._shared.lock:
                if not self._shared.loaded:
                    self._load(self._shared)
        location = client.init_options.get("path") or client.init_options.get("location")
        self.capabilities = Capabilities(
            name="qdrant",
            persistent=location != ":memory:",
            native_async=not self.local,
            multi_process=not self.local,
            ttl=True,
            extra={"mode": "embedded" if self.local else "server", "mirror": use_mirror},
        )

    @classmethod
    def from_vectorstore(
        cls, vectorstore: QdrantVectorStore, *, tenant_depth: int = 2
    ) -> QdrantBackend:
        """The backend over a ``langchain_qdrant.QdrantVectorStore``'s collection."""
        if (vectorstore.content_payload_key, vectorstore.metadata_payload_key) != (
            "page_content",
            "metadata",
        ):
            raise IncompatibleCollectionError(
                "langchain-ltm writes page_content/metadata payload keys; build the "
                "QdrantVectorStore with the default content_payload_key and metadata_payload_key."
            )
        return cls(
            vectorstore.client,
            collection=vectorstore.collection_name,
            vector_name=vectorstore.vector_name,
            tenant_depth=tenant_depth,
        )

    def as_vectorstore(self, embedding: Embeddings) -> QdrantVectorStore:
        """A ``QdrantVectorStore`` over this collection (it sees every embedded text)."""
        from langchain_qdrant import QdrantVectorStore

        return QdrantVectorStore(
            self.client, self.collection, embedding, vector_name=self.layout.vector_name
        )

    # setup (the collection's creation and checks: CollectionSetup, in _collection)

    def _load(self, shared: Shared) -> None:
        if self._present():  # another backend over the client may have created it since
            for item, vectors in self._sync(plan_load(self.layout)):
                shared.mirror.put(item, vectors)
        shared.loaded = True

    def _rebuild(self, shared: Shared, *, quiet: bool = False) -> None:
        """Swap in a mirror read anew from the collection (kept as is if reading fails).

        ``quiet``: a failure is logged, not raised (after a failed write, whose own error
        is what the caller needs).
        """
        fresh = Shared(shared.lock)
        try:
            self._load(fresh)
        except Exception:
            if not quiet:
                raise
            logger.warning("could not rebuild the Qdrant mirror of %r", self.collection)
            return
        shared.mirror = fresh.mirror

    def reload(self) -> None:
        """Rebuild the embedded mirror from the collection (after outside writes)."""
        self._check_open()
        if self._shared is not None:
            with self._shared.lock:
                self._rebuild(self._shared)

    def close(self) -> None:
        """Close the clients this backend opened (a folder can then be opened again).

        Every later call of this backend raises a ``BackendError`` (its mirror would answer
        reads with what the folder held at the close, whatever was written there since).

        An ``AsyncQdrantClient`` it built for the async twins is closed too: on a fresh
        event loop, or as a task of the loop running in this thread (``aclose`` awaits it).
        Clients passed in are the caller's, and stay open (this backend refuses calls all
        the same).
        """
        for client in self._take_owned():
            closing = client.close()
            if inspect.isawaitable(closing):
                _finish(closing)

    async def aclose(self) -> None:
        """Async twin of :meth:`close`: awaits the closing of the async client."""
        for client in self._take_owned():
            closing = client.close()
            if inspect.isawaitable(closing):
                await closing

    def _take_owned(self) -> list[Any]:
        self._closed = True
        if self.client in self._owned:
            MIRRORS.pop(self.client, None)  # the client goes: so does its mirror
        owned, self._owned = self._owned, []
        return owned

    def _check_open(self) -> None:
        """Refuse a call after ``close()``, as the other engines do.

        Reads were answered from the mirror as the folder was at the close (another store
        may have rewritten it since), and writes failed blaming the server's reachability.

        Raises:
            BackendError: :meth:`close` or :meth:`aclose` was called.
        """
        if self._closed:
            options = self.client.init_options
            where = options.get("path") or options.get("location") or options.get("url")
            raise BackendError(
                f"This Qdrant store ({where or 'a client'}) was closed (close() or aclose()); "
                "open a new one."
            )

    # VectorBackend

    def get(self, keys: Sequence[ItemKey]) -> list[StoredItem | None]:  # noqa: D102
        self._check_open()
        if self._shared is not None:
            with self._shared.lock:
                return self._shared.mirror.get(keys)
        if not self._present():
            return [None] * len(keys)
        return self._sync(plan_get(self.layout, keys))

    def indexed_paths(self, keys: Sequence[ItemKey]) -> list[tuple[str, ...] | None]:  # noqa: D102
        self._check_open()
        if not self._present():
            return [None] * len(keys)
        return self._sync(plan_indexed_paths(self.layout, keys))

    def search(self, request: SearchRequest) -> list[list[Hit]]:  # noqa: D102
        self._check_open()
        self._check_query(request)
        if self._shared is not None:
            with self._shared.lock:
                return self._shared.mirror.search(request)
        if not self._present():
            return [[] for _ in range(1 if request.vectors is None else len(request.vectors))]
        return self._sync(plan_search(self.layout, request))

    def list_namespaces(self, request: ListRequest) -> list[tuple[str, ...]]:  # noqa: D102
        self._check_open()
        if self._shared is not None:
            with self._shared.lock:
                return self._shared.mirror.list_namespaces(request)
        found = self._sync(plan_namespaces(self.layout, request)) if self._present() else []
        return _list_page(found, request)

    def count(self, prefix: tuple[str, ...]) -> int:  # noqa: D102
        self._check_open()
        if self._shared is not None:
            with self._shared.lock:
                return self._shared.mirror.count(prefix)
        return self._sync(plan_count(self.layout, prefix)) if self._present() else 0

    def write(self, upserts: Sequence[Record], deletes: Sequence[ItemKey]) -> int:  # noqa: D102
        self._check_open()
        if not self._ready_for(upserts):
            return 0
        if self._shared is None:
            holders = self.lock_domain.holders
            with contextlib.ExitStack() as held:
                for lock in self._stripes_of(upserts, deletes):
                    holders.take(lock, _ON_ITS_LOOP)
                    held.callback(holders.release, lock)
                return self._sync(plan_write(self.layout, upserts, deletes)).deleted
        with self._shared.lock:
            try:
                written = self._sync(plan_write(self.layout, upserts, deletes))
            except KeyTakenError:  # refused before anything was sent
                raise
            except BaseException:
                # part of the write may have landed (points are saved one by one): the
                # mirror is rebuilt from the collection, so reads show what it holds
                self._rebuild(self._shared, quiet=True)
                raise
            _replay(self._shared.mirror, written)
        return written.deleted

    def touch(self, keys: Sequence[ItemKey], now: datetime) -> None:  # noqa: D102
        self._check_open()
        if not self._present():
            return
        if self._shared is None:
            self._sync(plan_touch(self.layout, keys, now))
            return
        with self._shared.lock:
            self._sync(plan_touch(self.layout, keys, now, exclusive=True))
            self._shared.mirror.touch(keys, now)

    def sweep(self, now: datetime) -> int:  # noqa: D102
        self._check_open()
        if not self._present():
            return 0
        if self._shared is None:
            return len(self._sync(plan_sweep(self.layout, now)))
        with self._shared.lock:
            removed = self._sync(plan_sweep(self.layout, now))
            for namespace, key in removed:
                self._shared.mirror.delete(namespace, key)
        return len(removed)

    async def atouch(self, keys: Sequence[ItemKey], now: datetime) -> None:  # noqa: D102
        self._check_open()
        if self.local or not self._present():
            return self.touch(keys, now)
        await self._async(plan_touch(self.layout, keys, now))

    async def asweep(self, now: datetime) -> int:  # noqa: D102
        self._check_open()
        if self.local or not self._present():
            return self.sweep(now)
        return len(await self._async(plan_sweep(self.layout, now)))

    async def aget(self, keys: Sequence[ItemKey]) -> list[StoredItem | None]:  # noqa: D102
        self._check_open()
        if self.local or not self._present():
            return self.get(keys)
        return await self._async(plan_get(self.layout, keys))

    async def asearch(self, request: SearchRequest) -> list[list[Hit]]:  # noqa: D102
        self._check_open()
        if self.local or not self._present():
            return self.search(request)
        self._check_query(request)
        return await self._async(plan_search(self.layout, request))

    async def alist_namespaces(self, request: ListRequest) -> list[tuple[str, ...]]:  # noqa: D102
        self._check_open()
        if self.local or not self._present():
            return self.list_namespaces(request)
        return _list_page(await self._async(plan_namespaces(self.layout, request)), request)

    async def acount(self, prefix: tuple[str, ...]) -> int:  # noqa: D102
        self._check_open()
        if self.local or not self._present():
            return self.count(prefix)
        return await self._async(plan_count(self.layout, prefix))

    async def awrite(self, upserts: Sequence[Record], deletes: Sequence[ItemKey]) -> int:  # noqa: D102
        self._check_open()
        if self.local or not self._present():
            # embedded: in process; server before the collection exists: created once, sync
            return self.write(upserts, deletes)
        self._ready_for(upserts)
        holders = self.lock_domain.holders
        held: list[threading.Lock] = []
        try:
            for lock in self._stripes_of(upserts, deletes):
                await holders.atake(lock)  # polled: a task of this loop may hold it
                held.append(lock)
            written: Written = await self._async(plan_write(self.layout, upserts, deletes))
        finally:
            for lock in reversed(held):
                holders.release(lock)
        return written.deleted

    def _stripes_of(
        self, upserts: Sequence[Record], deletes: Sequence[ItemKey]
    ) -> list[threading.Lock]:
        """Server plans: the key stripes this write takes (see ``_domains._Domain``)."""
        if not self.layout.server:
            return []
        keys = [(r.namespace, r.key) for r in upserts]
        return self.lock_domain.stripes_of([*keys, *deletes])

    # plumbing

    def _sync(self, plan: Plan[T]) -> T:
        with self._client_lock:
            return drive_sync(plan, self.client, self._error)

    async def _async(self, plan: Plan[T]) -> T:
        if self._aclient is None:
            self._aclient = AsyncQdrantClient(**self.client.init_options)
            self._owned.append(self._aclient)
        return await drive_async(plan, self._aclient, self._error)


_CLOSING: set[asyncio.Task[Any]] = set()  # closings scheduled by a sync close, until done


def _finish(closing: Awaitable[Any]) -> None:
    """Run ``closing`` (an async client's ``close()``) from sync code."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no loop in this thread: run it on a fresh one
        asyncio.run(_awaited(closing))
        return
    task = loop.create_task(_awaited(closing))
    _CLOSING.add(task)
    task.add_done_callback(_CLOSING.discard)


async def _awaited(closing: Awaitable[Any]) -> None:
    await closing


_ON_ITS_LOOP = (
    "A sync write of the store was made on an event loop while an async write of the same "
    "item is under way on that loop: it would wait forever. Call the a... method (aput, "
    "abatch, aremember, ...) with await inside async code."
)


def _replay(mirror: NamespaceIndex, written: Written) -> None:
    for item, vectors in written.items:
        mirror.put(item, vectors)
    for namespace, key in written.removed:
        mirror.delete(namespace, key)


def _list_page(found: list[tuple[str, ...]], request: ListRequest) -> list[tuple[str, ...]]:
    if request.max_depth is not None:
        found = list({ns[: request.max_depth] for ns in found})
    found.sort()
    return found[request.offset : request.offset + request.limit]


# the factory lives in _factory (it imports this module); it is still importable from here
from langchain_ltm.backends.qdrant._factory import qdrant_backend  # noqa: E402
