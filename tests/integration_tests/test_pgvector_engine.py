"""The generic engine's own promises on PGVectorStore (langchain-postgres), live on Postgres.

The older ``PGVector`` class runs the scores, crash, under-fill and isolation cases too.

Its own table layout (``init_vectorstore_table``), JSON metadata or real metadata columns;
cosine scores for each of its distance strategies; the scope inside its SQL ``WHERE``; a
search that never under-fills, also on an HNSW index with :class:`IterativeScan`; crash,
cancellation and repair on the sync and the native async write paths (the unit cases, run
here on PGVectorStore); the isolation fuzz.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import re

import numpy as np
import pytest

from langchain_ltm import LongTermMemoryStore, UnsupportedVectorStoreError
from langchain_ltm.backends.vectorstore import VectorStoreBackend, vectorstore_backend
from langchain_ltm.backends.vectorstore._catalog import ADDING, GARBAGE
from langchain_ltm.backends.vectorstore.dialects.pgvector import IterativeScan
from tests.fakes import KeywordEmbeddings
from tests.isolation import run_isolation, summary
from tests.unit_tests import test_vectorstore_backend as unit
from tests.unit_tests.test_isolation import N_USERS, VECTORSTORE_STEPS
from tests.vectorstores import (  # noqa: F401  (pg_services: fixture)
    count_documents,
    pg_engine,
    pg_services,
    pgvector,
    pgvector_legacy,
)

DIMS = 64
pytestmark = pytest.mark.usefixtures("pg_services")


@pytest.mark.parametrize(
    ("make", "strategy"),
    [
        (pgvector, "COSINE_DISTANCE"),
        (pgvector, "EUCLIDEAN"),
        (pgvector, "INNER_PRODUCT"),
        (pgvector_legacy, "COSINE"),
        (pgvector_legacy, "EUCLIDEAN"),
        (pgvector_legacy, "MAX_INNER_PRODUCT"),
    ],
    ids=lambda v: v if isinstance(v, str) else v.__name__,
)
def test_scores_are_cosine_similarities(make, strategy, tmp_path):
    emb = KeywordEmbeddings(DIMS)
    backend = vectorstore_backend(make(emb, strategy=strategy), catalog=tmp_path / "c.db")
    store = LongTermMemoryStore(backend, embeddings=emb, fields=["text"])
    for i, text in enumerate(["green tea with honey", "black coffee", "tea and coffee together"]):
        store.put(("docs", "u1"), str(i), {"text": text})
    hits = store.search(("docs", "u1"), query="green tea", limit=3)
    assert len(hits) == 3
    q = np.array(emb.embed_query("green tea"))
    for hit in hits:
        v = np.array(emb.embed_documents([hit.value["text"]])[0])
        expected = float(q @ v / np.linalg.norm(q) / np.linalg.norm(v))
        assert hit.score == pytest.approx(expected, abs=1e-5)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    store.close()


def test_the_scope_is_in_the_stores_sql(tmp_path):
    emb = KeywordEmbeddings(DIMS)
    backend = vectorstore_backend(pgvector(emb), catalog=tmp_path / "c.db")
    sid = backend.catalog.store_id
    assert backend.capabilities.name == "vectorstore:pgvector"
    assert backend.scope_filter(("memories", "alice")) == {
        "$and": [
            {"ltm_store": {"$eq": sid}},
            {"ltm_n0": {"$eq": "memories"}},
            {"ltm_n1": {"$eq": "alice"}},
        ]
    }
    # what PGVectorStore makes of it: one WHERE on the JSON metadata, in the ranked query
    inner = backend.vectorstore._PGVectorStore__vs
    clause, params = inner._create_filter_clause(backend.scope_filter(("memories", "alice")))
    assert "langchain_metadata->>'ltm_n1'" in clause
    assert sorted(params.values()) == sorted([sid, "memories", "alice"])
    backend.close()


@pytest.mark.parametrize("columns", [False, True], ids=["json-metadata", "metadata-columns"])
def test_a_user_search_never_under_fills(columns, tmp_path):
    """Many other users' documents nearer the query than any of u1's: u1 still gets k."""
    emb = KeywordEmbeddings(DIMS)
    vs = pgvector(emb, metadata_columns=columns)
    store = LongTermMemoryStore(vectorstore_backend(vs, catalog=tmp_path / "c.db"), embeddings=emb)
    store.batch(
        [
            _put(("docs", f"other{u}"), str(i), f"tea tea tea {i}")
            for u in range(40)
            for i in range(10)
        ]
    )
    for i in range(12):
        store.put(("docs", "u1"), str(i), {"text": f"coffee note {i}"})
    hits = store.search(("docs", "u1"), query="tea", limit=10)
    assert len(hits) == 10
    assert {tuple(h.namespace) for h in hits} == {("docs", "u1")}
    hits = store.search(("docs", "u1"), query="tea", limit=3, filter={"text": "coffee note 7"})
    assert [h.key for h in hits] == ["7"]
    if columns:  # the scope went to the real columns, not into the JSON
        row = vs.get(where={"ltm_n1": {"$eq": "u1"}}, include=["metadatas"])
        assert len(row["ids"]) == 12
    store.close()


class _IndexOnly(IterativeScan):
    """The iterative scan, with the planner kept off a sequential scan of the small table."""

    def to_parameter(self):
        return [*super().to_parameter(), "enable_seqscan = off"]


class _PlainIndex:
    def to_parameter(self):
        return ["hnsw.ef_search = 10", "enable_seqscan = off"]


def test_an_hnsw_index_with_iterative_scan_never_under_fills(tmp_path):
    """pgvector filters what its HNSW scan yields: IterativeScan keeps scanning until k pass."""
    from langchain_postgres import PGVectorStore
    from langchain_postgres.v2.indexes import HNSWIndex

    emb = KeywordEmbeddings(DIMS)
    vs = pgvector(emb, index_query_options=_IndexOnly(ef_search=10))
    store = LongTermMemoryStore(vectorstore_backend(vs, catalog=tmp_path / "c.db"), embeddings=emb)
    store.batch(
        [_put(("docs", f"o{u}"), str(i), f"tea tea {u} {i}") for u in range(30) for i in range(10)]
    )
    store.batch([_put(("docs", "u1"), str(i), f"coffee note {i}") for i in range(12)])
    vs.apply_vector_index(HNSWIndex())
    hits = store.search(("docs", "u1"), query="tea", limit=10)
    assert len(hits) == 10 and {h.namespace for h in hits} == {("docs", "u1")}
    # the same table and index without the iterative scan: pgvector returns too few
    table = vs._PGVectorStore__vs.table_name
    plain = PGVectorStore.create_sync(
        pg_engine(),
        emb,
        table,
        index_query_options=_PlainIndex(),  # type: ignore[arg-type]
    )
    where = store.backend.scope_filter(("docs", "u1"))
    short = plain.similarity_search_with_score_by_vector(emb.embed_query("tea"), k=10, filter=where)
    assert len(short) < 10
    store.close()


def test_vectors_are_handed_over_and_other_rows_untouched(tmp_path):
    emb = KeywordEmbeddings(DIMS)
    vs = pgvector(emb)
    theirs = "00000000-0000-4000-8000-000000000001"
    vs.add_embeddings(["someone else's row"], [[1.0] + [0.0] * (DIMS - 1)], ids=[theirs])
    before = emb.texts_embedded
    store = LongTermMemoryStore(vs)
    store.remember("alice", ["likes tea", "lives in Lisbon", "has a dog"])
    assert emb.texts_embedded - before == 3  # one batch, embedded once, by us
    assert count_documents(vs) == 4
    store.clear_user("alice")
    assert store.list_all("alice") == []
    assert [d.id for d in vs.get_by_ids([theirs])] == [theirs]
    assert count_documents(vs) == 1
    store.close()


KINDS = ["pgvector", "pgvector-legacy"]


# sync and async: PGVectorStore's async write is its own aadd_embeddings / aget_by_ids /
# adelete (the crash cases check the native add ran); the older PGVector's, the thread pool
@pytest.mark.parametrize("mode", unit.MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_crash_before_the_catalog_commit(kind, mode, tmp_path, monkeypatch):
    unit.check_crash_before_commit(kind, mode, tmp_path, monkeypatch)


@pytest.mark.parametrize("mode", unit.MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_crash_after_the_catalog_commit(kind, mode, tmp_path, monkeypatch):
    unit.check_crash_after_commit(kind, mode, tmp_path, monkeypatch)


@pytest.mark.parametrize("kind", KINDS)
def test_repair_deletes_what_an_older_copy_brought_back(kind, tmp_path):
    unit.check_repair_drops_strays(kind, tmp_path)


@pytest.mark.parametrize("landed", [True, False], ids=["after-commit", "before-commit"])
@pytest.mark.parametrize("mode", unit.MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_an_interrupt_at_the_catalog_commit(kind, mode, landed, tmp_path, monkeypatch):
    unit.check_interrupted_commit(kind, mode, landed, tmp_path, monkeypatch)


@pytest.mark.parametrize(
    ("kind", "at"),
    [("pgvector", "add"), ("pgvector", "commit"), ("pgvector-legacy", "commit")],
)
def test_a_cancelled_async_write_is_whole_or_absent(kind, at, tmp_path, monkeypatch):
    unit.check_cancelled_write(kind, at, tmp_path, monkeypatch)


# a put holding a NUL where Postgres would get it: (key, value, the field the error names)
NUL_PUTS = {
    "value-field": ("note", {"text": "alice note", "tag": "a\x00b"}, "The value's field 'tag'"),
    "key": ("no\x00te", {"text": "alice note"}, "The key 'no"),
    "text": ("note", {"text": "alice\x00note"}, "The text at 'text'"),
}
NUL_STORES = {
    "pgvector": pgvector,
    "pgvector-columns": functools.partial(pgvector, metadata_columns=True),
    "pgvector-legacy": pgvector_legacy,
}


@pytest.mark.parametrize("mode", unit.MODES)
@pytest.mark.parametrize("case", sorted(NUL_PUTS))
@pytest.mark.parametrize("kind", sorted(NUL_STORES))
def test_a_nul_is_refused_before_anything_is_written(kind, case, mode, tmp_path):
    """Postgres text has no NUL: PGVectorStore took one into its JSON metadata, and then
    every user's search on the table failed on that row (``->>``: DataError)."""
    emb = KeywordEmbeddings(DIMS)
    vs = NUL_STORES[kind](emb)
    backend = vectorstore_backend(vs, catalog=tmp_path / "c.db")
    store = LongTermMemoryStore(backend, embeddings=emb)
    store.remember("bob", "Bob likes green tea")
    key, value, named = NUL_PUTS[case]
    with pytest.raises(ValueError, match=re.escape(named) + ".* NUL .*nothing of this batch"):
        _put_text(store, mode, ("docs", "alice"), key, value)
    assert store.get(("docs", "alice"), key) is None
    assert count_documents(vs) == 1
    assert backend.catalog.journal_ids(ADDING) == []
    assert [f.content for f in store.recall("bob", "tea")] == ["Bob likes green tea"]
    assert store.remember("bob", "Bob has a dog").action == "created"
    assert store.search(("docs",), query="note") == []
    store.close()


