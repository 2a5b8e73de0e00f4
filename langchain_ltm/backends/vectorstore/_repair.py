"""Bringing a vectorstore back in line with its catalog, for ``VectorStoreBackend.repair``.

:func:`repair_journal` settles the journal (garbage at once, ``adding`` documents once
older than the grace period, a document that turns out current is kept); :func:`restore`
puts back the documents the store lacks from the vectors the catalog keeps;
:func:`drop_strays` deletes this catalog's documents that are neither current nor being
added. :func:`check_grace` validates ``grace_seconds`` before any I/O.

Each function takes the :class:`~.backend.VectorStoreBackend` it repairs and runs its sync
calls (repair is a maintenance call, run under the backend's vectorstore lock); a store
that fails raises ``BackendError`` (:mod:`._failures`) and what was not done stays for the
next ``repair()``.
"""

from __future__ import annotations

import json
import logging
import math
import numbers
import uuid
from typing import TYPE_CHECKING, Any

from langchain_ltm._steps import run_sync
from langchain_ltm.backends.sqlite import _sql as sql
from langchain_ltm.backends.vectorstore._catalog import ADDING, StoredDocs
from langchain_ltm.backends.vectorstore._failures import engine_call
from langchain_ltm.backends.vectorstore._layout import (
    Documents,
    append_docs,
    document_id,
    item_key,
    text_at,
)
from langchain_ltm.backends.vectorstore._search import FIRST_K
from langchain_ltm.backends.vectorstore._write import add
from langchain_ltm.backends.vectorstore.family import Scored, present

if TYPE_CHECKING:
    from langchain_ltm.backends.vectorstore.backend import VectorStoreBackend

# the logger the engine has always used, whichever of its modules speaks
log = logging.getLogger("langchain_ltm.backends.vectorstore.backend")

DEFAULT_GRACE_SECONDS = 900.0  # an `adding` row older than this belongs to a dead writer


