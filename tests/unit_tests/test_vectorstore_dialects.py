"""The cloud stores' dialects, checked against what each integration package emits.

Pinecone, Weaviate, Elasticsearch and MongoDB Atlas cannot run here. Each store object is
built offline from its own package (no connection is opened: sockets are blocked in unit
tests), our scope filter goes through the package's own search call or query builder, and
the test asserts on the request the package would send: the scope inside the engine's
filter, never applied afterwards. A package that is not installed skips its tests.
"""

from __future__ import annotations

import math

import pytest
from langgraph.store.base import PutOp

from langchain_ltm import LongTermMemoryStore, UnsupportedVectorStoreError
from langchain_ltm._filters import compile_filter
from langchain_ltm.backends.base import SearchRequest
from langchain_ltm.backends.vectorstore import DISTANCES, VectorStoreBackend
from langchain_ltm.backends.vectorstore.family import family_for, registered
from tests.fakes import KeywordEmbeddings

DIMS = 8
SCOPE = {"ltm_store": "s1", "ltm_n0": "memories", "ltm_n1": "alice"}
VECTOR = [1.0] + [0.0] * (DIMS - 1)


def _cos_to(kind: str, cos: float) -> float:
    """What an engine of each convention reports for two unit vectors at cosine ``cos``."""
    d2 = 2.0 - 2.0 * cos  # squared Euclidean distance
    return {
        "cosine": 1.0 - cos,
        "l2": d2,
        "euclidean": math.sqrt(d2),
        "ip": cos,
        "similarity": cos,
        "negative_ip": -cos,
        "shifted_cosine": (1.0 + cos) / 2.0,  # Elasticsearch and Atlas, as they document
        "inverse_squared_l2": 1.0 / (1.0 + d2),  # Elasticsearch l2_norm
        "inverse_l2": 1.0 / (1.0 + math.sqrt(d2)),  # Atlas euclidean
    }[kind]


@pytest.mark.parametrize("kind", sorted(DISTANCES))
@pytest.mark.parametrize("cos", [1.0, 0.8, 0.1, -0.5])
def test_every_convention_turns_back_into_the_cosine(kind, cos):
    assert DISTANCES[kind](_cos_to(kind, cos)) == pytest.approx(cos, abs=1e-9)


# ---- Pinecone -----------------------------------------------------------------------


def _pinecone(metric: str = "COSINE"):
    pytest.importorskip("langchain_pinecone")
    from langchain_pinecone import PineconeVectorStore
    from langchain_pinecone._utilities import DistanceStrategy
    from pinecone import Pinecone

    index = Pinecone(api_key="offline").Index(host="https://offline.invalid")
    return PineconeVectorStore(
        index=index,
        embedding=KeywordEmbeddings(DIMS),
        text_key="text",
        namespace="ns",
        distance_strategy=DistanceStrategy[metric],
    )


def test_pinecone_sends_the_scope_as_its_metadata_filter(monkeypatch):
    from pinecone.core.openapi.db_data.models import QueryResponse

    from langchain_ltm.backends.vectorstore.dialects import pinecone as dialect

    vs = _pinecone()
    sent = []

    def query_vectors(request, **kwargs):
        sent.append(request)
        return QueryResponse(matches=[], namespace="ns")

    monkeypatch.setattr(vs.index._vector_api, "query_vectors", query_vectors)
    where = registered(vs).filter_builder(SCOPE)
    assert dialect.search(vs, VECTOR, 7, where) == []
    (request,) = sent
    assert request.filter == {
        "$and": [
            {"ltm_store": {"$eq": "s1"}},
            {"ltm_n0": {"$eq": "memories"}},
            {"ltm_n1": {"$eq": "alice"}},
        ]
    }
    assert request.top_k == 7 and request.vector == VECTOR and request.namespace == "ns"
    assert dialect.where({"ltm_store": "s1"}) == {"ltm_store": {"$eq": "s1"}}


def test_pinecone_upserts_our_vectors_with_the_text_in_its_text_key(monkeypatch):
    from pinecone.core.openapi.db_data.models import UpsertResponse

    vs = _pinecone()
    sent = []

    def upsert_vectors(request, **kwargs):
        sent.append(request)
        return UpsertResponse(upserted_count=len(request.vectors))

    monkeypatch.setattr(vs.index._vector_api, "upsert_vectors", upsert_vectors)
    registered(vs).add(vs, ["id1"], ["likes tea"], [VECTOR], [{"ltm_n1": "alice"}])
    (request,) = sent
    (vector,) = request.vectors
    assert vector.id == "id1" and vector.values == VECTOR
    assert vector.metadata == {"ltm_n1": "alice", "text": "likes tea"}
    assert request.namespace == "ns"
    # a large write goes out in requests of at most 100 records (Pinecone's limit is 1,000)
    sent.clear()
    ids = [f"id{i}" for i in range(250)]
    registered(vs).add(vs, ids, ["t"] * 250, [VECTOR] * 250, [{"ltm_n1": "alice"}] * 250)
    assert [len(r.vectors) for r in sent] == [100, 100, 50]
    assert [v.id for r in sent for v in r.vectors] == ids


