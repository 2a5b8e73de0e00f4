"""Opening an embedded Qdrant folder that another client may hold: wait briefly, then say why.

qdrant-client's local mode allows one client per folder: after loading every collection it
takes an exclusive, non-blocking ``flock`` on ``{folder}/.lock`` and raises a bare
``RuntimeError`` ("... is already accessed by another instance of Qdrant client") when
another client holds it, in another process or in this one. :func:`open_folder` instead:

1. probes the lock with a shared, non-blocking ``flock`` of its own, released at once
   (cheap: nothing is loaded while the folder is busy);
2. when it is free, opens the client; if another client took the folder in between
   (qdrant-client's ``RuntimeError``), goes back to 1;
3. polls like this until ``timeout`` seconds have passed, then raises a
   :class:`~langchain_ltm.errors.BackendError` saying what holds the folder and what to do.

So a command that starts while another short one (an ``ltm recall``) has the folder open
waits for it instead of failing; one that meets a long-lived holder (a notebook, an app)
gets a clear error after ``timeout``. Without ``fcntl`` (Windows) step 1 is skipped and
step 2 is retried until the deadline.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from qdrant_client import QdrantClient

from langchain_ltm.errors import BackendError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["DEFAULT_LOCK_TIMEOUT", "LOCK_FILE", "folder_in_use", "open_folder"]

DEFAULT_LOCK_TIMEOUT = 2.0
"""Seconds :func:`open_folder` waits for a folder another client holds."""
LOCK_FILE = ".lock"
"""The file in the folder qdrant-client locks (``portalocker``: ``flock`` on POSIX)."""
_FIRST_DELAY, _MAX_DELAY = 0.02, 0.2


def open_folder(path: str, timeout: float = DEFAULT_LOCK_TIMEOUT) -> QdrantClient:
    """A local-mode ``QdrantClient`` on ``path``, waiting up to ``timeout`` s for the folder.

    Raises:
        BackendError: another client (another process, or another store in this one) held
            the folder for all of ``timeout``; or the path is a file, or a folder whose
            Qdrant metadata cannot be read.
    """
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
        raise ValueError(f"lock_timeout must be a number of seconds >= 0, got {timeout!r}.")
    deadline = time.monotonic() + timeout
    delay = _FIRST_DELAY
    while True:
        if not folder_in_use(path):
            try:
                return QdrantClient(path=path)
            except RuntimeError as exc:
                if "already accessed" not in str(exc):
                    raise
                _close_half_open(exc)
            except (FileExistsError, NotADirectoryError) as exc:  # raw from the client
                raise BackendError(
                    f"Cannot open a Qdrant folder at {path}: it is a file, not a folder. "
                    "Give a folder for the store (a new one is created), or a sqlite:/// "
                    "URL for a SQLite file."
                ) from exc
            except ValueError as exc:  # its meta.json is not JSON: damaged, or not Qdrant's
                raise BackendError(
                    f"Cannot open the Qdrant folder {path}: its meta.json cannot be read "
                    f"({exc}). Restore the folder from a backup, or give another folder."
                ) from exc
        left = deadline - time.monotonic()
        if left <= 0:
            raise folder_in_use_error(path, timeout)
        time.sleep(min(delay, left))
        delay = min(delay * 2, _MAX_DELAY)


def folder_in_use(path: str) -> bool:
    """Whether another Qdrant client holds the folder's lock right now (``False``: unknown)."""
    if fcntl is None:  # pragma: no cover - Windows: the client's own error tells
        return False
    try:
        fd = os.open(os.path.join(path, LOCK_FILE), os.O_RDONLY)
    except OSError:  # no lock file yet (a new folder), or unreadable: the client will say
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # releases the shared lock, if taken
    return False


def _close_half_open(exc: BaseException) -> None:
    """Close what the failed client had opened (its collections' files, the lock file).

    qdrant-client raises from inside its local client's constructor, after loading the
    collections, and leaves them to the garbage collector (as ``ResourceWarning`` noise).
    """
    from qdrant_client.local.qdrant_local import QdrantLocal

    tb = exc.__traceback__
    while tb is not None:
        local = tb.tb_frame.f_locals.get("self")
        if isinstance(local, QdrantLocal):
            with contextlib.suppress(Exception):
                local.close()  # unlocks only its own, never-locked, lock file
            return
        tb = tb.tb_next


def folder_in_use_error(path: str, waited: float) -> BackendError:
    """The error for a folder another client kept for ``waited`` seconds."""
    folder = Path(path).expanduser().absolute()
    target = folder.parent / "memories.db"
    return BackendError(
        f"The embedded Qdrant folder {folder} is open in another process (or another store "
        f"in this one), and embedded Qdrant allows one at a time; waited {waited:g} s for "
        "it. Close that store (a notebook, an app or an ltm command still running; "
        "store.close() releases the folder) and retry, or move the memories to a store "
        f"several processes share: ltm migrate --from {folder} --to sqlite:///{target} "
        "(SQLite: many processes on one machine), or a Qdrant server or Postgres."
    )
