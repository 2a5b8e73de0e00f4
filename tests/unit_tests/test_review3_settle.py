"""Review 3: failing tests for the per-write journal (fix-review2 merge)."""

from __future__ import annotations

import pytest

from langchain_ltm.backends.vectorstore._catalog import ADDING, GARBAGE
from tests.unit_tests.test_vectorstore_backend import _crash_store


def test_repair_keeps_the_rows_a_write_journals_after_repair_read_the_journal(
    tmp_path, monkeypatch
):
    """repair_journal reads the pending ids, then clears *every* row of them: an ``adding``
    row another write journaled in between (same deterministic id: the version re-imported
    after its delete left a garbage row) goes too, so that write's failed commit looks
    landed to settle_claim and its document is never dropped (nor journaled)."""
    store, backend, _ = _crash_store("faiss", tmp_path)
    catalog = backend.catalog
    catalog.journal_add(["doc-d"], GARBAGE)  # left by an earlier delete's failed collect
    read = catalog.journal_pending

    def pending_then_writer(grace):
        out = read(grace)
        catalog.journal_add(["doc-d"], ADDING, "writer-w")  # W, another process, in flight
        return out

    monkeypatch.setattr(catalog, "journal_pending", pending_then_writer)
    backend.repair(full=False)
    monkeypatch.setattr(catalog, "journal_pending", read)
    assert catalog.journal_ids(ADDING) == ["doc-d"], "W's row was cleared by repair()"
    # W's commit fails: its document must be dropped, not kept as if the commit landed
    assert catalog.settle_claim(["doc-d"], [], "writer-w") == ["doc-d"]
    store.close()


def test_a_document_added_back_for_another_write_stays_journaled(tmp_path, monkeypatch):
    """settle(): B journals A's ids during A's drop, so A adds them back, but A's rows are
    cleared (settle_release) before that add. B fails and settles in between: B drops
    nothing left, then A's add lands a document that is neither current nor journaled, an
    orphan only a full repair() finds."""
    from langchain_ltm.backends.vectorstore._catalog import Catalog
    from tests.unit_tests.test_vectorstore_backend import _Crash
    from tests.unit_tests.test_vectorstore_settle import _busy

    store, backend, vs = _crash_store("faiss", tmp_path)
    catalog = backend.catalog
    ns = ("docs", "u1")
    monkeypatch.setattr(catalog, "commit", _busy)
    claim, release = catalog.settle_claim, catalog.settle_release
    doomed: list[str] = []

    def claimed(ids, keys, writer):
        out = claim(ids, keys, writer)
        doomed.extend(out)
        catalog.journal_add(out, ADDING, "writer-b")  # B, in flight, same ids
        return out

    def released(ids, keys, writer):
        back = release(ids, keys, writer)
        # B's commit fails now: its settle finds no other write's rows and drops the ids
        dropped = Catalog.settle_claim(catalog, ids, keys, "writer-b")
        backend._vs_drop(dropped)
        Catalog.settle_release(catalog, dropped, keys, "writer-b")
        return back

    monkeypatch.setattr(catalog, "settle_claim", claimed)
    monkeypatch.setattr(catalog, "settle_release", released)
    with pytest.raises(_Crash):
        store.put(ns, "a", {"text": "black coffee"})
    assert store.get(ns, "a") is None and len(doomed) == 1
    present = [d.id for d in vs.get_by_ids(doomed)]
    journaled = catalog.journal_ids(ADDING)
    # the document is either gone or still journaled (so repair(full=False) drops it)
    assert not present or journaled == doomed, (present, journaled)
    store.close()