@pytest.mark.parametrize(
    ("metric", "kind"),
    [("COSINE", "similarity"), ("MAX_INNER_PRODUCT", "ip"), ("EUCLIDEAN_DISTANCE", "l2")],
)
def test_pinecone_score_follows_its_metric(metric, kind):
    vs = _pinecone(metric)
    assert registered(vs).distance(vs) == kind


def test_pinecone_reads_documents_back_with_fetch(monkeypatch):
    from pinecone.core.openapi.db_data.models import FetchResponse, Vector

    vs = _pinecone()
    asked = []

    def fetch_vectors(ids, **kwargs):
        asked.append((ids, kwargs.get("namespace")))
        found = Vector(id="id1", values=VECTOR, metadata={"text": "likes tea", "ltm_n1": "a"})
        return FetchResponse(vectors={"id1": found}, namespace="ns")

    monkeypatch.setattr(vs.index._vector_api, "fetch_vectors", fetch_vectors)
    family = family_for(vs)  # no get_by_ids needed: the family reads through fetch
    (doc,) = family.documents(vs, ["id1", "gone"])
    assert asked == [(["id1", "gone"], "ns")]
    assert (doc.id, doc.page_content, doc.metadata) == ("id1", "likes tea", {"ltm_n1": "a"})


def test_pinecone_through_our_engine_sends_each_user_scope(monkeypatch, tmp_path):
    from pinecone.core.openapi.db_data.models import QueryResponse, UpsertResponse

    vs = _pinecone()
    upserts, queries = [], []

    def upsert_vectors(request, **kwargs):
        upserts.append(request)
        return UpsertResponse(upserted_count=len(request.vectors))

    def query_vectors(request, **kwargs):
        queries.append(request)
        return QueryResponse(matches=[], namespace="ns")

    monkeypatch.setattr(vs.index._vector_api, "upsert_vectors", upsert_vectors)
    monkeypatch.setattr(vs.index._vector_api, "query_vectors", query_vectors)
    emb = KeywordEmbeddings(DIMS)
    backend = VectorStoreBackend(vs, catalog=tmp_path / "c.db")
    store = LongTermMemoryStore(backend, embeddings=emb)
    assert store.remember("alice", "likes green tea").action == "created"
    (written,) = upserts[-1].vectors
    assert written.values == pytest.approx(emb.embed_documents(["likes green tea"])[0])
    assert written.metadata["ltm_n1"] == "alice" and written.metadata["text"] == "likes green tea"
    assert store.recall("bob", "tea") == []  # nothing comes back from the recorder
    assert queries[-1].filter == {
        "$and": [
            {"ltm_store": {"$eq": backend.catalog.store_id}},
            {"ltm_n0": {"$eq": "memories"}},
            {"ltm_n1": {"$eq": "bob"}},
        ]
    }
    store.close()


# ---- Elasticsearch ------------------------------------------------------------------


def _elasticsearch(distance: str = "COSINE", **strategy):
    pytest.importorskip("langchain_elasticsearch")
    from elasticsearch import Elasticsearch
    from langchain_elasticsearch import DenseVectorStrategy, ElasticsearchStore
    from langchain_elasticsearch._utilities import DistanceStrategy

    return ElasticsearchStore(
        "memories",
        embedding=KeywordEmbeddings(DIMS),
        client=Elasticsearch("http://offline.invalid:9200"),
        strategy=DenseVectorStrategy(distance=DistanceStrategy[distance], **strategy),
    )


def test_elasticsearch_puts_the_scope_inside_the_knn_filter(monkeypatch):
    vs = _elasticsearch()
    sent = []

    def search(**body):
        sent.append(body)
        return {"hits": {"hits": [{"_id": "d1", "_score": 0.9, "_source": {
            "text": "likes tea", "metadata": {"ltm_n1": "alice"}}}]}}  # fmt: skip

    monkeypatch.setattr(vs._store.client, "search", search)
    family = registered(vs)
    hits = family.search(vs, VECTOR, 80, family.filter_builder(SCOPE))
    (body,) = sent
    knn = body["knn"]
    assert knn["filter"] == [
        {"term": {"metadata.ltm_store.keyword": "s1"}},
        {"term": {"metadata.ltm_n0.keyword": "memories"}},
        {"term": {"metadata.ltm_n1.keyword": "alice"}},
    ]  # in the kNN section: applied during the approximate search, not after it
    assert "query" not in body and "post_filter" not in body
    assert knn["k"] == 80 and knn["num_candidates"] >= 80 and knn["query_vector"] == VECTOR
    assert [(d.id, d.page_content, s) for d, s in hits] == [("d1", "likes tea", 0.9)]


