"""The generic engine's search, written once as a sans-I/O generator for both shells.

A ranked search sends the scope (and the pushable value filter) to the vectorstore (or,
for a family with ``search_ids``, the ids of the scope's current documents, read from the
catalog: :func:`ranked_among_ids`), checks each returned document against the catalog
(known item, current version, alive, passes the whole filter: :func:`passing`), and grows
``k`` fourfold until the page is full or the store runs out; then the catalog's exact
scoped search has the last word (:func:`checked`). The first ranked
answer of a backend that can tell (an item not identical to the query) is checked to
score as the exact cosine (:func:`check_scores`).
A page (``offset``) is the tail of the engine's own top ``offset + limit``, ties ordered
by score then namespace and key: an approximate index can miss an item in one window
and find it in the next, so pages can overlap or skip (the README says so).

Each function takes the :class:`~.backend.VectorStoreBackend` whose steps it yields
(``_cat`` for the catalog, ``_vs_search`` / ``_avs_search`` and ``_vs_search_ids`` /
``_avs_search_ids`` for the store).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

import numpy as np

from langchain_ltm._filters import matches
from langchain_ltm._steps import Logic, Step
from langchain_ltm.backends._index import page, sort_unranked
from langchain_ltm.backends.base import (
    Hit,
    ItemKey,
    SearchRequest,
    StoredItem,
    by_score_then_key,
    dimension_error,
    is_alive,
    tied_past_window,
)
from langchain_ltm.backends.sqlite import _sql as sql
from langchain_ltm.backends.vectorstore._layout import in_scope, item_key
from langchain_ltm.backends.vectorstore.family import Scored
from langchain_ltm.errors import UnsupportedVectorStoreError

if TYPE_CHECKING:
    from langchain_ltm.backends.vectorstore.backend import VectorStoreBackend

# the logger the engine has always used, whichever of its modules speaks
log = logging.getLogger("langchain_ltm.backends.vectorstore.backend")

FIRST_K = 16  # the first search asks for max(FIRST_K, 2 * wanted) documents


def search_logic(backend: VectorStoreBackend, request: SearchRequest) -> Logic[list[list[Hit]]]:
    """One search, sans I/O: the sync and async shells perform its steps."""
    if request.vectors is None:
        return (yield backend._cat("search", request))  # type: ignore[no-any-return]
    dims = backend.catalog.dims
    if dims is not None and request.vectors.shape[1] != dims:
        raise dimension_error(dims, request.vectors.shape[1], "a new catalog")
    wanted = None if request.limit is None else request.offset + request.limit
    unscored: list[StoredItem] | None = None
    out: list[list[Hit]] = []
    for row in request.vectors:
        hits = yield from ranked(backend, [float(x) for x in row], request, wanted)
        if wanted is None or len(hits) < wanted:
            if unscored is None:
                rest = yield backend._cat("unvectored", request)
                unscored = sort_unranked([it for it in rest if matches(it.value, request.filter)])
            hits.extend(Hit(it, None) for it in unscored)
        out.append(page(hits, request))
    return out


def ranked(
    backend: VectorStoreBackend, vector: list[float], request: SearchRequest, wanted: int | None
) -> Logic[list[Hit]]:
    """The ranked hits of one query vector, widening ``k`` until ``wanted`` pass the checks."""
    if wanted == 0:
        return []
    family = backend.family
    if family.search_ids is not None and backend._ids_usable:
        hits = yield from ranked_among_ids(backend, vector, request, wanted)
        if hits is not None:
            return hits
    where = backend.search_filter(request)
    if wanted:
        k = max(FIRST_K, 2 * wanted)
    else:
        k = max(FIRST_K, (yield backend._cat("vector_count", request.prefix)))
    cap = family.max_k
    if cap is not None:
        k = min(k, cap)
    items: dict[ItemKey, StoredItem | None] = {}
    while True:
        results, size = yield Step(backend._vs_search, backend._avs_search, (vector, k, where))
        hits = yield from passing(backend, results, items, request)
        if hits and not backend._scores_checked:
            yield from check_scores(backend, hits, vector)
        exhausted = (size is not None and k >= size) if family.post_filter else len(results) < k
        last = exhausted or (cap is not None and k >= cap)  # the store can give no more
        if wanted is not None and len(hits) >= wanted:
            if last or not _tied_past(backend, hits, wanted, results, k):
                return hits[:wanted]
        elif last:
            return (yield from checked(backend, hits, vector, request, wanted))
        k = k * 4 if cap is None else min(k * 4, cap)


MAX_ID_SCOPE = 5_000
"""Most items in scope searched among their ids (a user's facts, a team's); a broader scope
(all users) uses the store's filtered search: listing 20k facts' ids took 224 ms a query
against 2.7 ms for FAISS's own search and filter (flat index, 2k users)."""


