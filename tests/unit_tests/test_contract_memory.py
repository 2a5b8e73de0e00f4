"""The BaseStore contract on our in-memory engine: every test must pass, none is excused."""

from __future__ import annotations

import pytest
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.base import TTLConfig

from langchain_ltm import LongTermMemoryStore
from tests.fakes import KeywordEmbeddings
from tests.store_contract import BaseStoreContract


class TestMemoryStoreContract(BaseStoreContract):
    @pytest.fixture
    def store_factory(self):
        def make(fields: list[str] | None = None, ttl: TTLConfig | None = None):
            vectorstore = InMemoryVectorStore(KeywordEmbeddings(dims=64))
            return LongTermMemoryStore(vectorstore, fields=fields, ttl=ttl)

        return make
