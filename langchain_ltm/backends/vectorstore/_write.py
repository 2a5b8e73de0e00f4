"""The generic engine's write, written once as a sans-I/O generator for both shells.

A write is three steps: journal the new documents ``adding`` (rows of this write's own,
under a random token) and add them to the vectorstore (:func:`add`, in calls as large as
the store takes); one catalog commit (the moment the new version shows) that journals the
replaced documents as ``garbage``; then delete the garbage (:func:`collect`). A commit that
did not land drops the new documents again, but only those nobody needs (:func:`settle`
asks the catalog, since an exception can arrive after the ``COMMIT``, and since document
ids are deterministic: a re-put of the current version writes the current documents' own
ids); whatever a crash leaves, ``repair()`` finds in the journal. :func:`acommit` is the
async commit that knows its outcome even when cancelled.

Each function takes the :class:`~.backend.VectorStoreBackend` whose steps it yields.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from langchain_ltm._steps import Logic, Step
from langchain_ltm.backends.base import ItemKey, Record
from langchain_ltm.backends.vectorstore._catalog import ADDING, Catalog
from langchain_ltm.backends.vectorstore._layout import Documents, documents

if TYPE_CHECKING:
    from langchain_ltm.backends.vectorstore.backend import VectorStoreBackend

# how often a failed write drops its documents and adds back those another write came to
# need meanwhile (each round needs a new race); the rows of a last add-back go to repair()
SETTLE_ROUNDS = 3

# the logger the engine has always used, whichever of its modules speaks
log = logging.getLogger("langchain_ltm.backends.vectorstore.backend")


class Landed(asyncio.CancelledError):
    """An async write was cancelled after its catalog commit landed: the write stands."""


def write_logic(
    backend: VectorStoreBackend, kept: Sequence[Record], gone: Sequence[ItemKey]
) -> Logic[int]:
    """One write, sans I/O: check, journal, add, commit (the moment it shows), collect.

    The family's ``check`` refuses documents its store cannot hold before any I/O, its
    ``check_store`` (which may read the store) before anything is journaled.
    """
    ids, texts, vectors, metadatas = documents(
        kept, backend.catalog.store_id, backend._value_fields
    )
    family = backend.family
    if ids and family.check is not None:
        family.check(texts, metadatas)  # refused before anything is written
    if ids and family.check_store is not None:
        check = functools.partial(family.check_store, backend.vectorstore)
        yield Step(check, functools.partial(backend._off_loop, check), (texts, metadatas))
    writer = uuid.uuid4().hex if ids else ""
    if ids:
        yield backend._cat("journal_add", ids, ADDING, writer)
        yield from add(backend, (ids, texts, vectors, metadatas))
    try:
        deleted, garbage = yield Step(
            backend.catalog.commit, backend._acommit, (kept, gone, ids, writer)
        )
    except Landed:
        raise  # cancelled once the commit had landed: its documents are current
    except BaseException:
        keys = list(dict.fromkeys((r.namespace, r.key) for r in kept))
        yield from settle(backend, (ids, texts, vectors, metadatas), keys, writer)
        raise
    yield from collect(backend, garbage)
    return deleted  # type: ignore[no-any-return]


def add(backend: VectorStoreBackend, docs: Documents) -> Logic[None]:
    """Add ``docs`` to the vectorstore, in calls of at most the store's ``max_batch``.

    Every caller has journaled all of ``docs`` ``adding`` before the first call, so a
    crash or an error between two calls leaves documents that no search shows (no
    current version has their ``ltm_at``) and ``repair()`` finds in the journal: what a
    failed single add leaves, in more calls.
    """
    size = backend._max_batch or len(docs[0]) or 1
    for start in range(0, len(docs[0]), size):
        part = tuple(column[start : start + size] for column in docs)
        yield Step(backend._vs_add, backend._avs_add, part)


def settle(
    backend: VectorStoreBackend, docs: Documents, keys: Sequence[ItemKey], writer: str
) -> Logic[None]:
    """After the commit step failed: drop the write's new documents unless still needed.

    Failure does not mean absence: a ``KeyboardInterrupt``, ``SystemExit`` or a signal
    handler's exception can arrive after SQLite's ``COMMIT`` and before the step returns,
    and the write is then current with these documents. The commit clears the write's own
    ``adding`` rows in its own transaction, so rows still there mean it did not land. Even
    then a document id may be needed: ids are deterministic (store, namespace, key, path,
    ``updated_at``), so a re-put of the current version (an export imported again, two
    puts within one microsecond) has the current documents' ids, and another write may
    have journaled the same ids. The catalog names the ones to drop (:meth:`~._catalog.
    Catalog.settle_claim`: neither current nor journaled by another write); after the drop
    it names those that became needed meanwhile, which are added back with this write's
    rows still journaled, and looked at again (up to :data:`SETTLE_ROUNDS` times; rows left
    after the last add-back stay for ``repair()``). When the catalog cannot say (the check
    fails), the documents stay: current ones are whole, and ``repair()`` drops the others
    (still journaled ``adding``) once the grace period has passed.
    """
    if not docs[0]:
        return
    try:
        for _ in range(SETTLE_ROUNDS):
            ids = docs[0]
            doomed = yield backend._cat("settle_claim", ids, keys, writer)
            if not doomed:
                return
            yield Step(backend._vs_drop, backend._avs_drop, (doomed,))
            back = set((yield backend._cat("settle_release", doomed, keys, writer)))
            if not back:
                return
            # needed again while being dropped: the same ids, this write's documents, whose
            # rows the catalog kept (a write failing meanwhile leaves them to this one)
            at = [n for n, i in enumerate(ids) if i in back]
            docs = (
                [ids[n] for n in at],
                [docs[1][n] for n in at],
                [docs[2][n] for n in at],
                [docs[3][n] for n in at],
            )
            yield from add(backend, docs)
    except Exception:  # the original error is the one to report; repair() retries
        pass


def collect(backend: VectorStoreBackend, garbage: Sequence[str]) -> Logic[None]:
    """Delete replaced documents; on failure they stay journaled for ``repair()``."""
    if not garbage:
        return
    try:
        yield Step(backend._vs_drop, backend._avs_drop, (garbage,))
        yield backend._cat("journal_clear", garbage, "")  # the garbage rows only
    except Exception as exc:  # the write itself has landed: report, do not fail it
        log.warning("langchain-ltm: %d replaced documents left for repair(): %s", len(garbage), exc)


async def acommit(
    catalog: Catalog,
    kept: Sequence[Record],
    gone: Sequence[ItemKey],
    ids: Sequence[str],
    writer: str = "",
) -> tuple[int, list[str]]:
    """The catalog commit on the catalog's threads, its outcome known even if cancelled.

    A cancelled ``await`` does not stop the commit running in its thread, so the write
    logic cannot guess: the cancelled caller waits for the commit (one SQLite
    transaction) to end. Landed: :class:`Landed` (a ``CancelledError``), the new
    documents stay, the replaced ones stay journaled as garbage for ``repair()``.
    Failed: the plain ``CancelledError``, and the logic drops the new documents.
    """
    task = asyncio.ensure_future(catalog._off_loop(catalog.commit, kept, gone, ids, writer))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        while not task.done():
            try:
                await asyncio.wait({task})
            except asyncio.CancelledError:  # cancelled again: still wait for the outcome
                continue
        if task.cancelled() or task.exception() is not None:
            raise
        raise Landed("cancelled after the catalog commit landed") from None
