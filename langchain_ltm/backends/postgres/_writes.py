"""The Postgres engine's writes: a batch's items and vectors, key locks, TTL, advisory locks.

Exchanges (see ``_sql``): I/O-free generators of statements, driven by ``_drive``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from langchain_ltm._ids import vector_id_bytes
from langchain_ltm.backends.base import (
    ItemKey,
    Record,
)
from langchain_ltm.backends.postgres._errors import NOTHING_MADE
from langchain_ltm.backends.postgres._schema import TYPMOD_SQL, column_type
from langchain_ltm.backends.postgres._sql import (
    Exchange,
    Statement,
    Tables,
    has_nul,
    ns_path,
)
from langchain_ltm.backends.postgres._wire import JsonbRows, UuidRows, VectorRows
from langchain_ltm.errors import KeyTakenError, LockLostError


def write(
    t: Tables,
    upserts: Sequence[Record],
    deletes: Sequence[ItemKey],
    type_column: int | None,
    held: Sequence[tuple[int, str]] = (),
) -> Exchange[int]:
    """The batch's key locks, then its items, then its vectors (and deletes): one transaction.

    Run in one transaction (``transaction=True``), so a batch lands whole or not at all;
    rewriting the same batch gives the same rows (deterministic ids, the records' own
    timestamps). Deadlock-free by construction (see :func:`write_locks`): every writer of a
    key first takes that key's locks, in one global order, and only then writes, so each
    statement sees every earlier write of its keys; it touches only rows of its own keys,
    items before vectors. ``type_column`` (first write of a store created without ``dims``)
    types the embedding column as ``vector(n)`` (or ``halfvec(n)``, the column's own type)
    first, after the key locks (so no writer holding them waits for the column's table
    lock).

    Statements: the key locks and the table locks (the vectors table's taken with the
    items', before any row is written, as one statement naming both tables did), the item
    upsert, then one statement of CTEs deleting items and replacing vectors. The first ones
    do not wait (``Statement.wait``): in pipeline mode the server takes the locks and writes
    the items while the vectors' statement is built and sent.

    ``held``: the ``(backend pid, scope)`` locks the caller holds (``lock()``). The last
    statement also reads whether they are still held, and a lock released under its holder
    fails the write whole (:class:`LockLostError`): no round trip of its own.

    A ``create_only`` record is inserted, or written over an expired item, and otherwise
    left as stored (``ON CONFLICT ... WHERE``): another writer of its key committed first
    (the key locks make this write wait for it). The upsert counts those it wrote and the
    last statement reads the count; one short fails the write whole
    (:class:`KeyTakenError`): no round trip of its own either, but for one reading which
    keys were taken (their row's ``xmin`` is another transaction's) when some were.
    """
    for r in upserts:  # before anything is sent: the vectors are built after the items
        if (
            r.vectors is not None
            and len(r.vectors)
            and not (len(r.vectors) == len(r.texts) == len(r.paths))
        ):
            raise ValueError(
                f"Record {r.key!r} has {len(r.vectors)} vectors for {len(r.texts)} texts and "
                f"{len(r.paths)} paths: give one vector per text."
            )
    deletes = [key for key in deletes if not has_nul(key)]  # no stored item has a NUL
    paths = [ns_path(r.namespace) for r in upserts]  # each record's path, built once
    gone_paths = [ns_path(ns) for ns, _ in deletes]
    keys = list(zip(paths, [r.key for r in upserts], strict=True))
    keys += zip(gone_paths, [key for _, key in deletes], strict=True)
    if not keys:
        return 0
    locks = write_locks(t, keys)
    if type_column is not None:  # the typing lock, then the key locks, then ALTER
        yield Statement("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (t.vectors,))
    yield Statement(locks.sql, locks.params, wait=False)
    if type_column is not None:
        rows = yield Statement(TYPMOD_SQL, (t.vectors,))
        if rows and rows[0][0] == -1:
            yield Statement(
                f"ALTER TABLE {t.vectors} ALTER COLUMN embedding "
                f"TYPE {column_type(str(rows[0][1]), type_column)}"
            )
    # the modes the writes below take; items first, as deletes (the cascade) and the TTL
    # sweeper lock them
    yield Statement(f"LOCK TABLE {t.items}, {t.vectors} IN ROW EXCLUSIVE MODE", wait=False)
    fresh = [i for i, r in enumerate(upserts) if r.create_only]
    if upserts:
        params: list[Any] = []
        ctes = _upsert_items(t, upserts, paths, params)
        made = _created_set([upserts[i] for i in fresh]) if fresh else "1"
        yield Statement(f"WITH {ctes} SELECT {made}", tuple(params), wait=False)
    params = []
    ctes_list: list[str] = []
    after = ""
    if deletes:
        params.extend((gone_paths, [key for _, key in deletes]))
        ctes_list.append(
            f"gone AS (DELETE FROM {t.items} i USING unnest(%b::text[], %b::text[]) "
            "AS d(ns_path, key) WHERE i.ns_path = d.ns_path AND i.key = d.key RETURNING 1)"
        )
        # items before vectors: the vector CTEs wait for this count, so the delete has
        # run to its end before them
        ctes_list.append("items_done AS MATERIALIZED (SELECT count(*) AS done FROM gone)")
        after = " AND (SELECT done FROM items_done) >= 0"
    ctes_list.append(_replace_vectors(t, upserts, paths, deletes, gone_paths, params, after))
    counted = "(SELECT count(*) FROM gone)" if deletes else "0"
    lost = _lost_locks(t, held, params) if held else "'{}'::text[]"
    made = _CREATED_GET if fresh else "NULL"
    rows = yield Statement(
        f"WITH {', '.join(ctes_list)} SELECT {counted}, {lost}, {made}", tuple(params)
    )
    _refuse_without(rows[0][1])  # raised in the transaction: it rolls back whole
    if fresh and int(rows[0][2]) < len(fresh):  # the same; a round trip only then
        found = yield _taken(t, [keys[i] for i in fresh])
        records = [upserts[fresh[int(n) - 1]] for (n,) in found]
        raise KeyTakenError([(r.namespace, r.key) for r in records])
    return int(rows[0][0])


# How many create-only rows the items' upsert wrote: set by it in the transaction (its
# rows are not awaited), read by the last statement. A join of the batch's keys there
# instead was planned as a scan of the whole table (6 ms a batch at 20,000 items).
_CREATED_GET = "current_setting('ltm.created', true)::int8"


def _created_set(fresh: Sequence[Record]) -> str:
    """The upsert's result: it sets ``ltm.created`` (see :data:`_CREATED_GET`)."""
    names = dict.fromkeys("restored_new" if r.created_at is not None else "up_new" for r in fresh)
    counts = " + ".join(f"(SELECT count(*) FROM {name})" for name in names)
    return f"set_config('ltm.created', ({counts})::text, true)"


def _taken(t: Tables, keys: Sequence[tuple[str, str]]) -> Statement:
    """The (1-based) places in ``keys`` of rows this transaction did not write.

    Read after the items' upsert: a ``create_only`` row left as another writer stored it.
    """
    return Statement(
        "SELECT u.n FROM unnest(%b::text[], %b::text[]) WITH ORDINALITY AS u(p, k, n) "
        f"WHERE (SELECT i.xmin FROM {t.items} i WHERE i.ns_path = u.p AND i.key = u.k) "
        "<> pg_current_xact_id()::xid ORDER BY u.n",
        ([path for path, _ in keys], [key for _, key in keys]),
    )


def _upsert_items(
    t: Tables, upserts: Sequence[Record], paths: Sequence[str], params: list[Any]
) -> str:
    """Insert-or-update CTEs: ``up`` keeps an existing ``created_at``, ``restored`` sets it.

    Two of them because ``ON CONFLICT DO UPDATE`` sees only the proposed row's columns
    (``EXCLUDED``), not whether its ``created_at`` was given; the batch's keys are unique
    (see :func:`normalize_batch`), so no row is touched by both. ``create_only`` records
    go in their own (``up_new``, ``restored_new``), which update only an expired row.
    """
    head = (
        f"INSERT INTO {t.items} AS t "
        "(ns_path, key, value, created_at, updated_at, expires_at, ttl_minutes) "
    )
    update = (
        "ON CONFLICT (ns_path, key) DO UPDATE SET value = EXCLUDED.value, "
        "expires_at = EXCLUDED.expires_at, ttl_minutes = EXCLUDED.ttl_minutes, "
    )
    ctes = []
    groups: dict[tuple[bool, bool], list[int]] = {}
    for i, r in enumerate(upserts):  # one pass over a batch of 1,000
        groups.setdefault((r.created_at is not None, r.create_only), []).append(i)
    for restore, only in ((False, False), (True, False), (False, True), (True, True)):
        picked = groups.get((restore, only))
        if not picked:
            continue
        # a create-only row: written over an expired item only (else left: see write)
        name, where = ("_new", " WHERE t.expires_at <= EXCLUDED.updated_at") if only else ("", "")
        group = [upserts[i] for i in picked]
        params.extend(
            (
                [paths[i] for i in picked],
                [r.key for r in group],
                JsonbRows([r.value for r in group]),
                [r.now for r in group],
                [r.expires for r in group],
                [r.ttl_minutes for r in group],
            )
        )
        if not restore:
            ctes.append(
                f"up{name} AS ({head}SELECT p, k, v, n, n, e, m FROM unnest(%b::text[], "
                "%b::text[], %b::jsonb[], %b::timestamptz[], %b::timestamptz[], %b::float8[]) "
                "AS x(p, k, v, n, e, m) "
                f"{update}updated_at = EXCLUDED.updated_at, "
                # the stored item had expired (gone, if not yet swept): created anew
                "created_at = CASE WHEN t.expires_at <= EXCLUDED.updated_at "
                f"THEN EXCLUDED.created_at ELSE t.created_at END{where} RETURNING 1)"
            )
            continue
        params.append([r.created_at for r in group])
        ctes.append(
            f"restored{name} AS ({head}SELECT p, k, v, c, n, e, m FROM unnest(%b::text[], "
            "%b::text[], %b::jsonb[], %b::timestamptz[], %b::timestamptz[], %b::float8[], "
            "%b::timestamptz[]) AS x(p, k, v, n, e, m, c) "
            f"{update}updated_at = EXCLUDED.updated_at, created_at = EXCLUDED.created_at"
            f"{where} RETURNING 1)"
        )
    return ", ".join(ctes)


def _replace_vectors(
    t: Tables,
    upserts: Sequence[Record],
    item_paths: Sequence[str],
    deletes: Sequence[ItemKey],
    gone_paths: Sequence[str],
    params: list[Any],
    after: str,
) -> str:
    """Drop the batch's keys' vectors it does not write again, upsert the new ones.

    The vectors of deleted items are deleted here too rather than left to the foreign
    key's cascade. ``after``: a condition making both CTEs wait for the items' delete.
    """
    ids: list[bytes] = []
    texts: list[str] = []
    blocks: list[np.ndarray[Any, Any]] = []
    paths: list[str] = []
    keys: list[str] = []
    nss: list[str] = []
    for r, path_ns in zip(upserts, item_paths, strict=True):
        if r.vectors is None or not len(r.vectors):
            continue
        blocks.append(r.vectors)
        namespace, key = r.namespace, r.key
        for text, path in zip(r.texts, r.paths, strict=True):
            ids.append(vector_id_bytes(namespace, key, path))
            texts.append(text)
            paths.append(path)
            keys.append(key)
            nss.append(path_ns)
    # vectors of re-written and deleted items that this batch does not write again
    params.extend(
        (
            [*item_paths, *gone_paths],
            [r.key for r in upserts] + [key for _, key in deletes],
            UuidRows(ids),
        )
    )
    stale = (
        f"stale AS (DELETE FROM {t.vectors} v USING unnest(%b::text[], %b::text[]) "
        "AS u(ns_path, key) WHERE v.ns_path = u.ns_path AND v.key = u.key "
        f"AND NOT (v.langchain_id = ANY(%b::uuid[])){after})"
    )
    if not ids:
        return stale
    matrix = np.ascontiguousarray(np.concatenate(blocks), dtype=np.float32)
    params.extend((UuidRows(ids), texts, VectorRows(matrix), nss, keys, paths))
    return stale + (
        f", vec AS (INSERT INTO {t.vectors} "
        "(langchain_id, content, embedding, langchain_metadata, ns_path, key, path) "
        "SELECT id, c, e, json_build_object("
        "'namespace', string_to_array(left(p, -1), '.'), 'key', k, 'path', f), p, k, f "
        "FROM unnest(%b::uuid[], %b::text[], %b::vector[], %b::text[], %b::text[], "
        f"%b::text[]) AS x(id, c, e, p, k, f) WHERE TRUE{after} "
        "ON CONFLICT (langchain_id) DO UPDATE "
        "SET content = EXCLUDED.content, embedding = EXCLUDED.embedding)"
    )


# Key locks of writes: a batch of at most KEY_LOCKS keys takes, in this order, its keys'
# stripes shared and then the keys themselves exclusive; a larger batch takes its keys'
# stripes exclusive. So at most 2 * KEY_LOCKS or _STRIPES advisory locks per transaction
# (Postgres' lock table holds some 10,000 in all by default), small batches of different
# keys never wait for each other, and any two writers of one key exclude each other.
KEY_LOCKS = 128
_STRIPES = 256
_INT32 = 1 << 32
_LOWEST = -(1 << 31)  # stripes are the lowest ids, so ascending id order puts them first


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def write_locks(t: Tables, keys: Sequence[tuple[str, str]]) -> Statement:
    """Take the write locks of ``keys`` (``(ns_path, key)`` pairs) until the transaction ends.

    Transaction-level advisory locks in the two-``int4`` key space (``lock()`` and setup
    use the ``bigint`` one, so they never meet): ``(table tag, id)``, ids ascending and
    each taken once, and an id's mode is the same in every batch of its size class. Every
    writer acquires in that one global order and holds no other lock a writer waits for, so
    they cannot wait for each other in a cycle; rows are locked only under a key's locks.
    The ids come from a 64-bit hash of namespace and key: equal hashes merely share a lock.
    """
    hashes = {_hash(f"{path}\x00{key}") for path, key in keys}
    stripes = sorted({_LOWEST + h % _STRIPES for h in hashes})
    if len(hashes) > KEY_LOCKS:
        ids, shared = stripes, [False] * len(stripes)
    else:
        own = sorted({_LOWEST + _STRIPES + h % (_INT32 - _STRIPES) for h in hashes})
        ids, shared = stripes + own, [True] * len(stripes) + [False] * len(own)
    tag = _hash(t.items) % _INT32 + _LOWEST
    return Statement(
        "SELECT count(CASE WHEN s THEN pg_advisory_xact_lock_shared(%s::int4, b) "
        "ELSE pg_advisory_xact_lock(%s::int4, b) END) "
        "FROM unnest(%b::int4[], %b::bool[]) AS l(b, s)",
        (tag, tag, ids, shared),
    )


# ---- TTL -------------------------------------------------------------------------------


def touch(t: Tables, keys: Sequence[ItemKey], now: datetime) -> Exchange[None]:
    """Refresh on read: ``expires_at = now + ttl_minutes`` for alive items with a TTL.

    Rows are locked in key order and rows a writer holds are skipped (that write sets its
    own expiry), so a refresh never waits on, or deadlocks with, a concurrent write.
    """
    wanted = sorted({(ns_path(ns), key) for ns, key in keys})
    if not wanted:
        return
    yield Statement(
        f"WITH k AS (SELECT i.ns_path, i.key FROM {t.items} i "
        "JOIN unnest(%b::text[], %b::text[]) AS u(ns_path, key) "
        "ON i.ns_path = u.ns_path AND i.key = u.key "
        "WHERE i.ttl_minutes IS NOT NULL AND i.expires_at > %s "
        "ORDER BY i.ns_path, i.key FOR UPDATE OF i SKIP LOCKED) "
        f"UPDATE {t.items} i SET expires_at = %s + i.ttl_minutes * interval '1 minute' "
        "FROM k WHERE i.ns_path = k.ns_path AND i.key = k.key",
        ([p for p, _ in wanted], [k for _, k in wanted], now, now),
    )


def sweep(t: Tables, now: datetime) -> Exchange[int]:
    """Delete every item expired at ``now`` (its vectors go by cascade); how many.

    Found through the partial index on ``expires_at``; rows a writer holds are left for
    the next sweep.
    """
    rows = yield Statement(
        f"WITH doomed AS (SELECT ns_path, key FROM {t.items} "
        "WHERE expires_at IS NOT NULL AND expires_at <= %s "
        "ORDER BY ns_path, key FOR UPDATE SKIP LOCKED), "
        f"gone AS (DELETE FROM {t.items} i USING doomed d "
        "WHERE i.ns_path = d.ns_path AND i.key = d.key RETURNING 1) "
        "SELECT count(*) FROM gone",
        (now,),
    )
    return int(rows[0][0])


# ---- locks -----------------------------------------------------------------------------


def lock_key(t: Tables, scope: str) -> str:
    """The text hashed into the 64-bit advisory lock key of ``scope`` on these tables."""
    return f"{t.items}:{scope}"


def advisory_lock(t: Tables, scope: str) -> Statement:
    """Wait for and take ``scope``'s lock until the transaction ends (see ``_lock``).

    The key is ``hashtextextended('"schema"."table":' || scope, 0)``, so another tool can
    take the same lock; it never equals the keys of setup or of the vector column typing.
    The holder's transaction sits idle while it reads, decides (a resolver may call a
    model) and writes on other connections: a server's ``idle_in_transaction_session_timeout``
    and, on Postgres 17 and newer, its ``transaction_timeout`` are turned off for it, so the
    lock is not dropped under the holder. (Older servers have no ``transaction_timeout`` and
    refuse to set it: ``CASE`` sets it only where ``current_setting`` finds it, and does not
    call the volatile ``set_config`` otherwise. Turning it off mid-transaction stops the
    timer ``BEGIN`` started.)
    """
    return Statement(
        "SELECT set_config('idle_in_transaction_session_timeout', '0', true), "
        "CASE WHEN current_setting('transaction_timeout', true) IS NOT NULL "
        "THEN set_config('transaction_timeout', '0', true) END, "
        "pg_advisory_xact_lock(hashtextextended(%s, 0)), pg_backend_pid()",
        (lock_key(t, scope),),
    )


def _lost_locks(t: Tables, held: Sequence[tuple[int, str]], params: list[Any]) -> str:
    """An array of the scopes of ``held`` (``(backend pid, scope)``) no longer held.

    Read in the write's own statement, before it commits: a lock whose connection ended
    (killed, or closed by a server timeout) was released by Postgres, and another writer
    may hold it now.
    """
    params.extend(
        (
            [pid for pid, _ in held],
            [lock_key(t, scope) for _, scope in held],
            [scope for _, scope in held],
        )
    )
    return (
        "ARRAY(SELECT h.scope FROM unnest(%b::int4[], %b::text[], %b::text[]) "
        "AS h(pid, k, scope) WHERE NOT EXISTS (SELECT 1 FROM pg_locks l "
        "WHERE l.locktype = 'advisory' AND l.granted AND l.pid = h.pid AND l.objsubid = 1 "
        "AND ((l.classid::int8 << 32) | l.objid::int8) = hashtextextended(h.k, 0)))"
    )


def _refuse_without(lost: Sequence[str]) -> None:
    if lost:
        raise LockLostError(
            f"The Postgres connection holding the lock of {', '.join(map(repr, lost))} "
            "ended during this call (killed, or closed by a server timeout), so Postgres "
            "released the lock and another writer may have written since." + NOTHING_MADE
        )