def test_elasticsearch_with_an_explicit_keyword_mapping():
    from langchain_ltm.backends.vectorstore.dialects.elasticsearch import where_for

    assert where_for("")({"ltm_n1": "alice"}) == [{"term": {"metadata.ltm_n1": "alice"}}]


@pytest.mark.parametrize(
    ("distance", "kind"),
    [
        ("COSINE", "shifted_cosine"),
        ("DOT_PRODUCT", "shifted_cosine"),
        ("EUCLIDEAN_DISTANCE", "inverse_squared_l2"),
    ],
)
def test_elasticsearch_score_follows_its_similarity(distance, kind):
    vs = _elasticsearch(distance)
    assert registered(vs).distance(vs) == kind


def test_elasticsearch_hybrid_is_refused():
    vs = _elasticsearch(hybrid=True)
    with pytest.raises(UnsupportedVectorStoreError, match="hybrid"):
        registered(vs).converter(vs)


def test_elasticsearch_reads_documents_back_with_mget(monkeypatch):
    vs = _elasticsearch()
    asked = []

    def mget(index, ids, **kwargs):
        asked.append((index, ids))
        return {"docs": [
            {"_id": "a", "found": True, "_source": {"text": "likes tea", "metadata": {"k": 1}}},
            {"_id": "b", "found": False},
        ]}  # fmt: skip

    monkeypatch.setattr(vs._store.client, "mget", mget)
    (doc,) = family_for(vs).documents(vs, ["a", "b"])
    assert asked == [("memories", ["a", "b"])]
    assert (doc.id, doc.page_content, doc.metadata) == ("a", "likes tea", {"k": 1})


# ---- MongoDB Atlas ------------------------------------------------------------------


class _Recorder:
    """Stands in for the collection's I/O calls: records what the package sends."""

    def __init__(self, collection, monkeypatch):
        self.pipelines: list[list[dict]] = []
        self.writes: list[list] = []
        monkeypatch.setattr(collection, "aggregate", self.aggregate, raising=False)
        monkeypatch.setattr(collection, "bulk_write", self.bulk_write, raising=False)

    def aggregate(self, pipeline, *args, **kwargs):
        self.pipelines.append(pipeline)
        return iter([])

    def bulk_write(self, ops, *args, **kwargs):
        self.writes.append(list(ops))


def _mongodb(similarity: str = "cosine"):
    pytest.importorskip("langchain_mongodb")
    from langchain_mongodb import MongoDBAtlasVectorSearch
    from pymongo import MongoClient

    client = MongoClient("mongodb://offline.invalid:27017", connect=False)
    return MongoDBAtlasVectorSearch(
        client["db"]["memories"],
        KeywordEmbeddings(DIMS),
        index_name="vector_index",
        relevance_score_fn=similarity,
    )


def test_mongodb_scope_is_the_vector_search_stage_filter_through_our_engine(monkeypatch, tmp_path):
    vs = _mongodb()
    rec = _Recorder(vs.collection, monkeypatch)
    backend = VectorStoreBackend(vs, catalog=tmp_path / "c.db")
    store = LongTermMemoryStore(backend, embeddings=KeywordEmbeddings(DIMS))
    store.remember("alice", "likes green tea")
    (ops,) = rec.writes
    (op,) = ops
    doc = op._doc
    assert doc["text"] == "likes green tea" and len(doc["embedding"]) == DIMS
    assert doc["ltm_n1"] == "alice" and doc["_id"] == op._filter["_id"]
    # the recorder returns no rows: an under-filled answer is checked against the catalog's
    # exact scoped search, which still finds alice's fact
    assert [f.content for f in store.recall("alice", "tea")] == ["likes green tea"]
    stage = rec.pipelines[-1][0]["$vectorSearch"]
    sid = backend.catalog.store_id
    assert stage["filter"] == {
        "$and": [
            {"ltm_store": {"$eq": sid}},
            {"ltm_n0": {"$eq": "memories"}},
            {"ltm_n1": {"$eq": "alice"}},
        ]
    }
    assert stage["path"] == "embedding" and stage["index"] == "vector_index"
    assert stage["numCandidates"] >= stage["limit"]
    store.close()


