"""LongTermMemoryStore: a LangGraph BaseStore with a per-user fact API on top."""

from __future__ import annotations

import asyncio
import copy
import importlib
import threading
import zlib
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from typing import Any, overload

from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, Op, Result

from langchain_ltm._codec import fact_key, to_item, to_search_item
from langchain_ltm._embedder import Embedder
from langchain_ltm._filters import Condition
from langchain_ltm._labels import decode_label, encode_label
from langchain_ltm._ops import check_namespace, plan_batch, tokenize_fields
from langchain_ltm._steps import Logic, Step, call, run_async, run_sync
from langchain_ltm.backends import backend_for
from langchain_ltm.backends.base import (
    ListRequest,
    Record,
    SearchRequest,
    StoredItem,
    VectorBackend,
)
from langchain_ltm.errors import DuplicateFactError, InvalidFactError, MissingDependencyError
from langchain_ltm.facts import (
    Decision,
    Fact,
    FactState,
    RememberResult,
    content_hash,
    decide_batch,
    fact_from_item,
    fact_value,
    merge_hits,
    validate_text,
)
from langchain_ltm.guard import SecretGuard, find_secret

__all__ = ["DEFAULT_UPSERT_THRESHOLD", "LongTermMemoryStore"]

DEFAULT_UPSERT_THRESHOLD = 0.70
"""Cosine similarity from which a new fact updates a stored one (see LongTermMemoryStore)."""

_IS_FACT = (Condition(("content",), "$exists", True),)
_LOCK_STRIPES = 64


