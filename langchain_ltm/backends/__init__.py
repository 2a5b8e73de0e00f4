"""Storage engines behind LongTermMemoryStore, one module each behind ``VectorBackend``."""

from __future__ import annotations

import importlib
from typing import Any

from langchain_ltm.backends.base import Capabilities, VectorBackend
from langchain_ltm.errors import MissingDependencyError, UnsupportedVectorStoreError

__all__ = ["Capabilities", "VectorBackend", "backend_for", "engine"]


def engine(name: str, extra: str) -> Any:
    """The engine ``langchain_ltm.backends.<name>``; a missing extra says what to install."""
    try:
        return importlib.import_module(f"langchain_ltm.backends.{name}")
    except ImportError as exc:
        if isinstance(exc, MissingDependencyError):
            raise
        raise MissingDependencyError(
            f"This engine needs optional packages ({exc.name} is missing): "
            f'pip install "langchain-ltm[{extra}]"'
        ) from exc


def backend_for(vectorstore: Any) -> VectorBackend:
    """The backend adapter for a LangChain vectorstore (or the backend itself)."""
    if isinstance(vectorstore, VectorBackend):
        return vectorstore
    from langchain_ltm.backends.vectorstore.family import registered

    if registered(vectorstore) is not None:  # a registered family wins over the fast paths
        from langchain_ltm.backends.vectorstore import VectorStoreBackend

        return VectorStoreBackend(vectorstore)
    from langchain_core.vectorstores import InMemoryVectorStore

    if isinstance(vectorstore, InMemoryVectorStore):
        from langchain_ltm.backends.memory import MemoryBackend

        return MemoryBackend(vectorstore)
    module = type(vectorstore).__module__
    if module.startswith("langchain_qdrant"):
        from langchain_ltm.backends.qdrant import QdrantBackend

        return QdrantBackend.from_vectorstore(vectorstore)
    from langchain_core.vectorstores import VectorStore

    if not isinstance(vectorstore, VectorStore):
        raise UnsupportedVectorStoreError(
            f"No langchain-ltm backend for {type(vectorstore).__name__}: pass a LangChain "
            "VectorStore (InMemoryVectorStore, QdrantVectorStore, Chroma, FAISS, or one "
            "registered with register_vectorstore), a VectorBackend, or use "
            "LongTermMemoryStore.from_sqlite(path, embeddings) / from_postgres(...)."
        )
    # every other LangChain vectorstore: the generic engine, scope in the store's own filter
    from langchain_ltm.backends.vectorstore import VectorStoreBackend

    return VectorStoreBackend(vectorstore)
