"""The per-user fact API on the generic engine, over Chroma, FAISS and Milvus Lite."""

from __future__ import annotations

import pytest

from tests.engine_facts import *  # noqa: F403  (every engine runs these)
from tests.vectorstores import KINDS, open_store


@pytest.fixture(params=KINDS)
def store(request, emb, tmp_path):
    store = open_store(request.param, emb, tmp_path, upsert_threshold=0.8)
    yield store
    store.close()