def test_mongodb_index_declares_the_scope_keys_as_filter_fields():
    pytest.importorskip("langchain_mongodb")
    from pymongo_search_utils.index import vector_search_index_definition  # what it calls

    from langchain_ltm.backends.vectorstore.dialects.mongodb import FILTER_FIELDS

    definition = vector_search_index_definition(
        path="embedding", dimensions=DIMS, similarity="cosine", filters=FILTER_FIELDS
    )
    filters = [f["path"] for f in definition["fields"] if f["type"] == "filter"]
    assert filters == ["ltm_store", "ltm_n0", "ltm_n1"]
    (vector,) = [f for f in definition["fields"] if f["type"] == "vector"]
    assert (vector["path"], vector["numDimensions"]) == ("embedding", DIMS)


@pytest.mark.parametrize(
    ("similarity", "kind"),
    [("cosine", "shifted_cosine"), ("dotProduct", "shifted_cosine"), ("euclidean", "inverse_l2")],
)
def test_mongodb_score_follows_its_similarity(similarity, kind):
    vs = _mongodb(similarity)
    assert registered(vs).distance(vs) == kind


# ---- Weaviate -----------------------------------------------------------------------


def test_weaviate_filter_is_a_v4_filter_the_client_sends_as_one_and():
    pytest.importorskip("langchain_weaviate")
    from weaviate.collections.filters import _FilterToGRPC
    from weaviate.proto.v1 import base_pb2

    from langchain_ltm.backends.vectorstore.dialects import weaviate as dialect

    grpc = _FilterToGRPC.convert(dialect.where(SCOPE))
    assert grpc.operator == base_pb2.Filters.OPERATOR_AND
    assert [(f.target.property, f.value_text, f.operator) for f in grpc.filters] == [
        ("ltm_store", "s1", base_pb2.Filters.OPERATOR_EQUAL),
        ("ltm_n0", "memories", base_pb2.Filters.OPERATOR_EQUAL),
        ("ltm_n1", "alice", base_pb2.Filters.OPERATOR_EQUAL),
    ]
    one = _FilterToGRPC.convert(dialect.where({"ltm_store": "s1"}))
    assert (one.target.property, one.value_text) == ("ltm_store", "s1")


def test_weaviate_distance_follows_the_collection_metric():
    pytest.importorskip("langchain_weaviate")
    from weaviate.classes.config import VectorDistances

    from langchain_ltm.backends.vectorstore.dialects.weaviate import metric_distance

    assert metric_distance(VectorDistances.COSINE) == "cosine"
    assert metric_distance(VectorDistances.DOT) == "negative_ip"
    assert metric_distance(VectorDistances.L2_SQUARED) == "l2"
    assert metric_distance(VectorDistances.HAMMING) not in DISTANCES  # refused, by name


def test_each_cloud_family_is_registered_under_its_class():
    from langchain_ltm.backends.vectorstore.dialects import builtin_families

    names = {
        "langchain_pinecone": "PineconeVectorStore",
        "langchain_weaviate": "WeaviateVectorStore",
        "langchain_elasticsearch": "ElasticsearchStore",
        "langchain_mongodb": "MongoDBAtlasVectorSearch",
    }
    families = builtin_families()
    for module, name in names.items():
        package = pytest.importorskip(module)
        cls = getattr(package, name)
        assert families[f"{cls.__module__}.{cls.__qualname__}"].name in module


# ---- a store without get_by_ids, taught its read call -------------------------------


def test_register_vectorstore_with_a_get_call_for_a_store_without_get_by_ids(tmp_path):
    from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

    from langchain_ltm.backends.vectorstore import register_vectorstore, vectorstore_backend
    from tests.unit_tests.test_vectorstore_backend import _Mine

    class _NoGet(_Mine):
        get_by_ids = VectorStore.get_by_ids  # what Pinecone, Weaviate, Elasticsearch lack

    emb = KeywordEmbeddings(DIMS)
    register_vectorstore(_NoGet, dict, distance="similarity")
    with pytest.raises(UnsupportedVectorStoreError, match="get_by_ids"):
        LongTermMemoryStore(_NoGet(emb))
    reads = []

    def get(vs, ids):
        reads.append(list(ids))
        return InMemoryVectorStore.get_by_ids(vs, ids)

    register_vectorstore(_NoGet, dict, distance="similarity", get=get)
    vs = _NoGet(emb)
    backend = vectorstore_backend(vs, catalog=tmp_path / "c.db")
    store = LongTermMemoryStore(backend, embeddings=emb)
    store.remember("alice", "likes green tea")
    fact = store.remember("alice", "works at the bakery").fact
    store.forget("alice", fact.id)
    assert [f.content for f in store.list_all("alice")] == ["likes green tea"]
    assert reads  # the documents were looked up through get=, not get_by_ids
    backend.catalog.journal_add(["00000000-0000-4000-8000-00000000000f"], "adding")
    assert backend.repair(grace_seconds=0, full=False) == 0 and reads[-1] == [
        "00000000-0000-4000-8000-00000000000f"
    ]
    reads.clear()
    backend.repair(grace_seconds=0)  # the full repair checks presence through get= too
    assert reads and all(isinstance(ids, list) for ids in reads)
    store.close()


