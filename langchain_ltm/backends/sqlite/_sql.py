"""The SQLite engine's schema, encodings and statements, but search (``_search``).

See ``sqlite.py`` for the design.

Every function here takes an open ``sqlite3.Connection`` in autocommit mode
(``isolation_level=None``) and runs inside the transaction its caller opened: reads in a
deferred ``BEGIN`` (one WAL snapshot), writes in ``BEGIN IMMEDIATE``. Nothing here opens,
closes, commits or waits; ``sqlite.py`` does, and translates errors.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np

from langchain_ltm.backends.base import (
    ItemKey,
    ListRequest,
    Record,
    StoredItem,
    expiry,
    namespace_matches,
)
from langchain_ltm.errors import BackendError, KeyTakenError, SchemaVersionError

SCHEMA_VERSION = 1
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,47}")

_CHUNK = 500  # keys per IN (...) list: far below every SQLite build's variable limit


@dataclass(frozen=True, slots=True)
class Tables:
    """Quoted names of one store's tables in the file."""

    table: str

    def __post_init__(self) -> None:
        if not isinstance(self.table, str) or not _IDENTIFIER.fullmatch(self.table):
            raise ValueError(
                f"table {self.table!r} is not a plain identifier: use 1 to 48 letters, digits "
                "or underscores, starting with a letter or underscore."
            )

    def _q(self, suffix: str = "") -> str:
        return f'"{self.table}{suffix}"'

    @property
    def items(self) -> str:
        return self._q()

    @property
    def vectors(self) -> str:
        return self._q("_vectors")

    @property
    def versions(self) -> str:
        return self._q("_schema")

    @property
    def meta(self) -> str:
        return self._q("_meta")

    def index(self, suffix: str) -> str:
        return self._q(f"_{suffix}")


# ---- encodings -------------------------------------------------------------------------

_END = b"\x00\x01"  # ends every label
_NUL = b"\x00\xff"  # a NUL byte inside a label


def ns_key(namespace: Sequence[str]) -> bytes:
    """The indexed form of a namespace: order-preserving, whole labels only.

    Each label is its UTF-8 bytes (NUL escaped as ``00 ff``) followed by ``00 01``. Byte
    order of these keys is the tuple order of the namespaces (UTF-8 sorts like code points,
    a shorter label sorts first), so ``ORDER BY ns`` is LangGraph's namespace order, and the
    namespaces under a prefix ``P`` are exactly the range ``[key(P), key(P)[:-1] + 02)``:
    ``("memories", "u1")`` never reaches ``u10``, ``u1 x`` or ``u1%``.
    """
    return b"".join(
        label.encode("utf-8", "surrogatepass").replace(b"\x00", _NUL) + _END for label in namespace
    )


def ns_range(prefix: Sequence[str]) -> tuple[bytes, bytes]:
    low = ns_key(prefix)
    return low, low[:-1] + b"\x02"


def namespace_of(key: bytes) -> tuple[str, ...]:
    return tuple(
        part.replace(_NUL, b"\x00").decode("utf-8", "surrogatepass")
        for part in key.split(_END)[:-1]
    )


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


def to_us(moment: datetime) -> int:
    """Microseconds since the Unix epoch (UTC): exact, and sorts like the instant."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return (moment - _EPOCH) // _MICROSECOND


def from_us(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=us)


def dump_value(value: Any) -> str:
    """JSON text of a value: compact, non-ASCII kept as is (escaped only if not UTF-8)."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError as exc:  # NaN or Infinity: not JSON, and SQLite's JSON functions refuse it
        raise ValueError(
            f"The SQLite engine stores values as JSON, which has no NaN or Infinity ({exc}): "
            "store such numbers as strings or None."
        ) from exc
    except TypeError as exc:
        raise TypeError(
            f"The SQLite engine stores values as JSON ({exc}): use dicts, lists, strings, "
            "numbers, booleans and None (convert datetimes to ISO strings)."
        ) from exc
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: keep it, escaped
        text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    return text


# ---- rows ------------------------------------------------------------------------------

ITEM_COLUMNS = "i.ns, i.key, i.value, i.created_at, i.updated_at, i.expires_at, i.ttl_minutes"


class Decoder:
    """Rows to StoredItems, decoding each namespace once per call."""

    def __init__(self) -> None:
        self._namespaces: dict[bytes, tuple[str, ...]] = {}

    def namespace(self, key: bytes) -> tuple[str, ...]:
        found = self._namespaces.get(key)
        if found is None:
            found = self._namespaces[key] = namespace_of(key)
        return found

    def item(self, row: Sequence[Any]) -> StoredItem:
        ns, key, value, created, updated, expires, ttl = row
        return StoredItem(
            self.namespace(ns),
            key,
            json.loads(value),
            from_us(created),
            from_us(updated),
            None if expires is None else from_us(expires),
            ttl,
        )


