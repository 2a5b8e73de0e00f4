r"""PGVectorStore (``langchain-postgres``), on its own table layout; and the older ``PGVector``.

Filter: ``{"k": {"$eq": v}}``, several joined with ``$and``. PGVectorStore turns it into
SQL (``langchain_metadata->>'k' = :v``, or ``"k" = :v`` for a key declared in
``metadata_columns``) in the ``WHERE`` of the very query that orders by distance and
applies ``LIMIT``: without an approximate index the scope is filtered before the ranking
(an exact, pre-filtered scan). With an HNSW or IVFFlat index pgvector filters the rows its
index scan yields, which can return fewer than ``k``; pass
``index_query_options=IterativeScan()`` (pgvector 0.8 or newer) so the scan continues
until ``k`` rows pass.

Distance: the search returns ``cosine_distance`` (``COSINE_DISTANCE``, the default),
``l2_distance`` (``EUCLIDEAN``, the plain Euclidean distance) or ``inner_product``
(``INNER_PRODUCT``, the dot product itself). Vectors go to ``add_embeddings``, which
upserts (``ON CONFLICT DO UPDATE``) row by row.

Speed: ``metadata_columns=["ltm_store", "ltm_n0", "ltm_n1"]`` (TEXT) turns the scope into
plain columns that a B-tree index serves, instead of JSON lookups.

Text: Postgres cannot hold a NUL character (``\x00``) in text. PGVectorStore's JSON
metadata column takes one (``json`` keeps it escaped), and then every filtered search on
the table fails on that row (``->>`` turns it into text): one user's put broke every
user's search. Both families refuse such documents before anything is written
(:func:`refuse_nul`).

The older ``langchain_postgres.PGVector`` (one ``langchain_pg_embedding`` table for every
collection, JSONB metadata) takes the same filter, which it runs as ``jsonb_path_match``
in the ``WHERE`` of its ranked query, beside its collection's id. Its scores: cosine
distance, Euclidean distance, or for ``MAX_INNER_PRODUCT`` pgvector's ``<#>``, minus the
inner product. Its ``add_embeddings`` is one ``INSERT`` of five bind parameters a row, and
Postgres takes at most 65,535 in a statement: larger writes are split
(:data:`LEGACY_MAX_BATCH` rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_ltm.backends.vectorstore._layout import holding
from langchain_ltm.backends.vectorstore.family import StoreFamily, eq_and
from langchain_ltm.errors import UnsupportedVectorStoreError

__all__ = ["FAMILY", "LEGACY_FAMILY", "IterativeScan"]

# the metadata keys a document must give back for the backend to map it to its item
# (and the scope labels every search filters on: a user namespace is two levels deep)
_NEEDED = ("ltm_store", "ltm_ns", "ltm_key", "ltm_path", "ltm_at", "ltm_n0", "ltm_n1")
_DISTANCES = {"COSINE_DISTANCE": "cosine", "EUCLIDEAN": "euclidean", "INNER_PRODUCT": "ip"}


# PGVectorStore's filter: equalities as ``{"k": {"$eq": v}}`` joined with ``$and``
where = eq_and


def _inner(vectorstore: Any) -> Any:
    """The ``AsyncPGVectorStore`` a sync ``PGVectorStore`` wraps (it holds the settings)."""
    return getattr(vectorstore, "_PGVectorStore__vs", vectorstore)


def distance(vectorstore: Any) -> str:
    """The score convention, read from the store; refuses layouts that would lose metadata.

    Raises:
        UnsupportedVectorStoreError: Hybrid search is on (its scores are fused ranks), or
            the table has no JSON metadata column and lacks a column for one of our keys.
    """
    inner = _inner(vectorstore)
    if getattr(inner, "hybrid_search_config", None) is not None:
        raise UnsupportedVectorStoreError(
            "This PGVectorStore has hybrid_search_config set: its scores are fused ranks, not "
            "distances. Create the store langchain-ltm uses without hybrid_search_config."
        )
    columns = set(getattr(inner, "metadata_columns", None) or [])
    if getattr(inner, "metadata_json_column", None) is None:
        lost = [k for k in _NEEDED if k not in columns]
        if lost:
            raise UnsupportedVectorStoreError(
                f"This PGVectorStore has no metadata JSON column and no column for "
                f"{', '.join(lost)}: langchain-ltm's metadata would be dropped. Keep "
                'metadata_json_column="langchain_metadata" (the default) in '
                "init_vectorstore_table and PGVectorStore.create_sync."
            )
    strategy = getattr(inner, "distance_strategy", None)
    name = getattr(strategy, "name", str(strategy))
    return _DISTANCES.get(name, name)


_LEGACY_DISTANCES = {"cosine": "cosine", "l2": "euclidean", "inner": "negative_ip"}


def legacy_distance(vectorstore: Any) -> str:
    """The score convention of an older ``PGVector``, from its distance strategy."""
    strategy = getattr(vectorstore, "_distance_strategy", "cosine")
    name = str(getattr(strategy, "value", strategy))
    return _LEGACY_DISTANCES.get(name, name)


def add(
    vectorstore: Any,
    ids: list[str],
    texts: list[str],
    vectors: list[list[float]],
    metadatas: list[dict[str, Any]],
) -> None:
    """The store's own upsert (``ON CONFLICT DO UPDATE``), the vectors given."""
    vectorstore.add_embeddings(texts, vectors, metadatas=metadatas, ids=ids)


