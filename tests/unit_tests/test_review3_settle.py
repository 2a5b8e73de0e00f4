"""Review 3: failing test for the per-write journal (fix-review2 merge)."""

from __future__ import annotations

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
