"""Exit codes of the ``ltm`` command, and which exception ends a command with which.

Imports nothing heavy: ``ltm --help`` loads it.
"""

from __future__ import annotations

from langchain_ltm.errors import BackendError, LTMError

__all__ = ["EXIT_ENGINE", "EXIT_NOT_FOUND", "EXIT_OK", "EXIT_USAGE", "Failure", "classify"]

EXIT_OK = 0
"""The command did what was asked (including a recall that found nothing)."""
EXIT_NOT_FOUND = 1
"""The thing asked for is not there (``forget`` of an unknown fact id)."""
EXIT_USAGE = 2
"""Bad usage or bad input; also a fact the secret guard rejected (the others are stored)."""
EXIT_ENGINE = 3
"""The storage engine failed or cannot be reached; the same command may work later."""

# Exceptions raised by these packages are engine failures (server down, network, locks).
_ENGINE_PACKAGES = frozenset(
    {"qdrant_client", "psycopg", "psycopg_pool", "httpx", "httpcore", "grpc", "portalocker"}
)


class Failure(Exception):
    """Stop the command with an exit code and a message for stderr."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def classify(exc: Exception, where: str) -> tuple[int, str] | None:
    """Exit code and message for an exception, or ``None`` for a bug (let it propagate)."""
    if isinstance(exc, BackendError):
        return EXIT_ENGINE, str(exc)
    if isinstance(exc, (LTMError, ValueError)):
        return EXIT_USAGE, str(exc)
    if isinstance(exc, (ConnectionError, TimeoutError)) or any(
        cls.__module__.partition(".")[0] in _ENGINE_PACKAGES for cls in type(exc).__mro__
    ):
        return EXIT_ENGINE, (
            f"{where} failed: {type(exc).__name__}: {exc}. Check that it is "
            "running and reachable, or pass another --store."
        )
    if isinstance(exc, RuntimeError) and "already accessed" in str(exc):
        return EXIT_ENGINE, (
            f"{where} is open in another process (an embedded folder store allows one "
            "process at a time); close that process, or use a Qdrant server or "
            "Postgres (--store URL) when several processes share memories."
        )
    if isinstance(exc, (FileExistsError, NotADirectoryError)):
        return EXIT_USAGE, (
            f"cannot keep a store in {exc.filename or 'that path'}: it is a file, not a "
            "folder; pass --store a folder path (embedded Qdrant) or a URL."
        )
    if isinstance(exc, OSError):
        return EXIT_USAGE, f"cannot use {exc.filename or where}: {exc.strerror or exc}."
    return None


def exit_status(code: object) -> int:
    """The exit code of a ``SystemExit`` argparse raised (``--help``, a usage error)."""
    if code is None:
        return EXIT_OK
    return code if isinstance(code, int) else EXIT_USAGE