def test_a_batch_above_the_older_pgvectors_insert_limit_is_stored_whole(tmp_path):
    """Its add is one INSERT, 5 bind parameters a row, 65,535 at most: 13,107 rows."""
    from langgraph.store.base import PutOp

    emb = KeywordEmbeddings(DIMS)
    vs = pgvector_legacy(emb)
    store = LongTermMemoryStore(vectorstore_backend(vs, catalog=tmp_path / "c.db"), embeddings=emb)
    n = 14_000  # one INSERT of these failed: "number of parameters must be between 0 and 65535"
    store.batch([PutOp(("docs",), f"k{i}", {"text": f"note {i}"}) for i in range(n)])
    assert count_documents(vs) == n
    assert len(store.search(("docs",), query="note", limit=n)) == n
    store.close()


def test_deleting_more_documents_than_one_statement_binds_deletes_them_all(tmp_path):
    """The older PGVector binds one value an id, 65,535 at most a statement: the drop is split."""
    from langgraph.store.base import PutOp

    emb = KeywordEmbeddings(DIMS)
    vs = pgvector_legacy(emb)
    backend = vectorstore_backend(vs, catalog=tmp_path / "c.db")
    store = LongTermMemoryStore(backend, embeddings=emb)
    n = 66_000  # one delete of these failed: "number of parameters must be between 0 and 65535"
    store.batch([PutOp(("docs",), f"k{i}", {"text": f"note {i}"}) for i in range(n)])
    store.batch([PutOp(("docs",), f"k{i}", None) for i in range(n)])
    assert count_documents(vs) == 0
    assert backend.catalog.journal_ids(GARBAGE) == []  # nothing left for repair()
    assert store.search(("docs",)) == []
    store.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_pgvectorstores_drops_are_split_in_parts(mode, tmp_path, monkeypatch):
    """PGVectorStore's own async delete too (the part size made small to see it)."""
    from langgraph.store.base import PutOp

    from langchain_ltm.backends.vectorstore import _store_calls as module

    monkeypatch.setattr(module, "DROP_PART", 3)
    sizes: list[int] = []
    for name in ("delete_present", "adelete_present"):
        real = getattr(module, name)

        def recorded(vs, ids, *rest, real=real):
            sizes.append(len(ids))
            return real(vs, ids, *rest)

        monkeypatch.setattr(module, name, recorded)
    emb = KeywordEmbeddings(DIMS)
    vs = pgvector(emb)
    backend = vectorstore_backend(vs, catalog=tmp_path / "c.db")
    store = LongTermMemoryStore(backend, embeddings=emb)
    store.batch([PutOp(("docs",), f"k{i}", {"text": f"n {i}"}) for i in range(8)])
    deletes = [PutOp(("docs",), f"k{i}", None) for i in range(8)]
    if mode == "async":
        asyncio.run(store.abatch(deletes))
    else:
        store.batch(deletes)
    assert sizes == [3, 3, 2]
    assert count_documents(vs) == 0
    assert backend.catalog.journal_ids(GARBAGE) == []
    store.close()


