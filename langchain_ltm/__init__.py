"""langchain-ltm: durable, user-scoped long-term memory for LangChain and LangGraph agents.

Example:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_core.vectorstores import InMemoryVectorStore
    >>> from langchain_ltm import LongTermMemoryStore
    >>> store = LongTermMemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=16)))
    >>> store.remember("u1", "works on the payments team").action
    'created'
"""

from langchain_ltm.errors import (
    BackendError,
    EmbeddingDimensionError,
    InvalidFactError,
    InvalidFilterError,
    InvalidUserIdError,
    LTMError,
    MissingDependencyError,
    UnsupportedVectorStoreError,
)
from langchain_ltm.facts import Fact, RememberResult, content_hash, normalize_fact
from langchain_ltm.store import DEFAULT_UPSERT_THRESHOLD, LongTermMemoryStore

__all__ = [
    "DEFAULT_UPSERT_THRESHOLD",
    "BackendError",
    "EmbeddingDimensionError",
    "Fact",
    "InvalidFactError",
    "InvalidFilterError",
    "InvalidUserIdError",
    "LTMError",
    "LongTermMemoryStore",
    "MissingDependencyError",
    "RememberResult",
    "UnsupportedVectorStoreError",
    "content_hash",
    "normalize_fact",
]

__version__ = "0.1.0"
