"""Vectorstores for the generic engine's tests, each fresh per call.

Chroma runs in process (an ephemeral client, telemetry off: nothing leaves the machine), or
against a real ``chroma run`` server (``chroma-server``: the integration tests' session
fixture, tests/chroma_server.py); FAISS is created, saved to disk and loaded back before
use; Milvus Lite keeps one ``.db`` file per test folder (a fresh collection per store);
PGVectorStore gets a table of its own on the integration tests' Postgres
(``SERVICES["postgres"]``, set by the ``pg_services`` fixture); Redis gets an index of its
own (``langchain-redis``'s ``RedisVectorStore``, our ``metadata_schema``) on the session's
Redis Stack (``SERVICES["redis"]``, set by the ``redis_server`` fixture:
tests/redis_server.py). None ever embeds: the store hands every vector over.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import chromadb
import pytest
from chromadb.config import Settings
from langchain_chroma import Chroma
from langchain_community.vectorstores import FAISS

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.vectorstore import vectorstore_backend
from tests.fakes import KeywordEmbeddings
from tests.store_contract import BaseStoreContract

_names = itertools.count()


def chroma_settings() -> Settings:
    """Fresh client settings, telemetry off: ``chromadb.HttpClient`` rewrites the settings
    object it is given (API implementation, host, port), so a shared one would turn every
    later in-process client into an HTTP client of the test server."""
    return Settings(anonymized_telemetry=False, allow_reset=True)


SERVICES: dict[str, str] = {}  # URLs of the servers the integration fixtures started
_PG_ENGINES: dict[str, Any] = {}


def chroma(embeddings: Any, space: str | None = None, client: Any = None) -> Chroma:
    """A fresh collection; ``space`` sets the HNSW distance (Chroma's default: l2)."""
    config = None if space is None else {"hnsw": {"space": space}}
    return Chroma(
        f"ltm-{uuid.uuid4().hex[:12]}",
        embeddings,
        client=client or chromadb.EphemeralClient(settings=chroma_settings()),
        collection_configuration=config,  # type: ignore[arg-type]
    )


def faiss(embeddings: Any, folder: Path, *, inner_product: bool = False) -> FAISS:
    """A FAISS index saved to ``folder`` and loaded back (one unrelated document in it)."""
    from langchain_community.vectorstores.utils import DistanceStrategy

    strategy = (
        DistanceStrategy.MAX_INNER_PRODUCT if inner_product else DistanceStrategy.EUCLIDEAN_DISTANCE
    )
    # someone else's document, its vector given (the test embeddings count every call)
    unrelated = [1.0] + [0.0] * (embeddings.dims - 1)
    vs = FAISS.from_embeddings(
        [("an unrelated document", unrelated)], embeddings, distance_strategy=strategy
    )
    vs.save_local(str(folder))
    return FAISS.load_local(
        str(folder), embeddings, allow_dangerous_deserialization=True, distance_strategy=strategy
    )


def milvus(embeddings: Any, path: Path, metric: str = "COSINE", **kwargs: Any) -> Any:
    """A fresh collection in the Milvus Lite file ``path`` (``metric``: L2, IP or COSINE)."""
    from langchain_milvus import Milvus

    options = {"auto_id": False, "enable_dynamic_field": True, **kwargs}
    vs = Milvus(
        embeddings,
        collection_name=f"ltm_{uuid.uuid4().hex[:12]}",
        connection_args={"uri": str(path)},
        index_params={"metric_type": metric, "index_type": "FLAT", "params": {}},
        **options,
    )
    _MILVUS_OPEN.append((vs, str(path)))
    return vs


_MILVUS_OPEN: list[tuple[Any, str]] = []


def release_milvus() -> None:
    """Close the Milvus stores a test opened and stop their in-process Milvus Lite servers."""
    from milvus_lite.server_manager import server_manager_instance

    opened, _MILVUS_OPEN[:] = list(_MILVUS_OPEN), []
    for vs, _ in opened:
        vs.client.close()
    for path in dict.fromkeys(path for _, path in opened):
        server_manager_instance.release_server(path)


# the session's Chroma server for "chroma-server": {"host", "port"}, set by its fixture
CHROMA_SERVER: dict[str, Any] = {}


def chroma_http_client() -> Any:
    """A client of the session's ``chroma run`` server."""
    if not CHROMA_SERVER:
        raise RuntimeError("'chroma-server' needs the chroma_server fixture (integration tests)")
    return chromadb.HttpClient(
        host=CHROMA_SERVER["host"], port=CHROMA_SERVER["port"], settings=chroma_settings()
    )


def pg_engine(url: str | None = None) -> Any:
    """The session's ``PGEngine`` for ``url`` (default: the fixtures' Postgres)."""
    from langchain_postgres import PGEngine

    url = url or SERVICES.get("postgres")
    if url is None:
        raise RuntimeError("no Postgres: use the pg_services fixture (integration tests only)")
    if url not in _PG_ENGINES:
        _PG_ENGINES[url] = PGEngine.from_connection_string(
            url.replace("postgresql://", "postgresql+psycopg://", 1)
        )
    return _PG_ENGINES[url]


def pgvector(
    embeddings: Any,
    url: str | None = None,
    *,
    strategy: str = "COSINE_DISTANCE",
    metadata_columns: bool = False,
    **options: Any,
) -> Any:
    """A PGVectorStore on a fresh table of its own layout (``init_vectorstore_table``).

    ``metadata_columns=True`` declares the scope keys as TEXT columns; ``strategy`` is a
    ``DistanceStrategy`` name. One ``PGEngine`` per server, shared by the session.
    """
    from langchain_postgres import Column, PGVectorStore
    from langchain_postgres.v2.indexes import DistanceStrategy

    engine = pg_engine(url)
    table = f"vs_{uuid.uuid4().hex[:12]}"
    columns = ["ltm_store", "ltm_n0", "ltm_n1"] if metadata_columns else []
    engine.init_vectorstore_table(
        table, embeddings.dims, metadata_columns=[Column(c, "TEXT") for c in columns]
    )
    return PGVectorStore.create_sync(
        engine,
        embeddings,
        table,
        metadata_columns=columns,
        distance_strategy=DistanceStrategy[strategy],
        **options,
    )


def pgvector_legacy(embeddings: Any, url: str | None = None, *, strategy: str = "COSINE") -> Any:
    """The older ``langchain_postgres.PGVector`` on a fresh collection (its shared tables)."""
    from langchain_postgres import PGVector
    from langchain_postgres.vectorstores import DistanceStrategy
    from sqlalchemy import create_engine

    url = url or SERVICES.get("postgres")
    if url is None:
        raise RuntimeError("no Postgres: use the pg_services fixture (integration tests only)")
    key = f"legacy:{url}"
    if key not in _PG_ENGINES:  # one pool for the session, not one per store
        _PG_ENGINES[key] = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    return PGVector(
        embeddings,
        connection=_PG_ENGINES[key],
        collection_name=f"ltm-{uuid.uuid4().hex[:12]}",
        distance_strategy=DistanceStrategy[strategy],
        use_jsonb=True,
    )


REDIS_DEPTH = 6  # namespace levels a Redis index can scope (the suites' deepest prefix is 4)


def redis(
    embeddings: Any,
    url: str | None = None,
    *,
    metric: str = "COSINE",
    algorithm: str = "FLAT",
    index_name: str | None = None,
    **config: Any,
) -> Any:
    """A ``RedisVectorStore`` on a fresh index (``metric``: COSINE, IP or L2), as the README
    documents: ``RedisConfig(..., metadata_schema=metadata_schema(depth))``."""
    from langchain_redis import RedisConfig, RedisVectorStore

    from langchain_ltm.backends.vectorstore.dialects.redis import metadata_schema

    url = url or SERVICES.get("redis")
    if url is None:
        raise RuntimeError("no Redis: use the redis_server fixture (integration tests only)")
    return RedisVectorStore(
        embeddings,
        config=RedisConfig(
            index_name=index_name or f"ltm_{uuid.uuid4().hex[:12]}",
            redis_url=url,
            embedding_dimensions=embeddings.dims,
            distance_metric=metric,
            indexing_algorithm=algorithm,
            metadata_schema=metadata_schema(REDIS_DEPTH),
            **config,
        ),
    )


def make_vectorstore(kind: str, embeddings: Any, tmp_path: Path) -> Any:
    if kind == "chroma":
        return chroma(embeddings)
    if kind == "chroma-server":
        return chroma(embeddings, client=chroma_http_client())
    if kind == "milvus":
        return milvus(embeddings, tmp_path / "milvus.db")
    if kind == "pgvector":
        return pgvector(embeddings)
    if kind == "pgvector-legacy":
        return pgvector_legacy(embeddings)
    if kind == "redis":
        return redis(embeddings)
    folder = tmp_path / f"faiss{next(_names)}"
    return faiss(embeddings, folder)


def count_documents(vs: Any) -> int:
    """Documents in the store, ours and anyone else's."""
    if isinstance(vs, Chroma):
        return int(vs._collection.count())
    if isinstance(vs, FAISS):
        return int(vs.index.ntotal)
    if type(vs).__name__ == "Milvus":
        if vs.col is None:
            return 0
        rows = vs.client.query(vs.collection_name, filter="", output_fields=["count(*)"])
        return int(rows[0]["count(*)"])
    if type(vs).__name__ == "RedisVectorStore":  # the documents of its index
        return int(vs.index.info()["num_docs"])
    if hasattr(vs, "collection_name"):  # the older PGVector: its collection's rows
        with vs._make_sync_session() as session:
            collection = vs.get_collection(session)
            return int(
                session.query(vs.EmbeddingStore)
                .filter(vs.EmbeddingStore.collection_id == collection.uuid)
                .count()
            )
    return len(vs.get(include=[])["ids"])  # PGVectorStore


def open_store(kind: str, embeddings: Any, tmp_path: Path, **kwargs: Any) -> LongTermMemoryStore:
    """A store on ``kind`` (see ``make_vectorstore``), its catalog in ``tmp_path``."""
    vs = make_vectorstore(kind, embeddings, tmp_path)
    backend = vectorstore_backend(vs, catalog=tmp_path / f"catalog{next(_names)}.sqlite")
    return LongTermMemoryStore(backend, embeddings=embeddings, **kwargs)


KINDS = ["chroma", "faiss", "milvus"]  # in process: the unit tests run these
SERVER_KINDS = ["chroma-server"]  # a live server: the integration tests run these


@pytest.fixture
def redis_services(redis_server: str) -> None:
    """Make the session's Redis the one ``redis()`` and ``open_store("redis")`` use."""
    SERVICES["redis"] = redis_server


@pytest.fixture
def pg_services(pg_url: str) -> None:
    """Make the session's Postgres the one ``pgvector()`` and ``open_store("pgvector")`` use."""
    SERVICES["postgres"] = pg_url


class VectorStoreContract(BaseStoreContract):
    """The BaseStore contract on the generic engine over ``kind`` (set by each subclass)."""

    kind = ""

    @pytest.fixture
    def store_factory(self, tmp_path: Path) -> Iterator[Callable[..., LongTermMemoryStore]]:
        opened: list[LongTermMemoryStore] = []

        def make(fields: list[str] | None = None, ttl: Any = None) -> LongTermMemoryStore:
            options = {} if ttl is None else {"ttl": ttl}
            store = open_store(
                self.kind, KeywordEmbeddings(dims=64), tmp_path, fields=fields, **options
            )
            opened.append(store)
            return store

        yield make
        for store in opened:
            store.close()