def test_pgvectorstores_native_async_add_is_split_at_max_batch(tmp_path):
    from langgraph.store.base import PutOp

    from langchain_ltm.backends.vectorstore.dialects import pgvector as dialect

    sizes: list[int] = []

    async def aadd(vs, ids, *rest):
        sizes.append(len(ids))
        await dialect.aadd(vs, ids, *rest)

    family = dataclasses.replace(dialect.FAMILY, max_batch=4, aadd=aadd)
    emb = KeywordEmbeddings(DIMS)
    vs = pgvector(emb)
    backend = vectorstore_backend(vs, catalog=tmp_path / "c.db", family=family)
    store = LongTermMemoryStore(backend, embeddings=emb)
    asyncio.run(store.abatch([PutOp(("docs",), f"k{i}", {"text": f"n {i}"}) for i in range(10)]))
    assert sizes == [4, 4, 2]
    assert count_documents(vs) == 10
    assert backend.catalog.journal_ids(ADDING) == []
    store.close()


def test_the_older_pgvector_scopes_in_its_sql_and_never_under_fills(tmp_path):
    emb = KeywordEmbeddings(DIMS)
    vs = pgvector_legacy(emb)
    backend = vectorstore_backend(vs, catalog=tmp_path / "c.db")
    assert backend.capabilities.name == "vectorstore:pgvector-legacy"
    clause = vs._create_filter_clause(backend.scope_filter(("docs", "u1")))
    compiled = clause.compile()
    assert str(compiled).count("jsonb_path_match(langchain_pg_embedding.cmetadata") == 3
    assert "$.ltm_n1 == $value" in compiled.params.values()
    assert {"value": "u1"} in compiled.params.values()
    store = LongTermMemoryStore(backend, embeddings=emb)
    store.batch(
        [_put(("docs", f"o{u}"), str(i), f"tea tea {i}") for u in range(30) for i in range(10)]
    )
    store.batch([_put(("docs", "u1"), str(i), f"coffee note {i}") for i in range(12)])
    hits = store.search(("docs", "u1"), query="tea", limit=10)
    assert len(hits) == 10 and {h.namespace for h in hits} == {("docs", "u1")}
    store.close()


