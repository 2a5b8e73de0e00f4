"""FAISS searches scoped inside the engine: an ``IDSelector`` of the user's documents.

Every search here is checked against a numpy scan of the user's own vectors (the exact
answer), on real FAISS indexes (flat L2, flat inner product, normalizing, HNSW, IVF), with
many other users' documents in the same index, after deletes that renumber it, and saved
and loaded from disk. The wrapper's own post-filtered search is watched: it must not run.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import faiss as faiss_lib
import numpy as np
import pytest
from langchain_community.docstore.in_memory import InMemoryDocstore
from langchain_community.vectorstores import FAISS
from langchain_community.vectorstores.utils import DistanceStrategy

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.vectorstore import vectorstore_backend
from langchain_ltm.backends.vectorstore.dialects import faiss as dialect
from langchain_ltm.backends.vectorstore.saved import SavedFaissBackend
from tests.fakes import KeywordEmbeddings
from tests.vectorstores import faiss

DIMS = 32
K = 10


def _flat_ip(emb: Any, tmp: Path) -> FAISS:
    return faiss(emb, tmp / "ip", inner_product=True)


def _normalizing(emb: Any, tmp: Path) -> FAISS:
    return FAISS(emb, faiss_lib.IndexFlatL2(DIMS), InMemoryDocstore(), {}, normalize_L2=True)


def _hnsw(emb: Any, tmp: Path) -> FAISS:
    index = faiss_lib.IndexHNSWFlat(DIMS, 32)
    index.hnsw.efSearch = 256  # exact on a few thousand vectors, with the selector too
    return FAISS(emb, index, InMemoryDocstore(), {})


def _ivf(emb: Any, tmp: Path) -> FAISS:
    quantizer = faiss_lib.IndexFlatIP(DIMS)
    index = faiss_lib.IndexIVFFlat(quantizer, DIMS, 8, faiss_lib.METRIC_INNER_PRODUCT)
    train = np.random.default_rng(0).standard_normal((400, DIMS)).astype(np.float32)
    faiss_lib.normalize_L2(train)
    index.train(train)
    index.nprobe = 8  # every list: exact
    return FAISS(
        emb, index, InMemoryDocstore(), {}, distance_strategy=DistanceStrategy.MAX_INNER_PRODUCT
    )


INDEXES: dict[str, Callable[[Any, Path], FAISS]] = {
    "flat-l2": lambda emb, tmp: faiss(emb, tmp / "l2"),
    "flat-ip": _flat_ip,
    "flat-l2-normalize": _normalizing,
    "hnsw": _hnsw,
    "ivf-ip": _ivf,
}


def _text(rng: random.Random) -> str:
    return " ".join(f"w{rng.randrange(60)}" for _ in range(3))


class _Watched:
    """Counts calls of the wrapper's own (post-filtered) search on one vectorstore."""

    def __init__(self, vs: FAISS) -> None:
        self.calls = 0
        original = vs.similarity_search_with_score_by_vector

        def counting(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return original(*args, **kwargs)

        vs.similarity_search_with_score_by_vector = counting  # type: ignore[method-assign]


def _store_over(vs: FAISS, emb: Any, tmp: Path) -> tuple[Any, LongTermMemoryStore]:
    """The generic backend over ``vs`` (its catalog in ``tmp``) and a store indexing ``text``."""
    backend = vectorstore_backend(vs, catalog=tmp / "c.db")
    return backend, LongTermMemoryStore(backend, embeddings=emb, fields=["text"])


def _fill(store: LongTermMemoryStore, users: int, per_user: int, seed: int = 1) -> dict:
    """``users`` x ``per_user`` items; returns {user: {key: text}}."""
    rng = random.Random(seed)
    texts: dict[str, dict[str, str]] = {}
    for u in range(users):
        mine = texts.setdefault(f"u{u}", {})
        for i in range(per_user):
            mine[str(i)] = f"{_text(rng)} u{u}i{i}"  # a word of its own: no two alike
            store.put(("docs", f"u{u}"), str(i), {"text": mine[str(i)], "kind": "ab"[i % 2]})
    return texts


def _exact(emb: KeywordEmbeddings, mine: dict[str, str], query: str, k: int) -> list[str]:
    """The numpy scan of the user's own vectors: keys of the ``k`` best, best first."""
    keys = sorted(mine)
    matrix = np.asarray(emb.embed_documents([mine[key] for key in keys]), dtype=np.float64)
    scores = matrix @ np.asarray(emb.embed_query(query), dtype=np.float64)
    order = np.argsort(-scores, kind="stable")[:k]
    return [keys[i] for i in order]


def _check_user(store, emb, texts, user, query, k=K):
    hits = store.search(("docs", user), query=query, limit=k)
    want = _exact(emb, texts[user], query, k)
    assert [h.key for h in hits] == want
    assert all(h.namespace == ("docs", user) for h in hits)
    q = np.asarray(emb.embed_query(query))
    for h in hits:
        v = np.asarray(emb.embed_documents([h.value["text"]])[0])
        assert h.score == pytest.approx(float(q @ v), abs=1e-4)  # still a cosine
    return hits


@pytest.mark.parametrize("kind", list(INDEXES))
def test_per_user_top_k_is_the_exact_scan_of_the_users_vectors(kind, tmp_path):
    emb = KeywordEmbeddings(DIMS)
    vs = INDEXES[kind](emb, tmp_path)
    backend, store = _store_over(vs, emb, tmp_path)
    texts = _fill(store, users=30, per_user=25)
    watched = _Watched(vs)
    rng = random.Random(7)
    for q in range(40):
        _check_user(store, emb, texts, f"u{q % 30}", _text(rng))
    assert watched.calls == 0  # never the wrapper's post-filtered search
    # what it would have given: a global top-k, filtered afterwards, is short
    bare = dialect.search(vs, emb.embed_query("w1 w2"), K, backend.scope_filter(("docs", "u3")))
    assert len(bare) < K
    assert backend.capabilities.extra["search_among_ids"] is True
    store.close()


def test_a_user_with_few_items_among_many_gets_all_of_his(tmp_path, caplog):
    emb = KeywordEmbeddings(DIMS)
    vs = faiss(emb, tmp_path / "f")
    backend, store = _store_over(vs, emb, tmp_path)
    texts = _fill(store, users=40, per_user=30)
    texts["few"] = {"a": "w1 w2 w3", "b": "w50 w51 w52", "c": "w7 w8 w9"}
    for key, text in texts["few"].items():
        store.put(("docs", "few"), key, {"text": text})
    watched = _Watched(vs)
    hits = _check_user(store, emb, texts, "few", "w1 w2 w99")
    assert sorted(h.key for h in hits) == ["a", "b", "c"]
    assert watched.calls == 0
    assert "fewer documents in scope" not in caplog.text  # complete from FAISS, no fallback
    # the filtered search FAISS itself offers finds at most the ones near the global top
    bare = dialect.search(vs, emb.embed_query("w50"), K, backend.scope_filter(("docs", "few")))
    assert len(bare) < 3
    store.close()


def test_value_filters_and_expiry_are_decided_by_the_catalog(tmp_path):
    emb = KeywordEmbeddings(DIMS)
    vs = faiss(emb, tmp_path / "f")
    _, store = _store_over(vs, emb, tmp_path)
    texts = _fill(store, users=10, per_user=30)
    query = "w3 w4 w5"
    hits = store.search(("docs", "u2"), query=query, limit=K, filter={"kind": "a"})
    wanted = {key: t for key, t in texts["u2"].items() if int(key) % 2 == 0}
    assert [h.key for h in hits] == _exact(emb, wanted, query, K)
    # a condition that is not an equality on a short string: the catalog decides it too
    hits = store.search(("docs", "u2"), query=query, limit=K, filter={"kind": {"$ne": "a"}})
    odd = {key: t for key, t in texts["u2"].items() if int(key) % 2 == 1}
    assert [h.key for h in hits] == _exact(emb, odd, query, K)
    store.close()


def test_after_deletes_renumber_the_index_the_scope_is_still_right(tmp_path):
    emb = KeywordEmbeddings(DIMS)
    vs = faiss(emb, tmp_path / "f")
    _, store = _store_over(vs, emb, tmp_path)
    texts = _fill(store, users=20, per_user=20)
    rng = random.Random(3)
    query = "w10 w11 w12"
    _check_user(store, emb, texts, "u5", query)  # the reverse map is built and cached
    before = vs.index_to_docstore_id
    for u in range(20):  # every user loses some items, u5 included: FAISS renumbers
        for key in rng.sample(sorted(texts[f"u{u}"]), 6):
            store.delete(("docs", f"u{u}"), key)
            del texts[f"u{u}"][key]
    # and some are replaced (new version: a new document, the old one deleted)
    for key in sorted(texts["u5"])[:4]:
        texts["u5"][key] = f"{_text(rng)} u5new{key}"
        store.put(("docs", "u5"), key, {"text": texts["u5"][key]})
    assert vs.index_to_docstore_id is not before  # langchain's delete built a new dict
    for u in range(20):
        _check_user(store, emb, texts, f"u{u}", query)
    store.close()


def test_the_reverse_map_is_checked_so_a_stale_cache_never_selects_another_document(tmp_path):
    emb = KeywordEmbeddings(DIMS)
    vs = faiss(emb, tmp_path / "f")
    vectors = emb.embed_documents([f"w{i}" for i in range(6)])
    ids = [f"doc{i}" for i in range(6)]
    vs.add_embeddings(list(zip(ids, vectors, strict=True)), ids=ids)
    forward = vs.index_to_docstore_id
    assert dialect.int_ids(vs, ["doc2", "doc5"]) == [3, 6]  # 0 is the unrelated document
    # changed in place behind the cache's back: two documents swap places
    forward[3], forward[6] = "doc5", "doc2"
    assert dialect.int_ids(vs, ["doc2", "doc5"]) == [6, 3]
    # add() extends the dict in place: the new entries are found
    vs.add_embeddings([("new", vectors[0])], ids=["doc6"])
    assert dialect.int_ids(vs, ["doc6", "doc2"]) == [7, 6]
    # delete() renumbers into a new dict
    vs.delete(["doc0", "doc1"])
    assert dialect.int_ids(vs, ["doc2", "doc6", "doc0"]) == [4, 5]  # doc0 is gone
    for doc_id, i in zip(["doc2", "doc6"], dialect.int_ids(vs, ["doc2", "doc6"]), strict=True):
        assert vs.index_to_docstore_id[i] == doc_id
    # and the search among ids returns exactly the documents asked for
    found = dialect.search_ids(vs, vectors[3], 5, ["doc2", "doc4"])
    assert found is not None
    assert sorted(doc.id for doc, _ in found) == ["doc2", "doc4"]
    assert dialect.search_ids(vs, vectors[3], 5, ["nothing"]) == []


def test_saved_and_loaded_from_disk(tmp_path):
    emb = KeywordEmbeddings(DIMS)
    folder = tmp_path / "saved"
    folder.mkdir()

    def save(vs: FAISS, where: Path) -> None:
        vs.save_local(str(where))

    vs = FAISS(emb, faiss_lib.IndexFlatL2(DIMS), InMemoryDocstore(), {})
    backend = SavedFaissBackend(vs, folder, catalog=folder / "c.db", save=save)
    store = LongTermMemoryStore(backend, embeddings=emb, fields=["text"])
    texts = _fill(store, users=15, per_user=20)
    for key in ("0", "3", "7"):
        store.delete(("docs", "u4"), key)
        del texts["u4"][key]
    store.close()

    loaded = FAISS.load_local(str(folder), emb, allow_dangerous_deserialization=True)
    backend = SavedFaissBackend(loaded, folder, catalog=folder / "c.db", save=save)
    store = LongTermMemoryStore(backend, embeddings=emb, fields=["text"])
    watched = _Watched(loaded)
    rng = random.Random(11)
    for q in range(15):
        _check_user(store, emb, texts, f"u{q}", _text(rng))
    assert watched.calls == 0
    store.close()


def test_async_search_is_scoped_the_same_way(tmp_path):
    emb = KeywordEmbeddings(DIMS)
    vs = faiss(emb, tmp_path / "f")
    _, store = _store_over(vs, emb, tmp_path)
    texts = _fill(store, users=20, per_user=20)
    watched = _Watched(vs)

    async def run() -> list[list[str]]:
        out = []
        for u in range(20):
            hits = await store.asearch(("docs", f"u{u}"), query="w5 w6", limit=K)
            out.append([h.key for h in hits])
        return out

    got = asyncio.run(run())
    assert got == [_exact(emb, texts[f"u{u}"], "w5 w6", K) for u in range(20)]
    assert watched.calls == 0
    store.close()


def test_an_index_that_cannot_select_by_id_falls_back_to_the_filtered_search(tmp_path):
    emb = KeywordEmbeddings(DIMS)
    index = faiss_lib.IndexRefineFlat(faiss_lib.IndexFlatL2(DIMS))  # no selector support
    vs = FAISS(emb, index, InMemoryDocstore(), {})
    assert dialect.search_ids(vs, [0.0] * DIMS, 3, ["x"]) is None
    backend, store = _store_over(vs, emb, tmp_path)
    texts = _fill(store, users=10, per_user=15)
    watched = _Watched(vs)
    for u in range(10):
        _check_user(store, emb, texts, f"u{u}", "w20 w21")
    assert watched.calls > 0  # the post-filtered search, widened until full
    assert backend._ids_usable is False  # learnt once
    store.close()


def test_a_registered_search_ids_gets_the_scopes_current_ids_and_its_hits_are_checked(
    tmp_path,
):
    """Any family's ``search_ids``: asked for exactly the user's current, matching documents;
    a document outside the scope that it returns anyway is dropped by the per-hit check."""
    from langchain_ltm.backends.vectorstore import StoreFamily
    from tests.unit_tests.test_vectorstore_engine import _Recording

    asked: list[set[str]] = []
    leak: set[str] = set()

    def among(vs: Any, vector: list[float], k: int, doc_ids: list[str]) -> Any:
        asked.append(set(doc_ids))
        allowed = set(doc_ids) | leak
        found = vs._similarity_search_with_score_by_vector(
            vector, k + len(leak), filter=lambda doc: doc.id in allowed
        )
        return [(doc, score) for doc, score, _ in found]

    family = StoreFamily("among", filter_builder=dict, distance="similarity", search_ids=among)
    emb = KeywordEmbeddings(DIMS)
    vs = _Recording(emb)
    backend = vectorstore_backend(vs, catalog=tmp_path / "c.db", family=family)
    store = LongTermMemoryStore(backend, embeddings=emb, fields=["text"])
    texts = _fill(store, users=5, per_user=12)
    texts["u1"]["4"] = "w1 w2 w3 replaced"
    store.put(("docs", "u1"), "4", {"text": texts["u1"]["4"], "kind": "a"})
    vs.calls.clear()

    def docs_of(user: str, kind: str | None = None) -> set[str]:
        return {
            id_
            for id_, doc in vs.store.items()
            if doc["metadata"].get("ltm_n1") == user
            and (kind is None or doc["metadata"].get("ltm_v_kind") == kind)
        }

    _check_user(store, emb, texts, "u1", "w1 w2")
    assert asked[-1] == docs_of("u1") and len(asked[-1]) == 12  # the old version's is gone
    hits = store.search(("docs", "u1"), query="w1 w2", limit=K, filter={"kind": "a"})
    assert asked[-1] == docs_of("u1", "a") and len(asked[-1]) == 6
    assert all(int(h.key) % 2 == 0 for h in hits)
    # a hook that lets another user's document through: never returned
    query = texts["u2"]["3"]
    leak.update(docs_of("u2"))
    hits = store.search(("docs", "u1"), query=query, limit=K)
    assert [h.key for h in hits] == _exact(emb, texts["u1"], query, K)
    assert all(h.namespace == ("docs", "u1") for h in hits)
    assert "similarity_search_with_score_by_vector" not in vs.calls
    store.close()


@pytest.mark.parametrize(
    "make",
    [
        lambda: faiss_lib.IndexPQ(DIMS, 4, 4),
        lambda: faiss_lib.IndexLSH(DIMS, 64),
        lambda: faiss_lib.IndexResidualQuantizer(DIMS, 2, 4),
    ],
    ids=["pq", "lsh", "residual-quantizer"],
)
def test_quantized_indexes_that_refuse_a_selector_fall_back(make, tmp_path):
    """PQ, LSH and additive quantizers are flat-code indexes whose search refuses an id
    selector: the store falls back to its filtered search, where a lossy index's scores
    meet the cosine check (a clear error), instead of failing inside FAISS."""
    from langchain_ltm.errors import UnsupportedVectorStoreError

    emb = KeywordEmbeddings(DIMS)
    index = make()
    if not index.is_trained:
        train = np.random.default_rng(0).standard_normal((2_000, DIMS)).astype(np.float32)
        index.train(train)
    vs = FAISS(emb, index, InMemoryDocstore(), {})
    assert dialect.search_ids(vs, [0.0] * DIMS, 3, []) is None
    backend, store = _store_over(vs, emb, tmp_path)
    texts = _fill(store, users=4, per_user=6)
    for u in range(4):
        refused = ""
        try:
            hits = store.search(("docs", f"u{u}"), query="w20 w21", limit=3)
        except UnsupportedVectorStoreError as exc:  # lossy scores are not cosines
            refused = str(exc)
        if refused:
            assert "distance=" in refused
            break
        assert len(hits) == 3 and {h.key for h in hits} <= set(texts[f"u{u}"])
        assert all(h.namespace == ("docs", f"u{u}") for h in hits)
    assert backend._ids_usable is False  # it tried the ids once, then the filter
    store.close()


def test_a_broad_scope_uses_the_stores_filtered_search_not_every_id(tmp_path, monkeypatch):
    from langchain_ltm.backends.vectorstore import _search

    monkeypatch.setattr(_search, "MAX_ID_SCOPE", 20)  # 5 users x 6 items is broad here
    emb = KeywordEmbeddings(DIMS)
    vs = faiss(emb, tmp_path / "l2")
    backend, store = _store_over(vs, emb, tmp_path)
    texts = _fill(store, users=5, per_user=6)
    watched = _Watched(vs)
    everyone = {f"{u}/{k}": t for u, mine in texts.items() for k, t in mine.items()}
    hits = store.search(("docs",), query="w20 w21", limit=5)
    assert watched.calls > 0  # the broad scope: the filtered search
    want = _exact(emb, everyone, "w20 w21", 5)
    assert [f"{h.namespace[1]}/{h.key}" for h in hits] == want
    calls = watched.calls
    _check_user(store, emb, texts, "u3", "w20 w21", k=5)  # one user: among its ids
    assert watched.calls == calls and backend._ids_usable is True
    store.close()


@pytest.mark.parametrize("kind", ["flat-l2", "flat-ip", "flat-l2-normalize"])
def test_a_small_scope_on_a_flat_index_is_ranked_from_its_gathered_rows(
    kind, tmp_path, monkeypatch
):
    """Flat indexes rank a small scope from its gathered rows; the selector search agrees.

    The same queries run both ways (the gather, then every scope through the selector):
    the same keys in the same order, the same cosine scores, both the exact scan.
    """
    emb = KeywordEmbeddings(DIMS)
    vs = INDEXES[kind](emb, tmp_path)
    _, store = _store_over(vs, emb, tmp_path)
    texts = _fill(store, users=30, per_user=25)
    store.put(("docs", "few"), "a", {"text": "w1 w2 w3 only"})  # k > the scope's size
    store.put(("docs", "few"), "b", {"text": "w4 w5 w6 only"})
    texts["few"] = {"a": "w1 w2 w3 only", "b": "w4 w5 w6 only"}
    paths: list[bool] = []
    real = dialect._gathered

    def spy(*args: Any) -> Any:
        out = real(*args)
        paths.append(out is not None)
        return out

    monkeypatch.setattr(dialect, "_gathered", spy)
    rng = random.Random(3)
    queries = [(f"u{q % 30}", _text(rng)) for q in range(20)] + [("few", "w1 w5")]

    def answers() -> list[list[tuple[str, float]]]:
        return [
            [(h.key, h.score) for h in _check_user(store, emb, texts, u, q)] for u, q in queries
        ]

    gathered = answers()
    assert paths and all(paths)  # a user's 25 rows among 752: gathered
    paths.clear()
    monkeypatch.setattr(dialect, "_GATHER_PER_VECTOR", 0)  # no scope is small enough now
    selected = answers()
    assert paths and not any(paths)
    assert [len(a) for a in gathered][-1] == 2
    for got, want in zip(gathered, selected, strict=True):
        assert [key for key, _ in got] == [key for key, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-6)
    store.close()


def test_an_index_older_than_its_catalog_is_reported_at_open_and_repair_fixes_it(tmp_path, caplog):
    emb = KeywordEmbeddings(DIMS)
    catalog = tmp_path / "c.db"
    vs = FAISS(emb, faiss_lib.IndexFlatL2(DIMS), InMemoryDocstore(), {})
    store = LongTermMemoryStore(vectorstore_backend(vs, catalog=catalog), embeddings=emb)
    store.remember("bob", ["Lives in Lisbon", "Plays the cello"])
    vs.save_local(str(tmp_path / "idx"))
    store.remember("bob", ["Has a dog named Rex", "Drinks green tea"])  # never saved
    store.close()
    older = FAISS.load_local(str(tmp_path / "idx"), emb, allow_dangerous_deserialization=True)
    with caplog.at_level("WARNING"):
        backend = vectorstore_backend(older, catalog=catalog)
    assert "holds 2 documents, fewer than the 4 items" in caplog.text
    assert "backend.repair()" in caplog.text
    assert backend.repair() == 2
    caplog.clear()
    with caplog.at_level("WARNING"):
        vectorstore_backend(older, catalog=catalog).close()  # in line now: nothing said
    assert "fewer than" not in caplog.text
    store = LongTermMemoryStore(backend, embeddings=emb)
    assert [f.content for f in store.recall("bob", "dog named Rex", limit=1)] == [
        "Has a dog named Rex"
    ]
