"""The generic engine: memories in any LangChain ``VectorStore``, beside a SQLite catalog.

Where things live:

- **The vectorstore** holds one document per embedded text: our vector (handed over,
  never re-embedded), the text as ``page_content``, and metadata ``ltm_store`` (the
  catalog's random id), ``ltm_n0``, ``ltm_n1``, ... (the namespace's labels, one key
  each), ``ltm_ns`` (the namespace as JSON), ``ltm_key``, ``ltm_path``, ``ltm_at`` (the
  item version's ``updated_at`` in microseconds) and ``ltm_v_<field>`` for each short
  top-level string of the value (:func:`~._catalog.value_metadata`). Documents of other
  applications in the same collection are never touched nor returned.
- **The catalog** (:mod:`._catalog`, our SQLite engine in one file) holds every item:
  value, timestamps, TTL, each item's vectors and paths. ``get``, ``list_namespaces``,
  ``count``, TTL and unranked search are the SQLite engine's; locks are its per-scope
  ``flock``.

A ranked search sends the scope (``ltm_store`` and the prefix's labels, as equalities) to
the vectorstore's own filter through the store's :class:`StoreFamily` dialect, so the
engine only ever ranks the user's documents; conditions ``{field: "short string"}`` of
``filter`` go into the same filter as ``ltm_v_<field>`` equalities. Each returned
document is checked against the catalog (the item exists, ``ltm_at`` is its current
version, it is alive and passes the whole ``filter``: the Python check stays the
guarantee); when fewer than ``offset + limit`` pass and the engine may hold more, ``k``
grows fourfold and the search runs again (post-filtering engines get the same
``fetch_k``). A family that can restrict the engine's search to given document ids
(``search_ids``: FAISS's ``IDSelector``) gets no filter: the catalog reads the ids of the
scope's current documents (expiry and the whole value filter applied there, exactly) and
the engine ranks those only. When the engine runs out first, the catalog's exact scoped search
checks the answer and replaces it if it finds more (an HNSW index searched under a
restrictive filter can return fewer documents than it holds: Chroma's does), so a search
never under-fills. Scores are converted from the engine's distance to cosine similarity
(:data:`DISTANCES`).

A write is three steps: (1) the new documents' ids are journaled ``adding`` and the
documents upserted into the vectorstore (one add for the whole batch, split into adds of
at most the store's ``max_batch`` documents: Chroma's ``max_batch_size``, 13,107 rows for
the older ``PGVector``); (2) one catalog
transaction writes the items and journals the replaced documents as ``garbage`` (the
moment the new version becomes visible: until then every reader sees the old one, whose
documents are still current); (3) the garbage is deleted from the vectorstore and its
journal rows cleared. Only (2) waits for an ``fsync``: the journal transactions of (1) and
(3) are in the WAL without one, which a killed process cannot lose, and (2)'s ``fsync``
makes (1) durable before anything shows. A crash between any two steps leaves orphan
documents that no search shows (their ``ltm_at`` is not current); opening the backend
runs :meth:`VectorStoreBackend.repair` on the journal, which deletes them. An async
write cancelled while its commit runs on the catalog's thread waits for that commit to
end: landed, the caller gets ``CancelledError`` and the write stands whole (its new
documents kept, the replaced ones journaled as garbage); failed, its documents go. Any
other failure of the commit step, sync or async, drops the new documents only once the
catalog says the commit did not land (its ``adding`` rows are still there), and then only
those no one needs (a re-put of the current version has its documents' ids): an interrupt
(``KeyboardInterrupt``, ``SystemExit``) arriving after SQLite's ``COMMIT`` leaves the write
standing whole, like a cancelled one.
``repair()`` called by hand also puts back the documents the store lost (deleted behind
our back, a restored backup, an unsaved FAISS index) from the vectors the catalog keeps,
and deletes documents of ours that are neither current nor journaled.

Async: where the store has its own coroutines (a family's ``aadd``/``asearch``, or a class
that defines ``aadd_embeddings`` / ``asimilarity_search_with_score_by_vector``, and
``aget_by_ids``/``adelete`` for deletions), ``asearch`` and ``awrite`` await them for the
vectorstore's part and run the catalog's part on the catalog's threads; the logic is one
sans-I/O generator per operation (:mod:`langchain_ltm._steps`) for both shells. Without
them, the whole sync call runs on this backend's threads, under the same lock as sync
callers (FAISS is not thread-safe). Chroma (``langchain-chroma``) and FAISS
(``langchain-community``) have none: Chroma's async methods are LangChain's executor
defaults, FAISS's wrap the sync ones in the default executor.

Cross-process guarantees, per engine:

- **What the catalog serialises**, for every engine: item writes (each batch is one SQLite
  ``BEGIN IMMEDIATE`` transaction, all or nothing, any number of processes on one
  machine), the journal, and the per-user decide-and-write of ``remember`` (the catalog's
  per-scope ``flock``, :meth:`VectorStoreBackend.lock`): two processes never both decide
  for one user.
- **What it cannot**: the vectorstore itself. The catalog's lock does not make a
  single-writer store safe for two writer processes, nor does it cover processes on other
  machines (``flock`` is local; the catalog file must be on a local disk). Documents of
  one write may reach the store while another process's write of the same item lands;
  whichever commits last in the catalog is current, and the other's documents are garbage
  or orphans that no search shows and ``repair()`` removes.
- **Chroma in process** (``chromadb.PersistentClient``): one process per persist
  directory (Chroma's own rule), so one writer process; threads are fine. **A Chroma
  server** (``chroma run``, ``HttpClient``): many processes may write it; with the catalog
  on one machine's disk, the guarantees above hold for all processes on that machine.
- **FAISS**: one process (an in-memory index that process saves with ``save_local``); what
  was not saved is lost from the index but not from the catalog: ``repair()`` after
  loading an older save puts it back.
- **PGVectorStore** (``langchain-postgres``): Postgres takes concurrent writers, so any
  number of writer processes on the machine that holds the catalog file (tested: two
  processes, sync and native async, writing one user and their own at once).
- **Other registered stores**: the catalog's part as above; the store's part is the
  store's own (a database such as Postgres takes concurrent writers).

``capabilities.multi_process`` is ``False`` (it depends on the store);
``capabilities.cross_process_lock`` is the catalog's.

Where the code lives: this module holds :class:`VectorStoreBackend` and its thin sync and
async shells; the sans-I/O search is :mod:`._search`, the sans-I/O write :mod:`._write`,
``repair()``'s work :mod:`._repair`, the documents' metadata and the scope and value
filters :mod:`._layout`, the catalog :mod:`._catalog`, each store's dialect
:mod:`.family` and :mod:`.dialects`; every call into the store (and the filters it is
sent) is its base :class:`~._store_calls.StoreCalls`'s, run in
:func:`~._failures.engine_call`, so its client's failures raise as ``BackendError``.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from langchain_ltm._steps import Step, run_async, run_sync
from langchain_ltm.backends._threaded import run_to_end
from langchain_ltm.backends.base import (
    Capabilities,
    Hit,
    ItemKey,
    ListRequest,
    Record,
    SearchRequest,
    StoredItem,
    batch_dims,
    normalize_batch,
)
from langchain_ltm.backends.vectorstore._catalog import Catalog
from langchain_ltm.backends.vectorstore._failures import engine_call
from langchain_ltm.backends.vectorstore._owner import check_new_catalog
from langchain_ltm.backends.vectorstore._repair import (
    DEFAULT_GRACE_SECONDS,
    check_grace,
    drop_strays,
    repair_journal,
    restore,
)
from langchain_ltm.backends.vectorstore._search import search_logic
from langchain_ltm.backends.vectorstore._store_calls import StoreCalls
from langchain_ltm.backends.vectorstore._write import acommit, collect, write_logic
from langchain_ltm.backends.vectorstore.family import (
    StoreFamily,
    default_add,
    default_search,
    defines,
    family_for,
    in_process_only,
)

__all__ = ["VectorStoreBackend", "vectorstore_backend"]

T = TypeVar("T")
_WORKERS = 4


class VectorStoreBackend(StoreCalls):
    """Memories in a LangChain vectorstore, items in a SQLite catalog beside it.

    Build it with :func:`vectorstore_backend`; ``LongTermMemoryStore(vs)`` builds one with a
    temporary catalog. See the module docstring for the design.

    Args:
        vectorstore: Any LangChain ``VectorStore`` with a registered family (Chroma and
            FAISS are built in) or a ``filter_builder``.
        catalog: The catalog's SQLite file; ``None``: a temporary file removed by
            :meth:`close` (the memories then last as long as the backend; over a store
            that keeps its documents, a server or a file, their texts stay in it where
            no later store sees them: a warning is logged).
        filter_builder: The store's filter for equalities on metadata keys (overrides the
            registered family's).
        family: A ready :class:`StoreFamily` (overrides registration and ``filter_builder``).
        table: The catalog's table name.
        grace_seconds: :meth:`repair` (and opening the backend) deletes the documents of
            an unfinished write once they are older than this (default 900: a write still
            in flight in another process keeps its own). A finite number, 0 or more.
        share_collection: ``True``: a new catalog may open over a store that already holds
            another catalog's memories (a second machine on one server collection: two
            stores kept apart). ``False`` (default): that open raises
            :class:`~langchain_ltm.errors.CatalogMismatchError`, since through the new
            catalog those memories would look absent and could not be erased.

    Example:
        >>> import tempfile, chromadb
        >>> from chromadb.config import Settings
        >>> from langchain_chroma import Chroma
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_ltm import LongTermMemoryStore
        >>> client = chromadb.PersistentClient(
        ...     tempfile.mkdtemp(), settings=Settings(anonymized_telemetry=False)
        ... )
        >>> vs = Chroma("doctest", DeterministicFakeEmbedding(size=8), client=client)
        >>> store = LongTermMemoryStore(vs)
        >>> store.remember("alice", "Prefers answers in Spanish").action
        'created'
        >>> store.backend.capabilities.name
        'vectorstore:chroma'
        >>> store.close(); client.delete_collection("doctest")
    """

    def __init__(
        self,
        vectorstore: Any,
        *,
        catalog: str | os.PathLike[str] | None = None,
        filter_builder: Callable[[Mapping[str, str]], Any] | None = None,
        family: StoreFamily | None = None,
        table: str = "ltm_items",
        grace_seconds: float = DEFAULT_GRACE_SECONDS,
        share_collection: bool = False,
    ) -> None:
        grace = check_grace(grace_seconds)  # checked before any I/O
        self.vectorstore = vectorstore
        self.family = family_for(vectorstore, filter_builder, family)
        with engine_call(vectorstore, "open"):  # a server's collection settings
            self._to_cosine = self.family.converter(vectorstore)  # learnt once
        self._max_batch = self.family.batch_limit(vectorstore)  # asked once
        self._add = self.family.add or functools.partial(default_add, family=self.family)
        self._search = self.family.search or default_search
        self._aadd, self._asearch = self.family.async_calls(vectorstore)
        self._native_drop = (  # a family with its own get= / delete= keeps the sync path
            self.family.native_async
            and self.family.get is None
            and self.family.delete is None
            and defines(vectorstore, "aget_by_ids")
            and defines(vectorstore, "adelete")
        )
        self._tmp: str | None = None
        self._value_fields = False  # set once the catalog is open
        self._guard = threading.Lock()  # before the catalog: close() after a failed open needs it
        self._executor: ThreadPoolExecutor | None = None
        if catalog is None:
            self._tmp = tempfile.mkdtemp(prefix="ltm-catalog-")
            path = str(Path(self._tmp) / "catalog.sqlite")
            if not in_process_only(vectorstore):
                temporary_catalog_warning(vectorstore)
        else:
            path = os.fspath(catalog)
            # a catalog about to be created: not over another catalog's documents
            check_new_catalog(vectorstore, self.family, path, table, share_collection)
        self.catalog = Catalog(path, table=table)
        try:
            self.catalog.setup()
        except BaseException:
            self.close()
            raise
        # value filters in the engine: a catalog whose documents carry them, a store that can
        self._value_fields = bool(self.catalog.value_fields) and self.family.value_filters
        self.grace_seconds = grace
        self.capabilities = Capabilities(
            name=f"vectorstore:{self.family.name}",
            persistent=catalog is not None,
            cross_process_lock=self.catalog.capabilities.cross_process_lock,
            ttl=True,
            extra={
                "catalog": path,
                "post_filter": self.family.post_filter,
                "search_among_ids": self.family.search_ids is not None,
                "native_async": {
                    "add": self._aadd is not None,
                    "search": self._asearch is not None,
                },
                "value_filter_pushdown": self._value_fields,
            },
        )
        self._vs_lock = threading.RLock()  # stores like FAISS are not thread-safe
        self._warned_short = False
        self._scores_checked = False  # ranked answers are checked to be cosine until one tells
        self._ids_usable = True  # until the family's search_ids says it cannot (None)
        try:
            self.repair(full=False)
            self._warn_if_behind()
        except BaseException:  # the store did not answer: nothing stays open
            self.close()
            raise

    def _warn_if_behind(self) -> None:
        """Warn when the vectorstore holds fewer documents than the catalog has items with some.

        A FAISS index saved before the last writes and loaded again: searches miss the
        documents it lacks (and answer from the rest) until :meth:`repair` puts them back.
        """
        if self.family.size is None:
            return
        with self._engine("count"):
            size = self.family.size(self.vectorstore)
        if size is None:
            return
        embedded = self.catalog.embedded_items()
        if size < embedded:
            import logging  # here: a store in line with its catalog never imports it

            logging.getLogger(__name__).warning(
                "langchain-ltm: %s holds %d documents, fewer than the %d items its catalog "
                "(%s) has documents for: an index saved before the last writes? Searches "
                "miss the documents it lacks until backend.repair() puts them back.",
                type(self.vectorstore).__name__,
                size,
                embedded,
                self.capabilities.extra["catalog"],
            )

    # ---- reads --------------------------------------------------------------------------

    def get(self, keys: Sequence[ItemKey]) -> list[StoredItem | None]:  # noqa: D102
        return self.catalog.get(keys)

    def count(self, prefix: tuple[str, ...]) -> int:  # noqa: D102
        return self.catalog.count(prefix)

    def indexed_paths(self, keys: Sequence[ItemKey]) -> list[tuple[str, ...] | None]:  # noqa: D102
        return self.catalog.indexed_paths(keys)

    def list_namespaces(self, request: ListRequest) -> list[tuple[str, ...]]:  # noqa: D102
        return self.catalog.list_namespaces(request)

    def search(self, request: SearchRequest) -> list[list[Hit]]:  # noqa: D102
        return run_sync(search_logic(self, request))

    async def asearch(self, request: SearchRequest) -> list[list[Hit]]:
        """Async twin of :meth:`search`: the store's own coroutine where it has one."""
        if self._asearch is None or request.vectors is None:
            return await self._off_loop(self.search, request)
        return await run_async(search_logic(self, request))

    # ---- writes -------------------------------------------------------------------------

    def write(self, upserts: Sequence[Record], deletes: Sequence[ItemKey]) -> int:  # noqa: D102
        kept, gone = normalize_batch(upserts, deletes)
        if not kept and not gone:
            return 0
        batch_dims(kept, self.catalog.dims, "a new catalog")  # checked before any I/O
        with self._vs_lock:
            return run_sync(write_logic(self, kept, gone))

    async def awrite(self, upserts: Sequence[Record], deletes: Sequence[ItemKey]) -> int:
        """Async twin of :meth:`write`: the store's own coroutines where it has them."""
        if self._aadd is None:
            return await self._off_loop(self.write, upserts, deletes)
        kept, gone = normalize_batch(upserts, deletes)
        if not kept and not gone:
            return 0
        batch_dims(kept, self.catalog.dims, "a new catalog")
        return await run_async(write_logic(self, kept, gone))

    def touch(self, keys: Sequence[ItemKey], now: datetime) -> None:  # noqa: D102
        self.catalog.touch(keys, now)

    def sweep(self, now: datetime) -> int:  # noqa: D102
        with self._vs_lock:
            count, garbage = self.catalog.sweep_docs(now)
            run_sync(collect(self, garbage))
        return count

    # ---- the catalog's part of each step (the store's part: StoreCalls) ---------------------

    def _cat(self, method: str, *args: Any) -> Step:
        """A catalog call (the async twin on the catalog's own threads)."""
        fn = getattr(self.catalog, method)
        return Step(fn, functools.partial(self.catalog._off_loop, fn), args)

    async def _acommit(
        self, kept: Sequence[Record], gone: Sequence[ItemKey], ids: Sequence[str], writer: str
    ) -> tuple[int, list[str]]:
        """The catalog commit, as :func:`~._write.acommit` runs it: its outcome known."""
        return await acommit(self.catalog, kept, gone, ids, writer)

    # ---- repair -------------------------------------------------------------------------

    def repair(self, grace_seconds: float | None = None, *, full: bool = True) -> int:
        """Bring the vectorstore back in line with the catalog; return documents fixed.

        Journaled garbage goes at once; ``adding`` documents once older than
        ``grace_seconds`` (default: the backend's), so a write in flight in another
        process keeps its own. A document that turns out to be current is kept. Opening
        the backend runs this much (``full=False``).

        ``full=True`` (the default when called) also makes the store hold exactly the
        current documents, whatever happened to it behind the catalog's back (documents
        deleted by someone, a store restored from an older backup, a FAISS index saved
        before the last writes): every catalog item's documents the store lacks are put
        back with the vectors the catalog keeps (nothing is embedded again), 500 items at
        a time; then one search scoped to this catalog's documents, widened until it has
        them all, finds the ones that are not current and not journaled ``adding`` (a
        write in flight), and deletes them (a store whose search caps ``k``, ``max_k``,
        is searched again after each delete until a search shows no such document; a
        warning is logged when current documents fill the capped search, or when the
        store ignores the delete). It reads the whole catalog: a maintenance call, not
        one for every request.

        Example:
            >>> from langchain_community.vectorstores import FAISS
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> from langchain_ltm import LongTermMemoryStore
            >>> emb = DeterministicFakeEmbedding(size=8)
            >>> vs = FAISS.from_texts(["unrelated"], emb)
            >>> backend = vectorstore_backend(vs)
            >>> store = LongTermMemoryStore(backend, embeddings=emb)
            >>> store.remember("bob", "Lives in Lisbon").action
            'created'
            >>> docs = vs.get_by_ids(list(vs.index_to_docstore_id.values()))
            >>> vs.delete([d.id for d in docs if "ltm_store" in d.metadata])  # behind our back
            True
            >>> backend.repair()  # put back from the vectors the catalog keeps
            1
            >>> vs.index.ntotal, backend.repair()  # the store holds it again; nothing to do
            (2, 0)
            >>> store.close()
        """
        grace = self.grace_seconds if grace_seconds is None else check_grace(grace_seconds)
        fixed = repair_journal(self, grace)
        if full:
            for docs in self.catalog.stored_docs():
                fixed += restore(self, docs)
            fixed += drop_strays(self)
        return fixed

    async def arepair(self, grace_seconds: float | None = None, *, full: bool = True) -> int:
        """Async twin of :meth:`repair`, on the backend's own threads (as its other twins).

        Example:
            >>> import asyncio
            >>> from langchain_community.vectorstores import FAISS
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> vs = FAISS.from_texts(["x"], DeterministicFakeEmbedding(size=8))
            >>> backend = vectorstore_backend(vs)
            >>> asyncio.run(backend.arepair())
            0
            >>> backend.close()
        """
        return await self._off_loop(functools.partial(self.repair, grace_seconds, full=full))

    # ---- locks and lifecycle ------------------------------------------------------------

    def lock(self, scope: str) -> Any:  # noqa: D102
        return self.catalog.lock(scope)

    def unlock(self, token: Any) -> None:  # noqa: D102
        self.catalog.unlock(token)

    async def alock(self, scope: str) -> Any:  # noqa: D102
        return await self.catalog.alock(scope)

    async def aunlock(self, token: Any) -> None:  # noqa: D102
        await self.catalog.aunlock(token)

    def close(self) -> None:
        """Close the catalog (a temporary one is removed); the vectorstore stays open."""
        with self._guard:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False)
        self.catalog.close()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    # ---- async twins: the sync methods on this backend's own threads --------------------

    async def _off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        with self._guard:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(_WORKERS, thread_name_prefix="ltm-vs")
            executor = self._executor
        return await run_to_end(executor, functools.partial(fn, *args))


