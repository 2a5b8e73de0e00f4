"""What the Qdrant backend asks of Qdrant, written once as sans-I/O generators.

Each plan yields :class:`QCall` (a client method and its keyword arguments) and receives the
result; ``drive_sync`` runs it on a ``QdrantClient``, ``drive_async`` on an
``AsyncQdrantClient`` (the two share method names and signatures).

Scope and filters always travel as one ``models.Filter``; the exact contract predicate then
re-checks each candidate (see ``_layout.translate``). Paging follows the contract:
scored items first, by their best vector (max-pooling: an item's first point in score order
is its best), then unscored items; limit/offset over that whole sequence. Because one item
may have several points and the Python re-check may drop candidates, a ranked query asks for
a window of points and widens it (x4) until the page is full or Qdrant runs out of points.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

import numpy as np
from qdrant_client import models

from langchain_ltm._filters import matches
from langchain_ltm.backends._index import page, sort_unranked
from langchain_ltm.backends.base import (
    Hit,
    ItemKey,
    ListRequest,
    Record,
    SearchRequest,
    StoredItem,
    Vectors,
    by_score_then_key,
    expiry,
    is_alive,
    namespace_matches,
    normalize_batch,
    tied_past_window,
)
from langchain_ltm.backends.qdrant._layout import (
    HEADS,
    ITEM_FIELDS,
    UNINDEXED_HEADS,
    alive_condition,
    build_points,
    expired_condition,
    from_us,
    head_id,
    is_ours,
    item_points,
    ns_json,
    point_ids,
    scope_conditions,
    search_filter,
    stored_item,
    to_us,
)
from langchain_ltm.errors import KeyTakenError

T = TypeVar("T")

SCROLL_PAGE = 1024
UPSERT_CHUNK = 2048  # most points per upsert request
# most estimated JSON bytes per upsert request: a server refuses bodies over 32 MiB by default
# (max_request_size_mb), which 1,000 points of 1536 floats passed
UPSERT_BYTES = 24 * 2**20
_FLOAT_BYTES = 22  # a float as JSON ("-0.012345678901234567,"): 21.5 measured at 1536 and 3072
FACET_START = 10_000


class QCall(NamedTuple):
    method: str
    kwargs: dict[str, Any]


Plan = Generator[QCall, Any, T]


@dataclass(frozen=True, slots=True)
class Layout:
    """What every plan needs to know about the collection."""

    collection: str
    vector_name: str
    tenant_depth: int
    server: bool

    def call(self, method: str, **kwargs: Any) -> QCall:
        return QCall(method, {"collection_name": self.collection, **kwargs})


@dataclass(frozen=True, slots=True)
class Written:
    """What a write did, for the embedded mirror to replay."""

    deleted: int
    items: list[tuple[StoredItem, Vectors | None]]
    removed: list[ItemKey]


def drive_sync(plan: Plan[T], client: Any, on_error: Callable[[str, Exception], Exception]) -> T:
    value: Any = None
    while True:
        try:
            step = plan.send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        try:
            value = getattr(client, step.method)(**step.kwargs)
        except Exception as exc:
            raise on_error(step.method, exc) from exc


async def drive_async(
    plan: Plan[T], client: Any, on_error: Callable[[str, Exception], Exception]
) -> T:
    value: Any = None
    while True:
        try:
            step = plan.send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        try:
            pending: Awaitable[Any] = getattr(client, step.method)(**step.kwargs)
            value = await pending
        except Exception as exc:
            raise on_error(step.method, exc) from exc


# reads


def plan_get(layout: Layout, keys: Sequence[ItemKey]) -> Plan[list[StoredItem | None]]:
    ids = [head_id(ns, key) for ns, key in keys]
    if not ids:
        return []
    records = yield layout.call(
        "retrieve", ids=list(dict.fromkeys(ids)), with_payload=ITEM_FIELDS, with_vectors=False
    )
    found = {str(r.id): stored_item(r.payload) for r in records if is_ours(r.payload)}
    return [found.get(i) for i in ids]


def plan_indexed_paths(
    layout: Layout, keys: Sequence[ItemKey]
) -> Plan[list[tuple[str, ...] | None]]:
    """Each item's embedded paths, from its head point (``()``: none; ``None``: no item)."""
    ids = [head_id(ns, key) for ns, key in keys]
    if not ids:
        return []
    records = yield layout.call(
        "retrieve",
        ids=list(dict.fromkeys(ids)),
        with_payload=["namespace", "value", "paths"],
        with_vectors=False,
    )
    found = {str(r.id): tuple(r.payload.get("paths") or ()) for r in records if is_ours(r.payload)}
    return [found.get(i) for i in ids]