def test_stores_that_declare_filter_fields_keep_value_filters_on_the_catalog(tmp_path):
    # Atlas: a $vectorSearch filter on an undeclared field is a query error, so nothing
    # but the scope may go to the store, and documents carry no ltm_v_ keys
    vs = _mongodb()
    backend = VectorStoreBackend(vs, catalog=tmp_path / "c.db")
    assert backend.capabilities.extra["value_filter_pushdown"] is False
    request = SearchRequest(("memories", "alice"), None, compile_filter({"kind": "pref"}), 3)
    stage_filter = backend.search_filter(request)
    assert "ltm_v_kind" not in str(stage_filter)
    backend.close()


# ---- value filters: pushed into the engines that take them ---------------------------
#
# A family with value_filters=True gets `{field: "short string"}` conditions as equalities
# on ltm_v_<field> beside the scope, in its own dialect. Each live store below is sent the
# exact filter its package documents, and the test checks the store itself applied it
# (only the user's matching documents come back from the engine), then that the search
# through us returns exactly the matching items. Other operators stay on the catalog.

# a value Milvus must escape and Chroma/FAISS must take verbatim
_ODD = 'ra"re\\ one'


def _value_store(kind, emb, tmp_path):
    from tests.vectorstores import faiss, milvus

    if kind == "chroma":
        from tests.vectorstores import chroma

        return chroma(emb, space="cosine")
    if kind == "faiss":
        return faiss(emb, tmp_path / "f")
    return milvus(emb, tmp_path / "m.db")


def _expected_value_filter(kind, sid, user, value):
    eq = {"ltm_store": sid, "ltm_n0": "docs", "ltm_n1": user, "ltm_v_kind": value}
    if kind == "chroma":  # Chroma's where: $eq clauses under one $and
        return {"$and": [{k: {"$eq": v}} for k, v in eq.items()]}
    if kind == "faiss":  # langchain's FAISS: a plain {key: value} dict of equalities
        return eq
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')  # Milvus: one boolean expression
    return (
        f'ltm_store == "{sid}" and ltm_n0 == "docs" and ltm_n1 == "{user}" '
        f'and ltm_v_kind == "{escaped}"'
    )


@pytest.mark.parametrize("kind", ["chroma", "faiss", "milvus"])
def test_a_value_filter_is_the_engines_own_equality_beside_the_scope(kind, tmp_path):
    emb = KeywordEmbeddings(DIMS)
    backend = VectorStoreBackend(_value_store(kind, emb, tmp_path), catalog=tmp_path / "c.db")
    assert backend.capabilities.extra["value_filter_pushdown"] is True
    store = LongTermMemoryStore(backend, embeddings=emb, fields=["text"])
    kinds = [_ODD, "common", "other"]
    for user in ("u1", "u2"):
        store.batch(
            [
                PutOp(("docs", user), str(i), {"text": f"green tea {i}", "kind": kinds[i % 3]})
                for i in range(12)
            ]
        )
    sid = backend.catalog.store_id
    request = SearchRequest(("docs", "u1"), None, compile_filter({"kind": _ODD}), 3)
    where = backend.search_filter(request)
    assert where == _expected_value_filter(kind, sid, "u1", _ODD)
    # the store takes it as it is and applies it itself: u1's four matching documents only
    results, _ = backend._vs_search(emb.embed_query("green tea"), 50, where)
    assert sorted(d.metadata["ltm_key"] for d, _ in results) == ["0", "3", "6", "9"]
    assert {(d.metadata["ltm_n1"], d.metadata["ltm_v_kind"]) for d, _ in results} == {("u1", _ODD)}
    hits = store.search(("docs", "u1"), query="green tea", limit=10, filter={"kind": _ODD})
    assert sorted(h.key for h in hits) == ["0", "3", "6", "9"]
    # an operator the engine is not given ($ne, $lt, a number): only the scope goes down,
    # the catalog decides, and the answer is still exact
    for raw in ({"kind": {"$ne": _ODD}}, {"kind": {"$lt": "other"}}, {"n": 3}):
        request = SearchRequest(("docs", "u1"), None, compile_filter(raw), 3)
        assert backend.search_filter(request) == backend.scope_filter(("docs", "u1"))
    hits = store.search(("docs", "u1"), query="tea", limit=20, filter={"kind": {"$ne": _ODD}})
    assert sorted(int(h.key) for h in hits) == [i for i in range(12) if i % 3]
    hits = store.search(("docs", "u1"), query="tea", limit=20, filter={"kind": {"$lt": "other"}})
    assert sorted(int(h.key) for h in hits) == [1, 4, 7, 10]  # "common" only
    store.close()


