"""A failed commit drops only the new documents nobody needs (review 2).

Document ids are deterministic (store, namespace, key, path, ``updated_at``): a re-put at
the same moment (an import of the same export twice, two processes within one
microsecond) writes the ids of the version that is current, or the ids another write has
in flight. When such a commit fails (SQLITE_BUSY, disk full), ``settle()`` must keep them.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone

import pytest

from langchain_ltm import LongTermMemoryStore, _clock
from langchain_ltm.backends.vectorstore import vectorstore_backend
from langchain_ltm.backends.vectorstore._catalog import ADDING, GARBAGE, Catalog
from langchain_ltm.backends.vectorstore._write import SETTLE_ROUNDS
from tests.fakes import KeywordEmbeddings
from tests.unit_tests.test_vectorstore_backend import DIMS, _Crash, _crash_store, _versions

_FIXED = datetime(2026, 12, 2, 6, 0, 0, 123456, tzinfo=timezone.utc)


@pytest.mark.parametrize("kind", ["faiss", "recording"])
def test_a_failed_identical_reput_keeps_the_current_document(kind, tmp_path, monkeypatch):
    store, backend, _ = _crash_store(kind, tmp_path)
    ns = ("docs", "u1")
    monkeypatch.setattr(_clock, "utcnow", lambda: _FIXED)
    store.put(ns, "a", {"text": "black coffee"})
    held, current = _versions(backend, store, ns)
    assert sorted(held) == sorted(current) and len(current) == 1

    inner = backend.catalog.commit

    def busy(*args, **kwargs):  # the commit fails before it lands (e.g. SQLITE_BUSY)
        raise _Crash("database is locked")

    monkeypatch.setattr(backend.catalog, "commit", busy)
    with pytest.raises(_Crash):
        store.put(ns, "a", {"text": "black coffee"})  # same moment: same document id
    monkeypatch.setattr(backend.catalog, "commit", inner)

    # the catalog still holds the item, current at _FIXED: its document must still be there
    held, current = _versions(backend, store, ns)
    assert held.count(current[0]) == 1, (held, current)
    hits = store.search(ns, query="coffee", limit=5)
    assert [h.key for h in hits] == ["a"]
    store.close()


@pytest.mark.parametrize("kind", ["chroma", "faiss"])
def test_the_best_match_still_ranks_after_a_failed_identical_reput(kind, tmp_path, monkeypatch):
    """What the user sees: the item's document is gone, so a ranked search misses it."""
    store, backend, _ = _crash_store(kind, tmp_path)
    ns = ("docs", "u1")
    for i in range(20):
        store.put(ns, f"t{i}", {"text": f"green tea number{i}"})
    monkeypatch.setattr(_clock, "utcnow", lambda: _FIXED)
    store.put(ns, "a", {"text": "black coffee"})
    assert store.search(ns, query="coffee", limit=3)[0].key == "a"

    def busy(*args, **kwargs):
        raise _Crash("database is locked")

    inner = backend.catalog.commit
    monkeypatch.setattr(backend.catalog, "commit", busy)
    with pytest.raises(_Crash):
        store.put(ns, "a", {"text": "black coffee"})
    monkeypatch.setattr(backend.catalog, "commit", inner)
    assert store.search(ns, query="coffee", limit=3)[0].key == "a"
    store.close()


def _busy(*args, **kwargs):
    raise _Crash("database is locked")


def _second_writer(backend, vs, tmp_path):
    """Another store over the same vectorstore and catalog file (another process's view)."""
    other = vectorstore_backend(vs, catalog=tmp_path / "c.db")
    return LongTermMemoryStore(other, embeddings=KeywordEmbeddings(DIMS)), other