def plan_count(layout: Layout, prefix: tuple[str, ...]) -> Plan[int]:
    flt = models.Filter(must=[*scope_conditions(prefix, layout.tenant_depth), HEADS])
    result = yield layout.call("count", count_filter=flt, exact=True)
    return int(result.count)


def plan_namespaces(layout: Layout, request: ListRequest) -> Plan[list[tuple[str, ...]]]:
    """Distinct namespaces from a facet over ``ns`` (a point exists, so the namespace does)."""
    must = scope_conditions((), layout.tenant_depth)
    if request.alive_at is not None:
        must.append(alive_condition(request.alive_at))
    for kind, path in request.conditions:
        fixed = path[: path.index("*")] if "*" in path else path
        if kind == "prefix" and fixed:
            must.append(
                models.FieldCondition(
                    key="ns_prefixes", match=models.MatchValue(value=ns_json(fixed))
                )
            )
    limit = FACET_START
    while True:
        response = yield layout.call(
            "facet", key="ns", facet_filter=models.Filter(must=must), limit=limit, exact=True
        )
        if len(response.hits) < limit:
            break
        limit *= 4
    found = [tuple(_labels(hit.value)) for hit in response.hits]
    return [ns for ns in found if namespace_matches(ns, request.conditions)]


def _labels(raw: Any) -> list[str]:
    return [str(label) for label in json.loads(str(raw))]


def _scroll_items(layout: Layout, flt: models.Filter) -> Plan[list[StoredItem]]:
    records = yield from _scroll(layout, flt, ITEM_FIELDS)
    return [stored_item(r.payload) for r in records if is_ours(r.payload)]


def _scroll(layout: Layout, flt: models.Filter, fields: Sequence[str]) -> Plan[list[Any]]:
    """Every point ``flt`` matches, page by page, with the payload ``fields``."""
    found: list[Any] = []
    offset = None
    while True:
        records, offset = yield layout.call(
            "scroll",
            scroll_filter=flt,
            limit=SCROLL_PAGE,
            offset=offset,
            with_payload=list(fields),
            with_vectors=False,
        )
        found += records
        if offset is None:
            return found


def _alive(request: SearchRequest) -> list[models.Condition]:
    return [] if request.alive_at is None else [alive_condition(request.alive_at)]


def _passes(item: StoredItem, request: SearchRequest) -> bool:
    return is_alive(item, request.alive_at) and matches(item.value, request.filter)


def plan_search(layout: Layout, request: SearchRequest) -> Plan[list[list[Hit]]]:
    if request.vectors is None:
        flt = search_filter(
            request.prefix, layout.tenant_depth, request.filter, [HEADS, *_alive(request)]
        )
        items = yield from _scroll_items(layout, flt)
        items = [it for it in items if _passes(it, request)]
        return [[Hit(it, None) for it in page(sort_unranked(items), request)]]
    return (yield from _ranked(layout, request, request.vectors))


