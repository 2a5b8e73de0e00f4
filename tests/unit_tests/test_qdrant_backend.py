"""Qdrant engine specifics: collection checks, layout, persistence, interop, filter pushdown."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
import time
import warnings
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from langchain_qdrant import QdrantVectorStore
from langgraph.store.base import TTLConfig
from qdrant_client import AsyncQdrantClient, QdrantClient, models

from langchain_ltm import EmbeddingDimensionError, LongTermMemoryStore
from langchain_ltm._filters import compile_filter, matches
from langchain_ltm.backends.base import Record
from langchain_ltm.backends.qdrant import (
    IncompatibleCollectionError,
    QdrantBackend,
    qdrant_backend,
)
from langchain_ltm.backends.qdrant._domains import domain_for, local_lock_for
from langchain_ltm.backends.qdrant._layout import head_id, to_us, translate
from langchain_ltm.backends.qdrant._plans import Layout, plan_write
from langchain_ltm.errors import BackendError
from tests.fakes import KeywordEmbeddings
from tests.qdrant_sim import SimulatedQdrantServer
from tests.store_contract import BaseStoreContract

NS = ("memories", "u1")


@pytest.fixture
def emb():
    return KeywordEmbeddings(dims=64)


def points(client: QdrantClient, collection: str = "ltm_items") -> list[models.Record]:
    records, _ = client.scroll(collection, limit=10_000, with_payload=True, with_vectors=True)
    return records


# collection checks


def test_dimension_mismatch_is_a_clear_error():
    client = QdrantClient(":memory:")
    QdrantBackend(client, dims=64)
    with pytest.raises(EmbeddingDimensionError, match=r"holds 64-dimensional .* return 32"):
        QdrantBackend(client, dims=32)
    backend = QdrantBackend(client)  # size learned from the collection
    assert backend.dims == 64
    store = LongTermMemoryStore(backend, embeddings=KeywordEmbeddings(dims=32))
    with pytest.raises(EmbeddingDimensionError, match="embedding model changed"):
        store.put(NS, "k", {"text": "green tea"})
    with pytest.raises(EmbeddingDimensionError, match="embedding model changed"):
        store.search(NS, query="tea")


def test_incompatible_collections_say_what_to_change():
    client = QdrantClient(":memory:")
    client.create_collection("dot", models.VectorParams(size=8, distance=models.Distance.DOT))
    with pytest.raises(IncompatibleCollectionError, match="COSINE"):
        QdrantBackend(client, collection="dot")
    client.create_collection(
        "named", {"dense": models.VectorParams(size=8, distance=models.Distance.COSINE)}
    )
    with pytest.raises(IncompatibleCollectionError, match="vector_name"):
        QdrantBackend(client, collection="named")
    assert QdrantBackend(client, collection="named", vector_name="dense").dims == 8


def test_missing_collection_is_created_by_the_first_write_with_vectors(emb):
    client = QdrantClient(":memory:")
    store = LongTermMemoryStore(QdrantBackend(client), embeddings=emb)
    assert store.search(NS) == [] and store.list_namespaces() == []
    with pytest.raises(ValueError, match="pass dims="):
        store.put(NS, "plain", {"v": 1}, index=False)
    store.put(NS, "k", {"text": "green tea"})
    store.put(NS, "plain", {"v": 1}, index=False)
    assert client.get_collection("ltm_items").config.params.vectors.size == 64
    assert [h.key for h in store.search(NS, query="tea")] == ["k", "plain"]


def test_factory_learns_dims_from_embeddings_once(emb):
    backend = qdrant_backend(":memory:", embeddings=emb)
    assert backend.dims == 64 and emb.query_calls == 1
    with pytest.raises(TypeError, match="QdrantClient"):
        qdrant_backend(42)  # type: ignore[arg-type]


def test_unreachable_server_is_a_backend_error():
    with pytest.raises(BackendError, match="reachable"):
        qdrant_backend("http://127.0.0.1:9", dims=8, check_compatibility=False)


@pytest.mark.parametrize(
    "where",
    [
        "qdrant://my-qdrant-server:6333",
        "localhost:6333",
        "grpc://localhost:6334",
        "postgresql://u@h/db",
        "sqlite:///x.db",
    ],
)
def test_a_url_or_host_port_is_not_taken_for_a_folder(where, tmp_path, monkeypatch, emb):
    """``from_qdrant("qdrant://my-qdrant-server:6333", emb)`` opened an embedded store in a
    folder named "qdrant:" (``"localhost:6333"`` one named so) and remembered there, with no
    server anywhere; the CLI already refused ``qdrant://``. Refused, saying how to write a
    server and a folder; a folder of such a name is still reachable as ``./NAME``."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"a Qdrant server is http://HOST:6333.*folder path"):
        LongTermMemoryStore.from_qdrant(where, emb)
    assert list(tmp_path.iterdir()) == []
    if where == "localhost:6333":
        store = LongTermMemoryStore.from_qdrant(f"./{where}", emb)
        assert store.remember("u1", "likes tea").action == "created"
        store.close()
        assert (tmp_path / where / "meta.json").is_file()