@pytest.mark.parametrize("kind", ["faiss", "chroma"])
def test_a_failed_write_keeps_the_ids_another_write_has_in_flight(kind, tmp_path, monkeypatch):
    """B has journaled and added the same ids; A fails meanwhile; then B lands: B's documents."""
    store, backend, vs = _crash_store(kind, tmp_path)
    store_b, backend_b = _second_writer(backend, vs, tmp_path)
    ns = ("docs", "u1")
    monkeypatch.setattr(_clock, "utcnow", lambda: _FIXED)
    monkeypatch.setattr(backend.catalog, "commit", _busy)
    inner = backend_b.catalog.commit

    def b_commit(*args, **kwargs):  # B is between its add and its commit when A fails
        with pytest.raises(_Crash):
            store.put(ns, "a", {"text": "black coffee"})
        return inner(*args, **kwargs)

    monkeypatch.setattr(backend_b.catalog, "commit", b_commit)
    store_b.put(ns, "a", {"text": "black coffee"})
    held, current = _versions(backend, store, ns)
    assert len(current) == 1 and held == current, (held, current)
    assert store.search(ns, query="coffee", limit=3)[0].key == "a"
    assert not backend.catalog.journal_ids(ADDING)  # A's rows and B's: both cleared
    store_b.close()
    store.close()


def test_when_both_writes_of_the_same_ids_fail_their_documents_go(tmp_path, monkeypatch):
    store, backend, vs = _crash_store("faiss", tmp_path)
    store_b, backend_b = _second_writer(backend, vs, tmp_path)
    ns = ("docs", "u1")
    store.put(ns, "other", {"text": "green tea"})
    before = vs.index.ntotal
    monkeypatch.setattr(_clock, "utcnow", lambda: _FIXED)
    monkeypatch.setattr(backend.catalog, "commit", _busy)

    def b_commit(*args, **kwargs):  # A fails while B is in flight, then B fails too
        with pytest.raises(_Crash):
            store.put(ns, "a", {"text": "black coffee"})
        assert vs.index.ntotal == before + 1  # kept for B
        raise _Crash("disk full")

    monkeypatch.setattr(backend_b.catalog, "commit", b_commit)
    with pytest.raises(_Crash, match="disk full"):
        store_b.put(ns, "a", {"text": "black coffee"})
    assert vs.index.ntotal == before  # the last one out dropped them
    assert store.get(ns, "a") is None
    assert not backend.catalog.journal_ids(ADDING)
    assert backend.repair() == 0
    store_b.close()
    store.close()


def test_ids_journaled_by_another_write_during_the_drop_are_added_back(tmp_path, monkeypatch):
    """The race: B journals (and adds) the ids between A's claim and A's drop."""
    store, backend, vs = _crash_store("faiss", tmp_path)
    ns = ("docs", "u1")
    monkeypatch.setattr(backend.catalog, "commit", _busy)
    claim = backend.catalog.settle_claim
    doomed: list[str] = []

    def claimed(ids, keys, writer):
        out = claim(ids, keys, writer)
        doomed.extend(out)
        backend.catalog.journal_add(out, ADDING, "writer-b")  # B, in flight, same ids
        return out

    monkeypatch.setattr(backend.catalog, "settle_claim", claimed)
    with pytest.raises(_Crash):
        store.put(ns, "a", {"text": "black coffee"})
    assert len(doomed) == 1
    assert [d.id for d in vs.get_by_ids(doomed)] == doomed  # dropped, then back for B
    assert backend.catalog.journal_ids(ADDING) == doomed  # B's row only
    store.close()


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


def test_journal_clear_rows_deletes_only_the_rows_as_read(tmp_path):
    """The same (doc_id, writer) journaled again since the read (a new state or time) stays."""
    cat = Catalog(tmp_path / "c.db")
    cat.setup()
    cat.journal_add(["doc-a", "doc-b"], GARBAGE)
    rows = cat.journal_pending(grace_seconds=60)
    assert sorted(r[:3] for r in rows) == [("doc-a", "", GARBAGE), ("doc-b", "", GARBAGE)]
    cat.journal_add(["doc-b"], ADDING)  # replaces doc-b's row after the read
    cat.journal_add(["doc-a"], ADDING, "w1")  # another write's row for doc-a
    cat.journal_clear_rows(rows)
    assert cat.journal_ids(GARBAGE) == [] and sorted(cat.journal_ids(ADDING)) == ["doc-a", "doc-b"]
    cat.journal_clear_rows([])  # nothing read, nothing cleared
    assert sorted(cat.journal_ids(ADDING)) == ["doc-a", "doc-b"]
    cat.close()


