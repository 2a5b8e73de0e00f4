"""The per-user fact API on the generic engine over a store with native coroutines.

The async cases then run the native path (the store's own ``aadd_embeddings`` and
``asimilarity_search_with_score_by_vector``); the sync ones the sync calls.
"""

from __future__ import annotations

import pytest

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.vectorstore import vectorstore_backend
from tests.engine_facts import *  # noqa: F403  (every engine runs these)
from tests.unit_tests.test_vectorstore_engine import _RECORDING, _Recording


@pytest.fixture
def store(emb, tmp_path):
    backend = vectorstore_backend(_Recording(emb), catalog=tmp_path / "n.db", family=_RECORDING)
    store = LongTermMemoryStore(backend, embeddings=emb, upsert_threshold=0.8)
    yield store
    store.close()