async def aadd(
    vectorstore: Any,
    ids: list[str],
    texts: list[str],
    vectors: list[list[float]],
    metadatas: list[dict[str, Any]],
) -> None:
    """The async twin of :func:`add`: PGVectorStore's own coroutine, no thread hop."""
    await vectorstore.aadd_embeddings(texts, vectors, metadatas=metadatas, ids=ids)


def refuse_nul(texts: list[str], metadatas: list[dict[str, Any]]) -> None:
    r"""Refuse documents holding a NUL character, which Postgres text cannot hold.

    Run on a write's documents before anything is written: PGVectorStore would store one
    in its JSON metadata, after which every search on the table fails (see the module
    docstring); the older PGVector's JSONB and both content columns fail mid-write.

    Raises:
        ValueError: A text, key, namespace label or copied value field holds ``\x00``
            (named in the message).

    Example:
        >>> meta = {"ltm_ns": '["docs"]', "ltm_key": "a\x00b", "ltm_path": "text"}
        >>> refuse_nul(["fine"], [meta])
        Traceback (most recent call last):
        ...
        ValueError: The key 'a\x00b' contains a NUL character (\x00), ...
    """
    where = holding("\x00", texts, metadatas)
    if where is not None:
        raise ValueError(
            f"{where[:1].upper()}{where[1:]} contains a NUL character (\\x00), which Postgres "
            "cannot store in text (in PGVectorStore's JSON metadata it would make every "
            "search on the table fail). Remove the character; nothing of this batch was "
            "written."
        )


@dataclass
class IterativeScan:
    """Query options for an HNSW-indexed table: the index scan goes on until ``k`` rows pass.

    Pass it as ``PGVectorStore.create_sync(..., index_query_options=IterativeScan())`` when
    the table has an HNSW index (``vs.apply_vector_index(HNSWIndex())``): without it pgvector
    filters only the ``ef_search`` rows its index yields, and a user's search can come back
    short. Needs pgvector 0.8 or newer.

    Args:
        ef_search: The HNSW candidate list size per scan step.
        order: ``"strict_order"`` (results exactly by distance) or ``"relaxed_order"``.

    Example:
        >>> IterativeScan(ef_search=100).to_parameter()
        ['hnsw.ef_search = 100', 'hnsw.iterative_scan = strict_order']
    """

    ef_search: int = 40
    order: str = "strict_order"

    def __post_init__(self) -> None:
        if self.order not in ("strict_order", "relaxed_order"):
            raise ValueError(
                f"order={self.order!r}: use 'strict_order' or 'relaxed_order' (pgvector's "
                "hnsw.iterative_scan values)."
            )
        if int(self.ef_search) < 1:
            raise ValueError(f"ef_search={self.ef_search!r}: give a positive integer.")

    def to_parameter(self) -> list[str]:
        """The ``SET LOCAL`` settings PGVectorStore runs before its query."""
        return [f"hnsw.ef_search = {int(self.ef_search)}", f"hnsw.iterative_scan = {self.order}"]

    def to_string(self) -> str:
        """The settings as one string (PGVectorStore's older interface)."""
        return ", ".join(self.to_parameter())


# the older PGVector's INSERT: id, collection_id, embedding, document, cmetadata per row,
# within Postgres' 65,535 bind parameters a statement
LEGACY_MAX_BATCH = 65_535 // 5

# PGVectorStore's async methods are its own (its sync ones block on a loop thread of its
# engine); the older PGVector has coroutines only when built with async_mode=True, so its
# async calls run the sync ones on the backend's threads
FAMILY = StoreFamily(
    "pgvector", filter_builder=where, distance=distance, add=add, aadd=aadd, check=refuse_nul
)
LEGACY_FAMILY = StoreFamily(
    "pgvector-legacy",
    filter_builder=where,
    distance=legacy_distance,
    add=add,
    native_async=False,
    check=refuse_nul,
    max_batch=LEGACY_MAX_BATCH,
)
