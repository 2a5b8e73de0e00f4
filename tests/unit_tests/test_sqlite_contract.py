"""The BaseStore contract on the SQLite engine: every test must pass, none is excused.

Each store is a fresh file under ``tmp_path``; the contract runs sync and async.
"""

from __future__ import annotations

import itertools

import pytest

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.sqlite import SqliteBackend, sqlite_backend
from tests.fakes import KeywordEmbeddings
from tests.store_contract import BaseStoreContract

_names = itertools.count()


class TestSqliteContract(BaseStoreContract):
    @pytest.fixture
    def store_factory(self, tmp_path):
        opened: list[SqliteBackend] = []

        def make(fields: list[str] | None = None, ttl=None) -> LongTermMemoryStore:
            backend = sqlite_backend(tmp_path / f"db{next(_names)}.sqlite")
            opened.append(backend)
            options = {} if ttl is None else {"ttl": ttl}
            return LongTermMemoryStore(
                backend, embeddings=KeywordEmbeddings(dims=64), fields=fields, **options
            )

        yield make
        for backend in opened:
            backend.close()