def ranked_among_ids(
    backend: VectorStoreBackend, vector: list[float], request: SearchRequest, wanted: int | None
) -> Logic[list[Hit] | None]:
    """:func:`ranked` for a family with ``search_ids``: the engine ranks the scope's documents.

    The catalog gives the current documents of the items in scope that are alive and pass
    the whole filter; the engine searches among those ids only, for as many documents as
    can hold ``wanted`` items (each item's extra documents can take places), ``k``
    growing fourfold up to all of them when some fail the checks. When the
    engine returns every id asked for, the answer is complete; when it returns fewer (an
    HNSW graph can miss some under a restrictive selection, or documents were lost from
    the store), the catalog's exact search has the last word. ``None``: the family cannot
    restrict this store's search, or the scope holds more than :data:`MAX_ID_SCOPE` items
    (the caller searches with the filter instead).
    """
    listed = yield backend._cat("scope_docs", request, MAX_ID_SCOPE)
    if listed is None:  # a broad scope: the store's filtered search costs less
        return None
    ids, n_items = listed
    if not ids:
        return []
    # every id is a current document in scope: ``wanted`` items need at most ``wanted``
    # documents plus the ones beyond the first of each item
    k = len(ids) if wanted is None else min(len(ids), wanted + len(ids) - n_items)
    items: dict[ItemKey, StoredItem | None] = {}
    while True:
        results = yield Step(backend._vs_search_ids, backend._avs_search_ids, (vector, k, ids))
        if results is None:
            backend._ids_usable = False  # learnt once: this store's index cannot
            return None
        hits = yield from passing(backend, results, items, request)
        if hits and not backend._scores_checked:
            yield from check_scores(backend, hits, vector)
        if (
            wanted is not None
            and len(hits) >= wanted
            and (k >= len(ids) or not _tied_past(backend, hits, wanted, results, k))
        ):
            return hits[:wanted]
        if k >= len(ids):
            if len(results) >= len(ids) and len(hits) >= n_items:
                return hits  # every document of every item in scope came back
            return (yield from checked(backend, hits, vector, request, wanted))
        k = min(k * 4, len(ids))


def _tied_past(
    backend: VectorStoreBackend, hits: list[Hit], wanted: int, results: Scored, k: int
) -> bool:
    """Whether the page's last place ties with the lowest score of the engine's window."""
    lowest = min(backend._to_cosine(float(score)) for _, score in results)
    return tied_past_window(hits, wanted, lowest, k)


def passing(
    backend: VectorStoreBackend,
    results: Scored,
    items: dict[ItemKey, StoredItem | None],
    request: SearchRequest,
) -> Logic[list[Hit]]:
    """The engine's answer checked against the catalog, best first, one hit per item.

    A document counts when its item is known (read into ``items``, which persists across
    widenings), lies in the requested scope, ``ltm_at`` is its current version, and the
    item is alive and passes the whole filter.
    """
    keys = [item_key(doc.metadata) for doc, _ in results]
    unknown = list(dict.fromkeys(k_ for k_ in keys if k_ is not None and k_ not in items))
    if unknown:
        found = yield backend._cat("get", unknown)
        items.update(zip(unknown, found, strict=True))
    scored = sorted(
        ((backend._to_cosine(float(score)), i) for i, (_, score) in enumerate(results)),
        key=lambda pair: -pair[0],
    )
    hits: list[Hit] = []
    taken: set[ItemKey] = set()
    store_id = backend.catalog.store_id
    for score, i in scored:
        key = keys[i]
        item = items.get(key) if key is not None else None
        if item is None or key in taken or not in_scope(results[i][0], key, store_id, request):
            continue  # unknown, seen, or outside the scope (a dialect that let it through)
        if results[i][0].metadata.get("ltm_at") != sql.to_us(item.updated_at):
            continue  # a stale or orphaned document: not the current version
        taken.add(key)  # type: ignore[arg-type]
        if is_alive(item, request.alive_at) and matches(item.value, request.filter):
            hits.append(Hit(item, score))
    return by_score_then_key(hits)  # ties in one order, whatever the window