def _offline_pgvector(**options):
    """A PGVectorStore's query half, never connected: what turns a filter into SQL."""
    pytest.importorskip("langchain_postgres")
    from langchain_postgres.v2.async_vectorstore import AsyncPGVectorStore

    key = AsyncPGVectorStore._AsyncPGVectorStore__create_key  # type: ignore[attr-defined]
    return AsyncPGVectorStore(key, None, KeywordEmbeddings(DIMS), "memories", **options)


@pytest.mark.parametrize("columns", [False, True], ids=["json-metadata", "metadata-columns"])
def test_pgvector_value_filter_is_one_more_equality_in_its_where(columns):
    from langchain_ltm.backends.vectorstore.dialects import pgvector as dialect

    scope = ["ltm_store", "ltm_n0", "ltm_n1"]
    vs = _offline_pgvector(metadata_columns=scope if columns else None)
    eq = {**SCOPE, "ltm_v_kind": "it's"}
    clause, params = vs._create_filter_clause(dialect.where(eq))
    for key in scope:  # the scope: real columns if declared, else the JSON metadata
        wanted = key if columns else f"langchain_metadata->>'{key}'"
        assert f"{wanted} = :" in clause
    # the value field is never a declared column: always the JSON metadata, as TEXT
    assert "langchain_metadata->>'ltm_v_kind' = :ltm_v_kind_" in clause
    assert clause.startswith("(") and clause.count(" AND ") == 3 and " OR " not in clause
    assert sorted(params.values()) == sorted(["s1", "memories", "alice", "it's"])
    assert "it's" not in clause  # a bound parameter, never spliced into the SQL


def test_the_older_pgvector_value_filter_is_one_more_jsonb_path_match():
    pytest.importorskip("langchain_postgres")
    from langchain_postgres import PGVector
    from langchain_postgres.vectorstores import _get_embedding_collection_store
    from sqlalchemy.ext.asyncio import create_async_engine

    from langchain_ltm.backends.vectorstore.dialects import pgvector as dialect

    engine = create_async_engine("postgresql+psycopg://offline.invalid/db")  # never connects
    vs = PGVector(KeywordEmbeddings(DIMS), connection=engine, embedding_length=DIMS)
    vs.EmbeddingStore, vs.CollectionStore = _get_embedding_collection_store(DIMS)
    compiled = vs._create_filter_clause(dialect.where({**SCOPE, "ltm_v_kind": "rare"})).compile()
    assert str(compiled).count("jsonb_path_match(langchain_pg_embedding.cmetadata") == 4
    values = list(compiled.params.values())
    assert "$.ltm_v_kind == $value" in values and {"value": "rare"} in values


# ---- value filters: kept on the catalog where the store must declare its fields -------
#
# Pinecone, Atlas, Elasticsearch and Redis get the scope only (value_filters=False). Their
# I/O calls are answered from what the package itself wrote: every document of the scope
# it was sent, nearest first, as many as asked; so the engine's answers hold items that do
# not match the value filter, and the catalog's check must drop them while the search
# widens until the limit is met.

_KINDS_BY_KEY = {str(i): "rare" if i % 4 == 0 else "common" for i in range(40)}
_RARE = sorted(k for k, kind in _KINDS_BY_KEY.items() if kind == "rare")


class _Echo:
    """The documents a package wrote, answered back for the equalities it sent."""

    def __init__(self) -> None:
        self.docs: dict[str, tuple[list[float], dict]] = {}
        self.sent: list[dict[str, str]] = []
        self.returned: list[dict] = []

    def write(self, id_: str, vector: list[float], metadata: dict) -> None:
        self.docs[id_] = (list(vector), dict(metadata))

    def answer(self, vector: list[float], k: int, eq: dict[str, str]) -> list[tuple]:
        """``(id, cosine, metadata)`` of the ``k`` nearest documents meeting ``eq``."""
        self.sent.append(dict(eq))
        q = [float(x) for x in vector]
        found = [
            (id_, sum(a * b for a, b in zip(q, v, strict=True)), meta)
            for id_, (v, meta) in self.docs.items()
            if all(meta.get(key) == value for key, value in eq.items())
        ]
        found.sort(key=lambda row: -row[1])
        self.returned.extend(meta for _, _, meta in found[:k])
        return found[:k]


