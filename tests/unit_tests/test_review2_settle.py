"""Review 2: a failed commit of a batch whose document ids are already current drops them.

Document ids are deterministic (store, namespace, key, path, ``updated_at``): a re-put at
the same moment (an import of the same export twice, two processes within one
microsecond) writes the ids of the version that is current. If that second commit fails
(SQLITE_BUSY, disk full), ``settle()`` finds the ids journaled ``adding`` (its own
``journal_add`` marked them) and drops them: the current item loses its document.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from langchain_ltm import _clock
from tests.unit_tests.test_vectorstore_backend import _Crash, _crash_store, _versions

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
    assert store.search(ns, query="coffee", limit=3)[0].key == "a"  # fails today
    store.close()
