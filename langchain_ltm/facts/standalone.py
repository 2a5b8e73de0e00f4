"""FactStore: the per-user fact API on one engine, without LangGraph's BaseStore around it."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

from langchain_ltm._embedder import Embedder, EmbeddingsLike, check_embeddings
from langchain_ltm.backends.base import VectorBackend
from langchain_ltm.facts._locks import UserLocks
from langchain_ltm.facts.api import FactAPI
from langchain_ltm.facts.context import FactContext
from langchain_ltm.facts.options import (
    check_history_limit,
    check_limit,
    check_resolver,
    decision_policy,
    guard_for,
    refuse_unknown,
    replace_policy,
)
from langchain_ltm.facts.resolution import Resolver
from langchain_ltm.guard import SecretGuard

__all__ = ["FactStore"]

_DEFAULT_NAMESPACE = ("memories",)


class FactStore(FactAPI):
    """One engine's per-user facts: ``LongTermMemoryStore``'s fact API and nothing else.

    The same methods (``remember``, ``recall``, ``update_fact``, ``forget``, ``list_all``,
    ``export_user``, ``import_user``, ... and their async twins), the same logic and the same
    items on disk as :class:`~langchain_ltm.LongTermMemoryStore`, so both can be open on one
    file at once. What it leaves out is LangGraph's ``BaseStore`` (``get``/``put``/``search``,
    TTL sweepers, batching of concurrent calls), and with it every LangGraph and LangChain
    import: a fresh process that only remembers or recalls facts (the ``ltm`` command, a
    script, a hook) starts about 0.3 s sooner. ``embeddings`` is any object with LangChain's
    embedding methods (:class:`~langchain_ltm.encoder.EmbeddingsLike`), such as
    :class:`~langchain_ltm.encoder.MiniLMEncoder`. Its reads refresh TTLs as LangGraph's
    default ``refresh_on_read`` does (pass ``refresh_ttl=False`` to a read to leave them).

    Args:
        backend: The engine, e.g. from :meth:`from_sqlite`.
        embeddings: Embeds facts and queries (``embed_documents``, ``embed_query`` and
            their async twins).
        namespace: Namespace prefix of the facts (``LongTermMemoryStore``'s default).
        merge_threshold: See ``LongTermMemoryStore``; the same checks and defaults.
        review_threshold: See ``LongTermMemoryStore``.
        resolver: See ``LongTermMemoryStore``.
        history_limit: See ``LongTermMemoryStore``.
        max_fact_chars: Longest accepted fact or recall query (an int >= 1).
        max_queries: Most phrasings accepted by one ``recall`` (an int >= 1).
        secret_guard: See ``LongTermMemoryStore``.

    Example:
        >>> import os, tempfile
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_ltm import LongTermMemoryStore
        >>> from langchain_ltm.facts import FactStore
        >>> path = os.path.join(tempfile.mkdtemp(), "memory.db")
        >>> embeddings = DeterministicFakeEmbedding(size=8)
        >>> with FactStore.from_sqlite(path, embeddings) as facts:
        ...     facts.remember("alice", "Prefers answers in Spanish").action
        'created'
        >>> with LongTermMemoryStore.from_sqlite(path, embeddings) as store:
        ...     [fact.content for fact in store.list_all("alice")]
        ['Prefers answers in Spanish']
    """

    def __init__(
        self,
        backend: VectorBackend,
        embeddings: EmbeddingsLike,
        *,
        namespace: tuple[str, ...] = _DEFAULT_NAMESPACE,
        merge_threshold: float | None = None,
        review_threshold: float | None = None,
        resolver: Resolver | None = None,
        history_limit: int | None = None,
        max_fact_chars: int = 2000,
        max_queries: int = 32,
        secret_guard: bool | SecretGuard | None = True,
    ) -> None:
        if not isinstance(backend, VectorBackend):
            raise TypeError(
                f"backend must be an engine (e.g. FactStore.from_sqlite(path, embeddings)), "
                f"got {type(backend).__name__}; for a LangChain vectorstore use "
                "LongTermMemoryStore."
            )
        self.backend = backend
        self.embeddings = embeddings
        self.namespace = _check_prefix(namespace)
        self.max_fact_chars = check_limit("max_fact_chars", max_fact_chars)
        self.max_queries = check_limit("max_queries", max_queries)
        self._context = FactContext(
            backend=backend,
            embedder=Embedder(embeddings),
            namespace=self.namespace,
            policy=decision_policy(merge_threshold, review_threshold),
            resolver=check_resolver(resolver),
            guard=guard_for(secret_guard),
            locks=UserLocks.shared_by(backend),
            max_fact_chars=self.max_fact_chars,
            max_queries=self.max_queries,
            history_limit=check_history_limit(history_limit),
        )

    @classmethod
    def _over(cls, backend: VectorBackend, embeddings: EmbeddingsLike, **options: Any) -> FactStore:
        """A store over a backend a ``from_*`` constructor opened: closed if refused."""
        try:
            return cls(backend, embeddings, **options)
        except BaseException:
            backend.close()
            raise

    @staticmethod
    def _refuse_unknown(
        factory: str, embeddings: object, options: dict[str, Any], engine_options: Any
    ) -> None:
        check_embeddings(embeddings)  # before the engine is opened
        refuse_unknown(
            f"FactStore.{factory}",
            FactStore.__init__,
            options,
            engine_options,
            not_options=("self", "backend", "embeddings"),
        )

    @classmethod
    def from_sqlite(
        cls,
        path: str | Path,
        embeddings: EmbeddingsLike,
        *,
        table: str = "ltm_items",
        dims: int | None = None,
        busy_timeout: float = 10.0,
        vector_cache_mb: float = 256.0,
        **options: Any,
    ) -> FactStore:
        """Facts in one SQLite file: the engine of ``LongTermMemoryStore.from_sqlite``.

        Args:
            path: The database file (created if missing; its folder must exist), a path
                and not a ``sqlite:///`` URL (``ValueError`` naming the path to pass).
            embeddings: Embeds facts and queries.
            table: Items table (also ``{table}_vectors``, ``_schema``, ``_meta``).
            dims: Vector size (read from the file, or learned at the first write).
            busy_timeout: Seconds a write waits for another process's write.
            vector_cache_mb: Megabytes of searched users' vectors kept between searches
                while the file is unchanged (0: none).
            **options: The other ``FactStore`` options (``namespace``, ``merge_threshold``...).
        """
        from langchain_ltm.backends.sqlite import BACKEND_OPTIONS, sqlite_backend

        cls._refuse_unknown("from_sqlite", embeddings, options, BACKEND_OPTIONS)
        backend = sqlite_backend(
            path,
            table=table,
            dims=dims,
            busy_timeout=busy_timeout,
            vector_cache_mb=vector_cache_mb,
        )
        return cls._over(backend, embeddings, **options)

    @classmethod
    def from_postgres(
        cls,
        conn: Any,
        embeddings: EmbeddingsLike,
        *,
        table: str = "ltm_items",
        schema: str = "public",
        dims: int | None = None,
        vector_type: str | None = None,
        **options: Any,
    ) -> FactStore:
        """Facts in Postgres with pgvector: the engine of ``LongTermMemoryStore.from_postgres``.

        Needs ``pip install "langchain-ltm[postgres]"``.

        Args:
            conn: A ``postgresql://`` URL, a langchain-postgres ``PGEngine``, or a
                ``psycopg_pool.ConnectionPool`` / ``AsyncConnectionPool``.
            embeddings: Embeds facts and queries.
            table: Items table (vectors go to ``{table}_vectors``).
            schema: Postgres schema (created if missing).
            dims: Vector size (read from the table, or learned at the first write).
            vector_type: ``"halfvec"`` stores embeddings as float16 (half the vectors
                table and index, search still exact over the stored values); ``"vector"``
                (float32) or ``None`` (an existing table's type) otherwise.
            **options: The other ``FactStore`` options (``namespace``, ``merge_threshold``...)
                and the pool's, passed to ``postgres_backend`` (``setup``, ``min_size``,
                ``max_size``, ``timeout``, ``connect_kwargs``).
        """
        from langchain_ltm.backends import engine

        postgres = engine("postgres", "postgres")
        engine_options = postgres.BACKEND_OPTIONS
        chosen = {name: options.pop(name) for name in engine_options if name in options}
        cls._refuse_unknown("from_postgres", embeddings, options, postgres.ENGINE_OPTIONS)
        backend = postgres.postgres_backend(
            conn, table=table, schema=schema, dims=dims, vector_type=vector_type, **chosen
        )
        return cls._over(backend, embeddings, **options)

    @property
    def _facts(self) -> FactContext:
        return self._context

    def with_options(
        self,
        *,
        namespace: tuple[str, ...] | None = None,
        merge_threshold: float | None = None,
        review_threshold: float | None = None,
        resolver: Resolver | None = None,
        secret_guard: bool | SecretGuard | None = None,
    ) -> FactStore:
        """A view with other fact options, sharing this one's engine, caches and locks.

        Example:
            >>> import os, tempfile
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> path = os.path.join(tempfile.mkdtemp(), "memory.db")
            >>> with FactStore.from_sqlite(path, DeterministicFakeEmbedding(size=8)) as facts:
            ...     facts.with_options(namespace=("team",)).user_namespace("u1")
            ('team', 'u1')
        """
        view = copy.copy(self)
        context = self._context
        if namespace is not None:
            view.namespace = _check_prefix(namespace)
        view._context = dataclasses.replace(
            context,
            namespace=view.namespace,
            policy=replace_policy(context.policy, merge_threshold, review_threshold),
            resolver=check_resolver(resolver) if resolver is not None else context.resolver,
            guard=guard_for(secret_guard) if secret_guard is not None else context.guard,
        )
        return view

    def close(self) -> None:
        """Release the engine's connections and file locks."""
        self.backend.close()

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        await self.backend.aclose()


def _check_prefix(namespace: Any) -> tuple[str, ...]:
    """``namespace`` as a tuple, checked by the store's own rules (one place for them)."""
    if namespace == _DEFAULT_NAMESPACE:  # known good: no need to load the checks' module
        return _DEFAULT_NAMESPACE
    from langchain_ltm._ops import fact_prefix  # imports langgraph (its error types)

    return fact_prefix(namespace)
