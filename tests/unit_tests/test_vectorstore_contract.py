"""The BaseStore contract on the generic engine over Chroma and FAISS: none is excused."""

from __future__ import annotations

import pytest

from langchain_ltm import LongTermMemoryStore
from tests.fakes import KeywordEmbeddings
from tests.store_contract import BaseStoreContract
from tests.vectorstores import open_store


class _Contract(BaseStoreContract):
    kind = ""

    @pytest.fixture
    def store_factory(self, tmp_path):
        opened: list[LongTermMemoryStore] = []

        def make(fields: list[str] | None = None, ttl=None) -> LongTermMemoryStore:
            options = {} if ttl is None else {"ttl": ttl}
            store = open_store(
                self.kind, KeywordEmbeddings(dims=64), tmp_path, fields=fields, **options
            )
            opened.append(store)
            return store

        yield make
        for store in opened:
            store.close()


class TestChromaContract(_Contract):
    kind = "chroma"


class TestFaissContract(_Contract):
    kind = "faiss"
