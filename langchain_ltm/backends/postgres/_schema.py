"""The Postgres engine's schema: tables, migrations, vector types, setup and drop.

Exchanges (see ``_sql``): I/O-free generators of statements, driven by ``_drive``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from langchain_ltm.backends.postgres._errors import VECTOR_SCHEMA_SQL, vector_not_found
from langchain_ltm.backends.postgres._sql import (
    Exchange,
    Statement,
    Tables,
)
from langchain_ltm.errors import BackendError, EmbeddingDimensionError, SchemaVersionError

_log = logging.getLogger(__name__)

SCHEMA_VERSION = 5
SETUP_LOCK = "langchain_ltm.setup"
"""Key (hashed) of the database-wide lock taken only to create the extension or a schema."""


# the embedding column's size (-1: untyped) and type name (vector, halfvec)
TYPMOD_SQL = (
    "SELECT a.atttypmod, ty.typname FROM pg_attribute a JOIN pg_type ty ON ty.oid = a.atttypid "
    "WHERE a.attrelid = to_regclass(%s) AND a.attname = 'embedding' AND NOT a.attisdropped"
)


VECTOR_TYPES = ("vector", "halfvec")


def check_vector_type(vector_type: str | None) -> str | None:
    """``vector_type`` if it is one we store (``None``: the table's, or ``vector``)."""
    if vector_type is not None and vector_type not in VECTOR_TYPES:
        raise ValueError(
            f"vector_type must be 'vector' (float32) or 'halfvec' (float16, half the size), "
            f"got {vector_type!r}."
        )
    return vector_type


def column_type(vector_type: str, dims: int | None) -> str:
    """The SQL type of the embedding column: ``vector``, ``halfvec(384)``, ..."""
    return vector_type if dims is None else f"{vector_type}({int(dims)})"


FACT_ROW = (
    "content_hash IS NOT NULL AND jsonb_typeof(value -> 'content_hash') = 'string' "
    "AND jsonb_typeof(value -> 'versions') = 'number' "
    "AND (value ->> 'versions') ~ '^-?[0-9]{1,15}$' AND NOT value ? 'version_of'"
)
"""The rows the fact-hash constraint covers: facts as the fact API writes them.

Exactly the values ``versions.holds_hash`` takes (a ``content``, which the generated
``content_hash`` column needs; a text hash; a whole ``versions`` count of at most
``versions.MAX_COUNT_DIGITS`` digits; no ``version_of``): every row covered is one
``remember`` and puts find by its hash. A row they cannot see refused every later write of
its text: a client's ``version_of`` item, a number or object as the hash (compared as
text, or not at all), a float count of 1e16 or more (Postgres reads ``1e+20`` as an
integer).
"""

MIGRATION_LOCK_TIMEOUT = "3s"
"""How long a migration's DDL waits for other sessions to let go of the tables.

``ALTER TABLE`` takes an ``ACCESS EXCLUSIVE`` lock: waiting behind one idle transaction,
it made every opener wait with it and queued every reader of the table behind it. Past
this (or the session's own shorter ``lock_timeout``) setup raises ``StoreInUseError``.
"""


_FACT_ROW_4 = "content_hash IS NOT NULL AND value ? 'versions'"

_FACT_LAYOUT_5 = (
    "fact hash: only values in the fact layout (a text content_hash, a whole versions count "
    "of at most 15 digits, no version_of)"
)

_REVISED = 5
"""The migration revised before its release: a table may have its first form.

Its first form (the constraint without the text hash and the bound on the count) was
recorded as version 5 too. The recorded description tells the two apart: setup runs the
migration again over a table whose version-5 row has another description, and records
this one. (Comparing the constraint's definition would rest on how each Postgres release
prints it back; the description is ours.)
"""


def _migrations(
    t: Tables, dims: int | None, kind: str = "vector"
) -> list[tuple[int, str, list[str]]]:
    vector_type = column_type(kind, dims)
    return [
        (
            1,
            "items, vectors (PGVectorStore layout), scope and fact-hash indexes",
            [
                f"""CREATE TABLE IF NOT EXISTS {t.items} (
    ns_path text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    namespace text[] COLLATE "C"
        GENERATED ALWAYS AS (string_to_array(left(ns_path, -1), '.')) STORED,
    value jsonb NOT NULL,
    content_hash text COLLATE "C" GENERATED ALWAYS AS
        (CASE WHEN value ? 'content' THEN value ->> 'content_hash' END) STORED,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    CONSTRAINT {t.index("pkey")} PRIMARY KEY (ns_path, key),
    CONSTRAINT {t.index("fact_hash")} UNIQUE (ns_path, content_hash)
        DEFERRABLE INITIALLY DEFERRED
)""",
                f"""CREATE TABLE IF NOT EXISTS {t.vectors} (
    langchain_id uuid PRIMARY KEY,
    content text NOT NULL,
    embedding {vector_type} NOT NULL,
    langchain_metadata json,
    ns_path text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    path text NOT NULL,
    FOREIGN KEY (ns_path, key) REFERENCES {t.items} (ns_path, key) ON DELETE CASCADE
) WITH (toast_tuple_target = 8160)""",
                f"CREATE INDEX IF NOT EXISTS {t.index('vectors_scope')} "
                f"ON {t.vectors} (ns_path, key)",
            ],
        ),
        (
            2,
            "TTL: expires_at and ttl_minutes columns, partial index for the sweeper",
            [
                f"ALTER TABLE {t.items} ADD COLUMN IF NOT EXISTS expires_at timestamptz NULL, "
                "ADD COLUMN IF NOT EXISTS ttl_minutes double precision NULL",
                f"CREATE INDEX IF NOT EXISTS {t.index('expires_at')} ON {t.items} (expires_at) "
                "WHERE expires_at IS NOT NULL",
            ],
        ),
        (
            3,
            "fact hash: unique among facts only (a partial exclusion constraint)",
            [
                # The UNIQUE constraint indexed every item, most of them with no hash
                # (BaseStore puts): at 1M facts the item upsert of 1,000 new keys took
                # 13-15 ms with it, 7-9 without. An exclusion constraint may be partial and
                # still checked at commit (two facts may swap texts within one batch),
                # so items without a hash are no longer indexed at all.
                f"ALTER TABLE {t.items} DROP CONSTRAINT IF EXISTS {t.index('fact_hash')}, "
                f"ADD CONSTRAINT {t.index('fact_hash')} EXCLUDE USING btree "
                "(ns_path WITH =, content_hash WITH =) WHERE (content_hash IS NOT NULL) "
                "DEFERRABLE INITIALLY DEFERRED",
            ],
        ),
        (
            4,
            "fact hash: only rows in the fact layout (a plain item may carry a content_hash)",
            [
                # A plain BaseStore value may hold "content" and "content_hash" keys of its
                # own (a document store's): two such puts of one document were refused as
                # duplicate facts, which no other engine does. A fact's value always holds
                # "versions" (the fact layout; not a metadata key), so the constraint keeps
                # to those rows; exact dedup of facts holds as before.
                f"ALTER TABLE {t.items} DROP CONSTRAINT IF EXISTS {t.index('fact_hash')}, "
                f"ADD CONSTRAINT {t.index('fact_hash')} EXCLUDE USING btree "
                f"(ns_path WITH =, content_hash WITH =) WHERE ({_FACT_ROW_4}) "
                "DEFERRABLE INITIALLY DEFERRED",
            ],
        ),
        (
            5,
            _FACT_LAYOUT_5,
            [
                # Version 4 covered a client's item with a version_of field (which remember
                # does not look at: every later remember of its text was refused) and a
                # document with a list of versions of its own (put as given). Revised before
                # release (a text hash, at most 15 digits): see _REVISED.
                f"ALTER TABLE {t.items} DROP CONSTRAINT IF EXISTS {t.index('fact_hash')}, "
                f"ADD CONSTRAINT {t.index('fact_hash')} EXCLUDE USING btree "
                f"(ns_path WITH =, content_hash WITH =) WHERE ({FACT_ROW}) "
                "DEFERRABLE INITIALLY DEFERRED",
            ],
        ),
    ]


# what each of a store's tables holds: the columns that tell it from the other two
_LAYOUTS = {
    "": ("items", frozenset({"ns_path", "key", "value", "created_at"})),
    "_vectors": ("vectors", frozenset({"langchain_id", "embedding", "ns_path", "key"})),
    "_schema": ("schema versions", frozenset({"version", "description", "applied_at"})),
}


def _layout_of(kind: str, columns: Sequence[str]) -> tuple[str, str] | None:
    """``(suffix, what)`` of the store table whose layout ``columns`` has (None: none)."""
    if kind not in ("r", "p"):  # a view, an index, a sequence...
        return None
    for suffix, (what, needed) in _LAYOUTS.items():
        if needed <= set(columns) and (suffix == "_vectors") == ("embedding" in columns):
            return suffix, what
    return None


# the indexes a store creates beside its tables, by suffix: what each is for, the table it
# is on (a suffix of _LAYOUTS), its access method and columns. They share the schema's
# relation namespace with every table: "CREATE INDEX IF NOT EXISTS x_vectors_scope" does
# nothing when store "x_vectors_scope" has a table of that name.
_INDEXES = {
    "pkey": ("primary key index", "", "btree", ("ns_path", "key")),
    "fact_hash": ("fact-hash index", "", "btree", ("ns_path", "content_hash")),
    "vectors_scope": ("scope index", "_vectors", "btree", ("ns_path", "key")),
    "expires_at": ("expiry index", "", "btree", ("expires_at",)),
    "vectors_hnsw": ("HNSW index", "_vectors", "hnsw", ("embedding",)),
}

# what a relation of each kind is, for a message (pg_class.relkind)
_KINDS = {
    "r": "a table",
    "p": "a table",
    "i": "an index",
    "I": "an index",
    "v": "a view",
    "m": "a materialized view",
    "S": "a sequence",
    "c": "a type",
    "f": "a foreign table",
}

_RELATIONS_SQL = (
    "SELECT r.name, c.relkind::text, ARRAY(SELECT a.attname::text FROM pg_attribute a "
    "WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum), "
    "coalesce(i.indrelid = to_regclass(r.owner), false), am.amname::text, "
    "i.indrelid::regclass::text "
    "FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS r(name, owner, n) "
    "JOIN pg_class c ON c.oid = to_regclass(r.name) "
    "LEFT JOIN pg_index i ON i.indexrelid = c.oid LEFT JOIN pg_am am ON am.oid = c.relam "
    "ORDER BY r.n"  # the tables first: a clash of tables names the other store's table
)


def _index_name(t: Tables, suffix: str) -> str:
    """The schema-qualified name of one of ``t``'s indexes (made in its tables' schema)."""
    return f'"{t.schema}".{t.index(suffix)}'


def _what_it_is(name: str, kind: str, columns: Sequence[str], index_on: str | None) -> str:
    """What relation ``name`` is, for a message: another store's table, an index on X..."""
    found = _layout_of(kind, columns)
    if found is not None:
        unquoted = name.rsplit(".", 1)[-1].strip('"')
        owner = unquoted[: len(unquoted) - len(found[0])]
        return f"the {found[1]} table of the store with table={owner!r}"
    if index_on is not None:
        return f"an index on {index_on}"
    if kind in ("r", "p"):
        return "a table of something else"
    return _KINDS.get(kind, "another relation")


def _check_layouts(t: Tables, *, hnsw_strict: bool = False) -> Exchange[None]:
    """Raise ValueError if a relation bearing one of ``t``'s names is not what ``t`` made.

    One store's names are another's with a suffix (``table="x"`` keeps its vectors in
    ``x_vectors``, the items of ``table="x_vectors"``, and its scope index in
    ``x_vectors_scope``, the items of ``table="x_vectors_scope"``): setup would reuse the
    other store's table (``CREATE TABLE IF NOT EXISTS``) and fail on it halfway, or skip
    the index (``CREATE INDEX IF NOT EXISTS``) and leave this store without it. A
    relation with an index's name is accepted only as that index: on this store's table,
    with its access method and columns (``hnsw_strict=False``: the HNSW name, which setup
    does not create, may be any index on the vectors table).
    """
    tables = {t.items: "", t.vectors: "_vectors", t.versions: "_schema"}
    indexes = {_index_name(t, suffix): suffix for suffix in _INDEXES}
    owners: list[str | None] = [None] * len(tables)
    owners += [t.items if _INDEXES[suffix][1] == "" else t.vectors for suffix in _INDEXES]
    rows = yield Statement(_RELATIONS_SQL, ([*tables, *indexes], owners))
    exists = any(row[0] == t.items and row[2] for row in rows)  # this store's items table
    for name, kind, columns, on_ours, method, index_on in rows:
        if name in indexes and not on_ours and exists:
            # a store that a release without this check set up beside the other one: it has
            # no such index, and refusing would lock its data away; it works without it
            _log.warning(
                "The Postgres store table=%r has no index %s: the name is taken by %s. Its "
                "searches work, slower; to have the index, move the data to a store with "
                "another table name (ltm migrate).",
                t.table,
                name,
                _what_it_is(name, str(kind), list(columns), index_on),
            )
            continue
        if name in tables:
            role = f"{_LAYOUTS[tables[name]][0]} table"
            found = _layout_of(str(kind), list(columns))
            if found is not None and found[0] == tables[name]:
                continue
            what = _what_it_is(name, str(kind), list(columns), index_on)
        else:
            role, _, wanted_method, wanted_columns = _INDEXES[indexes[name]]
            lenient = indexes[name] == "vectors_hnsw" and not hnsw_strict
            same = method == wanted_method and tuple(columns) == wanted_columns
            if on_ours and (same or lenient):
                continue
            what = (
                f"another index on {index_on} ({method} on {', '.join(columns)})"
                if on_ours
                else _what_it_is(name, str(kind), list(columns), index_on)
            )
        raise ValueError(
            f"Cannot use table={t.table!r}: its {role} would be {name}, which exists and is "
            f"{what}. A store keeps its data in the tables {{table}}, {{table}}_vectors and "
            "{table}_schema, with the indexes {table}_pkey, {table}_fact_hash, "
            "{table}_vectors_scope, {table}_expires_at and {table}_vectors_hnsw, all in one "
            "namespace: two stores whose names differ by one of those suffixes collide. Open "
            "this store with another table name (nothing was created or changed)."
        )


def setup_locks(t: Tables) -> Statement:
    """Take, until the transaction ends, the setup locks of every relation ``t`` names.

    A store's setup, and ``migrate_vector_type``, lock the store's own names, not the
    database: one lock for all (``SETUP_LOCK``) made opening any store wait for the
    conversion of another (minutes at 1M rows), with no time limit. Every name the store
    creates is locked (its tables and indexes, see ``_INDEXES``), so two stores whose names
    collide (``x`` and ``x_vectors``, or ``_x``, the array type Postgres names after ``x``'s
    table) still set up one after the other, and
    ``_check_layouts`` sees what the other made. The keys are taken in one sorted order
    (no two setups wait for each other in a cycle) and never equal those of ``lock()``
    (``"schema"."table":scope``) or of the first write's column typing (the vectors table's
    name): they start with ``SETUP_LOCK``.
    """
    names = [t.items, t.vectors, t.versions, *(_index_name(t, suffix) for suffix in _INDEXES)]
    # and the names Postgres makes for them: primary keys and each table's array type
    # ("_items"), which share the schema's name spaces with other stores' tables
    names += [f'"{t.schema}"."{t.table}{s}_pkey"' for s in ("_vectors", "_schema")]
    names += [f'"{t.schema}"."_{t.table}{s}"' for s in ("", "_vectors", "_schema")]
    keys = sorted({f"{SETUP_LOCK}:{name}" for name in names})
    return Statement(
        "SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) FROM unnest(%s::text[]) k",
        (keys,),
    )


# MIGRATION_LOCK_TIMEOUT for this transaction, or the session's own if shorter (not 0: none);
# returns the session's own, to set back after the DDL
_LOCK_TIMEOUT_SQL = (
    "WITH s AS MATERIALIZED (SELECT current_setting('lock_timeout') AS own) "
    "SELECT own, set_config('lock_timeout', CASE WHEN own::interval > interval '0' AND "
    "own::interval < %s::interval THEN own ELSE %s END, true) FROM s"
)


def setup(
    t: Tables, dims: int | None, vector_type: str | None = None
) -> Exchange[tuple[int | None, str]]:
    """Create or migrate the schema (idempotent, serialized); the vectors' size and type.

    Tables already at :data:`SCHEMA_VERSION` are only read (no DDL: a role without CREATE
    rights opens them), unless ``dims`` types an untyped embedding column, or they have the
    first form of a migration revised before release (:data:`_REVISED`).

    Setup waits at most :data:`MIGRATION_LOCK_TIMEOUT` for its locks: this store's setup
    locks (:func:`setup_locks`: another process setting the store up or converting it
    with ``migrate_vector_type``) and the migrations' table locks (an idle transaction
    holding the tables). Past that it raises ``StoreInUseError`` (``_errors.translate``),
    with nothing changed. Other stores' setups and conversions do not hold it up; only
    creating the extension or the schema takes the database-wide :data:`SETUP_LOCK`.

    A new table gets ``vector_type`` (``None``: ``vector``); an existing one keeps its own,
    and asking for the other raises ``ValueError`` naming the migration. Likewise ``dims``
    types an untyped column, and a typed one of another size raises
    ``EmbeddingDimensionError`` naming both sizes (before, it opened and the first write
    failed).
    """
    # bounded waits from here on: for the setup locks (a migrate_vector_type of this store
    # holds them for minutes at 1M rows) and the DDL on tables others may be using
    rows = yield Statement(_LOCK_TIMEOUT_SQL, (MIGRATION_LOCK_TIMEOUT,) * 2)
    before = str(rows[0][0])
    yield setup_locks(t)
    yield from _check_layouts(t)
    # The version first: tables already at this version need no DDL, so a role without
    # CREATE rights on the database or schema (an app role given DML on the tables) can
    # open them; Postgres checks those rights even for CREATE ... IF NOT EXISTS. Setups
    # of this store are serialized by the locks above, so no other one runs between this
    # and the DDL.
    rows = yield Statement("SELECT to_regclass(%s) IS NOT NULL", (t.versions,))
    current, revise = 0, False
    if rows[0][0]:
        rows = yield Statement(
            f"SELECT coalesce(max(version), 0), coalesce(bool_or(version = %s AND "
            f"description <> %s), false) FROM {t.versions}",
            (_REVISED, _FACT_LAYOUT_5),
        )
        current, revise = int(rows[0][0]), bool(rows[0][1]) and int(rows[0][0]) == _REVISED
    if current < SCHEMA_VERSION:
        rows = yield Statement(
            "SELECT NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'vector') "
            "OR NOT EXISTS (SELECT FROM pg_namespace WHERE nspname = %s)",
            (t.schema,),
        )
        if rows[0][0]:  # two stores' setups creating either at once: one fails, so in turn
            yield Statement("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (SETUP_LOCK,))
        yield Statement("CREATE EXTENSION IF NOT EXISTS vector")
    # every call needs the vector type by its plain name: installed in a schema the
    # search_path leaves out, it is not found (CREATE EXTENSION IF NOT EXISTS says nothing)
    rows = yield Statement(f"SELECT to_regtype('vector') IS NULL, * FROM ({VECTOR_SCHEMA_SQL}) v")
    if rows[0][0]:
        raise vector_not_found(rows[0][1], rows[0][2])
    if current < SCHEMA_VERSION:
        yield Statement(f'CREATE SCHEMA IF NOT EXISTS "{t.schema}"')
        yield Statement(
            f"CREATE TABLE IF NOT EXISTS {t.versions} (version integer PRIMARY KEY, "
            "description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
    if current > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"Table {t.items} has schema version {current}, newer than this langchain-ltm "
            f"understands ({SCHEMA_VERSION}). Upgrade langchain-ltm."
        )
    if current:  # the record says the tables exist: a table dropped since cannot be used
        rows = yield Statement(
            "SELECT to_regclass(%s) IS NULL, to_regclass(%s) IS NULL", (t.items, t.vectors)
        )
        missing = [name for name, gone in zip((t.items, t.vectors), rows[0], strict=True) if gone]
        if missing:
            raise BackendError(
                f"Table {' and '.join(missing)} is missing, though {t.versions} records schema "
                f"version {current}: it was dropped behind the store's back. Restore it from a "
                f"backup, or drop {t.versions} and what is left of the store's tables to start "
                "afresh (PostgresBackend.drop())."
            )
    for version, description, statements in _migrations(t, dims, vector_type or "vector"):
        again = revise and version == _REVISED
        if version <= current and not again:
            continue
        for sql in statements:
            yield Statement(sql)
        if again:
            yield Statement(
                f"UPDATE {t.versions} SET description = %s, applied_at = now() WHERE version = %s",
                (description, version),
            )
        else:
            yield Statement(
                f"INSERT INTO {t.versions} (version, description) VALUES (%s, %s)",
                (version, description),
            )
    # the session's own again, for what follows in this transaction
    yield Statement("SELECT set_config('lock_timeout', %s, true)", (before,))
    rows = yield Statement(TYPMOD_SQL, (t.vectors,))
    kind = str(rows[0][1])
    if vector_type is not None and kind != vector_type:
        raise ValueError(
            f"Table {t.vectors} stores its embeddings as {kind}, not {vector_type}: open it "
            f"with vector_type={kind!r} (or None), or convert it first with "
            f"PostgresBackend.migrate_vector_type({vector_type!r})."
        )
    stored = int(rows[0][0]) if rows[0][0] != -1 else None
    if dims is not None and stored is not None and stored != dims:
        raise EmbeddingDimensionError(
            f"Table {t.vectors} stores embeddings of {stored} dimensions, not {dims}: open it "
            f"with dims={stored} (or None: the table's), or keep {dims}-dimension "
            "embeddings (another model) in a new table."
        )
    if dims is not None and stored is None:
        yield Statement(
            f"ALTER TABLE {t.vectors} ALTER COLUMN embedding TYPE {column_type(kind, dims)}"
        )
        stored = dims
    return stored, kind


def create_hnsw_index(t: Tables, m: int, ef_construction: int) -> Exchange[None]:
    """An HNSW index (cosine) with the operator class of the column's type."""
    yield from _check_layouts(t, hnsw_strict=True)  # the name: an HNSW index of ours, or free
    rows = yield Statement(TYPMOD_SQL, (t.vectors,))
    vector_type = str(rows[0][1])
    yield Statement(
        f"CREATE INDEX IF NOT EXISTS {t.index('vectors_hnsw')} ON {t.vectors} "
        f"USING hnsw (embedding {vector_type}_cosine_ops) "
        f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)})"
    )


def drop(t: Tables) -> Exchange[None]:
    yield Statement(f"DROP TABLE IF EXISTS {t.vectors}, {t.items}, {t.versions}")
