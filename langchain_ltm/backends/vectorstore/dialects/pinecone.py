"""Pinecone (``langchain-pinecone``): filter dialect only, no server runs here.

Filter: Pinecone's metadata filter, ``{"k": {"$eq": v}}``, several joined with ``$and``
(as its docs write it). Pinecone applies it inside the index search (single-stage
filtering), so the scope is decided before the top-k, never after. Metadata fields are
indexed by default; on a pod index with selective metadata indexing, declare ``ltm_store``
and ``ltm_n0``, ``ltm_n1``, ... in ``metadata_config.indexed``.

Score: ``cosine`` indexes return the cosine similarity, ``dotproduct`` the dot product
(the same on our unit vectors), ``euclidean`` the squared Euclidean distance; read from
the store's ``distance_strategy``. Vectors go to the index's ``upsert`` with the text in
the store's ``text_key`` metadata field, in the store's namespace.

``PineconeVectorStore`` has no ``get_by_ids``: documents are read back by id (to repair
after a crash) with the index's ``fetch``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document

from langchain_ltm.backends.vectorstore.family import Scored, StoreFamily, eq_and

__all__ = ["FAMILY"]

_DISTANCES = {"COSINE": "similarity", "MAX_INNER_PRODUCT": "ip", "EUCLIDEAN_DISTANCE": "l2"}


# Pinecone's metadata filter: equalities as ``{"k": {"$eq": v}}`` joined with ``$and``
where = eq_and


def distance(vectorstore: Any) -> str:
    """The score convention of the store's ``distance_strategy``."""
    strategy = getattr(vectorstore, "distance_strategy", None)
    name = getattr(strategy, "name", str(strategy))
    return _DISTANCES.get(name, name)


def records(
    text_key: str,
    ids: list[str],
    texts: list[str],
    vectors: list[list[float]],
    metadatas: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """The upsert records: id, our vector, metadata with the text under ``text_key``."""
    return [
        {"id": i, "values": v, "metadata": {**m, text_key: t}}
        for i, t, v, m in zip(ids, texts, vectors, metadatas, strict=True)
    ]


def add(
    vectorstore: Any,
    ids: list[str],
    texts: list[str],
    vectors: list[list[float]],
    metadatas: list[dict[str, Any]],
) -> None:
    """An upsert with the vectors given (Pinecone's upsert overwrites by id)."""
    vectorstore.index.upsert(  # one request takes at most 1,000 records and 2 MB
        vectors=records(vectorstore._text_key, ids, texts, vectors, metadatas),
        namespace=vectorstore._namespace,
        batch_size=100,
        show_progress=False,
    )


def search(vectorstore: Any, vector: list[float], k: int, filter_: Any) -> Scored:
    """The ``k`` nearest in scope (langchain-pinecone names the call otherwise)."""
    return list(vectorstore.similarity_search_by_vector_with_score(vector, k=k, filter=filter_))


def get(vectorstore: Any, ids: list[str]) -> list[Document]:
    """The documents among ``ids`` in the store's namespace (the index's ``fetch``)."""
    found: dict[str, Any] = {}
    for start in range(0, len(ids), 100):  # fetch takes ids in the URL: keep requests short
        chunk = ids[start : start + 100]
        found.update(vectorstore.index.fetch(ids=chunk, namespace=vectorstore._namespace).vectors)
    docs = []
    for id_, record in found.items():
        metadata = dict(record.metadata or {})
        text = str(metadata.pop(vectorstore._text_key, ""))
        docs.append(Document(page_content=text, metadata=metadata, id=id_))
    return docs


# top_k is capped at 1,000 with metadata (always included); pod indexes with selective
# metadata indexing filter only on declared fields, so value filters stay on the catalog
FAMILY = StoreFamily(
    "pinecone",
    filter_builder=where,
    distance=distance,
    add=add,
    search=search,
    get=get,
    max_k=1000,
    value_filters=False,
)
