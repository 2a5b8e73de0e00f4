"""Per-scope locks across processes for the SQLite engine: ``flock`` on striped lock files.

``lock(scope)`` opens one of 256 small files in ``{database}-locks/`` (chosen by a hash of
the table and the scope) and waits in ``flock(LOCK_EX)``. ``{database}`` is the file's real
path (symlinks resolved), so processes that open one file by different names (a symlink,
its target, a path through a symlinked folder) share the lock files. A hard link is another
name the kernel cannot tell back to one path: processes must not open one file through two
hard links (their locks would not exclude each other).

``flock`` locks belong to the open file, not to the process, so two threads of one process
exclude each other exactly like two processes do, closing a file releases only its own
lock, and the kernel releases the lock of a process that dies. ``unlock`` unlocks
(``LOCK_UN``) and closes the file.

Forks: a forked child gets a copy of every lock file open in its parent, and a copy keeps
the file's ``flock`` until it is closed: a child that lives on (a ``multiprocessing``
worker) kept a lock its parent had taken, so the scope's writers in every process waited
for the child to exit. So this module keeps the set of lock files it has open, and a child
closes its copies as soon as it is forked (``os.register_at_fork``): a child never holds
its parent's locks, nor ever releases them (its copies of the tokens read as released),
and the parent's locks stay the parent's. ``unlock`` also unlocks before closing, so a
copy that escaped (a fork by C code that runs no fork handlers) does not keep the lock.

What it excludes: every other ``lock()`` of the same scope on the same database file and
table, in any process on the machine, and also those of the scopes that share its stripe
(about 1 in 256 pairs of scopes: two users then wait for each other's decide-and-write, a
few milliseconds). It does not exclude plain reads or writes, and it is not SQLite's write
lock: other users' writes, and LangGraph's ``SqliteSaver`` checkpoints in the same file, go
on while a lock is held (a held lock can span a resolver's model call).

Where ``fcntl`` does not exist (Windows), the stripes are in-process locks only and the
engine says so (``cross_process_lock=False``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from typing import Any

from langchain_ltm._steps import running_loop
from langchain_ltm.errors import BackendError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["CROSS_PROCESS", "STRIPES", "FileLocks", "HeldLock"]

STRIPES = 256
CROSS_PROCESS = fcntl is not None

_local_guard = threading.Lock()
_local_stripes: dict[str, threading.Lock] = {}  # Windows: stripe file path -> lock
# stripe file path -> the event loop whose task holds it (taken by alock): a sync lock()
# on that loop's thread would wait forever, as the holder runs on the loop it blocks
_held_on_loop: dict[str, Any] = {}
_POLL = 0.05  # seconds: how often a sync lock() on a running loop looks again
# this process's open lock files -> their token once locked (None while it waits): a forked
# child closes its copies. Taken around every open, close and fork, so a fork never copies
# a file this table does not list.
_files_guard = threading.Lock()
_open_files: dict[int, HeldLock | None] = {}


class HeldLock:
    """The token of a held lock: the open stripe file whose ``flock`` holds it."""

    __slots__ = ("fd", "local", "loop", "path", "pid", "released", "scope")

    def __init__(self, scope: str, path: str, fd: int | None, local: Any, loop: Any = None) -> None:
        self.scope, self.path, self.fd, self.local, self.loop = scope, path, fd, local, loop
        self.released = False
        self.pid = os.getpid()  # the process whose lock it is
        if fd is not None:
            with _files_guard:
                _open_files[fd] = self

    def __repr__(self) -> str:
        return f"<HeldLock {self.scope!r} {'released' if self.released else 'held'}>"


class FileLocks:
    """``lock``/``unlock`` and async twins for one database file and table."""

    def __init__(self, database: str, table: str) -> None:
        # one folder for every name of the file: a symlink and its target lock together
        self.folder = f"{os.path.realpath(database)}-locks"
        self.table = table

    def stripe_path(self, scope: str) -> str:
        digest = hashlib.blake2b(f"{self.table}\x00{scope}".encode(), digest_size=8).digest()
        return os.path.join(self.folder, f"{int.from_bytes(digest, 'big') % STRIPES:02x}")

    def _open(self, scope: str) -> tuple[str, int | None, Any]:
        path = self.stripe_path(scope)
        if fcntl is None:  # pragma: no cover - Windows
            with _local_guard:
                local = _local_stripes.setdefault(path, threading.Lock())
            return path, None, local
        try:
            os.makedirs(self.folder, exist_ok=True)
            with _files_guard:  # a fork in between would copy a file the table lacks
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
                _open_files[fd] = None
            return path, fd, None
        except OSError as exc:
            raise BackendError(
                f"lock({scope!r}) cannot open its lock file {path} ({exc}). Writers need to "
                f"create files next to the database: make {os.path.dirname(path) or '.'} "
                "writable for this user."
            ) from exc

    def lock(self, scope: str) -> HeldLock:
        """Wait (as long as it takes) until this caller holds ``scope``.

        Raises:
            RuntimeError: Called on a thread that runs an event loop whose task holds the
                stripe (an async write of the same user, or of one sharing its lock file):
                waiting would block the loop that task needs to finish.
        """
        path, fd, local = self._open(scope)
        try:
            loop = running_loop()
            if loop is None and fd is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            elif loop is None:  # pragma: no cover - Windows
                local.acquire()
            else:
                _wait_on_loop(path, fd, local, loop)
        except BaseException:
            if fd is not None:
                _close(fd)
            raise
        return HeldLock(scope, path, fd, local)

    async def alock(self, scope: str) -> HeldLock:
        """Async twin of :meth:`lock`: polls without blocking the loop; cancel-safe."""
        import asyncio  # here: a sync process (an `ltm` command) never imports asyncio

        path, fd, local = self._open(scope)
        delay = 0.0005
        try:
            while not _try(fd, local):
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.02)
        except BaseException:  # cancelled while waiting: nothing is held
            if fd is not None:
                _close(fd)
            raise
        loop = _held_on_loop[path] = asyncio.get_running_loop()
        return HeldLock(scope, path, fd, local, loop)

    @staticmethod
    def unlock(held: HeldLock) -> None:
        """Release ``held`` (a second call does nothing)."""
        if held.released:
            return
        held.released = True
        if held.loop is not None:
            _held_on_loop.pop(held.path, None)
        if held.fd is None:  # pragma: no cover - Windows
            held.local.release()
        else:  # the lock of the file, even if a copy of it escaped into a child
            _close(held.fd, unlock=held.pid == os.getpid())


def _close(fd: int, unlock: bool = False) -> None:
    with _files_guard:
        _open_files.pop(fd, None)
        try:
            if unlock:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _close_in_child() -> None:
    """In a forked child: close every lock file copied from the parent (its locks stay)."""
    for fd, held in _open_files.items():
        if held is not None:
            held.released = True  # the child's unlock() must not touch the parent's lock
        with contextlib.suppress(OSError):
            os.close(fd)
    _open_files.clear()
    _held_on_loop.clear()  # the parent's tasks hold them; none runs here
    _files_guard.release()  # taken by the fork's ``before`` handler


if fcntl is not None:
    os.register_at_fork(
        before=_files_guard.acquire,
        after_in_parent=_files_guard.release,
        after_in_child=_close_in_child,
    )


def _wait_on_loop(path: str, fd: int | None, local: Any, loop: Any) -> None:
    """Take the stripe on a thread running ``loop``, refusing to wait for the loop's own task."""
    import time

    while not _try(fd, local):
        if _held_on_loop.get(path) is loop:
            raise RuntimeError(
                "A sync call of the store was made on an event loop while an async call on "
                "that loop holds the SQLite lock it needs (the same user's, or one of the "
                "256 lock files shared with other users): it would wait forever. Call the "
                "a... method (aremember, aupdate_fact, aforget, ...) with await inside "
                "async code."
            )
        time.sleep(_POLL)


def _try(fd: int | None, local: Any) -> bool:
    if fd is None:  # pragma: no cover - Windows
        return bool(local.acquire(blocking=False))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
