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

from langchain_ltm.errors import (
    BackendError,
    CatalogMismatchError,
    DuplicateFactError,
    EmbeddingDimensionError,
    EngineLimitError,
    FactNotFoundError,
    IncompatibleCollectionError,
    InvalidFactError,
    InvalidFilterError,
    InvalidUserIdError,
    KeyTakenError,
    LockLostError,
    LTMError,
    MissingDependencyError,
    MissingUserIdError,
    ModelFileError,
    RecallTargetError,
    SchemaVersionError,
    StoreInUseError,
    UnsupportedVectorStoreError,
)

__all__ = [
    "DEFAULT_MERGE_THRESHOLD",
    "DEFAULT_REVIEW_THRESHOLD",
    "DEFAULT_UPSERT_THRESHOLD",
    "Ambiguity",
    "BackendError",
    "CatalogMismatchError",
    "ChatModelResolver",
    "DuplicateFactError",
    "EmbeddingDimensionError",
    "EngineLimitError",
    "ErasureReport",
    "Fact",
    "FactNotFoundError",
    "FactStore",
    "FactVersion",
    "ImportResult",
    "IncompatibleCollectionError",
    "InvalidFactError",
    "InvalidFilterError",
    "InvalidUserIdError",
    "KeyTakenError",
    "LTMError",
    "LockLostError",
    "LongTermMemoryConfig",
    "LongTermMemoryStore",
    "MemoryMiddleware",
    "MissingDependencyError",
    "MissingUserIdError",
    "ModelFileError",
    "RecallTargetError",
    "RecalledFact",
    "RememberResult",
    "Resolution",
    "Resolver",
    "SchemaVersionError",
    "SessionMemoryMiddleware",
    "SimilarFact",
    "StoreInUseError",
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

__version__ = "0.2.0.dev0"

# Every name but the errors loads on first use: the store pulls in numpy, langchain-core and
# langgraph (~0.4 s of imports), the agent side langgraph.prebuilt and langchain (~0.6 s), so
# `import langchain_ltm.cli` (`ltm --help`) and the store each import only what they use.
_LAZY = {
    "LongTermMemoryConfig": "langchain_ltm.agents.config",
    **dict.fromkeys(
        [
            "Ambiguity",
            "ChatModelResolver",
            "Fact",
            "FactStore",
            "FactVersion",
            "ImportResult",
            "RecalledFact",
            "RememberResult",
            "Resolution",
            "Resolver",
            "SimilarFact",
            "content_hash",
            "normalize_fact",
        ],
        "langchain_ltm.facts",
    ),
    "find_secret": "langchain_ltm.guard",
    **dict.fromkeys(
        [
            "DEFAULT_MERGE_THRESHOLD",
            "DEFAULT_REVIEW_THRESHOLD",
            "DEFAULT_UPSERT_THRESHOLD",
            "LongTermMemoryStore",
        ],
        "langchain_ltm.store",
    ),
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

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # the next lookup is an ordinary one
        return value
    raise AttributeError(f"module 'langchain_ltm' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


if TYPE_CHECKING:
    from langchain_ltm.agents.config import LongTermMemoryConfig
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
    from langchain_ltm.facts import (
        Ambiguity,
        ChatModelResolver,
        Fact,
        FactStore,
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
