"""The generic engine: memories in any LangChain ``VectorStore``, beside a SQLite catalog.

Where things live:

- **The vectorstore** holds one document per embedded text: our vector (handed over,
  never re-embedded), the text as ``page_content``, and metadata ``ltm_store`` (the
  catalog's random id), ``ltm_n0``, ``ltm_n1``, ... (the namespace's labels, one key
  each), ``ltm_ns`` (the namespace as JSON), ``ltm_key``, ``ltm_path`` and ``ltm_at`` (the
  item version's ``updated_at`` in microseconds). Documents of other applications in the
  same collection are never touched nor returned.
- **The catalog** (:mod:`._catalog`, our SQLite engine in one file) holds every item:
  value, timestamps, TTL, each item's vectors and paths. ``get``, ``list_namespaces``,
  ``count``, TTL and unranked search are the SQLite engine's; locks are its per-scope
  ``flock``.

A ranked search sends the scope (``ltm_store`` and the prefix's labels, as equalities) to
the vectorstore's own filter through the store's :class:`StoreFamily` dialect, so the
engine only ever ranks the user's documents. Each returned document is checked against
the catalog (the item exists, ``ltm_at`` is its current version, it is alive and passes
``filter``); when fewer than ``offset + limit`` pass and the engine may hold more, ``k``
grows fourfold and the search runs again (post-filtering engines such as FAISS get the
same ``fetch_k``), so a search never under-fills. Scores are converted from the engine's
distance to cosine similarity (:data:`DISTANCES`).

A write is three steps: (1) the new documents' ids are journaled ``adding`` and the
documents upserted into the vectorstore; (2) one catalog transaction writes the items and
journals the replaced documents as ``garbage`` (the moment the new version becomes
visible: until then every reader sees the old one, whose documents are still current);
(3) the garbage is deleted from the vectorstore and its journal rows cleared. A crash
between any two steps leaves orphan documents that no search shows (their ``ltm_at`` is
not current); :meth:`VectorStoreBackend.repair`, run when the backend opens, deletes them.

Guarantees: the catalog is safe for many processes (SQLite WAL); whether several
processes may write the vectorstore is the vectorstore's own property (a Chroma server:
yes; FAISS, an in-process index saved with ``save_local``: no, one writer process).
``capabilities.multi_process`` is ``False``. What FAISS has not saved is lost with the
process, while the catalog has it: the catalog keeps every vector, so the index can be
rebuilt from it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from langchain_ltm._filters import matches
from langchain_ltm.backends._index import page, sort_unranked
from langchain_ltm.backends._threaded import ThreadedAsync
from langchain_ltm.backends.base import (
    Capabilities,
    Hit,
    ItemKey,
    ListRequest,
    Record,
    SearchRequest,
    StoredItem,
    batch_dims,
    dimension_error,
    is_alive,
)
from langchain_ltm.backends.sqlite import _sql as sql
from langchain_ltm.backends.vectorstore._catalog import ADDING, Catalog, doc_id
from langchain_ltm.backends.vectorstore.family import (
    StoreFamily,
    default_add,
    default_search,
    delete_present,
    family_for,
)

__all__ = ["VectorStoreBackend", "vectorstore_backend"]

T = TypeVar("T")
log = logging.getLogger(__name__)

DEFAULT_GRACE_SECONDS = 900.0  # an `adding` row older than this belongs to a dead writer
_FIRST_K = 16
_WORKERS = 4


class VectorStoreBackend(ThreadedAsync):
    """Memories in a LangChain vectorstore, items in a SQLite catalog beside it.

    Build it with :func:`vectorstore_backend`; ``LongTermMemoryStore(vs)`` builds one with a
    temporary catalog. See the module docstring for the design.

    Args:
        vectorstore: Any LangChain ``VectorStore`` with a registered family (Chroma and
            FAISS are built in) or a ``filter_builder``.
        catalog: The catalog's SQLite file; ``None``: a temporary file removed by
            :meth:`close` (the memories then last as long as the backend).
        filter_builder: The store's filter for equalities on metadata keys (overrides the
            registered family's).
        family: A ready :class:`StoreFamily` (overrides registration and ``filter_builder``).
        table: The catalog's table name.
        grace_seconds: :meth:`repair` deletes ``adding`` documents older than this.

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
    ) -> None:
        self.vectorstore = vectorstore
        self.family = family or family_for(vectorstore, filter_builder)
        self._to_cosine = self.family.converter(vectorstore)  # learnt once
        self._add = self.family.add or functools.partial(default_add, family=self.family)
        self._search = self.family.search or default_search
        self._tmp: str | None = None
        if catalog is None:
            self._tmp = tempfile.mkdtemp(prefix="ltm-catalog-")
            path = str(Path(self._tmp) / "catalog.sqlite")
        else:
            path = os.fspath(catalog)
        self.catalog = Catalog(path, table=table)
        try:
            self.catalog.setup()
        except BaseException:
            self.close()
            raise
        self.grace_seconds = float(grace_seconds)
        self.capabilities = Capabilities(
            name=f"vectorstore:{self.family.name}",
            persistent=catalog is not None,
            cross_process_lock=self.catalog.capabilities.cross_process_lock,
            ttl=True,
            extra={"catalog": path, "post_filter": self.family.post_filter},
        )
        self._vs_lock = threading.RLock()  # stores like FAISS are not thread-safe
        self._guard = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self.repair()

    # ---- reads --------------------------------------------------------------------------

    def get(self, keys: Sequence[ItemKey]) -> list[StoredItem | None]:  # noqa: D102
        return self.catalog.get(keys)

    def count(self, prefix: tuple[str, ...]) -> int:  # noqa: D102
        return self.catalog.count(prefix)

    def list_namespaces(self, request: ListRequest) -> list[tuple[str, ...]]:  # noqa: D102
        return self.catalog.list_namespaces(request)

    def search(self, request: SearchRequest) -> list[list[Hit]]:  # noqa: D102
        if request.vectors is None:
            return self.catalog.search(request)
        dims = self.catalog.dims
        if dims is not None and request.vectors.shape[1] != dims:
            raise dimension_error(dims, request.vectors.shape[1], "a new catalog")
        wanted = None if request.limit is None else request.offset + request.limit
        unscored: list[StoredItem] | None = None
        out: list[list[Hit]] = []
        for row in request.vectors:
            hits = self._ranked([float(x) for x in row], request, wanted)
            if wanted is None or len(hits) < wanted:
                if unscored is None:
                    rest = self.catalog.unvectored(request)
                    unscored = sort_unranked(
                        [it for it in rest if matches(it.value, request.filter)]
                    )
                hits.extend(Hit(it, None) for it in unscored)
            out.append(page(hits, request))
        return out

    def scope_filter(self, prefix: tuple[str, ...]) -> Any:
        """The engine filter a search under ``prefix`` sends (the store's own dialect)."""
        eq = {"ltm_store": self.catalog.store_id}
        eq.update({f"ltm_n{i}": label for i, label in enumerate(prefix)})
        return self.family.filter_builder(eq)

    def _ranked(self, vector: list[float], request: SearchRequest, wanted: int | None) -> list[Hit]:
        if wanted == 0:
            return []
        where = self.scope_filter(request.prefix)
        k = (
            max(_FIRST_K, 2 * wanted)
            if wanted
            else max(_FIRST_K, self.catalog.vector_count(request.prefix))
        )
        items: dict[ItemKey, StoredItem | None] = {}
        while True:
            with self._vs_lock:
                results = self._search(self.vectorstore, vector, k, where)
                size = (
                    self.family.size(self.vectorstore)
                    if self.family.post_filter and self.family.size
                    else None
                )
            keys = [_item_key(doc.metadata) for doc, _ in results]
            unknown = list(dict.fromkeys(k_ for k_ in keys if k_ is not None and k_ not in items))
            items.update(zip(unknown, self.catalog.get(unknown), strict=True))
            scored = sorted(
                ((self._to_cosine(float(score)), i) for i, (_, score) in enumerate(results)),
                key=lambda pair: -pair[0],
            )
            hits: list[Hit] = []
            taken: set[ItemKey] = set()
            for score, i in scored:
                key = keys[i]
                item = items.get(key) if key is not None else None
                if item is None or key in taken:
                    continue
                if results[i][0].metadata.get("ltm_at") != sql.to_us(item.updated_at):
                    continue  # a stale or orphaned document: not the current version
                taken.add(key)  # type: ignore[arg-type]
                if is_alive(item, request.alive_at) and matches(item.value, request.filter):
                    hits.append(Hit(item, score))
            if wanted is not None and len(hits) >= wanted:
                return hits[:wanted]
            exhausted = (
                (size is not None and k >= size) if self.family.post_filter else len(results) < k
            )
            if exhausted:
                return hits
            k *= 4

    # ---- writes -------------------------------------------------------------------------

    def write(self, upserts: Sequence[Record], deletes: Sequence[ItemKey]) -> int:  # noqa: D102
        kept, gone = sql.normalize_batch(upserts, deletes)
        if not kept and not gone:
            return 0
        batch_dims(kept, self.catalog.dims, "a new catalog")  # checked before any I/O
        ids, texts, vectors, metadatas = self._documents(kept)
        with self._vs_lock:
            self.catalog.journal_add(ids, ADDING)
            if ids:
                self._add(self.vectorstore, ids, texts, vectors, metadatas)
            try:
                deleted, garbage = self.catalog.commit(kept, gone, ids)
            except BaseException:
                with contextlib.suppress(Exception):  # repair() retries what this leaves
                    delete_present(self.vectorstore, ids, self.family)
                    self.catalog.journal_clear(ids)
                raise
            self._collect(garbage)
        return deleted

    def _documents(
        self, records: Sequence[Record]
    ) -> tuple[list[str], list[str], list[list[float]], list[dict[str, Any]]]:
        ids: list[str] = []
        texts: list[str] = []
        vectors: list[list[float]] = []
        metadatas: list[dict[str, Any]] = []
        store_id = self.catalog.store_id
        for r in records:
            if r.vectors is None or not len(r.vectors):
                continue
            at = sql.to_us(r.now)
            labels = {f"ltm_n{i}": label for i, label in enumerate(r.namespace)}
            for text, path, vector in zip(r.texts, r.paths, r.vectors, strict=True):
                ids.append(doc_id(store_id, r.namespace, r.key, path, at))
                texts.append(text)
                vectors.append(vector.tolist())
                metadatas.append(
                    {
                        "ltm_store": store_id,
                        **labels,
                        "ltm_ns": json.dumps(list(r.namespace)),
                        "ltm_key": r.key,
                        "ltm_path": path,
                        "ltm_at": at,
                    }
                )
        return ids, texts, vectors, metadatas

    def _collect(self, garbage: Sequence[str]) -> None:
        """Delete replaced documents; on failure they stay journaled for :meth:`repair`."""
        if not garbage:
            return
        try:
            delete_present(self.vectorstore, garbage, self.family)
            self.catalog.journal_clear(garbage)
        except Exception as exc:  # the write itself has landed: report, do not fail it
            log.warning(
                "langchain-ltm: %d replaced documents left for repair(): %s", len(garbage), exc
            )

    def touch(self, keys: Sequence[ItemKey], now: datetime) -> None:  # noqa: D102
        self.catalog.touch(keys, now)

    def sweep(self, now: datetime) -> int:  # noqa: D102
        with self._vs_lock:
            count, garbage = self.catalog.sweep_docs(now)
            self._collect(garbage)
        return count

    def repair(self, grace_seconds: float | None = None) -> int:
        """Delete the documents a crashed or failed write left behind; return how many.

        Journaled garbage goes at once; ``adding`` documents once older than
        ``grace_seconds`` (default: the backend's), so a write in flight in another
        process keeps its own. A document that turns out to be current is kept.
        """
        grace = self.grace_seconds if grace_seconds is None else grace_seconds
        pending = self.catalog.journal_pending(grace)
        if not pending:
            return 0
        with self._vs_lock:
            docs = self.family.documents(self.vectorstore, pending)
            keys = [_item_key(d.metadata) for d in docs]
            known = [k for k in dict.fromkeys(keys) if k is not None]
            current = dict(zip(known, self.catalog.get(known), strict=True))
            doomed = []
            for doc, key in zip(docs, keys, strict=True):
                item = current.get(key) if key is not None else None
                if item is None or doc.metadata.get("ltm_at") != sql.to_us(item.updated_at):
                    doomed.append(doc.id)
            if doomed:
                self.vectorstore.delete(doomed)
            self.catalog.journal_clear(pending)
        return len(doomed)

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
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(executor, functools.partial(fn, *args))