@pytest.mark.parametrize("form", ["qdrant:mem", "chroma:mem", "faiss:mem", "sqlite:mem.db"])
def test_an_ltm_store_form_is_not_taken_for_a_folder(form, tmp_path, monkeypatch, emb):
    """``from_qdrant("qdrant:PATH")`` (``ltm --store``'s form) opened a new, empty store in a
    folder "./qdrant:PATH" beside the store it names: the memories looked lost. Refused,
    saying to pass the path alone; a folder so named that exists is still that folder."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"how `ltm --store` names a store.*path alone"):
        LongTermMemoryStore.from_qdrant(form, emb)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "qdrant:old").mkdir()  # a folder made so before: still opens
    LongTermMemoryStore.from_qdrant("qdrant:old", emb).close()


def test_a_windows_drive_path_is_a_folder_not_a_url(tmp_path, monkeypatch, emb):
    """``from_qdrant("D://qdrant")`` (a Windows drive) was refused as a URL of scheme "d"."""
    monkeypatch.chdir(tmp_path)  # on POSIX "D://qdrant" is ./D:/qdrant
    store = LongTermMemoryStore.from_qdrant("D://qdrant", emb)
    store.close()
    assert (tmp_path / "D:" / "qdrant" / "meta.json").is_file()


def test_a_folder_named_name_colon_digits_opens_in_every_form_that_names_it(
    tmp_path, monkeypatch, emb
):
    """A folder "backup:2024" could no longer be opened but by its absolute path: open_store
    passed ``str(Path("./backup:2024"))``, "backup:2024", to from_qdrant, which took it for a
    server's HOST:PORT; ``qdrant:backup:2024`` and ``./backup:2024`` (what both messages
    advised) were refused, after open_store had made the folder. ``qdrant:PATH``, ``./PATH``
    and a folder that exists are folders; a bare HOST:PORT naming none is still refused."""
    from langchain_ltm.defaults import open_store

    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "backup:2024"
    for url in ("qdrant:backup:2024", "./backup:2024", "qdrant:./backup:2024"):
        store, _ = open_store(url, embeddings=emb)
        store.remember("u1", "likes tea")
        store.close()
    assert (folder / "meta.json").is_file()
    for where in ("backup:2024", "./backup:2024", str(folder)):  # the folder exists now
        store = LongTermMemoryStore.from_qdrant(where, emb)
        assert [f.content for f in store.list_all("u1")] == ["likes tea"]
        store.close()
    store, _ = open_store("backup:2024", embeddings=emb)  # an existing folder: that folder
    assert [f.content for f in store.list_all("u1")] == ["likes tea"]
    store.close()
    for url in ("localhost:6333", "qdrant://localhost:6333"):
        with pytest.raises(ValueError, match=r"HOST:6333"):
            open_store(url, embeddings=emb)
        with pytest.raises(ValueError, match=r"http://HOST:6333"):
            LongTermMemoryStore.from_qdrant(url, emb)
    assert [p.name for p in tmp_path.iterdir()] == ["backup:2024"]  # nothing made for them


# layout


def test_one_point_per_text_deterministic_ids_and_stale_points_removed(emb):
    client = QdrantClient(":memory:")
    store = LongTermMemoryStore(QdrantBackend(client, dims=64), embeddings=emb, fields=["tags[*]"])
    store.put(NS, "k", {"tags": ["green tea", "mountain bike", "espresso"]})
    found = points(client)
    assert len(found) == 3
    assert sum(p.payload["head"] for p in found) == 1
    assert head_id(NS, "k") in {p.id for p in found}
    head = next(p for p in found if p.payload["head"])
    assert head.payload["user"] == "u1" and head.payload["indexed"] is True
    assert sorted(p.payload["page_content"] for p in found) == [
        "espresso",
        "green tea",
        "mountain bike",
    ]
    store.put(NS, "k", {"tags": ["green tea"]})
    assert len(points(client)) == 1
    store.put(NS, "k", {"tags": ["green tea"]}, index=False)
    (only,) = points(client)
    assert only.vector == {} and only.payload["indexed"] is False
    store.delete(NS, "k")
    assert points(client) == []


def test_concurrent_duplicates_from_separate_stores_are_one_point(emb):
    backend = qdrant_backend(":memory:", dims=64)
    # separate stores: separate per-user locks, like separate processes on one server
    stores = [LongTermMemoryStore(backend, embeddings=emb) for _ in range(10)]
    barrier = threading.Barrier(10)

    def remember(store: LongTermMemoryStore) -> None:
        barrier.wait()
        store.remember("u1", "I prefer answers in Spanish")

    threads = [threading.Thread(target=remember, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [f.content for f in stores[0].list_all("u1")] == ["I prefer answers in Spanish"]
    assert len(points(backend.client)) == 1


def test_backends_on_one_client_share_the_mirror(emb):
    client = QdrantClient(":memory:")
    first = LongTermMemoryStore(QdrantBackend(client, dims=64), embeddings=emb)
    second = LongTermMemoryStore(QdrantBackend(client, dims=64), embeddings=emb)
    first.remember("u1", "I like green tea")
    assert [f.content for f in second.recall("u1", "tea")] == ["I like green tea"]


# persistence and interop


@pytest.mark.parametrize("how", ["close", "aclose"])
def test_a_closed_embedded_store_refuses_every_call(tmp_path, emb, how):
    """A closed store answered reads from its mirror as the folder was at the close: after
    another store cleared and rewrote the folder, it still listed, recalled and got the
    deleted text; its writes failed blaming the server's reachability. Every call is
    refused, as SQLite and Postgres do; the new store holds what was written."""
    folder = tmp_path / "q"
    old = LongTermMemoryStore.from_qdrant(folder, emb)
    fact = old.remember("u1", "likes tea").fact
    if how == "close":
        old.close()
    else:
        asyncio.run(old.aclose())
    new = LongTermMemoryStore.from_qdrant(folder, emb)  # the folder is free again
    new.clear_user("u1")
    new.remember("u1", "likes coffee")
    calls = [
        lambda: old.list_all("u1"),
        lambda: old.recall("u1", "tea"),
        lambda: old.get(old.user_namespace("u1"), fact.id),
        lambda: old.search(("memories",)),
        lambda: old.remember("u1", "likes cocoa"),
        lambda: old.forget("u1", fact.id),
        lambda: asyncio.run(old.arecall("u1", "tea")),
        lambda: asyncio.run(old.aremember("u1", "likes cocoa")),
        lambda: old.backend.reload(),
    ]
    for call in calls:
        with pytest.raises(BackendError, match=r"This Qdrant store \(.*\) was closed"):
            call()
    assert [f.content for f in new.list_all("u1")] == ["likes coffee"]
    new.close()


def test_a_folder_keeps_everything_across_reopening(tmp_path, emb):
    backend = qdrant_backend(tmp_path / "db", dims=64)
    store = LongTermMemoryStore(backend, embeddings=emb)
    fact = store.remember("alice@example.com", "I like green tea").fact
    store.put(NS, "plain", {"text": "not embedded"}, index=False)
    store.put(("docs",), "many", {"tags": ["kayak river", "green tea"]}, index=["tags[*]"])
    before = store.search((), query="green tea", limit=10)
    backend.close()

    reopened = qdrant_backend(tmp_path / "db")
    again = LongTermMemoryStore(reopened, embeddings=emb)
    assert reopened.dims == 64
    assert [(h.key, h.score) for h in again.search((), query="green tea", limit=10)] == [
        (h.key, pytest.approx(h.score)) for h in before
    ]
    assert again.list_all("alice@example.com")[0].created_at == fact.created_at
    assert again.list_namespaces() == sorted(
        [("docs",), NS, again.user_namespace("alice@example.com")]
    )
    assert again.remember("alice@example.com", "i like GREEN tea.").action == "duplicate"
    reopened.close()


def test_query_vectorstore_reads_what_we_wrote(emb):
    client = QdrantClient(":memory:")
    backend = QdrantBackend(client, dims=64)
    store = LongTermMemoryStore(backend, embeddings=emb)
    store.remember("u1", ["I like green tea", "my bike is red"])
    store.put(NS, "plain", {"text": "green tea"}, index=False)
    vectorstore = QdrantVectorStore(client, "ltm_items", emb)
    docs = vectorstore.similarity_search("green tea", k=5)
    assert [d.page_content for d in docs] == ["I like green tea", "my bike is red"]
    assert docs[0].metadata["namespace"] == list(store.user_namespace("u1"))
    assert docs[0].metadata["path"] == "content"
    scoped = models.Filter(
        must=[models.FieldCondition(key="user", match=models.MatchValue(value="nobody"))]
    )
    assert vectorstore.similarity_search("green tea", filter=scoped) == []
    # points another writer adds are not items: our searches skip them
    vectorstore.add_texts(["green tea from elsewhere"])
    assert [f.content for f in store.recall("u1", "green tea", limit=5)] == [
        "I like green tea",
        "my bike is red",
    ]
    assert backend.as_vectorstore(emb).similarity_search("red bike", k=1)[0].page_content == (
        "my bike is red"
    )


def test_store_over_a_query_vectorstore(emb):
    client = QdrantClient(":memory:")
    vectorstore = QdrantVectorStore.construct_instance(
        emb, client_options={"location": ":memory:"}, collection_name="vs"
    )
    del client
    store = LongTermMemoryStore(
        QdrantBackend.from_vectorstore(vectorstore), embeddings=vectorstore.embeddings
    )
    store.remember("u1", "I like green tea")
    assert vectorstore.similarity_search("green tea", k=1)[0].page_content == "I like green tea"


# filter pushdown: Qdrant must select a superset of what the exact predicate keeps

VALUES = [
    {"n": 1},
    {"n": 1.0},
    {"n": 2.5},
    {"n": True},
    {"n": "1"},
    {"n": None},
    {"n": []},
    {"n": [1, 2]},
    {"n": {"x": 1}},
    {"m": 1},
    {"s": "a"},
    {"s": ["a", "b"]},
    {"s": "b"},
    {"meta": {"lang": "en", "v": 1}},
    {"meta": [{"lang": "en"}]},
    {"k.dot": 1},
    {"content": "fact", "content_hash": "h1"},
    {"content": None},
    {"content": []},
]
FILTERS = [
    {"n": 1},
    {"n": 1.0},
    {"n": True},
    {"n": None},
    {"n": "1"},
    {"n": [1, 2]},
    {"n": {"$ne": 1}},
    {"n": {"$gt": 1}},
    {"n": {"$gte": 1, "$lt": 3}},
    {"n": {"$lte": 2**60}},
    {"s": "a"},
    {"s": {"$gt": "a"}},
    {"meta": {"lang": "en"}},
    {"meta": {"$eq": {"lang": "en", "v": 1}}},
    {"k.dot": 1},
]
INTERNAL = [
    ((("content_hash",), "$in", ["h1", "h2"]),),
    ((("n",), "$in", [1, "1", None]),),
    ((("content",), "$exists", True),),
    ((("content",), "$exists", False),),
]


def _conditions():
    from langchain_ltm._filters import Condition

    yield from (compile_filter(f) for f in FILTERS)
    for spec in INTERNAL:
        yield tuple(Condition(path, op, operand) for path, op, operand in spec)


@pytest.mark.parametrize("conditions", list(_conditions()), ids=str)
def test_pushdown_selects_a_superset(conditions):
    client = QdrantClient(":memory:")
    client.create_collection("t", models.VectorParams(size=2, distance=models.Distance.COSINE))
    client.upsert(
        "t",
        [
            models.PointStruct(id=i, vector=[1.0, 0.0], payload={"value": v})
            for i, v in enumerate(VALUES)
        ],
    )
    records, _ = client.scroll("t", models.Filter(must=translate(conditions)), limit=100)
    selected = {r.id for r in records}
    wanted = {i for i, v in enumerate(VALUES) if matches(v, conditions)}
    lossy_exists = {i for i, v in enumerate(VALUES) if v.get("content") == []}
    assert wanted - lossy_exists <= selected
    if conditions[0].op == "$in" or conditions == compile_filter({"n": {"$gt": 1}}):
        assert len(selected) < len(VALUES)  # pushed down, not dropped


def test_translation_shapes():
    (cond,) = translate(compile_filter({"kind": "fruit"}))
    assert cond == models.FieldCondition(key="value.kind", match=models.MatchValue(value="fruit"))
    (cond,) = translate(compile_filter({"n": {"$gt": 3}}))
    assert cond.range == models.Range(gt=3.0)
    assert translate(compile_filter({"n": {"$ne": 3}, "a-b": 1, "s": {"$lt": "x"}})) == []


# the async plumbing (AsyncQdrantClient on a server), driven here over local mode


class _AsyncOverSync:
    """An AsyncQdrantClient look-alike that runs the sync client's methods.

    A server takes concurrent requests; local mode behind it is not thread-safe, so the
    calls take turns on the lock the backend's sync path holds for this client.
    """

    def __init__(self, client: QdrantClient) -> None:
        self._client = client
        self._lock = local_lock_for(client)

    def __getattr__(self, name):
        method = getattr(self._client, name)

        async def call(**kwargs):
            await asyncio.sleep(0)
            with self._lock:
                return method(**kwargs)

        return call


class TestQdrantAsyncDriverContract(BaseStoreContract):
    @pytest.fixture
    def store_factory(self):
        def make(fields: list[str] | None = None, ttl: TTLConfig | None = None):
            client = QdrantClient(":memory:")
            backend = QdrantBackend(client, dims=64, mirror=False, aclient=_AsyncOverSync(client))
            backend.local = False  # take the server's async path
            return LongTermMemoryStore(
                backend, embeddings=KeywordEmbeddings(64), fields=fields, ttl=ttl
            )

        return make


def test_scores_are_exact_cosines(emb):
    store = LongTermMemoryStore(qdrant_backend(":memory:", dims=64), embeddings=emb)
    store.put(NS, "k", {"text": "green tea"})
    query = np.asarray(emb.embed_query("tea"), dtype=np.float32)
    doc = np.asarray(emb.embed_documents(['{"text": "green tea"}'])[0], dtype=np.float32)
    assert store.search(NS, query="tea")[0].score == pytest.approx(float(query @ doc), abs=1e-6)


# ---- writes that fail half way, odd paths, repeated keys (found by a bug hunt) ------------


class _FailOnce:
    """Wraps a client method: the first call raises ``OSError`` (a full disk, say)."""

    def __init__(self, method):
        self.method, self.failed = method, False

    def __call__(self, *args, **kwargs):
        if not self.failed:
            self.failed = True
            raise OSError("No space left on device")
        return self.method(*args, **kwargs)


def _keys_points(client: QdrantClient, key: str) -> list[str]:
    return sorted(
        str(p.payload.get("page_content")) for p in points(client) if p.payload.get("key") == key
    )


@pytest.mark.parametrize("mode", ["embedded", "server plans"])
def test_a_write_that_failed_half_way_leaves_no_text_after_a_delete(emb, tmp_path, mode):
    """The upsert landed, the delete of the old texts did not: those points were named by
    no head any more, and deleting the item (``forget``) left "my secret diagnosis" in the
    collection, found by a search on a server."""
    import dataclasses

    backend = qdrant_backend(tmp_path / "q", dims=64, mirror=mode == "embedded")
    if mode == "server plans":  # the server's write plan, run on the embedded engine
        backend.layout = dataclasses.replace(backend.layout, server=True)
    store = LongTermMemoryStore(backend, embeddings=emb, fields=["text", "tags[*]"])
    store.put(NS, "k", {"text": "note", "tags": ["my secret diagnosis", "hot"]})
    backend.client.delete = _FailOnce(backend.client.delete)
    if mode == "embedded":
        with pytest.raises(BackendError):
            store.put(NS, "k", {"text": "note", "tags": []})
        # the mirror shows what the collection holds after the half write
        assert store.get(NS, "k").value == {"text": "note", "tags": []}
        assert "my secret diagnosis" in _keys_points(backend.client, "k")
    else:  # the server plan sweeps by key: the failing call is that sweep
        with pytest.raises(BackendError):
            store.put(NS, "k", {"text": "note", "tags": []})
    store.delete(NS, "k")
    assert _keys_points(backend.client, "k") == []
    assert store.search(NS, query="secret diagnosis") == []
    store.close()


def test_a_field_named_empty_keeps_its_item_after_reopening(emb, tmp_path):
    """A second text under the path "" got the head point's id and overwrote it: the item
    was gone once the folder was opened again."""
    folder = tmp_path / "q"
    store = LongTermMemoryStore(qdrant_backend(folder, dims=64), embeddings=emb)
    value = {"text": "green tea", "": "water"}
    store.put(NS, "k", value, index=["text", ""])
    store.close()
    again = LongTermMemoryStore(qdrant_backend(folder, dims=64), embeddings=emb)
    assert again.get(NS, "k").value == value
    assert sorted(again.backend.indexed_paths([(NS, "k")])[0]) == ["", "text"]
    assert [i.key for i in again.search(NS, query="water")] == ["k"]
    again.delete(NS, "k")
    assert points(again.backend.client) == []
    again.close()


def test_reload_of_a_backend_opened_before_its_collection_keeps_the_shared_mirror(emb):
    client = QdrantClient(":memory:")
    early = QdrantBackend(client)  # no collection yet
    store = LongTermMemoryStore(QdrantBackend(client, dims=64), embeddings=emb)
    store.remember("alice", "alice lives in paris")
    early.reload()
    assert [f.content for f in store.list_all("alice")] == ["alice lives in paris"]
    assert store.remember("alice", "alice lives in paris").action == "duplicate"


def test_a_write_naming_one_key_twice_applies_it_as_the_other_engines_do(emb):
    from datetime import datetime, timezone

    from langchain_ltm.backends.base import Record

    backend = QdrantBackend(QdrantClient(":memory:"), dims=4)
    now = datetime.now(timezone.utc)
    vectors = np.eye(4, dtype=np.float32)
    three = Record(NS, "k", {"n": 3}, ("a", "b", "c"), ("x", "y", "z"), vectors[:3], now)
    one = Record(NS, "k", {"n": 1}, ("a",), ("x",), vectors[:1], now)
    backend.write([three, one], [])  # the last upsert wins
    assert backend.get([(NS, "k")])[0].value == {"n": 1}
    assert len(points(backend.client)) == 1
    backend.write([], [(NS, "k")])
    assert points(backend.client) == []
    backend.write([three], [(NS, "k")])  # a delete beats an upsert of its key
    assert backend.get([(NS, "k")]) == [None] and points(backend.client) == []


def test_two_stores_over_one_embedded_client_take_turns_per_user(emb):
    """``from_qdrant(client)`` twice: each store serialized only its own calls, so an
    update running between another's read and write was overwritten ("rome" was lost)."""
    client = QdrantClient(":memory:")
    a = LongTermMemoryStore(QdrantBackend(client, dims=64), embeddings=emb)
    b = LongTermMemoryStore(QdrantBackend(client, dims=64), embeddings=emb)
    _check_updates_take_turns(a, b)


