"""The exceptions langchain-ltm defines.

Every exception class here derives from :class:`LTMError` and also from the nearest builtin,
so existing ``except ValueError`` / ``except ImportError`` clauses keep working. Not every
error the library raises is one of these: a bad argument (a negative ``limit``, a naive
``as_of``, an unknown ``mode``, a store option out of range) raises a plain ``ValueError``
or ``TypeError`` whose message says what to pass; the engines' and the fact API's own
failures are :class:`LTMError` subclasses.

Example:
    >>> from langchain_ltm.errors import InvalidUserIdError, LTMError
    >>> issubclass(InvalidUserIdError, ValueError) and issubclass(InvalidUserIdError, LTMError)
    True
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BackendError",
    "DuplicateFactError",
    "EmbeddingDimensionError",
    "EngineLimitError",
    "FactNotFoundError",
    "IncompatibleCollectionError",
    "InvalidFactError",
    "InvalidFilterError",
    "InvalidUserIdError",
    "LTMError",
    "LockLostError",
    "MissingDependencyError",
    "MissingUserIdError",
    "ModelFileError",
    "RecallTargetError",
    "SchemaVersionError",
    "StoreInUseError",
    "UnsupportedVectorStoreError",
]


class LTMError(Exception):
    """Base class of every error raised by langchain-ltm."""


class InvalidUserIdError(LTMError, ValueError):
    """The user id is missing, empty, not a string or too long."""


class MissingUserIdError(InvalidUserIdError):
    """The run carries no user id, so the memory tools cannot tell whose memories to use."""


class InvalidFactError(LTMError, ValueError):
    """A fact or a recall query is empty, not a string, too long or not valid text."""


class FactNotFoundError(LTMError, KeyError):
    """The user has no fact with the given id (it was forgotten, or belongs to someone else)."""

    def __str__(self) -> str:  # KeyError would print the message in quotes
        return str(self.args[0]) if self.args else ""


class InvalidFilterError(LTMError, ValueError):
    """A search filter uses an unknown operator or a value the operator cannot compare."""


class EmbeddingDimensionError(LTMError, ValueError):
    """The embeddings return vectors of another size than the ones already stored."""


class UnsupportedVectorStoreError(LTMError, TypeError):
    """The vectorstore given to LongTermMemoryStore has no backend adapter."""


class MissingDependencyError(LTMError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class BackendError(LTMError, RuntimeError):
    """The storage engine failed (connection dropped, disk full, read-only database)."""


class EngineLimitError(LTMError, ValueError):
    """What was asked is past a limit of the engine; the message names it and what to change.

    A key and its namespace longer than a Postgres index entry holds, or a statement with
    more values than Postgres binds. Nothing of the call was written, and repeating it
    fails the same way.
    """


class StoreInUseError(BackendError):
    """Others are using the store, so it was not compacted or migrated (nothing was changed).

    Raised by SQLite's and Postgres' ``compact`` (``ltm compact``) and Postgres'
    ``migrate_vector_type``; also importable from ``langchain_ltm.backends.sqlite`` and
    ``langchain_ltm.backends.postgres``.
    """


class SchemaVersionError(BackendError):
    """The store (a SQLite file, Postgres tables) was written by a newer release.

    Upgrade langchain-ltm to open it. One class for both engines; also importable from
    ``langchain_ltm.backends.sqlite`` and ``langchain_ltm.backends.postgres``.
    """


class LockLostError(BackendError):
    """A Postgres write was refused: a lock its caller held was released under it.

    The connection holding a user's lock ended (killed, or a server timeout), so another
    writer may have written since; nothing of the write was made. Retry the call. When the
    write's own connection broke too as it committed (a server restart, a network fault
    ending both), its first attempt may have been stored: the message then says so, and
    a retried call reads again and finds it.
    """


class IncompatibleCollectionError(LTMError, ValueError):
    """The Qdrant collection exists with a vector layout langchain-ltm cannot use.

    Its distance is not cosine, its vectors are not the size the embeddings give, or its
    vector name is another than ``vector_name``: nothing was changed in it. Also importable
    from ``langchain_ltm.backends.qdrant``.
    """


class ModelFileError(LTMError, ValueError):
    """A model directory or file is missing, unreadable or not a usable ONNX encoder.

    Raised by ``LocalMiniLMEmbeddings`` and ``MiniLMEncoder``; also importable from
    ``langchain_ltm.embeddings``.
    """


class DuplicateFactError(BackendError):
    """Two writers stored the same fact for one user at once; the later batch was refused.

    ``remember`` retries once on it (the retry finds the stored fact: a duplicate).
    """


class RecallTargetError(LTMError, ValueError):
    """A broad-scope walk of the HNSW index cannot reach the recall a calibration asked for.

    ``calibration`` holds what was measured (a ``BroadCalibration``: every ``ef_search``
    tried, the best recall); nothing was stored. Lower ``target_recall``, or rebuild the
    index denser (``create_hnsw_index(m=..., ef_construction=...)``) and calibrate again.
    """

    def __init__(self, message: str, calibration: Any) -> None:
        super().__init__(message)
        self.calibration = calibration
