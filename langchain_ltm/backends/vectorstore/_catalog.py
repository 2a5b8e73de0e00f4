"""The catalog beside a user's vectorstore: a SQLite file holding every item, plus a journal.

The catalog is our SQLite engine (items, timestamps, TTL, each item's vectors and paths)
with two additions: a ``{table}_vsjournal`` table of the vectorstore documents that may
exist without being current (``adding``: written to the vectorstore before the catalog
commit that makes them current, one row per document and write, so two writes of the same
document id, a re-put at the same microsecond or an export imported twice, each own
theirs; ``garbage``: no longer current, to delete), and the
store's random id in ``{table}_meta`` (every document carries it, so two catalogs sharing
one collection never see each other's documents).

A document is current when the catalog holds its item with ``updated_at`` equal to the
document's ``ltm_at``: a stale or orphaned document is never shown, whatever state the
vectorstore is in.

Journal-only transactions (:meth:`Catalog.journal_add`, :meth:`Catalog.journal_clear` and
the like) commit without an ``fsync`` (``synchronous = NORMAL`` for that transaction): they
are in the WAL, so a killed process loses none of them, and the next item commit's ``fsync``
makes them durable too (the WAL is one file, synced whole, replayed in order). Only an OS
crash or power loss in between can forget an ``adding`` row, and what that leaks is a
document no search shows (its item was never committed), which the full
:meth:`~langchain_ltm.backends.vectorstore.VectorStoreBackend.repair` does not see either.
Item commits keep SQLite's full ``fsync``.

``{table}_meta`` also records ``vectorstore_fields = 1`` in catalogs created since the
documents carry the values' short string fields (``ltm_v_<field>``), which is what lets a
search push a value filter into the vectorstore (:func:`value_metadata`); older catalogs
keep filtering values in Python only.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

import numpy as np

from langchain_ltm._filters import matches
from langchain_ltm.backends.base import ItemKey, Record, SearchRequest, StoredItem, batch_dims
from langchain_ltm.backends.sqlite import _sql as sql
from langchain_ltm.backends.sqlite._search import prefilter
from langchain_ltm.backends.sqlite.backend import SqliteBackend
from langchain_ltm.errors import EmbeddingDimensionError

T = TypeVar("T")
_ID_NAMESPACE = uuid.UUID("8a3e6f0c-4d21-4b7e-9c55-1e2f3a4b5c6d")
ADDING, GARBAGE = "adding", "garbage"
VALUE_PREFIX = "ltm_v_"
MAX_VALUE_CHARS = 64  # longer strings are not copied into metadata (nor pushed down)
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_PAGE = 500
# `writer`: the write that journaled an `adding` row (a random token per write); '' for
# garbage rows and for rows of catalogs older than the column
_JOURNAL_DDL = (
    "CREATE TABLE IF NOT EXISTS {} (doc_id TEXT NOT NULL, writer TEXT NOT NULL DEFAULT '', "
    "state TEXT NOT NULL, since INTEGER NOT NULL, PRIMARY KEY (doc_id, writer))"
)


def _chunks(ids: Sequence[str]) -> Iterator[list[str]]:
    for start in range(0, len(ids), _PAGE):
        yield list(ids[start : start + _PAGE])


def value_metadata(value: Mapping[str, Any]) -> dict[str, str]:
    """The metadata a document carries for its item's value: short top-level strings.

    Every top-level field whose name is an identifier (``[A-Za-z_][A-Za-z0-9_]*``, up to
    64 characters) and whose value is a string of at most :data:`MAX_VALUE_CHARS`
    characters, as ``ltm_v_<field>``. The rule depends on the field and the string only,
    so a filter ``{field: string}`` the rule covers (:func:`pushable`) is met by exactly
    the documents whose item has that string there.
    """
    return {
        VALUE_PREFIX + k: v
        for k, v in value.items()
        if type(v) is str and len(v) <= MAX_VALUE_CHARS and _FIELD.fullmatch(k)
    }


def pushable(path: tuple[str, ...], op: str, operand: Any) -> bool:
    """A filter condition :func:`value_metadata` lets the vectorstore decide exactly."""
    return (
        op == "$eq"
        and len(path) == 1
        and type(operand) is str
        and len(operand) <= MAX_VALUE_CHARS
        and _FIELD.fullmatch(path[0]) is not None
    )


class JournalRow(NamedTuple):
    """One row of the journal, as read."""

    doc_id: str
    writer: str
    state: str
    since: int


class StoredDocs(NamedTuple):
    """One catalog item's documents: what re-adding them to the vectorstore needs."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    at_us: int
    paths: list[str]
    vectors: np.ndarray  # (len(paths), dims) float32