def _check_updates_take_turns(a: LongTermMemoryStore, b: LongTermMemoryStore) -> None:
    """B's update_fact of alice's fact while A is between its read and its write: both
    texts are kept (B waited for A's user lock), none overwritten."""
    fact = a.remember("alice", "alice lives in paris").fact
    assert fact is not None
    b_finished = threading.Event()
    real_get = a.backend.get

    def slow_get(keys):  # A reads, then waits a little before deciding and writing
        found = real_get(keys)
        b_finished.wait(1.0)
        return found

    a.backend.get = slow_get
    first = threading.Thread(
        target=lambda: a.update_fact("alice", fact.id, "alice lives in berlin")
    )
    first.start()
    time.sleep(0.2)  # A holds the user's lock now
    b.update_fact("alice", fact.id, "alice lives in rome")
    b_finished.set()
    first.join(10)
    a.backend.get = real_get
    (current,) = a.list_all("alice")
    texts = {current.content, *(v.content for v in current.history)}
    assert texts == {"alice lives in paris", "alice lives in berlin", "alice lives in rome"}


def test_two_stores_over_one_server_take_turns_per_user(emb):
    """``from_qdrant(url)`` twice in one process: the lock domain was keyed by the client
    object, so each store took only its own user lock, and an ``update_fact`` running
    between the other's read and write was overwritten ("rome" was lost, not a version)."""
    server = SimulatedQdrantServer()
    a = LongTermMemoryStore(QdrantBackend(server.client(), dims=64), embeddings=emb)
    b = LongTermMemoryStore(QdrantBackend(server.client(), dims=64), embeddings=emb)
    assert a.backend.capabilities.extra["mode"] == "server"
    _check_updates_take_turns(a, b)


