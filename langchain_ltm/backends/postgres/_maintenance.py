"""Maintenance of the Postgres engine's tables: vector type, compaction, the HNSW index.

``TableMaintenance`` is the part of ``PostgresBackend`` (a base of it) that converts,
rewrites or indexes the store's tables rather than reading and writing items:
``migrate_vector_type`` (``_vector_type``), ``compact`` (``_compact``, ``ltm compact``),
``create_hnsw_index`` (``_schema``) and ``calibrate_broad_search`` (``_calibrate``), each
with its async twin, and the checks of their options, made before anything runs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from langchain_ltm.backends._compaction import Compacted
from langchain_ltm.backends.postgres import _broad, _calibrate, _compact, _schema
from langchain_ltm.backends.postgres import _sql as sql
from langchain_ltm.backends.postgres._calibrate import BroadCalibration
from langchain_ltm.backends.postgres._connector import Connector
from langchain_ltm.backends.postgres._vector_type import migrate_vector_type


def _check_hnsw_options(m: object, ef_construction: object) -> None:
    """The bounds pgvector sets on an HNSW build, checked before anything runs.

    Raises:
        ValueError: ``m`` is not a whole number from 2 to 100, or ``ef_construction`` not
            one from 4 to 1,000 and at least twice ``m`` (a float was truncated before).
    """
    if isinstance(m, bool) or not isinstance(m, int) or not 2 <= m <= 100:
        raise ValueError(f"m must be a whole number from 2 to 100, got {m!r}.")
    if (
        isinstance(ef_construction, bool)
        or not isinstance(ef_construction, int)
        or not max(4, 2 * m) <= ef_construction <= 1000
    ):
        raise ValueError(
            f"ef_construction must be a whole number from {max(4, 2 * m)} (twice m) to "
            f"1,000, got {ef_construction!r}."
        )


class TableMaintenance:
    """The table maintenance of ``PostgresBackend``, whose ``__init__`` sets these attributes."""

    connector: Connector
    tables: sql.Tables
    dims: int | None
    vector_type: str | None
    _wanted_vector_type: str | None
    _scope_stats: _broad.ScopeStats | None
    broad_min_rows: int | None

    def migrate_vector_type(self, vector_type: str, *, lock_timeout: float = 10.0) -> None:
        """Convert the stored embeddings to ``"halfvec"`` (float16) or back to ``"vector"``.

        One transaction that rewrites the vectors table and rebuilds the HNSW index of
        :meth:`create_hnsw_index`, if there is one, with the new operator class. To
        ``halfvec``, every component is rounded to the nearest float16; back to ``vector``
        is exact. Other ANN indexes on the column stop it before any change. Both tables
        are locked for the rewrite: reads and writes of the store wait for it.

        Args:
            vector_type: ``"vector"`` or ``"halfvec"``.
            lock_timeout: Seconds to wait for other sessions to let go of the tables (a
                request waiting for them holds up every later read of the store).

        Raises:
            StoreInUseError: Another session held the tables past ``lock_timeout``:
                nothing was changed; run it again when the store is quieter.

        Example:
            >>> backend = postgres_backend("postgresql://localhost/app")  # doctest: +SKIP
            >>> backend.migrate_vector_type("halfvec")  # doctest: +SKIP
            >>> backend.vector_type  # doctest: +SKIP
            'halfvec'
        """
        timeout = _check_lock_timeout(lock_timeout)
        self.dims, self.vector_type = self.connector.run(
            lambda: migrate_vector_type(self.tables, vector_type, timeout),
            "migrate_vector_type",
            transaction=True,
            vectors=False,
        )
        self._wanted_vector_type = self.vector_type

    async def amigrate_vector_type(self, vector_type: str, *, lock_timeout: float = 10.0) -> None:
        """Async twin of :meth:`migrate_vector_type`.

        Example:
            >>> import asyncio
            >>> backend = postgres_backend("postgresql://localhost/app")  # doctest: +SKIP
            >>> asyncio.run(backend.amigrate_vector_type("halfvec"))  # doctest: +SKIP
            >>> backend.vector_type  # doctest: +SKIP
            'halfvec'
        """
        timeout = _check_lock_timeout(lock_timeout)
        self.dims, self.vector_type = await self.connector.arun(
            lambda: migrate_vector_type(self.tables, vector_type, timeout),
            "migrate_vector_type",
            transaction=True,
            vectors=False,
        )
        self._wanted_vector_type = self.vector_type

    def compact(self, *, lock_timeout: float = 10.0) -> Compacted:
        """Rewrite both tables in user order, so each user's rows sit on a few pages.

        At 1M facts a per-user search then read 6 pages from outside shared buffers
        instead of 15 (of 26-33 it touched) and took about 40% less time; the indexes are
        rebuilt compact and deleted rows' space is given back (``CLUSTER``, see
        ``_compact``). Run it after a bulk import, a migration, or mass deletions: both
        tables are locked for the whole rewrite (13-37 s at 1M facts on 2 cores), so reads
        and writes of the store wait. An HNSW index is rebuilt too: calibrate it again
        afterwards.

        Args:
            lock_timeout: Seconds to wait for other sessions to let go of each table (up
                to 2,147,483: the server's limit); the store waits as long for the first.

        Returns:
            The tables' bytes (with indexes and TOAST) before and after, and the seconds.

        Raises:
            StoreInUseError: Another session held the tables past ``lock_timeout`` (a long
                transaction, a write in progress): nothing was changed; run it again when
                the store is quieter, or with a longer ``lock_timeout``.
            BackendError: The role does not own the tables, the disk filled up, ...
                (one transaction: nothing was changed).

        Example:
            >>> backend = postgres_backend("postgresql://localhost/app")  # doctest: +SKIP
            >>> done = backend.compact()  # doctest: +SKIP
            >>> done.path, done.freed > 0  # doctest: +SKIP
            ('public.ltm_items and public.ltm_items_vectors', True)
        """
        timeout = _check_lock_timeout(lock_timeout)
        started = time.perf_counter()
        before, after = self.connector.run(
            lambda: _compact.compact(self.tables, timeout),
            "compact",
            transaction=True,
            vectors=False,
        )
        return self._compacted(before, after, started)

    async def acompact(self, *, lock_timeout: float = 10.0) -> Compacted:
        """Async twin of :meth:`compact`.

        Example:
            >>> import asyncio
            >>> backend = postgres_backend("postgresql://localhost/app")  # doctest: +SKIP
            >>> done = asyncio.run(backend.acompact())  # doctest: +SKIP
        """
        timeout = _check_lock_timeout(lock_timeout)
        started = time.perf_counter()
        before, after = await self.connector.arun(
            lambda: _compact.compact(self.tables, timeout),
            "compact",
            transaction=True,
            vectors=False,
        )
        return self._compacted(before, after, started)

    def _compacted(self, before: int, after: int, started: float) -> Compacted:
        t = self.tables
        where = f"{t.schema}.{t.table} and {t.schema}.{t.vectors_name}"
        return Compacted(where, before, after, time.perf_counter() - started)

    def create_hnsw_index(
        self, m: int = 16, ef_construction: int = 128, *, calibrate: bool = False
    ) -> BroadCalibration | None:
        """Add an HNSW index (cosine) for broad scopes and PGVectorStore's global search.

        Per-user searches stay exact and never use it. A search whose scope holds at least
        :attr:`broad_min_rows` vectors (all users, a team) walks it with pgvector's
        iterative scan and re-ranks by the exact inner product, which for unit-length
        embeddings (OpenAI, MiniLM) orders as cosine does; for embeddings that are not unit
        length add ``USING hnsw (embedding vector_ip_ops)`` yourself, which is preferred
        when present. It costs write speed. On a ``halfvec`` column it uses
        ``halfvec_cosine_ops``. ``ef_construction`` defaults to 128, not pgvector's 64.

        Graphs of the same rows differ from build to build (at 1M clustered facts, recall@10
        0.70 to 0.99 at one ``ef_search``), so ``calibrate=True`` runs
        :meth:`calibrate_broad_search` with its defaults once the index is built and
        returns what it measured (it raises :class:`~langchain_ltm.RecallTargetError`,
        the index kept, if the graph cannot reach 0.95).

        Example:
            >>> backend = postgres_backend("postgresql://localhost/app")  # doctest: +SKIP
            >>> backend.create_hnsw_index(calibrate=True).ef_search  # doctest: +SKIP
            300
            >>> backend.broad_min_rows = 50_000  # doctest: +SKIP
        """
        self._require_dims("an HNSW index")
        _check_hnsw_options(m, ef_construction)
        self.connector.run(
            lambda: _schema.create_hnsw_index(self.tables, m, ef_construction), "create_hnsw_index"
        )
        self._scope_stats = None
        return self.calibrate_broad_search() if calibrate else None

    async def acreate_hnsw_index(
        self, m: int = 16, ef_construction: int = 128, *, calibrate: bool = False
    ) -> BroadCalibration | None:
        """Async twin of :meth:`create_hnsw_index`.

        Example:
            >>> import asyncio
            >>> backend = postgres_backend("postgresql://localhost/app")  # doctest: +SKIP
            >>> asyncio.run(backend.acreate_hnsw_index())  # doctest: +SKIP
        """
        self._require_dims("an HNSW index")
        _check_hnsw_options(m, ef_construction)
        await self.connector.arun(
            lambda: _schema.create_hnsw_index(self.tables, m, ef_construction), "create_hnsw_index"
        )
        self._scope_stats = None
        return await self.acalibrate_broad_search() if calibrate else None

    def calibrate_broad_search(
        self,
        target_recall: float = 0.95,
        *,
        queries: Any = None,
        samples: int = 100,
        prefix: tuple[str, ...] = (),
        k: int = 10,
        max_ef_search: int = 1000,
        persist: bool = True,
    ) -> BroadCalibration:
        """Choose the broad-scope walk's ``ef_search`` by measuring recall on this index.

        Takes ``queries`` (your own query vectors, best: real ones) or ``samples`` stored
        vectors under ``prefix``, finds their exact top ``k`` on the exact plan, then walks
        the HNSW index with ``ef_search`` 40, 60, 80, ... up to ``max_ef_search`` until the
        mean recall, less one standard error (a margin for the sample), reaches
        ``target_recall`` for searches of limit ``k`` and, when ``k`` is larger, of limit
        10 too: a search walks ``max(ef_search, 4 * limit)`` candidates, so a small
        ``ef_search`` fails small limits first, and the value stored serves every search
        limit up to ``k``. Stored vectors are moved off the graph first (rotated to cosine
        0.9 with themselves): a stored vector itself is found far more easily than a query.
        The value chosen is stored as the index's comment (JSON with the oid and file node
        of the index measured; only the index's owner can, and a comment of the
        application's own is refused, not overwritten), so every process walks with it
        within a minute (the statistics' refresh), while :attr:`broad_ef_search` is
        ``None``; a dropped, rebuilt or reindexed index falls back to 200 until calibrated
        again. One transaction; at 1M facts the exact answers cost about 1 s a query.

        Args:
            target_recall: Mean recall@k, less one standard error, to reach, in (0, 1].
            queries: A ``(n, dims)`` array of query vectors (1 to 1,000), or ``None``.
            samples: Stored vectors taken as queries when ``queries`` is ``None``.
            prefix: The scope searched (``()``: everything). Another prefix must be one
                whose searches walk the index: the statistics prove it holds at least
                :attr:`broad_min_rows` vectors, and every walk gathers its candidates
                (otherwise searches there run the exact plan, and its recall would be
                measured instead of the index's).
            k: The largest search limit the value must serve (1 to 100): recall@k is
                measured at limit ``k``, and recall@10 at limit 10 when ``k`` is larger.
            max_ef_search: Largest ``ef_search`` tried (1 to 1,000).
            persist: Store the value chosen; ``False`` only measures.

        Returns:
            A ``BroadCalibration``: the chosen ``ef_search``, its recall, and every step.

        Raises:
            RecallTargetError: ``max_ef_search`` falls short of the target (nothing stored;
                the measurements are in its ``calibration``).
            ValueError: A bad argument, no walkable HNSW index, fewer than ``k`` items, or
                (``persist=True``) a role that does not own the index or an index comment
                that is not ours; checked before measuring. Also a ``prefix`` whose
                searches do not walk the index (fewer than :attr:`broad_min_rows` vectors
                by the statistics, or a walk that fell back to the exact plan; nothing
                stored).

        Example:
            >>> backend = postgres_backend("postgresql://localhost/app")  # doctest: +SKIP
            >>> result = backend.calibrate_broad_search(target_recall=0.95)  # doctest: +SKIP
            >>> result.ef_search, round(result.recall, 2)  # doctest: +SKIP
            (300, 0.97)
        """
        calibration = self._calibration(
            target_recall, queries, samples, prefix, k, max_ef_search, persist
        )
        result = self.connector.run(calibration, "calibrate_broad_search", transaction=True)
        self._scope_stats = None  # read the stored value with the next statistics
        return result

    async def acalibrate_broad_search(
        self,
        target_recall: float = 0.95,
        *,
        queries: Any = None,
        samples: int = 100,
        prefix: tuple[str, ...] = (),
        k: int = 10,
        max_ef_search: int = 1000,
        persist: bool = True,
    ) -> BroadCalibration:
        """Async twin of :meth:`calibrate_broad_search`."""
        calibration = self._calibration(
            target_recall, queries, samples, prefix, k, max_ef_search, persist
        )
        result = await self.connector.arun(calibration, "calibrate_broad_search", transaction=True)
        self._scope_stats = None
        return result

    def _calibration(
        self,
        target_recall: float,
        queries: Any,
        samples: int,
        prefix: tuple[str, ...],
        k: int,
        max_ef_search: int,
        persist: bool,
    ) -> Callable[[], sql.Exchange[BroadCalibration]]:
        """The arguments checked (before any I/O), and the calibration's exchange to run."""
        target, samples, k, max_ef = _calibrate.check_args(target_recall, samples, k, max_ef_search)
        given = _calibrate.check_queries(queries, self.dims)
        scope = self._calibration_prefix(prefix)
        return lambda: _calibrate.calibrate(
            self.tables,
            scope,
            given,
            samples=samples,
            k=k,
            target_recall=target,
            max_ef_search=max_ef,
            vector_type=self.vector_type,
            persist=persist,
            min_rows=self.broad_min_rows,
        )

    # ---- checks (pure) ------------------------------------------------------------------

    @staticmethod
    def _calibration_prefix(prefix: object) -> tuple[str, ...]:
        if not isinstance(prefix, tuple) or not all(isinstance(p, str) for p in prefix):
            raise ValueError(f"prefix must be a tuple of namespace labels, got {prefix!r}.")
        sql.ns_path(prefix)  # labels: non-empty, no '.'
        return prefix

    def _require_dims(self, what: str) -> None:
        if self.dims is None:
            raise ValueError(
                f"{what} needs the vector size: pass dims= to postgres_backend(), or write "
                "some vectors first."
            )


_MAX_LOCK_TIMEOUT = 2_147_483  # seconds: the server keeps lock_timeout as int milliseconds


def _check_lock_timeout(seconds: object) -> float:
    """``seconds`` as a positive, finite float (``ValueError`` saying what to give)."""
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, (int, float))
        or not math.isfinite(seconds)
        or seconds <= 0
        or seconds > _MAX_LOCK_TIMEOUT
    ):
        raise ValueError(
            f"lock_timeout must be a number of seconds > 0 and at most {_MAX_LOCK_TIMEOUT:,} "
            f"(Postgres's limit), e.g. 10; got {seconds!r}."
        )
    return float(seconds)
