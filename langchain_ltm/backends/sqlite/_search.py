"""The SQLite engine's searches: exact, scoped, filtered in Python (see ``sqlite.py``).

Every function runs inside the read transaction its caller opened (one WAL snapshot).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from langchain_ltm._filters import Condition, Filter, matches
from langchain_ltm._utf8 import encodes_as_utf8
from langchain_ltm.backends._index import _top, cosines, page
from langchain_ltm.backends.base import Hit, SearchRequest, StoredItem
from langchain_ltm.backends.sqlite._cache import ScopeCache, ScopeVectors
from langchain_ltm.backends.sqlite._sql import (
    ITEM_COLUMNS,
    Decoder,
    Tables,
    alive_sql,
    chunks,
    scope_sql,
)
from langchain_ltm.errors import BackendError

_JSON_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_OPERANDS = 500
_MAX_PUSHED = 64
"""Conditions pushed into one query's SQL; the rest are checked in Python (a filter of
1,000 conditions passed SQLite's expression depth: "Expression tree is too large")."""
_MAX_PUSHED_PARAMS = 2_000
"""Bound values the pushed conditions may add (SQLite takes 32,766 per statement)."""


# ---- filters ---------------------------------------------------------------------------


def prefilter(conditions: Filter, alias: str, params: list[Any]) -> str:
    """A WHERE fragment keeping a superset of the rows ``matches`` accepts (often exactly them).

    Only what SQLite decides without JSON type pitfalls is pushed down: string and boolean
    equality and key existence on top-level keys (``json_type`` tells a JSON string from a
    number and ``true`` from ``1``), and ``content_hash`` equality through its indexed
    column. Everything else (ranges, nested paths, numbers, containers) is left to
    :func:`langchain_ltm._filters.matches`, which callers apply to every row anyway.
    """
    parts: list[str] = []
    start = len(params)
    for cond in conditions:
        mark = len(params)
        sql = _pushdown(cond, alias, params)
        if sql is None or len(params) - start > _MAX_PUSHED_PARAMS:
            del params[mark:]  # left to Python, which checks every row anyway
            continue
        parts.append(sql)
        if len(parts) == _MAX_PUSHED:
            break  # SQLite nests each AND one level deeper, 1,000 at most
    return " AND ".join(parts) if parts else "1"


def _strings(cond: Condition) -> list[str] | None:
    """String operands SQLite compares exactly; ``None`` leaves the condition to Python.

    Long lists (every fact id of a large user, say) stay in Python too: they could pass
    SQLite's limit on bound variables, and the scan reads the scope's rows either way.
    """
    operands = [cond.operand] if cond.op == "$eq" else cond.operand
    if cond.op not in ("$eq", "$in") or not isinstance(operands, list):
        return None
    if len(operands) > _MAX_OPERANDS:
        return None
    for operand in operands:
        if not isinstance(operand, str) or "\x00" in operand or not encodes_as_utf8(operand):
            return None
    return operands


def _pushdown(cond: Condition, alias: str, params: list[Any]) -> str | None:
    if len(cond.path) != 1 or not _JSON_KEY.fullmatch(cond.path[0]):
        return None
    path = "$." + cond.path[0]
    if cond.op == "$exists":
        params.append(path)
        return f"json_type({alias}.value, ?) IS {'NOT ' if cond.operand else ''}NULL"
    if cond.op == "$object":
        params.append(path)
        return f"coalesce(json_type({alias}.value, ?) = 'object', 0)"
    if cond.op == "$eq" and isinstance(cond.operand, bool):
        params.append(path)
        return f"json_type({alias}.value, ?) = '{'true' if cond.operand else 'false'}'"
    strings = _strings(cond)
    if strings is None:
        return None
    if not strings:
        return "0"
    marks = ", ".join("?" * len(strings))
    if cond.path == ("content_hash",):  # the indexed column holds exactly the string values
        params.extend(strings)
        return f"{alias}.content_hash IN ({marks})"
    params.append(path)
    params.append(path)
    params.extend(strings)
    return f"(json_type({alias}.value, ?) = 'text' AND json_extract({alias}.value, ?) IN ({marks}))"


# ---- search ----------------------------------------------------------------------------


