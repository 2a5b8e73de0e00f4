"""The per-user fact API on the SQLite engine: test_facts.py's and test_versions.py's cases.

The imported tests take the ``store`` fixture, which this module overrides with a store on
a fresh SQLite file; each runs sync and async.
"""

from __future__ import annotations

import pytest

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.sqlite import sqlite_backend
from tests.engine_facts import *  # noqa: F403  (every engine runs these)


@pytest.fixture
def store(emb, tmp_path):
    backend = sqlite_backend(tmp_path / "facts.sqlite")
    yield LongTermMemoryStore(backend, embeddings=emb, upsert_threshold=0.8)
    backend.close()
