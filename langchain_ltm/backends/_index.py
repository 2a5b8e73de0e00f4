"""The in-process item index shared by the memory engine and Qdrant's embedded mirror.

Items are kept in per-namespace blocks; each block stacks its vectors in one float32 matrix,
so a scoped search is one matrix product over the scope's rows, scored exactly. Callers
hold their own lock around every call.

TTL: each block also knows which of its items expire (``expiring``), so a search with
``alive_at`` over blocks where nothing has expired takes the same path as one without, and
:meth:`NamespaceIndex.expired` lists what a sweep deletes without scanning every item.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
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
    expiry,
    is_alive,
    namespace_matches,
)

__all__ = ["NamespaceIndex", "page", "sort_unranked"]


class _Block:
    """The items of one namespace and their stacked vectors.

    The stacked matrix is kept up to date in place for the common writes (a new or changed
    single-vector item: an append or a row overwrite, amortized O(d)), from a new block's
    first vector on; anything else (a deletion, an item with several vectors) drops it and
    the next search restacks.
    """

    __slots__ = (
        "_buffer",
        "_count",
        "_live",
        "_row_of",
        "_rows",
        "_single",
        "_starts",
        "doc_ids",
        "expiring",
        "items",
        "vectors",
    )

    def __init__(self) -> None:
        self.items: dict[str, StoredItem] = {}
        self.vectors: dict[str, Vectors] = {}
        self.doc_ids: dict[str, list[str]] = {}
        self.expiring: dict[str, datetime] = {}  # key -> expires_at, items with a TTL only
        self._buffer: Vectors | None = None  # rows [0, _count) are live
        self._count = 0
        self._live: Vectors | None = None  # the view _buffer[:_count], None when stale
        self._rows: list[str] = []
        self._row_of: dict[str, int] = {}
        self._starts: np.ndarray[Any, np.dtype[np.intp]] | None = None
        self._single = True

    def set_vectors(self, key: str, vectors: Vectors) -> None:
        fresh = not self.vectors
        self.vectors[key] = vectors
        if self._buffer is None:
            if not fresh or len(vectors) != 1:
                return  # stacked by the next search
            # a new block: keep it stacked from its first vector on, so a user's first
            # search costs what the next ones do (stacking 100 vectors took ~200 us)
            self._buffer = np.empty((8, vectors.shape[1]), np.float32)
            self._count, self._rows, self._row_of, self._single = 0, [], {}, True
        if not self._single or len(vectors) != 1:
            self._buffer = self._live = None
            return
        row = self._row_of.get(key)
        if row is None:
            self._live = None  # one more row
            if self._count == len(self._buffer):
                grown = np.empty((max(8, 2 * self._count), self._buffer.shape[1]), np.float32)
                grown[: self._count] = self._buffer[: self._count]
                self._buffer = grown
            row = self._count
            self._count += 1
            self._rows.append(key)
            self._row_of[key] = row
        self._buffer[row] = vectors[0]

    def set_item(self, item: StoredItem) -> None:
        self.items[item.key] = item
        if item.expires_at is None:
            self.expiring.pop(item.key, None)
        else:
            self.expiring[item.key] = item.expires_at

    def has_expired(self, at: datetime | None) -> bool:
        """Whether some item of the block has expired at ``at`` (``None``: no check)."""
        return at is not None and any(moment <= at for moment in self.expiring.values())

    def has_alive(self, at: datetime | None) -> bool:
        """Whether some item of the block is alive at ``at``."""
        if at is None or len(self.items) > len(self.expiring):
            return bool(self.items)
        return any(moment > at for moment in self.expiring.values())

    def drop_vectors(self, key: str) -> None:
        if self.vectors.pop(key, None) is not None:
            self._buffer = self._live = None

    def scores(self, queries: Vectors) -> tuple[list[str], np.ndarray[Any, Any]]:
        """Keys of indexed items and their best score per query, shape ``(items, q)``."""
        live = self._live
        if live is None:
            if self._buffer is None:
                self._stack(queries.shape[1])
            assert self._buffer is not None
            live = self._live = self._buffer[: self._count]
        raw = cosines(live, queries)
        if self._single or not self._rows:
            return self._rows, raw
        assert self._starts is not None
        return self._rows, np.maximum.reduceat(raw, self._starts, axis=0)

    def _stack(self, dims: int) -> None:
        self._rows = list(self.vectors)
        self._row_of = {key: i for i, key in enumerate(self._rows)}
        if not self._rows:
            self._buffer, self._count, self._single = np.zeros((0, dims), np.float32), 0, True
            return
        mats = [self.vectors[k] for k in self._rows]
        counts = np.fromiter((len(m) for m in mats), dtype=np.intp, count=len(mats))
        self._single = bool((counts == 1).all())
        self._starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        self._buffer = np.ascontiguousarray(np.vstack(mats), dtype=np.float32)
        self._count = len(self._buffer)


class NamespaceIndex:
    """Items and vectors by namespace, with exact scoped search (not thread-safe)."""

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

    def list_namespaces(self, request: ListRequest) -> list[tuple[str, ...]]:
        found = [
            ns
            for ns, block in self._blocks.items()
            if namespace_matches(ns, request.conditions) and block.has_alive(request.alive_at)
        ]
        if request.max_depth is not None:
            found = list({ns[: request.max_depth] for ns in found})
        found.sort()
        return found[request.offset : request.offset + request.limit]

    def search(self, request: SearchRequest) -> list[list[Hit]]:
        under = self._under.get(request.prefix, ())
        if request.vectors is not None and len(under) == 1 and not request.filter:
            # one namespace, no filter: a user's facts, the hot path (checked first, cheaply)
            block = self._blocks[next(iter(under))]
            alive_at = request.alive_at
            if len(block.vectors) == len(block.items) and not (
                block.expiring and block.has_expired(alive_at)
            ):
                return self._ranked_block(block, request)
        blocks = [self._blocks[ns] for ns in under]
        if request.vectors is None:
            return [self._unranked(blocks, request)]
        return self._ranked(blocks, request)

    def _unranked(self, blocks: list[_Block], request: SearchRequest) -> list[Hit]:
        items = [it for b in blocks for it in _filtered(b.items.values(), request, b)]
        return [Hit(it, None) for it in page(sort_unranked(items), request)]

    def _ranked(self, blocks: list[_Block], request: SearchRequest) -> list[list[Hit]]:
        assert request.vectors is not None
        queries = request.vectors
        alive_at = request.alive_at
        if alive_at is not None and not any(b.expiring and b.has_expired(alive_at) for b in blocks):
            alive_at = None  # nothing in scope has expired: no per-item check needed
        # keys and their blocks' item dicts, as flat lists built by C-level copies: items are
        # looked up (and filtered) in score order, only as far as the page needs
        keys: list[str] = []
        owners: list[dict[str, StoredItem]] = []
        score_parts: list[np.ndarray[Any, Any]] = []
        unscored: list[StoredItem] = []
        for block in blocks:
            block_keys, block_scores = block.scores(queries)
            keys += block_keys
            owners += [block.items] * len(block_keys)
            score_parts.append(block_scores)
            if len(block.vectors) < len(block.items):
                rest = (it for k, it in block.items.items() if k not in block.vectors)
                unscored.extend(_filtered(rest, request, block))
        unscored = sort_unranked(unscored)
        scores = (
            np.concatenate(score_parts)
            if len(score_parts) > 1
            else (score_parts[0] if score_parts else np.zeros((0, len(queries))))
        )
        wanted = None if request.limit is None else request.offset + request.limit
        passed: dict[int, bool] = {}

        def passes(i: int) -> bool:
            ok = passed.get(i)
            if ok is None:
                item = owners[i][keys[i]]
                ok = passed[i] = is_alive(item, alive_at) and matches(item.value, request.filter)
            return ok

        check = request.filter or alive_at is not None
        out: list[list[Hit]] = []
        for column in range(queries.shape[0]):
            order = _top_passing(scores[:, column], wanted, passes if check else None)
            hits = [Hit(owners[i][keys[i]], float(scores[i, column])) for i in order]
            if wanted is None or len(hits) < wanted:
                hits.extend(Hit(it, None) for it in unscored)
            out.append(page(hits, request))
        return out

    @staticmethod
    def _ranked_block(block: _Block, request: SearchRequest) -> list[list[Hit]]:
        assert request.vectors is not None
        keys, scores = block.scores(request.vectors)
        items = block.items
        wanted = None if request.limit is None else request.offset + request.limit
        out = []
        for column_scores in scores.T:  # one row of scores per query
            order = _top(column_scores, wanted)
            if request.offset:
                order = order[request.offset :]
            # two C-level conversions instead of a numpy scalar per hit
            picked = zip(order.tolist(), column_scores[order].tolist(), strict=True)
            out.append([Hit(items[keys[i]], score) for i, score in picked])
        return out

    # writes

    def put(self, item: StoredItem, vectors: Vectors | None) -> StoredItem | None:
        """Store ``item`` (with its vectors, or none); returns the item it replaced."""
        namespace = item.namespace
        block = self._blocks.get(namespace)
        if block is None:
            block = self._blocks[namespace] = _Block()
            for depth in range(len(namespace) + 1):
                self._under.setdefault(namespace[:depth], {})[namespace] = None
        old = block.items.get(item.key)
        block.set_item(item)
        if vectors is not None and len(vectors):
            block.set_vectors(item.key, vectors)
        else:
            block.drop_vectors(item.key)
        return old

    def delete(self, namespace: tuple[str, ...], key: str) -> bool:
        """Remove one item; a namespace goes with its last item."""
        block = self._blocks.get(namespace)
        if block is None or block.items.pop(key, None) is None:
            return False
        block.expiring.pop(key, None)
        block.drop_vectors(key)
        if not block.items:
            del self._blocks[namespace]
            for depth in range(len(namespace) + 1):
                under = self._under[namespace[:depth]]
                del under[namespace]
                if not under:
                    del self._under[namespace[:depth]]
        return True

    def touch(self, keys: Sequence[ItemKey], now: datetime) -> list[StoredItem]:
        """Refresh the TTL of the alive items among ``keys``; returns the refreshed items."""
        out = []
        for namespace, key in dict.fromkeys(keys):
            block = self._blocks.get(namespace)
            item = block.items.get(key) if block else None
            if block is None or item is None or item.ttl_minutes is None:
                continue
            if not is_alive(item, now):
                continue
            item = dataclasses.replace(item, expires_at=expiry(now, item.ttl_minutes))
            block.set_item(item)
            out.append(item)
        return out

    def expired(self, now: datetime) -> list[ItemKey]:
        """Keys of every item with ``expires_at <= now`` (what a sweep deletes)."""
        return [
            (namespace, key)
            for namespace, block in self._blocks.items()
            for key, moment in block.expiring.items()
            if moment <= now
        ]


def _filtered(
    items: Iterable[StoredItem], request: SearchRequest, block: _Block
) -> Iterable[StoredItem]:
    at = request.alive_at if block.has_expired(request.alive_at) else None
    if not request.filter and at is None:
        return items
    return (it for it in items if is_alive(it, at) and matches(it.value, request.filter))


def sort_unranked(items: list[StoredItem]) -> list[StoredItem]:
    """The contract's order without a query: ``updated_at`` descending, namespace, key."""
    items.sort(key=lambda it: (it.namespace, it.key))
    items.sort(key=lambda it: it.updated_at, reverse=True)
    return items


