"""Chroma (``langchain-chroma``), in process or against a ``chroma run`` server.

Filter: ``{"k": {"$eq": v}}``, several joined with ``$and``. Distance: the collection's
``space`` (``l2`` by default; ``ip`` is ``1 - dot``, the cosine distance on unit vectors).
Vectors go straight to the collection's ``upsert``, which refuses more records than the
client's ``get_max_batch_size()`` (5,461 in process, the server's own over HTTP): asked
once per backend, larger writes are split (:func:`batch_limit`).
"""

from __future__ import annotations

from typing import Any

from langchain_ltm.backends.vectorstore.family import Scored, StoreFamily, eq_and

__all__ = ["FAMILY"]


# Chroma's ``where``: equalities as ``{"k": {"$eq": v}}`` joined with ``$and``
where = eq_and


def space(vectorstore: Any) -> str:
    """The collection's distance, as a key of ``DISTANCES``."""
    collection = vectorstore._collection
    found = None
    config = getattr(collection, "configuration", None) or {}
    for index in ("hnsw", "spann"):
        part = config.get(index) if hasattr(config, "get") else None
        if part and part.get("space"):
            found = part["space"]
            break
    if found is None:
        found = (collection.metadata or {}).get("hnsw:space", "l2")
    return {"l2": "l2", "cosine": "cosine", "ip": "cosine"}.get(str(found), str(found))


def add(
    vectorstore: Any,
    ids: list[str],
    texts: list[str],
    vectors: list[list[float]],
    metadatas: list[dict[str, Any]],
) -> None:
    """An upsert with the vectors given."""
    vectorstore._collection.upsert(
        ids=ids, embeddings=vectors, metadatas=metadatas, documents=texts
    )


def batch_limit(vectorstore: Any) -> int:
    """The most records one ``upsert`` takes: the client's ``max_batch_size``."""
    return int(vectorstore._client.get_max_batch_size())


def search(vectorstore: Any, vector: list[float], k: int, filter_: Any) -> Scored:
    """The ``k`` nearest in scope (langchain-chroma's "relevance" call returns distances)."""
    return list(
        vectorstore.similarity_search_by_vector_with_relevance_scores(vector, k=k, filter=filter_)
    )


def size(vectorstore: Any) -> int | None:
    """Documents in the collection."""
    return int(vectorstore._collection.count())


def probe(vectorstore: Any) -> str | None:
    """The ``ltm_store`` of one of our documents in the collection (a get of one), or None.

    ``ltm_at`` (an integer on every document of ours) is asked for with ``$gt``: Chroma's
    ``$ne`` would also match documents without the key (other applications' own).
    """
    got = vectorstore._collection.get(where={"ltm_at": {"$gt": 0}}, limit=1, include=["metadatas"])
    for meta in got.get("metadatas") or []:
        found = (meta or {}).get("ltm_store")
        if isinstance(found, str) and found:
            return found
    return None


FAMILY = StoreFamily(
    "chroma",
    filter_builder=where,
    distance=space,
    add=add,
    search=search,
    size=size,
    max_batch=batch_limit,
    probe=probe,
)