CHECK_HITS = 5  # the hits of one answer compared with the catalog's exact cosine
SAME_UNDER_EVERY_DISTANCE = 1 - 1e-3  # distance 0 is cosine 1 whatever the convention


def check_scores(backend: VectorStoreBackend, hits: list[Hit], vector: list[float]) -> Logic[None]:
    """Until one answer tells: the engine's scores, converted, are the exact cosines.

    The distance convention comes from the family (``distance=``) or the wrapper's
    settings, which may not be the index's own metric (Pinecone and Atlas wrappers are
    told it; an index created as euclidean scores otherwise). The catalog keeps every
    vector, so its exact scores of the same items say whether the conversion is right.
    The first :data:`CHECK_HITS` hits in the top hit's namespace are compared; a hit
    identical to the query (distance 0: cosine 1 under every convention) proves nothing,
    so an answer made only of such hits leaves the check for the next one.

    Raises:
        UnsupportedVectorStoreError: A hit's converted score and its exact cosine differ
            by more than 1e-3.
    """
    top = hits[0]
    probe = SearchRequest(
        top.item.namespace, vectors=np.asarray([vector], dtype=np.float32), limit=CHECK_HITS
    )
    (exact,) = yield backend._cat("search", probe)
    want = {h.item.key: h.score for h in exact if h.score is not None}
    telling = False
    for hit in hits[:CHECK_HITS]:
        cosine = want.get(hit.item.key) if hit.item.namespace == top.item.namespace else None
        if cosine is None or hit.score is None:
            continue  # not comparable on this answer (the item changed meanwhile)
        if abs(float(cosine) - float(hit.score)) > 1e-3:
            raise UnsupportedVectorStoreError(
                f"{type(backend.vectorstore).__name__} scores do not turn into cosine "
                f"similarities with distance={backend.family.distance!r} ({hit.score:.4f} "
                f"for an item whose cosine is {cosine:.4f}): the index's metric is not the "
                "one configured. Create the store with the metric its index uses, or "
                "register it with the matching distance= "
                '("cosine", "l2", "euclidean", "ip", ...).'
            )
        telling = telling or float(cosine) < SAME_UNDER_EVERY_DISTANCE
    if telling:
        backend._scores_checked = True


def checked(
    backend: VectorStoreBackend,
    hits: list[Hit],
    vector: list[float],
    request: SearchRequest,
    wanted: int | None,
) -> Logic[list[Hit]]:
    """The engine ran out before ``wanted``: the catalog's exact search has the last word.

    An engine may return fewer documents than it holds in scope: an HNSW graph searched
    with a restrictive filter can (Chroma's, after a write, when many documents share
    one vector). The catalog holds every vector, so its exact scoped search (the SQLite
    engine's) says whether more items match; if so, its answer is returned. This costs
    one scoped catalog search per under-filled search (a scope with fewer matches than
    asked for), never one per full one.
    """
    exact_request = dataclasses.replace(
        request, vectors=np.asarray([vector], dtype=np.float32), limit=wanted, offset=0
    )
    (exact,) = yield backend._cat("search", exact_request)
    ranked_ = [h for h in exact if h.score is not None]
    if len(ranked_) <= len(hits):
        return hits
    if not backend._warned_short:
        backend._warned_short = True
        log.warning(
            "langchain-ltm: %s returned fewer documents in scope than it holds (%d of at "
            "least %d); answered from the catalog's exact search. Seen with HNSW indexes "
            "searched under a restrictive filter.",
            type(backend.vectorstore).__name__,
            len(hits),
            len(ranked_),
        )
    return ranked_