def test_layouts_that_would_lose_metadata_or_scores_are_refused(tmp_path):
    from langchain_postgres.v2.hybrid_search_config import HybridSearchConfig

    emb = KeywordEmbeddings(DIMS)
    no_json = pgvector(emb, metadata_json_column=None)
    with pytest.raises(UnsupportedVectorStoreError, match="metadata_json_column"):
        VectorStoreBackend(no_json, catalog=tmp_path / "a.db")
    hybrid = pgvector(emb, hybrid_search_config=HybridSearchConfig())
    with pytest.raises(UnsupportedVectorStoreError, match="hybrid_search_config"):
        VectorStoreBackend(hybrid, catalog=tmp_path / "b.db")
    assert not list(tmp_path.glob("*.db-journal"))


def test_iterative_scan_rejects_bad_settings():
    with pytest.raises(ValueError, match="strict_order"):
        IterativeScan(order="fast")
    with pytest.raises(ValueError, match="positive"):
        IterativeScan(ef_search=0)


@pytest.mark.parametrize("kind", KINDS)
def test_no_leaks_and_nothing_lost(kind, tmp_path, capsys):
    from tests.vectorstores import open_store

    store = open_store(kind, KeywordEmbeddings(64), tmp_path, upsert_threshold=0.999)
    report = run_isolation(store, n_users=N_USERS, steps=VECTORSTORE_STEPS, seed=29)
    with capsys.disabled():
        print("\nisolation", summary(report, kind, N_USERS))
    assert report.operations >= N_USERS * VECTORSTORE_STEPS * 0.9
    assert report.leaks == []
    assert report.missing == []
    store.close()


