"""The per-user fact API on the generic engine over PGVectorStore and the older PGVector."""

from __future__ import annotations

import pytest

from tests.engine_facts import *  # noqa: F403  (every engine runs these)
from tests.vectorstores import open_store, pg_services  # noqa: F401  (fixture)


@pytest.fixture(params=["pgvector", "pgvector-legacy"])
def store(request, emb, tmp_path, pg_services):
    store = open_store(request.param, emb, tmp_path, upsert_threshold=0.8)
    yield store
    store.close()
