"""The generic engine: memories in any LangChain ``VectorStore``, scoped in its own filter.

``LongTermMemoryStore(vs)`` lands here for every vectorstore without a dedicated engine.
Chroma (``langchain-chroma``) and FAISS (``langchain-community``) are built in; any other
store with ``get_by_ids``, ``delete(ids)``, an add with precomputed vectors and a search by
vector with a metadata filter works after :func:`register_vectorstore`.
"""

from __future__ import annotations

from langchain_ltm.backends.vectorstore.backend import VectorStoreBackend, vectorstore_backend
from langchain_ltm.backends.vectorstore.family import (
    DISTANCES,
    StoreFamily,
    family_for,
    register_vectorstore,
)

__all__ = [
    "DISTANCES",
    "StoreFamily",
    "VectorStoreBackend",
    "family_for",
    "register_vectorstore",
    "vectorstore_backend",
]