def search(
    conn: sqlite3.Connection,
    t: Tables,
    request: SearchRequest,
    cache: tuple[ScopeCache, int] | None = None,
) -> list[list[Hit]]:
    """The hits of ``request`` (one list per query vector); ``cache``: vectors, file version."""
    if request.vectors is None:
        return [_unranked(conn, t, request, None)]
    return _ranked(conn, t, request, cache)


def _unranked(
    conn: sqlite3.Connection, t: Tables, request: SearchRequest, unscored_only: int | None
) -> list[Hit]:
    """Items in ``updated_at DESC, namespace, key`` order, filtered, paged.

    ``unscored_only`` (from ranked searches): items without vectors only, and at most that
    many of them (-1: all), from the start (no offset).
    """
    params: list[Any] = []
    where = [
        scope_sql(request.prefix, "i", params),
        alive_sql(request.alive_at, "i", params),
        prefilter(request.filter, "i", params),
    ]
    if unscored_only is not None:
        where.append(
            f"NOT EXISTS (SELECT 1 FROM {t.vectors} v WHERE v.ns = i.ns AND v.key = i.key)"
        )
        offset, limit = 0, None if unscored_only < 0 else unscored_only
    else:
        offset, limit = request.offset, request.limit
    sql = (
        f"SELECT {ITEM_COLUMNS} FROM {t.items} i WHERE {' AND '.join(where)} "
        "ORDER BY i.updated_at DESC, i.ns, i.key"
    )
    decoder = Decoder()
    if not request.filter:  # the SQL is exact: let SQLite page
        params.extend((-1 if limit is None else limit, offset))
        rows = conn.execute(sql + " LIMIT ? OFFSET ?", params).fetchall()
        return [Hit(decoder.item(row), None) for row in rows]
    wanted = None if limit is None else offset + limit
    passed: list[Hit] = []
    cursor = conn.execute(sql, params)
    try:
        for row in cursor:
            item = decoder.item(row)
            if matches(item.value, request.filter):
                passed.append(Hit(item, None))
                if wanted is not None and len(passed) >= wanted:
                    break
    finally:
        cursor.close()
    return passed[offset:] if limit is None else passed[offset : offset + limit]


def _cached_vectors(
    conn: sqlite3.Connection,
    t: Tables,
    prefix: tuple[str, ...],
    cache: tuple[ScopeCache, int] | None,
) -> ScopeVectors:
    """:func:`_vectors_in_scope`, from ``cache`` when the file is unchanged since it read them."""
    if cache is None:
        return ScopeVectors(*_vectors_in_scope(conn, t, prefix))
    scopes, version = cache
    found = scopes.lookup(version, prefix)
    if found is None:
        found = ScopeVectors(*_vectors_in_scope(conn, t, prefix))
        scopes.store(version, prefix, found)
    return found


def _vectors_in_scope(
    conn: sqlite3.Connection, t: Tables, prefix: tuple[str, ...]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], bytes]:
    """Rowids, blob sizes and the concatenated blobs of the vectors under ``prefix``.

    SQLite concatenates the blobs itself (one aggregate pass over the primary key's range),
    so Python makes one bytes object instead of one per item: 2-3x faster at 10,000 items.
    The three aggregates step over the same rows in the same order, so rowid ``i`` owns the
    ``i``-th blob whatever that order is (in practice the index's: namespace, then key).
    A scope past SQLite's 1 GB limit on one value is read row by row instead.
    """
    params: list[Any] = []
    scope = scope_sql(prefix, "v", params)
    inner = (
        f"SELECT v.rowid AS r, length(v.embeddings) AS n, v.embeddings AS e "
        f"FROM {t.vectors} v WHERE {scope} ORDER BY v.ns, v.key"
    )
    try:
        ids, sizes, blob = conn.execute(
            f"SELECT group_concat(r), group_concat(n), CAST(group_concat(e, '') AS BLOB) "
            f"FROM ({inner})",
            params,
        ).fetchone()
    except sqlite3.DataError:  # string or blob too big
        rows = conn.execute(inner, params).fetchall()
        return (
            np.array([row[0] for row in rows], dtype=np.int64),
            np.array([row[1] for row in rows], dtype=np.int64),
            b"".join(row[2] for row in rows),
        )
    if ids is None:  # nothing in scope
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), b""
    return (
        np.array(ids.split(","), dtype=np.int64),
        np.array(sizes.split(","), dtype=np.int64),
        blob,
    )