def _item_key(metadata: Mapping[str, Any]) -> ItemKey | None:
    try:
        return tuple(json.loads(metadata["ltm_ns"])), str(metadata["ltm_key"])
    except (KeyError, TypeError, ValueError):
        return None


def vectorstore_backend(
    vectorstore: Any,
    *,
    catalog: str | os.PathLike[str] | None = None,
    filter_builder: Callable[[Mapping[str, str]], Any] | None = None,
    family: StoreFamily | None = None,
    table: str = "ltm_items",
) -> VectorStoreBackend:
    """A :class:`VectorStoreBackend` over ``vectorstore`` with the catalog file ``catalog``.

    Args:
        vectorstore: A LangChain ``VectorStore`` (Chroma, FAISS, or one registered with
            ``register_vectorstore``).
        catalog: SQLite file for the items (created if missing; keep it with the
            vectorstore's data). ``None``: a temporary catalog, gone at ``close()``.
        filter_builder: Equalities on metadata keys -> the store's filter (for a store
            without a registered family, or to override it).
        family: A complete :class:`StoreFamily` instead.
        table: The catalog's table name.

    Returns:
        The backend, for ``LongTermMemoryStore(backend, embeddings=...)``.

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
        vectorstore, catalog=catalog, filter_builder=filter_builder, family=family, table=table
    )
