"""Rewrite a store's two tables in namespace order: a user's rows on a few pages (I/O-free).

Rows arrive in the order facts are said, so a user's items and vectors end up spread over
the tables, one page each: at 1M facts a per-user search read 14-16 pages from outside
shared buffers (1 GB of them), and 6 once the same rows were bunched together. ``CLUSTER``
rewrites each table in the order of its namespace-first index (items on the primary key
``(ns_path, key)``, vectors on the scope index), builds every index anew (compact, as after
``REINDEX``) and gives the space of deleted rows back, as ``VACUUM FULL`` does. Rows
written later go where there is room; compacting again puts them in order. Postgres marks
the two indexes ``indisclustered``, so a plain ``CLUSTER`` of the tables later uses them.

Both tables are locked ``ACCESS EXCLUSIVE`` for the whole rewrite (reads and writes wait;
13-37 s at 1M facts on 2 cores), items first, as writers lock them. If another session holds
one of them for longer than ``lock_timeout`` (a long transaction, an agent in the middle of
a write), nothing is done and the caller is told (:class:`StoreInUseError`). Each lock waits
up to ``lock_timeout`` on its own, and while it waits for the vectors table the items table
is already held: the store can stand still for up to ``lock_timeout`` before a refusal, and
compacting can take up to twice ``lock_timeout`` to refuse. A ``lock_timeout`` shorter than
the server's ``deadlock_timeout`` (1 s) does not make an autovacuum of the tables give way.
It is one transaction: a failure half way (a full disk) changes nothing. It needs free
space about the size of the tables and their indexes, and the tables' owner (or, on
Postgres 17 and newer, the ``MAINTAIN`` privilege). An HNSW index is rebuilt too (minutes
at 1M rows), so its broad-search calibration no longer applies: calibrate again afterwards.
"""

from __future__ import annotations

from langchain_ltm.backends.postgres._sql import Exchange, Statement, Tables

__all__ = ["compact"]


def _size(t: Tables) -> Statement:
    return Statement(
        "SELECT pg_total_relation_size(%s::regclass) + pg_total_relation_size(%s::regclass)",
        (t.items, t.vectors),
    )


def compact(t: Tables, lock_timeout: float) -> Exchange[tuple[int, int]]:
    """Cluster both tables by namespace (one transaction); their bytes before and after.

    Run it in a transaction. ``lock_timeout``: seconds to wait for the tables' locks (the
    server's ``LockNotAvailable`` error when it runs out).
    """
    # first: measuring the tables' size takes a lock too, and must not wait past it either
    yield Statement(
        "SELECT set_config('lock_timeout', %s, true)", (f"{max(1, round(lock_timeout * 1000))}ms",)
    )
    rows = yield _size(t)
    before = int(rows[0][0])
    yield Statement(f"LOCK TABLE {t.items}, {t.vectors} IN ACCESS EXCLUSIVE MODE")
    yield Statement(f"CLUSTER {t.items} USING {t.index('pkey')}")
    yield Statement(f"CLUSTER {t.vectors} USING {t.index('vectors_scope')}")
    yield Statement(f"ANALYZE {t.items}")
    yield Statement(f"ANALYZE {t.vectors}")
    rows = yield _size(t)
    return before, int(rows[0][0])