def check_grace(value: Any) -> float:
    """``grace_seconds`` checked: a finite number of seconds, zero or more."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ValueError(
            f"grace_seconds={value!r}: give a finite number of seconds, 0 or more (how long "
            "the documents of a write still unfinished, maybe in another process, are kept "
            f"before repair() deletes them; default {DEFAULT_GRACE_SECONDS:g})."
        )
    return float(value)


def drop_strays(backend: VectorStoreBackend) -> int:
    """Delete this catalog's documents that are neither current nor being added.

    A store that takes all of them in one search (widened until it has them) needs one
    round. A store whose search caps ``k`` (``max_k``) shows the ``max_k`` nearest to the
    probe: their strays are deleted and the search runs again, until a round shows none.
    A round that finds only strays already deleted (a delete the store silently ignored)
    stops the loop with a warning, as does a full page of current documents (strays
    behind more than ``max_k`` current documents are out of the search's reach).
    """
    dims = backend.catalog.dims
    if dims is None:
        return 0
    probe = [1.0] + [0.0] * (dims - 1)
    dropped: set[str] = set()
    while True:
        results, complete = _scoped_documents(backend, probe)
        strays = _strays(backend, results)
        if not strays:
            if not complete:
                log.warning(
                    "repair(): the store's search returns at most max_k=%s documents and the "
                    "%s nearest to its probe are all current: any stray documents beyond "
                    "them (texts no longer current) stay in %s",
                    backend.family.max_k,
                    len(results),
                    type(backend.vectorstore).__name__,
                )
            return len(dropped)
        if dropped.issuperset(strays):  # deleted before, still there: the store ignored it
            log.warning(
                "repair(): %s still holds %d documents it was asked to delete; they stay "
                "until a delete takes effect (check the store's delete=)",
                type(backend.vectorstore).__name__,
                len(strays),
            )
            return len(dropped - set(strays))
        backend._vs_drop(strays)
        dropped.update(strays)
        if complete:
            return len(dropped)


def _scoped_documents(backend: VectorStoreBackend, probe: list[float]) -> tuple[Scored, bool]:
    """This catalog's documents a search for ``probe`` returns, and whether that is all."""
    catalog, family = backend.catalog, backend.family
    where = backend.scope_filter(())
    cap = family.max_k
    k = max(FIRST_K, 2 * catalog.vector_count(()))
    k = k if cap is None else min(k, cap)
    while True:
        results, size = backend._vs_search(probe, k, where)
        done = (size is not None and k >= size) if family.post_filter else len(results) < k
        if done:
            return results, True
        if cap is not None and k >= cap:  # a capped store: the documents it shows
            return results, False
        k = k * 4 if cap is None else min(k * 4, cap)


def _strays(backend: VectorStoreBackend, results: Scored) -> list[str]:
    """The ids among ``results`` of this catalog's documents not current nor being added."""
    catalog = backend.catalog
    # read after the search: a writer journals `adding` before its add, and clears the
    # rows in the commit that makes them current, which the catalog read below sees
    adding = set(catalog.journal_ids(ADDING))
    store_id = catalog.store_id
    docs = [  # only this catalog's documents, whatever the store's filter let through
        (doc, id_, item_key(doc.metadata))
        for doc, _ in results
        if doc.metadata.get("ltm_store") == store_id
        # stores whose results carry no id (Redis, Milvus): the one its metadata gives
        and (id_ := document_id(doc)) is not None
        and id_ not in adding
    ]
    keys = list(dict.fromkeys(key for _, _, key in docs if key is not None))
    current = dict(zip(keys, catalog.get(keys), strict=True))
    strays: list[str] = []
    for doc, id_, key in docs:
        item = current.get(key) if key is not None else None
        if item is None or doc.metadata.get("ltm_at") != sql.to_us(item.updated_at):
            strays.append(id_)
    return list(dict.fromkeys(strays))


def repair_journal(backend: VectorStoreBackend, grace: float) -> int:
    """Settle the journal's rows older than ``grace``; return the documents deleted."""
    catalog, family, vectorstore = backend.catalog, backend.family, backend.vectorstore
    rows = catalog.journal_pending(grace)
    if not rows:
        return 0
    pending = list(dict.fromkeys(r.doc_id for r in rows))
    with backend._vs_lock:
        with engine_call(vectorstore, "read"):
            docs = family.documents(vectorstore, pending)
        keys = [item_key(d.metadata) for d in docs]
        known = [k for k in dict.fromkeys(keys) if k is not None]
        current = dict(zip(known, catalog.get(known), strict=True))
        doomed = []
        for doc, key in zip(docs, keys, strict=True):
            item = current.get(key) if key is not None else None
            id_ = document_id(doc)
            if id_ is None:
                continue
            if item is None or doc.metadata.get("ltm_at") != sql.to_us(item.updated_at):
                doomed.append(id_)
        if doomed:
            with engine_call(vectorstore, "delete"):
                family.remove(vectorstore, doomed)
        # the rows read only: a write may have journaled one of these ids since
        catalog.journal_clear_rows(rows)
    return len(doomed)


def documents_of(backend: VectorStoreBackend, page_: list[StoredDocs]) -> Documents:
    """The vectorstore documents of catalog rows, as the writes made them (ids included)."""
    docs: Documents = ([], [], [], [])
    for s in page_:
        texts = [text_at(s.value, p) for p in s.paths]
        append_docs(
            docs,
            backend.catalog.store_id,
            backend._value_fields,
            s.namespace,
            s.key,
            s.value,
            s.at_us,
            s.paths,
            texts,
            s.vectors,
        )
    return docs


def restore(backend: VectorStoreBackend, page_: list[StoredDocs]) -> int:
    """Re-add the documents of ``page_`` the store lacks; return how many stay."""
    catalog = backend.catalog
    docs = documents_of(backend, page_)
    with backend._vs_lock, engine_call(backend.vectorstore, "read"):
        have = set(present(backend.vectorstore, docs[0], backend.family))
    keep = [i for i, id_ in enumerate(docs[0]) if id_ not in have]
    if not keep:
        return 0
    ids = [docs[0][i] for i in keep]
    texts = [docs[1][i] for i in keep]
    vectors = [docs[2][i] for i in keep]
    metas = [docs[3][i] for i in keep]
    # journaled like a write: a crash, or the item replaced meanwhile, leaves no orphan
    writer = uuid.uuid4().hex
    catalog.journal_add(ids, ADDING, writer)
    run_sync(add(backend, (ids, texts, vectors, metas)))
    keys = list(dict.fromkeys((tuple(json.loads(m["ltm_ns"])), m["ltm_key"]) for m in metas))
    now = dict(zip(keys, catalog.get(keys), strict=True))
    stale = []
    for id_, meta in zip(ids, metas, strict=True):
        item = now.get((tuple(json.loads(meta["ltm_ns"])), meta["ltm_key"]))
        if item is None or sql.to_us(item.updated_at) != meta["ltm_at"]:
            stale.append(id_)
    if stale:
        backend._vs_drop(stale)
    catalog.journal_clear(ids, writer)
    return len(ids) - len(stale)
