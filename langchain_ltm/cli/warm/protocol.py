"""The wire format between ``ltm`` and its warm encoder, and where the encoder listens.

One request per connection, over a Unix socket in a folder only the user may enter:

- request: a 4-byte big-endian length, then that many bytes of JSON:
  ``{"v": 1, "op": "embed", "texts": [...]}``, ``{"v": 1, "op": "status"}`` or
  ``{"v": 1, "op": "stop"}``;
- reply: for embed, ``{"ok": true, "key": k, "accepted": n}`` as soon as the request is
  read (a client waits seconds for it, so a stuck encoder is found at once), then a
  length-prefixed JSON header, ``{"ok": true, "key": k, "rows": n, "dims": d}`` followed by
  ``n * d`` little-endian float32; ``{"ok": true, "key": k, ...}`` (status, stop); or
  ``{"ok": false, "error": "..."}`` instead of any of them.

The key (also the socket's name) is a digest of everything that decides the vectors: the
model's and tokenizer's digests, onnxruntime's version, and the source of the encoder,
this protocol and the server. A client believes only a reply carrying its own key, from a
peer running as its own user.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import socket
import stat
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_ltm.errors import LTMError

__all__ = [
    "SERVER_MODULE",
    "VERSION",
    "EncoderFiles",
    "EncoderUnavailable",
    "ProtocolError",
    "WarmEncoderError",
    "encoder_key",
    "files_of",
    "is_encoder",
    "peer_is_me",
    "private_dir",
    "read_message",
    "recv_exact",
    "runtime_dir",
    "send_message",
    "write_pid",
]

VERSION = 1
_LENGTH = struct.Struct(">I")
_MAX_HEADER = 64 * 1024 * 1024  # a request of 100,000 long texts fits; a corrupt length not
_MAX_SOCKET_PATH = 100  # AF_UNIX allows 107 bytes (103 on macOS): keep a margin
_FALLBACK_BASE = Path("/tmp")  # where the folder goes without a usable XDG_RUNTIME_DIR
SERVER_MODULE = "langchain_ltm.cli.warm.server"


class WarmEncoderError(LTMError, OSError):
    """The warm encoder could not be used (the command then embeds in its own process)."""


class ProtocolError(WarmEncoderError):
    """The other side sent something that is not this protocol (or closed too early)."""


class EncoderUnavailable(WarmEncoderError):
    """No warm encoder answers on the socket (none started, or it exited)."""


def runtime_dir() -> Path:
    """The sockets' folder: ``$XDG_RUNTIME_DIR/langchain-ltm``, else ``/tmp/langchain-ltm-<uid>``.

    ``XDG_RUNTIME_DIR`` is used only when it is an absolute path (as the XDG spec asks; a
    relative one would name another folder in the encoder, which runs in ``/``), the user's
    own private folder (``sudo -E`` can carry another user's) and short enough for a socket
    path.
    """
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and os.path.isabs(base) and _owned_and_private(Path(base)):
        folder = Path(base) / "langchain-ltm"
        if len(os.fsencode(folder)) + 30 <= _MAX_SOCKET_PATH:
            return folder
    return _FALLBACK_BASE / f"langchain-ltm-{os.getuid()}"


@dataclass(frozen=True)
class EncoderFiles:
    """The socket of the encoder with one key, and its lock and log files beside it.

    The encoder holds the lock (``flock``) from its start to its exit: one encoder per key.
    The lock file holds the pid of the encoder holding it (:func:`write_pid`), so one that
    does not answer (still starting, or stuck) can be named and stopped.
    """

    socket: Path

    @classmethod
    def of(cls, key: str) -> EncoderFiles:
        """The files of the encoder with ``key``, in :func:`runtime_dir`."""
        return cls(runtime_dir() / f"encoder-{key}.sock")

    @property
    def lock(self) -> Path:
        """Held by the living encoder."""
        return self.socket.with_suffix(".lock")

    @property
    def log(self) -> Path:
        """What the encoder prints (errors only)."""
        return self.socket.with_suffix(".log")


def write_pid(lock_fd: int, pid: int, stopping: bool = False) -> None:
    """Make the (held) lock file name ``pid`` as its holder (``PID`` or ``PID stopping``)."""
    os.ftruncate(lock_fd, 0)
    os.write(lock_fd, f"{pid}{' stopping' if stopping else ''}\n".encode())


def is_encoder(pid: int, socket_path: Path) -> bool:
    """Whether ``pid`` is an encoder of this user for ``socket_path`` (or its launcher).

    Read from ``/proc`` on Linux, else from ``ps``: its owner and its arguments (the server
    module and this socket), so a pid reused by another program is never taken for it.
    """
    if pid <= 0:
        return False
    argv: list[bytes]
    if Path("/proc/self/cmdline").exists():
        try:
            owner = os.stat(f"/proc/{pid}").st_uid
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
    else:
        import subprocess

        try:
            shown = subprocess.run(
                ["ps", "-o", "uid=", "-o", "command=", "-p", str(pid)],
                capture_output=True,
                timeout=10,
                check=False,
            ).stdout.split()
            owner, argv = int(shown[0]), shown[1:]
        except (OSError, subprocess.SubprocessError, ValueError, IndexError):
            return False
    return (
        owner == os.getuid() and SERVER_MODULE.encode() in argv and os.fsencode(socket_path) in argv
    )


def private_dir(folder: Path) -> str | None:
    """Create ``folder`` (0700; its parent must exist); ``None`` when it is usable, else why not.

    A folder another user made, one others may enter, or a symlink is not used: the client
    then embeds in its own process.
    """
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        return f"cannot create {folder}: {exc.strerror or exc}"
    if not _owned_and_private(folder):
        uid = os.getuid()
        return f"{folder} is not a private folder of this user (mode 0700, owner uid {uid})"
    return None


def _owned_and_private(folder: Path) -> bool:
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid == os.getuid()
        and stat.S_IMODE(info.st_mode) & 0o077 == 0
    )


def encoder_key(*parts: object) -> str:
    """A short digest of what decides the vectors (the socket's name)."""
    return hashlib.sha256("\x00".join(map(str, parts)).encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def files_of(*modules: str) -> str:
    """A digest of the source files of ``modules`` (imported or not): the code in the key."""
    import importlib.util

    digest = hashlib.sha256()
    for name in modules:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        digest.update(Path(origin).read_bytes() if origin else name.encode())
    return digest.hexdigest()[:16]


def peer_is_me(conn: socket.socket) -> bool:
    """Whether the other end runs as this user.

    Linux asks the kernel (``SO_PEERCRED``); elsewhere the folder's permissions are the check.
    """
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None or not sys.platform.startswith("linux"):
        return True
    _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option, 12))
    return bool(uid == os.getuid())


def send_message(conn: socket.socket, message: dict[str, Any], payload: bytes = b"") -> None:
    """One length-prefixed JSON message, then ``payload`` as it is."""
    data = json.dumps(message, ensure_ascii=False).encode("utf-8")
    conn.sendall(_LENGTH.pack(len(data)) + data + payload)


def read_message(conn: socket.socket) -> dict[str, Any]:
    """The next length-prefixed JSON message; ProtocolError if it is not one."""
    (length,) = _LENGTH.unpack(recv_exact(conn, _LENGTH.size))
    if length > _MAX_HEADER:
        raise ProtocolError(f"a message of {length} bytes is not this protocol")
    try:
        message = json.loads(recv_exact(conn, length))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(f"not a JSON message: {exc}") from exc
    if not isinstance(message, dict):
        raise ProtocolError("a message is a JSON object")
    return message


def recv_exact(conn: socket.socket, size: int) -> bytes:
    """Exactly ``size`` bytes; ProtocolError if the peer closes first."""
    chunks, left = [], size
    while left:
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            raise ProtocolError(f"connection closed {left} bytes short")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
