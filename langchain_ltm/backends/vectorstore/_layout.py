"""The documents the generic engine puts in a vectorstore, and the filters that find them.

One document per embedded text: our vector, the text as ``page_content``, and metadata
``ltm_store`` (the catalog's id), ``ltm_n0``, ``ltm_n1``, ... (the namespace's labels),
``ltm_ns`` (the namespace as JSON), ``ltm_key``, ``ltm_path``, ``ltm_at`` (the version's
``updated_at`` in microseconds) and, in catalogs that carry them, ``ltm_v_<field>`` for the
value's short strings (:func:`~._catalog.value_metadata`).

A search's scope is equalities on ``ltm_store`` and the prefix's labels; pushable value
conditions join them as ``ltm_v_<field>`` equalities. The family's dialect turns them into
the store's own filter; :func:`in_scope` checks each returned document again, in Python.
No I/O here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from langchain_ltm.backends.base import ItemKey, Record, SearchRequest
from langchain_ltm.backends.sqlite import _sql as sql
from langchain_ltm.backends.vectorstore._catalog import (
    VALUE_PREFIX,
    doc_id,
    pushable,
    value_metadata,
)

Documents = tuple[list[str], list[str], list[list[float]], list[dict[str, Any]]]


def scope_equalities(store_id: str, prefix: tuple[str, ...]) -> dict[str, str]:
    """The metadata equalities that hold for exactly this catalog's documents under ``prefix``."""
    eq = {"ltm_store": store_id}
    eq.update({f"ltm_n{i}": label for i, label in enumerate(prefix)})
    return eq


def search_equalities(store_id: str, request: SearchRequest, value_fields: bool) -> dict[str, str]:
    """The scope plus, when the documents carry values (``value_fields``), the pushable filter.

    Conditions ``{field: "a short string"}`` on top-level fields become equalities on
    ``ltm_v_<field>``; every other condition, and these too, is checked again on the
    catalog's items.
    """
    eq = scope_equalities(store_id, request.prefix)
    if value_fields:
        for c in request.filter:
            if pushable(c.path, c.op, c.operand):
                eq.setdefault(VALUE_PREFIX + c.path[0], c.operand)
    return eq


def in_scope(doc: Document, key: ItemKey | None, store_id: str, request: SearchRequest) -> bool:
    """The document is this catalog's and lies under the requested prefix.

    Isolation never rests on a dialect alone: a tokenizing or case-folding filter
    (Weaviate's ``word`` tokenization, Redis tags) can match more than the exact value.
    """
    if doc.metadata.get("ltm_store") != store_id:
        return False
    return key is not None and key[0][: len(request.prefix)] == tuple(request.prefix)


def item_key(metadata: Mapping[str, Any]) -> ItemKey | None:
    """The item a document belongs to, from its metadata; ``None`` if it is not one of ours."""
    try:
        return tuple(json.loads(metadata["ltm_ns"])), str(metadata["ltm_key"])
    except (KeyError, TypeError, ValueError):
        return None


def document_id(doc: Document) -> str | None:
    """The store's id of one of our documents; ``None``: the document is not one of ours.

    ``doc.id`` when the store returns it; otherwise (langchain-redis and langchain-milvus
    search results carry none) the id :func:`~._catalog.doc_id` gave the document, from the
    metadata it was written with.

    Example:
        >>> meta = {"ltm_store": "s1", "ltm_ns": '["docs"]', "ltm_key": "k",
        ...         "ltm_path": "$", "ltm_at": 7}
        >>> document_id(Document("text", metadata=meta)) == doc_id("s1", ("docs",), "k", "$", 7)
        True
    """
    if doc.id is not None:
        return str(doc.id)
    meta = doc.metadata
    try:
        namespace = tuple(json.loads(meta["ltm_ns"]))
        at = meta["ltm_at"]
        if isinstance(at, bool) or not isinstance(at, int | float) or at != int(at):
            return None
        return doc_id(meta["ltm_store"], namespace, meta["ltm_key"], meta["ltm_path"], int(at))
    except (KeyError, TypeError, ValueError):
        return None


def documents(records: Sequence[Record], store_id: str, value_fields: bool) -> Documents:
    """The documents of ``records`` (ids, texts, vectors, metadatas); unembedded ones have none."""
    docs: Documents = ([], [], [], [])
    for r in records:
        if r.vectors is None or not len(r.vectors):
            continue
        append_docs(
            docs,
            store_id,
            value_fields,
            r.namespace,
            r.key,
            r.value,
            sql.to_us(r.now),
            r.paths,
            r.texts,
            r.vectors,
        )
    return docs


def append_docs(
    docs: Documents,
    store_id: str,
    value_fields: bool,
    namespace: tuple[str, ...],
    key: str,
    value: Mapping[str, Any],
    at: int,
    paths: Sequence[str],
    texts: Sequence[str],
    vectors: Any,
) -> None:
    """Append to ``docs`` one document per path of one item version."""
    ids, out_texts, out_vectors, metadatas = docs
    common: dict[str, Any] = value_metadata(value) if value_fields else {}
    common.update(
        {
            "ltm_store": store_id,
            **{f"ltm_n{i}": label for i, label in enumerate(namespace)},
            "ltm_ns": json.dumps(list(namespace)),
            "ltm_key": key,
            "ltm_at": at,
        }
    )
    for text, path, vector in zip(texts, paths, vectors, strict=True):
        ids.append(doc_id(store_id, namespace, key, path, at))
        out_texts.append(text)
        out_vectors.append(vector.tolist())
        metadatas.append({**common, "ltm_path": path})


def holding(char: str, texts: Sequence[str], metadatas: Sequence[Mapping[str, Any]]) -> str | None:
    r"""Where the documents first hold ``char``, said for an error message; ``None``: nowhere.

    Every page content and every string of the metadata (the key, the namespace labels,
    the index path, the value's ``ltm_v_<field>`` copies) is looked at.

    Example:
        >>> meta = {"ltm_ns": '["docs"]', "ltm_key": "k", "ltm_v_tag": "a\x00"}
        >>> holding("\x00", ["fine"], [meta])
        "the value's field 'tag' of key 'k'"
    """
    for text, meta in zip(texts, metadatas, strict=True):
        if char in text:
            return _field("", meta)
        for name, value in meta.items():
            if type(value) is str and char in value:
                return _field(name, meta)
    return None


def _field(name: str, meta: Mapping[str, Any]) -> str:
    """The document field ``name`` (``""``: the page content), as a user knows it."""
    key, path = meta.get("ltm_key"), meta.get("ltm_path")
    of = f"of key {key!r}"
    if not name:
        return f"the text at {path!r} {of}"
    if name == "ltm_key":
        return f"the key {key!r}"
    if name == "ltm_path":
        return f"the index path {path!r} {of}"
    if name.startswith(VALUE_PREFIX):
        return f"the value's field {name[len(VALUE_PREFIX) :]!r} {of}"
    if name.startswith("ltm_n"):  # ltm_n0, ltm_n1, ... and ltm_ns
        return f"a namespace label {of}"
    return f"the metadata {name!r} {of}"


def text_at(value: Mapping[str, Any], path: str) -> str:
    """The text a document of ``value`` at ``path`` embedded (``path.j``: the j-th of many)."""
    found = get_text_at_path(value, tokenize_path(path))
    if len(found) == 1:
        return found[0]
    head, _, tail = path.rpartition(".")
    if head and tail.isdigit():
        many = get_text_at_path(value, tokenize_path(head))
        if int(tail) < len(many):
            return many[int(tail)]
    return sql.dump_value(value)  # never read back by us: the catalog holds the value
