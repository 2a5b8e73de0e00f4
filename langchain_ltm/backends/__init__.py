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
        if isinstance(exc, MissingDependencyError) or blamed_package(exc) == "langchain_ltm":
            raise  # a module of ours failed to import: a bug, not a package to install
        raise MissingDependencyError(
            f"This engine needs optional packages ({exc.name} is missing): "
            f'pip install "langchain-ltm[{extra}]"'
        ) from exc


def blamed_package(exc: ImportError) -> str:
    """The top-level package whose import failed: the missing module's, else the raiser's.

    ``exc.name`` names the module that could not be found or lacks a name; an
    ``ImportError`` raised by hand (psycopg's "no pq wrapper available") has none, and
    the module whose code raised it is blamed.

    Example:
        >>> try:
        ...     import psycopg_nonexistent_module
        ... except ImportError as exc:
        ...     blamed_package(exc)
        'psycopg_nonexistent_module'
    """
    if exc.name:
        return exc.name.partition(".")[0]
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    module = "" if tb is None else str(tb.tb_frame.f_globals.get("__name__", ""))
    return module.partition(".")[0]


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
