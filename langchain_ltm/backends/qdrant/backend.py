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
import os
import threading
import weakref
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from langchain_ltm.errors import (
    BackendError,
    EmbeddingDimensionError,
    IncompatibleCollectionError,
    LTMError,
    MissingDependencyError,
)

try:
    from qdrant_client import AsyncQdrantClient, QdrantClient, models
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise MissingDependencyError(
        "The Qdrant engine needs qdrant-client and langchain-qdrant: "
        'pip install "langchain-ltm[qdrant]"'
    ) from exc

from langchain_ltm._loop_locks import StripedLocks
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
from langchain_ltm.backends.qdrant._folder import DEFAULT_LOCK_TIMEOUT, open_folder
from langchain_ltm.backends.qdrant._layout import BOOL_INDEXES, INTEGER_INDEXES, KEYWORD_INDEXES
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

    from langchain_ltm._embedder import EmbeddingsLike

logger = logging.getLogger(__name__)

__all__ = ["IncompatibleCollectionError", "QdrantBackend", "qdrant_backend"]

T = TypeVar("T")


@dataclass
class _Shared:
    """One embedded collection's mirror, shared by every backend over the same client."""

    lock: threading.RLock = field(default_factory=threading.RLock)
    mirror: NamespaceIndex = field(default_factory=NamespaceIndex)
    loaded: bool = False


_MIRRORS: weakref.WeakKeyDictionary[QdrantClient, dict[str, _Shared]] = weakref.WeakKeyDictionary()
_LOCAL_LOCKS: weakref.WeakKeyDictionary[QdrantClient, threading.RLock] = weakref.WeakKeyDictionary()
_LOCAL_LOCKS_GUARD = threading.Lock()