@pytest.mark.parametrize("columns", [False, True], ids=["json-metadata", "metadata-columns"])
def test_a_value_filter_is_one_more_equality_postgres_applies(columns, tmp_path):
    """The documented ``{"k": {"$eq": v}}`` under ``$and``; Postgres returns only matches."""
    from langgraph.store.base import PutOp

    from langchain_ltm._filters import compile_filter
    from langchain_ltm.backends.base import SearchRequest

    emb = KeywordEmbeddings(DIMS)
    backend = VectorStoreBackend(pgvector(emb, metadata_columns=columns), catalog=tmp_path / "c.db")
    assert backend.capabilities.extra["value_filter_pushdown"] is True
    store = LongTermMemoryStore(backend, embeddings=emb, fields=["text"])
    kinds = ["it's rare", "common", "other"]  # a quote: bound as a parameter, not spliced
    for user in ("u1", "u2"):
        store.batch(
            [
                PutOp(("docs", user), str(i), {"text": f"green tea {i}", "kind": kinds[i % 3]})
                for i in range(12)
            ]
        )
    request = SearchRequest(("docs", "u1"), None, compile_filter({"kind": "it's rare"}), 3)
    where = backend.search_filter(request)
    sid = backend.catalog.store_id
    assert where == {
        "$and": [
            {"ltm_store": {"$eq": sid}},
            {"ltm_n0": {"$eq": "docs"}},
            {"ltm_n1": {"$eq": "u1"}},
            {"ltm_v_kind": {"$eq": "it's rare"}},
        ]
    }
    results, _ = backend._vs_search(emb.embed_query("green tea"), 50, where)
    assert sorted(d.metadata["ltm_key"] for d, _ in results) == ["0", "3", "6", "9"]
    assert {d.metadata["ltm_n1"] for d, _ in results} == {"u1"}
    hits = store.search(("docs", "u1"), query="tea", limit=10, filter={"kind": "it's rare"})
    assert sorted(h.key for h in hits) == ["0", "3", "6", "9"]
    hits = store.search(("docs", "u1"), query="tea", limit=20, filter={"kind": {"$ne": "other"}})
    assert sorted(int(h.key) for h in hits) == [i for i in range(12) if i % 3 != 2]
    store.close()


def _put_text(store, mode, namespace, key, value):
    """A put indexing the value's ``text`` (``aput`` when ``mode`` is ``"async"``)."""
    if mode == "async":
        asyncio.run(store.aput(namespace, key, value, index=["text"]))
    else:
        store.put(namespace, key, value, index=["text"])


def _put(namespace, key, text):
    from langgraph.store.base import PutOp

    return PutOp(namespace, key, {"text": text})
