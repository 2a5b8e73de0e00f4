"""Postgres errors as langchain-ltm errors, each saying what to change.

:func:`translate` turns a psycopg or pool error into a ``BackendError`` or a kin of it
(``DuplicateFactError``, ``EmbeddingDimensionError``, ``EngineLimitError``,
``StoreInUseError``); :class:`ConnectError` is an async pool's failed connection attempt;
:func:`rolled_back` tells a call Postgres rolled back (which ``_connector.Connector``
retries once); ``ENDED_BY_TIMEOUT`` names the server timeouts that end a session
(``_lock`` reads it too).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import PoolTimeout

from langchain_ltm.backends._compaction import StoreInUseError
from langchain_ltm.backends.postgres._sql import namespace_of, ns_path
from langchain_ltm.errors import (
    BackendError,
    DuplicateFactError,
    EmbeddingDimensionError,
    EngineLimitError,
    LockLostError,
)


class ConnectError(psycopg.OperationalError):
    """A new connection of an async ``LoopPool`` could not be opened (the server is down...).

    Told apart from a connection that broke during a call, so that :func:`translate` says
    what the sync pool's timeout says: check the server and the URL, not "retry".
    """


_CHECK_SERVER = (
    "Check that the server is up and reachable at the URL's host and port, and the URL's "
    "user, password and database."
)


_BAD_SETTING = (
    "invalid value for parameter",
    "unrecognized configuration parameter",
    "requires a value",  # -c name = value: split at the spaces
)


def _check_for(failure: str) -> str:
    """What to check when connecting failed with ``failure``: the options, or the server."""
    if any(text in failure for text in _BAD_SETTING):  # the server is up: it refused a -c
        return (
            "The server refused a setting of this connection's options (options= in "
            "connect_kwargs or the URL, or PGOPTIONS): correct it. libpq splits options at "
            "spaces: write list values without them (-c search_path=a,b) or escape each "
            "space as '\\ '."
        )
    return _CHECK_SERVER


def rolled_back(exc: BaseException) -> bool:
    """Postgres rolled the transaction back: a deadlock victim, a serialization failure.

    SQLSTATE class 40 (psycopg's ``DeadlockDetected`` is not a ``TransactionRollback``).
    """
    return isinstance(exc, psycopg.Error) and str(exc.sqlstate or "").startswith("40")


_REWRITES = {
    "compact": "they were not compacted",
    "migrate_vector_type": "the vectors were not converted",
}
"""Calls that lock the store's tables for a rewrite, within a ``lock_timeout`` of theirs."""


_HELD = re.compile(r"Key \(ns_path, content_hash\)=\((.*), ([^,]*?)\) (?:conflicts|already)")
"""Postgres' detail of a fact-hash violation: the namespace's path and the hash."""


def duplicate_fact(detail: str, keys: Sequence[str] = ()) -> DuplicateFactError:
    """The error for a fact-hash violation, naming the namespace, hash and ``keys`` written.

    ``detail``: Postgres' ``DETAIL`` (empty or another form: the namespace goes unnamed).
    """
    held = _HELD.match(detail)
    where = ""
    if held:
        items = f"the item {', '.join(map(repr, keys))} of " if keys else "an item of "
        where = (
            f" ({items}namespace {namespace_of(held[1])!r}, content_hash {held[2]!r}: another "
            "item there holds that text's hash)"
        )
    error = DuplicateFactError(
        f"Postgres keeps one fact per text and namespace{where}, so this batch was not "
        "written. If another writer stored the same fact for this user at the same moment, "
        "call remember() again: it will find the stored fact and report it as a duplicate."
    )
    error.detail, error.where = detail, where
    return error


def naming_items(error: DuplicateFactError, upserts: Sequence[Any]) -> DuplicateFactError:
    """``error`` again, naming the keys of ``upserts`` (records) that hold the hash it names."""
    held = _HELD.match(error.detail)
    if not held:
        return error
    keys = [
        r.key
        for r in upserts
        if ns_path(r.namespace) == held[1] and str(r.value.get("content_hash")) == held[2]
    ]
    return duplicate_fact(error.detail, keys) if keys else error


def translate(exc: BaseException, what: str, why: str = "") -> Exception:
    """A langchain-ltm error for a psycopg error, saying what to change.

    ``why`` is :meth:`Connector.diagnose`'s answer for a ``PoolTimeout``: the server could
    not be reached at all (a bigger pool would not help), or it can and the pool's
    connections all stayed busy.
    """
    if isinstance(exc, PoolTimeout) and why:
        return BackendError(
            f"Cannot connect to Postgres ({exc}; connecting directly failed: {why}). "
            + _check_for(why)
        )
    if isinstance(exc, ConnectError):
        return BackendError(f"Cannot connect to Postgres ({exc}). " + _check_for(str(exc)))
    if isinstance(exc, PoolTimeout):
        return BackendError(
            f"No free Postgres connection within the pool timeout ({exc}), although the "
            "server accepts connections: the pool's connections all stayed busy. Raise "
            "max_size/timeout of postgres_backend(), or run fewer calls at once."
        )
    if isinstance(exc, pg_errors.UniqueViolation | pg_errors.ExclusionViolation) and str(
        getattr(exc.diag, "constraint_name", "")
    ).endswith("_fact_hash"):  # a unique constraint up to schema version 2, then exclusion
        return duplicate_fact(str(getattr(exc.diag, "message_detail", "") or ""))
    message = str(exc).strip()
    if isinstance(exc, pg_errors.LockNotAvailable) and what == "setup":
        return StoreInUseError(
            f"{message}: another session (an idle or long transaction, a compaction, a "
            "migrate_vector_type of this store) holds the store's tables or its setup "
            "lock, so they could not be migrated to this release's schema or opened "
            "within its lock_timeout (nothing was changed; waiting longer would stop every "
            "reader of the tables behind the migration). Open the store again when it is "
            "quiet, or end that session (pg_stat_activity names it)."
        )
    if isinstance(exc, pg_errors.LockNotAvailable) and what in _REWRITES:
        return StoreInUseError(
            f"{message}: other sessions (an agent, a long transaction) kept the store's "
            f"tables busy, so {_REWRITES[what]} (nothing was changed). Run it again "
            "when the store is quieter, or with a longer lock_timeout."
        )
    if rolled_back(exc):
        return BackendError(
            f"Postgres rolled back {what} ({message}): it conflicted with another "
            "transaction (a deadlock or a serialization failure). "
            "Nothing of it was written: retry the call (a retried batch is idempotent)."
        )
    if isinstance(exc, pg_errors.DataException) and "dimensions" in message:
        return EmbeddingDimensionError(
            f"Postgres refused the vectors: {message}. The embedding model changed: keep "
            "the original model, or store the new memories in a new table."
        )
    if isinstance(exc, pg_errors.ReadOnlySqlTransaction):
        return BackendError(
            f"{message}. The database is read-only: connect to a writable primary (not a "
            "replica), or turn off default_transaction_read_only. Reads still work."
        )
    if isinstance(exc, pg_errors.DiskFull):
        return BackendError(
            f"{message}. The Postgres server is out of disk space: free space or grow the "
            "volume, then retry (nothing of this batch was written)."
        )
    if isinstance(exc, pg_errors.UndefinedTable):
        return BackendError(
            f"{message}. Create the tables first: PostgresBackend.setup() (postgres_backend() "
            "and LongTermMemoryStore.from_postgres() call it unless setup=False)."
        )
    if isinstance(exc, pg_errors.InsufficientPrivilege) and "extension" in message.lower():
        return BackendError(
            f"{message}. The pgvector extension is not installed in this database and this "
            "role may not install it: ask an administrator to run CREATE EXTENSION vector."
        )
    if isinstance(exc, pg_errors.InsufficientPrivilege) and what == "setup":
        return BackendError(
            f"{message}. This role may not create or migrate the store's tables: run setup "
            "once as the tables' owner (a role with CREATE on the database and schema: "
            "postgres_backend(owner_url, ...), LongTermMemoryStore.from_postgres(owner_url, "
            "...) or PostgresBackend.setup()). Tables at the current schema version then "
            "open as this role; or open them with postgres_backend(..., setup=False)."
        )
    if isinstance(exc, (pg_errors.UntranslatableCharacter, pg_errors.CharacterNotInRepertoire)):
        return BackendError(
            f"{message}. Postgres cannot store NUL (\\u0000) characters in text or JSON; "
            "remove them from the value."
        )
    timed_out = isinstance(exc, pg_errors.LockNotAvailable) or "statement timeout" in message
    if isinstance(exc, pg_errors.QueryCanceled | pg_errors.LockNotAvailable) and timed_out:
        lock = isinstance(exc, pg_errors.LockNotAvailable)
        return _timeout_error(what, message, "lock_timeout" if lock else "statement_timeout")
    ended_by = ENDED_BY_TIMEOUT.get(str(getattr(exc, "sqlstate", None) or ""))
    if ended_by is not None:
        return _timeout_error(what, message, ended_by)
    if isinstance(exc, pg_errors.QueryCanceled):  # pg_cancel_backend, or a client's cancel
        return BackendError(
            f"Postgres cancelled {what} ({message}): an administrator or another client "
            "cancelled the statement (pg_cancel_backend); the connection did not fail. "
            "Nothing of it was written: retry the call if it should run."
        )
    limit = _limit_passed(exc, message)
    if limit is not None:
        return EngineLimitError(
            f"Postgres cannot do this {what} ({message}): {limit} Nothing of it was written."
        )
    if isinstance(exc, psycopg.OperationalError):
        return BackendError(
            f"The connection to Postgres failed during {what} ({message}). Nothing is "
            "half-written: retry the call (a retried batch is idempotent)."
        )
    return BackendError(f"Postgres failed during {what}: {message}")


NOTHING_MADE = " Nothing of this write was made: retry the call (it reads again)."
"""How a :class:`LockLostError` of a write's first attempt ends (``_writes``)."""


def maybe_committed(exc: LockLostError) -> LockLostError:
    """``exc``, raised by the retry of a write whose first connection broke: say it may be in.

    The first attempt's connection can break after its ``COMMIT`` reached the server (the
    answer was lost: a restart, a network fault, which end the lock's session too), so
    "nothing of this write was made" may be false.
    """
    return LockLostError(
        f"{str(exc).removesuffix(NOTHING_MADE)} This write's first attempt lost its "
        "connection before the answer to its COMMIT came (the same outage ended the lock's "
        "session), so it may have committed: the write may be stored, whole, or not at all. "
        "Read what is stored before writing it again; retrying the call is safe (it reads "
        "again, under the lock)."
    )


NO_VECTOR = (
    "The pgvector extension is missing in this database: run PostgresBackend.setup() "
    "(or CREATE EXTENSION vector as an administrator)."
)

VECTOR_SCHEMA_SQL = (
    "SELECT (SELECT extnamespace::regnamespace::text FROM pg_extension "
    "WHERE extname = 'vector'), current_setting('search_path')"
)
"""The schema pgvector is installed in (NULL: it is not) and the connection's search_path."""


def _list_items(setting: str) -> list[str]:
    """The items of a Postgres list setting (``"$user", public``), quotes kept, stripped."""
    items, item, quoted = [], "", False
    for char in setting:
        if char == '"':
            quoted = not quoted  # a doubled quote inside a name toggles twice: still inside
        if char == "," and not quoted:
            items.append(item.strip())
            item = ""
        else:
            item += char
    items.append(item.strip())
    return [i for i in items if i]


def search_path_option(search_path: str, schema: str) -> str:
    r"""The libpq ``options`` that set ``search_path`` to ``search_path`` then ``schema``.

    libpq splits ``options`` at spaces (a space after a comma made the server refuse the
    rest: "List syntax is invalid"), so the items are joined with bare commas and a space
    inside a quoted name is escaped as libpq wants (``\ ``).

    Example:
        >>> search_path_option('"$user", public', "ext")
        '-c search_path="$user",public,ext'
        >>> print(search_path_option('"my app"', '"my ext"'))
        -c search_path="my\ app","my\ ext"
    """
    value = ",".join([*_list_items(search_path), schema])
    return "-c search_path=" + value.replace("\\", "\\\\").replace(" ", "\\ ")


def vector_not_found(schema: str | None, search_path: str) -> BackendError:
    """The error when this connection cannot see the ``vector`` type: why, and the fix."""
    if schema is None:
        return BackendError(NO_VECTOR)
    return BackendError(
        f"pgvector is installed in schema {schema}, which is not on this connection's "
        f"search_path ({search_path}), so its vector type is not found: add it, in "
        f"connect_kwargs (options={search_path_option(search_path, schema)!r}) or the URL "
        f"(the same options, URL-encoded), or for the role (ALTER ROLE ... SET search_path "
        f"= {search_path}, {schema})."
    )


ENDED_BY_TIMEOUT = {
    "25P03": "idle_in_transaction_session_timeout",
    "25P04": "transaction_timeout",  # Postgres 17+
}
"""SQLSTATEs of a server timeout that ends the session, and the setting to raise."""


def _timeout_error(what: str, message: str, setting: str) -> BackendError:
    """The error of a call a server timeout stopped: name the setting and where it is set."""
    return BackendError(
        f"Postgres stopped {what} ({message}): the {setting} of this role, database or "
        f"connection is shorter than the call needs. Nothing of it was written; raise "
        f"{setting} (ALTER ROLE ... SET {setting} = ..., or for the database, or in the "
        f"connection's options: options='-c {setting}=...' in the URL or connect_kwargs), "
        "or send smaller batches."
    )


def _limit_passed(exc: BaseException, message: str) -> str | None:
    """What to change when ``exc`` is a limit of Postgres, not a failure; else None.

    Repeating such a call fails the same way, so it must not read as a lost connection
    ("retry the call"): psycopg raises both as ``OperationalError``.
    """
    if "index row size" in message or "index row requires" in message:
        return (
            "a key with its namespace must fit one entry of the table's B-tree index (about "
            "2,700 bytes in all): use a shorter key or namespace labels (a hash of a long "
            "one, say)."
        )
    if "number of parameters must be between" in message:
        return (
            "one statement binds at most 65,535 values: use fewer filter conditions or "
            "operands (split a long $in list over several searches)."
        )
    if isinstance(exc, pg_errors.ProgramLimitExceeded):
        return "it is past a limit of the server: send less in one call."
    return None
