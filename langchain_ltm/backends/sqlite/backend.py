"""SQLite engine: one file, Python's own ``sqlite3``, many processes, exact per-user search.

Schema (``table="ltm_items"``, created and migrated when the backend opens):

``ltm_items`` — one row per item: ``ns BLOB`` (the namespace, order-preserving: see
    :func:`~langchain_ltm.backends.sqlite._sql.ns_key`), ``key``, ``value`` (JSON text),
    ``content_hash`` (a fact's hash, indexed for exact dedup), ``created_at``,
    ``updated_at``, ``expires_at`` (integer microseconds since the epoch, UTC: exact and
    sortable), ``ttl_minutes``. The primary key ``(ns, key)`` is the index every scoped
    query goes through: the namespaces under ``("memories", "u1")`` are one range of it,
    so ``u1`` never sees ``u10`` or ``u1 x``, and ``ORDER BY ns`` is the namespaces' order.

``ltm_items_vectors`` — one row per embedded item: ``(ns, key)`` primary key, ``paths``
    (JSON) and ``embeddings``, the item's vectors as one little-endian float32 blob.

``ltm_items_schema`` (applied versions; a newer one is refused) and ``ltm_items_meta``
    (the vector size, written with the first vectors).

Search is exact and scoped inside the engine: the vectors in the prefix's range are read
through the primary key and scored with numpy (an item's score is its best vector's), then
items are read best-first by primary key, filtered and checked for expiry, until
``offset + limit`` pass. Filters are evaluated in Python with
:func:`langchain_ltm._filters.matches` on the scoped rows, the one definition every engine
shares; conditions SQLite can decide exactly (string and boolean equality, key existence,
the indexed ``content_hash``) are also pushed into the SQL so fewer rows are read.
``json_extract`` alone would get JSON types wrong (``true`` and ``1`` both come back as 1;
objects compare as text). Opening a file reads one row (the schema version); nothing is
loaded up front, each call reads what it needs.

Concurrency: the file is in WAL mode, so any number of processes (and threads) read while
one writes. Each write is one ``BEGIN IMMEDIATE`` transaction (a batch lands whole or not at
all); writers wait for each other up to ``busy_timeout`` seconds, then get a
``BackendError`` saying what to do. Reads run in one snapshot each. A read's TTL refresh
is a write, but best-effort: it waits at most 50 ms for the write lock and is skipped when
the file stays busy or is read-only (the items keep the expiry of their last refresh), so
reads never fail, nor wait ``busy_timeout``, because of it. Connections come from a
small pool, one caller at a time per connection (``check_same_thread=False`` is safe so).

Locks: :meth:`SqliteBackend.lock` is a per-scope ``flock`` (see ``_lock``), not
SQLite's write lock, which is database-wide: holding that for a whole decide-and-write
(which can include a resolver's model call) would stop every other user's writes, and the
checkpoints of a ``SqliteSaver`` sharing the file.

Async: every async method runs its sync twin on this backend's own worker threads (4).
Not ``asyncio.to_thread``: tasks waiting for the store's per-user locks park on the default
executor, and the lock holder's reads must never queue behind them. ``alock`` polls, so no
thread waits for a lock.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from langchain_ltm._store_forms import url_scheme
from langchain_ltm.backends._threaded import ThreadedAsync, run_to_end
from langchain_ltm.backends.base import (
    Capabilities,
    Hit,
    ItemKey,
    ListRequest,
    Record,
    SearchRequest,
    StoredItem,
    batch_dims,
    check_scope,
    check_token,
    dimension_error,
    normalize_batch,
)
from langchain_ltm.backends.sqlite import _search as search_sql
from langchain_ltm.backends.sqlite import _sql as sql
from langchain_ltm.backends.sqlite._cache import ScopeCache
from langchain_ltm.backends.sqlite._lock import CROSS_PROCESS, FileLocks, HeldLock
from langchain_ltm.errors import BackendError, SchemaVersionError

if TYPE_CHECKING:  # imported by the first async call: not by a sync process (`ltm`)
    from concurrent.futures import ThreadPoolExecutor

__all__ = ["SchemaVersionError", "SqliteBackend", "sqlite_backend"]

T = TypeVar("T")

DEFAULT_BUSY_TIMEOUT = 10.0
DEFAULT_VECTOR_CACHE_MB = 256.0  # 170,000 vectors of 384 floats
_IDLE_CONNECTIONS = 4
_MMAP_BYTES = 2_147_418_112  # SQLite's default SQLITE_MAX_MMAP_SIZE; it clamps to its own
# seconds a refresh on read waits for SQLite's write lock before it is skipped (writes take
# milliseconds: this lets most refreshes through a busy file, and never holds a read long)
_REFRESH_WAIT = 0.05
_OLDEST_SQLITE = (3, 24, 0)  # UPSERT; the JSON functions too (built in since 3.38)
_WORKERS = 4


class SqliteBackend(ThreadedAsync):
    """Items and vectors in one SQLite file; see the module docstring for the design.

    Build it with :func:`sqlite_backend` (or ``LongTermMemoryStore.from_sqlite``).

    Args:
        path: The database file (created if missing; its folder must exist). A relative
            path is made absolute at once: a later ``os.chdir`` does not move the store.
        table: Items table name; the others are ``{table}_vectors``, ``_schema``, ``_meta``.
        dims: Size of the embeddings; ``None`` learns it from the file or the first write.
        busy_timeout: Seconds a write waits for another process's write before failing.

    Example:
        >>> import tempfile, os
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_ltm import LongTermMemoryStore
        >>> path = os.path.join(tempfile.mkdtemp(), "memory.db")
        >>> backend = sqlite_backend(path)
        >>> store = LongTermMemoryStore(backend, embeddings=DeterministicFakeEmbedding(size=8))
        >>> store.remember("alice@example.com", "Prefers answers in Spanish").action
        'created'
        >>> backend.count(("memories",)), backend.capabilities.cross_process_lock
        (1, True)
        >>> backend.close()
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        table: str = "ltm_items",
        dims: int | None = None,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        vector_cache_mb: float = DEFAULT_VECTOR_CACHE_MB,
    ) -> None:
        path = os.fspath(path)
        if not isinstance(vector_cache_mb, (int, float)) or vector_cache_mb < 0:
            raise ValueError(f"vector_cache_mb must be a number >= 0, got {vector_cache_mb!r}.")
        if path == ":memory:" or path.startswith("file:") or not path:
            raise ValueError(
                f"sqlite_backend() needs a file path, got {path!r}: several connections and "
                "processes share the file. Use a temporary file, or "
                "LongTermMemoryStore(InMemoryVectorStore(embeddings)) for a store in memory."
            )
        if path.startswith("sqlite:"):  # read as a relative path: "Cannot open ./sqlite:/..."
            bare = path.removeprefix("sqlite:///") if path.startswith("sqlite:///") else None
            raise ValueError(
                f"A SQLite store takes a file path, not a URL: got {path!r}; pass "
                + (repr(bare) if bare else "the file's path")
                + " (sqlite:///PATH URLs are for ltm --store and open_store)."
            )
        if scheme := url_scheme(path):  # "postgresql://u@h/db" opened ./postgresql:/u@h/db
            raise ValueError(
                f"A SQLite store takes a file path, not a URL: got {path!r}; pass a path such "
                f"as 'memories.db' ({scheme}:// is not SQLite: from_postgres opens a Postgres "
                "URL, LongTermMemoryStore(InMemoryVectorStore(embeddings)) keeps a store in "
                "memory)."
            )
        if dims is not None and (
            not isinstance(dims, int) or isinstance(dims, bool) or not 1 <= dims <= 65536
        ):
            raise ValueError(f"dims must be an int from 1 to 65536, got {dims!r}.")
        if isinstance(busy_timeout, bool) or not isinstance(busy_timeout, (int, float)):
            raise ValueError(f"busy_timeout must be a number of seconds, got {busy_timeout!r}.")
        if busy_timeout < 0:
            raise ValueError(f"busy_timeout must be >= 0 seconds, got {busy_timeout!r}.")
        # absolute once, here: pool connections, the watcher and the lock folder open later,
        # and a relative path would follow the process's working directory to another file
        self.path = os.path.abspath(os.path.expanduser(path))
        if os.path.isdir(self.path):  # SQLite only says "unable to open database file"
            raise ValueError(
                f"{self.path} is a folder, not a SQLite file: name a file in it, e.g. "
                f"{os.path.join(self.path, 'memories.db')}."
            )
        self.tables = sql.Tables(table)
        self.dims = dims
        self.busy_timeout = float(busy_timeout)
        self.capabilities = Capabilities(
            name="sqlite",
            persistent=True,
            multi_process=True,
            cross_process_lock=CROSS_PROCESS,
            ttl=True,
            extra={"exact_search": True, "path": self.path},
        )
        self._locks = FileLocks(self.path, table)
        self._idle: list[sqlite3.Connection] = []
        self._guard = threading.Lock()
        self._closed = False
        self._pid = os.getpid()
        self._inherited: list[sqlite3.Connection] = []
        self._executor: ThreadPoolExecutor | None = None
        # the vectors of searched scopes, kept while the file is unchanged (0 MB: none)
        self.scope_cache = ScopeCache(int(vector_cache_mb * 1024 * 1024))
        self._watcher: sqlite3.Connection | None = None  # never writes: sees every commit
        self._watcher_pid = 0
        self._watch_lock = threading.Lock()

    # ---- connections --------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path,
            timeout=self.busy_timeout,
            isolation_level=None,  # transactions are explicit: BEGIN / BEGIN IMMEDIATE
            check_same_thread=False,  # pooled: one caller at a time, from any thread
            cached_statements=256,
        )
        try:
            # Map as much of the file as SQLite allows (its cap: 2 GB): pages are read in place,
            # not copied through read() calls. At 1M facts (a 2.6 GB file) a user's first
            # search took 2.2 ms with the old 256 MB and 1.2 ms with this (bench/sqlite_scale.py).
            conn.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")
            conn.execute("PRAGMA cache_size = -16384")
        except BaseException:
            conn.close()
            raise
        return conn

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        with self._guard:
            if self._closed:
                raise BackendError(f"This SQLite backend ({self.path}) was closed; open a new one.")
            if self._pid != os.getpid():  # forked: never use, nor close, the parent's
                self._inherited.extend(self._idle)  # connections (SQLite's rule)
                self._idle, self._pid = [], os.getpid()
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._connect()
        try:
            yield conn
        except BaseException:
            if conn.in_transaction:
                _rollback(conn)
            raise
        finally:
            with self._guard:
                keep = not self._closed and len(self._idle) < _IDLE_CONNECTIONS
                if keep and not conn.in_transaction:
                    self._idle.append(conn)
                    conn = None
            if conn is not None:
                conn.close()

    def _read(self, what: str, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(conn)`` in one read snapshot (a deferred transaction)."""
        try:
            with self._connection() as conn:
                conn.execute("BEGIN")
                result = fn(conn)
                conn.execute("COMMIT")
                return result
        except sqlite3.Error as exc:
            raise self._translate(exc, what) from exc

    def _write(self, what: str, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(conn)`` in one write transaction: whole or not at all."""
        try:
            with self._connection() as conn:
                conn.execute("BEGIN IMMEDIATE")
                result = fn(conn)
                conn.execute("COMMIT")
                return result
        except sqlite3.Error as exc:
            raise self._translate(exc, what) from exc

    def setup(self) -> None:
        """Switch the file to WAL and create or migrate the tables (idempotent).

        Reads one row when the tables are current; takes the write lock only to migrate.
        """
        if sqlite3.sqlite_version_info < _OLDEST_SQLITE:
            raise BackendError(
                f"The SQLite engine needs SQLite {'.'.join(map(str, _OLDEST_SQLITE))} or newer "
                f"(upserts, JSON functions); this Python links {sqlite3.sqlite_version}. Use a "
                "newer Python build, or the Postgres engine."
            )
        try:
            with self._connection() as conn:
                try:
                    conn.execute("SELECT json_type('{}')")
                except sqlite3.OperationalError as exc:
                    raise BackendError(
                        f"This Python's SQLite {sqlite3.sqlite_version} has no JSON functions "
                        f"({exc}), which the SQLite engine's filters use: use a Python build "
                        "whose SQLite has them (3.38+ always does), or the Postgres engine."
                    ) from exc
                mode = self._to_wal(conn)
                if str(mode).lower() != "wal":
                    raise BackendError(
                        f"{self.path} cannot use write-ahead logging (journal_mode is "
                        f"{mode!r}), which lets processes read while one writes: put the "
                        "file on a local disk (not a network share)."
                    )
                current = sql.schema_version(conn, self.tables)
                sql.check_version(self.tables, current, self.path)
                if current < sql.SCHEMA_VERSION:
                    conn.execute("BEGIN IMMEDIATE")
                    sql.migrate(conn, self.tables, self.path)
                    conn.execute("COMMIT")
                stored = sql.stored_dims(conn, self.tables)
        except sqlite3.Error as exc:
            raise self._translate(exc, "setup") from exc
        if stored is not None:
            if self.dims is not None and self.dims != stored:
                raise dimension_error(stored, self.dims, "a new file (or table)")
            self.dims = stored

    async def asetup(self) -> None:
        """Async twin of :meth:`setup`, on the backend's own threads (as Postgres' has one)."""
        await self._off_loop(self.setup)

    def _to_wal(self, conn: sqlite3.Connection) -> str:
        """Switch a new file to write-ahead logging; the journal mode it ends in.

        Processes opening a new file at the same moment race to switch it, and SQLite may
        refuse the loser at once ("database is locked") without waiting ``busy_timeout``
        (seen in 2 of 5 full test runs: two workers opening one new catalog). The switch is
        tried again, the mode read anew each time (the winner may have switched it), until
        ``busy_timeout`` has passed. Each try waits at most 0.1 s: a file another process
        has switched meanwhile reads as WAL at the next try.
        """
        deadline = time.monotonic() + self.busy_timeout
        pause = 0.005
        conn.execute("PRAGMA busy_timeout = 100")
        try:
            while True:
                mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0])
                if mode.lower() == "wal":
                    return mode
                try:
                    return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
                except sqlite3.OperationalError as exc:
                    busy = "locked" in str(exc) or "busy" in str(exc)
                    if not busy or time.monotonic() + pause > deadline:
                        raise
                time.sleep(pause)
                pause = min(pause * 2, 0.1)
        finally:
            conn.execute(f"PRAGMA busy_timeout = {round(self.busy_timeout * 1000)}")

    def close(self) -> None:
        """Close the pooled connections and worker threads (held locks stay valid)."""
        with self._guard:
            self._closed = True
            idle, self._idle = self._idle, []
            executor, self._executor = self._executor, None
        for conn in idle:
            conn.close()
        with self._watch_lock:
            watcher, self._watcher = self._watcher, None
        if watcher is not None and self._watcher_pid == os.getpid():
            watcher.close()
        self.scope_cache.clear()
        if executor is not None:
            executor.shutdown(wait=False)

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        self.close()

    # ---- reads --------------------------------------------------------------------------

    def get(self, keys: Sequence[ItemKey]) -> list[StoredItem | None]:  # noqa: D102
        if not keys:
            return []
        return self._read("get", lambda conn: sql.get_items(conn, self.tables, keys))

    def indexed_paths(self, keys: Sequence[ItemKey]) -> list[tuple[str, ...] | None]:  # noqa: D102
        if not keys:
            return []
        return self._read("read paths", lambda conn: sql.indexed_paths(conn, self.tables, keys))

    def search(self, request: SearchRequest) -> list[list[Hit]]:  # noqa: D102
        def run(conn: sqlite3.Connection) -> list[list[Hit]]:
            cache = None
            if request.vectors is not None:
                # The cache is keyed by the file's version, so it may serve this search only
                # if its snapshot is that version: read the version before and after the
                # snapshot starts, and use the cache only if no commit landed in between (a
                # version read before a later-starting snapshot let cached rowids, freed and
                # reused by another user's insert, fetch that user's item).
                before = self._data_version()
                conn.execute(f"SELECT 1 FROM {self.tables.meta} LIMIT 1").fetchall()
                if self._data_version() == before:
                    cache = (self.scope_cache, before)
                self._check_query(conn, request.vectors.shape[1])
            return search_sql.search(conn, self.tables, request, cache)

        return self._read("search", run)

    def _data_version(self) -> int:
        """SQLite's ``data_version`` on a connection that never writes.

        It changes with every commit by any other connection: this process's pool, and
        other processes.
        """
        try:
            with self._watch_lock:
                if self._watcher is None or self._watcher_pid != os.getpid():
                    # its numbers mean nothing to another connection's (a fork's, say)
                    self.scope_cache.clear()
                    self._watcher, self._watcher_pid = self._connect(), os.getpid()
                (version,) = self._watcher.execute("PRAGMA data_version").fetchone()
                return int(version)
        except sqlite3.Error as exc:
            raise self._translate(exc, "search") from exc

    def list_namespaces(self, request: ListRequest) -> list[tuple[str, ...]]:  # noqa: D102
        return self._read(
            "list_namespaces", lambda conn: sql.list_namespaces(conn, self.tables, request)
        )

    def count(self, prefix: tuple[str, ...]) -> int:  # noqa: D102
        return self._read("count", lambda conn: sql.count_items(conn, self.tables, prefix))

    # ---- writes -------------------------------------------------------------------------

    def write(self, upserts: Sequence[Record], deletes: Sequence[ItemKey]) -> int:  # noqa: D102
        kept, gone = normalize_batch(upserts, deletes)
        if not kept and not gone:
            return 0
        dims = batch_dims(kept, self.dims, "a new file (or table)")

        def run(conn: sqlite3.Connection) -> int:
            if dims is not None and self.dims is None:  # first vectors seen by this backend
                stored = sql.stored_dims(conn, self.tables)
                if stored is None:
                    conn.execute(
                        f"INSERT INTO {self.tables.meta} (name, value) VALUES ('dims', ?)", (dims,)
                    )
                elif stored != dims:
                    raise dimension_error(stored, dims, "a new file (or table)")
            return sql.write(conn, self.tables, kept, gone)

        deleted = self._write("write", run)
        if dims is not None:
            self.dims = dims
        return deleted

    def touch(self, keys: Sequence[ItemKey], now: datetime) -> None:
        """The refresh on read, best-effort: a read never fails, nor waits, for its refresh.

        It waits at most ``_REFRESH_WAIT`` seconds (or ``busy_timeout``, if shorter) for
        SQLite's write lock, and is skipped when another connection keeps writing longer,
        or the file is read-only for this process: the read returns what it read, and the
        items keep the expiry of their last refresh or write, which a later read moves
        again. Best-effort means just that: under writes that never pause, reads may keep
        skipping and an item read all along can expire at its last expiry. Postgres's
        refresh skips the rows a writer holds the same way.
        """
        if not keys or not self._read("touch", lambda c: sql.any_ttl(c, self.tables, keys)):
            return  # nothing to refresh: a read stays a read
        try:
            with self._connection() as conn:
                wait = min(self.busy_timeout, _REFRESH_WAIT)
                conn.execute(f"PRAGMA busy_timeout = {round(wait * 1000)}")
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    sql.touch(conn, self.tables, keys, now)
                    conn.execute("COMMIT")
                finally:
                    if conn.in_transaction:
                        _rollback(conn)
                    conn.execute(f"PRAGMA busy_timeout = {round(self.busy_timeout * 1000)}")
        except sqlite3.Error as exc:
            if not _busy_or_read_only(exc):
                raise self._translate(exc, "touch") from exc

    def sweep(self, now: datetime) -> int:  # noqa: D102
        return self._write("sweep", lambda conn: sql.sweep(conn, self.tables, now))

    # ---- locks --------------------------------------------------------------------------

    def lock(self, scope: str) -> HeldLock:
        """Wait until this caller holds ``scope``'s lock on this file and table, in every process.

        A ``flock`` on one of 256 lock files next to the database (``{path}-locks/``, by
        the file's real path: a symlink and its target share it); see
        ``_lock`` for what it excludes. It waits as long as it takes; a holder that
        dies releases it. Not reentrant. Reads and writes do not take it.

        Example:
            >>> import tempfile, os
            >>> backend = sqlite_backend(os.path.join(tempfile.mkdtemp(), "m.db"))
            >>> token = backend.lock("alice@example.com")
            >>> try:
            ...     ...  # read, decide, write: no other process does it for alice now
            ... finally:
            ...     backend.unlock(token)
            Ellipsis
        """
        return self._locks.lock(check_scope(scope))

    def unlock(self, token: Any) -> None:
        """Release a lock :meth:`lock` or :meth:`alock` returned (a second call does nothing)."""
        self._locks.unlock(check_token(token, HeldLock))

    async def alock(self, scope: str) -> HeldLock:
        """Async twin of :meth:`lock`: waits without blocking the event loop or a thread."""
        return await self._locks.alock(check_scope(scope))

    async def aunlock(self, token: Any) -> None:
        """Async twin of :meth:`unlock`."""
        self._locks.unlock(check_token(token, HeldLock))

    # ---- async twins: the sync methods on this backend's own threads --------------------

    async def _off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        with self._guard:
            if self._executor is None:
                if self._closed:
                    raise BackendError(
                        f"This SQLite backend ({self.path}) was closed; open a new one."
                    )
                from concurrent.futures import ThreadPoolExecutor

                self._executor = ThreadPoolExecutor(_WORKERS, thread_name_prefix="ltm-sqlite")
            executor = self._executor
        return await run_to_end(executor, functools.partial(fn, *args))

    # ---- checks and errors --------------------------------------------------------------

    def _check_query(self, conn: sqlite3.Connection, given: int) -> None:
        if self.dims is None:
            self.dims = sql.stored_dims(conn, self.tables)
        if self.dims is not None and given != self.dims:
            raise dimension_error(self.dims, given, "a new file (or table)")

    def _translate(self, exc: sqlite3.Error, what: str) -> Exception:
        """A langchain-ltm error for a sqlite3 error, saying what to change."""
        message = str(exc).strip()
        name = str(getattr(exc, "sqlite_errorname", ""))
        lowered = message.lower()
        if _busy(exc):
            return BackendError(
                f"{self.path} stayed locked by another writer for more than busy_timeout="
                f"{self.busy_timeout:g} s during {what} ({message}); nothing of this call was "
                "written. Retry it; pass a larger busy_timeout to sqlite_backend() / "
                "from_sqlite() if long writes are expected; or end the process that keeps a "
                "write transaction open (an interactive sqlite3 shell after BEGIN, a stuck job)."
            )
        if name.startswith("SQLITE_FULL") or "disk is full" in lowered:
            return BackendError(
                f"The disk holding {self.path} is full ({message}): free space, then retry "
                f"the {what} (nothing of this batch was written)."
            )
        if _read_only(exc):
            return BackendError(
                f"{self.path} is read-only for this process ({message}): make the file and its "
                "folder writable (SQLite also writes the -wal and -shm files next to it)."
            )
        if name.startswith("SQLITE_CANTOPEN") or "unable to open" in lowered:
            return BackendError(
                f"Cannot open {self.path} ({message}): check that its folder exists and is "
                "writable by this user."
            )
        if name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")) or "not a database" in lowered:
            return BackendError(
                f"{self.path} is not a usable SQLite database ({message}): point the store at "
                "another file, or restore this one from a backup (ltm export output)."
            )
        return BackendError(f"SQLite failed during {what} on {self.path}: {message}")


