"""The one check of the agent helpers' ``store`` argument: a ``LongTermMemoryStore``."""

from __future__ import annotations

from typing import Any

from langchain_ltm.store import LongTermMemoryStore


def require_store(store: Any, helper: str) -> LongTermMemoryStore:
    """``store`` if it is a :class:`LongTermMemoryStore`, else a TypeError saying to wrap it.

    Without it a LangGraph ``InMemoryStore`` or a bare vectorstore failed later with an
    ``AttributeError`` (``with_options``, ``backend``, ...), or only at the first run.
    """
    if isinstance(store, LongTermMemoryStore):
        return store
    name = type(store).__name__
    if name == "FactStore":
        hint = (
            "a FactStore has no BaseStore around it; open a LongTermMemoryStore on the same "
            "engine, e.g. LongTermMemoryStore.from_sqlite(path, embeddings)"
        )
    else:
        hint = (
            "wrap your vectorstore: LongTermMemoryStore(vectorstore), or open one with "
            "LongTermMemoryStore.from_sqlite(path, embeddings) (a LangGraph store such as "
            "InMemoryStore keeps no facts; SessionMemoryMiddleware takes any BaseStore)"
        )
    raise TypeError(f"{helper} needs a LongTermMemoryStore, got {name}: {hint}.")
