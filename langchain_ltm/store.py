"""LongTermMemoryStore: a LangGraph BaseStore with a per-user fact API on top."""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import threading
import weakref
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    IndexConfig,
    Op,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from langchain_ltm import _clock
from langchain_ltm._coalesce import Coalescer
from langchain_ltm._codec import to_item, to_search_item
from langchain_ltm._embedder import Embedder, EmbeddingsLike, as_langchain, check_embeddings
from langchain_ltm._filters import Filter
from langchain_ltm._ops import fact_prefix, plan_batch, plan_search, tokenize_fields
from langchain_ltm._steps import Logic, call, run_async, run_sync
from langchain_ltm._ttl import (
    SweeperTask,
    SweeperThread,
    check_ttl_config,
    interval_minutes,
    no_ttl,
)
from langchain_ltm.backends import backend_for
from langchain_ltm.backends.base import (
    ItemKey,
    ListRequest,
    Record,
    SearchRequest,
    StoredItem,
    VectorBackend,
    Vectors,
    is_alive,
)
from langchain_ltm.errors import BackendError
from langchain_ltm.facts import reads
from langchain_ltm.facts import versions as layout
from langchain_ltm.facts._locks import UserLocks
from langchain_ltm.facts.api import FactAPI
from langchain_ltm.facts.client_puts import holds_nothing, keys_to_read, write_puts
from langchain_ltm.facts.context import FactContext, is_user_namespace
from langchain_ltm.facts.options import (
    DEFAULT_MERGE_THRESHOLD,
    DEFAULT_REVIEW_THRESHOLD,
    check_history_limit,
    check_limit,
    check_resolver,
    decision_policy,
    guard_for,
    replace_policy,
)
from langchain_ltm.facts.resolution import Resolver
from langchain_ltm.guard import SecretGuard

__all__ = [
    "DEFAULT_MERGE_THRESHOLD",
    "DEFAULT_REVIEW_THRESHOLD",
    "DEFAULT_UPSERT_THRESHOLD",
    "LongTermMemoryStore",
]

DEFAULT_UPSERT_THRESHOLD = DEFAULT_MERGE_THRESHOLD
"""The 0.1 name of :data:`DEFAULT_MERGE_THRESHOLD`."""


