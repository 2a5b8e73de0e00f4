"""The Qdrant engine against a real server: runs only when ``QDRANT_URL`` is set.

``QDRANT_URL=http://localhost:6333 pytest tests/integration_tests/test_qdrant_server.py``
(``QDRANT_API_KEY`` too if the server needs one). Every test uses its own collection and
drops it afterwards.
"""

from __future__ import annotations

import os
import uuid

import pytest

from langchain_ltm import EmbeddingDimensionError, LongTermMemoryStore
from langchain_ltm.backends.qdrant import QdrantBackend, qdrant_backend
from tests.fakes import KeywordEmbeddings
from tests.store_contract import BaseStoreContract

URL = os.environ.get("QDRANT_URL")
API_KEY = os.environ.get("QDRANT_API_KEY")

pytestmark = pytest.mark.skipif(
    not URL, reason="QDRANT_URL is not set: no Qdrant server to test against"
)


@pytest.fixture
def open_backend():
    opened: list[QdrantBackend] = []

    def make(**options) -> QdrantBackend:
        options.setdefault("collection", f"ltm_test_{uuid.uuid4().hex[:12]}")
        backend = qdrant_backend(URL, api_key=API_KEY, **options)
        opened.append(backend)
        return backend

    yield make
    for backend in opened:
        if backend.client.collection_exists(backend.collection):
            backend.client.delete_collection(backend.collection)
        backend.close()


class TestQdrantServerContract(BaseStoreContract):
    @pytest.fixture
    def store_factory(self, open_backend):
        def make(fields: list[str] | None = None) -> LongTermMemoryStore:
            backend = open_backend(dims=64)
            return LongTermMemoryStore(backend, embeddings=KeywordEmbeddings(64), fields=fields)

        return make


def test_payload_indexes_and_tenant_index(open_backend):
    backend = open_backend(dims=64)
    schema = backend.client.get_collection(backend.collection).payload_schema
    assert {"user", "ns", "ns_prefixes", "key", "value.content_hash", "head", "indexed"} <= set(
        schema
    )
    assert schema["user"].params.is_tenant is True
    assert backend.capabilities.extra["mode"] == "server"


def test_dimension_mismatch_on_the_server(open_backend):
    backend = open_backend(dims=64)
    with pytest.raises(EmbeddingDimensionError, match="holds 64-dimensional"):
        open_backend(collection=backend.collection, dims=32)


async def test_facts_sync_and_async(open_backend):
    store = LongTermMemoryStore(open_backend(dims=64), embeddings=KeywordEmbeddings(64))
    first = await store.aremember("u1", "I prefer answers in Spanish")
    again = store.remember("u1", "i prefer answers in spanish.")
    assert (first.action, again.action) == ("created", "duplicate")
    assert [f.content for f in await store.arecall("u1", ["Spanish", "language"])] == [
        "I prefer answers in Spanish"
    ]
    assert await store.arecall("u2", "Spanish") == []
    assert store.clear_user("u1") == 1
