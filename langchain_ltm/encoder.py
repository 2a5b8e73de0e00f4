"""The offline MiniLM sentence embeddings without LangChain, for scripts that start fast.

:class:`MiniLMEncoder` is :class:`~langchain_ltm.embeddings.LocalMiniLMEmbeddings` without
LangChain's ``Embeddings`` base class: the same arguments, methods (``embed_documents``,
``embed_query`` and their async twins), checks and vectors. Importing this module imports
neither langchain-core nor LangGraph, so with :class:`~langchain_ltm.FactStore` a script
that only remembers and recalls starts sooner; every store takes it. The stores' type
hints say so: their ``embeddings`` is an :class:`EmbeddingsLike`, the protocol of those four
methods, which LangChain's ``Embeddings`` and this encoder both satisfy.

Example:
    >>> import tempfile, pathlib
    >>> from langchain_ltm import FactStore
    >>> from langchain_ltm.encoder import MiniLMEncoder
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "memories.db"
    >>> with FactStore.from_sqlite(path, MiniLMEncoder()) as facts:
    ...     _ = facts.remember("alice", "Prefers answers in Spanish")
    ...     [f.content for f in facts.recall("alice", "which language?")]
    ['Prefers answers in Spanish']
"""

from __future__ import annotations

from langchain_ltm._embedder import EmbeddingsLike
from langchain_ltm._minilm import MiniLMEncoder

__all__ = ["EmbeddingsLike", "MiniLMEncoder"]
