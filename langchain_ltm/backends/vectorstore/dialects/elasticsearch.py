"""Elasticsearch (``langchain-elasticsearch``): filter dialect only, no server runs here.

Filter: a list of ``term`` clauses on ``metadata.<key>.keyword`` (the keyword sub-field
Elasticsearch's default dynamic mapping gives a string under ``metadata``; with an explicit
mapping that declares ``metadata.ltm_store``, ``metadata.ltm_n0``, ... as ``keyword``, pass
``keyword_suffix=""`` to :func:`where_for`). ``DenseVectorStrategy`` puts the list in the
``knn`` section's ``filter``, which Elasticsearch applies during the approximate search, so
``k`` in-scope documents come back when they exist.

Score: the ``_score`` of a kNN hit: ``(1 + cos) / 2`` for ``cosine`` and ``dot_product``,
``1 / (1 + d^2)`` for ``l2_norm``; read from the strategy's ``distance``. Vectors go to
``add_embeddings`` (a bulk index by id: an upsert); ``num_candidates`` grows with ``k``
(Elasticsearch needs it >= ``k``). ``ElasticsearchStore`` has no ``get_by_ids``: documents
are read back by id (to repair after a crash) with the client's ``mget``.
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


def add(
    vectorstore: Any,
    ids: list[str],
    texts: list[str],
    vectors: list[list[float]],
    metadatas: list[dict[str, Any]],
) -> None:
    """``add_embeddings`` with our vectors (indexing by id replaces a document)."""
    vectorstore.add_embeddings(list(zip(texts, vectors, strict=True)), metadatas, ids)


def get(vectorstore: Any, ids: list[str]) -> list[Document]:
    """The documents among ``ids`` in the store's index (the client's ``mget``)."""
    reply = vectorstore._store.client.mget(index=vectorstore._store.index, ids=ids)
    return [_document(doc, vectorstore.query_field) for doc in reply["docs"] if doc.get("found")]


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


# kNN's num_candidates (2 k here) is capped at 10,000; every filter field is a mapped field
# (the index's limit is 1,000), so value filters stay on the catalog
FAMILY = StoreFamily(
    "elasticsearch",
    filter_builder=where_for(),
    distance=distance,
    add=add,
    search=search,
    get=get,
    max_k=5000,
    value_filters=False,
)