def vectorstore_backend(
    vectorstore: Any,
    *,
    catalog: str | os.PathLike[str] | None = None,
    filter_builder: Callable[[Mapping[str, str]], Any] | None = None,
    family: StoreFamily | None = None,
    table: str = "ltm_items",
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
    share_collection: bool = False,
) -> VectorStoreBackend:
    """A :class:`VectorStoreBackend` over ``vectorstore`` with the catalog file ``catalog``.

    Args:
        vectorstore: A LangChain ``VectorStore`` (Chroma, FAISS, or one registered with
            ``register_vectorstore``).
        catalog: SQLite file for the items (created if missing; keep it with the
            vectorstore's data). ``None``: a temporary catalog, gone at ``close()``
            (the texts written stay in a store that keeps its documents: a warning says
            so).
        filter_builder: Equalities on metadata keys -> the store's filter (for a store
            without a registered family, or to override it).
        family: A complete :class:`StoreFamily` instead.
        table: The catalog's table name.
        grace_seconds: How old the documents of an unfinished write (journaled, not yet
            committed: a crashed writer, or one still running in another process) must be
            before :meth:`~VectorStoreBackend.repair` and opening the backend delete them;
            default 900 (15 minutes). Lower it when writers are known dead sooner (0: at
            once, for a single writer process). ``LongTermMemoryStore(vs)`` uses the
            default: build the backend with this factory to set it.
        share_collection: Let a new catalog (``catalog`` not yet a file) open over a store
            that already holds another catalog's memories, as a second, separate store
            (a second machine on one server collection). Default ``False``: that raises
            :class:`~langchain_ltm.errors.CatalogMismatchError` naming the catalog files
            beside ``catalog`` that wrote them, since through a new catalog they would
            look absent (an empty list, an erase that erases nothing of them).

    Returns:
        The backend, for ``LongTermMemoryStore(backend, embeddings=...)``.

    Raises:
        ValueError: ``grace_seconds`` is negative, NaN, infinite or not a number (checked
            before the catalog is opened).
        CatalogMismatchError: ``catalog`` is new and the store holds another catalog's
            documents (Chroma, FAISS, Redis and families with ``probe=``), without
            ``share_collection=True``. Nothing was created.

    Example:
        >>> import os, tempfile
        >>> from langchain_community.vectorstores import FAISS
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_ltm import LongTermMemoryStore
        >>> emb = DeterministicFakeEmbedding(size=8)
        >>> vs = FAISS.from_texts(["unrelated"], emb)
        >>> folder = tempfile.mkdtemp()
        >>> backend = vectorstore_backend(vs, catalog=os.path.join(folder, "catalog.db"))
        >>> store = LongTermMemoryStore(backend, embeddings=emb)
        >>> store.remember("bob", "Lives in Lisbon").action
        'created'
        >>> vs.save_local(folder); backend.close()
    """
    return VectorStoreBackend(
        vectorstore,
        catalog=catalog,
        filter_builder=filter_builder,
        family=family,
        table=table,
        grace_seconds=grace_seconds,
        share_collection=share_collection,
    )


def temporary_catalog_warning(vectorstore: Any) -> None:
    """Log that a temporary catalog over a store that keeps its documents strands them."""
    import logging  # here: only a temporary catalog over a persistent store needs it

    logging.getLogger(__name__).warning(
        "langchain-ltm: a temporary catalog over %s, whose documents may outlive this "
        "process (a server, a file): at close() the catalog goes and the texts written "
        "stay in the store, where no later store can see, forget or delete them. Pass "
        "a catalog file kept with the store's data: vectorstore_backend(vs, "
        'catalog="path/ltm-catalog.db").',
        type(vectorstore).__name__,
    )
