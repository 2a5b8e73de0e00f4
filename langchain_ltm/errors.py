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

from collections.abc import Sequence
from typing import Any

__all__ = [
    "BackendError",
    "CatalogMismatchError",
    "DuplicateFactError",
    "EmbeddingDimensionError",
    "EngineLimitError",
    "FactNotFoundError",
    "IncompatibleCollectionError",
    "InvalidFactError",
    "InvalidFilterError",
    "InvalidUserIdError",
    "KeyTakenError",
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
    """Base class of every error raised by langchain-ltm.

    Catch it to handle any of the library's own failures at once; each subclass also
    derives from the nearest builtin (``ValueError``, ``KeyError``, ``ImportError``...).

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> from langchain_ltm import LongTermMemoryStore
        >>> store = LongTermMemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=8)))
        >>> try:
        ...     store.remember("u1", "")
        ... except LTMError as e:
        ...     print(type(e).__name__, "-", e)
        InvalidFactError - fact is empty: pass some text.
    """


class InvalidUserIdError(LTMError, ValueError):
    """The user id is missing, empty, not a string or too long.

    Raised by every per-user call before any I/O; pass the id of a real user.

    Example:
        >>> from langchain_ltm import resolve_user_id
        >>> try:
        ...     resolve_user_id({"configurable": {"user_id": "  "}}, None)
        ... except InvalidUserIdError as e:
        ...     print(e)
        user_id is empty: pass a non-blank user id.
    """


class MissingUserIdError(InvalidUserIdError):
    """The run carries no user id, so the memory tools cannot tell whose memories to use.

    Raised by the memory tools and middleware (before any storage call): pass
    ``config={"configurable": {"user_id": ...}}`` to ``invoke()``, or a runtime context
    with a ``user_id`` field.

    Example:
        >>> from langchain_ltm import resolve_user_id
        >>> try:
        ...     resolve_user_id({"configurable": {}}, None)
        ... except MissingUserIdError:
        ...     print("no user: nothing was read or written")
        no user: nothing was read or written
    """


class InvalidFactError(LTMError, ValueError):
    r"""A fact or a recall query is empty, not a string, too long or not valid text.

    Nothing was written; the message says what to change (shorten it, drop a NUL...).

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> from langchain_ltm import LongTermMemoryStore
        >>> store = LongTermMemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=8)))
        >>> try:
        ...     store.remember("u1", "likes\x00tea")
        ... except InvalidFactError as e:
        ...     print(e)
        fact contains a NUL character; remove it.
    """


class FactNotFoundError(LTMError, KeyError):
    """The user has no fact with the given id (it was forgotten, or belongs to someone else).

    Raised by ``update_fact`` and the other calls that name a fact; use an id returned
    by ``remember``, ``recall`` or ``list_all`` for this user.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> from langchain_ltm import LongTermMemoryStore
        >>> store = LongTermMemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=8)))
        >>> try:
        ...     store.update_fact("u1", "nope", "likes coffee")
        ... except FactNotFoundError as e:
        ...     print(e)
        The user has no fact with id 'nope'; use an id returned by remember or recall.
    """

    def __str__(self) -> str:  # KeyError would print the message in quotes
        return str(self.args[0]) if self.args else ""


class InvalidFilterError(LTMError, ValueError):
    """A search filter uses an unknown operator or a value the operator cannot compare.

    Nothing was searched; the message lists the operators there are.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> from langchain_ltm import LongTermMemoryStore
        >>> store = LongTermMemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=8)))
        >>> try:
        ...     store.recall("u1", "tea", filter={"topic": {"$like": "drink"}})
        ... except InvalidFilterError as e:
        ...     print(e)
        Unsupported filter operator '$like' on 'topic'; use one of $eq, $gt, $gte, $lt, $lte, $ne.
    """


class EmbeddingDimensionError(LTMError, ValueError):
    """The embeddings return vectors of another size than the ones already stored.

    The embedding model changed: keep the one the store was written with, or re-remember
    the facts in a new store (file, table or collection).

    Example:
        >>> import os, tempfile
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_ltm import LongTermMemoryStore
        >>> path = os.path.join(tempfile.mkdtemp(), "memories.db")
        >>> with LongTermMemoryStore.from_sqlite(path, DeterministicFakeEmbedding(size=8)) as s:
        ...     _ = s.remember("u1", "likes tea")
        >>> with LongTermMemoryStore.from_sqlite(path, DeterministicFakeEmbedding(size=16)) as s:
        ...     try:
        ...         s.remember("u1", "likes coffee")
        ...     except EmbeddingDimensionError:
        ...         print("16 is not the stored 8: nothing written")
        16 is not the stored 8: nothing written
    """


class UnsupportedVectorStoreError(LTMError, TypeError):
    """The vectorstore given to LongTermMemoryStore has no backend adapter.

    Pass a LangChain ``VectorStore`` (one with a filter dialect, or registered with
    ``register_vectorstore``), a ``VectorBackend``, or use ``from_sqlite`` /
    ``from_postgres`` / ``from_qdrant``.

    Example:
        >>> from langchain_ltm import LongTermMemoryStore
        >>> try:
        ...     LongTermMemoryStore({"not": "a vectorstore"})
        ... except UnsupportedVectorStoreError as e:
        ...     print(str(e)[:36])
        No langchain-ltm backend for dict: p
    """


class MissingDependencyError(LTMError, ImportError):
    """An optional dependency is not installed; the message names the extra to install.

    Install it (``pip install "langchain-ltm[qdrant]"``, ``[postgres]``, ``[local]``...)
    and try again; an ``except ImportError`` clause catches it too.

    Example:
        >>> from langchain_ltm.embeddings import LocalMiniLMEmbeddings
        >>> try:  # the [local] extra missing, or a folder without a model
        ...     LocalMiniLMEmbeddings(model_dir="no-such-folder")
        ... except (MissingDependencyError, ModelFileError):
        ...     print("no local encoder")
        no local encoder
    """


class BackendError(LTMError, RuntimeError):
    """The storage engine failed (connection dropped, disk full, read-only database).

    The message says what failed and whether anything was written; fix the cause (the
    server, the file, the permissions) and retry.

    Example:
        >>> import os, tempfile
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_ltm import LongTermMemoryStore
        >>> path = os.path.join(tempfile.mkdtemp(), "no-such-folder", "memories.db")
        >>> try:
        ...     LongTermMemoryStore.from_sqlite(path, DeterministicFakeEmbedding(size=8))
        ... except BackendError as e:
        ...     print(str(e).split(": ")[-1])
        check that its folder exists and is writable by this user.
    """


class EngineLimitError(LTMError, ValueError):
    """What was asked is past a limit of the engine; the message names it and what to change.

    A key and its namespace longer than a Postgres index entry holds, or a statement with
    more values than Postgres binds. Nothing of the call was written, and repeating it
    fails the same way: change the call (a shorter key, fewer filter values).

    Example:
        >>> issubclass(EngineLimitError, ValueError)  # not a BackendError: do not retry
        True
    """


class StoreInUseError(BackendError):
    """Others are using the store, so it was not compacted or migrated (nothing was changed).

    Raised by SQLite's and Postgres' ``compact`` (``ltm compact``) and Postgres'
    ``migrate_vector_type``; also importable from ``langchain_ltm.backends.sqlite`` and
    ``langchain_ltm.backends.postgres``. Stop what uses the store and run it again.

    Example:
        >>> import os, tempfile
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_ltm import LongTermMemoryStore
        >>> from langchain_ltm.backends.sqlite import compact
        >>> path = os.path.join(tempfile.mkdtemp(), "memories.db")
        >>> with LongTermMemoryStore.from_sqlite(path, DeterministicFakeEmbedding(size=8)):
        ...     try:
        ...         compact(path)  # the store still has the file open
        ...     except StoreInUseError:
        ...         print("in use: nothing changed")
        in use: nothing changed
    """


class SchemaVersionError(BackendError):
    """The store (a SQLite file, Postgres tables) was written by a newer release.

    Upgrade langchain-ltm to open it. One class for both engines; also importable from
    ``langchain_ltm.backends.sqlite`` and ``langchain_ltm.backends.postgres``.

    Example:
        >>> import os, sqlite3, tempfile
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_ltm import LongTermMemoryStore
        >>> path = os.path.join(tempfile.mkdtemp(), "memories.db")
        >>> LongTermMemoryStore.from_sqlite(path, DeterministicFakeEmbedding(size=8)).close()
        >>> with sqlite3.connect(path) as conn:  # as a future release would leave it
        ...     _ = conn.execute("INSERT INTO ltm_items_schema VALUES (999, 'future', '')")
        >>> try:
        ...     LongTermMemoryStore.from_sqlite(path, DeterministicFakeEmbedding(size=8))
        ... except SchemaVersionError as e:
        ...     print(str(e).split(". ")[-1])
        Upgrade langchain-ltm.
    """


class LockLostError(BackendError):
    """A Postgres write was refused: a lock its caller held was released under it.

    The connection holding a user's lock ended (killed, or a server timeout), so another
    writer may have written since; nothing of the write was made. Retry the call. When the
    write's own connection broke too as it committed (a server restart, a network fault
    ending both), its first attempt may have been stored: the message then says so, and
    a retried call reads again and finds it.

    Example:
        >>> issubclass(LockLostError, BackendError)  # retrying the call is safe
        True
    """


class IncompatibleCollectionError(LTMError, ValueError):
    """The Qdrant collection exists with a vector layout langchain-ltm cannot use.

    Its distance is not cosine, its vectors are not the size the embeddings give, or its
    vector name is another than ``vector_name``: nothing was changed in it. Use another
    collection name, or the embeddings and ``vector_name`` it was made with. Also
    importable from ``langchain_ltm.backends.qdrant``.

    Example:
        >>> issubclass(IncompatibleCollectionError, ValueError)
        True
    """


class CatalogMismatchError(LTMError, ValueError):
    """A new catalog was opened over a vectorstore that holds another catalog's memories.

    The generic engine (:func:`~langchain_ltm.backends.vectorstore.vectorstore_backend`,
    ``ltm --store chroma://...``) keeps each memory's item in a catalog file beside the
    store; the documents carry the id of the catalog that wrote them. A new catalog over
    them would see none of them: listings would be empty and an erase would erase nothing
    of them. Nothing was created. Open the catalog that wrote them (``catalogs`` names the
    files found beside the new one with that id), or, to keep a second, separate set of
    memories in the same collection on purpose (a second machine on one server), pass
    ``share_collection=True`` (``?share_collection=1`` in a ``chroma://``, ``redis://``,
    ``chroma:PATH`` or ``faiss:PATH`` URL: the last two for a folder whose catalog was
    deleted, to start a new store in it).

    Attributes:
        catalog: The new catalog file that was refused.
        store_id: The id (``ltm_store``) the store's documents carry.
        catalogs: Catalog files found beside ``catalog`` that hold that id.

    Example:
        >>> error = CatalogMismatchError("new catalog", catalog="b.db", store_id="1f2e")
        >>> isinstance(error, ValueError), error.store_id, error.catalogs
        (True, '1f2e', [])
    """

    def __init__(
        self, message: str, *, catalog: str, store_id: str, catalogs: list[str] | None = None
    ) -> None:
        super().__init__(message)
        self.catalog = catalog
        self.store_id = store_id
        self.catalogs = list(catalogs or [])


class ModelFileError(LTMError, ValueError):
    """A model directory or file is missing, unreadable or not a usable ONNX encoder.

    Raised by ``LocalMiniLMEmbeddings`` and ``MiniLMEncoder``; also importable from
    ``langchain_ltm.embeddings``. Point ``model_dir`` at an ONNX export of a
    sentence-transformers model (``model.onnx`` and ``tokenizer.json``), or leave it out
    for the packaged one.

    Example:
        >>> issubclass(ModelFileError, ValueError)  # see MissingDependencyError's example
        True
    """


class DuplicateFactError(BackendError):
    """Two writers stored the same fact for one user at once; the later batch was refused.

    ``remember`` retries once on it (the retry finds the stored fact: a duplicate), so it
    reaches callers only from a second collision in a row: retry the call.

    Example:
        >>> issubclass(DuplicateFactError, BackendError)
        True
    """

    detail: str = ""
    """The database's own account of the conflict (Postgres' ``DETAIL``), when it gave one."""

    where: str = ""
    """The items, namespace and hash in question, as the message words them (or empty)."""


class KeyTakenError(BackendError):
    """A create-only write (``Record.create_only``) found a key taken; nothing was written.

    Another writer stored an item at the key between the caller's read, which found it
    absent, and the write. ``keys`` names them (``(namespace, key)`` pairs). The store
    catches it and writes those users' puts again under their lock, after reading again
    (a client's put over the fact just made keeps its text as a version); a caller of a
    backend's ``write`` reads the keys again and decides anew.

    Example:
        >>> error = KeyTakenError([(("memories", "u1"), "k1")])
        >>> error.keys, isinstance(error, BackendError)
        ([(('memories', 'u1'), 'k1')], True)
    """

    def __init__(self, keys: Sequence[tuple[tuple[str, ...], str]]) -> None:
        named = ", ".join(f"{key!r} in {namespace!r}" for namespace, key in keys)
        super().__init__(
            f"Another writer stored an item at {named} after it was read as absent, so this "
            "create-only write was not made (nothing of it): read the keys again and retry."
        )
        self.keys = list(keys)


class RecallTargetError(LTMError, ValueError):
    """A broad-scope walk of the HNSW index cannot reach the recall a calibration asked for.

    ``calibration`` holds what was measured (a ``BroadCalibration``: every ``ef_search``
    tried, the best recall); nothing was stored. Lower ``target_recall``, or rebuild the
    index denser (``create_hnsw_index(m=..., ef_construction=...)``) and calibrate again.

    Attributes:
        calibration: The ``BroadCalibration`` measured.

    Example:
        >>> RecallTargetError("recall 0.8 < 0.95", calibration=None).calibration is None
        True
    """

    def __init__(self, message: str, calibration: Any) -> None:
        super().__init__(message)
        self.calibration = calibration