def _ranked(
    conn: sqlite3.Connection,
    t: Tables,
    request: SearchRequest,
    cache: tuple[ScopeCache, int] | None,
) -> list[list[Hit]]:
    """Exact: every vector in scope is scored with numpy, items are read best-first.

    The vectors under the prefix come from the primary key's range (ties in score keep its
    order: namespace, then key); an item's score is its best vector's. For each query the
    best items are then read (joined through their vector row, filtered, checked for
    expiry) in windows that grow 4x until ``offset + limit`` pass, so a filter that rejects
    most items still fills the page and one that rejects none reads one window.
    """
    assert request.vectors is not None
    queries = np.ascontiguousarray(request.vectors, dtype=np.float32)
    dims = queries.shape[1]
    rowids, sizes, blob = _cached_vectors(conn, t, request.prefix, cache)
    n = len(rowids)
    if n:
        if (sizes % (4 * dims)).any():
            raise BackendError(
                f"Stored vectors in {t.vectors} do not have {dims} dimensions: the file was "
                "written with another embedding model."
            )
        matrix = np.frombuffer(blob, dtype="<f4").reshape(-1, dims)
        raw = cosines(matrix, queries)
        counts = sizes // (4 * dims)
        if (counts == 1).all():
            scores = raw
        else:
            starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
            scores = np.maximum.reduceat(raw, starts, axis=0)
    else:
        scores = np.zeros((0, len(queries)), dtype=np.float32)

    wanted = None if request.limit is None else request.offset + request.limit
    decoder = Decoder()
    fetched: dict[int, StoredItem | None] = {}  # row -> item, None if filtered or expired

    ends = np.cumsum(sizes)
    blobs = memoryview(blob)

    def fetch(indices: Sequence[int]) -> None:
        missing = [i for i in indices if i not in fetched]
        index_of = {int(rowids[i]): i for i in missing}
        for i in missing:
            fetched[i] = None
        for chunk in chunks(list(index_of)):
            chunk_params: list[Any] = list(chunk)
            # the scope again, as every statement has it: a rowid alone never reaches
            # another user's row, whatever the vectors it came from
            scope = scope_sql(request.prefix, "v", chunk_params)
            alive = alive_sql(request.alive_at, "i", chunk_params)
            where = prefilter(request.filter, "i", chunk_params)
            found = conn.execute(
                f"SELECT v.rowid, v.embeddings, {ITEM_COLUMNS} FROM {t.vectors} v "
                f"JOIN {t.items} i ON i.ns = v.ns AND i.key = v.key "
                f"WHERE v.rowid IN ({', '.join('?' * len(chunk))}) AND {scope} AND {alive} "
                f"AND {where}",
                chunk_params,
            )
            for row in found:
                i = index_of[row[0]]
                if blobs[int(ends[i] - sizes[i]) : int(ends[i])] != row[1]:
                    continue  # the rowid now holds other vectors: not the row that was scored
                item = decoder.item(row[2:])
                if not request.filter or matches(item.value, request.filter):
                    fetched[i] = item

    columns: list[list[Hit]] = []
    for column in range(len(queries)):
        column_scores = scores[:, column]
        if wanted is None:
            order = _top(column_scores, None).tolist()
            fetch(order)
            kept = [i for i in order if fetched[i] is not None]
        else:
            window = max(wanted, 1)
            while True:
                order = _top(column_scores, window).tolist()
                fetch(order)
                kept = [i for i in order if fetched[i] is not None]
                if len(kept) >= wanted or window >= n:
                    break
                window *= 4
            kept = kept[:wanted]
        scored = ((fetched[i], float(column_scores[i])) for i in kept)
        columns.append([Hit(item, score) for item, score in scored if item is not None])

    short = [len(hits) for hits in columns if wanted is None or len(hits) < wanted]
    if short:  # some query has fewer scored items than wanted: items without vectors follow
        need = -1 if wanted is None else wanted - min(short)
        unscored = _unranked(conn, t, request, need)
        for hits in columns:
            if wanted is None or len(hits) < wanted:
                hits.extend(unscored)
    return [page(hits, request) for hits in columns]