class QdrantBackend(VectorBackend):
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
        self.local = _is_local(client)
        # local mode is not thread-safe: its requests take turns (a server needs no lock)
        self._client_lock: contextlib.AbstractContextManager[Any] = (
            _local_lock_for(client) if self.local else contextlib.nullcontext()
        )
        self.layout = Layout(collection, vector_name, tenant_depth, server=not self.local)
        self.dims: int | None = None
        self._aclient = aclient
        self._owned: list[Any] = []
        self._setup_lock = threading.Lock()
        self._exists = self._check_collection(dims)
        use_mirror = self.local if mirror is None else mirror
        if use_mirror and not self.local:
            raise ValueError("mirror=True needs an embedded (local mode) client.")
        self._shared = _shared_for(client, collection) if use_mirror else None
        # the stores over this collection (this client embedded, this server's address
        # otherwise) share their per-user locks
        self.lock_domain = _domain_for(client, collection)
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

    # setup

    def _check_collection(self, dims: int | None) -> bool:
        """Check an existing collection once; learn its vector size. True if it exists."""
        name, vector_name = self.collection, self.layout.vector_name
        try:
            with self._client_lock:
                if not self.client.collection_exists(name):
                    self.dims = dims
                    if dims is not None:
                        self._create(dims)
                        return True
                    return False
                info = self.client.get_collection(name)
        except LTMError:
            raise
        except Exception as exc:
            raise self._error("get_collection", exc) from exc
        vectors = info.config.params.vectors
        params = vectors.get(vector_name) if isinstance(vectors, dict) else vectors
        if isinstance(vectors, models.VectorParams) and vector_name:
            params = None
        if params is None:
            names = sorted(vectors) if isinstance(vectors, dict) else ['""']
            raise IncompatibleCollectionError(
                f"Qdrant collection {name!r} has no dense vector named {vector_name!r} "
                f"(it has {', '.join(names) or 'none'}): pass vector_name=<one of those>, or "
                "use another collection name."
            )
        if params.distance != models.Distance.COSINE or params.multivector_config is not None:
            raise IncompatibleCollectionError(
                f"Qdrant collection {name!r} uses {params.distance.value} distance"
                f"{' with multivectors' if params.multivector_config else ''}; langchain-ltm "
                "ranks by cosine similarity. Use a new collection name (it is created with "
                "Distance.COSINE)."
            )
        if dims is not None and dims != params.size:
            raise EmbeddingDimensionError(
                f"Qdrant collection {name!r} holds {params.size}-dimensional vectors but the "
                f"embeddings return {dims}. The embedding model changed: keep the original "
                "model, or pass collection=<new name> and re-remember the facts there."
            )
        self.dims = params.size
        if self.layout.server:
            self._ensure_indexes(set(info.payload_schema or {}))
        return True

    def _create(self, dims: int) -> None:
        vector = models.VectorParams(size=dims, distance=models.Distance.COSINE)
        name = self.layout.vector_name
        with self._client_lock:
            self.client.create_collection(self.collection, {name: vector} if name else vector)
        if self.layout.server:
            self._ensure_indexes(set())

    def _ensure_indexes(self, existing: set[str]) -> None:
        schemas: dict[str, Any] = {
            "user": models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True),
            **{key: models.PayloadSchemaType.KEYWORD for key in KEYWORD_INDEXES},
            **{key: models.PayloadSchemaType.BOOL for key in BOOL_INDEXES},
            **{key: models.PayloadSchemaType.INTEGER for key in INTEGER_INDEXES},
        }
        for key, schema in schemas.items():
            if key not in existing:
                self.client.create_payload_index(self.collection, key, schema, wait=True)

    def _present(self) -> bool:
        """Whether the collection exists; re-checked until it does (another writer may)."""
        if not self._exists:
            with self._setup_lock:
                if not self._exists and self._collection_exists():
                    self._exists = self._check_collection(self.dims)
        return self._exists

    def _collection_exists(self) -> bool:
        try:
            with self._client_lock:
                return bool(self.client.collection_exists(self.collection))
        except Exception as exc:
            raise self._error("collection_exists", exc) from exc

    def _ready_for(self, upserts: Sequence[Record]) -> bool:
        """Create the collection on the first write (its size from the vectors); check sizes."""
        if not self._present() and not upserts:
            return False
        for record in upserts:
            if record.vectors is not None and len(record.vectors):
                given = int(record.vectors.shape[1])
                if self.dims is not None and given != self.dims:
                    raise self._dims_error(given)
                self.dims = given
        if self._exists:
            return True
        with self._setup_lock:
            if not self._exists:
                if self.dims is None:
                    raise ValueError(
                        f"Qdrant collection {self.collection!r} does not exist yet and nothing "
                        "written so far had vectors to size it: pass dims=<embedding size> "
                        "(or embeddings=...) to qdrant_backend()."
                    )
                try:
                    self._create(self.dims)
                except Exception as exc:
                    if not self._collection_exists():
                        raise self._error("create_collection", exc) from exc
                self._exists = True
        return True

    def _load(self, shared: _Shared) -> None:
        if self._present():  # another backend over the client may have created it since
            for item, vectors in self._sync(plan_load(self.layout)):
                shared.mirror.put(item, vectors)
        shared.loaded = True

    def _rebuild(self, shared: _Shared, *, quiet: bool = False) -> None:
        """Swap in a mirror read anew from the collection (kept as is if reading fails).

        ``quiet``: a failure is logged, not raised (after a failed write, whose own error
        is what the caller needs).
        """
        fresh = _Shared(shared.lock)
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
        if self._shared is not None:
            with self._shared.lock:
                self._rebuild(self._shared)

    def close(self) -> None:
        """Close the clients this backend opened (a folder can then be opened again).

        An ``AsyncQdrantClient`` it built for the async twins is closed too: on a fresh
        event loop, or as a task of the loop running in this thread (``aclose`` awaits it).
        Clients passed in are the caller's, and stay open.
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
        if self.client in self._owned:
            _MIRRORS.pop(self.client, None)  # the client goes: so does its mirror
        owned, self._owned = self._owned, []
        return owned

    # VectorBackend

    def get(self, keys: Sequence[ItemKey]) -> list[StoredItem | None]:  # noqa: D102
        if self._shared is not None:
            with self._shared.lock:
                return self._shared.mirror.get(keys)
        if not self._present():
            return [None] * len(keys)
        return self._sync(plan_get(self.layout, keys))

    def indexed_paths(self, keys: Sequence[ItemKey]) -> list[tuple[str, ...] | None]:  # noqa: D102
        if not self._present():
            return [None] * len(keys)
        return self._sync(plan_indexed_paths(self.layout, keys))

    def search(self, request: SearchRequest) -> list[list[Hit]]:  # noqa: D102
        self._check_query(request)
        if self._shared is not None:
            with self._shared.lock:
                return self._shared.mirror.search(request)
        if not self._present():
            return [[] for _ in range(1 if request.vectors is None else len(request.vectors))]
        return self._sync(plan_search(self.layout, request))

    def list_namespaces(self, request: ListRequest) -> list[tuple[str, ...]]:  # noqa: D102
        if self._shared is not None:
            with self._shared.lock:
                return self._shared.mirror.list_namespaces(request)
        found = self._sync(plan_namespaces(self.layout, request)) if self._present() else []
        return _list_page(found, request)

    def count(self, prefix: tuple[str, ...]) -> int:  # noqa: D102
        if self._shared is not None:
            with self._shared.lock:
                return self._shared.mirror.count(prefix)
        return self._sync(plan_count(self.layout, prefix)) if self._present() else 0

    def write(self, upserts: Sequence[Record], deletes: Sequence[ItemKey]) -> int:  # noqa: D102
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
            except BaseException:
                # part of the write may have landed (points are saved one by one): the
                # mirror is rebuilt from the collection, so reads show what it holds
                self._rebuild(self._shared, quiet=True)
                raise
            _replay(self._shared.mirror, written)
        return written.deleted

    def touch(self, keys: Sequence[ItemKey], now: datetime) -> None:  # noqa: D102
        if not self._present():
            return
        if self._shared is None:
            self._sync(plan_touch(self.layout, keys, now))
            return
        with self._shared.lock:
            self._sync(plan_touch(self.layout, keys, now, exclusive=True))
            self._shared.mirror.touch(keys, now)

    def sweep(self, now: datetime) -> int:  # noqa: D102
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
        if self.local or not self._present():
            return self.touch(keys, now)
        await self._async(plan_touch(self.layout, keys, now))

    async def asweep(self, now: datetime) -> int:  # noqa: D102
        if self.local or not self._present():
            return self.sweep(now)
        return len(await self._async(plan_sweep(self.layout, now)))

    async def aget(self, keys: Sequence[ItemKey]) -> list[StoredItem | None]:  # noqa: D102
        if self.local or not self._present():
            return self.get(keys)
        return await self._async(plan_get(self.layout, keys))

    async def asearch(self, request: SearchRequest) -> list[list[Hit]]:  # noqa: D102
        if self.local or not self._present():
            return self.search(request)
        self._check_query(request)
        return await self._async(plan_search(self.layout, request))

    async def alist_namespaces(self, request: ListRequest) -> list[tuple[str, ...]]:  # noqa: D102
        if self.local or not self._present():
            return self.list_namespaces(request)
        return _list_page(await self._async(plan_namespaces(self.layout, request)), request)

    async def acount(self, prefix: tuple[str, ...]) -> int:  # noqa: D102
        if self.local or not self._present():
            return self.count(prefix)
        return await self._async(plan_count(self.layout, prefix))

    async def awrite(self, upserts: Sequence[Record], deletes: Sequence[ItemKey]) -> int:  # noqa: D102
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
        """Server plans: the key stripes this write takes (see ``_Domain``)."""
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

    def _check_query(self, request: SearchRequest) -> None:
        if request.vectors is not None and self.dims is not None:
            given = int(request.vectors.shape[1])
            if given != self.dims:
                raise self._dims_error(given)

    def _dims_error(self, given: int) -> EmbeddingDimensionError:
        return EmbeddingDimensionError(
            f"The Qdrant collection {self.collection!r} holds {self.dims}-dimensional vectors "
            f"but the embeddings return {given}. The embedding model changed: keep the original "
            "model, or store the new memories in a new collection and re-remember them there."
        )

    def _error(self, method: str, exc: Exception) -> Exception:
        if isinstance(exc, LTMError):
            return exc
        where = self.client.init_options.get("url") or self.client.init_options.get("path")
        where = where or self.client.init_options.get("location") or "the configured host"
        text = str(exc).lower()
        if "disk is full" in text or "no space left" in text:
            return BackendError(
                f"Qdrant {method} on collection {self.collection!r} failed: the disk holding "
                f"{where} is full ({exc}). Free space or move the store, then retry; what was "
                "acknowledged before is kept."
            )
        if "readonly" in text or "read-only" in text:
            return BackendError(
                f"Qdrant {method} on collection {self.collection!r} failed: {where} is "
                f"read-only ({exc}). Open a folder this process may write to."
            )
        return BackendError(
            f"Qdrant {method} on collection {self.collection!r} failed: "
            f"{type(exc).__name__}: {exc}. Check that Qdrant at {where} is reachable, the API "
            "key allows writes and the collection was not changed by another tool."
        )


def qdrant_backend(
    client_or_url_or_path: QdrantClient | AsyncQdrantClient | str | os.PathLike[str],
    *,
    collection: str = "ltm_items",
    dims: int | None = None,
    embeddings: EmbeddingsLike | None = None,
    vector_name: str = "",
    tenant_depth: int = 2,
    api_key: str | None = None,
    prefer_grpc: bool = False,
    mirror: bool | None = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    **client_options: Any,
) -> QdrantBackend:
    """Open a :class:`QdrantBackend` from a client, a server URL, a folder or ``":memory:"``.

    Args:
        client_or_url_or_path: ``":memory:"`` (embedded, this process only), a folder path
            (embedded, persistent, one process at a time), an ``http(s)://`` URL (server),
            or a ``QdrantClient`` / remote ``AsyncQdrantClient``.
        collection: Collection name; created (cosine distance) if missing.
        dims: Vector size, checked against an existing collection.
        embeddings: Used once, only to learn ``dims`` when the collection does not exist
            and ``dims`` is not given.
        vector_name: Dense vector name in the collection (``""``: the unnamed vector).
        tenant_depth: Namespace depth of the user label (the tenant index): 2 for the fact
            API's default namespace ``("memories",)``.
        api_key: Server API key (URL form only).
        prefer_grpc: Talk gRPC to the server (URL form only).
        mirror: See :class:`QdrantBackend`.
        lock_timeout: Folder form only: seconds to wait while another client (another
            process, or another store in this one) has the folder open, before raising a
            ``BackendError`` that says what to do (see ``_folder``).
        **client_options: More ``QdrantClient`` options for the URL form (``timeout``...).

    Example:
        >>> backend = qdrant_backend(":memory:", collection="facts", dims=8)
        >>> backend.capabilities.name, backend.capabilities.persistent
        ('qdrant', False)
    """
    aclient: AsyncQdrantClient | None = None
    owned = False
    target = client_or_url_or_path
    if isinstance(target, QdrantClient):
        client = target
    elif isinstance(target, AsyncQdrantClient):
        options = target.init_options
        if options.get("path") or options.get("location") == ":memory:":
            raise ValueError(
                "An embedded AsyncQdrantClient cannot be shared with a sync client: pass a "
                "QdrantClient (or the path / ':memory:') for embedded mode."
            )
        client, aclient, owned = QdrantClient(**options), target, True
    elif isinstance(target, (str, os.PathLike)):
        where = os.fspath(target)
        if where == ":memory:":
            client = QdrantClient(location=":memory:")
        elif where.startswith(("http://", "https://")):
            client = QdrantClient(
                url=where, api_key=api_key, prefer_grpc=prefer_grpc, **client_options
            )
        else:
            client = open_folder(where, lock_timeout)
        owned = True
    else:
        raise TypeError(
            "qdrant_backend() takes a QdrantClient, an AsyncQdrantClient, a URL, a folder path "
            f"or ':memory:', got {type(target).__name__}."
        )
    try:
        if dims is None and embeddings is not None and not client.collection_exists(collection):
            dims = len(embeddings.embed_query("dimension probe"))
        backend = QdrantBackend(
            client,
            collection=collection,
            dims=dims,
            vector_name=vector_name,
            tenant_depth=tenant_depth,
            mirror=mirror,
            aclient=aclient,
        )
    except Exception as exc:
        if owned:
            client.close()
        if isinstance(exc, (LTMError, ValueError, TypeError)) or _is_local(client):
            raise
        url = client.init_options.get("url") or client.init_options.get("host") or "the server"
        raise BackendError(
            f"Could not set up Qdrant collection {collection!r} at {url}: "
            f"{type(exc).__name__}: {exc}. Check that the server is up and reachable at that "
            "URL, and the API key if it needs one."
        ) from exc
    if owned:
        backend._owned.append(client)
    return backend


def _is_local(client: QdrantClient) -> bool:
    options = client.init_options
    return bool(options.get("path")) or options.get("location") == ":memory:"


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


def _local_lock_for(client: QdrantClient) -> threading.RLock:
    with _LOCAL_LOCKS_GUARD:
        return _LOCAL_LOCKS.setdefault(client, threading.RLock())


_ON_ITS_LOOP = (
    "A sync write of the store was made on an event loop while an async write of the same "
    "item is under way on that loop: it would wait forever. Call the a... method (aput, "
    "abatch, aremember, ...) with await inside async code."
)


class _Domain(StripedLocks):
    """What two backends over the same collection share: their users' locks, key stripes.

    A server write of an item reads its head, upserts, then deletes the item's points it
    did not write: two writes of one item interleaving there left the later one without
    some of its texts' points. The stripes serialize, in this process, the server writes
    that touch one item (a server has no lock, so other processes are not excluded).
    """

    def stripes_of(self, keys: Sequence[ItemKey]) -> list[threading.Lock]:
        """The stripes of ``keys``, each once, in one global order (no deadlock)."""
        return self.of_all(repr((namespace, key)) for namespace, key in keys)


_DOMAINS: weakref.WeakKeyDictionary[Any, dict[str, _Domain]] = weakref.WeakKeyDictionary()
_SERVER_DOMAINS: weakref.WeakValueDictionary[tuple[str, str], _Domain] = (
    weakref.WeakValueDictionary()
)


def _domain_for(client: QdrantClient, collection: str) -> _Domain:
    """The lock domain of ``collection``: per client embedded, per server address otherwise.

    Embedded, one client owns the folder (or the ``:memory:`` data). On a server, two clients
    of one address (``from_qdrant(url)`` twice, one ``AsyncQdrantClient`` passed twice) hold
    the same data: keyed by client, their stores each took their own user lock and one
    ``update_fact`` overwrote the other's text.
    """
    address = None if _is_local(client) else _server_address(client)
    with _LOCAL_LOCKS_GUARD:
        if address is None:
            return _DOMAINS.setdefault(client, {}).setdefault(collection, _Domain())
        domain = _SERVER_DOMAINS.get((address, collection))
        if domain is None:
            domain = _SERVER_DOMAINS[(address, collection)] = _Domain()
        return domain


def _server_address(client: QdrantClient) -> str | None:
    """The server's REST address (scheme, host, port, prefix) as qdrant-client resolved it."""
    address = getattr(getattr(client, "_client", None), "rest_uri", None)
    return address.rstrip("/") if isinstance(address, str) else None


def _shared_for(client: QdrantClient, collection: str) -> _Shared:
    per_client = _MIRRORS.setdefault(client, {})
    return per_client.setdefault(collection, _Shared())


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
