"""Converting a store's embedding column between ``vector`` (float32) and ``halfvec`` (float16).

``halfvec`` stores each component in 2 bytes instead of 4, so the vectors table and any
HNSW index on it take about half the room; search stays exact over the stored values
(``_reads._ranked`` widens them to float32 before scoring). Going to ``halfvec`` rounds every
stored component to the nearest float16 (about 3 significant digits; components beyond
±65504 are refused by pgvector); going back to ``vector`` is exact.

The conversion is one transaction under the store's setup locks (``_schema.setup_locks``:
its own names, so other stores open meanwhile; this one's openers wait at most
``MIGRATION_LOCK_TIMEOUT``, then raise ``StoreInUseError``): both tables are locked (reads and
writes of the store wait; other sessions holding them past ``lock_timeout`` make it change
nothing and say so, :class:`StoreInUseError`), our HNSW index is dropped, the column
rewritten (``ALTER COLUMN ... TYPE``), and the index rebuilt with the new operator class
and its old options. Other ANN indexes on
the column would need another operator class, so their presence stops the conversion
before anything changes.
"""

from __future__ import annotations

from langchain_ltm.backends.postgres._schema import (
    TYPMOD_SQL,
    check_vector_type,
    column_type,
    setup_locks,
)
from langchain_ltm.backends.postgres._sql import Exchange, Statement, Tables

_ANN_INDEXES = (
    "SELECT c.relname, am.amname, array_to_string(c.reloptions, ', ') "
    "FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
    "JOIN pg_am am ON am.oid = c.relam "
    "WHERE i.indrelid = to_regclass(%s) AND am.amname IN ('hnsw', 'ivfflat') "
    "ORDER BY c.relname"
)


def migrate_vector_type(
    t: Tables, target: str, lock_timeout: float
) -> Exchange[tuple[int | None, str]]:
    """Rewrite the embedding column as ``target``; the vectors' size and the new type.

    Nothing happens if the column already has that type. ``lock_timeout``: seconds to wait
    for the tables (the server's ``LockNotAvailable`` error when it runs out): the rewrite
    locks them ``ACCESS EXCLUSIVE``, and while that request waits behind another session
    (a long transaction) every read of the store queues behind it, so it must not wait
    without end.
    """
    if check_vector_type(target) is None:
        raise ValueError("migrate_vector_type() needs 'vector' or 'halfvec', not None.")
    yield Statement(
        "SELECT set_config('lock_timeout', %s, true)", (f"{max(1, round(lock_timeout * 1000))}ms",)
    )
    yield setup_locks(t)  # this store's, within lock_timeout: other stores open meanwhile
    rows = yield Statement(TYPMOD_SQL, (t.vectors,))
    if not rows:
        raise ValueError(f"Table {t.vectors} does not exist: run setup() first.")
    dims = int(rows[0][0]) if rows[0][0] != -1 else None
    if str(rows[0][1]) == target:
        return dims, target
    ours = f"{t.table}_vectors_hnsw"
    indexes = yield Statement(_ANN_INDEXES, (t.vectors,))
    others = [f"{name} ({method})" for name, method, _ in indexes if name != ours]
    if others:
        raise ValueError(
            f"ANN indexes on {t.vectors} need another operator class for {target}: "
            f"{', '.join(others)}. Drop them, migrate, then create them again."
        )
    options = next((opts for name, _, opts in indexes if name == ours), None)
    # both tables at once, items first as writers take them (the rewrite's own locks then
    # wait for nothing), within lock_timeout
    yield Statement(f"LOCK TABLE {t.items}, {t.vectors} IN ACCESS EXCLUSIVE MODE")
    if options is not None:
        yield Statement(f'DROP INDEX "{t.schema}".{t.index("vectors_hnsw")}')
    new_type = column_type(target, dims)
    yield Statement(
        f"ALTER TABLE {t.vectors} ALTER COLUMN embedding TYPE {new_type} "
        f"USING embedding::{new_type}"
    )
    if options is not None:
        yield Statement(
            f"CREATE INDEX {t.index('vectors_hnsw')} ON {t.vectors} "
            f"USING hnsw (embedding {target}_cosine_ops)"
            + (f" WITH ({options})" if options else "")
        )
    return dims, target