def page(items: list[Any], request: SearchRequest) -> list[Any]:
    """The ``offset``/``limit`` window of ``items``."""
    if request.limit is None:
        return items[request.offset :]
    return items[request.offset : request.offset + request.limit]


def cosines(matrix: np.ndarray[Any, Any], queries: Vectors) -> np.ndarray[Any, Any]:
    """Cosines of ``matrix``'s rows with each query, shape ``(rows, q)``: one dot per row.

    A row's score depends on the row and the query alone, bit for bit, for C-contiguous
    rows (each row's floats side by side, as every caller's matrix is, at any address):
    not on the other queries of the batch, the rows around it or how many there are. A
    Fortran-order matrix gives other bits (no caller passes one). A BLAS matrix product
    (``matrix @ q``) sums a row in another order depending on those: one vector scored
    0.09945035 in a block of several rows and 0.09945032 in a block of one (and 0.6537204
    in a search of two phrasings, 0.6537203 alone), so the order of exact ties (one text
    held by two facts, or as a fact's earlier version and another's text) followed float
    noise, not the fact id. ``np.vecdot`` makes one BLAS dot per row (numpy 2; as fast as
    the product at 100 rows, 1.1-1.4x at 1,000); ``np.einsum`` (2x) before numpy 2.
    """
    rows = np.asarray(queries, dtype=np.float32)
    if len(rows) == 1:  # the usual search: no output to fill column by column
        return _row_dots(matrix, np.array(rows[0], dtype=np.float32))[:, None]
    out = np.empty((len(matrix), len(rows)), dtype=np.float32)
    for column in range(len(rows)):
        out[:, column] = _row_dots(matrix, np.array(rows[column], dtype=np.float32))
    return out


