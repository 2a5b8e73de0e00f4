"""Bounded reads straight through libpq: a named prepared statement per connection, no cursor.

A per-user search is one statement returning a handful of rows, and psycopg's cursor path
around it (query conversion, the prepared-statement bookkeeping, result selection, the
cursor's state) cost more client CPU than loading the rows: at 20k facts, the same search
statement took 155 us of client CPU through a binary cursor and 112 us this way (p50 of
2,000 alternated calls, 506 vs 458 us wall). :func:`read` is the generator both shells
drive (``conn.wait`` sync, ``await conn.wait`` async): it dumps the parameters with the
connection's adapters (pgvector, ``_wire``), prepares the statement under a name of its own
the first time this connection runs it with those parameter types, runs it, and loads the
rows with the connection's loaders, exactly as a binary cursor would.

Only on autocommit connections outside a transaction (the backend's own pools): psycopg
would begin a transaction before the first statement of a non-autocommit one, and this
path would not. A connection told not to prepare (``prepare_threshold=None``, as behind a
transaction-pooling proxy such as PgBouncer, where the next statement may reach another
server connection) runs every read unnamed. A connection whose prepared statements were
dropped behind its back (``DEALLOCATE ALL``) prepares them again: the statement is retried
once when the server says the name is unknown, and a connection that drops them again
(a pool's ``reset`` running ``DISCARD ALL``) runs its reads unnamed from then on. Names
carry a token of the connection's own, so a name met elsewhere is an error, never another
client's statement.
"""

from __future__ import annotations

import functools
import re
import secrets
from collections.abc import Sequence
from typing import Any

from psycopg import abc
from psycopg import errors as pg_errors
from psycopg.abc import PQGen
from psycopg.adapt import PyFormat, Transformer
from psycopg.generators import execute
from psycopg.pq import DiagnosticField, ExecStatus, Format, PipelineStatus, TransactionStatus

from langchain_ltm.backends.postgres._sql import Rows, Statement

MAX_PREPARED = 64
"""Statements prepared per connection; reads of other statements run unprepared (a search
with an unusual filter), so the server's memory per connection stays bounded."""

_STATE = "_langchain_ltm_direct"
_PLACEHOLDER = re.compile(r"%[sb%(]")
_FORMATS = {"%s": PyFormat.AUTO, "%b": PyFormat.BINARY}
_UNKNOWN_NAME = b"26000"  # invalid_sql_statement_name: the server has no such statement


class _Prepared:
    """What one connection has prepared: names by (SQL, parameter types), its transformer."""

    __slots__ = ("dropped", "made", "names", "token", "transformer")

    def __init__(self, conn: Any) -> None:
        self.transformer: abc.Transformer = Transformer(conn)
        self.names: dict[tuple[str, Sequence[int]], bytes] = {}
        self.made = 0  # names are never reused: one dropped alone may still exist elsewhere
        self.token = secrets.token_hex(4)
        self.dropped = 0  # times the server had lost our statements


def usable(conn: Any) -> bool:
    """Whether a read can take this path on ``conn`` (autocommit, idle, no pipeline)."""
    pgconn = conn.pgconn
    return bool(
        conn.autocommit
        and pgconn.pipeline_status == PipelineStatus.OFF
        and pgconn.transaction_status == TransactionStatus.IDLE
    )


@functools.lru_cache(maxsize=256)
def numbered(sql: str) -> tuple[bytes, tuple[PyFormat, ...]]:
    """``sql`` with psycopg's ``%s`` / ``%b`` placeholders as ``$1, $2, ...``, and their formats.

    Raises:
        ValueError: ``sql`` holds ``%%`` or a named placeholder, which this path does not
            convert (the statements of ``_reads``, ``_writes`` and ``_schema`` have neither).
    """
    parts: list[str] = []
    formats: list[PyFormat] = []
    last = 0
    for match in _PLACEHOLDER.finditer(sql):
        token = match.group()
        if token not in _FORMATS:
            raise ValueError(f"Unsupported placeholder {token!r} in a direct read: {sql!r}.")
        formats.append(_FORMATS[token])
        parts.append(sql[last : match.start()])
        parts.append(f"${len(formats)}")
        last = match.end()
    parts.append(sql[last:])
    return "".join(parts).encode(), tuple(formats)


def read(conn: Any, statement: Statement) -> PQGen[Rows]:
    """Run ``statement`` as a prepared statement of ``conn`` and return its rows.

    ``conn`` must be :func:`usable`; the caller holds it (a pooled connection) and waits on
    the generator with ``conn.wait``.
    """
    state: _Prepared | None = getattr(conn, _STATE, None)
    if state is None:
        state = _Prepared(conn)
        setattr(conn, _STATE, state)
    query, formats = numbered(statement.sql)
    tx = state.transformer
    params = tx.dump_sequence(statement.params, formats)
    types = tx.types or ()
    param_formats = tx.formats
    pgconn = conn.pgconn
    named = conn.prepare_threshold is not None and state.dropped < 2
    for attempt in (1, 2):
        key = (statement.sql, types)
        name = state.names.get(key) if named else None
        if name is None and named and len(state.names) < MAX_PREPARED:
            state.made += 1
            name = f"_ltm_{state.token}_{state.made}".encode()
            pgconn.send_prepare(name, query, param_types=types)
            _check((yield from execute(pgconn)), tx)
            state.names[key] = name
        if name is None:
            pgconn.send_query_params(
                query, params, param_formats=param_formats, param_types=types,
                result_format=Format.BINARY,
            )  # fmt: skip
        else:
            pgconn.send_query_prepared(
                name, params, param_formats=param_formats, result_format=Format.BINARY
            )
        results = yield from execute(pgconn)
        result = results[-1]
        if (
            attempt == 1
            and result.status == ExecStatus.FATAL_ERROR
            and result.error_field(DiagnosticField.SQLSTATE) == _UNKNOWN_NAME
        ):
            state.names.clear()  # dropped behind our back: prepare them again
            state.dropped += 1
            named = state.dropped < 2  # dropped twice: a pool that resets them, no names
            continue
        _check(results, tx)
        tx.set_pgresult(result, set_loaders=True, format=Format.BINARY)
        try:
            return tx.load_rows(0, result.ntuples, tuple)
        finally:
            tx.set_pgresult(None)
    raise AssertionError("unreachable")  # pragma: no cover


def _check(results: Sequence[Any], tx: abc.Transformer) -> None:
    for result in results:
        if result.status == ExecStatus.FATAL_ERROR:
            raise pg_errors.error_from_result(result, encoding=tx.encoding)
