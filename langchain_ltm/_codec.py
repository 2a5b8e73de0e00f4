"""Pure conversions: value copies, deterministic ids, Item <-> stored item."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from langgraph.store.base import Item, SearchItem

from langchain_ltm._ids import fact_key, vector_id
from langchain_ltm.backends.base import Hit, StoredItem

__all__ = [
    "copy_value",
    "fact_key",
    "to_item",
    "to_search_item",
    "vector_id",
]  # the ids live in _ids

_ATOMIC = frozenset({str, int, float, bool, type(None)})


def copy_value(value: Any) -> Any:
    """A deep copy of JSON-like data, ~10x faster than ``copy.deepcopy`` for it."""
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) in _ATOMIC else copy_value(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _ATOMIC else copy_value(v) for v in value]
    if kind in _ATOMIC:
        return value
    if isinstance(value, tuple):
        return tuple(copy_value(v) for v in value)
    if isinstance(value, Mapping):
        return {k: copy_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_value(v) for v in value]
    return copy.deepcopy(value)


def to_item(stored: StoredItem) -> Item:
    return Item(
        value=copy_value(stored.value),
        key=stored.key,
        namespace=stored.namespace,
        created_at=stored.created_at,
        updated_at=stored.updated_at,
    )


def to_search_item(hit: Hit) -> SearchItem:
    item = hit.item
    return SearchItem(
        namespace=item.namespace,
        key=item.key,
        value=copy_value(item.value),
        created_at=item.created_at,
        updated_at=item.updated_at,
        score=hit.score,
    )