def doc_id(store_id: str, namespace: tuple[str, ...], key: str, path: str, at_us: int) -> str:
    """The id of one embedded text of one version of an item (deterministic)."""
    payload = json.dumps([store_id, list(namespace), key, path, at_us])
    return str(uuid.uuid5(_ID_NAMESPACE, payload))


@functools.lru_cache(maxsize=1 << 14)  # ~8 MB when full
def _doc_id_of_row(store_id: str, ns: bytes, key: str, path: str, at_us: int) -> str:
    """:func:`doc_id` from a catalog row's raw namespace (searches ask for the same ids often)."""
    return doc_id(store_id, sql.namespace_of(ns), key, path, at_us)


@functools.lru_cache(maxsize=1 << 12)
def _paths_of(paths: str) -> tuple[str, ...]:
    return tuple(json.loads(paths))


class Catalog(SqliteBackend):
    """Our SQLite engine plus the vectorstore journal and store id."""

    store_id: str = ""
    value_fields: bool = False  # documents carry ltm_v_<field> (see value_metadata)

    @property
    def journal(self) -> str:
        return self.tables.index("vsjournal")

    def setup(self) -> None:
        super().setup()

        def run(conn: sqlite3.Connection) -> tuple[str, bool]:
            columns = [r[1] for r in conn.execute(f"PRAGMA table_info({self.journal})")]
            if columns and "writer" not in columns:  # a journal of one row per document
                old = self.tables.index("vsjournal_old")
                conn.execute(f"ALTER TABLE {self.journal} RENAME TO {old}")
                conn.execute(_JOURNAL_DDL.format(self.journal))
                conn.execute(
                    f"INSERT INTO {self.journal} (doc_id, writer, state, since) "
                    f"SELECT doc_id, '', state, since FROM {old}"
                )
                conn.execute(f"DROP TABLE {old}")
            conn.execute(_JOURNAL_DDL.format(self.journal))
            meta = dict(
                conn.execute(
                    f"SELECT name, value FROM {self.tables.meta} "
                    "WHERE name IN ('vectorstore_id', 'vectorstore_fields')"
                ).fetchall()
            )
            if "vectorstore_id" not in meta:  # a new catalog: its documents carry values
                meta["vectorstore_id"] = uuid.uuid4().hex[:16]
                conn.execute(
                    f"INSERT INTO {self.tables.meta} (name, value) VALUES ('vectorstore_id', ?)",
                    (meta["vectorstore_id"],),
                )
                if conn.execute(f"SELECT 1 FROM {self.tables.items} LIMIT 1").fetchone() is None:
                    meta["vectorstore_fields"] = 1
                    conn.execute(
                        f"INSERT INTO {self.tables.meta} (name, value) "
                        "VALUES ('vectorstore_fields', 1)"
                    )
            return str(meta["vectorstore_id"]), str(meta.get("vectorstore_fields")) == "1"

        self.store_id, self.value_fields = self._write("setup", run)

    def _write_unsynced(self, what: str, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(conn)`` in one write transaction committed without an ``fsync``.

        For journal rows only (see the module docstring): the next synced commit makes
        them durable; a killed process loses none of them.
        """
        try:
            with self._connection() as conn:
                (level,) = conn.execute("PRAGMA synchronous").fetchone()
                conn.execute("PRAGMA synchronous = NORMAL")
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    result = fn(conn)
                    conn.execute("COMMIT")
                finally:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    conn.execute(f"PRAGMA synchronous = {int(level)}")
                return result
        except sqlite3.Error as exc:
            raise self._translate(exc, what) from exc

    # ---- journal ------------------------------------------------------------------------

    def journal_add(self, ids: Sequence[str], state: str, writer: str = "") -> None:
        """Journal ``ids`` in ``state`` as the write ``writer``'s rows."""
        if not ids:
            return
        now = int(time.time())
        self._write_unsynced(
            "write",
            lambda conn: conn.executemany(
                f"INSERT OR REPLACE INTO {self.journal} (doc_id, writer, state, since) "
                "VALUES (?, ?, ?, ?)",
                [(i, writer, state, now) for i in ids],
            ),
        )

    def journal_clear(self, ids: Sequence[str], writer: str | None = None) -> None:
        """Delete the rows of ``ids``: every row, or only the write ``writer``'s."""
        if not ids:
            return
        rows: list[tuple[str, ...]]
        if writer is None:
            query, rows = f"DELETE FROM {self.journal} WHERE doc_id = ?", [(i,) for i in ids]
        else:
            query = f"DELETE FROM {self.journal} WHERE doc_id = ? AND writer = ?"
            rows = [(i, writer) for i in ids]
        self._write_unsynced("write", lambda conn: conn.executemany(query, rows))

    def journal_pending(self, grace_seconds: float) -> list[JournalRow]:
        """Garbage, and ``adding`` rows older than ``grace_seconds`` (a writer that died).

        A document another write journaled within ``grace_seconds`` is not pending: that
        write may still make it current. The rows are returned whole, so that
        :meth:`journal_clear_rows` deletes these and no row journaled after this read.
        """
        cutoff = int(time.time() - grace_seconds)
        rows = self._read(
            "repair",
            lambda conn: conn.execute(
                f"SELECT doc_id, writer, state, since FROM {self.journal} "
                "WHERE (state = ? OR since <= ?) "
                f"AND doc_id NOT IN (SELECT doc_id FROM {self.journal} "
                "WHERE state != ? AND since > ?)",
                (GARBAGE, cutoff, GARBAGE, cutoff),
            ).fetchall(),
        )
        return [JournalRow(*r) for r in rows]

    def journal_clear_rows(self, rows: Sequence[JournalRow]) -> None:
        """Delete exactly ``rows`` (as read), in one transaction.

        A row journaled since they were read (another write's ``adding`` row for the same
        id, or the same id journaled again) differs in writer, state or time and stays.
        """
        if not rows:
            return
        self._write_unsynced(
            "write",
            lambda conn: conn.executemany(
                f"DELETE FROM {self.journal} "
                "WHERE doc_id = ? AND writer = ? AND state = ? AND since = ?",
                [tuple(r) for r in rows],
            ),
        )

    def _needed(
        self, conn: sqlite3.Connection, ids: Sequence[str], keys: Sequence[ItemKey], writer: str
    ) -> set[str]:
        """Of ``ids``: the current documents of ``keys``' items, and those another write adds."""
        needed = set(self._docs_of(conn, keys)).intersection(ids)
        needed.update(self._journaled(conn, ids, "writer != ? AND state != ?", (writer, GARBAGE)))
        return needed

    def _journaled(
        self, conn: sqlite3.Connection, ids: Sequence[str], where: str, params: Sequence[str]
    ) -> set[str]:
        """Of ``ids``: those with a journal row matching ``where`` (SQL on writer and state)."""
        found: set[str] = set()
        for chunk in _chunks(ids):
            marks = ", ".join("?" * len(chunk))
            found.update(
                r[0]
                for r in conn.execute(
                    f"SELECT doc_id FROM {self.journal} WHERE {where} AND doc_id IN ({marks})",
                    [*params, *chunk],
                )
            )
        return found

    def settle_claim(self, ids: Sequence[str], keys: Sequence[ItemKey], writer: str) -> list[str]:
        """After a failed commit: which of the write ``writer``'s documents ``ids`` to drop.

        Nothing when its ``adding`` rows are gone (the commit cleared them: it landed).
        Otherwise every one of ``ids`` except those still needed, read in one transaction:
        the current documents of ``keys``' items (a re-put of the current version writes
        its very ids) and those another write journaled (it may still make them current).
        The rows of the kept ones are cleared here, those of the others stay until
        :meth:`settle_release` (a crash in between leaves them for ``repair()``).
        """

        def run(conn: sqlite3.Connection) -> list[str]:
            own = self._journaled(conn, ids, "writer = ? AND state = ?", (writer, ADDING))
            if not own:
                return []
            needed = self._needed(conn, ids, keys, writer)
            conn.executemany(
                f"DELETE FROM {self.journal} WHERE doc_id = ? AND writer = ?",
                [(i, writer) for i in ids if i in needed],
            )
            return [i for i in ids if i in own and i not in needed]

        return self._write_unsynced("write", run)

    def settle_release(self, ids: Sequence[str], keys: Sequence[ItemKey], writer: str) -> list[str]:
        """After the drop of :meth:`settle_claim`'s ``ids``: clear their rows, name those to re-add.

        Those that became needed meanwhile (another write journaled them, or made them
        current, while they were being dropped) may have lost a document someone needs:
        they are returned and their rows stay, so the document added back is journaled
        until :meth:`settle_claim` looks at it again (another write that fails in between
        sees these rows and leaves the document to this one).
        """

        def run(conn: sqlite3.Connection) -> list[str]:
            needed = self._needed(conn, ids, keys, writer)
            conn.executemany(
                f"DELETE FROM {self.journal} WHERE doc_id = ? AND writer = ?",
                [(i, writer) for i in ids if i not in needed],
            )
            return [i for i in ids if i in needed]

        return self._write_unsynced("write", run)

    def journal_ids(self, state: str) -> list[str]:
        """Every journaled document id in ``state``, whatever its age."""
        rows = self._read(
            "repair",
            lambda conn: conn.execute(
                f"SELECT DISTINCT doc_id FROM {self.journal} WHERE state = ?", (state,)
            ).fetchall(),
        )
        return [r[0] for r in rows]

    # ---- writes that keep the journal in the same transaction ---------------------------

    def _docs_of(self, conn: sqlite3.Connection, keys: Sequence[ItemKey]) -> list[str]:
        out: list[str] = []
        for namespace, key in keys:
            row = conn.execute(
                f"SELECT i.updated_at, v.paths FROM {self.tables.items} i "
                f"JOIN {self.tables.vectors} v ON v.ns = i.ns AND v.key = i.key "
                "WHERE i.ns = ? AND i.key = ?",
                (sql.ns_key(namespace), key),
            ).fetchone()
            if row is not None:
                out.extend(
                    doc_id(self.store_id, namespace, key, p, row[0]) for p in json.loads(row[1])
                )
        return out

    def commit(
        self,
        kept: Sequence[Record],
        gone: Sequence[ItemKey],
        new_ids: Sequence[str],
        writer: str = "",
    ) -> tuple[int, list[str]]:
        """Write the batch; in the same transaction, the replaced documents become garbage.

        The write ``writer``'s ``adding`` rows of ``new_ids`` are cleared (they are current).
        Returns how many of ``gone`` existed, and the ids of the documents to delete.
        """
        dims = batch_dims(kept, None, "a new catalog")

        def run(conn: sqlite3.Connection) -> tuple[int, list[str]]:
            if dims is not None:
                stored = sql.stored_dims(conn, self.tables)
                if stored is None:
                    conn.execute(
                        f"INSERT INTO {self.tables.meta} (name, value) VALUES ('dims', ?)",
                        (dims,),
                    )
                elif stored != dims:
                    raise EmbeddingDimensionError(
                        f"The stored vectors have {stored} dimensions but the embeddings "
                        f"return {dims}: keep the original embedding model."
                    )
            touched = [(r.namespace, r.key) for r in kept] + list(gone)
            fresh = set(new_ids)
            garbage = [i for i in self._docs_of(conn, touched) if i not in fresh]
            now = int(time.time())
            conn.executemany(
                f"INSERT OR REPLACE INTO {self.journal} (doc_id, writer, state, since) "
                "VALUES (?, '', ?, ?)",
                [(i, GARBAGE, now) for i in garbage],
            )
            conn.executemany(
                f"DELETE FROM {self.journal} WHERE doc_id = ? AND writer = ?",
                [(i, writer) for i in new_ids],
            )
            return sql.write(conn, self.tables, kept, gone), garbage

        deleted, garbage = self._write("write", run)
        if dims is not None:
            self.dims = dims
        return deleted, garbage

    def sweep_docs(self, now: datetime) -> tuple[int, list[str]]:
        """Delete expired items; their documents become garbage in the same transaction."""
        at = sql.to_us(now)

        def run(conn: sqlite3.Connection) -> tuple[int, list[str]]:
            rows = conn.execute(
                f"SELECT ns, key FROM {self.tables.items} WHERE expires_at <= ?", (at,)
            ).fetchall()
            keys = [(sql.namespace_of(ns), key) for ns, key in rows]
            garbage = self._docs_of(conn, keys)
            stamp = int(time.time())
            conn.executemany(
                f"INSERT OR REPLACE INTO {self.journal} (doc_id, writer, state, since) "
                "VALUES (?, '', ?, ?)",
                [(i, GARBAGE, stamp) for i in garbage],
            )
            return sql.sweep(conn, self.tables, now), garbage

        return self._write("sweep", run)

    # ---- reads --------------------------------------------------------------------------

    def unvectored(self, request: SearchRequest) -> list[StoredItem]:
        """Items in scope with no vectors, alive at ``request.alive_at`` (not filtered)."""
        params: list[Any] = []
        scope = sql.scope_sql(request.prefix, "i", params)
        alive = sql.alive_sql(request.alive_at, "i", params)

        def run(conn: sqlite3.Connection) -> list[StoredItem]:
            decoder = sql.Decoder()
            rows = conn.execute(
                f"SELECT {sql.ITEM_COLUMNS} FROM {self.tables.items} i "
                f"LEFT JOIN {self.tables.vectors} v ON v.ns = i.ns AND v.key = i.key "
                f"WHERE {scope} AND {alive} AND v.ns IS NULL",
                params,
            )
            return [decoder.item(row) for row in rows]

        return self._read("search", run)

    def scope_docs(self, request: SearchRequest, most: int) -> tuple[list[str], int] | None:
        """The current documents of the items a ranked search may return, and their items.

        Items under ``request.prefix`` with vectors, alive at ``request.alive_at`` and
        passing the whole ``request.filter`` (decided here, exactly); each contributes the
        ids of its current version's documents (one per path). Returns ``(ids, items)``, or
        ``None`` when the scope holds more than ``most`` items with vectors (a broad scope:
        listing every id would cost more than the store's own filtered search).
        """
        params: list[Any] = []
        scope = sql.scope_sql(request.prefix, "i", params)
        alive = sql.alive_sql(request.alive_at, "i", params)
        pre = prefilter(request.filter, "i", params)
        value = ", i.value" if request.filter else ""

        def run(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            return conn.execute(
                f"SELECT i.ns, i.key, i.updated_at, v.paths{value} FROM {self.tables.items} i "
                f"JOIN {self.tables.vectors} v ON v.ns = i.ns AND v.key = i.key "
                f"WHERE {scope} AND {alive} AND {pre} LIMIT {int(most) + 1}",
                params,
            ).fetchall()

        rows = self._read("search", run)
        if len(rows) > most:
            return None
        if request.filter:
            rows = [r for r in rows if matches(json.loads(r[4]), request.filter)]
        store_id = self.store_id
        ids = [
            _doc_id_of_row(store_id, ns, key, path, at)
            for ns, key, at, paths, *_ in rows
            for path in _paths_of(paths)
        ]
        return ids, len(rows)

    def embedded_items(self) -> int:
        """How many items have documents in the vectorstore (at least that many documents)."""

        def run(conn: sqlite3.Connection) -> int:
            (count,) = conn.execute(f"SELECT count(*) FROM {self.tables.vectors}").fetchone()
            return int(count)

        return self._read("search", run)

    def vector_count(self, prefix: tuple[str, ...]) -> int:
        """How many documents the items under ``prefix`` have in the vectorstore."""
        params: list[Any] = []
        scope = sql.scope_sql(prefix, "v", params)

        def run(conn: sqlite3.Connection) -> int:
            total = 0
            for (paths,) in conn.execute(
                f"SELECT paths FROM {self.tables.vectors} v WHERE {scope}", params
            ):
                total += len(json.loads(paths))
            return total

        return self._read("search", run)

    def stored_docs(self) -> Iterator[list[StoredDocs]]:
        """Every item with vectors, in pages of 500, each page read in one snapshot."""
        after: tuple[bytes, str] | None = None
        while True:
            params: list[Any] = []
            where = ""
            if after is not None:
                where, params = "WHERE (i.ns, i.key) > (?, ?)", list(after)

            def run(
                conn: sqlite3.Connection, where: str = where, params: list[Any] = params
            ) -> list[tuple[Any, ...]]:
                return conn.execute(
                    f"SELECT i.ns, i.key, i.value, i.updated_at, v.paths, v.embeddings "
                    f"FROM {self.tables.items} i JOIN {self.tables.vectors} v "
                    f"ON v.ns = i.ns AND v.key = i.key {where} "
                    f"ORDER BY i.ns, i.key LIMIT {_PAGE}",
                    params,
                ).fetchall()

            rows = self._read("repair", run)
            if not rows:
                return
            page = []
            for ns, key, value, at, paths, blob in rows:
                names = json.loads(paths)
                vectors = np.frombuffer(blob, dtype="<f4").reshape(len(names), -1)
                page.append(
                    StoredDocs(sql.namespace_of(ns), key, json.loads(value), at, names, vectors)
                )
            yield page
            if len(rows) < _PAGE:
                return
            after = (rows[-1][0], rows[-1][1])