def test_the_lock_domain_of_a_server_is_its_address_and_collection():
    """Clients of one server share a domain however they were made (a URL twice, the sync
    client ``qdrant_backend`` builds from one ``AsyncQdrantClient``, host and port); another
    port, prefix or collection is another domain; embedded clients keep one each."""

    def domain(collection="c", **options):
        return domain_for(QdrantClient(check_compatibility=False, **options), collection)

    url = "http://qdrant.test:6333"
    aclient = AsyncQdrantClient(url=url, check_compatibility=False)
    first = domain(url=url)
    assert domain(url=url) is first
    assert domain_for(QdrantClient(**aclient.init_options), "c") is first
    assert domain(host="qdrant.test", port=6333) is first
    assert domain(location="http://qdrant.test") is first  # 6333 is the default port
    assert domain(url="http://qdrant.test:7333") is not first
    assert domain(url=url, prefix="other") is not first
    assert domain("d", url=url) is not first
    assert domain(location=":memory:") is not domain(location=":memory:")


@pytest.mark.parametrize("how", ["aclose", "close", "close on the loop"])
def test_closing_a_server_store_closes_the_async_client_it_built(emb, how):
    """The async twins build an ``AsyncQdrantClient``; close() and aclose() called its
    ``close()`` without awaiting it: its connections stayed open and Python warned
    "coroutine 'AsyncQdrantClient.close' was never awaited". A client passed in stays open."""
    server = SimulatedQdrantServer(url="http://127.0.0.1:1")  # the built client finds no one
    mine = server.aclient()
    store = LongTermMemoryStore(QdrantBackend(server.client(), dims=64), embeddings=emb)
    theirs = LongTermMemoryStore(
        QdrantBackend(server.client(), dims=64, aclient=mine), embeddings=emb
    )

    async def main():
        with pytest.raises(BackendError):
            await store.aget(NS, "k")  # builds the async client; the request fails
        await theirs.aget(NS, "k")
        if how == "aclose":
            await store.aclose()
            await theirs.aclose()
        elif how == "close on the loop":
            store.close()
            theirs.close()
            await asyncio.sleep(0.05)  # the closing runs as a task of this loop

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(main())
        built = store.backend._aclient
        if how == "close":
            store.close()
            theirs.close()
        gc.collect()
    assert built is not None and built._client.closed
    assert not mine._client.closed
    assert not [w for w in caught if "never awaited" in str(w.message)]


