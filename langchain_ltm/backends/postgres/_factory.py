"""``postgres_backend()``: a ``PostgresBackend`` over a URL, a ``PGEngine`` or a psycopg pool.

What it is given becomes a ``Connector`` (a URL checked before any connection is tried, a
pool's twin opened on its conninfo, a ``PGEngine``'s URL read), then the backend, then its
tables unless ``setup=False``. ``backend`` imports it, so both
``langchain_ltm.backends.postgres`` and ``.backend`` export it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from psycopg_pool import AsyncConnectionPool, ConnectionPool

from langchain_ltm.backends.postgres._connector import Connector
from langchain_ltm.backends.postgres._urls import check_conninfo, conninfo_from_engine

if TYPE_CHECKING:
    from langchain_postgres import PGEngine

    from langchain_ltm.backends.postgres.backend import PostgresBackend

BACKEND_OPTIONS = ("setup", "min_size", "max_size", "timeout", "connect_kwargs")
"""The options of :func:`postgres_backend` that the stores' ``from_postgres`` pass on."""

ENGINE_OPTIONS = ("table", "schema", "dims", "vector_type", *BACKEND_OPTIONS)
"""Every engine option of the stores' ``from_postgres``: their own keywords, then the pool's
(named in the message of an unknown option)."""


def postgres_backend(
    conn: str | PGEngine | ConnectionPool[Any] | AsyncConnectionPool[Any],
    *,
    table: str = "ltm_items",
    schema: str = "public",
    dims: int | None = None,
    setup: bool = True,
    min_size: int = 1,
    max_size: int = 10,
    timeout: float = 10.0,
    connect_kwargs: dict[str, Any] | None = None,
    vector_type: str | None = None,
) -> PostgresBackend:
    """A :class:`PostgresBackend` over a URL, a ``PGEngine`` or a psycopg pool.

    Args:
        conn: ``postgresql://...`` URL, a langchain-postgres ``PGEngine`` (its URL is used
            for psycopg pools; the engine serves :meth:`PostgresBackend.as_vectorstore`),
            or a ``psycopg_pool.ConnectionPool`` / ``AsyncConnectionPool`` (used as is; the
            missing twin is opened on the same conninfo when first needed). Pools handed
            in keep their session settings: add ``options="-c plan_cache_mode=
            force_generic_plan -c TimeZone=UTC"`` to their connection kwargs for the
            fastest searches (what pools opened here set). They also keep their JSON
            adapters: values are written with the dumps their connections were given
            (``psycopg.types.json.set_json_dumps(dumps, conn)`` in the pool's
            ``configure=``) and read with their loads. The twin opened here does not run
            the pool's ``configure=`` (a sync callback cannot configure async
            connections): for custom JSON on both, call ``set_json_dumps(dumps)`` and
            ``set_json_loads(loads)`` globally, or hand in the pool you use.
        table: Items table name (vectors go to ``{table}_vectors``, the schema version to
            ``{table}_schema``, its indexes ``{table}_pkey``, ``_fact_hash``,
            ``_vectors_scope``, ``_expires_at``, ``_vectors_hnsw``: a name that is
            another relation, another store's table say, is refused).
        schema: Postgres schema for the tables (created if missing).
        dims: Embedding size. ``None``: read from the table, or learnt at the first write.
        setup: Create/migrate the tables now (sync). Pass ``False`` and await
            :meth:`PostgresBackend.asetup` in async code.
        min_size: Connections each pool keeps open.
        max_size: Most connections per pool.
        timeout: Seconds to wait for a connection before raising ``BackendError``.
        connect_kwargs: Extra ``psycopg.connect`` arguments for pools opened here.
        vector_type: ``"halfvec"`` stores embeddings as float16 (half the vectors table
            and index; search stays exact over the stored values); ``"vector"`` as
            float32. ``None``: an existing table's type, ``vector`` for a new one. A type
            other than the table's raises ``ValueError``: convert it with
            :meth:`PostgresBackend.migrate_vector_type`.

    Returns:
        The backend, ready for ``LongTermMemoryStore(backend, embeddings=...)``.

    Raises:
        ValueError: ``conn`` is a URL libpq cannot read (a bad port, an unknown parameter),
            raised before any connection is tried; ``timeout`` is not positive.
        BackendError: with ``setup=True``, the server cannot be reached within ``timeout``.

    Example:
        >>> backend = postgres_backend("postgresql://localhost/app", dims=384, setup=False)
        >>> backend.dims, backend.tables.items
        (384, '"public"."ltm_items"')
        >>> backend.setup()  # creates or migrates the tables  # doctest: +SKIP
    """
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        # 0 was taken, and every call then failed saying the pool's connections were busy
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}.")
    engine: Any = None
    pool: ConnectionPool[Any] | None = None
    apool: AsyncConnectionPool[Any] | None = None
    if isinstance(conn, str):
        conninfo = check_conninfo(conn)  # malformed: ValueError now, not after the timeout
    elif isinstance(conn, (ConnectionPool, AsyncConnectionPool)):
        if isinstance(conn, ConnectionPool):
            pool = conn
        else:
            apool = conn
        # the twin pool (async for a sync pool, and the reverse) opens on the same settings
        conninfo = conn.conninfo if isinstance(conn.conninfo, str) else ""
        given = conn.kwargs if isinstance(conn.kwargs, dict) else {}
        connect_kwargs = {**given, **(connect_kwargs or {})}
    elif type(conn).__name__ == "PGEngine":
        engine, conninfo = conn, conninfo_from_engine(conn)
    else:
        raise TypeError(
            "postgres_backend() takes a postgresql:// URL, a langchain_postgres.PGEngine, or "
            f"a psycopg_pool.ConnectionPool/AsyncConnectionPool; got {type(conn).__name__}."
        )
    connector = Connector(
        conninfo,
        pool=pool,
        apool=apool,
        kwargs=connect_kwargs,
        min_size=min_size,
        max_size=max_size,
        timeout=timeout,
    )
    # imported here: backend imports this module (and exports postgres_backend)
    from langchain_ltm.backends.postgres.backend import PostgresBackend

    backend = PostgresBackend(
        connector, table=table, schema=schema, dims=dims, engine=engine, vector_type=vector_type
    )
    if setup:
        try:
            backend.setup()
        except BaseException:
            backend.close()  # the pools opened here (a pool handed in stays open)
            raise
    return backend
