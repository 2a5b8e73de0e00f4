"""The BaseStore contract on the generic engine over PGVectorStore (and the older PGVector)."""

from __future__ import annotations

import pytest

from tests.vectorstores import VectorStoreContract, pg_services  # noqa: F401  (fixture)


@pytest.mark.usefixtures("pg_services")
class TestPGVectorStoreContract(VectorStoreContract):
    kind = "pgvector"


@pytest.mark.usefixtures("pg_services")
class TestPGVectorLegacyContract(VectorStoreContract):
    kind = "pgvector-legacy"