def _ranked(layout: Layout, request: SearchRequest, queries: Vectors) -> Plan[list[list[Hit]]]:
    wanted = None if request.limit is None else request.offset + request.limit
    flt = search_filter(request.prefix, layout.tenant_depth, request.filter, _alive(request))
    # a user's rows are few: score them all (the tenant index finds them), no HNSW guess
    params = (
        models.SearchParams(exact=True)
        if layout.server and len(request.prefix) >= layout.tenant_depth
        else None
    )
    window = [256 if wanted is None else max(2 * wanted, 16)] * len(queries)
    done: dict[int, tuple[list[Hit], bool]] = {}
    pending = list(range(len(queries)))
    while pending:
        requests = [
            models.QueryRequest(
                query=queries[row].tolist(),
                using=layout.vector_name or None,
                filter=flt,
                limit=window[row],
                params=params,
                with_payload=ITEM_FIELDS,
            )
            for row in pending
        ]
        responses = yield layout.call("query_batch_points", requests=requests)
        still = []
        for row, response in zip(pending, responses, strict=True):
            hits = by_score_then_key(_best_per_item(response.points, request))
            exhausted = len(response.points) < window[row]
            enough = wanted is not None and len(hits) >= wanted
            if enough and not exhausted and response.points:  # the page's last place tied
                lowest = float(np.float32(response.points[-1].score))  # with the window's end
                enough = not tied_past_window(hits, wanted or 0, lowest, window[row])
            if exhausted or enough:
                done[row] = (hits, exhausted)
            else:
                window[row] *= 4
                still.append(row)
        pending = still
    unscored: list[StoredItem] = []
    if any(exhausted and (wanted is None or len(h) < wanted) for h, exhausted in done.values()):
        flt = search_filter(
            request.prefix,
            layout.tenant_depth,
            request.filter,
            [UNINDEXED_HEADS, *_alive(request)],
        )
        items = yield from _scroll_items(layout, flt)
        unscored = sort_unranked([it for it in items if _passes(it, request)])
    out = []
    for row in range(len(queries)):
        hits = done[row][0]
        if wanted is None or len(hits) < wanted:
            hits.extend(Hit(it, None) for it in unscored)
        out.append(page(hits, request))
    return out


def _best_per_item(points: Sequence[models.ScoredPoint], request: SearchRequest) -> list[Hit]:
    seen: set[tuple[str, str]] = set()
    hits = []
    for point in points:
        payload = point.payload
        if not is_ours(payload):
            continue
        assert payload is not None
        ident = (str(payload["namespace"]), str(payload["key"]))
        if ident in seen:
            continue
        seen.add(ident)
        item = stored_item(payload)
        if _passes(item, request):
            # float32 like the vectors: equal texts score equal whatever the summation order
            hits.append(Hit(item, float(np.float32(point.score))))
    return hits


# writes


def plan_write(
    layout: Layout, upserts: Sequence[Record], deletes: Sequence[ItemKey]
) -> Plan[Written]:
    """Upsert every point of the new versions, then delete the points they no longer have.

    A write interrupted between its upsert and its delete (a crash, a disk error) leaves
    points no later head names. So deleted items' points are found by namespace and key
    (in embedded mode, where a filter is checked point by point, by one scroll on their
    keys: :func:`_points_of`), and so are rewritten items' on a server (payload indexes);
    in embedded mode a rewrite deletes the points its stored head names and the mirror
    never reads points a head does not name.
    """
    upserts, deletes = normalize_batch(upserts, deletes)
    keys = list(dict.fromkeys([(r.namespace, r.key) for r in upserts] + list(deletes)))
    old: dict[str, dict[str, Any]] = {}
    if keys:
        records = yield layout.call(
            "retrieve",
            ids=[head_id(ns, key) for ns, key in keys],
            with_payload=["namespace", "key", "created_at_us", "expires_at_us", "paths"],
            with_vectors=False,
        )
        old = {str(r.id): r.payload for r in records if r.payload and "created_at_us" in r.payload}
    taken = [  # read under the write's lock (its key stripes, or the mirror's): nothing sent
        (r.namespace, r.key)
        for r in upserts
        if r.create_only and _head_alive(old.get(head_id(r.namespace, r.key)), r.now)
    ]
    if taken:
        raise KeyTakenError(taken)
    points: list[models.PointStruct] = []
    stale: list[models.ExtendedPointId] = []
    rewritten: list[ItemKey] = []  # (server) items whose earlier points are found by key
    kept: list[models.ExtendedPointId] = []  # their new points
    items: list[tuple[StoredItem, Vectors | None]] = []
    for record in upserts:
        ns, key = record.namespace, record.key
        prev = old.get(head_id(ns, key))
        # an expired item not yet swept is gone: putting it again creates it anew
        alive = _head_alive(prev, record.now)
        created: datetime = record.created_at or (
            from_us(prev["created_at_us"]) if prev and alive else record.now
        )
        new = build_points(record, created, layout.tenant_depth, layout.vector_name)
        points.extend(new)
        if prev and layout.server:
            rewritten.append((ns, key))
            kept.extend(p.id for p in new)
        elif prev:
            new_ids = {str(p.id) for p in new}
            stale.extend(
                i for i in point_ids(ns, key, prev.get("paths") or [""]) if i not in new_ids
            )
        vectors = record.vectors if record.vectors is not None and len(record.vectors) else None
        expires_at = record.expires
        item = StoredItem(
            ns, key, record.value, created, record.now, expires_at, record.ttl_minutes
        )
        items.append((item, vectors))
    removed = [(ns, key) for ns, key in deletes if head_id(ns, key) in old]
    if not layout.server and deletes:  # one filter per 256 keys there was quadratic
        stale.extend((yield from _points_of(layout, deletes)))
    for chunk in upsert_chunks(points):
        yield layout.call("upsert", points=chunk, wait=True)
    if stale:
        yield layout.call("delete", points_selector=models.PointIdsList(points=stale), wait=True)
    # a deleted key is never rewritten (normalize_batch)
    swept = [*rewritten, *deletes] if layout.server else []
    for start in range(0, len(swept), _SWEEP_CHUNK):
        selector = item_points(swept[start : start + _SWEEP_CHUNK])
        if kept:  # the points just written stay
            selector = models.Filter(must=[selector], must_not=[models.HasIdCondition(has_id=kept)])
        yield layout.call(
            "delete", points_selector=models.FilterSelector(filter=selector), wait=True
        )
    return Written(len(removed), items, removed)


