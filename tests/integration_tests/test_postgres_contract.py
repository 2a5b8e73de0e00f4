"""The BaseStore contract on the Postgres engine: every test must pass, none is excused."""

from __future__ import annotations

import pytest
from langgraph.store.base import TTLConfig

from langchain_ltm import LongTermMemoryStore
from tests.fakes import KeywordEmbeddings
from tests.store_contract import BaseStoreContract


class TestPostgresStoreContract(BaseStoreContract):
    @pytest.fixture
    def store_factory(self, make_backend):
        def make(fields: list[str] | None = None, ttl: TTLConfig | None = None):
            return LongTermMemoryStore(
                make_backend(), embeddings=KeywordEmbeddings(dims=64), fields=fields, ttl=ttl
            )

        return make
