"""``ltm compact``: give the space of deleted memories back to the disk (SQLite files)."""

from __future__ import annotations

from langchain_ltm.cli.exits import EXIT_NOT_FOUND, EXIT_OK, EXIT_USAGE, Failure
from langchain_ltm.cli.session import Session
from langchain_ltm.defaults import (
    _redact,
    check_sqlite_url,
    default_store_path,
    legacy_store_folder,
    sqlite_path,
)


def cmd_compact(session: Session) -> int:
    """``VACUUM`` the SQLite store when nothing else has it open; sizes before and after.

    The store is not opened as a store (that would hold the file open itself): the file is
    compacted by :func:`langchain_ltm.backends.sqlite.compact` alone.
    """
    from langchain_ltm.backends.sqlite._compact import compact

    url = session.url
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
    else:
        raise Failure(
            EXIT_USAGE,
            f"ltm compact shrinks SQLite files; {_redact(url)} is not one (Postgres reclaims "
            "space with autovacuum, or VACUUM FULL in psql; a Qdrant collection compacts "
            "itself)",
        )
    if not path.is_file():
        raise Failure(EXIT_NOT_FOUND, f"there is no SQLite store at {path}")
    done = compact(path)
    share = done.freed / done.before if done.before else 0.0
    human = (
        f"compacted {done.path}: {_mb(done.before)} -> {_mb(done.after)} "
        f"({_mb(done.freed)} given back, {share:.0%}) in {done.seconds:.1f} s"
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


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 100_000 else f"{n / 1e3:,.1f} kB"
