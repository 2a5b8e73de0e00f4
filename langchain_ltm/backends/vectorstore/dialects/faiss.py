"""FAISS (``langchain-community``), in memory or saved to and loaded from disk.

Filter: a plain ``{"k": v}`` dict, applied by langchain's wrapper *after* the ANN over
``fetch_k`` candidates, so the family is ``post_filter`` (the backend widens ``fetch_k``).
Distance: squared L2 for ``IndexFlatL2``, inner product for ``METRIC_INNER_PRODUCT``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_ltm.backends.vectorstore.family import Scored, StoreFamily

__all__ = ["FAMILY"]


def where(eq: Mapping[str, str]) -> Any:
    """The equality dict langchain's FAISS wrapper checks per candidate."""
    return dict(eq)


def distance(vectorstore: Any) -> str:
    """``ip`` or ``l2``, from the index's metric."""
    import faiss

    return "ip" if vectorstore.index.metric_type == faiss.METRIC_INNER_PRODUCT else "l2"


def search(vectorstore: Any, vector: list[float], k: int, filter_: Any) -> Scored:
    """FAISS filters the ``fetch_k`` nearest of the whole index: the backend widens ``k``."""
    return list(
        vectorstore.similarity_search_with_score_by_vector(vector, k=k, filter=filter_, fetch_k=k)
    )


def size(vectorstore: Any) -> int | None:
    """Vectors in the index."""
    return int(vectorstore.index.ntotal)


FAMILY = StoreFamily(
    "faiss", filter_builder=where, distance=distance, post_filter=True, search=search, size=size
)
