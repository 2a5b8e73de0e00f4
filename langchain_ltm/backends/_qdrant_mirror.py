"""Embedded mode's read path: the collection mirrored in per-namespace numpy blocks.

``qdrant-client``'s local mode answers a filtered search by scoring every point and then
checking the filter point by point in Python (hundreds of ms at 10k points, seconds at
100k); its payload indexes do nothing. A local collection has exactly one writer, though:
the folder is locked to one client, and ``:memory:`` lives in this process. So the backend
loads the collection once, applies every write it makes to Qdrant here as well, and answers
reads from these blocks: a per-user search is one matrix product over that user's rows,
scored exactly. Qdrant stays the system of record: this is rebuilt from it on open.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from langchain_ltm._filters import matches
from langchain_ltm.backends.base import (
    Hit,
    ItemKey,
    ListRequest,
    SearchRequest,
    StoredItem,
    Vectors,
    namespace_matches,
)

_Scores = np.ndarray[Any, np.dtype[np.float32]]


class _Block:
    """The items of one namespace and their stacked vectors."""

    __slots__ = ("_keys", "_matrix", "_starts", "items", "vectors")

    def __init__(self) -> None:
        self.items: dict[str, StoredItem] = {}
        self.vectors: dict[str, Vectors] = {}
        self._matrix: Vectors | None = None
        self._keys: list[str] = []
        self._starts: np.ndarray[Any, np.dtype[np.intp]] | None = None

    def invalidate(self) -> None:
        self._matrix = None

    def scores(self, queries: Vectors) -> tuple[list[str], _Scores]:
        """Keys of items with vectors and their best score per query, shape ``(items, q)``."""
        if self._matrix is None:
            self._keys = list(self.vectors)
            mats = [self.vectors[k] for k in self._keys]
            counts = np.fromiter((len(m) for m in mats), dtype=np.intp, count=len(mats))
            single = bool((counts == 1).all())
            self._starts = None if single else np.concatenate(([0], np.cumsum(counts)[:-1]))
            self._matrix = (
                np.ascontiguousarray(np.vstack(mats))
                if mats
                else np.zeros((0, queries.shape[1]), dtype=np.float32)
            )
        raw: _Scores = self._matrix @ queries.T
        if self._starts is None or not self._keys:
            return self._keys, raw
        return self._keys, np.maximum.reduceat(raw, self._starts, axis=0)


class Mirror:
    """Items and vectors of one local collection, by namespace (callers hold the lock)."""

    def __init__(self) -> None:
        self._blocks: dict[tuple[str, ...], _Block] = {}
        # every prefix of every namespace -> the namespaces under it (dict as ordered set)
        self._under: dict[tuple[str, ...], dict[tuple[str, ...], None]] = {}

    # reads

    def get(self, keys: Sequence[ItemKey]) -> list[StoredItem | None]:
        out: list[StoredItem | None] = []
        for namespace, key in keys:
            block = self._blocks.get(namespace)
            out.append(block.items.get(key) if block else None)
        return out

    def count(self, prefix: tuple[str, ...]) -> int:
        return sum(len(self._blocks[ns].items) for ns in self._under.get(prefix, ()))

    def namespaces(self, request: ListRequest) -> list[tuple[str, ...]]:
        return [ns for ns in self._blocks if namespace_matches(ns, request.conditions)]

    def search(self, request: SearchRequest) -> list[list[Hit]]:
        blocks = [self._blocks[ns] for ns in self._under.get(request.prefix, ())]
        if request.vectors is None:
            items = [it for b in blocks for it in _passing(b.items.values(), request)]
            return [[Hit(it, None) for it in page(sort_unranked(items), request)]]
        return self._ranked(blocks, request, request.vectors)

    def _ranked(
        self, blocks: list[_Block], request: SearchRequest, queries: Vectors
    ) -> list[list[Hit]]:
        scored: list[StoredItem] = []
        parts: list[_Scores] = []
        unscored: list[StoredItem] = []
        for block in blocks:
            keys, block_scores = block.scores(queries)
            if request.filter:
                keep = [
                    i for i, k in enumerate(keys) if matches(block.items[k].value, request.filter)
                ]
                if len(keep) < len(keys):
                    keys, block_scores = [keys[i] for i in keep], block_scores[keep]
            scored.extend(block.items[k] for k in keys)
            parts.append(block_scores)
            if len(block.vectors) < len(block.items):
                rest = (it for k, it in block.items.items() if k not in block.vectors)
                unscored.extend(_passing(rest, request))
        scores = np.concatenate(parts) if parts else np.zeros((0, len(queries)), np.float32)
        unscored = sort_unranked(unscored)
        wanted = None if request.limit is None else request.offset + request.limit
        out: list[list[Hit]] = []
        for column in range(queries.shape[0]):
            order = _top(scores[:, column], wanted)
            hits = [Hit(scored[i], float(scores[i, column])) for i in order]
            if wanted is None or len(hits) < wanted:
                hits.extend(Hit(it, None) for it in unscored)
            out.append(page(hits, request))
        return out

    # writes

    def put(self, item: StoredItem, vectors: Vectors | None) -> None:
        namespace = item.namespace
        block = self._blocks.get(namespace)
        if block is None:
            block = self._blocks[namespace] = _Block()
            for depth in range(len(namespace) + 1):
                self._under.setdefault(namespace[:depth], {})[namespace] = None
        block.items[item.key] = item
        if vectors is not None and len(vectors):
            block.vectors[item.key] = np.ascontiguousarray(vectors, dtype=np.float32)
        elif block.vectors.pop(item.key, None) is None:
            return
        block.invalidate()

    def delete(self, namespace: tuple[str, ...], key: str) -> bool:
        block = self._blocks.get(namespace)
        if block is None or block.items.pop(key, None) is None:
            return False
        if block.vectors.pop(key, None) is not None:
            block.invalidate()
        if not block.items:
            del self._blocks[namespace]
            for depth in range(len(namespace) + 1):
                under = self._under[namespace[:depth]]
                del under[namespace]
                if not under:
                    del self._under[namespace[:depth]]
        return True


def _passing(items: Iterable[StoredItem], request: SearchRequest) -> Iterable[StoredItem]:
    if not request.filter:
        return items
    return (it for it in items if matches(it.value, request.filter))


def sort_unranked(items: list[StoredItem]) -> list[StoredItem]:
    """The contract's order without a query: ``updated_at`` descending, namespace, key."""
    items.sort(key=lambda it: (it.namespace, it.key))
    items.sort(key=lambda it: it.updated_at, reverse=True)
    return items


def page(items: list[Any], request: SearchRequest) -> list[Any]:
    if request.limit is None:
        return items[request.offset :]
    return items[request.offset : request.offset + request.limit]


def _top(scores: _Scores, wanted: int | None) -> np.ndarray[Any, np.dtype[np.intp]]:
    """Indices of the best ``wanted`` scores, best first, ties in insertion order."""
    if wanted == 0:
        return np.zeros(0, dtype=np.intp)
    if wanted is not None and wanted < len(scores):
        part = np.argpartition(-scores, wanted - 1)[:wanted]
        part.sort()
        return part[np.argsort(-scores[part], kind="stable")]
    return np.argsort(-scores, kind="stable")
