"""Elasticsearch (``langchain-elasticsearch``): filter dialect only, no server runs here.

Filter: a list of ``term`` clauses on ``metadata.<key>.keyword`` (the keyword sub-field
Elasticsearch's default dynamic mapping gives a string under ``metadata``; with an explicit
mapping that declares ``metadata.ltm_store``, ``metadata.ltm_n0``, ... as ``keyword``, pass
``keyword_suffix=""`` to :func:`where_for`). ``DenseVectorStrategy`` puts the list in the
``knn`` section's ``filter``, which Elasticsearch applies during the approximate search, so
``k`` in-scope documents come back when they exist.

Score: the ``_score`` of a kNN hit: ``(1 + cos) / 2`` for ``cosine`` and ``dot_product``,
``1 / (1 + d^2)`` for ``l2_norm``; read from the strategy's ``distance``. Vectors go to
``add_embeddings``; ``num_candidates`` grows with ``k`` (Elasticsearch needs it >= ``k``).

``ElasticsearchStore`` has no ``get_by_ids``: until it does, ``LongTermMemoryStore(vs)``
says so (the engine reads its documents back by id when repairing).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.documents import Document

from langchain_ltm.backends.vectorstore.family import Scored, StoreFamily

__all__ = ["FAMILY", "where_for"]

_DISTANCES = {
    "COSINE": "shifted_cosine",
    "DOT_PRODUCT": "shifted_cosine",
    "EUCLIDEAN_DISTANCE": "inverse_squared_l2",
}
_MIN_CANDIDATES = 50


def where_for(keyword_suffix: str = ".keyword") -> Callable[[Mapping[str, str]], Any]:
    """The filter builder for a mapping whose metadata strings are ``<key><suffix>``."""
    return functools.partial(_where, suffix=keyword_suffix)


def _where(eq: Mapping[str, str], suffix: str) -> Any:
    return [{"term": {f"metadata.{k}{suffix}": v}} for k, v in eq.items()]


def distance(vectorstore: Any) -> str:
    """The score convention of the store's ``DenseVectorStrategy``."""
    strategy = vectorstore._store.retrieval_strategy
    if getattr(strategy, "hybrid", False):
        return "hybrid (reciprocal rank fusion)"
    metric = getattr(strategy, "distance", None)
    name = getattr(metric, "name", str(metric))
    return _DISTANCES.get(name, name)


def _document(hit: dict[str, Any], content_field: str) -> Document:
    source = hit["_source"]
    return Document(
        page_content=source.get(content_field, ""),
        metadata=source.get("metadata", {}),
        id=hit.get("_id"),
    )


def search(vectorstore: Any, vector: list[float], k: int, filter_: Any) -> Scored:
    """The ``k`` nearest in scope, the scope in the ``knn`` filter."""
    hits = vectorstore._store.search(
        query=None,
        query_vector=vector,
        k=k,
        num_candidates=max(_MIN_CANDIDATES, 2 * k),
        filter=filter_,
    )
    return [(_document(hit, vectorstore.query_field), float(hit["_score"])) for hit in hits]


FAMILY = StoreFamily("elasticsearch", filter_builder=where_for(), distance=distance, search=search)
