r"""Milvus (``langchain-milvus``): Milvus Lite in a local ``.db`` file, or a Milvus server.

Filter: a boolean expression string, ``ltm_store == "..." and ltm_n0 == "..."``, each value
a double-quoted literal with ``\``, ``"``, newline and carriage return escaped (the only
characters the expression parser cannot take raw; every other character, control and
non-ASCII ones included, stands for itself). Milvus turns the expression into a mask of the
candidate rows *before* its top-k (Milvus Lite: brute force over the rows in the mask, or a
FAISS ``IDSelector`` over an HNSW segment), so the family is not ``post_filter``.

Distance: the vector index's ``metric_type``: ``L2`` is the squared Euclidean distance,
``IP`` the inner product, ``COSINE`` the cosine similarity itself (langchain-milvus creates
an ``L2`` index unless ``index_params`` says otherwise).

The vectorstore must be created with ``auto_id=False`` (our document ids are kept) and
``enable_dynamic_field=True`` (the namespace labels ``ltm_n0``, ``ltm_n1``, ... are as many
keys as the namespace is deep, which a fixed schema cannot hold). A text longer than the
collection's text field (``max_length``, 65,535 unless the collection says otherwise:
UTF-8 bytes on a Milvus server, characters on Milvus Lite) is refused before anything of
the write is journaled or written (:func:`check_texts`). langchain-milvus has no
``get_by_ids`` and its ``delete`` logs failures instead of raising, so both go to the
collection through ``pymilvus`` directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.documents import Document

from langchain_ltm.backends.vectorstore.family import Scored, StoreFamily
from langchain_ltm.errors import UnsupportedVectorStoreError

__all__ = ["FAMILY", "literal", "where"]

_METRICS = {"L2": "l2", "IP": "ip", "COSINE": "similarity"}


def literal(value: str) -> str:
    r"""``value`` as a Milvus string literal: ``"..."`` with ``\ " \n \r`` escaped.

    Example:
        >>> print(literal('say "hi"\\now'))
        "say \"hi\"\\now"
    """
    escaped = (
        value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    )
    return f'"{escaped}"'


def where(eq: Mapping[str, str]) -> str:
    r"""Milvus's boolean expression for equalities on metadata keys (all to hold).

    Example:
        >>> print(where({"ltm_store": "s1", "ltm_n1": 'o"brien'}))
        ltm_store == "s1" and ltm_n1 == "o\"brien"
    """
    for key in eq:
        if not key.isidentifier():
            raise ValueError(f"a Milvus filter key must be an identifier, not {key!r}")
    return " and ".join(f"{key} == {literal(str(value))}" for key, value in eq.items())


def distance(vectorstore: Any) -> str:
    """The index's metric as a key of ``DISTANCES``; checks the store can hold memories."""
    name = type(vectorstore).__name__
    if getattr(vectorstore, "auto_id", False):
        raise UnsupportedVectorStoreError(
            f"This {name} has auto_id=True, which drops the document ids langchain-ltm "
            f"gives: create it with {name}(..., auto_id=False)."
        )
    if not getattr(vectorstore, "enable_dynamic_field", False):
        raise UnsupportedVectorStoreError(
            f"This {name} has a fixed metadata schema, which cannot hold a namespace's labels "
            f"(one key per level): create it with {name}(..., enable_dynamic_field=True)."
        )
    if vectorstore._is_multi_vector:
        raise UnsupportedVectorStoreError(
            f"This {name} has several vector fields; langchain-ltm needs exactly one."
        )
    index = vectorstore._get_index()
    if index is not None:
        metric = index["index_param"].get("metric_type")
    else:  # no collection yet: the index langchain-milvus will create on the first add
        params = vectorstore.index_params
        if isinstance(params, list):
            params = params[0] if params else None
        metric = (params or {}).get("metric_type", "L2")
    return _METRICS.get(str(metric).upper(), str(metric))


