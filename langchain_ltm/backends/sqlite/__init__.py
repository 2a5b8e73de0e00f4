"""One SQLite file, Python's own ``sqlite3`` in WAL mode (no extra needed).

- :mod:`.backend`: ``SqliteBackend`` and :func:`sqlite_backend`.
- :mod:`._sql`: the tables, the order-preserving namespace key, reads and writes.
- :mod:`._search`: exact per-user search (numpy over the user's key range) and filters.
- :mod:`._lock`: the cross-process per-user lock (``flock`` stripes beside the file).
- :mod:`._compact`: :func:`compact` (``ltm compact``): ``VACUUM`` when no one else has it open.
"""

from langchain_ltm.backends.sqlite._compact import Compacted, StoreInUseError, compact
from langchain_ltm.backends.sqlite.backend import (
    BACKEND_OPTIONS,
    SchemaVersionError,
    SqliteBackend,
    sqlite_backend,
)

__all__ = [
    "BACKEND_OPTIONS",
    "Compacted",
    "SchemaVersionError",
    "SqliteBackend",
    "StoreInUseError",
    "compact",
    "sqlite_backend",
]