def _einsum_dots(matrix: np.ndarray[Any, Any], query: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Each row's dot with ``query``, summed the same way whatever the row count."""
    dots: np.ndarray[Any, Any] = np.einsum("ij,j->i", matrix, query)
    return dots


_row_dots: Callable[[np.ndarray[Any, Any], np.ndarray[Any, Any]], np.ndarray[Any, Any]] = getattr(
    np, "vecdot", _einsum_dots
)


_SORT_ALL_BELOW = 2048


def _top(scores: np.ndarray[Any, Any], wanted: int | None) -> np.ndarray[Any, Any]:
    """Indices of the best ``wanted`` scores, best first, ties in insertion order."""
    if len(scores) <= _SORT_ALL_BELOW:  # a stable sort of a few thousand beats partitioning
        return (-scores).argsort(kind="stable")[:wanted]
    if wanted is not None and 0 < wanted < len(scores):
        kth = scores[np.argpartition(-scores, wanted - 1)[wanted - 1]]
        # every row tied with the k-th best, in row order: argpartition alone picks
        # arbitrary ones among ties at the boundary
        part = np.flatnonzero(scores >= kth)
        return part[np.argsort(-scores[part], kind="stable")][:wanted]
    if wanted == 0:
        return np.zeros(0, dtype=np.intp)
    return np.argsort(-scores, kind="stable")


def _top_passing(
    scores: np.ndarray[Any, Any], wanted: int | None, passes: Callable[[int], bool] | None
) -> Sequence[int]:
    """The best ``wanted`` indices that pass, best first.

    Ranks first, then filters in score order, widening the window until enough pass: the
    same answer as filtering every row first, with ``passes`` called on few rows.
    """
    if passes is None:
        return _top(scores, wanted).tolist()  # type: ignore[no-any-return]
    if wanted is None:
        return [i for i in _top(scores, None).tolist() if passes(i)]
    window = max(wanted, 1)
    while True:
        kept = [i for i in _top(scores, window).tolist() if passes(i)]
        if len(kept) >= wanted or window >= len(scores):
            return kept[:wanted]
        window *= 4
