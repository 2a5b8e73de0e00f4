"""What the benchmarks share: precomputed-vector embeddings and random unit vectors."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

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


def write_random_facts(
    backend: Any, rng: np.random.Generator, facts: int, users: int, text: str = "fact {n}"
) -> None:
    """Write ``facts`` facts of random unit vectors to ``backend``, each owned by one of
    ``users`` users at random (``("memories", "user-000042")``), 1,000 a write.

    ``text`` is each fact's content (``{n}``: its number, also its key ``f{n}``). ``rng``
    draws the owners first, then each batch's vectors.
    """
    from langchain_ltm.backends.base import Record

    owner = rng.integers(0, users, size=facts)
    now = datetime.now(timezone.utc)
    for start in range(0, facts, 1_000):
        chunk = unit_rows(rng, min(1_000, facts - start))
        backend.write(
            [
                Record(
                    ("memories", f"user-{owner[n]:06d}"),
                    f"f{n}",
                    {"content": text.format(n=n)},
                    ("fact",),
                    ("content",),
                    chunk[n - start][None, :],
                    now,
                )
                for n in range(start, start + len(chunk))
            ],
            [],
        )


@dataclass
class Layout:
    """Facts spread over users, the queries asked, and the exact answers."""

    users: int
    owner: np.ndarray  # fact index -> user index
    rows: list[np.ndarray]  # user index -> that user's fact indices (ascending)
    query_user: np.ndarray  # query index -> user index
    query_vecs: np.ndarray  # (queries, dims) float32, unit
    truth: list[set[int]] = field(default_factory=list)  # exact top-k fact indices per query


def make_layout(
    fact_vecs: np.ndarray,
    users: int,
    queries: int,
    rng: np.random.Generator,
    k: int = 5,
    noise: float = 1.0,
) -> Layout:
    """Give every user an equal share of the facts; ask queries near a random fact of a user.

    ``noise`` is the norm of the random offset relative to the unit fact vector (1.0: cosine
    to the anchor fact ~0.7). ``truth`` is the exact float64 top-``k`` within the user's rows.
    """
    n = len(fact_vecs)
    owner = rng.permutation(np.arange(n) % users)
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(users + 1))
    rows = [order[bounds[u] : bounds[u + 1]] for u in range(users)]
    query_user = rng.integers(0, users, size=queries)
    anchors = np.array([rng.choice(rows[u]) for u in query_user])
    q = fact_vecs[anchors] + unit_rows(rng, queries, fact_vecs.shape[1]) * noise
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    layout = Layout(users, owner, rows, query_user, q.astype(np.float32))
    for j, u in enumerate(query_user):
        idx = rows[u]
        m = fact_vecs[idx].astype(np.float64)
        q64 = layout.query_vecs[j].astype(np.float64)
        s = (m @ q64) / (np.linalg.norm(m, axis=1) * np.linalg.norm(q64))
        layout.truth.append({int(i) for i in idx[np.argsort(-s, kind="stable")[:k]]})
    return layout
