"""The ``from_*`` constructors of :class:`~langchain_ltm.store.LongTermMemoryStore`.

Each opens its engine's backend (``postgres_backend``, ``qdrant_backend``,
``sqlite_backend``, the way ``backends/<engine>/_factory.py`` do) and builds the store over
it with ``LongTermMemoryStore._over`` (which closes the backend if the store refuses its
options). The classmethods keep the public signatures, defaults and docstrings and call
these: the defaults are written there only. This module imports ``store``, so ``store``
imports it inside the classmethods.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langchain_ltm._embedder import EmbeddingsLike, check_embeddings
from langchain_ltm.backends import engine
from langchain_ltm.facts.options import refuse_unknown
from langchain_ltm.store import LongTermMemoryStore

__all__ = ["from_postgres", "from_qdrant", "from_sqlite"]


def _refuse_unknown(
    factory: str, embeddings: object, kwargs: dict[str, Any], engine_options: Iterable[str]
) -> None:
    """Raise TypeError for an option of ``factory`` that neither the store nor engine takes.

    Or for ``embeddings`` that cannot embed (a class, a name): before the engine is opened.
    """
    check_embeddings(embeddings)
    refuse_unknown(
        factory,
        LongTermMemoryStore.__init__,
        kwargs,
        engine_options,
        not_options=("self", "vectorstore", "embeddings"),
    )


def from_postgres(
    cls: type[LongTermMemoryStore],
    conn: Any,
    embeddings: EmbeddingsLike,
    *,
    table: str,
    schema: str,
    dims: int | None,
    namespace: tuple[str, ...],
    vector_type: str | None,
    **kwargs: Any,
) -> LongTermMemoryStore:
    """The body of :meth:`LongTermMemoryStore.from_postgres` (its options, documented there)."""
    postgres = engine("postgres", "postgres")
    pool_options = postgres.BACKEND_OPTIONS
    options = {name: kwargs.pop(name) for name in pool_options if name in kwargs}
    _refuse_unknown("from_postgres", embeddings, kwargs, postgres.ENGINE_OPTIONS)
    backend = postgres.postgres_backend(
        conn, table=table, schema=schema, dims=dims, vector_type=vector_type, **options
    )
    return cls._over(backend, embeddings=embeddings, namespace=namespace, **kwargs)


def from_qdrant(
    cls: type[LongTermMemoryStore],
    client_or_url_or_path: Any,
    embeddings: EmbeddingsLike,
    *,
    collection: str,
    dims: int | None,
    namespace: tuple[str, ...],
    lock_timeout: float,
    **kwargs: Any,
) -> LongTermMemoryStore:
    """The body of :meth:`LongTermMemoryStore.from_qdrant` (its options, documented there)."""
    _refuse_unknown("from_qdrant", embeddings, kwargs, ("collection", "dims", "lock_timeout"))
    qdrant = engine("qdrant", "qdrant")
    backend = qdrant.qdrant_backend(
        client_or_url_or_path,
        collection=collection,
        dims=dims,
        embeddings=embeddings,
        tenant_depth=len(namespace) + 1,
        lock_timeout=lock_timeout,
    )
    return cls._over(backend, embeddings=embeddings, namespace=namespace, **kwargs)


def from_sqlite(
    cls: type[LongTermMemoryStore],
    path: Any,
    embeddings: EmbeddingsLike,
    *,
    table: str,
    dims: int | None,
    busy_timeout: float,
    vector_cache_mb: float,
    namespace: tuple[str, ...],
    **kwargs: Any,
) -> LongTermMemoryStore:
    """The body of :meth:`LongTermMemoryStore.from_sqlite` (its options, documented there)."""
    from langchain_ltm.backends.sqlite import BACKEND_OPTIONS, sqlite_backend

    _refuse_unknown("from_sqlite", embeddings, kwargs, BACKEND_OPTIONS)
    backend = sqlite_backend(
        path,
        table=table,
        dims=dims,
        busy_timeout=busy_timeout,
        vector_cache_mb=vector_cache_mb,
    )
    return cls._over(backend, embeddings=embeddings, namespace=namespace, **kwargs)
