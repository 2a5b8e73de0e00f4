"""Postgres with pgvector (``pip install "langchain-ltm[postgres]"``).

- :mod:`.backend`: ``PostgresBackend``; :mod:`._factory`: :func:`postgres_backend` (URL,
  ``PGEngine`` or pool); :mod:`._maintenance`: the backend's table maintenance (vector
  type, compaction, the HNSW index and its calibration).
- :mod:`._sql`: what every statement shares (``Statement``, ``Tables``, namespaces as
  btree ranges, filters); :mod:`._reads`, :mod:`._writes` (key locks, TTL, advisory
  locks) and :mod:`._schema` (tables, migrations, vector types) build the statements, as
  data. :mod:`._broad` and :mod:`._calibrate`: broad-scope search through an HNSW index.
- :mod:`._connector`: running them on a pool, sync and async (one retry), over
  :mod:`._drive` (one exchange on one connection: pipeline, kept cursor, ``_direct``)
  and :mod:`._loop_pool` (the async pool of an event loop); :mod:`._errors`: psycopg
  errors translated; :mod:`._urls`: URLs checked, redacted, and to or from a ``PGEngine``.
- :mod:`._lock`: the cross-process per-user lock (transaction-level advisory locks).
- :mod:`._compact`: :meth:`PostgresBackend.compact` (``ltm compact``): each table
  rewritten in user order (``CLUSTER``).
"""

from langchain_ltm.backends._compaction import Compacted, StoreInUseError
from langchain_ltm.backends.postgres._calibrate import BroadCalibration, CalibrationStep
from langchain_ltm.backends.postgres._factory import BACKEND_OPTIONS, ENGINE_OPTIONS
from langchain_ltm.backends.postgres.backend import (
    DuplicateFactError,
    PostgresBackend,
    SchemaVersionError,
    postgres_backend,
)
from langchain_ltm.errors import LockLostError

__all__ = [
    "BACKEND_OPTIONS",
    "ENGINE_OPTIONS",
    "BroadCalibration",
    "CalibrationStep",
    "Compacted",
    "DuplicateFactError",
    "LockLostError",
    "PostgresBackend",
    "SchemaVersionError",
    "StoreInUseError",
    "postgres_backend",
]
