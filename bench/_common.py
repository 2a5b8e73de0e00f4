"""What the benchmarks share: precomputed-vector embeddings and random unit vectors."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

import numpy as np
from langchain_core.embeddings import Embeddings

DIMS = 384
clock = time.perf_counter_ns


class LookupEmbeddings(Embeddings):
    """Texts -> precomputed vectors by dict lookup; ``spent_ns`` is the time spent in here.

    Vectors come back as fresh lists of floats, like a real embedding client, so the stores
    pay their own conversion; callers subtract ``spent_ns`` to exclude the lookup itself.
    """

    def __init__(self) -> None:
        self.rows: dict[str, np.ndarray] = {}
        self.spent_ns = 0

    def add(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        self.rows.update(zip(texts, vectors, strict=True))

    def remove(self, texts: Iterable[str]) -> None:
        for t in texts:
            del self.rows[t]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        t0 = clock()
        out = [self.rows[t].tolist() for t in texts]
        self.spent_ns += clock() - t0
        return out

    def embed_query(self, text: str) -> list[float]:
        t0 = clock()
        out = self.rows[text].tolist()
        self.spent_ns += clock() - t0
        return out


def unit_rows(rng: np.random.Generator, n: int, dims: int = DIMS) -> np.ndarray:
    """``n`` random float32 unit vectors."""
    v = rng.standard_normal((n, dims), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v
