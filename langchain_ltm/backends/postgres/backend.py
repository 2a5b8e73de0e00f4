"""Postgres + pgvector engine: exact per-user search, one-statement batches, native async.

Schema (``table="ltm_items"``, created and migrated by :meth:`PostgresBackend.setup`):

``ltm_items`` — one row per item (LangGraph namespace + key):
    ``ns_path text COLLATE "C"`` (labels joined by ``.`` plus a final ``.``; the primary
    key ``(ns_path, key)`` is the btree every scoped query goes through: the namespaces under
    ``("memories", "u1")`` are exactly the range ``['memories.u1.', 'memories.u1/')``, so
    ``u1`` never sees ``u10``, ``u_1`` or ``u%1`` and no LIKE pattern is involved),
    ``namespace text[]`` (generated from ``ns_path``; ordering and ``list_namespaces``),
    ``value jsonb``, ``content_hash`` (generated from ``value``, set for facts only),
    ``created_at``, ``updated_at``, and for TTL ``expires_at timestamptz NULL`` (with a
    partial index ``WHERE expires_at IS NOT NULL`` for the sweeper) and ``ttl_minutes
    double precision NULL`` (schema version 2). An exclusion constraint ``(ns_path WITH =,
    content_hash WITH =) WHERE`` the value is in the fact layout (``_schema.FACT_ROW``), checked
    at commit, makes exact fact dedup hold across processes; other items (plain
    ``BaseStore`` puts, even with ``content`` and ``content_hash`` keys of their own) are
    not in its index (schema version 3: before, a ``UNIQUE`` constraint indexed every item;
    version 4: only rows in the fact layout, whose values always hold ``versions``; version 5:
    a text hash, a whole ``versions`` of at most 15 digits and no ``version_of``,
    ``versions.holds_hash``).

``ltm_items_vectors`` — one row per embedded text, in the layout of langchain-postgres'
    ``PGEngine.init_vectorstore_table`` (``langchain_id uuid`` primary key, ``content
    text``, ``embedding vector(d)``, ``langchain_metadata json``) plus ``ns_path``, ``key``
    and ``path`` columns, a btree on ``(ns_path, key)`` and a foreign key to the item
    (``ON DELETE CASCADE``). ``PGVectorStore.create(engine, embeddings,
    table_name="ltm_items_vectors")`` reads it as is: documents are the embedded texts,
    their metadata the item's namespace, key and path (see :meth:`~PostgresBackend.
    as_vectorstore`).

``ltm_items_schema`` — the applied schema versions.

No other table: :meth:`~PostgresBackend.calibrate_broad_search` keeps the ``ef_search`` it
measured as the HNSW index's comment (JSON naming the index's oid and file node), which
every role can read and which dies with the index.

Why two tables: an item has zero, one or several embedded texts (``index=False``, the
``fields`` of the store, ``tags[*]``). A vectors table with a ``vector NOT NULL`` per text is
what PGVectorStore expects, and an items table holds each value once, so a re-put rewrites
one JSON value rather than one copy per text, and un-embedded items need no fake vector.

Search is exact by construction: the query scores every vector in scope (found through the
btree), keeps each item's best score (max-pooling), joins the items, applies the filter and
ranks. No ANN index can serve that plan, so an HNSW index added for PGVectorStore (or by
:meth:`~PostgresBackend.create_hnsw_index`) never truncates a filtered per-user search.
Statements are prepared, and the connections of pools opened here keep their generic plans
(``plan_cache_mode = force_generic_plan``): re-planning the search costs more than running
it. Broad prefixes (all users, a team) are exact too, at the cost of scoring every vector
in scope, unless the vectors table has an HNSW index and the planner's statistics prove the
scope holds at least ``broad_min_rows`` vectors: then the search walks that index with
pgvector's iterative scan, the scope and filter applied as it goes, re-ranks by the exact
score, and falls back to the exact plan when the walk cannot fill the limit (``_broad``);
its ``ef_search`` is measured on the index itself (``_calibrate``), since graphs vary.
A per-user prefix never takes that path (``tests/integration_tests/test_postgres_broad.py``).

Writes: a batch is one transaction: the batch's key locks (``_writes.write_locks``), the
table locks, the item upsert (keeping ``created_at``), then one statement of
data-modifying CTEs (delete items, drop the vectors the batch no longer writes, upsert the
new ones), so it lands whole or not at all. The statements run in psycopg's pipeline mode:
all but the last are sent without waiting, so the server writes the items while the
vectors' statement is built; vectors, ids and JSON values go as whole binary arrays
(``_wire``). Ids are deterministic and timestamps come from the records, so writing the same
batch twice leaves the same rows. A record with ``created_at`` (a restored backup) sets it,
existing row or not. Writers cannot deadlock: each takes its keys' advisory locks in one
global order before its statement, which then sees every earlier write of those keys and
locks only their rows, items before vectors (as the cascade and the TTL sweeper do).

Locks: :meth:`~PostgresBackend.lock` takes a transaction-level advisory lock per table and
scope (``_lock``), which excludes every process on the database; Postgres drops it with
a holder's connection.

Elsewhere: :func:`postgres_backend` is built in ``_factory`` (and exported here); the table
maintenance (``migrate_vector_type``, ``compact``, ``create_hnsw_index``,
``calibrate_broad_search``) is ``_maintenance.TableMaintenance``, a base of the class.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from langchain_ltm.backends import blamed_package
from langchain_ltm.errors import (
    DuplicateFactError,
    MissingDependencyError,
    SchemaVersionError,
)

try:
    from langchain_ltm.backends.postgres import _broad, _reads, _schema, _writes
    from langchain_ltm.backends.postgres import _sql as sql
    from langchain_ltm.backends.postgres._connector import Connector
    from langchain_ltm.backends.postgres._errors import naming_items
    from langchain_ltm.backends.postgres._factory import postgres_backend
    from langchain_ltm.backends.postgres._lock import AdvisoryLocks, HeldLock
    from langchain_ltm.backends.postgres._maintenance import TableMaintenance
    from langchain_ltm.backends.postgres._urls import sqlalchemy_url
except ImportError as exc:
    if blamed_package(exc) not in ("psycopg", "psycopg_pool", "pgvector"):
        raise  # a module of ours (or another package): the install hint would mislead
    raise MissingDependencyError(
        f"The Postgres engine needs psycopg 3 and psycopg-pool ({exc}). "
        'Install them with: pip install "langchain-ltm[postgres]"'
    ) from exc

from langchain_ltm.backends.base import (
    Capabilities,
    Hit,
    ItemKey,
    ListRequest,
    Record,
    SearchRequest,
    StoredItem,
    VectorBackend,
    batch_dims,
    check_scope,
    check_token,
    dimension_error,
    normalize_batch,
)

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings
    from langchain_postgres import PGEngine, PGVectorStore

__all__ = ["DuplicateFactError", "PostgresBackend", "SchemaVersionError", "postgres_backend"]


class PostgresBackend(TableMaintenance, VectorBackend):
    """Items and vectors in Postgres with pgvector; sync and async both native (psycopg 3).

    Build it with :func:`postgres_backend`, which accepts a URL, a langchain-postgres
    ``PGEngine`` or a psycopg pool, and creates the tables.

    Args:
        connector: The connection pools (see :func:`postgres_backend`).
        table: Name of the items table; vectors live in ``{table}_vectors``.
        schema: Postgres schema of the tables.
        dims: Size of the embeddings; ``None`` learns it from the table or the first write.
        engine: A ``PGEngine`` to reuse in :meth:`as_vectorstore`.
        vector_type: ``"vector"`` (float32) or ``"halfvec"`` (float16: half the vectors
            table and HNSW index; search stays exact over the stored values) for a new
            table; ``None`` keeps an existing table's type (``vector`` for a new one).

    Example:
        >>> backend = postgres_backend("postgresql://localhost/app", setup=False)  # no I/O yet
        >>> backend.vectors_table, backend.capabilities.native_async
        ('ltm_items_vectors', True)
        >>> from langchain_ltm import LongTermMemoryStore
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> store = LongTermMemoryStore(backend, embeddings=DeterministicFakeEmbedding(size=16))
        >>> backend.setup()  # the tables, once (setup=True does it on opening)  # doctest: +SKIP
        >>> store.remember("alice@example.com", "Prefers Spanish").action  # doctest: +SKIP
        'created'
    """

    capabilities = Capabilities(
        name="postgres",
        persistent=True,
        native_async=True,
        multi_process=True,
        cross_process_lock=True,
        ttl=True,
        extra={"exact_search": True, "unique_fact_hash": True},
    )

    def __init__(
        self,
        connector: Connector,
        *,
        table: str = "ltm_items",
        schema: str = "public",
        dims: int | None = None,
        engine: PGEngine | None = None,
        vector_type: str | None = None,
    ) -> None:
        if dims is not None and (not isinstance(dims, int) or not 1 <= dims <= 16000):
            raise ValueError(f"dims must be an int from 1 to 16000, got {dims!r}.")
        self.tables = sql.Tables(schema, table)
        self.connector = connector
        self.dims = dims
        self.vector_type = _schema.check_vector_type(vector_type)
        # what the caller asked for (None: whatever the table has), apart from the table's
        # current type above, so setup() follows a table another process converted
        self._wanted_vector_type = self.vector_type
        self._engine = engine
        self._locks = AdvisoryLocks(connector)

    @property
    def vectors_table(self) -> str:
        """Name of the table PGVectorStore reads (``{table}_vectors``)."""
        return self.tables.vectors_name

    # ---- schema -------------------------------------------------------------------------

    def setup(self) -> None:
        """Create or migrate the tables; safe to call again and from several processes."""
        self.dims, self.vector_type = self.connector.run(
            lambda: _schema.setup(self.tables, self.dims, self._wanted_vector_type),
            "setup",
            transaction=True,
            vectors=False,
        )

    async def asetup(self) -> None:
        """Async twin of :meth:`setup`."""
        self.dims, self.vector_type = await self.connector.arun(
            lambda: _schema.setup(self.tables, self.dims, self._wanted_vector_type),
            "setup",
            transaction=True,
            vectors=False,
        )

    def drop(self) -> None:
        """Drop the tables and everything in them."""
        self.connector.run(lambda: _schema.drop(self.tables), "drop", vectors=False)

    async def adrop(self) -> None:
        """Async twin of :meth:`drop`."""
        await self.connector.arun(lambda: _schema.drop(self.tables), "drop", vectors=False)

    def close(self) -> None:
        """Close the connection pools this backend opened (pools handed in stay open)."""
        self.connector.close()

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        await self.connector.aclose()

    def as_vectorstore(
        self, embeddings: Embeddings, *, engine: PGEngine | None = None
    ) -> PGVectorStore:
        """A langchain-postgres ``PGVectorStore`` over this backend's vectors table.

        Its documents are the embedded texts; metadata holds namespace, key and path.
        Use it to read (similarity search, MMR); write through the store, which keeps
        items and vectors together.
        """
        try:
            from langchain_postgres import PGEngine, PGVectorStore
        except ImportError as exc:  # pragma: no cover - exercised without the extra
            raise MissingDependencyError(
                f"as_vectorstore() needs langchain-postgres ({exc}). "
                'Install it with: pip install "langchain-ltm[postgres]"'
            ) from exc

        engine = engine or self._engine
        if engine is None:
            url = sqlalchemy_url(self.connector.conninfo, self.connector.kwargs)
            engine = self._engine = PGEngine.from_connection_string(url)
        return PGVectorStore.create_sync(
            engine,
            embeddings,
            table_name=self.tables.vectors_name,
            schema_name=self.tables.schema,
        )

    # ---- reads --------------------------------------------------------------------------

    def get(self, keys: Sequence[ItemKey]) -> list[StoredItem | None]:  # noqa: D102
        return self.connector.run(
            lambda: _reads.get_items(self.tables, keys), "get", keep_cursor=_small(len(keys))
        )

    async def aget(self, keys: Sequence[ItemKey]) -> list[StoredItem | None]:  # noqa: D102
        return await self.connector.arun(
            lambda: _reads.get_items(self.tables, keys), "get", keep_cursor=_small(len(keys))
        )

    def indexed_paths(self, keys: Sequence[ItemKey]) -> list[tuple[str, ...] | None]:  # noqa: D102
        return self.connector.run(lambda: _reads.indexed_paths(self.tables, keys), "read paths")

    broad_min_rows: int | None = _broad.BROAD_MIN_ROWS
    """Scope size (vectors, a lower bound from the planner's statistics) from which a
    search walks an HNSW index of the vectors table with pgvector's iterative scan instead
    of scoring every vector in scope (see ``_broad``); ``None``: always exact."""
    broad_ef_search: int | None = None
    """``hnsw.ef_search`` of such a walk (1 to 1,000): the candidates it re-ranks. More
    buys recall with time. ``None`` (the default): the value
    :meth:`calibrate_broad_search` stored for the current index, else 200."""
    _scope_stats: _broad.ScopeStats | None = None

    def search(self, request: SearchRequest) -> list[list[Hit]]:  # noqa: D102
        self._check_query(request)
        broad = _broad.wants_index(self._scope_stats, request, self.broad_min_rows)
        if broad is None:
            self._scope_stats = self.connector.run(
                lambda: _broad.stats(self.tables), "search", vectors=False
            )
            broad = _broad.wants_index(self._scope_stats, request, self.broad_min_rows)
        exchange, options = self._search_call(request, broad)
        return self.connector.run(exchange, "search", **options)

    async def asearch(self, request: SearchRequest) -> list[list[Hit]]:  # noqa: D102
        self._check_query(request)
        broad = _broad.wants_index(self._scope_stats, request, self.broad_min_rows)
        if broad is None:
            self._scope_stats = await self.connector.arun(
                lambda: _broad.stats(self.tables), "search", vectors=False
            )
            broad = _broad.wants_index(self._scope_stats, request, self.broad_min_rows)
        exchange, options = self._search_call(request, broad)
        return await self.connector.arun(exchange, "search", **options)

    def _search_call(
        self, request: SearchRequest, broad: bool | None
    ) -> tuple[Callable[[], sql.Exchange[list[list[Hit]]]], dict[str, bool]]:
        """The search's exchange and run options: the index walk (``_broad``) or exact."""
        small = _small_search(request)
        stats = self._scope_stats
        if broad and stats is not None and stats.operator:
            operator = stats.operator
            ef = _broad.ef_search_of(self.broad_ef_search, stats)
            return (
                lambda: _broad.search(self.tables, request, operator, self.vector_type, ef),
                {"transaction": True, "keep_cursor": small},
            )
        return lambda: _reads.search(self.tables, request), {"keep_cursor": small}

    def list_namespaces(self, request: ListRequest) -> list[tuple[str, ...]]:  # noqa: D102
        return self.connector.run(
            lambda: _reads.list_namespaces(self.tables, request), "list_namespaces"
        )

    async def alist_namespaces(self, request: ListRequest) -> list[tuple[str, ...]]:  # noqa: D102
        return await self.connector.arun(
            lambda: _reads.list_namespaces(self.tables, request), "list_namespaces"
        )

    def count(self, prefix: tuple[str, ...]) -> int:  # noqa: D102
        return self.connector.run(lambda: _reads.count_items(self.tables, prefix), "count")

    async def acount(self, prefix: tuple[str, ...]) -> int:  # noqa: D102
        return await self.connector.arun(lambda: _reads.count_items(self.tables, prefix), "count")

    # ---- writes -------------------------------------------------------------------------

    def write(self, upserts: Sequence[Record], deletes: Sequence[ItemKey]) -> int:  # noqa: D102
        upserts, deletes, new_dims = self._plan_write(upserts, deletes)
        held = self._locks.held()
        try:
            deleted = self.connector.run(
                lambda: _writes.write(self.tables, upserts, deletes, new_dims, held),
                "write",
                transaction=True,  # the key locks, then the statements (_writes.write)
                # typing the column (ALTER TABLE) makes psycopg drop its prepared statements,
                # which in pipeline mode lands after the next one was prepared: not pipelined
                pipeline=new_dims is None,
            )
        except DuplicateFactError as exc:  # named: the items it was about
            raise naming_items(exc, upserts) from exc.__cause__
        self.dims = self.dims or new_dims
        return deleted

    async def awrite(self, upserts: Sequence[Record], deletes: Sequence[ItemKey]) -> int:  # noqa: D102
        upserts, deletes, new_dims = self._plan_write(upserts, deletes)
        held = self._locks.held()
        try:
            deleted = await self.connector.arun(
                lambda: _writes.write(self.tables, upserts, deletes, new_dims, held),
                "write",
                transaction=True,  # the key locks, then the statements (_writes.write)
                # typing the column (ALTER TABLE) makes psycopg drop its prepared statements,
                # which in pipeline mode lands after the next one was prepared: not pipelined
                pipeline=new_dims is None,
            )
        except DuplicateFactError as exc:  # named: the items it was about
            raise naming_items(exc, upserts) from exc.__cause__
        self.dims = self.dims or new_dims
        return deleted

    # ---- TTL ----------------------------------------------------------------------------

    def touch(self, keys: Sequence[ItemKey], now: datetime) -> None:  # noqa: D102
        self.connector.run(lambda: _writes.touch(self.tables, keys, now), "touch", vectors=False)

    async def atouch(self, keys: Sequence[ItemKey], now: datetime) -> None:  # noqa: D102
        await self.connector.arun(
            lambda: _writes.touch(self.tables, keys, now), "touch", vectors=False
        )

    def sweep(self, now: datetime) -> int:  # noqa: D102
        return self.connector.run(lambda: _writes.sweep(self.tables, now), "sweep", vectors=False)

    async def asweep(self, now: datetime) -> int:  # noqa: D102
        return await self.connector.arun(
            lambda: _writes.sweep(self.tables, now), "sweep", vectors=False
        )

    # ---- locks --------------------------------------------------------------------------

    def lock(self, scope: str) -> HeldLock:
        """Wait until this caller holds ``scope``'s lock on this table, in every process.

        A transaction-level advisory lock (``pg_advisory_xact_lock``) on a connection
        checked out of the sync pool for as long as the lock is held; :meth:`unlock`
        commits and returns it. A holder whose connection or process dies loses the lock
        (Postgres releases it). Not reentrant. It waits as long as it takes, unless the
        server sets ``lock_timeout``, which ends the wait with a ``BackendError``.

        Pool room: at most half the pool's connections wait for or hold locks (further
        callers wait in process), so the holder's own reads and writes always find one. The
        pool needs ``max_size >= 2``; the default 10 lets 5 locks be held or awaited at once.

        Example:
            >>> backend = postgres_backend("postgresql://localhost/app", setup=False)
            >>> token = backend.lock("alice@example.com")  # doctest: +SKIP
            >>> try:  # doctest: +SKIP
            ...     ...  # read, decide, write: no other process does it for alice now
            ... finally:
            ...     backend.unlock(token)
        """
        return self._locks.lock(_writes.advisory_lock(self.tables, check_scope(scope)), scope)

    def unlock(self, token: Any) -> None:
        """Release a lock :meth:`lock` returned (a second call does nothing).

        Raises ``BackendError`` if the connection broke while the lock was held (Postgres
        released it then); the connection goes back to the pool, or is replaced, anyway.
        """
        self._locks.unlock(check_token(token, HeldLock))

    async def alock(self, scope: str) -> HeldLock:
        """Async twin of :meth:`lock`, on the running event loop's pool."""
        return await self._locks.alock(
            _writes.advisory_lock(self.tables, check_scope(scope)), scope
        )

    async def aunlock(self, token: Any) -> None:
        """Async twin of :meth:`unlock`."""
        await self._locks.aunlock(check_token(token, HeldLock))

    # ---- checks (pure) ------------------------------------------------------------------

    def _plan_write(
        self, upserts: Sequence[Record], deletes: Sequence[ItemKey]
    ) -> tuple[list[Record], list[ItemKey], int | None]:
        kept, gone = normalize_batch(upserts, deletes)
        dims = batch_dims(kept, self.dims, "a new table")
        # first vectors of a table created without dims: type the column in the same write
        return kept, gone, dims if self.dims is None else None

    def _check_query(self, request: SearchRequest) -> None:
        vectors = request.vectors
        if vectors is not None and self.dims is not None and vectors.shape[1] != self.dims:
            raise dimension_error(self.dims, vectors.shape[1], "a new table")


KEPT_CURSOR_MAX_ROWS = 100
"""Reads of at most this many rows run on the connection's kept cursor, which holds its last
result until the connection's next read: a larger one (a ``get`` of 2,000 items with 50 kB
values held 95 MB) gets a cursor of its own, freed when the read returns."""


def _small(rows: int) -> bool:
    return rows <= KEPT_CURSOR_MAX_ROWS


def _small_search(request: SearchRequest) -> bool:
    queries = 1 if request.vectors is None else len(request.vectors)
    limit = request.limit if request.limit is not None else KEPT_CURSOR_MAX_ROWS + 1
    return _small(queries * (limit + request.offset))
