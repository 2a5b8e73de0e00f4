"""Open a store from a URL, with the offline embeddings by default (CLI and demo use this).

URLs:
- ``memory://``: in-process, gone when the process exits.
- ``sqlite:///PATH``: one SQLite file, many processes (``sqlite:///memory.db`` is relative
  to the current folder, ``sqlite:////abs/memory.db`` absolute, ``~`` expanded); no extra.
- ``postgresql://user:pass@host/db``: Postgres with pgvector (extra ``[postgres]``).
- ``http(s)://host:6333``: a Qdrant server (extra ``[qdrant]``).
- ``qdrant:PATH`` or a plain path: Qdrant's embedded engine persisting under PATH.
- nothing: the persistent embedded store in the user's data directory (``LTM_HOME`` or
  ``$XDG_DATA_HOME/langchain-ltm``, default ``~/.local/share/langchain-ltm``).
"""

from __future__ import annotations

import os
from pathlib import Path

from langchain_core.embeddings import Embeddings

from langchain_ltm.store import LongTermMemoryStore

__all__ = ["data_dir", "open_store"]


def data_dir() -> Path:
    """Where the default persistent store lives."""
    if home := os.environ.get("LTM_HOME"):
        return Path(home).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "langchain-ltm"


def open_store(
    url: str | None = None, *, embeddings: Embeddings | None = None
) -> tuple[LongTermMemoryStore, str]:
    """A store for ``url`` and a one-line description of where it keeps its data.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> store, where = open_store("memory://", embeddings=DeterministicFakeEmbedding(size=8))
        >>> where
        'memory:// (in-process, not persisted)'
    """
    if embeddings is None:
        from langchain_ltm.embeddings import LocalMiniLMEmbeddings

        embeddings = LocalMiniLMEmbeddings()
    if url is None:
        path = data_dir() / "qdrant"
        path.mkdir(parents=True, exist_ok=True)
        return LongTermMemoryStore.from_qdrant(str(path), embeddings), f"embedded Qdrant at {path}"
    if url == "memory://":
        from langchain_core.vectorstores import InMemoryVectorStore

        return LongTermMemoryStore(
            InMemoryVectorStore(embeddings)
        ), "memory:// (in-process, not persisted)"
    if url.startswith("sqlite:"):
        if not url.startswith("sqlite:///") or url == "sqlite:///":
            raise ValueError(
                f"{url!r} is not a SQLite URL: use sqlite:///memory.db (relative to the current "
                "folder) or sqlite:////home/me/memory.db (absolute)."
            )
        path = Path(url.removeprefix("sqlite:///")).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        return LongTermMemoryStore.from_sqlite(path, embeddings), f"SQLite at {path}"
    if url.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        return LongTermMemoryStore.from_postgres(url, embeddings), _redact(url)
    if url.startswith(("http://", "https://")):
        return LongTermMemoryStore.from_qdrant(url, embeddings), f"Qdrant server at {url}"
    path = Path(url.removeprefix("qdrant:")).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return LongTermMemoryStore.from_qdrant(str(path), embeddings), f"embedded Qdrant at {path}"


def _redact(url: str) -> str:
    head, sep, tail = url.rpartition("@")
    if not sep:
        return url
    scheme, _, _ = head.partition("://")
    return f"{scheme}://***@{tail}"
