"""Postgres URLs and conninfo strings: checked, redacted, read off a PGEngine, for SQLAlchemy.

:func:`check_conninfo` refuses a URL libpq cannot read before any connection is tried;
:func:`redact` hides its user and password in messages; :func:`conninfo_from_engine` reads
the URL of a langchain-postgres ``PGEngine`` and :func:`sqlalchemy_url` writes one for it.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

_SQLALCHEMY_SCHEME = "postgresql+psycopg://"


def check_conninfo(conninfo: str) -> str:
    """``conninfo`` if libpq can read it, else ``ValueError`` saying what is wrong.

    A malformed URL (an unknown query parameter, port 99999) was only found by the pool's
    connection attempts: it logged the error once per attempt and raised after its whole
    timeout, as if the server were down. SQLAlchemy's ``postgresql+psycopg://`` scheme
    (what a ``PGEngine`` is built from) is read as ``postgresql://``.

    Example:
        >>> check_conninfo("postgresql+psycopg://app@db/app")
        'postgresql://app@db/app'
        >>> check_conninfo("postgresql://app:pw@db:99999/app")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: Malformed Postgres URL postgresql://***@db:99999/app: invalid port number...
    """
    if conninfo.startswith(_SQLALCHEMY_SCHEME):
        conninfo = "postgresql://" + conninfo.removeprefix(_SQLALCHEMY_SCHEME)
    shown = redact(conninfo)
    try:
        params = conninfo_to_dict(conninfo)
    except psycopg.Error as exc:
        problem = str(exc).strip().replace(conninfo, shown)
        raise ValueError(f"Malformed Postgres URL {shown}: {problem}. {_URL_FORM}") from None
    for port in str(params.get("port") or "").split(","):
        if port and not (port.isdigit() and 1 <= int(port) <= 65535):
            raise ValueError(
                f'Malformed Postgres URL {shown}: invalid port number "{port}" (1 to 65535). '
                + _URL_FORM
            )
    return conninfo


_URL_FORM = "Write it as postgresql://user:password@host:5432/dbname."


def redact(conninfo: str) -> str:
    """``conninfo`` with the user and password of a URL (or a ``password=``) hidden.

    Example:
        >>> redact("postgresql://app:secret@db/app"), redact("host=db password=secret")
        ('postgresql://***@db/app', 'host=db password=***')
    """
    scheme, sep, rest = conninfo.partition("://")
    if sep:
        _, at, tail = rest.rpartition("@")
        url = f"{scheme}://***@{tail}" if at else conninfo
        return re.sub(r"([?&]password=)[^&]*", r"\1***", url)
    return re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", conninfo)


_ASYNCPG_SSL = {"true": "require", "false": "disable"}
"""asyncpg's boolean ``ssl`` values as libpq ``sslmode``s (its other values are libpq's)."""


def conninfo_from_engine(engine: Any) -> str:
    """The libpq conninfo of a langchain-postgres ``PGEngine`` (its SQLAlchemy engine's URL).

    Built from the URL's parts (a database or user name with spaces or ``@`` stays whole),
    with asyncpg's ``ssl=true`` read as ``sslmode=require``.
    """
    url = getattr(getattr(engine, "_pool", None), "url", None)
    if url is None:
        raise TypeError(
            "Could not read the database URL of this PGEngine; pass the URL or a "
            "psycopg_pool.ConnectionPool to postgres_backend() instead."
        )
    params: dict[str, Any] = {
        k: v if isinstance(v, str) else ",".join(v) for k, v in url.query.items()
    }
    if "ssl" in params and "sslmode" not in params:  # asyncpg spelling
        ssl = str(params.pop("ssl"))
        params["sslmode"] = _ASYNCPG_SSL.get(ssl.lower(), ssl)
    parts = {
        "host": url.host,
        "port": url.port,
        "user": url.username,
        "password": url.password,
        "dbname": url.database,
    }
    params.update({k: v for k, v in parts.items() if v is not None})
    return psycopg.conninfo.make_conninfo(**params)


def sqlalchemy_url(conninfo: str, kwargs: dict[str, Any]) -> str:
    """A ``postgresql+psycopg://`` URL for SQLAlchemy (langchain-postgres' ``PGEngine``).

    From a URL or ``key=value`` conninfo, with the libpq parameters among a pool's connection
    ``kwargs`` (a password, ``options``) kept, as the pool itself connects.

    Example:
        >>> sqlalchemy_url("dbname=app host=/tmp user=me", {"autocommit": True})
        'postgresql+psycopg://?dbname=app&host=%2Ftmp&user=me'
    """
    from sqlalchemy.engine import URL

    libpq = {option.keyword.decode() for option in psycopg.pq.Conninfo.get_defaults()}
    params = psycopg.conninfo.conninfo_to_dict(conninfo)
    params.update({k: v for k, v in kwargs.items() if k in libpq and v is not None})
    query = {k: str(v) for k, v in sorted(params.items())}
    return URL.create("postgresql+psycopg", query=query).render_as_string(hide_password=False)
