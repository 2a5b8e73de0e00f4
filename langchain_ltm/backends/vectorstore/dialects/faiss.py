"""FAISS (``langchain-community``), in memory or saved to and loaded from disk.

Search: restricted inside FAISS to the scope's documents (:func:`search_ids`, an
``IDSelectorBatch`` of the int ids the catalog's document ids have in the index), for flat,
HNSW and IVF indexes; a flat index and a small scope instead gather the scope's rows
(:func:`_gathered`) and rank them with FAISS's exact ``knn``, which costs the scope's size
where a selector search visits the whole index. Other index types fall back to the
wrapper's own search with a plain ``{"k": v}`` filter dict, which langchain applies *after*
the ANN over ``fetch_k`` candidates, so the family is also ``post_filter`` (the backend
widens ``fetch_k``; the full repair's sweep of our documents uses that path too).
Distance: squared L2 for ``IndexFlatL2``, inner product for ``METRIC_INNER_PRODUCT``.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

import numpy as np
from langchain_core.documents import Document

from langchain_ltm.backends.vectorstore.family import Scored, StoreFamily

__all__ = ["FAMILY"]

# vectorstore -> (the index_to_docstore_id dict it was built from, docstore id -> int id)
_REVERSE: weakref.WeakKeyDictionary[Any, tuple[dict[int, str], dict[str, int]]] = (
    weakref.WeakKeyDictionary()
)


def where(eq: Mapping[str, str]) -> Any:
    """The equality dict langchain's FAISS wrapper checks per candidate."""
    return dict(eq)


def distance(vectorstore: Any) -> str:
    """``ip`` or ``l2``, from the index's metric."""
    import faiss

    return "ip" if vectorstore.index.metric_type == faiss.METRIC_INNER_PRODUCT else "l2"


def search(vectorstore: Any, vector: list[float], k: int, filter_: Any) -> Scored:
    """FAISS filters the ``fetch_k`` nearest of the whole index: the backend widens ``k``."""
    return list(
        vectorstore.similarity_search_with_score_by_vector(vector, k=k, filter=filter_, fetch_k=k)
    )


def size(vectorstore: Any) -> int | None:
    """Vectors in the index."""
    return int(vectorstore.index.ntotal)


def int_ids(vectorstore: Any, doc_ids: list[str]) -> list[int]:
    """The FAISS int ids of the documents among ``doc_ids`` the index holds.

    ``index_to_docstore_id`` maps int -> docstore id; its reverse is cached per
    vectorstore. langchain's ``add`` extends that dict in place (the cache takes the new
    entries), its ``delete`` renumbers into a new dict (the cache is rebuilt). Every id
    found in the cache is checked to map back to the same document, and the cache is
    rebuilt on any mismatch, so a stale cache never selects another document. Ids the
    index lacks are left out (the backend's catalog check answers for them).
    """
    forward: dict[int, str] = vectorstore.index_to_docstore_id
    reverse, rebuilt = _reverse(vectorstore, forward)
    out: list[int] = []
    for doc_id in doc_ids:
        i = reverse.get(doc_id)
        if i is not None and forward.get(i) == doc_id:
            out.append(i)
            continue
        if i is not None and not rebuilt:  # the dict was changed behind the cache's back
            reverse, rebuilt = _rebuild(vectorstore, forward), True
            i = reverse.get(doc_id)
            if i is not None and forward.get(i) == doc_id:
                out.append(i)
    return out


def _reverse(vectorstore: Any, forward: dict[int, str]) -> tuple[dict[str, int], bool]:
    """The cached reverse of ``forward``, brought up to date; and whether it was rebuilt."""
    cached = _REVERSE.get(vectorstore)
    if cached is None or cached[0] is not forward:
        return _rebuild(vectorstore, forward), True
    reverse = cached[1]
    if len(reverse) != len(forward):  # add() appended ints len(before) .. len(after) - 1
        for i in range(len(reverse), len(forward)):
            doc_id = forward.get(i)
            if doc_id is not None:
                reverse[doc_id] = i
        if len(reverse) != len(forward):  # not an append: start again
            return _rebuild(vectorstore, forward), True
    return reverse, False


def _rebuild(vectorstore: Any, forward: dict[int, str]) -> dict[str, int]:
    reverse = {doc_id: i for i, doc_id in forward.items()}
    _REVERSE[vectorstore] = (forward, reverse)
    return reverse