def _eq_of_and(where: dict) -> dict[str, str]:
    """``{"$and": [{k: {"$eq": v}}, ...]}`` (or one clause) as ``{k: v}``; nothing else."""
    clauses = where.get("$and", [where])
    eq = {}
    for clause in clauses:
        ((key, cond),) = clause.items()
        ((op, value),) = cond.items()
        assert op == "$eq", where
        eq[key] = value
    return eq


def _value_filter_stays_on_the_catalog(vs, echo, tmp_path, rendered=str):
    """Rare items under a value filter, far from the query: found, and only them.

    ``rendered``: a store's filter object as comparable text (what its client sends).
    """
    emb = KeywordEmbeddings(DIMS)
    # stores never connected (their calls stubbed): no probe of a new catalog's store
    backend = VectorStoreBackend(vs, catalog=tmp_path / "c.db", share_collection=True)
    assert backend.capabilities.extra["value_filter_pushdown"] is False
    store = LongTermMemoryStore(backend, embeddings=emb, fields=["text"])
    for user in ("u1", "u2"):  # rare items are far from the query, common ones near it
        store.batch(
            [
                PutOp(("docs", user), key, {"text": f"{kind} note {key}" if kind == "rare"
                      else f"green tea {key}", "kind": kind})
                for key, kind in _KINDS_BY_KEY.items()
            ]
        )  # fmt: skip
    assert len(echo.docs) == 80
    assert not any(k.startswith("ltm_v_") for _, meta in echo.docs.values() for k in meta)
    hits = store.search(("docs", "u1"), query="green tea", limit=10, filter={"kind": "rare"})
    assert sorted(h.key for h in hits) == _RARE
    assert {h.namespace for h in hits} == {("docs", "u1")}
    scope = {"ltm_store": backend.catalog.store_id, "ltm_n0": "docs", "ltm_n1": "u1"}
    assert echo.sent and all(eq == scope for eq in echo.sent)  # the scope, nothing else
    assert len(echo.sent) >= 2  # the first k held no rare item: the search widened
    assert any(meta.get("ltm_key") not in _RARE for meta in echo.returned)  # dropped by us
    hits = store.search(("docs", "u1"), query="green tea", limit=3, filter={"kind": "common"})
    assert len(hits) == 3 and all(h.value["kind"] == "common" for h in hits)
    request = SearchRequest(("docs", "u1"), None, compile_filter({"kind": "rare"}), 3)
    sent = rendered(backend.search_filter(request))
    assert sent == rendered(backend.scope_filter(("docs", "u1"))) and "ltm_v_" not in sent
    store.close()


def test_pinecone_value_filter_stays_on_the_catalog(monkeypatch, tmp_path):
    from pinecone.core.openapi.db_data.models import QueryResponse, ScoredVector, UpsertResponse

    vs = _pinecone()  # COSINE: Pinecone reports the cosine similarity itself
    echo = _Echo()

    def upsert_vectors(request, **kwargs):
        for v in request.vectors:
            echo.write(v.id, v.values, dict(v.metadata))
        return UpsertResponse(upserted_count=len(request.vectors))

    def query_vectors(request, **kwargs):
        found = echo.answer(request.vector, request.top_k, _eq_of_and(request.filter))
        matches = [ScoredVector(id=i, score=s, values=[], metadata=dict(m)) for i, s, m in found]
        return QueryResponse(matches=matches, namespace="ns")

    monkeypatch.setattr(vs.index._vector_api, "upsert_vectors", upsert_vectors)
    monkeypatch.setattr(vs.index._vector_api, "query_vectors", query_vectors)
    _value_filter_stays_on_the_catalog(vs, echo, tmp_path)


def test_mongodb_value_filter_stays_on_the_catalog(monkeypatch, tmp_path):
    vs = _mongodb()  # cosine: vectorSearchScore is (1 + cos) / 2
    echo = _Echo()

    def bulk_write(ops, *args, **kwargs):
        for op in ops:
            doc = dict(op._doc)
            echo.write(str(doc.pop("_id")), doc.pop("embedding"), doc)

    def aggregate(pipeline, *args, **kwargs):
        stage = pipeline[0]["$vectorSearch"]
        found = echo.answer(stage["queryVector"], stage["limit"], _eq_of_and(stage["filter"]))
        return iter([{**m, "_id": i, "score": (1.0 + s) / 2.0} for i, s, m in found])

    monkeypatch.setattr(vs.collection, "bulk_write", bulk_write, raising=False)
    monkeypatch.setattr(vs.collection, "aggregate", aggregate, raising=False)
    _value_filter_stays_on_the_catalog(vs, echo, tmp_path)


