"""Qdrant: embedded (in memory or a folder) or a server (``pip install "langchain-ltm[qdrant]"``).

- :mod:`.backend`: ``QdrantBackend`` and :func:`qdrant_backend`.
- :mod:`._layout`: points and payloads (one point per embedded text, item fields, filters).
- :mod:`._plans`: each operation as a plan of client calls, run sync or async.
- :mod:`._folder`: an embedded folder's lock (wait, then a ``BackendError`` saying what to do).
"""

from langchain_ltm.backends.qdrant.backend import (
    IncompatibleCollectionError,
    QdrantBackend,
    qdrant_backend,
)

__all__ = ["IncompatibleCollectionError", "QdrantBackend", "qdrant_backend"]