def _params(index: Any, selector: Any) -> Any:
    """Search parameters restricting ``index``'s search to ``selector``; ``None``: cannot."""
    import faiss as _faiss

    faiss: Any = _faiss  # its bundled stubs lack the keyword constructors of SearchParameters*
    if isinstance(index, faiss.IndexHNSW):
        return faiss.SearchParametersHNSW(sel=selector, efSearch=index.hnsw.efSearch)
    if isinstance(index, faiss.IndexIVF):
        return faiss.SearchParametersIVF(
            sel=selector, nprobe=index.nprobe, max_codes=index.max_codes
        )
    # IndexFlatL2, IndexFlatIP, IndexFlat and scalar quantizers; not every IndexFlatCodes:
    # PQ, LSH and additive quantizers refuse a selector
    if isinstance(index, (faiss.IndexFlat, faiss.IndexScalarQuantizer)):
        return faiss.SearchParameters(sel=selector)
    return None


# a flat index gathers the scope's rows while rows x dims <= this x the index's size: a
# selector search checks every id of the index (~3.5 ns each), a gather copies the rows
# (measured even around 100-190 x; at 20k vectors of 384 dims, 100 rows: 13 vs 68 us)
_GATHER_PER_VECTOR = 64


def _gathered(index: Any, query: np.ndarray, ints: np.ndarray, k: int) -> tuple[Any, Any] | None:
    """Exact top ``k`` among the rows ``ints`` of a flat index, as its own search scores.

    ``None`` when the selector search is the cheaper (a large scope) or the index is not
    a plain ``IndexFlat`` with an L2 or inner-product metric. The rows are read from the
    index's own float32 storage (no copy of the index) and ranked by ``faiss.knn``, the
    kernels ``IndexFlat`` itself uses.
    """
    import faiss

    metric = index.metric_type
    if not isinstance(index, faiss.IndexFlat) or metric not in (
        faiss.METRIC_L2,
        faiss.METRIC_INNER_PRODUCT,
    ):
        return None
    total, dims = int(index.ntotal), int(index.d)
    # the rows the index holds, in index order and once each: ties then fall as the
    # selector's search breaks them (lower index first), and a mapping longer than the
    # index (rows removed behind it) reads no row past the end
    ints = np.unique(ints[ints < total])
    if not len(ints) or len(ints) * dims > _GATHER_PER_VECTOR * total:
        return None
    stored = faiss.rev_swig_ptr(index.get_xb(), total * dims).reshape(total, dims)
    scores, at = faiss.knn(query, stored[ints], min(k, len(ints)), metric=metric)
    found = np.where(at >= 0, ints[np.maximum(at, 0)], -1)
    return scores, found


def search_ids(vectorstore: Any, vector: list[float], k: int, doc_ids: list[str]) -> Scored | None:
    """The ``k`` nearest among ``doc_ids``, searched inside FAISS (an ``IDSelectorBatch``).

    Scores exactly as the wrapper's own search does: the query as float32, L2-normalized
    when the store normalizes (``normalize_L2=True``), the index's raw distances (a
    gathered flat scope, :func:`_gathered`, scores with the same kernels). ``None`` for an
    index type whose search does not take a selector.
    """
    import faiss

    index = vectorstore.index
    if type(index) is faiss.Index:  # a base-class wrapper: see what it really is
        index = faiss.downcast_index(index)
    ints = np.asarray(int_ids(vectorstore, doc_ids), dtype=np.int64)
    query = np.asarray([vector], dtype=np.float32)
    if vectorstore._normalize_L2:
        faiss.normalize_L2(query)
    gathered = _gathered(index, query, ints, min(k, len(ints))) if len(ints) else None
    if gathered is not None:
        scores, found = gathered
    else:
        params = _params(index, faiss.IDSelectorBatch(ints))
        if params is None:
            return None
        if not len(ints):
            return []
        try:
            scores, found = index.search(query, min(k, len(ints)), params=params)
        except RuntimeError:  # an index type whose search refuses a selector after all
            return None
    forward = vectorstore.index_to_docstore_id
    out: Scored = []
    for score, i in zip(scores[0].tolist(), found[0].tolist(), strict=True):
        if i < 0:  # fewer than k found
            continue
        doc_id = forward.get(i)
        doc = None if doc_id is None else vectorstore.docstore.search(doc_id)
        if isinstance(doc, Document):
            out.append((doc, score))
    return out


def probe(vectorstore: Any) -> str | None:
    """The ``ltm_store`` of the first of our documents in the docstore, or None.

    The docstore is a dict in memory (FAISS holds its whole index there): read until one
    document carries the key.
    """
    for doc in getattr(vectorstore.docstore, "_dict", {}).values():
        found = getattr(doc, "metadata", {}).get("ltm_store")
        if isinstance(found, str) and found:
            return found
    return None


FAMILY = StoreFamily(
    "faiss",
    filter_builder=where,
    distance=distance,
    post_filter=True,
    search=search,
    size=size,
    search_ids=search_ids,
    probe=probe,
)
