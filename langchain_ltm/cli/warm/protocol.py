"""The wire format between ``ltm`` and its warm encoder, and where the encoder listens.

One request per connection, over a Unix socket in a folder only the user may enter:

- request: a 4-byte big-endian length, then that many bytes of JSON:
  ``{"v": 1, "op": "embed", "texts": [...]}``, ``{"v": 1, "op": "status"}`` or
  ``{"v": 1, "op": "stop"}``;
- reply: a length-prefixed JSON header, ``{"ok": true, "rows": n, "dims": d}`` followed by
  ``n * d`` little-endian float32 (embed), or ``{"ok": true, ...}`` (status, stop), or
  ``{"ok": false, "error": "..."}``.

The socket's name carries a digest of everything that decides the vectors (model and
tokenizer digests, onnxruntime's and this package's versions), so a client only ever talks
to an encoder computing what it would compute itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import struct
from pathlib import Path
from typing import Any

__all__ = [
    "VERSION",
    "ProtocolError",
    "encoder_key",
    "read_message",
    "recv_exact",
    "runtime_dir",
    "send_message",
    "socket_path",
]

VERSION = 1
_LENGTH = struct.Struct(">I")
_MAX_HEADER = 64 * 1024 * 1024  # a request of 100,000 long texts fits; a corrupt length not


class ProtocolError(OSError):
    """The other side sent something that is not this protocol (or closed too early)."""


def runtime_dir() -> Path:
    """Where the sockets live: ``$XDG_RUNTIME_DIR/langchain-ltm``, else a per-user /tmp folder."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base:
        return Path(base) / "langchain-ltm"
    return Path("/tmp") / f"langchain-ltm-{os.getuid()}"


def private_dir(folder: Path) -> bool:
    """Create ``folder`` (0700) if missing; ``True`` when it is the user's own and private.

    A folder another user made, or one others may enter, is not used: the client then
    embeds in its own process.
    """
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
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


def socket_path(key: str) -> Path:
    """The socket of the encoder with ``key``."""
    return runtime_dir() / f"encoder-{key}.sock"


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
