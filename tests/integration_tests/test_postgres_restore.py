"""Restoring timestamps on Postgres: the shared restore checks, plus what only SQL can show."""

from __future__ import annotations

import pytest

from langchain_ltm.backends.postgres import PostgresBackend
from tests.unit_tests.test_backend_restore import (
    CREATED,
    LATER,
    NS,
    UPDATED,
    RestoreContract,
    check_reopened,
    record,
    unit,
)


class TestPostgresRestore(RestoreContract):
    @pytest.fixture
    def backend(self, make_backend) -> PostgresBackend:
        return make_backend(dims=8)

    def test_restored_timestamps_survive_reopening(self, backend, make_backend):
        check_reopened(backend, lambda: make_backend(table=backend.tables.table))

    def test_the_rows_hold_the_exact_instants(self, backend, pg_conn):
        backend.write([record("k", LATER, vectors=unit(1))], [])
        backend.write([record("k", UPDATED, CREATED, vectors=unit(1))], [])
        row = pg_conn.execute(
            f"SELECT created_at, updated_at, to_char(created_at AT TIME ZONE 'UTC', "
            f"'YYYY-MM-DD HH24:MI:SS.US') FROM {backend.tables.items} WHERE key = 'k'"
        ).fetchone()
        assert row[:2] == (CREATED, UPDATED)
        assert row[2] == "2020-01-02 03:04:05.123456"

    def test_a_retried_restore_is_idempotent(self, backend, pg_conn):
        batch = [record("k", UPDATED, CREATED, vectors=unit(2)), record("n", LATER)]
        backend.write(batch, [])
        first = pg_conn.execute(f"SELECT * FROM {backend.tables.items} ORDER BY key").fetchall()
        backend.write(batch, [])
        again = pg_conn.execute(f"SELECT * FROM {backend.tables.items} ORDER BY key").fetchall()
        assert first == again
        assert [item.created_at for item in backend.get([(NS, "k"), (NS, "n")])] == [
            CREATED,
            LATER,
        ]
