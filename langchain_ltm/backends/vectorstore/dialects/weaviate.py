"""Weaviate v4 (``langchain-weaviate``): filter dialect only, no server runs here.

Filter: a v4 ``Filter`` object, ``Filter.by_property(k).equal(v)`` for each key, joined
with ``Filter.all_of``. Weaviate turns the filter into an allow-list before its HNSW search
(pre-filtering), so ``k`` in-scope objects come back when they exist. Our metadata keys
become object properties (``ltm_store``, ``ltm_n0``, ... are text properties). Declare
them with ``tokenization=Tokenization.FIELD`` and ``index_filterable=True``: auto-schema's
default ``word`` tokenization lowercases and splits values, so ``equal("bob")`` would also
match ``"Bob Smith"``. The backend never returns a hit outside the requested scope (each
hit's own namespace is checked), but a loose filter costs wider searches.

Score: the search here is ``near_vector`` with ``distance`` returned, not the store's
``similarity_search`` (a hybrid query whose fused score is not a distance). The distance
follows the collection's metric: ``cosine`` (the default, ``1 - cos``), ``dot``
(``-dot``) or ``l2-squared``; read once from the collection's configuration. Objects are
written with our UUIDs and vectors through ``data.insert_many``.

``WeaviateVectorStore`` has no ``get_by_ids``: objects are read back by id (to repair
after a crash) with ``query.fetch_objects`` and an id filter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.documents import Document

from langchain_ltm.backends.vectorstore.family import Scored, StoreFamily

__all__ = ["FAMILY"]

_METRICS = {"cosine": "cosine", "dot": "negative_ip", "l2-squared": "l2"}


def where(eq: Mapping[str, str]) -> Any:
    """The Weaviate v4 filter for equalities on properties."""
    from weaviate.classes.query import Filter

    clauses = [Filter.by_property(k).equal(v) for k, v in eq.items()]
    return clauses[0] if len(clauses) == 1 else Filter.all_of(clauses)


def metric_distance(metric: Any) -> str:
    """A Weaviate ``VectorDistances`` value as a key of ``DISTANCES``."""
    name = str(getattr(metric, "value", metric))
    return _METRICS.get(name, name)


def distance(vectorstore: Any) -> str:
    """The collection's distance metric, read from its configuration."""
    config = vectorstore._collection.config.get()
    index = getattr(config, "vector_index_config", None)
    if index is None and getattr(config, "vector_config", None):
        index = next(iter(config.vector_config.values())).vector_index_config
    return metric_distance(getattr(index, "distance_metric", "cosine"))


def add(
    vectorstore: Any,
    ids: list[str],
    texts: list[str],
    vectors: list[list[float]],
    metadatas: list[dict[str, Any]],
) -> None:
    """Objects with our UUIDs and vectors (any left by an earlier try replaced)."""
    from weaviate.classes.data import DataObject
    from weaviate.classes.query import Filter

    data = vectorstore._collection.data
    data.delete_many(where=Filter.by_id().contains_any(ids))
    result = data.insert_many(
        [
            DataObject(properties={**m, vectorstore._text_key: t}, uuid=i, vector=v)
            for i, t, v, m in zip(ids, texts, vectors, metadatas, strict=True)
        ]
    )
    if getattr(result, "has_errors", False):  # a partial batch raises nothing by itself
        first = next(iter(result.errors.values()))
        raise RuntimeError(
            f"Weaviate refused {len(result.errors)} of {len(ids)} objects "
            f"({getattr(first, 'message', first)}); nothing was committed, repair() removes "
            "the objects that did land."
        )


def _document(obj: Any, text_key: str) -> Document:
    props = dict(obj.properties)
    text = str(props.pop(text_key, ""))
    return Document(page_content=text, metadata=props, id=str(obj.uuid))


def get(vectorstore: Any, ids: list[str]) -> list[Document]:
    """The objects among ``ids`` in the collection."""
    from weaviate.classes.query import Filter

    result = vectorstore._collection.query.fetch_objects(
        filters=Filter.by_id().contains_any(ids), limit=len(ids)
    )
    return [_document(obj, vectorstore._text_key) for obj in result.objects]


def search(vectorstore: Any, vector: list[float], k: int, filter_: Any) -> Scored:
    """``near_vector`` in scope, with Weaviate's distance as the score."""
    from weaviate.classes.query import MetadataQuery

    result = vectorstore._collection.query.near_vector(
        near_vector=vector, limit=k, filters=filter_, return_metadata=MetadataQuery(distance=True)
    )
    return [(_document(o, vectorstore._text_key), o.metadata.distance) for o in result.objects]


# every value field would become a schema property: value filters stay on the catalog
FAMILY = StoreFamily(
    "weaviate",
    filter_builder=where,
    distance=distance,
    add=add,
    search=search,
    get=get,
    value_filters=False,
)