@pytest.mark.parametrize("races", [1, SETTLE_ROUNDS])
def test_a_document_added_back_for_another_write_stays_journaled(races, tmp_path, monkeypatch):
    """settle(): B journals A's ids during A's drop, so A adds them back; B fails and settles
    before that add. A's rows of those ids must stay until A has looked at them again:
    cleared before the add, B drops nothing left and A's add lands a document neither
    current nor journaled, an orphan only a full repair() finds (review 3). B racing once,
    A's next round drops it; B racing every round, A's rows stay for repair()."""
    store, backend, vs = _crash_store("faiss", tmp_path)
    catalog = backend.catalog
    ns = ("docs", "u1")
    monkeypatch.setattr(catalog, "commit", _busy)
    claim, release = catalog.settle_claim, catalog.settle_release
    rounds: list[list[str]] = []

    def claimed(ids, keys, writer):
        out = claim(ids, keys, writer)
        rounds.append(out)
        if len(rounds) <= races:
            catalog.journal_add(out, ADDING, "writer-b")  # B, in flight, same ids
        return out

    def released(ids, keys, writer):
        back = release(ids, keys, writer)
        # B's commit fails now: it settles before A adds the ids back
        dropped = Catalog.settle_claim(catalog, ids, keys, "writer-b")
        backend._vs_drop(dropped)
        Catalog.settle_release(catalog, dropped, keys, "writer-b")
        return back

    monkeypatch.setattr(catalog, "settle_claim", claimed)
    monkeypatch.setattr(catalog, "settle_release", released)
    with pytest.raises(_Crash):
        store.put(ns, "a", {"text": "black coffee"})
    monkeypatch.undo()
    assert store.get(ns, "a") is None
    (doomed,) = {tuple(r) for r in rounds if r}
    assert len(doomed) == 1
    present = [d.id for d in vs.get_by_ids(list(doomed))]
    journaled = catalog.journal_ids(ADDING)
    # the document is either gone or still journaled (so repair(full=False) drops it)
    assert not present or journaled == list(doomed), (present, journaled)
    if races < SETTLE_ROUNDS:  # looked at again once B had gone: dropped, rows cleared
        assert (present, journaled, len(rounds)) == ([], [], races + 1)
    else:  # B raced every round: the last add-back stays journaled, for repair()
        assert present == list(doomed) and len(rounds) == SETTLE_ROUNDS
        assert backend.repair(grace_seconds=0, full=False) == 1
        assert vs.get_by_ids(list(doomed)) == [] and catalog.journal_ids(ADDING) == []
    store.close()


def test_a_journal_of_one_row_per_document_is_migrated(tmp_path):
    """Catalogs from before the per-write rows keep theirs (writer '') and repair them."""
    path = tmp_path / "c.db"
    cat = Catalog(path)
    cat.setup()
    cat.close()
    with sqlite3.connect(path) as conn:  # the journal as older releases made it
        conn.execute('DROP TABLE "ltm_items_vsjournal"')
        conn.execute(
            'CREATE TABLE "ltm_items_vsjournal" (doc_id TEXT PRIMARY KEY, '
            "state TEXT NOT NULL, since INTEGER NOT NULL)"
        )
        conn.executemany(
            'INSERT INTO "ltm_items_vsjournal" VALUES (?, ?, 0)',
            [("doc-a", ADDING), ("doc-g", GARBAGE)],
        )
    conn.close()
    cat = Catalog(path)
    cat.setup()
    assert cat.journal_ids(ADDING) == ["doc-a"] and cat.journal_ids(GARBAGE) == ["doc-g"]
    with cat._connection() as conn:
        rows = conn.execute('SELECT doc_id, writer FROM "ltm_items_vsjournal"').fetchall()
    assert sorted(rows) == [("doc-a", ""), ("doc-g", "")]
    cat.journal_add(["doc-a"], ADDING, "w1")  # a second row for the same document
    # doc-a: w1 is in flight
    assert cat.journal_pending(grace_seconds=60) == [("doc-g", "", GARBAGE, 0)]
    cat.journal_clear(["doc-a"], "w1")
    assert sorted(cat.journal_pending(grace_seconds=60)) == [
        ("doc-a", "", ADDING, 0),
        ("doc-g", "", GARBAGE, 0),
    ]
    cat.close()
