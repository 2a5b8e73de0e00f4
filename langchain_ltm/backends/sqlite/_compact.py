"""Give a SQLite file's free pages back to the disk: ``VACUUM`` with the file to itself.

Deleting facts (``clear_user``, ``forget-user``, TTL sweeps) leaves their pages on the
file's free list: SQLite reuses them for new rows but never shrinks the file. ``VACUUM``
rewrites it without them. It is run only when no other connection has the file open:

- The check is the one SQLite makes itself. A file in WAL mode can leave WAL only when no
  other connection (of any process) has it open, so ``PRAGMA journal_mode = DELETE``
  answers "busy" exactly when someone else holds the store (an agent, another ``ltm``
  command, a ``SqliteSaver``). Then nothing is changed and :class:`StoreInUseError` says
  so.
- Alone, the file is vacuumed in rollback-journal mode (the rewrite goes straight into the
  file, not through a WAL as large as the database), then put back into WAL mode. Another
  process that opens the file meanwhile waits for it (``busy_timeout``) like for any
  writer. A failure half way changes nothing: ``VACUUM`` is one transaction, and WAL mode
  is restored either way.

It needs free disk space about the size of the file (SQLite's temporary copy).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path

from langchain_ltm.backends._compaction import Compacted, StoreInUseError
from langchain_ltm.errors import BackendError

__all__ = ["Compacted", "StoreInUseError", "compact"]


def _on_disk(path: Path) -> int:
    """Bytes of the file and its WAL; a file that goes meanwhile counts 0.

    Another process closing the store deletes the WAL between an ``exists()`` and a
    ``stat()``: a bare ``FileNotFoundError`` reported a compaction as failed.
    """
    total = 0
    for part in (path, Path(f"{path}-wal")):
        with contextlib.suppress(FileNotFoundError):
            total += part.stat().st_size
    return total


def _in_use(file: Path) -> StoreInUseError:
    return StoreInUseError(
        f"{file} is open in another process (an agent, an ltm command, a "
        "SqliteSaver...), so it was not compacted: stop what uses the store, then run "
        "ltm compact again (nothing was changed)."
    )


def _busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def compact(path: str | os.PathLike[str], *, busy_timeout: float = 10.0) -> Compacted:
    """``VACUUM`` the SQLite file at ``path`` if no other connection has it open.

    Args:
        path: The database file (it must exist).
        busy_timeout: Seconds to wait for a write lock once the file was found free.

    Returns:
        The sizes before and after.

    Raises:
        StoreInUseError: Another connection (this process's or another's) has the file
            open: close it (stop the agent or command using the store) and run it again.
        BackendError: The file is missing, not a database, or SQLite failed (nothing lost).

    Example:
        >>> import os, sqlite3, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "m.db")
        >>> with sqlite3.connect(path) as conn:
        ...     _ = conn.execute("CREATE TABLE t (x BLOB)")
        ...     _ = conn.executemany("INSERT INTO t VALUES (zeroblob(4000))", [()] * 100)
        ...     _ = conn.execute("DELETE FROM t")
        >>> conn.close()
        >>> done = compact(path)
        >>> done.after < done.before
        True
    """
    file = Path(path).expanduser()
    if not file.is_file():
        raise BackendError(f"There is no SQLite file at {file}: check the path (nothing done).")
    before = _on_disk(file)
    started = time.perf_counter()
    try:
        conn = sqlite3.connect(file, timeout=0, isolation_level=None)
    except sqlite3.Error as exc:
        raise BackendError(f"Cannot open {file} ({exc}): check the path and its rights.") from exc
    try:
        _vacuum_alone(conn, file, busy_timeout)
    except sqlite3.DatabaseError as exc:
        raise BackendError(
            f"Compacting {file} failed ({exc}); nothing was lost. If it says the disk is "
            "full, free about the file's size and retry."
        ) from exc
    finally:
        conn.close()
    return Compacted(str(file), before, _on_disk(file), time.perf_counter() - started)


def _vacuum_alone(conn: sqlite3.Connection, file: Path, busy_timeout: float) -> None:
    try:  # reading the mode can find the file locked too (another process opening it)
        mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
    except sqlite3.OperationalError as exc:
        if not _busy(exc):
            raise
        raise _in_use(file) from exc
    wal = mode == "wal"
    if wal:
        try:  # leaving WAL succeeds only if no other connection has the file open
            left = str(conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0]).lower()
        except sqlite3.OperationalError as exc:
            if not _busy(exc):
                raise
            left = "wal"
        if left == "wal":
            raise _in_use(file)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        conn.execute("VACUUM")
    finally:
        if wal:
            with contextlib.suppress(sqlite3.Error):  # a later open switches it back too
                conn.execute("PRAGMA journal_mode = WAL")
