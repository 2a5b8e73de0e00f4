"""The BaseStore contract on the generic engine over PGVectorStore (and the older PGVector)."""

from __future__ import annotations

import pytest

from tests.unit_tests.test_vectorstore_contract import _Contract
from tests.vectorstores import pg_services  # noqa: F401  (fixture)


@pytest.mark.usefixtures("pg_services")
class TestPGVectorStoreContract(_Contract):
    kind = "pgvector"


@pytest.mark.usefixtures("pg_services")
class TestPGVectorLegacyContract(_Contract):
    kind = "pgvector-legacy"