# ---- reads -----------------------------------------------------------------------------


def scope_sql(prefix: tuple[str, ...], alias: str, params: list[Any]) -> str:
    if not prefix:
        return "1"
    params.extend(ns_range(prefix))
    return f"{alias}.ns >= ? AND {alias}.ns < ?"


def alive_sql(alive_at: datetime | None, alias: str, params: list[Any]) -> str:
    if alive_at is None:
        return "1"
    params.append(to_us(alive_at))
    return f"({alias}.expires_at IS NULL OR {alias}.expires_at > ?)"


def chunks(seq: Sequence[Any], size: int = _CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(seq), size):
        yield seq[start : start + size]


def stored_dims(conn: sqlite3.Connection, t: Tables) -> int | None:
    row = conn.execute(f"SELECT value FROM {t.meta} WHERE name = 'dims'").fetchone()
    return None if row is None else int(row[0])


def get_items(
    conn: sqlite3.Connection, t: Tables, keys: Sequence[ItemKey]
) -> list[StoredItem | None]:
    decoder = Decoder()
    rows = _rows_by_key(conn, keys, f"SELECT {ITEM_COLUMNS} FROM {t.items} i")
    return [None if row is None else decoder.item(row) for row in rows]


def indexed_paths(
    conn: sqlite3.Connection, t: Tables, keys: Sequence[ItemKey]
) -> list[tuple[str, ...] | None]:
    """Each item's embedded paths (``()``: no vectors; ``None``: no such item)."""
    select = (
        f"SELECT i.ns, i.key, v.paths FROM {t.items} i "
        f"LEFT JOIN {t.vectors} v ON v.ns = i.ns AND v.key = i.key"
    )
    rows = _rows_by_key(conn, keys, select)
    return [None if r is None else tuple(json.loads(r[2])) if r[2] else () for r in rows]


def _rows_by_key(conn: sqlite3.Connection, keys: Sequence[ItemKey], select: str) -> list[Any]:
    """``select``'s row for each key (``None``: none), one query per namespace and chunk.

    ``select`` reads ``{items} i`` (and what it joins), its first columns ``i.ns, i.key``.
    """
    by_ns: dict[bytes, list[str]] = {}
    wanted: list[tuple[bytes, str]] = []
    for namespace, key in keys:
        ns = ns_key(namespace)
        wanted.append((ns, key))
        by_ns.setdefault(ns, []).append(key)
    found: dict[tuple[bytes, str], Any] = {}
    for ns, ns_keys in by_ns.items():
        for chunk in chunks(list(dict.fromkeys(ns_keys))):
            rows = conn.execute(
                f"{select} WHERE i.ns = ? AND i.key IN ({', '.join('?' * len(chunk))})",
                (ns, *chunk),
            )
            for row in rows:
                found[(row[0], row[1])] = row
    return [found.get(k) for k in wanted]


def count_items(conn: sqlite3.Connection, t: Tables, prefix: tuple[str, ...]) -> int:
    params: list[Any] = []
    scope = scope_sql(prefix, "i", params)
    return int(
        conn.execute(f"SELECT count(*) FROM {t.items} i WHERE {scope}", params).fetchone()[0]
    )


def list_namespaces(
    conn: sqlite3.Connection, t: Tables, request: ListRequest
) -> list[tuple[str, ...]]:
    """Distinct namespaces from the primary key's index, then matched in Python.

    With ``alive_at``, only namespaces that hold an expired item (found through the
    ``expires_at`` index) are checked for a live one, so stores without TTLs pay nothing.
    """
    params: list[Any] = []
    prefixes = [path for kind, path in request.conditions if kind == "prefix" and path]
    exact = next((path for path in prefixes if "*" not in path), ())
    scope = scope_sql(exact, "i", params)
    found = {
        row[0]
        for row in conn.execute(f"SELECT DISTINCT i.ns FROM {t.items} i WHERE {scope}", params)
    }
    if request.alive_at is not None and found:
        at = to_us(request.alive_at)
        params.append(at)
        suspects = [
            row[0]
            for row in conn.execute(
                f"SELECT DISTINCT i.ns FROM {t.items} i WHERE {scope} AND i.expires_at <= ?",
                params,
            )
        ]
        for ns in suspects:
            alive = conn.execute(
                f"SELECT 1 FROM {t.items} WHERE ns = ? AND (expires_at IS NULL OR expires_at > ?) "
                "LIMIT 1",
                (ns, at),
            ).fetchone()
            if alive is None:
                found.discard(ns)
    namespaces = [namespace_of(ns) for ns in found]
    namespaces = [ns for ns in namespaces if namespace_matches(ns, request.conditions)]
    if request.max_depth is not None:
        namespaces = list({ns[: request.max_depth] for ns in namespaces})
    namespaces.sort()
    return namespaces[request.offset : request.offset + request.limit]