def add(
    vectorstore: Any,
    ids: list[str],
    texts: list[str],
    vectors: list[list[float]],
    metadatas: list[dict[str, Any]],
) -> None:
    """An upsert with the vectors given (Milvus may keep two rows under one inserted id).

    Raises:
        ValueError: A text is longer than the collection's text field holds (checked
            first: nothing is deleted or written).
    """
    check_texts(vectorstore, texts, metadatas)
    if vectorstore.col is not None:
        vectorstore.client.delete(vectorstore.collection_name, ids=ids)
    vectorstore.add_embeddings(texts, vectors, metadatas, ids=ids)


def check_texts(vectorstore: Any, texts: list[str], metadatas: list[dict[str, Any]]) -> None:
    """Refuse a text longer than the collection's text field holds (the family's ``check_store``).

    The field's ``max_length`` counts UTF-8 bytes on a Milvus server (as Milvus documents
    VARCHAR) and characters on Milvus Lite (a local ``.db`` file), which stores 65,535
    characters of any script.

    Raises:
        ValueError: Naming the limit and the text.
    """
    limit = _text_limit(vectorstore)
    characters = is_lite(vectorstore)
    unit = "characters" if characters else "bytes (UTF-8)"
    for text, meta in zip(texts, metadatas, strict=True):
        size = len(text) if characters else len(text.encode("utf-8", "surrogatepass"))
        if size > limit:
            raise ValueError(
                f"{'Milvus Lite' if characters else 'Milvus'} holds at most {limit:,} "
                f"{unit} of text per document (the collection's max_length); the text at "
                f"{meta.get('ltm_path')!r} of key {meta.get('ltm_key')!r} has {size:,} "
                f"({text[:40]!r}...) and was not stored: store a shorter text, or index a "
                "shorter field."
            )


def is_lite(vectorstore: Any) -> bool:
    """The store is Milvus Lite: its URI a local ``.db`` file (pymilvus's own rule)."""
    args = getattr(vectorstore, "_connection_args", None) or {}
    return str(args.get("uri", "")).endswith(".db")


_VARCHAR_MAX = 65_535  # Milvus' own ceiling, and langchain-milvus' default max_length


def _text_limit(vectorstore: Any) -> int:
    """The ``max_length`` of the collection's text field (Milvus' ceiling if unknown)."""
    col = getattr(vectorstore, "col", None)
    name = getattr(vectorstore, "_text_field", None)
    for field in getattr(getattr(col, "schema", None), "fields", None) or ():
        if getattr(field, "name", None) == name:
            limit = (getattr(field, "params", None) or {}).get("max_length")
            if isinstance(limit, int) and limit > 0:
                return limit
    return _VARCHAR_MAX


def search(vectorstore: Any, vector: list[float], k: int, expr: Any) -> Scored:
    """The ``k`` nearest rows matching ``expr``."""
    return list(vectorstore.similarity_search_with_score_by_vector(vector, k=k, expr=expr))


def get(vectorstore: Any, ids: list[str]) -> list[Document]:
    """The rows with these primary keys, as documents with their ids."""
    if vectorstore.col is None:
        return []
    pk, text = vectorstore._primary_field, vectorstore._text_field
    vector_fields = set(vectorstore._as_list(vectorstore._vector_field))
    rows = vectorstore.client.get(
        vectorstore.collection_name, ids=ids, output_fields=vectorstore._get_output_fields()
    )
    docs = []
    for row in rows:
        meta = {k: v for k, v in row.items() if k not in vector_fields and k not in (pk, text)}
        docs.append(Document(id=str(row[pk]), page_content=row.get(text) or "", metadata=meta))
    return docs


def delete(vectorstore: Any, ids: list[str]) -> None:
    """Delete by primary key; a failure raises (langchain-milvus's ``delete`` logs it)."""
    if vectorstore.col is not None:
        vectorstore.client.delete(vectorstore.collection_name, ids=ids)


FAMILY = StoreFamily(
    "milvus", filter_builder=where, distance=distance, add=add, search=search, get=get,
    delete=delete, check_store=check_texts,
)  # fmt: skip