_SWEEP_CHUNK = 256  # items per delete-by-key filter


def _head_alive(head: dict[str, Any] | None, now: datetime) -> bool:
    """Whether a stored head's item is alive at ``now`` (an expired one not yet swept is gone)."""
    expires = head.get("expires_at_us") if head else None
    return head is not None and (expires is None or expires > to_us(now))


def upsert_chunks(points: Sequence[models.PointStruct]) -> list[list[models.PointStruct]]:
    """``points`` in upsert requests of at most ``UPSERT_CHUNK`` points and ``UPSERT_BYTES``.

    The bytes are estimated (each vector float as JSON, the payload's JSON): counting points
    alone sent 38 MiB for 1,200 points of 1536 floats, over a server's default body limit. A
    point bigger than the limit goes alone.
    """
    chunks: list[list[models.PointStruct]] = []
    chunk: list[models.PointStruct] = []
    size = 0
    for point in points:
        cost = _json_bytes(point)
        if chunk and (len(chunk) >= UPSERT_CHUNK or size + cost > UPSERT_BYTES):
            chunks.append(chunk)
            chunk, size = [], 0
        chunk.append(point)
        size += cost
    if chunk:
        chunks.append(chunk)
    return chunks


def _json_bytes(point: models.PointStruct) -> int:
    vector = point.vector
    vectors = vector.values() if isinstance(vector, dict) else [vector]
    floats = sum(len(v) for v in vectors if isinstance(v, list))
    return 64 + floats * _FLOAT_BYTES + len(json.dumps(point.payload))


def _points_of(layout: Layout, keys: Sequence[ItemKey]) -> Plan[list[models.ExtendedPointId]]:
    """Every point of the items ``keys``, those no head names too (a half-failed write).

    One scroll on their keys, their namespaces checked here. Embedded mode checks a
    filter point by point, so a ``should`` of one condition pair per item
    (:func:`item_points`) cost points x items: deleting 2,000 items took 44 s.
    """
    wanted = {(ns_json(ns), key) for ns, key in keys}
    flt = models.Filter(
        must=[
            models.FieldCondition(
                key="key", match=models.MatchAny(any=sorted({key for _, key in wanted}))
            )
        ]
    )
    records = yield from _scroll(layout, flt, ["ns", "key"])
    return [r.id for r in records if r.payload and _pair(r.payload) in wanted]


def _pair(payload: dict[str, Any]) -> tuple[Any, Any]:
    return payload.get("ns"), payload.get("key")