# ---- writes ----------------------------------------------------------------------------


def _upsert_sql(t: Tables) -> str:
    return (
        f"INSERT INTO {t.items} (ns, key, value, content_hash, created_at, updated_at, "
        "expires_at, ttl_minutes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
        "ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, "
        "content_hash = excluded.content_hash, "
        # restored (?9), or the stored item had expired (gone, if not yet swept): new
        "created_at = CASE WHEN ?9 OR expires_at <= excluded.updated_at "
        "THEN excluded.created_at ELSE created_at END, "
        "updated_at = excluded.updated_at, expires_at = excluded.expires_at, "
        "ttl_minutes = excluded.ttl_minutes"
    )


def write(
    conn: sqlite3.Connection, t: Tables, upserts: Sequence[Record], deletes: Sequence[ItemKey]
) -> int:
    """Delete, then upsert items (created_at kept or restored) and replace their vectors.

    First, in the same transaction: a ``create_only`` record's key holding a live item
    raises ``KeyTakenError`` (the caller rolls back; nothing was written yet).
    """
    fresh = [r for r in upserts if r.create_only]
    if fresh:
        rows = _rows_by_key(
            conn,
            [(r.namespace, r.key) for r in fresh],
            f"SELECT i.ns, i.key, i.expires_at FROM {t.items} i",
        )
        taken = [
            (r.namespace, r.key)
            for r, row in zip(fresh, rows, strict=True)
            if row is not None and (row[2] is None or row[2] > to_us(r.now))
        ]
        if taken:
            raise KeyTakenError(taken)
    deleted = 0
    if deletes:
        keys = [(ns_key(ns), key) for ns, key in deletes]
        conn.executemany(f"DELETE FROM {t.vectors} WHERE ns = ? AND key = ?", keys)
        deleted = conn.executemany(f"DELETE FROM {t.items} WHERE ns = ? AND key = ?", keys).rowcount
    if not upserts:
        return deleted
    items: list[tuple[Any, ...]] = []
    vectors: list[tuple[Any, ...]] = []
    unvectored: list[tuple[bytes, str]] = []
    for r in upserts:
        ns = ns_key(r.namespace)
        now = to_us(r.now)
        digest = r.value.get("content_hash")
        expires = r.expires
        items.append(
            (
                ns,
                r.key,
                dump_value(r.value),
                digest if isinstance(digest, str) else None,
                now if r.created_at is None else to_us(r.created_at),
                now,
                None if expires is None else to_us(expires),
                r.ttl_minutes,
                r.created_at is not None,
            )
        )
        if r.vectors is None or not len(r.vectors):
            unvectored.append((ns, r.key))
        else:
            blob = np.ascontiguousarray(r.vectors, dtype="<f4").tobytes()
            vectors.append((ns, r.key, json.dumps(list(r.paths)), blob))
    conn.executemany(_upsert_sql(t), items)
    if unvectored:
        conn.executemany(f"DELETE FROM {t.vectors} WHERE ns = ? AND key = ?", unvectored)
    if vectors:
        conn.executemany(
            f"INSERT OR REPLACE INTO {t.vectors} (ns, key, paths, embeddings) VALUES (?, ?, ?, ?)",
            vectors,
        )
    return deleted


def touch(conn: sqlite3.Connection, t: Tables, keys: Sequence[ItemKey], now: datetime) -> None:
    """``expires_at = now + ttl_minutes`` for the keys that have a TTL and are alive at ``now``."""
    at = to_us(now)
    by_ns: dict[bytes, list[str]] = {}
    for namespace, key in dict.fromkeys(keys):
        by_ns.setdefault(ns_key(namespace), []).append(key)
    updates: list[tuple[int, bytes, str, float]] = []
    for ns, ns_keys in by_ns.items():
        for chunk in chunks(ns_keys):
            rows = conn.execute(
                f"SELECT key, ttl_minutes FROM {t.items} WHERE ns = ? "
                f"AND key IN ({', '.join('?' * len(chunk))}) AND ttl_minutes IS NOT NULL "
                "AND expires_at > ?",
                (ns, *chunk, at),
            )
            for key, ttl in rows:
                expires = expiry(now, ttl)
                assert expires is not None
                updates.append((to_us(expires), ns, key, ttl))
    conn.executemany(
        f"UPDATE {t.items} SET expires_at = ? WHERE ns = ? AND key = ? AND ttl_minutes = ?",
        updates,
    )


