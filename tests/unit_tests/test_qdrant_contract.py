"""The BaseStore contract on the Qdrant engine, embedded: every test must pass, none is excused.

Three layouts of the same engine:
- ``:memory:`` and a folder, reads served by the in-process mirror (embedded mode's default);
- a simulated server (``tests/qdrant_sim.py``: real ``QdrantClient(url=...)`` and
  ``AsyncQdrantClient`` objects over one local-mode engine): the server code path, its reads,
  writes and async twins, every read a Qdrant request with a ``models.Filter``.
"""

from __future__ import annotations

import itertools

import pytest
from langgraph.store.base import TTLConfig

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.qdrant import QdrantBackend, qdrant_backend
from tests.fakes import KeywordEmbeddings
from tests.qdrant_sim import SimulatedQdrantServer
from tests.store_contract import BaseStoreContract

_names = itertools.count()


def _store(
    backend: QdrantBackend, fields: list[str] | None, ttl: TTLConfig | None
) -> LongTermMemoryStore:
    return LongTermMemoryStore(
        backend, embeddings=KeywordEmbeddings(dims=64), fields=fields, ttl=ttl
    )


class TestQdrantMemoryContract(BaseStoreContract):
    @pytest.fixture
    def store_factory(self):
        def make(fields: list[str] | None = None, ttl: TTLConfig | None = None):
            return _store(qdrant_backend(":memory:", dims=64), fields, ttl)

        return make


class TestQdrantPathContract(BaseStoreContract):
    @pytest.fixture
    def store_factory(self, tmp_path):
        opened: list[QdrantBackend] = []

        def make(fields: list[str] | None = None, ttl: TTLConfig | None = None):
            backend = qdrant_backend(tmp_path / f"db{next(_names)}", dims=64)
            opened.append(backend)
            return _store(backend, fields, ttl)

        yield make
        for backend in opened:
            backend.close()


class TestQdrantServerPathContract(BaseStoreContract):
    """The plans a server runs (sync and async), executed by local mode behind server clients."""

    @pytest.fixture
    def store_factory(self):
        def make(fields: list[str] | None = None, ttl: TTLConfig | None = None):
            server = SimulatedQdrantServer()
            backend = QdrantBackend(server.client(), dims=64, aclient=server.aclient())
            assert backend.layout.server and backend.capabilities.extra["mode"] == "server"
            return _store(backend, fields, ttl)

        return make
