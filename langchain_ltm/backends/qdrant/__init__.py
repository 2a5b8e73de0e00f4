"""Qdrant: embedded (in memory or a folder) or a server (``pip install "langchain-ltm[qdrant]"``).

- :mod:`.backend`: ``QdrantBackend`` (reads, writes, the embedded mirror, closing).
- :mod:`._factory`: :func:`qdrant_backend`, which opens the client from a URL, a folder or
  ``":memory:"``.
- :mod:`._collection`: the collection's creation and checks, and the client's errors.
- :mod:`._domains`: what backends of one process share (lock domains, mirrors, client locks).
- :mod:`._layout`: points and payloads (one point per embedded text, item fields, filters).
- :mod:`._plans`: each operation as a plan of client calls, run sync or async.
- :mod:`._folder`: an embedded folder's lock (wait, then a ``BackendError`` saying what to do).
"""

# backend first: it re-exports qdrant_backend, whose module _factory imports it
from langchain_ltm.backends.qdrant.backend import (
    IncompatibleCollectionError,
    QdrantBackend,
    qdrant_backend,
)

__all__ = ["IncompatibleCollectionError", "QdrantBackend", "qdrant_backend"]
