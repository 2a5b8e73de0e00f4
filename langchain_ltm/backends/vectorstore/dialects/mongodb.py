"""MongoDB Atlas (``langchain-mongodb``): filter dialect only, no Atlas cluster runs here.

Filter: an MQL match, ``{"k": {"$eq": v}}``, several joined with ``$and``, sent as the
``filter`` of the ``$vectorSearch`` stage (Atlas applies it before ranking, inside the
vector search). Atlas filters only on fields the vector index declares: create it with
``vs.create_vector_search_index(dimensions, filters=["ltm_store", "ltm_n0", "ltm_n1"])``
(add ``ltm_n2``, ... for deeper namespaces you search under), or as a search-index
definition with one ``{"type": "filter", "path": "ltm_store"}`` field per key. A missing
filter field is an Atlas error at query time, never a silent unscoped search.

Score: ``vectorSearchScore``: ``(1 + cos) / 2`` for ``cosine`` and ``dotProduct``,
``1 / (1 + d)`` for ``euclidean``; read from the store's ``relevance_score_fn``. Documents
are written with ``ReplaceOne(..., upsert=True)``: our metadata as top-level fields, as
``langchain-mongodb`` stores it, the text under ``text_key`` and our vector under
``embedding_key``.
"""

from __future__ import annotations

from typing import Any

from langchain_ltm.backends.vectorstore.family import Scored, StoreFamily, eq_and

__all__ = ["FAMILY", "FILTER_FIELDS"]

FILTER_FIELDS = ["ltm_store", "ltm_n0", "ltm_n1"]  # the index's filter fields for user scopes
_DISTANCES = {"cosine": "shifted_cosine", "dotProduct": "shifted_cosine", "euclidean": "inverse_l2"}


# The ``$vectorSearch`` pre-filter: equalities as ``{"k": {"$eq": v}}`` joined with ``$and``
where = eq_and


def distance(vectorstore: Any) -> str:
    """The score convention of the index's similarity."""
    name = str(getattr(vectorstore, "_relevance_score_fn", "cosine"))
    return _DISTANCES.get(name, name)


def replacements(
    vectorstore: Any,
    ids: list[str],
    texts: list[str],
    vectors: list[list[float]],
    metadatas: list[dict[str, Any]],
) -> list[Any]:
    """One ``ReplaceOne`` upsert per document, in the store's own field layout."""
    from langchain_mongodb.utils import str_to_oid
    from pymongo import ReplaceOne

    ops = []
    for id_, text, vector, meta in zip(ids, texts, vectors, metadatas, strict=True):
        oid = str_to_oid(id_)
        doc = {
            **meta,
            "_id": oid,
            vectorstore._text_key: text,
            vectorstore._embedding_key: vector,
        }
        ops.append(ReplaceOne({"_id": oid}, doc, upsert=True))
    return ops


def add(
    vectorstore: Any,
    ids: list[str],
    texts: list[str],
    vectors: list[list[float]],
    metadatas: list[dict[str, Any]],
) -> None:
    """An upsert with the vectors given, one ``bulk_write``."""
    vectorstore.collection.bulk_write(replacements(vectorstore, ids, texts, vectors, metadatas))


def search(vectorstore: Any, vector: list[float], k: int, filter_: Any) -> Scored:
    """The ``k`` nearest in scope: ``$vectorSearch`` with the scope as its ``filter``."""
    return list(vectorstore._similarity_search_with_score(vector, k=k, pre_filter=filter_))


# numCandidates is 10 k and Atlas caps it at 10,000; a filter field must be declared in the
# vector index, so value filters stay on the catalog
FAMILY = StoreFamily(
    "mongodb",
    filter_builder=where,
    distance=distance,
    add=add,
    search=search,
    max_k=1000,
    value_filters=False,
)
