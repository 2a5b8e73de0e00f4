"""The BaseStore contract on the generic engine over Chroma, FAISS and Milvus Lite.

None is excused. The same suite runs on a real Chroma server in
tests/integration_tests/test_vectorstore_servers.py.
"""

from __future__ import annotations

from tests.vectorstores import VectorStoreContract


class TestChromaContract(VectorStoreContract):
    kind = "chroma"


class TestFaissContract(VectorStoreContract):
    kind = "faiss"


class TestMilvusContract(VectorStoreContract):
    kind = "milvus"
