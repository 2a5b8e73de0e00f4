"""Deterministic, offline embeddings for tests about store logic (never the product default)."""

from __future__ import annotations

import hashlib
import re

import numpy as np
from langchain_core.embeddings import Embeddings

_WORD = re.compile(r"[a-z0-9]+")


class KeywordEmbeddings(Embeddings):
    """Bag-of-words embeddings: texts sharing words are similar, disjoint texts are orthogonal-ish.

    Every word is hashed to a fixed random unit vector; a text is the normalized sum of its
    words' vectors. Same text, same vector; cosine grows with word overlap. Counts calls so
    tests can assert batching.
    """

    def __init__(self, dims: int = 64) -> None:
        self.dims = dims
        self.document_calls = 0
        self.query_calls = 0
        self.texts_embedded = 0

    def _word_vector(self, word: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dims)
        return v / np.linalg.norm(v)

    def _embed(self, text: str) -> list[float]:
        words = _WORD.findall(text.lower()) or ["<empty>"]
        v = np.sum([self._word_vector(w) for w in words], axis=0)
        return (v / np.linalg.norm(v)).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.document_calls += 1
        self.texts_embedded += len(texts)
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.query_calls += 1
        self.texts_embedded += 1
        return self._embed(text)