def plan_touch(
    layout: Layout, keys: Sequence[ItemKey], now: datetime, *, exclusive: bool = False
) -> Plan[None]:
    """Refresh the TTL of the alive items among ``keys`` on every point.

    The new expiry is set only on points that still hold what was read (same
    ``updated_at_us``, ``expires_at_us`` and ``ttl_minutes``): a write or delete landing
    between the read and the refresh (another thread, process or store) is left as it is,
    so a ``put(..., ttl=None)`` is not given its old expiry back and a deleted item is
    nothing to refresh (the SQL engines refresh with one conditional ``UPDATE``).
    ``exclusive``: the caller holds a lock every write to the collection takes (the
    embedded mirror's), so nothing can land in between and the points are named by id:
    local mode checks a filter on every point of the collection (a get took 14 ms, not
    0.1 ms, over 5,000 items).
    """
    ids = list(dict.fromkeys(head_id(ns, key) for ns, key in keys))
    if not ids:
        return
    records = yield layout.call(
        "retrieve", ids=ids, with_payload=[*ITEM_FIELDS, "paths"], with_vectors=False
    )
    operations: list[models.UpdateOperation] = []
    for r in records:
        if not is_ours(r.payload):
            continue
        item = stored_item(r.payload)
        if item.ttl_minutes is None or not is_alive(item, now):
            continue
        expires_at = expiry(now, item.ttl_minutes)
        assert expires_at is not None
        points: list[models.ExtendedPointId] = list(
            point_ids(item.namespace, item.key, r.payload.get("paths") or [""])
        )
        if exclusive:
            target = models.SetPayload(payload={"expires_at_us": to_us(expires_at)}, points=points)
            operations.append(models.SetPayloadOperation(set_payload=target))
            continue
        unchanged = models.Filter(
            must=[
                models.HasIdCondition(has_id=points),
                models.FieldCondition(
                    key="updated_at_us", match=models.MatchValue(value=r.payload["updated_at_us"])
                ),
                models.FieldCondition(
                    key="expires_at_us", match=models.MatchValue(value=r.payload["expires_at_us"])
                ),
                models.FieldCondition(
                    key="ttl_minutes",
                    range=models.Range(gte=item.ttl_minutes, lte=item.ttl_minutes),
                ),
            ]
        )
        # a filter, not ``points``: a server applies both (their union), and an id list
        # answers 404 for a point deleted meanwhile
        target = models.SetPayload(payload={"expires_at_us": to_us(expires_at)}, filter=unchanged)
        operations.append(models.SetPayloadOperation(set_payload=target))
    if operations:
        yield layout.call("batch_update_points", update_operations=operations, wait=True)


def plan_sweep(layout: Layout, now: datetime) -> Plan[list[ItemKey]]:
    """Delete every point of every item expired at ``now``; the deleted items' keys."""
    scope = [*scope_conditions((), layout.tenant_depth), expired_condition(now)]
    expired = models.Filter(must=scope)
    heads = models.Filter(must=[*scope, HEADS])
    items = yield from _scroll_items(layout, heads)
    if items:
        yield layout.call(
            "delete", points_selector=models.FilterSelector(filter=expired), wait=True
        )
    return [(it.namespace, it.key) for it in items]


def plan_load(layout: Layout) -> Plan[list[tuple[StoredItem, Vectors | None]]]:
    """Every item with its vectors in path order (builds the embedded mirror)."""
    heads: dict[str, dict[str, Any]] = {}
    vectors: dict[str, Any] = {}
    offset = None
    while True:
        # no filter: local mode would evaluate it point by point on every page
        records, offset = yield layout.call(
            "scroll",
            limit=SCROLL_PAGE * 16,
            offset=offset,
            with_payload=True,
            with_vectors=[layout.vector_name] if layout.vector_name else True,
        )
        for r in records:
            if not is_ours(r.payload):
                continue
            if r.payload.get("head"):
                heads[str(r.id)] = r.payload
            vector = r.vector.get(layout.vector_name) if isinstance(r.vector, dict) else r.vector
            if vector is not None:
                vectors[str(r.id)] = vector
        if offset is None:
            break
    out: list[tuple[StoredItem, Vectors | None]] = []
    for payload in heads.values():
        item = stored_item(payload)
        ids = point_ids(item.namespace, item.key, payload.get("paths") or [""])
        rows = [vectors[i] for i in ids if i in vectors] if payload.get("indexed") else []
        matrix = np.asarray(rows, dtype=np.float32) if rows else None
        out.append((item, matrix))
    return out
