"""In-process engine over ``langchain_core``'s ``InMemoryVectorStore``.

Items live in a :class:`~langchain_ltm.backends._index.NamespaceIndex` (per-namespace
blocks, vectors stacked per block), so a per-user search is one dot per row over that
user's rows only. Every embedded text is also written to the wrapped
``InMemoryVectorStore`` as a Document (deterministic id, ``page_content`` = the text,
metadata = namespace/key/path), so the vectorstore's own API (``similarity_search``,
``dump``) sees the memories too.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime

from langchain_core.vectorstores import InMemoryVectorStore

from langchain_ltm._ids import vector_id
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
    dimension_error,
    is_alive,
    taken_keys,
)
from langchain_ltm.errors import KeyTakenError

__all__ = ["MemoryBackend"]


class MemoryBackend(VectorBackend):
    """Exact, per-namespace vector search in process memory.

    Args:
        vectorstore: The ``InMemoryVectorStore`` to mirror embedded texts into.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> backend = MemoryBackend(InMemoryVectorStore(DeterministicFakeEmbedding(size=8)))
        >>> backend.capabilities.name
        'memory'
    """

    capabilities = Capabilities(name="memory", ttl=True)

    def __init__(self, vectorstore: InMemoryVectorStore) -> None:
        self.vectorstore = vectorstore
        self._index = NamespaceIndex()
        self._doc_ids: dict[ItemKey, list[str]] = {}
        self._paths: dict[ItemKey, tuple[str, ...]] = {}  # of the items with vectors
        self._dims: int | None = None
        self._lock = threading.RLock()

    def get(self, keys: Sequence[ItemKey]) -> list[StoredItem | None]:  # noqa: D102
        with self._lock:
            return self._index.get(keys)

    def count(self, prefix: tuple[str, ...]) -> int:  # noqa: D102
        with self._lock:
            return self._index.count(prefix)

    def list_namespaces(self, request: ListRequest) -> list[tuple[str, ...]]:  # noqa: D102
        with self._lock:
            return self._index.list_namespaces(request)

    def indexed_paths(self, keys: Sequence[ItemKey]) -> list[tuple[str, ...] | None]:  # noqa: D102
        with self._lock:
            stored = self._index.get(keys)
            return [
                None if item is None else self._paths.get(key, ())
                for key, item in zip(keys, stored, strict=True)
            ]

    def search(self, request: SearchRequest) -> list[list[Hit]]:  # noqa: D102
        if request.vectors is not None:
            check_dims(self._dims, request.vectors.shape[1])
        with self._lock:
            return self._index.search(request)

    def write(self, upserts: Sequence[Record], deletes: Sequence[ItemKey]) -> int:  # noqa: D102
        with self._lock:
            # check everything first: a batch lands whole or not at all
            fresh = [r for r in upserts if r.create_only]
            if fresh:
                stored = self._index.get([(r.namespace, r.key) for r in fresh])
                taken = taken_keys(fresh, stored)
                if taken:
                    raise KeyTakenError(taken)
            for record in upserts:
                if record.vectors is not None and len(record.vectors):
                    self._dims = check_dims(self._dims, record.vectors.shape[1])
            for record in upserts:
                self._upsert(record)
            deleted = 0
            for namespace, key in deletes:
                if self._index.delete(namespace, key):
                    self._drop_docs((namespace, key))
                    deleted += 1
            return deleted

    def touch(self, keys: Sequence[ItemKey], now: datetime) -> None:  # noqa: D102
        with self._lock:
            self._index.touch(keys, now)

    def sweep(self, now: datetime) -> int:  # noqa: D102
        with self._lock:
            doomed = self._index.expired(now)
            for item_key in doomed:
                self._index.delete(*item_key)
                self._drop_docs(item_key)
            return len(doomed)

    def _upsert(self, record: Record) -> None:
        namespace, key = record.namespace, record.key
        created = record.created_at
        if created is None:
            (old,) = self._index.get([(namespace, key)])
            # an expired item not yet swept is gone: putting it again creates it anew
            created = old.created_at if old and is_alive(old, record.now) else record.now
        item = StoredItem(
            namespace=namespace,
            key=key,
            value=record.value,
            created_at=created,
            updated_at=record.now,
            expires_at=record.expires,
            ttl_minutes=record.ttl_minutes,
        )
        self._index.put(item, record.vectors)
        self._drop_docs((namespace, key))
        if record.vectors is None or not len(record.vectors):
            return
        ids = [vector_id(namespace, key, path) for path in record.paths]
        for doc_id, text, path, vector in zip(
            ids, record.texts, record.paths, record.vectors, strict=True
        ):
            self.vectorstore.store[doc_id] = {
                "id": doc_id,
                "vector": vector.tolist(),
                "text": text,
                "metadata": {"namespace": list(namespace), "key": key, "path": path},
            }
        self._doc_ids[(namespace, key)] = ids
        self._paths[(namespace, key)] = tuple(record.paths)

    def _drop_docs(self, item_key: ItemKey) -> None:
        self._paths.pop(item_key, None)
        for doc_id in self._doc_ids.pop(item_key, ()):
            self.vectorstore.store.pop(doc_id, None)


def check_dims(stored: int | None, given: int) -> int:
    """``given`` if it matches the stored vector size, else a clear error."""
    if stored is not None and given != stored:
        raise dimension_error(stored, given, "a new store (or namespace)")
    return given
