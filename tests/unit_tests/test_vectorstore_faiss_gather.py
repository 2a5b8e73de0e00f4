"""The flat-index gather answers as the selector search: ties at the cut, an index shorter
than its id mapping (review 2)."""

from __future__ import annotations

import numpy as np
import pytest

faiss = pytest.importorskip("faiss")
from langchain_community.docstore.in_memory import InMemoryDocstore  # noqa: E402
from langchain_community.vectorstores import FAISS  # noqa: E402

from langchain_ltm.backends.vectorstore.dialects import faiss as dialect  # noqa: E402
from tests.fakes import KeywordEmbeddings  # noqa: E402

D = 8


def _store():
    vs = FAISS(
        embedding_function=KeywordEmbeddings(D),
        index=faiss.IndexFlatL2(D),
        docstore=InMemoryDocstore(),
        index_to_docstore_id={},
    )
    vecs = np.random.default_rng(0).standard_normal((20, D)).astype(np.float32)
    vecs[5] = vecs[15] = vecs[9]  # the same text under three keys: equal scores
    pairs = [(f"t{i}", v) for i, v in enumerate(vecs.tolist())]
    vs.add_embeddings(pairs, ids=[f"id{i}" for i in range(20)])
    return vs, (vecs[9] + 0.01).tolist()


def _search(vs, query, scope, k, gather, monkeypatch):
    monkeypatch.setattr(dialect, "_GATHER_PER_VECTOR", 64 if gather else 0)
    return [(doc.id, score) for doc, score in dialect.search_ids(vs, query, k, scope)]


def test_ties_at_the_cut_pick_the_same_documents_both_ways(monkeypatch):
    vs, query = _store()
    scope = [f"id{i}" for i in (15, 9, 5, 1, 2, 3)]  # the catalog's order, not the index's
    selected = _search(vs, query, scope, 2, False, monkeypatch)
    gathered = _search(vs, query, scope, 2, True, monkeypatch)
    assert gathered == selected


def test_an_index_shorter_than_its_mapping_does_not_crash_the_gather(monkeypatch):
    vs, query = _store()
    vs.index.remove_ids(np.arange(10, 20, dtype=np.int64))  # rows gone behind the mapping
    scope = [f"id{i}" for i in (15, 9, 5, 1, 2, 3)]
    selected = _search(vs, query, scope, 2, False, monkeypatch)
    gathered = _search(vs, query, scope, 2, True, monkeypatch)  # IndexError today
    assert [i for i, _ in gathered] == [i for i, _ in selected]