def _busy(exc: sqlite3.Error) -> bool:
    name = str(getattr(exc, "sqlite_errorname", ""))
    return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in str(exc).lower()


def _read_only(exc: sqlite3.Error) -> bool:
    name = str(getattr(exc, "sqlite_errorname", ""))
    return name.startswith("SQLITE_READONLY") or "readonly" in str(exc).lower()


def _busy_or_read_only(exc: sqlite3.Error) -> bool:
    return _busy(exc) or _read_only(exc)


def _rollback(conn: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.Error):  # gone already: SQLite rolled it back
        conn.execute("ROLLBACK")


BACKEND_OPTIONS = ("table", "dims", "busy_timeout", "vector_cache_mb")
"""The options of :func:`sqlite_backend` that the stores' ``from_sqlite`` pass on."""


def sqlite_backend(
    path: str | os.PathLike[str],
    *,
    table: str = "ltm_items",
    dims: int | None = None,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    vector_cache_mb: float = DEFAULT_VECTOR_CACHE_MB,
) -> SqliteBackend:
    """A :class:`SqliteBackend` on the file ``path``, tables created or migrated.

    Args:
        path: Database file (created if missing; its folder must exist). Other tools'
            tables may share it (LangGraph's ``SqliteSaver`` checkpoints, for one). A
            relative path is resolved against the working directory now, once. A
            ``sqlite:///`` URL is refused (``ValueError`` naming the path to pass).
        table: Items table name (also ``{table}_vectors``, ``_schema``, ``_meta``).
        dims: Embedding size. ``None``: read from the file, or learnt at the first write.
        busy_timeout: Seconds a write waits for another process's write transaction
            before raising ``BackendError`` (readers never wait: WAL mode; a read's TTL
            refresh waits at most 50 ms, then is skipped).
        vector_cache_mb: Megabytes of searched users' vectors kept between searches while
            nothing is committed to the file (any commit, by any process, empties it; 0:
            none). A search otherwise re-reads every vector of the user from the file.

    Returns:
        The backend, ready for ``LongTermMemoryStore(backend, embeddings=...)``.

    Example:
        >>> import tempfile, os
        >>> backend = sqlite_backend(os.path.join(tempfile.mkdtemp(), "memory.db"), dims=384)
        >>> backend.dims, backend.tables.vectors, backend.busy_timeout
        (384, '"ltm_items_vectors"', 10.0)
        >>> backend.close()
    """
    backend = SqliteBackend(
        path, table=table, dims=dims, busy_timeout=busy_timeout, vector_cache_mb=vector_cache_mb
    )
    try:
        backend.setup()
    except BaseException:
        backend.close()
        raise
    return backend