def test_elasticsearch_value_filter_stays_on_the_catalog(monkeypatch, tmp_path):
    from elasticsearch.helpers.vectorstore._sync import vectorstore as es_helpers

    vs = _elasticsearch()  # cosine: _score is (1 + cos) / 2
    echo = _Echo()
    texts: dict[str, str] = {}

    def bulk(client, actions, **kwargs):  # what the package's add_texts hands the client
        actions = list(actions)
        for action in actions:
            assert action["_op_type"] == "index" and action["_index"] == "memories"
            echo.write(action["_id"], action["vector"], action["metadata"])
            texts[action["_id"]] = action["text"]
        return len(actions), 0

    def search(**body):
        knn = body["knn"]
        eq = {}
        for clause in knn["filter"]:
            ((field, value),) = clause["term"].items()
            assert field.startswith("metadata.") and field.endswith(".keyword"), field
            eq[field.removeprefix("metadata.").removesuffix(".keyword")] = value
        hits = [
            {"_id": i, "_score": (1.0 + s) / 2.0, "_source": {"text": texts[i], "metadata": m}}
            for i, s, m in echo.answer(knn["query_vector"], knn["k"], eq)
        ]
        return {"hits": {"hits": hits}}

    monkeypatch.setattr(es_helpers, "bulk", bulk)
    monkeypatch.setattr(vs._store, "_create_index_if_not_exists", lambda *a, **k: None)
    monkeypatch.setattr(vs._store.client, "search", search)
    _value_filter_stays_on_the_catalog(vs, echo, tmp_path)


def test_weaviate_value_filter_stays_on_the_catalog(monkeypatch, tmp_path):
    """The collection's calls are answered back; the filter is read as the client's gRPC."""
    pytest.importorskip("langchain_weaviate")
    import uuid
    from types import SimpleNamespace

    import weaviate
    from langchain_weaviate import WeaviateVectorStore
    from weaviate.classes.config import VectorDistances
    from weaviate.collections.classes.batch import BatchObjectReturn
    from weaviate.collections.classes.internal import MetadataReturn, Object, QueryReturn
    from weaviate.collections.filters import _FilterToGRPC
    from weaviate.connect import ConnectionParams
    from weaviate.proto.v1 import base_pb2

    params = ConnectionParams.from_params(
        http_host="offline.invalid", http_port=8080, http_secure=False,
        grpc_host="offline.invalid", grpc_port=50051, grpc_secure=False,
    )  # fmt: skip
    client = weaviate.WeaviateClient(connection_params=params, skip_init_checks=True)
    vs = WeaviateVectorStore.__new__(WeaviateVectorStore)  # __init__ asks the server
    vs._client, vs._index_name, vs._text_key = client, "Memories", "text"
    vs._embedding, vs._query_attrs, vs._multi_tenancy_enabled = None, ["text"], False
    vs._collection = collection = client.collections.get("Memories")  # sends nothing
    echo = _Echo()
    texts: dict[str, str] = {}

    def insert_many(objects):
        for obj in objects:
            props = dict(obj.properties)
            texts[str(obj.uuid)] = props.pop("text")
            echo.write(str(obj.uuid), obj.vector, props)
        return BatchObjectReturn()

    def near_vector(near_vector, limit, filters, return_metadata):
        grpc = _FilterToGRPC.convert(filters)
        assert grpc.operator == base_pb2.Filters.OPERATOR_AND
        eq = {}
        for f in grpc.filters:
            assert f.operator == base_pb2.Filters.OPERATOR_EQUAL
            eq[f.target.property] = f.value_text
        objects = [
            Object(uuid=uuid.UUID(i), metadata=MetadataReturn(distance=1.0 - s),
                   properties={**m, "text": texts[i]}, references=None, vector={},
                   collection="Memories")
            for i, s, m in echo.answer(near_vector, limit, eq)
        ]  # fmt: skip
        return QueryReturn(objects=objects)

    index = SimpleNamespace(distance_metric=VectorDistances.COSINE)
    monkeypatch.setattr(collection.config, "get", lambda *a, **k: SimpleNamespace(
        vector_index_config=index))  # fmt: skip
    monkeypatch.setattr(collection.data, "delete_many", lambda where: None)
    monkeypatch.setattr(collection.data, "insert_many", insert_many)
    monkeypatch.setattr(collection.query, "near_vector", near_vector)
    _value_filter_stays_on_the_catalog(
        vs, echo, tmp_path, rendered=lambda f: str(_FilterToGRPC.convert(f))
    )
