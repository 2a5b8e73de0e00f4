"""Pure planning of a BaseStore batch: validate every op, dedupe puts, collect texts.

Nothing here does I/O. ``plan_batch`` raises before anything is embedded or written, so a
bad op in a batch leaves the store untouched (LangGraph #8832: ops given straight to
``batch()`` are validated like the methods). Namespaces may be any sequence of labels
(``["memories", "u1"]``, as PostgresStore accepts); the plan holds them as tuples.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    Op,
    PutOp,
    SearchOp,
    get_text_at_path,
    tokenize_path,
)

from langchain_ltm._clock import check_ttl
from langchain_ltm._codec import copy_value
from langchain_ltm._filters import Filter, compile_filter
from langchain_ltm._utf8 import encodes_as_utf8

TokenizedField = tuple[str, Any]


def tokenize_fields(fields: Iterable[str]) -> list[TokenizedField]:
    return [(f, f if f == "$" else tokenize_path(f)) for f in fields]


def _plain_key(tokens: Any) -> str | None:
    """The key of a one-token path that is a plain dict key (no index, wildcard, braces)."""
    if type(tokens) is not list or len(tokens) != 1:
        return None
    (token,) = tokens
    if not isinstance(token, str) or not token or token == "*" or token[0] in "[{":
        return None
    return token


def _texts_at(value: Mapping[str, Any], tokens: Any) -> list[str]:
    """LangGraph's ``get_text_at_path``, with a shortcut for a plain key holding a str.

    The usual index field (``"content"``, ``"text"``) on a dict value: the str itself, as
    ``get_text_at_path`` returns it, without its generic walk (1.3 us a put).
    """
    key = _plain_key(tokens)
    if key is not None and type(value) is dict:
        found = value.get(key)
        if type(found) is str:
            return [found]
    return get_text_at_path(value, tokens)


@dataclass
class PlannedPut:
    op: PutOp
    value: dict[str, Any] | None
    texts: list[tuple[str, str]]  # (path, text)
    ttl: float | None = None  # minutes


@dataclass
class BatchPlan:
    size: int
    gets: list[tuple[int, GetOp]] = field(default_factory=list)
    searches: list[tuple[int, SearchOp, Filter]] = field(default_factory=list)
    lists: list[tuple[int, ListNamespacesOp]] = field(default_factory=list)
    puts: dict[tuple[tuple[str, ...], str], PlannedPut] = field(default_factory=dict)

    @property
    def document_texts(self) -> list[str]:
        seen: dict[str, None] = {}
        for put in self.puts.values():
            for _, text in put.texts:
                seen[text] = None
        return list(seen)

    @property
    def queries(self) -> list[str]:
        return list(dict.fromkeys(op.query for _, op, _ in self.searches if op.query))


def plan_batch(ops: Iterable[Op], default_fields: list[TokenizedField]) -> BatchPlan:
    ops = list(ops)
    plan = BatchPlan(size=len(ops))
    for i, op in enumerate(ops):
        if isinstance(op, GetOp):
            labels = as_labels(op.namespace)
            if labels is not op.namespace:  # a list given: the plan holds a tuple
                op = op._replace(namespace=labels)
            _check_key(op.key)
            plan.gets.append((i, op))
        elif isinstance(op, SearchOp):
            plan.searches.append((i, *plan_search(op)))
        elif isinstance(op, ListNamespacesOp):
            conditions = []
            for condition in op.match_conditions or ():
                if condition.match_type not in ("prefix", "suffix"):
                    raise ValueError(f"Unsupported match type: {condition.match_type!r}.")
                conditions.append(condition._replace(path=as_labels(condition.path)))
            op = op._replace(match_conditions=tuple(conditions))
            _check_window(op.limit, op.offset)
            if op.max_depth is not None and (not isinstance(op.max_depth, int) or op.max_depth < 1):
                raise ValueError(f"max_depth must be a positive int, got {op.max_depth!r}.")
            plan.lists.append((i, op))
        elif isinstance(op, PutOp):
            labels = as_labels(op.namespace)
            if labels is not op.namespace:
                op = op._replace(namespace=labels)
            plan.puts[(op.namespace, op.key)] = _plan_put(op, default_fields)
        else:
            raise ValueError(f"Unknown operation type: {type(op).__name__}.")
    return plan


def plan_search(op: SearchOp) -> tuple[SearchOp, Filter]:
    """A checked search (its prefix a tuple of labels) and its compiled filter."""
    labels = as_labels(op.namespace_prefix)
    if labels is not op.namespace_prefix:
        op = op._replace(namespace_prefix=labels)
    _check_window(op.limit, op.offset)
    if op.query is not None and not isinstance(op.query, str):
        raise TypeError(f"query must be a str or None, got {type(op.query).__name__}.")
    if op.query and not encodes_as_utf8(op.query):  # the tokenizer failed with a TypeError
        raise ValueError(
            "query is not valid Unicode (a lone surrogate), which no embedding model reads; "
            "decode the source with errors='replace' or drop the character."
        )
    return op, compile_filter(op.filter)


def _plan_put(op: PutOp, default_fields: list[TokenizedField]) -> PlannedPut:
    check_namespace(op.namespace)
    _check_key(op.key)
    if op.value is None:
        return PlannedPut(op, None, [])
    ttl = check_ttl(op.ttl, "PutOp.ttl")
    if type(op.value) is not dict and not isinstance(op.value, Mapping):
        raise TypeError(f"value must be a dict, got {type(op.value).__name__}.")
    if not all(isinstance(k, str) for k in op.value):
        raise TypeError("value keys must be strings.")
    if op.index is False:
        fields: list[TokenizedField] = []
    elif op.index is None:
        fields = default_fields
    elif isinstance(op.index, list) and all(isinstance(f, str) for f in op.index):
        fields = tokenize_fields(op.index)
    else:
        raise TypeError(f"index must be False, None or a list of field paths, got {op.index!r}.")
    _check_value_text(op.value, op.key)  # first: reading texts walks the value too
    texts: list[tuple[str, str]] = []
    for path, tokens in fields:
        found = _texts_at(op.value, tokens)
        if len(found) == 1:
            texts.append((path, found[0]))
        else:
            texts.extend((f"{path}.{j}", text) for j, text in enumerate(found))
    if len(texts) > 1:  # a path named twice ("text" twice, or "a" listing "a.0"): once
        firsts: dict[str, str] = {}
        for path, text in texts:
            firsts.setdefault(path, text)
        texts = list(firsts.items())
    # copied at planning time: later mutations of the caller's dict cannot reach the store
    return PlannedPut(op, copy_value(dict(op.value)), texts, ttl)


MAX_DEPTH = 200
"""Deepest nesting of lists and objects a value may have (a deeper one is refused)."""


def _check_value_text(value: Any, key: str, path: str = "value", depth: int = 0) -> None:
    """Refuse a text in the value (a key or a string) that is not valid Unicode, a NaN or
    infinite number, and a value nested deeper than :data:`MAX_DEPTH`.

    A lone surrogate ("\\ud800") has no UTF-8 form: Postgres, Chroma and Milvus failed on it
    with their own errors, the other engines stored it. Every engine refuses it now, first.
    Past a few hundred levels copying or encoding a value exhausts Python's stack: a bare
    ``RecursionError``, at a depth that depended on the caller.
    """
    if depth > MAX_DEPTH:
        raise ValueError(
            f"{path[:80]}... of key {key!r} is nested more than {MAX_DEPTH} levels deep; "
            "store it flatter (or as a JSON string)."
        )
    if isinstance(value, str):
        if not encodes_as_utf8(value):
            raise ValueError(
                f"{path} of key {key!r} is not valid Unicode (a lone surrogate), which "
                "Postgres, Chroma and Milvus cannot store, so no engine takes it; decode "
                "the source with errors='replace' or drop the character."
            )
    elif isinstance(value, Mapping):
        for name, inner in value.items():
            if isinstance(name, str) and not encodes_as_utf8(name):
                raise ValueError(
                    f"the field name {name!r} in {path} of key {key!r} is not valid Unicode "
                    "(a lone surrogate), which Postgres, Chroma and Milvus cannot store."
                )
            if type(inner) in _TEXT_FREE:
                continue
            if type(inner) is float:
                _check_finite(inner, key, f"{path}[{name!r}]")
                continue
            _check_value_text(inner, key, f"{path}[{name!r}]", depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, inner in enumerate(value):
            if type(inner) is float:
                _check_finite(inner, key, f"{path}[{i}]")
            elif type(inner) not in _TEXT_FREE:
                _check_value_text(inner, key, f"{path}[{i}]", depth + 1)
    elif isinstance(value, float):
        _check_finite(value, key, path)


def _check_finite(number: float, key: str, path: str) -> None:
    """Refuse NaN and the infinities: SQLite and Postgres refused them, memory and Qdrant
    stored them, so a store could not be migrated from one engine to the other."""
    if not math.isfinite(number):
        raise ValueError(
            f"{path} of key {key!r} is {number!r}: JSON has no NaN or Infinity (not JSON "
            "compliant), so SQLite, Postgres and the vectorstore catalogs cannot store it "
            "and no engine takes it; store None or a string such as 'inf' instead."
        )


_TEXT_FREE = frozenset({int, bool, type(None)})


def as_labels(namespace: Any) -> tuple[str, ...]:
    """A valid namespace (any sequence of labels) as a tuple; InvalidNamespaceError if not."""
    if type(namespace) is tuple:  # the usual case, without the abstract Sequence check
        check_labels(namespace)
        return namespace
    if isinstance(namespace, str):  # LangGraph's stores read "docs" as ("d", "o", "c", "s")
        raise InvalidNamespaceError(
            f"Namespace must be a tuple (or list) of str, got the string {namespace!r}: "
            f"write ({namespace!r},) for a single label."
        )
    if isinstance(namespace, bytes) or not isinstance(namespace, Sequence):
        raise InvalidNamespaceError(
            f"Namespace must be a tuple (or list) of str, got {namespace!r}."
        )
    labels = tuple(namespace)
    check_labels(labels)
    return labels


def check_labels(namespace: Any) -> None:
    if not isinstance(namespace, tuple):
        raise InvalidNamespaceError(f"Namespace must be a tuple of str, got {namespace!r}.")
    for label in namespace:
        if not isinstance(label, str):
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {namespace}: labels must be strings, "
                f"got {type(label).__name__}."
            )
        if not label:
            raise InvalidNamespaceError(f"Namespace labels cannot be empty strings: {namespace}.")
        if "." in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {namespace}: labels cannot contain '.'."
            )
        if "\x00" in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {namespace}: labels cannot contain NUL."
            )
        if not encodes_as_utf8(label):
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {namespace}: it is not valid Unicode "
                "(a lone surrogate), which no engine but memory can store."
            )


def fact_prefix(namespace: Any) -> tuple[str, ...]:
    """The fact API's namespace prefix: any sequence of labels but a string, checked."""
    labels = as_labels(namespace)
    check_namespace(labels)
    return labels


def check_namespace(namespace: Any) -> None:
    check_labels(namespace)
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    if namespace[0] == "langgraph":
        raise InvalidNamespaceError(f'Root label for namespace cannot be "langgraph": {namespace}.')


def _check_key(key: Any) -> None:
    if not isinstance(key, str):
        raise TypeError(f"key must be a str, got {type(key).__name__}.")
    if not encodes_as_utf8(key):
        raise ValueError(
            f"key {key!r} is not valid Unicode (a lone surrogate), which no engine but memory "
            "can store; pass a key that encodes as UTF-8."
        )


MAX_WINDOW = 2**53
"""Largest ``limit`` and ``offset`` (every engine's integers hold their sum)."""


def _check_window(limit: Any, offset: Any) -> None:
    if (
        type(limit) is int
        and type(offset) is int
        and 0 <= limit <= MAX_WINDOW
        and 0 <= offset <= MAX_WINDOW
    ):
        return  # the usual case, without four isinstance calls
    for name, value in (("limit", limit), ("offset", offset)):
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_WINDOW:
            raise ValueError(f"{name} must be an int from 0 to 2**53, got {value!r}.")
