"""lock()/unlock() on the single-writer engines: the base class's no-op, said by capabilities.

(The Postgres lock, which spans processes, is tested in
``tests/integration_tests/test_postgres_lock.py``.)
"""

from __future__ import annotations

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_ltm.backends import VectorBackend, backend_for
from langchain_ltm.backends.qdrant import qdrant_backend


@pytest.fixture(params=["memory", "qdrant_memory", "qdrant_folder"])
def backend(request, tmp_path):
    if request.param == "memory":
        yield backend_for(InMemoryVectorStore(DeterministicFakeEmbedding(size=8)))
        return
    where = ":memory:" if request.param == "qdrant_memory" else tmp_path / "qdrant"
    made = qdrant_backend(where, dims=8)
    yield made
    made.close()


async def test_single_writer_engines_have_no_cross_process_lock(backend: VectorBackend):
    assert backend.capabilities.cross_process_lock is False
    first = backend.lock("u1")
    second = backend.lock("u1")  # no lock at all: callers in process serialize themselves
    backend.unlock(second)
    backend.unlock(first)
    token = await backend.alock("u1")
    await backend.aunlock(token)
    assert backend.count(("memories", "u1")) == 0
