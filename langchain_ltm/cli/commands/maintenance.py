"""``ltm compact``: rewrite a store compactly (SQLite files, Postgres tables).

A SQLite file gives the space of deleted memories back to the disk (``VACUUM``); Postgres
tables are rewritten in user order, so a user's rows sit on a few pages (``CLUSTER``),
which also gives deleted rows' space back.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from langchain_ltm.cli.exits import (
    EXIT_ENGINE,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
    Failure,
    bare_sqlite_path,
    is_sqlite_file,
)
from langchain_ltm.cli.session import Session
from langchain_ltm.defaults import (
    _POSTGRES_SCHEMES,
    _redact,
    check_sqlite_url,
    default_store_path,
    legacy_store_folder,
    sqlite_path,
)

if TYPE_CHECKING:
    from langchain_ltm.backends._compaction import Compacted


def cmd_compact(session: Session) -> int:
    """Compact the store: ``VACUUM`` a SQLite file, ``CLUSTER`` Postgres tables by user.

    A SQLite file is compacted only when nothing else has it open, and not opened as a
    store (that would hold it open itself): :func:`langchain_ltm.backends.sqlite.compact`
    does it alone. Postgres tables are locked while they are rewritten; another session
    holding them for longer than ``lock_timeout`` leaves them as they were.
    """
    url = session.url
    lock_timeout: float | None = session.args.lock_timeout
    if url is not None and url.startswith(_POSTGRES_SCHEMES):
        done = _compact_postgres(url, 10.0 if lock_timeout is None else lock_timeout)
    elif lock_timeout is not None:
        raise Failure(
            EXIT_USAGE,
            "--lock-timeout is for Postgres stores (--store postgresql://...); a SQLite file "
            "is compacted only when nothing else has it open, without waiting: drop the option",
        )
    else:
        done = _compact_sqlite(url)
    share = done.freed / done.before if done.before else 0.0
    gave = f"{_mb(done.freed)} given back, {share:.0%}" if done.freed >= 0 else "indexes rebuilt"
    human = (
        f"compacted {done.path}: {_mb(done.before)} -> {_mb(done.after)} "
        f"({gave}) in {done.seconds:.1f} s"
    )
    data = {
        "store": done.path,
        "bytes_before": done.before,
        "bytes_after": done.after,
        "bytes_freed": done.freed,
        "seconds": round(done.seconds, 3),
    }
    session.emit(data, human)
    return EXIT_OK


def _compact_sqlite(url: str | None) -> Compacted:
    from langchain_ltm.backends.sqlite._compact import compact

    if url is None:
        if legacy_store_folder() is not None:
            raise Failure(
                EXIT_USAGE,
                "the default store is still the old embedded Qdrant folder, which ltm compact "
                f"does not handle; move it to SQLite first: ltm migrate --from "
                f"{legacy_store_folder()} --to sqlite:///{default_store_path()}",
            )
        path = default_store_path()
    elif url.startswith("sqlite:"):
        path = sqlite_path(check_sqlite_url(url))
    elif is_sqlite_file(os.path.expanduser(url)):  # a bare path, as the other commands say
        raise Failure(EXIT_USAGE, bare_sqlite_path(os.path.expanduser(url)))
    else:
        raise Failure(
            EXIT_USAGE,
            f"ltm compact rewrites SQLite files and Postgres tables; {_redact(url)} is "
            "neither (a Qdrant collection compacts itself)",
        )
    if not path.is_file():
        raise Failure(EXIT_NOT_FOUND, f"there is no SQLite store at {path}")
    return compact(path)


def _compact_postgres(url: str, lock_timeout: float) -> Compacted:
    from psycopg import errors as pg_errors

    from langchain_ltm.backends.postgres import StoreInUseError, postgres_backend
    from langchain_ltm.errors import BackendError

    backend = postgres_backend(url, setup=False)  # compact what is there, create nothing
    try:
        return backend.compact(lock_timeout=lock_timeout)
    except StoreInUseError as exc:
        cause = str(exc.__cause__).strip() if exc.__cause__ else "lock timeout"
        raise Failure(
            EXIT_ENGINE,
            f"other sessions (an agent, a long transaction) kept the store's tables at "
            f"{_redact(url)} busy for {lock_timeout:g} s ({cause}), so nothing was compacted "
            "or changed. Run it again when the store is quieter, or with a longer "
            "--lock-timeout.",
        ) from exc
    except BackendError as exc:
        if isinstance(exc.__cause__, pg_errors.UndefinedTable):
            raise Failure(
                EXIT_NOT_FOUND,
                f"there is no store at {_redact(url)} (no table {backend.tables.table} or "
                f"{backend.tables.vectors_name} in schema {backend.tables.schema})",
            ) from exc
        raise
    finally:
        backend.close()


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 100_000 else f"{n / 1e3:,.1f} kB"