class LongTermMemoryStore(BaseStore):
    """A LangGraph ``BaseStore`` over a LangChain vectorstore, with per-user facts.

    As a ``BaseStore`` it is a drop-in for ``InMemoryStore``/``PostgresStore``: pass it as
    ``store=`` to a graph or an agent. On top it keeps *facts* per user in the namespace
    ``(*namespace, label(user_id))``: exact duplicates are recognised by a normalized content
    hash, and a new fact whose cosine similarity to a stored fact of the same user reaches
    ``upsert_threshold`` updates that fact in place instead of adding a near-duplicate.

    The default threshold, 0.70, comes from 157 labelled fact pairs (``bench/data/
    fact_pairs.jsonl``) embedded with the offline all-MiniLM-L6-v2 model and scored by
    ``bench/calibrate_threshold.py``: at 0.70 no pair of distinct facts merges (the most
    similar distinct pair, "allergic to peanuts" / "allergic to cats", scores 0.61) while 60%
    of paraphrases are caught as the same fact (20% at 0.85). Cosine cannot tell a paraphrase
    from a changed value ("lives in Paris" / "lives in Berlin" scores like a paraphrase), so
    such a pair updates the fact in place, keeping the old text in its history. Other
    embedding models need their own threshold: run the script with ``--embeddings``.

    Args:
        vectorstore: A supported LangChain vectorstore (``InMemoryVectorStore``), or a
            ``VectorBackend``; its embeddings embed everything this store indexes.
        embeddings: Overrides the vectorstore's embeddings (required with a bare backend).
        fields: LangGraph index paths embedded for ``put`` (default ``["$"]``: the whole value).
        namespace: Namespace prefix of the facts API.
        upsert_threshold: Cosine similarity from which a new fact updates a stored one.
        history_limit: How many earlier texts an updated fact keeps.
        max_fact_chars: Longest accepted fact or recall query.
        max_queries: Most phrasings accepted by one ``recall``.
        secret_guard: ``True`` refuses facts that look like card numbers, IBANs, API keys or
            passwords (action ``rejected``); ``False`` stores anything; or pass your own
            ``guard(text) -> reason | None``.

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
        embeddings: Embeddings | None = None,
        fields: list[str] | None = None,
        namespace: tuple[str, ...] = ("memories",),
        upsert_threshold: float = DEFAULT_UPSERT_THRESHOLD,
        history_limit: int = 5,
        max_fact_chars: int = 2000,
        max_queries: int = 32,
        secret_guard: bool | SecretGuard = True,
    ) -> None:
        self.backend: VectorBackend = backend_for(vectorstore)
        embeddings = embeddings or getattr(vectorstore, "embeddings", None)
        if embeddings is None:
            raise ValueError(
                "No embeddings: pass a vectorstore built with embeddings, or embeddings=..."
            )
        check_namespace(tuple(namespace))
        self.embeddings = embeddings
        self.fields = list(fields or ["$"])
        self.namespace = tuple(namespace)
        self.upsert_threshold = _check_threshold(upsert_threshold)
        self.history_limit = history_limit
        self.max_fact_chars = max_fact_chars
        self.max_queries = max_queries
        self.secret_guard = secret_guard
        self._guard = _guard_for(secret_guard)
        self._embedder = Embedder(embeddings)
        self._tokenized_fields = tokenize_fields(self.fields)
        self._locks = [threading.Lock() for _ in range(_LOCK_STRIPES)]

    @classmethod
    def from_postgres(
        cls,
        conn: Any,
        embeddings: Embeddings,
        *,
        table: str = "ltm_items",
        schema: str = "public",
        dims: int | None = None,
        namespace: tuple[str, ...] = ("memories",),
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
            **kwargs: Other ``LongTermMemoryStore`` options (``upsert_threshold``, ...).

        Example:
            >>> store = LongTermMemoryStore.from_postgres(  # doctest: +SKIP
            ...     "postgresql://app@localhost/app", embeddings
            ... )
        """
        postgres = _optional("langchain_ltm.backends.postgres", "postgres")
        backend = postgres.postgres_backend(conn, table=table, schema=schema, dims=dims)
        return cls(backend, embeddings=embeddings, namespace=namespace, **kwargs)

    @classmethod
    def from_qdrant(
        cls,
        client_or_url_or_path: Any,
        embeddings: Embeddings,
        *,
        collection: str = "ltm_items",
        dims: int | None = None,
        namespace: tuple[str, ...] = ("memories",),
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
            **kwargs: Other ``LongTermMemoryStore`` options (``upsert_threshold``, ...).

        Example:
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> embeddings = DeterministicFakeEmbedding(size=8)
            >>> store = LongTermMemoryStore.from_qdrant(":memory:", embeddings)
            >>> store.remember("u1", "likes tea").action
            'created'
        """
        qdrant = _optional("langchain_ltm.backends.qdrant", "qdrant")
        backend = qdrant.qdrant_backend(
            client_or_url_or_path,
            collection=collection,
            dims=dims,
            embeddings=embeddings,
            tenant_depth=len(namespace) + 1,
        )
        return cls(backend, embeddings=embeddings, namespace=namespace, **kwargs)

    def with_options(
        self,
        *,
        namespace: tuple[str, ...] | None = None,
        upsert_threshold: float | None = None,
        secret_guard: bool | SecretGuard | None = None,
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
        if namespace is not None:
            check_namespace(tuple(namespace))
            view.namespace = tuple(namespace)
        if upsert_threshold is not None:
            view.upsert_threshold = _check_threshold(upsert_threshold)
        if secret_guard is not None:
            view.secret_guard = secret_guard
            view._guard = _guard_for(secret_guard)
        return view

    def close(self) -> None:
        """Release the engine's connections and file locks (the store is unusable after)."""
        self.backend.close()

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        await self.backend.aclose()

    def __enter__(self) -> LongTermMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> LongTermMemoryStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ---- BaseStore -------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute LangGraph store operations (reads see the state before the batch's writes)."""
        return run_sync(self._batch(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of :meth:`batch`."""
        return await run_async(self._batch(ops))

    def _batch(self, ops: Iterable[Op]) -> Logic[list[Result]]:
        plan = plan_batch(ops, self._tokenized_fields)
        results: list[Result] = [None] * plan.size
        texts, queries = plan.document_texts, plan.queries
        doc_vectors = (yield call(self._embedder, "embed", texts, False)) if texts else None
        query_vectors = (yield call(self._embedder, "embed", queries, True)) if queries else None
        query_row = {q: i for i, q in enumerate(queries)}
        if plan.gets:
            keys = [(op.namespace, op.key) for _, op in plan.gets]
            found = yield call(self.backend, "get", keys)
            for (i, _), item in zip(plan.gets, found, strict=True):
                results[i] = to_item(item) if item is not None else None
        for i, op, conditions in plan.searches:
            vectors = None
            if op.query and query_vectors is not None:
                row = query_row[op.query]
                vectors = query_vectors[row : row + 1]
            request = SearchRequest(op.namespace_prefix, vectors, conditions, op.limit, op.offset)
            (hits,) = yield call(self.backend, "search", request)
            results[i] = [to_search_item(hit) for hit in hits]
        for i, lop in plan.lists:
            matching = tuple((c.match_type, tuple(c.path)) for c in lop.match_conditions or ())
            request_ns = ListRequest(matching, lop.max_depth, lop.limit, lop.offset)
            results[i] = yield call(self.backend, "list_namespaces", request_ns)
        if plan.puts:
            now = datetime.now(timezone.utc)
            text_row = {t: i for i, t in enumerate(texts)}
            upserts, deletes = [], []
            for (namespace, key), put in plan.puts.items():
                if put.value is None:
                    deletes.append((namespace, key))
                    continue
                rows = [text_row[text] for _, text in put.texts]
                upserts.append(
                    Record(
                        namespace=namespace,
                        key=key,
                        value=put.value,
                        texts=tuple(text for _, text in put.texts),
                        paths=tuple(path for path, _ in put.texts),
                        vectors=doc_vectors[rows] if rows and doc_vectors is not None else None,
                        now=now,
                    )
                )
            yield call(self.backend, "write", upserts, deletes)
        return results

    # ---- facts -----------------------------------------------------------------------

    def user_namespace(self, user_id: str) -> tuple[str, ...]:
        """The BaseStore namespace holding ``user_id``'s facts."""
        return (*self.namespace, encode_label(user_id))

    def user_id_of(self, namespace: tuple[str, ...]) -> str | None:
        """Invert :meth:`user_namespace` (``None`` for namespaces outside the facts API)."""
        n = len(self.namespace)
        if len(namespace) != n + 1 or tuple(namespace[:n]) != self.namespace:
            return None
        return decode_label(namespace[n])

    @overload
    def remember(self, user_id: str, facts: str) -> RememberResult: ...
    @overload
    def remember(
        self, user_id: str, facts: list[str] | tuple[str, ...]
    ) -> list[RememberResult]: ...
    def remember(
        self, user_id: str, facts: str | Sequence[str]
    ) -> RememberResult | list[RememberResult]:
        """Store one fact or a batch (one embedding call), deduplicated per user.

        Args:
            user_id: Whose fact it is (any non-empty string, e.g. an email address).
            facts: One fact, or a list of facts decided in order.

        Returns:
            A ``RememberResult`` per fact: created, duplicate, updated or rejected.
        """
        return run_sync(self._remember(user_id, facts))

    @overload
    async def aremember(self, user_id: str, facts: str) -> RememberResult: ...
    @overload
    async def aremember(
        self, user_id: str, facts: list[str] | tuple[str, ...]
    ) -> list[RememberResult]: ...
    async def aremember(
        self, user_id: str, facts: str | Sequence[str]
    ) -> RememberResult | list[RememberResult]:
        """Async twin of :meth:`remember`."""
        return await run_async(self._remember(user_id, facts))

    def recall(self, user_id: str, queries: str | Sequence[str], limit: int = 5) -> list[Fact]:
        """The user's facts most similar to any of the phrasings, each once, best first.

        Args:
            user_id: Whose facts to search; nobody else's are looked at.
            queries: One phrasing or several (embedded in one call, merged by best score).
            limit: How many facts to return.
        """
        return run_sync(self._recall(user_id, queries, limit))

    async def arecall(
        self, user_id: str, queries: str | Sequence[str], limit: int = 5
    ) -> list[Fact]:
        """Async twin of :meth:`recall`."""
        return await run_async(self._recall(user_id, queries, limit))

    def forget(self, user_id: str, fact_id: str) -> bool:
        """Delete one of the user's facts; ``False`` if the user has no fact with that id."""
        return run_sync(self._forget(user_id, fact_id))

    async def aforget(self, user_id: str, fact_id: str) -> bool:
        """Async twin of :meth:`forget`."""
        return await run_async(self._forget(user_id, fact_id))

    def list_all(self, user_id: str) -> list[Fact]:
        """All of the user's facts, oldest first."""
        return run_sync(self._list_all(user_id))

    async def alist_all(self, user_id: str) -> list[Fact]:
        """Async twin of :meth:`list_all`."""
        return await run_async(self._list_all(user_id))

    def clear_user(self, user_id: str) -> int:
        """Delete everything stored under the user's namespace; returns how many items."""
        return run_sync(self._clear_user(user_id))

    async def aclear_user(self, user_id: str) -> int:
        """Async twin of :meth:`clear_user`."""
        return await run_async(self._clear_user(user_id))

    def export_user(self, user_id: str) -> list[dict[str, Any]]:
        """The user's facts as JSON-ready dicts (for data export requests)."""
        return [fact.to_dict() for fact in self.list_all(user_id)]

    async def aexport_user(self, user_id: str) -> list[dict[str, Any]]:
        """Async twin of :meth:`export_user`."""
        return [fact.to_dict() for fact in await self.alist_all(user_id)]

    # ---- fact logic, written once ----------------------------------------------------

    def _lock_step(self, label: str) -> tuple[Step, threading.Lock]:
        lock = self._locks[zlib.crc32(label.encode("utf-8")) % _LOCK_STRIPES]

        async def acquire_off_loop() -> bool:
            # A worker thread waits for the lock, so the event loop keeps serving the holder.
            # If this task is cancelled while waiting, the worker still gets the lock later:
            # release it then, or the user's stripe would stay locked forever.
            waiting = asyncio.get_running_loop().run_in_executor(None, lock.acquire)
            try:
                return await asyncio.shield(waiting)
            except asyncio.CancelledError:
                waiting.add_done_callback(_release_when_acquired(lock))
                raise

        return Step(lock.acquire, acquire_off_loop), lock

    def _remember(
        self, user_id: str, facts: str | Sequence[str]
    ) -> Logic[RememberResult | list[RememberResult]]:
        label = encode_label(user_id)
        single = isinstance(facts, str)
        if not single and not isinstance(facts, (list, tuple)):
            raise InvalidFactError(
                f"facts must be a str or a list of str, got {type(facts).__name__}."
            )
        texts = [
            validate_text(f, "fact", self.max_fact_chars) for f in ([facts] if single else facts)
        ]
        results: list[RememberResult | None] = [None] * len(texts)
        accepted: list[int] = []
        for i, text in enumerate(texts):
            reason = self._guard(text) if self._guard else None
            if reason:
                results[i] = RememberResult("rejected", None, reason=reason)
            else:
                accepted.append(i)
        if accepted:
            batch = [texts[i] for i in accepted]
            try:
                stored = yield from self._store_facts(label, user_id, batch)
            except DuplicateFactError:  # another process stored one of them just now
                stored = yield from self._store_facts(label, user_id, batch)
            for i, result in zip(accepted, stored, strict=True):
                results[i] = result
        done = [r for r in results if r is not None]
        return done[0] if single else done

    def _store_facts(
        self, label: str, user_id: str, texts: list[str]
    ) -> Logic[list[RememberResult]]:
        namespace = (*self.namespace, label)
        vectors = yield call(self._embedder, "embed", texts, False)

        def new_key(digest: str) -> str:
            return fact_key(label, digest)

        digests = [content_hash(t) for t in texts]
        hashes = list(dict.fromkeys(digests))
        acquire, lock = self._lock_step(label)
        yield acquire
        try:
            exact_request = SearchRequest(
                namespace, None, (Condition(("content_hash",), "$in", hashes),), None, 0
            )
            (exact_hits,) = yield call(self.backend, "search", exact_request)
            neighbours = yield call(
                self.backend,
                "search",
                SearchRequest(namespace, vectors, _IS_FACT, len(texts) + 1, 0),
            )
            taken = yield call(self.backend, "get", [(namespace, new_key(h)) for h in hashes])
            decision = decide_batch(
                texts,
                digests,
                vectors,
                exact={str(h.item.value.get("content_hash")): h.item for h in exact_hits},
                neighbours=neighbours,
                taken_keys={item.key for item in taken if item is not None},
                new_key=new_key,
                threshold=self.upsert_threshold,
                history_limit=self.history_limit,
            )
            now = datetime.now(timezone.utc)
            records = [
                Record(
                    namespace=state.base.namespace if state.base else namespace,
                    key=state.key,
                    value=fact_value(
                        state.content, state.history, state.base.value if state.base else None
                    ),
                    texts=(state.content,),
                    paths=("content",),
                    vectors=vectors[state.row : state.row + 1],
                    now=now,
                )
                for state in decision.touched.values()
            ]
            if records:
                yield call(self.backend, "write", records, ())
        finally:
            lock.release()
        stored = {h.item.key: h.item for h in exact_hits}
        return [
            _result(d, decision.touched, stored, texts, user_id, now) for d in decision.decisions
        ]

    def _recall(self, user_id: str, queries: str | Sequence[str], limit: int) -> Logic[list[Fact]]:
        namespace = self.user_namespace(user_id)
        phrasings = [queries] if isinstance(queries, str) else list(queries)
        if not phrasings:
            raise InvalidFactError("recall needs at least one query.")
        if len(phrasings) > self.max_queries:
            raise InvalidFactError(
                f"recall got {len(phrasings)} phrasings; the limit is {self.max_queries}. "
                "Two or three phrasings of one question are enough."
            )
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
            raise ValueError(f"limit must be an int from 1 to 1000, got {limit!r}.")
        phrasings = list(
            dict.fromkeys(validate_text(q, "query", self.max_fact_chars) for q in phrasings)
        )
        vectors = yield call(self._embedder, "embed", phrasings, True)
        hits = yield call(
            self.backend, "search", SearchRequest(namespace, vectors, _IS_FACT, limit, 0)
        )
        return [fact_from_item(h.item, user_id, h.score) for h in merge_hits(hits, limit)]

    def _forget(self, user_id: str, fact_id: str) -> Logic[bool]:
        namespace = self.user_namespace(user_id)
        if not isinstance(fact_id, str) or not fact_id:
            raise ValueError(f"fact_id must be a non-empty str, got {fact_id!r}.")
        deleted = yield call(self.backend, "write", [], [(namespace, fact_id)])
        return bool(deleted)

    def _list_all(self, user_id: str) -> Logic[list[Fact]]:
        namespace = self.user_namespace(user_id)
        (hits,) = yield call(
            self.backend, "search", SearchRequest(namespace, None, _IS_FACT, None, 0)
        )
        facts = [fact_from_item(h.item, user_id) for h in hits]
        facts.sort(key=lambda f: (f.created_at, f.id))
        return facts

    def _clear_user(self, user_id: str) -> Logic[int]:
        label = encode_label(user_id)
        namespace = (*self.namespace, label)
        acquire, lock = self._lock_step(label)
        yield acquire
        try:
            (hits,) = yield call(
                self.backend, "search", SearchRequest(namespace, None, (), None, 0)
            )
            keys = [(h.item.namespace, h.item.key) for h in hits]
            deleted: int = (yield call(self.backend, "write", [], keys)) if keys else 0
        finally:
            lock.release()
        return deleted


def _optional(module: str, extra: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if isinstance(exc, MissingDependencyError):
            raise
        raise MissingDependencyError(
            f"This engine needs optional packages ({exc.name} is missing): "
            f'pip install "langchain-ltm[{extra}]"'
        ) from exc


def _release_when_acquired(lock: threading.Lock) -> Callable[[asyncio.Future[bool]], None]:
    def release(done: asyncio.Future[bool]) -> None:
        if not done.cancelled() and done.exception() is None and done.result():
            lock.release()

    return release


def _guard_for(secret_guard: bool | SecretGuard) -> SecretGuard | None:
    return find_secret if secret_guard is True else (secret_guard or None)


def _check_threshold(threshold: float) -> float:
    if not isinstance(threshold, (int, float)) or not -1.0 <= threshold <= 1.0:
        raise ValueError(f"upsert_threshold is a cosine in [-1, 1], got {threshold!r}.")
    return float(threshold)


def _result(
    decision: Decision,
    touched: dict[str, FactState],
    stored: dict[str, StoredItem],
    texts: list[str],
    user_id: str,
    now: datetime,
) -> RememberResult:
    state = touched.get(decision.key)
    if state is None:
        fact = fact_from_item(stored[decision.key], user_id)
    else:
        content = texts[decision.row] if decision.action != "duplicate" else state.content
        history = tuple(state.history) if state.row == decision.row else ()
        created = state.base.created_at if state.base else now
        fact = Fact(decision.key, user_id, content, created, now, history=history)
    return RememberResult(decision.action, fact, decision.previous, decision.similarity)
