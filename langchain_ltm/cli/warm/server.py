"""The warm encoder: one background process per user that keeps MiniLM loaded for ``ltm``.

Loading the ONNX model is most of what a fresh ``ltm recall`` waits for (~0.2 s of graph
optimization, plus importing onnxruntime); this process pays it once, answers embedding
requests on a private Unix socket (:mod:`.protocol`), and exits by itself after
``--idle`` seconds without one. ``ltm`` starts it on first use (see :mod:`.client`);
``ltm encoder stop`` stops it.

Run by hand: ``python -m langchain_ltm.cli.warm.server --socket PATH --key KEY --idle 600``.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from langchain_ltm.cli.warm.protocol import (
    VERSION,
    EncoderFiles,
    ProtocolError,
    peer_is_me,
    read_message,
    send_message,
    write_pid,
)

__all__ = ["main", "serve"]

_WORKERS = 16  # requests read at once: a status or stop is not stuck behind embeddings ...
_EMBEDDERS = 4  # ... of which this many run the model at once (its runs are thread-safe)
_REQUEST_TIMEOUT = 30.0  # seconds a client may take to send its request


class _Encoder(Protocol):
    def encode(self, texts: list[str]) -> npt.NDArray[np.float32]: ...

    def copy_changed(self) -> str | None: ...


def serve(
    path: Path,
    key: str,
    idle_seconds: float,
    encoder: _Encoder | None = None,
    lock_fd: int | None = None,
) -> bool:
    """Answer on ``path`` (as the encoder with ``key``) until idle or asked to stop.

    ``lock_fd``: the socket's lock, already held for this process (``ltm`` takes it before
    starting the encoder, so that ``ltm encoder stop`` finds one still starting); else it
    is taken here. Returns ``False`` at once when another encoder holds it.
    """
    lock = lock_fd if lock_fd is not None else _take_lock(EncoderFiles(path).lock)
    if lock is None:
        return False
    try:
        if encoder is None:
            from langchain_ltm._minilm import MiniLMEncoder

            # no memory arena: it kept what the largest batch took (1.5 GB after 256 long
            # texts, 3.6 GB after 4 such requests at once), for as long as this process lives
            encoder = MiniLMEncoder(memory_arena=False)
        encoder.encode(["warm up"])  # load the model before anyone can connect
        _Server(path, key, idle_seconds, encoder, lock).run()
        return True
    finally:
        os.close(lock)


def _take_lock(path: Path) -> int | None:
    """The lock file, locked and naming this process; ``None`` if another encoder holds it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    write_pid(fd, os.getpid())
    return fd