class LongTermMemoryStore(FactAPI, BaseStore):
    """A LangGraph ``BaseStore`` over a LangChain vectorstore, with per-user facts.

    As a ``BaseStore`` it is a drop-in for ``InMemoryStore``/``PostgresStore``: pass it as
    ``store=`` to a graph or an agent. On top it keeps *facts* per user in the namespace
    ``(*namespace, label(user_id))``, and never loses one: an exact duplicate (normalized
    text) is recognised, a new fact about the same subject that scores at least
    ``merge_threshold`` and carries everything the stored one says (or says the same words
    with another number, date or negation) becomes a new *version* of the stored fact
    (every earlier text is kept and searchable), and anything
    uncertain is either decided by a ``resolver`` or stored as a new fact with the close
    ones listed in ``RememberResult.similar``.

    The defaults come from a labelled set of fact pairs (``bench/data/fact_pairs.jsonl``,
    ``bench/dedup_quality.py``) embedded with the offline all-MiniLM-L6-v2 model: with them no
    pair of distinct facts in the set merges. Other embedding models need their own
    thresholds: run the script with ``--embeddings``.

    Args:
        vectorstore: A supported LangChain vectorstore (``InMemoryVectorStore``), or a
            ``VectorBackend``; its embeddings embed everything this store indexes.
        embeddings: Overrides the vectorstore's embeddings (required with a bare backend).
        fields: LangGraph index paths embedded for ``put`` (default ``["$"]``: the whole value).
        namespace: Namespace prefix of the facts API.
        merge_threshold: Cosine similarity from which a fact about the same subject that
            carries everything a stored one says is its new version.
        review_threshold: Cosine similarity from which a fact is ambiguous: sent to the
            resolver, or created with the close facts listed in ``similar``.
        resolver: Decides the ambiguous cases of a batch in one call (e.g.
            ``ChatModelResolver(model)``); ``None`` keeps both facts.
        history_limit: Keep at most this many earlier versions per fact (``None``, the
            default, keeps every one; :meth:`prune_history` prunes on demand).
        max_fact_chars: Longest accepted fact or recall query (an int >= 1).
        max_queries: Most phrasings accepted by one ``recall`` (an int >= 1).
        secret_guard: ``True`` (or ``None``) refuses facts that look like card numbers,
            IBANs, API keys or passwords (action ``rejected``); ``False`` stores anything; or
            pass your own ``guard(text) -> reason | None``.
        upsert_threshold: The 0.1 name of ``merge_threshold``.
        ttl: LangGraph's ``TTLConfig``: ``default_ttl`` (minutes, for ``put`` without
            ``ttl=``), ``refresh_on_read`` (default ``True``), ``sweep_interval_minutes``
            (starts a sweeper thread now; ``close()`` stops it) and ``omit_expired``
            (default ``True`` here: expired items are invisible to every read at once).

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> store = LongTermMemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=32)))
        >>> store.remember("alice@example.com", "Prefers answers in Spanish").action
        'created'
        >>> store.remember("alice@example.com", "prefers answers in spanish.").action
        'duplicate'
        >>> [f.content for f in store.recall("alice@example.com", ["language?"], limit=1)]
        ['Prefers answers in Spanish']
        >>> store.recall("bob", "language?")
        []
    """

    def __init__(
        self,
        vectorstore: Any,
        *,
        embeddings: EmbeddingsLike | None = None,
        fields: list[str] | None = None,
        namespace: tuple[str, ...] = ("memories",),
        merge_threshold: float | None = None,
        review_threshold: float | None = None,
        resolver: Resolver | None = None,
        history_limit: int | None = None,
        max_fact_chars: int = 2000,
        max_queries: int = 32,
        secret_guard: bool | SecretGuard | None = True,
        upsert_threshold: float | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        # the options first: a refused one leaves nothing open
        check_embeddings(embeddings)
        self.fields = list(fields or ["$"])
        self.namespace = fact_prefix(namespace)
        self.policy = decision_policy(merge_threshold, review_threshold, upsert_threshold)
        self.resolver = check_resolver(resolver)
        self.history_limit = check_history_limit(history_limit)
        self.max_fact_chars = check_limit("max_fact_chars", max_fact_chars)
        self.max_queries = check_limit("max_queries", max_queries)
        self.secret_guard = secret_guard
        self._guard = guard_for(secret_guard)
        self._tokenized_fields = tokenize_fields(self.fields)
        self.ttl_config: TTLConfig | None = check_ttl_config(ttl)
        self.backend: VectorBackend = backend_for(vectorstore)
        try:
            self._start(vectorstore, embeddings)
        except BaseException:
            if self.backend is not vectorstore:  # built here (a given backend stays the caller's)
                self.backend.close()
            raise

    def _start(self, vectorstore: Any, embeddings: EmbeddingsLike | None) -> None:
        """The rest of ``__init__``, once the backend is open (which a failure closes)."""
        embeddings = embeddings or getattr(vectorstore, "embeddings", None)
        if embeddings is None:
            raise ValueError(
                f"A bare backend ({type(vectorstore).__name__}) has no embeddings: pass "
                "embeddings=... (the Embeddings that embed what it stores)."
                if isinstance(vectorstore, VectorBackend)
                else f"{type(vectorstore).__name__} exposes no `.embeddings`: pass "
                "embeddings=... (the Embeddings it was built with), as in "
                "LongTermMemoryStore(vectorstore, embeddings=embeddings)."
            )
        self.embeddings: EmbeddingsLike = embeddings
        self._embedder = Embedder(self.embeddings)
        self._locks = UserLocks.shared_by(self.backend)
        self.supports_ttl = self.backend.capabilities.ttl
        if self.ttl_config and not self.supports_ttl:
            raise NotImplementedError(no_ttl(self.backend.capabilities.name))
        self._sweeper = SweeperThread()
        self._asweeper = SweeperTask()
        # close() or aclose() began: no sweeper may start (an Event: with_options views
        # share it, as they share the engine and the sweepers)
        self._closed = threading.Event()
        # the store a with_options view was made from: its views keep it alive and its
        # sweepers sweep through it (they hold it weakly, so a dropped store is collected)
        self._root: LongTermMemoryStore | None = None
        self._coalescer = self._own_coalescer()
        # every coalescer of this store and its with_options views, each running its own
        # store's batches (a view's options decide its puts and searches): close() drains all
        self._coalescers: weakref.WeakSet[Coalescer] = weakref.WeakSet([self._coalescer])
        if self.ttl_config and self.ttl_config.get("sweep_interval_minutes"):
            self.start_ttl_sweeper()

    @property
    def merge_threshold(self) -> float:
        """Cosine similarity from which a fact about the same subject is a new version."""
        return self.policy.merge_threshold

    @property
    def review_threshold(self) -> float:
        """Cosine similarity from which a fact is ambiguous."""
        return self.policy.review_threshold

    upsert_threshold = merge_threshold

    @classmethod
    def from_postgres(
        cls,
        conn: Any,
        embeddings: EmbeddingsLike,
        *,
        table: str = "ltm_items",
        schema: str = "public",
        dims: int | None = None,
        namespace: tuple[str, ...] = ("memories",),
        vector_type: str | None = None,
        **kwargs: Any,
    ) -> LongTermMemoryStore:
        """A store on Postgres with pgvector; creates or migrates its tables.

        Per-user queries go through a btree on the user's namespace and are scored exactly;
        writes are one transaction per batch with vectors sent in binary. Needs
        ``pip install "langchain-ltm[postgres]"``.

        Args:
            conn: A ``postgresql://`` URL, a langchain-postgres ``PGEngine``, or a
                ``psycopg_pool.ConnectionPool`` / ``AsyncConnectionPool``.
            embeddings: Embeds facts, queries and indexed fields.
            table: Items table (vectors go to ``{table}_vectors``).
            schema: Postgres schema (created if missing).
            dims: Vector size (read from the table, or learned at the first write).
            namespace: Namespace prefix of the fact API.
            vector_type: ``"halfvec"`` stores embeddings as float16 (half the vectors
                table and index, search still exact over the stored values); ``"vector"``
                (float32) or ``None`` (an existing table's type) otherwise.
            **kwargs: Other ``LongTermMemoryStore`` options (``merge_threshold``, ...),
                and ``postgres_backend()``'s connection options: ``setup``,
                ``min_size``, ``max_size``, ``timeout``, ``connect_kwargs``.

        Raises:
            TypeError: an option that is neither the store's nor ``postgres_backend()``'s.

        Example:
            >>> store = LongTermMemoryStore.from_postgres(  # doctest: +SKIP
            ...     "postgresql://app@localhost/app", embeddings, max_size=20
            ... )
        """
        from langchain_ltm import _store_factories  # it imports this module

        return _store_factories.from_postgres(
            cls,
            conn,
            embeddings,
            table=table,
            schema=schema,
            dims=dims,
            namespace=namespace,
            vector_type=vector_type,
            **kwargs,
        )

    @classmethod
    def from_qdrant(
        cls,
        client_or_url_or_path: Any,
        embeddings: EmbeddingsLike,
        *,
        collection: str = "ltm_items",
        dims: int | None = None,
        namespace: tuple[str, ...] = ("memories",),
        lock_timeout: float = 2.0,
        **kwargs: Any,
    ) -> LongTermMemoryStore:
        """A store on Qdrant: ``":memory:"``, a folder (embedded), or a server URL / client.

        Embedded mode (``":memory:"`` or a folder) is for development and single-process apps;
        use a server URL (``http(s)://...``) in production. The collection is created with
        cosine distance if missing; an existing one is checked once for vector size and
        distance. Needs ``pip install "langchain-ltm[qdrant]"``.

        Args:
            client_or_url_or_path: ``":memory:"``, a folder path, an ``http(s)://`` URL, or a
                ``QdrantClient``.
            embeddings: Embeds facts, queries and indexed fields.
            collection: Collection name.
            dims: Vector size (learned from ``embeddings`` when the collection is new).
            namespace: Namespace prefix of the fact API.
            lock_timeout: Folder only: seconds to wait while another process (or another
                store in this one) has the folder open, then ``BackendError``.
            **kwargs: Other ``LongTermMemoryStore`` options (``merge_threshold``, ...).

        Example:
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> embeddings = DeterministicFakeEmbedding(size=8)
            >>> store = LongTermMemoryStore.from_qdrant(":memory:", embeddings)
            >>> store.remember("u1", "likes tea").action
            'created'
        """
        from langchain_ltm import _store_factories  # it imports this module

        return _store_factories.from_qdrant(
            cls,
            client_or_url_or_path,
            embeddings,
            collection=collection,
            dims=dims,
            namespace=namespace,
            lock_timeout=lock_timeout,
            **kwargs,
        )

    @classmethod
    def from_sqlite(
        cls,
        path: Any,
        embeddings: EmbeddingsLike,
        *,
        table: str = "ltm_items",
        dims: int | None = None,
        busy_timeout: float = 10.0,
        vector_cache_mb: float = 256.0,
        namespace: tuple[str, ...] = ("memories",),
        **kwargs: Any,
    ) -> LongTermMemoryStore:
        """A store in one SQLite file (Python's own ``sqlite3``, no extra needed).

        WAL mode: any number of processes read while one writes; writers wait up to
        ``busy_timeout`` seconds, then get a ``BackendError``. Per-user queries go through
        the primary key's range and are scored exactly with numpy; ``remember`` is
        serialized per user across processes. The file can also hold LangGraph's
        ``SqliteSaver`` checkpoints.

        Args:
            path: The database file (created if missing; its folder must exist), a path
                and not a ``sqlite:///`` URL (``ValueError`` naming the path to pass).
            embeddings: Embeds facts, queries and indexed fields.
            table: Items table (also ``{table}_vectors``, ``_schema``, ``_meta``).
            dims: Vector size (read from the file, or learned at the first write).
            busy_timeout: Seconds a write waits for another process's write.
            vector_cache_mb: Megabytes of searched users' vectors kept between searches
                while the file is unchanged (0: none).
            namespace: Namespace prefix of the fact API.
            **kwargs: Other ``LongTermMemoryStore`` options (``merge_threshold``, ...).

        Example:
            >>> import os, tempfile
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> path = os.path.join(tempfile.mkdtemp(), "memory.db")
            >>> with LongTermMemoryStore.from_sqlite(path, DeterministicFakeEmbedding(size=8)) as s:
            ...     s.remember("u1", "likes tea").action
            'created'
        """
        from langchain_ltm import _store_factories  # it imports this module

        return _store_factories.from_sqlite(
            cls,
            path,
            embeddings,
            table=table,
            dims=dims,
            busy_timeout=busy_timeout,
            vector_cache_mb=vector_cache_mb,
            namespace=namespace,
            **kwargs,
        )

    @classmethod
    def _over(cls, backend: VectorBackend, **kwargs: Any) -> LongTermMemoryStore:
        """A store over a backend a ``from_*`` constructor opened: closed if refused."""
        try:
            return cls(backend, **kwargs)
        except BaseException:
            backend.close()
            raise

    def with_options(
        self,
        *,
        namespace: tuple[str, ...] | None = None,
        merge_threshold: float | None = None,
        review_threshold: float | None = None,
        resolver: Resolver | None = None,
        secret_guard: bool | SecretGuard | None = None,
        upsert_threshold: float | None = None,
    ) -> LongTermMemoryStore:
        """A view of this store with other fact options, sharing its engine and caches.

        Example:
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> from langchain_core.vectorstores import InMemoryVectorStore
            >>> vs = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
            >>> LongTermMemoryStore(vs).with_options(namespace=("team",)).user_namespace("u1")
            ('team', 'u1')
        """
        view = copy.copy(self)
        view._root = self._root or self
        view._coalescer = view._own_coalescer()
        self._coalescers.add(view._coalescer)  # one set, shared by the root and its views
        if namespace is not None:
            view.namespace = fact_prefix(namespace)
        view.policy = replace_policy(
            self.policy, merge_threshold, review_threshold, upsert_threshold
        )
        if resolver is not None:
            view.resolver = check_resolver(resolver)
        if secret_guard is not None:
            view.secret_guard = secret_guard
            view._guard = guard_for(secret_guard)
        return view

    def _own_coalescer(self) -> Coalescer:
        """The coalescer of this store's async calls: its batches run with this store's options."""
        return Coalescer(lambda ops: run_async(self._batch(ops)))

    @property
    def omit_expired(self) -> bool:
        """Whether expired items are left out of reads before a sweep deletes them.

        ``ttl_config["omit_expired"]``, default ``True`` (LangGraph's default is ``False``).
        """
        return bool((self.ttl_config or {}).get("omit_expired", True))

    @property
    def index_config(self) -> IndexConfig:
        """LangGraph's index configuration of this store: ``dims``, ``embed``, ``fields``.

        ``dims`` is learnt once (from the engine, an earlier embedding call, or one probe).
        """
        dims = self._embedder.dims or getattr(self.backend, "dims", None)
        if not isinstance(dims, int):
            dims = int(self._embedder.embed(["dims"], True).shape[1])
        embed = as_langchain(self.embeddings)  # LangGraph takes Embeddings or a function
        return {"dims": dims, "embed": embed, "fields": list(self.fields)}

    def close(self) -> None:
        """Stop the TTL sweepers and release the engine's connections and file locks.

        The sweeper thread is stopped and waited for; a sweeper task (``astart_ttl_sweeper``)
        is told to stop, and stops on its loop (``aclose`` waits for it).
        """
        self._closed.set()
        self.stop_ttl_sweeper()
        self._asweeper.signal_stop()
        for coalescer in list(self._coalescers):  # async calls of other threads' loops finish
            coalescer.drain_threads()
        self.backend.close()

    async def aclose(self) -> None:
        """Async twin of :meth:`close`: stops both sweeper variants and waits for them.

        A sweeper task may run on another loop (another thread's): it is told to stop there
        and waited for from here, as :meth:`astop_ttl_sweeper` does.
        """
        self._closed.set()
        await self.astop_ttl_sweeper()
        self.stop_ttl_sweeper()
        for coalescer in list(self._coalescers):  # waiting and running async calls finish first
            await coalescer.adrain_all()
        await self.backend.aclose()

    # ---- TTL -------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete every expired item (with its vectors) now; returns how many."""
        return self.backend.sweep(_clock.utcnow())

    async def asweep_ttl(self) -> int:
        """Async twin of :meth:`sweep_ttl`."""
        return await self.backend.asweep(_clock.utcnow())

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Run :meth:`sweep_ttl` in a daemon thread every interval (PostgresStore's API).

        The interval is ``sweep_interval_minutes``, else ``ttl_config``'s, else 5 minutes.
        Already running: returns a future for the running sweeper. Cancelling the future
        or :meth:`stop_ttl_sweeper` stops it; ``close()`` does too; a sweeper that fails
        ends the future with its error. A closed store refuses to start one
        (``BackendError``), and an interval longer than a thread can wait
        (``threading.TIMEOUT_MAX`` seconds) is refused (``ValueError``).

        Example:
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> from langchain_core.vectorstores import InMemoryVectorStore
            >>> store = LongTermMemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=8)))
            >>> future = store.start_ttl_sweeper(sweep_interval_minutes=1)
            >>> store.stop_ttl_sweeper(timeout=5)
            True
        """
        self._require_ttl()
        minutes = interval_minutes(sweep_interval_minutes, self.ttl_config)
        return self._sweeper.start((self._root or self).sweep_ttl, minutes)

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; ``False`` if it still ran after ``timeout`` seconds."""
        return self._sweeper.stop(timeout)

    async def astart_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> asyncio.Task[None]:
        """The asyncio variant of :meth:`start_ttl_sweeper` (AsyncPostgresStore's).

        A task on the running loop awaiting :meth:`asweep_ttl` every interval; stop it
        with :meth:`astop_ttl_sweeper` (``aclose()`` does too).
        """
        self._require_ttl()
        minutes = interval_minutes(sweep_interval_minutes, self.ttl_config)
        return self._asweeper.start((self._root or self).asweep_ttl, minutes)

    async def astop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper task; ``False`` if it still ran after ``timeout`` seconds.

        Any loop may call it: a task of another loop is told to stop there and waited for
        (its loop stopped: it ends when that loop runs again; closed: it is gone).
        """
        return await self._asweeper.stop(timeout)

    def _require_ttl(self) -> None:
        """Refuse to start a sweeper: the engine has no TTL, or the store was closed.

        A sweeper of a closed store failed at each tick (logging the engine's "was closed"
        error every interval) on the engines that refuse calls once closed.
        """
        if self._closed.is_set():
            raise BackendError(
                "This store was closed (close() or aclose()): it starts no TTL sweeper. "
                "Open a new store."
            )
        if not self.supports_ttl:
            raise NotImplementedError(no_ttl(self.backend.capabilities.name))

    # ---- BaseStore -------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute LangGraph store operations (reads see the state before the batch's writes)."""
        return run_sync(self._batch(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of :meth:`batch`; concurrent calls share batch runs (``_coalesce``)."""
        return await self._coalescer.submit(ops)

    def _batch(self, ops: Iterable[Op]) -> Logic[list[Result]]:
        plan = plan_batch(ops, self._tokenized_fields)
        if not self.supports_ttl and any(put.ttl is not None for put in plan.puts.values()):
            self._require_ttl()
        results: list[Result] = [None] * plan.size
        texts, queries = plan.document_texts, plan.queries
        now = _clock.utcnow()
        alive_at = now if self.omit_expired else None
        refresh: dict[ItemKey, StoredItem] = {}  # read items whose TTL this batch refreshes
        doc_vectors = (yield call(self._embedder, "embed", texts, False)) if texts else None
        query_vectors = (yield call(self._embedder, "embed", queries, True)) if queries else None
        query_row = {q: i for i, q in enumerate(queries)}
        # the items the puts and deletes of user namespaces touch are read with the gets:
        # one round trip (client_puts decides from them what to keep and what to lock)
        facts = self._facts  # (a context built per call: built once for the batch)
        touched = keys_to_read(facts, plan.puts.items())
        if plan.gets or touched:
            keys = [(op.namespace, op.key) for _, op in plan.gets]
            found = yield call(self.backend, "get", [*keys, *touched])
            before = dict(zip(touched, found[len(keys) :], strict=True))
            found = found[: len(keys)]
        else:
            before = {}
        if plan.gets:
            for (i, get_op), item in zip(plan.gets, found, strict=True):
                if item is None or not is_alive(item, alive_at):
                    continue
                results[i] = to_item(item)
                if get_op.refresh_ttl and item.ttl_minutes is not None:
                    refresh[(item.namespace, item.key)] = item
        for i, op, conditions in plan.searches:
            vectors = None
            if op.query and query_vectors is not None:
                row = query_row[op.query]
                vectors = query_vectors if len(queries) == 1 else query_vectors[row : row + 1]
            results[i] = yield from self._searched(op, conditions, vectors, alive_at, refresh)
        for i, lop in plan.lists:
            matching = tuple((c.match_type, tuple(c.path)) for c in lop.match_conditions or ())
            request_ns = ListRequest(matching, lop.max_depth, lop.limit, lop.offset, alive_at)
            results[i] = yield call(self.backend, "list_namespaces", request_ns)
        yield from self._refresh(refresh, now)
        if plan.puts:
            text_row = {t: i for i, t in enumerate(texts)}
            upserts, deletes = [], []
            for (namespace, key), put in plan.puts.items():
                if put.value is None:
                    deletes.append((namespace, key))
                    continue
                pairs = put.texts
                paths: tuple[str, ...]
                put_texts: tuple[str, ...]
                if len(pairs) == 1:  # the usual put: one embedded field
                    ((path, text),) = pairs
                    paths, put_texts, rows = (path,), (text,), [text_row[text]]
                else:
                    paths = tuple([path for path, _ in pairs])
                    put_texts = tuple([text for _, text in pairs])
                    rows = [text_row[text] for text in put_texts]
                upserts.append(
                    Record(
                        namespace=namespace,
                        key=key,
                        value=put.value,
                        texts=put_texts,
                        paths=paths,
                        vectors=doc_vectors[rows] if rows and doc_vectors is not None else None,
                        now=now,
                        ttl_minutes=put.ttl,
                        # a put at a key read as holding nothing: written while it does
                        create_only=(namespace, key) in before
                        and holds_nothing(before[(namespace, key)], now),
                    )
                )
            # a put over a fact (LangMem's update) keeps the text it replaces as a version,
            # a delete of one deletes its versions: under the user's lock (client_puts)
            yield from write_puts(facts, upserts, deletes, now, before)
        return results

    def search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        """Search items under ``namespace_prefix``: ``BaseStore.search`` without a batch around it.

        The same checks and answers as ``batch([SearchOp(...)])``, less the batch's planning
        (a per-user search is mostly fixed cost: this is a fifth of the store's share).
        ``asearch`` does the same when it runs alone; async searches made while another call
        of the store runs share batch runs.

        Example:
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> from langchain_core.vectorstores import InMemoryVectorStore
            >>> store = LongTermMemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=8)))
            >>> store.put(("memories", "ada"), "k1", {"content": "likes tea"})
            >>> [item.key for item in store.search(("memories", "ada"), query="tea")]
            ['k1']
        """
        op = self._search_op(namespace_prefix, query, filter, limit, offset, refresh_ttl)
        return run_sync(self._search_alone(*plan_search(op)))

    async def asearch(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        """Async twin of :meth:`search`: the same checks, errors and answers.

        A search made while the event loop runs no other call of this store runs alone, as
        :meth:`search` does; one made while another call runs waits and shares the next
        batch run with the other waiting calls (see ``_coalesce``).
        """
        op = self._search_op(namespace_prefix, query, filter, limit, offset, refresh_ttl)
        op, conditions = plan_search(op)  # refused here as search refuses it, before any batching
        results = await self._coalescer.submit([op], lambda: self._search_run(op, conditions))
        return results[0]  # type: ignore[return-value]

    async def _search_run(self, op: SearchOp, conditions: Filter) -> list[Result]:
        """A lone ``asearch``'s run: :meth:`_search_alone`, without the batch planning."""
        return [await run_async(self._search_alone(op, conditions))]

    def _search_op(
        self,
        namespace_prefix: tuple[str, ...],
        query: str | None,
        filter: dict[str, Any] | None,
        limit: int,
        offset: int,
        refresh_ttl: bool | None,
    ) -> SearchOp:
        """The ``SearchOp`` of a ``search``/``asearch`` call (``BaseStore.search``'s defaults)."""
        if refresh_ttl is None:  # as BaseStore.search: the TTL config decides, else refresh
            refresh_ttl = (self.ttl_config or {}).get("refresh_on_read", True)
        return SearchOp(namespace_prefix, filter, limit, offset, query, refresh_ttl)

    def _search_alone(self, op: SearchOp, conditions: Filter) -> Logic[list[SearchItem]]:
        """One planned search (``plan_search``), with the TTL refresh a batch would do."""
        now = _clock.utcnow()
        vectors = None
        if op.query:
            vectors = yield call(self._embedder, "embed", [op.query], True)
        refresh: dict[ItemKey, StoredItem] = {}
        alive_at = now if self.omit_expired else None
        found = yield from self._searched(op, conditions, vectors, alive_at, refresh)
        yield from self._refresh(refresh, now)
        return found

    def _searched(
        self,
        op: SearchOp,
        conditions: Filter,
        vectors: Vectors | None,
        alive_at: datetime | None,
        refresh: dict[ItemKey, StoredItem],
    ) -> Logic[list[SearchItem]]:
        """One search's items; those it should refresh go into ``refresh``."""
        one_user = is_user_namespace(self.namespace, op.namespace_prefix)
        # a user's namespace shows current texts (layout.current_view). From the first
        # rank, the search runs as asked and again without versions only if one came back:
        # the condition costs every per-user search about 7% on Postgres, and most users'
        # best hits are current texts
        current = layout.current_view(op.filter, conditions) if one_user else conditions
        optimistic = current is not conditions and op.offset == 0
        request = SearchRequest(
            op.namespace_prefix,
            vectors,
            conditions if optimistic else current,
            op.limit,
            op.offset,
            alive_at,
            one_user,
        )
        (hits,) = yield call(self.backend, "search", request)
        if optimistic and any("version_of" in hit.item.value for hit in hits):
            (hits,) = yield call(self.backend, "search", replace(request, filter=current))
        if op.refresh_ttl:
            for hit in hits:
                if hit.item.ttl_minutes is not None:
                    refresh[(hit.item.namespace, hit.item.key)] = hit.item
        return [to_search_item(hit) for hit in hits]

    def _refresh(self, items: dict[ItemKey, StoredItem], now: datetime) -> Logic[None]:
        """Refresh the TTLs of ``items`` read (and their facts' versions) from ``now``."""
        if items:
            yield from reads.refresh(self._facts, list(items.values()), now)

    # ---- facts -----------------------------------------------------------------------

    @property
    def _facts(self) -> FactContext:
        return FactContext(
            backend=self.backend,
            embedder=self._embedder,
            namespace=self.namespace,
            policy=self.policy,
            resolver=self.resolver,
            guard=self._guard,
            locks=self._locks,
            max_fact_chars=self.max_fact_chars,
            max_queries=self.max_queries,
            history_limit=self.history_limit,
            refresh_on_read=(self.ttl_config or {}).get("refresh_on_read", True),
        )