def any_ttl(conn: sqlite3.Connection, t: Tables, keys: Sequence[ItemKey]) -> bool:
    """Whether some of ``keys`` has a TTL (a touch that would change nothing takes no lock)."""
    by_ns: dict[bytes, list[str]] = {}
    for namespace, key in keys:
        by_ns.setdefault(ns_key(namespace), []).append(key)
    for ns, ns_keys in by_ns.items():
        for chunk in chunks(ns_keys):
            row = conn.execute(
                f"SELECT 1 FROM {t.items} WHERE ns = ? AND key IN ({', '.join('?' * len(chunk))}) "
                "AND ttl_minutes IS NOT NULL LIMIT 1",
                (ns, *chunk),
            ).fetchone()
            if row is not None:
                return True
    return False


def sweep(conn: sqlite3.Connection, t: Tables, now: datetime) -> int:
    at = to_us(now)
    conn.execute(
        f"DELETE FROM {t.vectors} WHERE (ns, key) IN "
        f"(SELECT ns, key FROM {t.items} WHERE expires_at <= ?)",
        (at,),
    )
    return conn.execute(f"DELETE FROM {t.items} WHERE expires_at <= ?", (at,)).rowcount


# ---- schema ----------------------------------------------------------------------------


def _migrations(t: Tables) -> list[tuple[int, str, list[str]]]:
    return [
        (
            1,
            "items, vectors, meta; content-hash and expiry indexes",
            [
                f"""CREATE TABLE {t.items} (
    ns BLOB NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    content_hash TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    expires_at INTEGER,
    ttl_minutes REAL,
    PRIMARY KEY (ns, key)
)""",
                f"CREATE INDEX {t.index('fact_hash')} ON {t.items} (content_hash, ns) "
                "WHERE content_hash IS NOT NULL",
                f"CREATE INDEX {t.index('expires')} ON {t.items} (expires_at) "
                "WHERE expires_at IS NOT NULL",
                f"""CREATE TABLE {t.vectors} (
    ns BLOB NOT NULL,
    key TEXT NOT NULL,
    paths TEXT NOT NULL,
    embeddings BLOB NOT NULL,
    PRIMARY KEY (ns, key)
)""",
                f"CREATE TABLE {t.meta} (name TEXT PRIMARY KEY, value NOT NULL)",
            ],
        ),
    ]


def _foreign_table(t: Tables, path: str, exc: sqlite3.OperationalError) -> BackendError:
    """The error for a file where a table (or index) of this store's names is another app's."""
    return BackendError(
        f"{path} already has a table or index of the names this store uses ({exc}), and it "
        "is not langchain-ltm's (no schema version records it): another app's, most likely. "
        f'Nothing was changed. Give the store tables of its own in that file with table="...": '
        f'LongTermMemoryStore.from_sqlite(path, embeddings, table="memories") (also '
        f"FactStore.from_sqlite and sqlite_backend; it uses that name and its _vectors, "
        f'_schema and _meta tables; the default is "{t.table}"), or use another file.'
    )


def _create_versions(t: Tables) -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {t.versions} (version INTEGER PRIMARY KEY, "
        "description TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )


def schema_version(conn: sqlite3.Connection, t: Tables) -> int:
    """The applied schema version (0: no tables yet). Reads one row, writes nothing."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (f"{t.table}_schema",)
    ).fetchone()
    if exists is None:
        return 0
    return int(conn.execute(f"SELECT coalesce(max(version), 0) FROM {t.versions}").fetchone()[0])


def check_version(t: Tables, current: int, path: str) -> None:
    if current > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"Table {t.table} in {path} has schema version {current}, newer than this "
            f"langchain-ltm understands ({SCHEMA_VERSION}). Upgrade langchain-ltm."
        )


def migrate(conn: sqlite3.Connection, t: Tables, path: str) -> None:
    """Create or migrate the tables; the caller holds ``BEGIN IMMEDIATE``."""
    conn.execute(_create_versions(t))
    current = schema_version(conn, t)
    check_version(t, current, path)
    for version, description, statements in _migrations(t):
        if version <= current:
            continue
        for statement in statements:
            try:
                conn.execute(statement)
            except sqlite3.OperationalError as exc:
                if "already exists" not in str(exc):
                    raise
                raise _foreign_table(t, path, exc) from exc
        conn.execute(
            f"INSERT INTO {t.versions} (version, description, applied_at) VALUES (?, ?, ?)",
            (version, description, datetime.now(timezone.utc).isoformat()),
        )
