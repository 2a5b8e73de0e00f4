"""Exit codes of the ``ltm`` command, and which exception ends a command with which.

Imports nothing heavy: ``ltm --help`` loads it.
"""

from __future__ import annotations

import errno

from langchain_ltm.errors import BackendError, LTMError

__all__ = [
    "EXIT_ENGINE",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_USAGE",
    "Failure",
    "bare_sqlite_path",
    "classify",
    "is_sqlite_file",
]

EXIT_OK = 0
"""The command did what was asked (including a recall that found nothing)."""
EXIT_NOT_FOUND = 1
"""The thing asked for is not there (``forget`` of an unknown fact id)."""
EXIT_USAGE = 2
"""Bad usage or bad input; also a fact the secret guard rejected (the others are stored)."""
EXIT_ENGINE = 3
"""The storage engine failed or cannot be reached, or the disk is full (the output's too);
the same command may work later."""

# Exceptions raised by these packages are engine failures (server down, network, locks).
_ENGINE_PACKAGES = frozenset(
    {
        "qdrant_client",
        "psycopg",
        "psycopg_pool",
        "httpx",
        "httpcore",
        "grpc",
        "portalocker",
        "chromadb",
    }
)


_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO})
"""Errors of writing that say nothing of the command: a full disk (or quota), a bad device."""


class Failure(Exception):
    """Stop the command with an exit code and a message for stderr."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def classify(exc: Exception, where: str) -> tuple[int, str] | None:
    """Exit code and message for an exception, or ``None`` for a bug (let it propagate)."""
    if isinstance(exc, BackendError):
        if _caused_by(exc, "psycopg_pool", "PoolTimeout") and "postgres_backend()" in str(exc):
            return EXIT_ENGINE, (  # the library's advice names the Python API
                f"{where}: no free Postgres connection within the pool timeout, although the "
                "server accepts connections (they all stayed busy); retry the command."
            )
        text = str(exc)
        if "busy_timeout=" in text and "sqlite_backend()" in text:  # the Python API's advice
            return EXIT_ENGINE, (
                text.partition(" Retry it;")[0]
                .replace("this call", "this command")
                .replace("more than busy_timeout=", "more than its busy timeout of ")
                + " Retry the command, or end the process that keeps a write transaction "
                "open on the file (an interactive sqlite3 shell after BEGIN, a stuck job)."
            )
        return EXIT_ENGINE, text
    if isinstance(exc, (LTMError, ValueError)):
        return EXIT_USAGE, str(exc)
    if _refused_as_invalid(exc):  # the engine answered: the request, not the server, is wrong
        return EXIT_USAGE, (
            f"{where} refused the request: {type(exc).__name__}: {exc}. Change what it names "
            "(in --store: the collection or index name) and retry."
        )
    if isinstance(exc, (ConnectionError, TimeoutError)) or any(
        cls.__module__.partition(".")[0] in _ENGINE_PACKAGES for cls in type(exc).__mro__
    ):
        return EXIT_ENGINE, (
            f"{where} failed: {type(exc).__name__}: {exc}. Check that it is "
            "running and reachable, or pass another --store."
        )
    if _is_sqlite_error(exc):
        message = str(exc).strip()
        if "locked" in message.lower() or "busy" in message.lower():
            return EXIT_ENGINE, (
                f"{where} stayed locked by another process's write for longer than its busy "
                f"timeout ({message}); nothing of this command was written. Retry it, or end "
                "the process that keeps a write transaction open on the file (a sqlite3 shell "
                "after BEGIN, a stuck job); readers never wait, one writer at a time does."
            )
        return EXIT_ENGINE, f"{where} failed: {type(exc).__name__}: {message}."
    if isinstance(exc, RuntimeError) and "already accessed" in str(exc):
        return EXIT_ENGINE, (
            f"{where} is open in another process (an embedded Qdrant folder allows one "
            "process at a time); close that process and retry, or move the memories to a "
            "store several processes share: ltm migrate --from FOLDER --to sqlite:///FILE "
            "(SQLite, the default store: many processes on one machine), a Qdrant server "
            "or Postgres (--store URL)."
        )
    if isinstance(exc, (FileExistsError, NotADirectoryError)):
        path = exc.filename or "that path"
        if is_sqlite_file(path):  # as the default store's path is printed
            return EXIT_USAGE, bare_sqlite_path(path)
        return EXIT_USAGE, (
            f"cannot keep a store in {path}: it is a file, not a folder; pass --store a "
            "folder path (embedded Qdrant), sqlite:///PATH for a SQLite file, or a URL."
        )
    if isinstance(exc, OSError):
        # a full disk or a failing device is no bad usage: the same command may work later
        code = EXIT_ENGINE if exc.errno in _NO_ROOM else EXIT_USAGE
        return code, f"cannot use {exc.filename or where}: {exc.strerror or exc}."
    return None


def _refused_as_invalid(exc: Exception) -> bool:
    """An engine package's error saying an argument is invalid (a name, an id), not a fault.

    Chroma's ``InvalidArgumentError`` ("Validation error: name: Expected a name containing
    3-512 characters...") derives from ``Exception`` only, so it reached the reachability
    hint below although the server had answered.
    """
    return any(
        cls.__module__.partition(".")[0] in _ENGINE_PACKAGES
        and (cls.__name__.startswith("Invalid") or "Validation" in cls.__name__)
        for cls in type(exc).__mro__
    )


def _caused_by(exc: BaseException, package: str, name: str) -> bool:
    """``exc`` was raised from a ``package`` exception called ``name`` (no import needed)."""
    cause = exc.__cause__
    return any(
        cls.__name__ == name and cls.__module__.partition(".")[0] == package
        for cls in type(cause).__mro__
    )


def bare_sqlite_path(path: object, flag: str = "--store") -> str:
    """What to say when ``flag`` names a SQLite file by its bare path (a folder's form)."""
    return (
        f"{path} is a SQLite file, and a bare path names an embedded Qdrant folder: "
        f"pass {flag} sqlite:///{path} to use it."
    )


def is_sqlite_file(path: object) -> bool:
    """``path`` is a file that starts with SQLite's header."""
    try:
        with open(str(path), "rb") as file:
            return file.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _is_sqlite_error(exc: Exception) -> bool:
    """A ``sqlite3.Error`` (e.g. from a ``SqliteSaver``), recognized without importing sqlite3."""
    return any(cls.__module__ == "sqlite3" for cls in type(exc).__mro__)


def exit_status(code: object) -> int:
    """The exit code of a ``SystemExit`` argparse raised (``--help``, a usage error)."""
    if code is None:
        return EXIT_OK
    return code if isinstance(code, int) else EXIT_USAGE
