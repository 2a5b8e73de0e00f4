"""The per-user fact API on the Qdrant engine: test_facts.py's cases, re-collected here.

The imported tests take the ``store`` fixture, which this module overrides: each one runs on
embedded ``:memory:`` and on a folder (reads from the mirror), and on ``:memory:`` through the
server code path (``mirror=False``), sync and async.
"""

from __future__ import annotations

import pytest

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.qdrant import qdrant_backend
from tests.engine_facts import *  # noqa: F403  (every engine runs these)


@pytest.fixture(params=["memory", "path", "server-path"])
def store(request, emb, tmp_path):
    if request.param == "path":
        backend = qdrant_backend(tmp_path / "db", dims=64)
    else:
        backend = qdrant_backend(":memory:", dims=64, mirror=request.param == "memory")
    yield LongTermMemoryStore(backend, embeddings=emb, upsert_threshold=0.8)
    backend.close()
