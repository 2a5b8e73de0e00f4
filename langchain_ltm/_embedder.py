"""Batched, cached embedding calls: one model call per batch of uncached texts."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from langchain_ltm.backends.base import Vectors
from langchain_ltm.errors import EmbeddingDimensionError

if TYPE_CHECKING:  # any object with LangChain's embed methods will do; no import needed
    from langchain_core.embeddings import Embeddings


class Embedder:
    """Turns texts into unit-length float32 rows, calling the model once per batch.

    Documents go through ``embed_documents``. Queries: a single one through ``embed_query``;
    several (recall phrasings) through one ``embed_documents`` call, which is the same thing
    for symmetric models such as MiniLM and OpenAI's. Results are cached by content hash,
    separately for documents and queries.
    """

    def __init__(self, embeddings: Embeddings, cache_size: int = 4096) -> None:
        self.embeddings = embeddings
        self.cache_size = cache_size
        self.dims: int | None = None
        self._cache: OrderedDict[tuple[bool, bytes], Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str], query: bool) -> Vectors:
        missing, rows = self._lookup(texts, query)
        if missing:
            if query and len(missing) == 1:
                raw = [self.embeddings.embed_query(missing[0])]
            else:
                raw = self.embeddings.embed_documents(list(missing))
            self._store(missing, raw, query, rows)
        return self._stack(texts, rows)

    async def aembed(self, texts: Sequence[str], query: bool) -> Vectors:
        missing, rows = self._lookup(texts, query)
        if missing:
            if query and len(missing) == 1:
                raw = [await self.embeddings.aembed_query(missing[0])]
            else:
                raw = await self.embeddings.aembed_documents(list(missing))
            self._store(missing, raw, query, rows)
        return self._stack(texts, rows)

    # pure helpers shared by both shells

    @staticmethod
    def _key(text: str, query: bool) -> tuple[bool, bytes]:
        return query, hashlib.blake2b(
            text.encode("utf-8", "surrogatepass"), digest_size=16
        ).digest()

    def _lookup(self, texts: Sequence[str], query: bool) -> tuple[list[str], dict[str, Vectors]]:
        rows: dict[str, Vectors] = {}
        missing: dict[str, None] = {}  # ordered set: `in` on a list made batches O(n^2)
        with self._lock:
            for text in texts:
                if text in rows or text in missing:
                    continue
                hit = self._cache.get(self._key(text, query))
                if hit is None:
                    missing[text] = None
                else:
                    rows[text] = hit
        return list(missing), rows

    def _store(
        self,
        texts: list[str],
        raw: Sequence[Sequence[float]],
        query: bool,
        rows: dict[str, Vectors],
    ) -> None:
        if len(raw) != len(texts):
            raise ValueError(f"The embeddings returned {len(raw)} vectors for {len(texts)} texts.")
        try:
            # float64 first: numpy converts Python floats to float64 ~5x faster than to float32
            wide = np.array(raw, dtype=np.float64)
        except ValueError as exc:
            raise EmbeddingDimensionError(
                "The embeddings returned vectors of unequal sizes."
            ) from exc
        if wide.ndim != 2:
            raise EmbeddingDimensionError("The embeddings returned vectors of unequal sizes.")
        if self.dims is not None and wide.shape[1] != self.dims:
            raise EmbeddingDimensionError(
                f"The embeddings returned {wide.shape[1]}-dimensional vectors after "
                f"{self.dims}-dimensional ones; use one embedding model per store."
            )
        self.dims = int(wide.shape[1])
        norms = np.sqrt(np.einsum("ij,ij->i", wide, wide))
        norms[norms == 0] = 1
        wide /= norms[:, np.newaxis]
        matrix = wide.astype(np.float32)
        matrix.flags.writeable = False  # the cached rows are views of it
        with self._lock:
            for text, row in zip(texts, matrix, strict=True):
                rows[text] = row
                self._cache[self._key(text, query)] = row
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    def _stack(self, texts: Sequence[str], rows: dict[str, Vectors]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dims or 0), dtype=np.float32)
        if len(texts) == 1:  # one query: a (1, d) read-only view instead of np.stack's copy
            return rows[texts[0]][np.newaxis]
        return np.stack([rows[t] for t in texts])
