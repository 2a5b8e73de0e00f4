"""The per-user fact API on the Qdrant engine: test_facts.py's cases, re-collected here.

The imported tests take the ``store`` fixture, which this module overrides: each one runs on
embedded ``:memory:`` and on a folder (reads from the mirror), and through the server code
path on a simulated server (``tests/qdrant_sim.py``), sync and async.
"""

from __future__ import annotations

import pytest

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.qdrant import QdrantBackend, qdrant_backend
from tests.engine_facts import *  # noqa: F403  (every engine runs these)
from tests.qdrant_sim import SimulatedQdrantServer


@pytest.fixture(params=["memory", "path", "server-path"])
def store(request, emb, tmp_path):
    if request.param == "path":
        backend = qdrant_backend(tmp_path / "db", dims=64)
    elif request.param == "server-path":
        server = SimulatedQdrantServer()
        backend = QdrantBackend(server.client(), dims=64, aclient=server.aclient())
    else:
        backend = qdrant_backend(":memory:", dims=64)
    yield LongTermMemoryStore(backend, embeddings=emb, upsert_threshold=0.8)
    backend.close()
