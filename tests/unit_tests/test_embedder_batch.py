"""A batch of document vectors: the fast list path gives np.array's values and its errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from langchain_ltm._embedder import Embedder
from langchain_ltm.errors import EmbeddingDimensionError


class _Rows:
    """Embeddings answering a batch with the given raw rows (whatever their shape)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def embed_documents(self, texts: list[str]) -> Any:
        return self.raw

    def embed_query(self, text: str) -> Any:
        return self.raw[0]


def _expected(raw: Any) -> np.ndarray:
    wide = np.array(raw, dtype=np.float64)
    wide /= np.linalg.norm(wide, axis=1, keepdims=True)
    return wide.astype(np.float32)


@pytest.mark.parametrize(
    "raw",
    [
        [[3.0, 4.0], [1.0, 0.0], [0.5, -0.5]],
        [[1, 2, 3], [4, 5, 6]],  # ints, as some clients send
        [np.array([1.0, 2.0]), np.array([2.0, 1.0])],  # numpy rows: the general path
        np.array([[1.0, 2.0], [2.0, 1.0]]),
        ([1.0, 1.0], [2.0, 0.0]),  # a tuple of lists
        [[True, 2.0], [np.float32(0.1), np.float64(3)]],  # what float() reads, packed
        [["1.5", 2.0], [1.0, 2.0]],  # a str struct refuses: read as before, by numpy
        np.random.default_rng(3).standard_normal((1000, 384)).astype(np.float32).tolist(),
    ],
)
def test_batch_rows_are_the_unit_vectors(raw: Any) -> None:
    got = Embedder(_Rows(raw)).embed([f"t{i}" for i in range(len(raw))], False)
    assert got.dtype == np.float32
    assert np.array_equal(got, _expected(raw))


@pytest.mark.parametrize(
    "raw",
    [
        [[1.0, 2.0], [3.0]],  # ragged
        [[1.0], [2.0, 3.0]],
        [[1.0, 2.0], [3.0, "x"]],  # not a number
        [[1.0, 2.0], 5.0],  # not a row
    ],
)
def test_malformed_batch_rows_are_an_embedding_error(raw: Any) -> None:
    with pytest.raises(EmbeddingDimensionError, match="unequal sizes"):
        Embedder(_Rows(raw)).embed([f"t{i}" for i in range(len(raw))], False)
