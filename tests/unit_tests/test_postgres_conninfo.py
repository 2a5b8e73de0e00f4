"""The conninfo the Postgres engine derives from a PGEngine, and the URL it gives SQLAlchemy."""

from __future__ import annotations

import pytest
from psycopg.conninfo import conninfo_to_dict

from langchain_ltm.backends.postgres._urls import conninfo_from_engine, sqlalchemy_url


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (  # asyncpg's ssl=true, a percent-encoded '@' and a database name with a space
            "postgresql+asyncpg://me:p%40ss@db:5433/my%20db?ssl=true",
            {
                "host": "db",
                "port": "5433",
                "user": "me",
                "password": "p@ss",
                "dbname": "my db",
                "sslmode": "require",
            },
        ),
        (
            "postgresql+asyncpg://me@db/app?ssl=verify-full",
            {"host": "db", "user": "me", "dbname": "app", "sslmode": "verify-full"},
        ),
        (
            "postgresql+psycopg://postgres:@/postgres?host=/tmp/pg",
            {"host": "/tmp/pg", "user": "postgres", "password": "", "dbname": "postgres"},
        ),
    ],
)
def test_a_pgengines_url_becomes_a_conninfo_libpq_reads_whole(url, expected):
    """asyncpg's ``ssl=true`` became ``sslmode=true`` (refused by libpq), and a database
    name with a space made the conninfo unparseable."""
    from langchain_postgres import PGEngine

    conninfo = conninfo_from_engine(PGEngine.from_connection_string(url))
    assert conninfo_to_dict(conninfo) == expected


def test_the_sqlalchemy_url_keeps_every_libpq_parameter():
    url = sqlalchemy_url(
        "dbname='my db' host=/tmp/pg user=me", {"password": "x y", "autocommit": True}
    )
    from sqlalchemy.engine import make_url

    query = dict(make_url(url).query)
    assert url.startswith("postgresql+psycopg://")
    assert query == {"dbname": "my db", "host": "/tmp/pg", "user": "me", "password": "x y"}