def _upsert_bodies(records: list[Record]) -> list[tuple[int, int]]:
    """(points, JSON bytes) of each upsert request the server write plan sends."""
    plan = plan_write(Layout("c", "", 2, server=True), records, [])
    sent, answer = [], None
    with contextlib.suppress(StopIteration):
        while True:
            step = plan.send(answer)
            if step.method == "upsert":  # the body the REST client sends
                body = models.PointsList(points=step.kwargs["points"]).model_dump_json(
                    exclude_none=True
                )
                sent.append((len(step.kwargs["points"]), len(body)))
            answer = [] if step.method == "retrieve" else None  # nothing stored yet
    return sent


@pytest.mark.parametrize(("dims", "count"), [(1536, 1200), (3072, 600), (16, 2100)])
def test_upserts_stay_under_the_servers_request_size_limit(dims, count):
    """Upserts were cut at 2,048 points whatever their size: 1,200 points of 1536 floats
    (OpenAI's small embeddings) were one 37.9 MiB request, which a server refuses (its
    default limit is 32 MiB) and nothing of it was written."""
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((count, dims)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    now = datetime.now(timezone.utc)
    records = [
        Record(
            NS,
            f"k{i}",
            {"content": f"fact {i}"},
            (f"fact {i}",),
            ("content",),
            vectors[i : i + 1],
            now,
        )
        for i in range(count)
    ]
    sent = _upsert_bodies(records)
    assert sum(points for points, _ in sent) == count
    assert all(points <= 2048 for points, _ in sent)
    assert all(size <= 24 * 2**20 for _, size in sent), [size / 2**20 for _, size in sent]
    if dims > 1000:  # cut by size, not by count: at most one request more than needed
        assert len(sent) == 2


@pytest.mark.parametrize("two_stores", [False, True])
def test_two_puts_of_one_item_on_a_server_keep_every_text_of_the_last(emb, two_stores):
    """A server rewrite deletes the item's points it did not write (found by key). B's
    delete ran after A's whole put and took A's second text's point: the stored item was
    A's, but a search for that text missed it. Writes of one item now take turns."""
    server = SimulatedQdrantServer()
    store = LongTermMemoryStore(QdrantBackend(server.client(), dims=64), embeddings=emb)
    other = (
        LongTermMemoryStore(QdrantBackend(server.client(), dims=64), embeddings=emb)
        if two_stores
        else store
    )
    ns = ("docs", "alice")
    store.put(ns, "note", {"title": "old title", "body": "old body"}, index=["title"])
    a_done = threading.Event()
    real_call = server.call

    def call(method, kwargs):
        name = threading.current_thread().name
        if name == "B" and method == "delete":
            a_done.wait(1.0)  # B's sweep by key is sent after A's put (when A can run)
        answer = real_call(method, kwargs)
        if name == "B" and method == "upsert":
            a.start()  # A starts once B's points are written
        return answer

    def put_a():
        other.put(
            ns, "note", {"title": "A title", "body": "penguins swim"}, index=["title", "body"]
        )
        a_done.set()

    server.call = call
    a = threading.Thread(target=put_a, name="A")
    b = threading.Thread(
        target=lambda: store.put(ns, "note", {"title": "B title", "body": "B"}, index=["title"]),
        name="B",
    )
    b.start()
    b.join(10)
    a.join(10)
    server.call = real_call
    assert store.get(ns, "note").value["title"] == "A title"
    hits = store.search(ns, query="penguins swim", limit=1)
    assert [h.key for h in hits] == ["note"] and hits[0].score == pytest.approx(1.0, abs=1e-6)


def test_a_sync_write_on_the_loop_of_a_task_writing_the_item_is_refused_not_hung(emb):
    """A server write of an item holds the item's key stripe; a sync write of it made on
    the thread of the loop whose task holds it could never get it (the holder runs on the
    loop it blocks): it waited forever. It is refused, as UserLocks refuses the same case."""
    server = SimulatedQdrantServer()
    backend = QdrantBackend(server.client(), dims=64)
    store = LongTermMemoryStore(backend, embeddings=emb)
    ns = ("docs", "alice")
    store.put(ns, "note", {"title": "first"})
    (stripe,) = backend.lock_domain.stripes_of([(ns, "note")])
    holders = backend.lock_domain.holders

    async def main() -> None:
        await holders.atake(stripe)  # what an awrite of the item holds while it runs
        try:
            with pytest.raises(RuntimeError, match="would wait forever"):
                store.put(ns, "note", {"title": "second"})
        finally:
            holders.release(stripe)

    asyncio.run(main())
    assert store.get(ns, "note").value == {"title": "first"}  # the refused put wrote nothing
    store.put(ns, "note", {"title": "second"})  # off the loop it takes its turn as before
    assert store.get(ns, "note").value == {"title": "second"}


def test_an_unreachable_server_is_a_backend_error_when_dims_are_learnt():
    """With ``embeddings`` and no ``dims``, the first call (does the collection exist?) raised
    qdrant-client's own exception; with ``dims`` it was a ``BackendError`` already."""
    with pytest.raises(BackendError, match="reachable"):
        qdrant_backend("http://127.0.0.1:1", timeout=2, embeddings=KeywordEmbeddings(8))


@pytest.mark.parametrize("count", [30, 50])
def test_server_plans_page_over_tied_scores_showing_every_item_once(count):
    """The server's plans kept Qdrant's order among equal scores, which changed with the
    window a page asked for: paging one item at a time repeated one and skipped another."""
    store = LongTermMemoryStore(
        qdrant_backend(":memory:", dims=16, mirror=False), embeddings=KeywordEmbeddings(dims=16)
    )
    ns = ("docs", "alice")
    for i in range(count):
        store.put(ns, f"k{i:02d}", {"text": "same words"})
    paged = [
        item.key
        for offset in range(count)
        for item in store.search(ns, query="same words", limit=1, offset=offset)
    ]
    assert sorted(paged) == [f"k{i:02d}" for i in range(count)]


def _refresh_racing(monkeypatch, emb, interleave):
    """A reader's refresh on read, with ``interleave(writer)`` run between its read of the
    item and its refresh of the points (another thread or process writing meanwhile)."""
    from langchain_ltm import _clock

    now = [_clock.utcnow()]
    monkeypatch.setattr(_clock, "utcnow", lambda: now[0])
    client = QdrantClient(":memory:")
    backend = QdrantBackend(client, dims=64, mirror=False)  # the server code path
    reader = LongTermMemoryStore(backend, embeddings=emb)
    writer = LongTermMemoryStore(backend, embeddings=emb)
    ns = ("sessions", "alice")
    reader.put(ns, "cart", {"text": "tea", "note": "for two"}, ttl=10, index=["text", "note"])
    real = client.batch_update_points
    fired = []

    def between(*args, **kwargs):  # the refresh's only write: its read is done
        if not fired:
            fired.append(True)
            interleave(writer, ns)
        return real(*args, **kwargs)

    monkeypatch.setattr(client, "batch_update_points", between)
    now[0] += timedelta(minutes=1)
    seen = reader.get(ns, "cart")
    monkeypatch.setattr(client, "batch_update_points", real)
    assert fired
    return reader, backend, ns, seen, now


def test_a_refresh_on_read_keeps_a_rewrite_landing_meanwhile(monkeypatch, emb):
    """The refresh set the old expiry on the points by id: a ``put(..., ttl=None)`` landing
    between its read and its write got that expiry back, and the sweep deleted it."""
    reader, backend, ns, seen, now = _refresh_racing(
        monkeypatch,
        emb,
        lambda writer, ns: writer.put(
            ns, "cart", {"text": "tea and scones", "note": "x"}, ttl=None, index=["text", "note"]
        ),
    )
    assert seen is not None and seen.value["text"] == "tea"
    stored = backend.get([(ns, "cart")])[0]
    assert stored is not None and stored.expires_at is None and stored.ttl_minutes is None
    assert {p.payload.get("expires_at_us") for p in points(backend.client)} == {None}
    now[0] += timedelta(hours=1)
    assert reader.sweep_ttl() == 0
    assert reader.get(ns, "cart").value["text"] == "tea and scones"


def test_a_refresh_on_read_of_an_item_deleted_meanwhile_refreshes_nothing(monkeypatch, emb):
    """An id list naming a point deleted meanwhile failed the whole refresh: the reader's get
    raised a BackendError blaming reachability or the API key."""
    _, backend, ns, seen, _ = _refresh_racing(
        monkeypatch, emb, lambda writer, ns: writer.delete(ns, "cart")
    )
    assert seen is not None and seen.value["text"] == "tea"
    assert backend.get([(ns, "cart")]) == [None]
    assert points(backend.client) == []


def test_a_refresh_on_read_on_the_server_path_moves_every_point(monkeypatch, emb):
    from langchain_ltm import _clock

    now = [_clock.utcnow()]
    monkeypatch.setattr(_clock, "utcnow", lambda: now[0])
    backend = QdrantBackend(QdrantClient(":memory:"), dims=64, mirror=False)
    store = LongTermMemoryStore(backend, embeddings=emb)
    store.put(NS, "k", {"text": "tea", "note": "for two"}, ttl=10, index=["text", "note"])
    now[0] += timedelta(minutes=5)
    assert store.get(NS, "k") is not None
    expected = to_us(now[0] + timedelta(minutes=10))
    assert [p.payload["expires_at_us"] for p in points(backend.client)] == [expected] * 2