class _Server:
    def __init__(
        self, path: Path, key: str, idle_seconds: float, encoder: _Encoder, lock_fd: int
    ) -> None:
        self.path = path
        self.lock_fd = lock_fd  # held; names this process (and whether it is stopping)
        self.key = key
        self.idle_seconds = idle_seconds
        self.encoder = encoder
        self.started = time.time()
        self.last_used = time.monotonic()
        self.served = 0
        self.embedded = 0  # embed requests answered
        self.active = 0
        self.stopping = threading.Event()
        self.mutex = threading.Lock()
        self.embedders = threading.BoundedSemaphore(_EMBEDDERS)
        self.embedding = 0  # embed requests being computed
        self.trim = _heap_trimmer()

    def run(self) -> None:
        listener = self._listen()
        if listener is None:
            return
        mine = os.stat(self.path).st_ino
        listener.settimeout(0.5)
        try:
            with ThreadPoolExecutor(_WORKERS, thread_name_prefix="ltm-encoder") as pool:
                while not self.stopping.is_set() and not self._idle():
                    try:
                        conn, _ = listener.accept()
                    except TimeoutError:
                        continue
                    self._start(pool, conn)
                with contextlib.suppress(OSError):  # no new client finds this socket ...
                    if os.stat(self.path).st_ino == mine:  # (unless a newer encoder's)
                        self.path.unlink()
                listener.setblocking(False)
                while True:  # ... and the ones already waiting are answered
                    try:
                        conn, _ = listener.accept()
                    except (BlockingIOError, OSError):
                        break
                    conn.setblocking(True)
                    self._start(pool, conn)
        finally:
            listener.close()

    def _listen(self) -> socket.socket | None:
        """A socket listening at :attr:`path`; ``None`` (and why, in the log) if it cannot."""
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        staging = self.path.with_name(f".{os.getpid()}")  # not longer than the socket's name
        try:
            with contextlib.suppress(FileNotFoundError):
                staging.unlink()
            listener.bind(str(staging))
            os.chmod(staging, 0o600)
            listener.listen(64)
            os.replace(staging, self.path)  # clients see a socket only once it listens
        except OSError as exc:  # a folder in its place, say: nothing else here moves it
            listener.close()
            with contextlib.suppress(OSError):
                staging.unlink()
            what = "a folder" if self.path.is_dir() else "something"
            print(
                f"ltm encoder: cannot listen on {self.path}: {exc.strerror or exc}; {what} "
                f"is in the way: remove it (commands embed in their own process until then)",
                file=sys.stderr,
            )
            return None
        return listener

    def _start(self, pool: ThreadPoolExecutor, conn: socket.socket) -> None:
        with self.mutex:
            self.active += 1
        pool.submit(self._handle, conn)

    def _idle(self) -> bool:
        with self.mutex:
            return self.active == 0 and time.monotonic() - self.last_used > self.idle_seconds

    def _handle(self, conn: socket.socket) -> None:
        try:
            with conn:
                conn.settimeout(_REQUEST_TIMEOUT)
                if not peer_is_me(conn):
                    raise ProtocolError("a client running as another user")
                self._answer(conn)
        except (OSError, ProtocolError) as exc:  # a client gone or not speaking the protocol
            print(f"ltm encoder: request dropped: {exc}", file=sys.stderr)
        finally:
            with self.mutex:
                self.active -= 1
                self.served += 1
                self.last_used = time.monotonic()

    def _answer(self, conn: socket.socket) -> None:
        request = read_message(conn)
        if request.get("v") != VERSION:
            send_message(conn, {"ok": False, "error": f"protocol version {VERSION} only"})
            return
        op = request.get("op")
        if op == "embed":
            texts = request.get("texts")
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                send_message(conn, {"ok": False, "error": "texts must be a list of strings"})
                return
            self._embed(conn, texts)
        elif op == "status":
            send_message(conn, {"ok": True, **self._status()})
        elif op == "stop":
            self._stop()
            send_message(conn, {"ok": True, **self._status()})
        else:
            send_message(conn, {"ok": False, "error": f"unknown op {op!r}"})

    def _stop(self) -> None:
        self.stopping.set()
        with contextlib.suppress(OSError):  # its socket goes now: the lock tells who drains
            write_pid(self.lock_fd, os.getpid(), stopping=True)

    def _embed(self, conn: socket.socket, texts: list[str]) -> None:
        # taken: the client now waits as long as the texts take (a stuck encoder never
        # sends this, so the client knows in seconds, not after 0.15 s per text)
        send_message(conn, {"ok": True, "key": self.key, "accepted": len(texts)})
        with self.mutex:
            self.embedding += 1
        try:
            self._send_vectors(conn, texts)
        finally:
            with self.mutex:
                self.embedding -= 1
                last = self.embedding == 0
            if last and self.trim is not None:  # after the reply: the client does not wait
                self.trim(0)  # what the runs freed goes back to the system (~1-3 ms)

    def _send_vectors(self, conn: socket.socket, texts: list[str]) -> None:
        changed = self.encoder.copy_changed()
        if changed is not None:  # its weights may be other numbers now: never serve them
            self._stop()
            why = f"the model's optimised copy {changed} changed on disk; this encoder exits"
            print(f"ltm encoder: {why}", file=sys.stderr)
            send_message(conn, {"ok": False, "error": why})
            return
        try:
            with self.embedders:
                vectors = self.encoder.encode(texts).astype("<f4", copy=False)
        except Exception as exc:  # the encoder's own errors go back to the client
            send_message(conn, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
            return
        rows, dims = vectors.shape if vectors.ndim == 2 else (0, 0)
        header = {"ok": True, "key": self.key, "rows": rows, "dims": dims}
        send_message(conn, header, vectors.tobytes())
        with self.mutex:
            self.embedded += 1

    def _status(self) -> dict[str, Any]:
        with self.mutex:
            idle = time.monotonic() - self.last_used
            return {
                "key": self.key,
                "pid": os.getpid(),
                "socket": str(self.path),
                "started": self.started,
                "served": self.served,
                "embedded": self.embedded,
                "idle_seconds": round(idle, 3),
                "idle_limit_seconds": self.idle_seconds,
                # asked to stop: it answers the requests it holds, then exits (a client
                # starting an encoder waits for that instead of taking it for a live one)
                "stopping": self.stopping.is_set(),
            }


def _heap_trimmer() -> Any:
    """The C library's ``malloc_trim`` (glibc): gives free heap pages back; else ``None``.

    Without it the memory the model's runs freed stays in this process (glibc keeps a heap
    per thread): ~430 MB after four big requests at once instead of ~160 MB.
    """
    import ctypes

    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc (macOS, musl): its allocator's own way
        return None


def main(argv: list[str] | None = None) -> int:
    """``python -m langchain_ltm.cli.warm.server --socket PATH --key KEY --idle SECONDS``."""
    parser = argparse.ArgumentParser(prog="python -m langchain_ltm.cli.warm.server")
    parser.add_argument("--socket", required=True, type=Path, help="where to listen")
    parser.add_argument("--key", required=True, help="the key clients check in every reply")
    parser.add_argument("--idle", type=float, default=600.0, help="seconds before exiting")
    parser.add_argument("--lock-fd", type=int, help="the lock, held for this process (ltm's)")
    args = parser.parse_args(argv)
    serve(args.socket, args.key, args.idle, lock_fd=args.lock_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
