"""langchain-ltm: durable, user-scoped long-term memory for LangChain and LangGraph agents.

Example:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_core.vectorstores import InMemoryVectorStore
    >>> from langchain_ltm import LongTermMemoryStore
    >>> store = LongTermMemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=16)))
    >>> store.remember("u1", "works on the payments team").action
    'created'
"""

from typing import TYPE_CHECKING

from langchain_ltm.agents.config import LongTermMemoryConfig
from langchain_ltm.errors import (
    BackendError,
    DuplicateFactError,
    EmbeddingDimensionError,
    FactNotFoundError,
    InvalidFactError,
    InvalidFilterError,
    InvalidUserIdError,
    LTMError,
    MissingDependencyError,
    MissingUserIdError,
    UnsupportedVectorStoreError,
)
from langchain_ltm.facts import (
    Ambiguity,
    ChatModelResolver,
    Fact,
    FactVersion,
    ImportResult,
    RecalledFact,
    RememberResult,
    Resolution,
    Resolver,
    SimilarFact,
    content_hash,
    normalize_fact,
)
from langchain_ltm.guard import find_secret
from langchain_ltm.store import (
    DEFAULT_MERGE_THRESHOLD,
    DEFAULT_REVIEW_THRESHOLD,
    DEFAULT_UPSERT_THRESHOLD,
    LongTermMemoryStore,
)

__all__ = [
    "DEFAULT_MERGE_THRESHOLD",
    "DEFAULT_REVIEW_THRESHOLD",
    "DEFAULT_UPSERT_THRESHOLD",
    "Ambiguity",
    "BackendError",
    "ChatModelResolver",
    "DuplicateFactError",
    "EmbeddingDimensionError",
    "ErasureReport",
    "Fact",
    "FactNotFoundError",
    "FactVersion",
    "ImportResult",
    "InvalidFactError",
    "InvalidFilterError",
    "InvalidUserIdError",
    "LTMError",
    "LongTermMemoryConfig",
    "LongTermMemoryStore",
    "MemoryMiddleware",
    "MissingDependencyError",
    "MissingUserIdError",
    "RecalledFact",
    "RememberResult",
    "Resolution",
    "Resolver",
    "SessionMemoryMiddleware",
    "SimilarFact",
    "UnsupportedVectorStoreError",
    "aexport_user_data",
    "aforget_user",
    "content_hash",
    "create_memory_tools",
    "export_user_data",
    "find_secret",
    "forget_user",
    "memory_pre_model_hook",
    "memory_tools_for",
    "normalize_fact",
    "resolve_user_id",
]

__version__ = "0.1.0"

# The agent side pulls in langgraph.prebuilt and langchain (~0.6 s of imports): load it on
# first use, so the store and the `ltm` command start fast.
_LAZY = {
    "create_memory_tools": "langchain_ltm.agents.tools",
    "memory_tools_for": "langchain_ltm.agents.tools",
    "resolve_user_id": "langchain_ltm.agents.tools",
    "MemoryMiddleware": "langchain_ltm.agents.middleware",
    "SessionMemoryMiddleware": "langchain_ltm.agents.session",
    "ErasureReport": "langchain_ltm.agents.erase",
    "forget_user": "langchain_ltm.agents.erase",
    "aforget_user": "langchain_ltm.agents.erase",
    "export_user_data": "langchain_ltm.agents.erase",
    "aexport_user_data": "langchain_ltm.agents.erase",
    "memory_pre_model_hook": "langchain_ltm.agents.hooks",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'langchain_ltm' has no attribute {name!r}")


if TYPE_CHECKING:
    from langchain_ltm.agents.erase import (
        ErasureReport,
        aexport_user_data,
        aforget_user,
        export_user_data,
        forget_user,
    )
    from langchain_ltm.agents.hooks import memory_pre_model_hook
    from langchain_ltm.agents.middleware import MemoryMiddleware
    from langchain_ltm.agents.session import SessionMemoryMiddleware
    from langchain_ltm.agents.tools import create_memory_tools, memory_tools_for, resolve_user_id
