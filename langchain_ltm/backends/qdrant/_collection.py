"""The collection a Qdrant backend works on: created on first use, checked once, errors.

:class:`CollectionSetup`, a base of :class:`~.backend.QdrantBackend`, checks an existing
collection once (its dense vector's name, size and distance; on a server, the payload
indexes of ``_layout``), creates a missing one on the first write that has vectors to size
it (cosine distance), re-checks until it exists while another writer may create it, checks
the size of the vectors callers send, and turns the client's failures into ``BackendError``
and ``EmbeddingDimensionError`` messages that say what to change.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from typing import Any

from qdrant_client import QdrantClient, models

from langchain_ltm.backends.base import Record, SearchRequest
from langchain_ltm.backends.qdrant._layout import BOOL_INDEXES, INTEGER_INDEXES, KEYWORD_INDEXES
from langchain_ltm.backends.qdrant._plans import Layout
from langchain_ltm.errors import (
    BackendError,
    EmbeddingDimensionError,
    IncompatibleCollectionError,
    LTMError,
)


class CollectionSetup:
    """The setup and checks of :class:`~.backend.QdrantBackend`'s collection (its base)."""

    # set by QdrantBackend.__init__
    client: QdrantClient
    collection: str
    layout: Layout
    dims: int | None
    _client_lock: contextlib.AbstractContextManager[Any]
    _setup_lock: threading.Lock
    _exists: bool

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
