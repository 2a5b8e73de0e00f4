"""WarmEncoder: ``ltm``'s embeddings, from the warm encoder process when one is running.

The first command that embeds finds no encoder, embeds in its own process as before and
starts one in the background; the next commands (until it has been idle for
``LTM_ENCODER_IDLE_MINUTES``, default 10) get their vectors from it and never load
onnxruntime. Anything wrong on the way (no encoder, a stale socket, a folder others may
enter, a reply that is not the protocol) means: embed in this process. The vectors are the
same either way: the socket's name carries the digests of the model, the tokenizer and the
versions that compute them.

``LTM_ENCODER_SERVER=off`` turns it off (every command loads the model itself).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from langchain_ltm._minilm import (
    MINILM_INT8_SHA256,
    MINILM_TOKENIZER_SHA256,
    MiniLMEncoder,
    in_executor,
)
from langchain_ltm.cli.warm.protocol import (
    VERSION,
    ProtocolError,
    encoder_key,
    private_dir,
    read_message,
    recv_exact,
    runtime_dir,
    send_message,
    socket_path,
)
from langchain_ltm.cli.warm.server import lock_path

__all__ = ["IDLE_ENV", "MODE_ENV", "WarmEncoder"]

MODE_ENV = "LTM_ENCODER_SERVER"
"""``auto`` (default): use the warm encoder, starting it when missing; ``off``: never."""
IDLE_ENV = "LTM_ENCODER_IDLE_MINUTES"
"""Minutes the warm encoder waits for a request before exiting (default 10)."""
_MODES = ("auto", "off")
_CONNECT_TIMEOUT = 0.5
_REPLY_SECONDS = (10.0, 0.05)  # wait for a reply: 10 s + 0.05 s per text (~20x the need)
logger = logging.getLogger(__name__)


class EncoderUnavailable(OSError):
    """No warm encoder answers on the socket (none started, or it exited)."""


class WarmEncoder:
    """LangChain's embedding methods over the packaged MiniLM, warm when it can be.

    Args:
        mode: ``"auto"`` or ``"off"``; default ``$LTM_ENCODER_SERVER``, else ``"auto"``.
        idle_minutes: How long an encoder this one starts stays up without requests;
            default ``$LTM_ENCODER_IDLE_MINUTES``, else 10.

    Raises:
        ValueError: ``mode`` or ``idle_minutes`` (or their variables) is not valid.

    Example:
        >>> encoder = WarmEncoder(mode="off")  # in this process, as LocalMiniLMEmbeddings
        >>> len(encoder.embed_query("prefers answers in Spanish"))
        384
    """

    def __init__(self, *, mode: str | None = None, idle_minutes: float | None = None) -> None:
        self.mode = mode if mode is not None else os.environ.get(MODE_ENV) or "auto"
        if self.mode not in _MODES:
            raise ValueError(f"{MODE_ENV} (mode) must be auto or off, got {self.mode!r}.")
        self.idle_minutes = _idle_minutes(idle_minutes)
        self._local: MiniLMEncoder | None = None
        self._started = False
        self.served_remotely = 0  # requests the warm encoder answered (for tests and bench)

    @property
    def address(self) -> Path:
        """The socket of the encoder computing exactly this package's vectors."""
        return socket_path(_key())

    # LangChain's embedding methods

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text (unit length, 384 floats)."""
        return self._embed(texts) if texts else []

    def embed_query(self, text: str) -> list[float]:
        """The vector of one query (the model is symmetric: as a document)."""
        return self._embed([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents` (runs it in the default executor)."""
        return await in_executor(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query` (runs it in the default executor)."""
        return await in_executor(self.embed_query, text)

    # the encoder process

    def status(self) -> dict[str, Any] | None:
        """The running encoder's pid, socket, requests served and idle time; ``None`` if none."""
        try:
            return self._ask({"v": VERSION, "op": "status"})
        except OSError:
            return None

    def stop(self) -> dict[str, Any] | None:
        """Ask the running encoder to exit; its last status, or ``None`` if none was running."""
        try:
            return self._ask({"v": VERSION, "op": "stop"})
        except OSError:
            return None

    def start(self, wait: float = 60.0) -> dict[str, Any]:
        """Start an encoder (unless one runs) and wait until it answers; its status.

        Raises:
            EncoderUnavailable: It did not answer within ``wait`` seconds (its log is
                ``encoder-<key>.log`` beside the socket).
        """
        deadline = time.monotonic() + wait
        while True:
            found = self.status()
            if found is not None:
                return found
            self._spawn()
            if time.monotonic() > deadline:
                raise EncoderUnavailable(
                    f"the warm encoder did not start within {wait:g} s; see "
                    f"{self.address.with_suffix('.log')}"
                )
            time.sleep(0.05)

    # internals

    def _embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.mode == "auto":
            try:
                vectors = self._remote(texts)
                self.served_remotely += 1
                return vectors
            except EncoderUnavailable:
                if not self._started:
                    self._started = True
                    self._spawn()
            except (OSError, ProtocolError, ValueError) as exc:
                logger.info("warm encoder failed (%s); embedding in this process", exc)
        if self._local is None:
            self._local = MiniLMEncoder()
        return self._local.embed_documents(list(texts))

    def _remote(self, texts: Sequence[str]) -> list[list[float]]:
        with self._connect() as conn:
            conn.settimeout(_REPLY_SECONDS[0] + _REPLY_SECONDS[1] * len(texts))
            send_message(conn, {"v": VERSION, "op": "embed", "texts": list(texts)})
            header = _ok(read_message(conn))
            rows, dims = header.get("rows"), header.get("dims")
            if rows != len(texts) or not isinstance(dims, int) or dims <= 0:
                raise ProtocolError(f"{rows}x{dims} vectors for {len(texts)} texts")
            payload = recv_exact(conn, rows * dims * 4)
        vectors: list[list[float]] = (
            np.frombuffer(payload, dtype="<f4").reshape(rows, dims).astype(np.float32).tolist()
        )
        return vectors

    def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        with self._connect() as conn:
            conn.settimeout(_CONNECT_TIMEOUT * 4)
            send_message(conn, message)
            return _ok(read_message(conn))

    def _connect(self) -> socket.socket:
        if not private_dir(runtime_dir()):
            raise ProtocolError(f"{runtime_dir()} is not a private folder of this user")
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(_CONNECT_TIMEOUT)
        try:
            conn.connect(str(self.address))
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            conn.close()
            raise EncoderUnavailable(f"no warm encoder at {self.address}") from exc
        except OSError:
            conn.close()
            raise
        return conn

    def _spawn(self) -> None:
        """Start an encoder in the background unless one holds the socket's lock."""
        path = self.address
        if not private_dir(path.parent):
            return
        with open(lock_path(path), "a") as lock:
            try:  # held by a living encoder (also while it loads the model)
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return
            fcntl.flock(lock, fcntl.LOCK_UN)
        with open(path.with_suffix(".log"), "ab") as log:
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "langchain_ltm.cli.warm.server",
                    "--socket",
                    str(path),
                    "--idle",
                    str(self.idle_minutes * 60),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,  # not killed with this command's terminal
                close_fds=True,
                cwd="/",  # holds no folder of the user's open
            )


def _ok(reply: dict[str, Any]) -> dict[str, Any]:
    if reply.get("ok") is not True:
        raise ProtocolError(f"the warm encoder refused: {reply.get('error', reply)!r}")
    return reply


def _idle_minutes(given: float | None) -> float:
    raw: Any = given if given is not None else os.environ.get(IDLE_ENV) or 10
    with contextlib.suppress(TypeError, ValueError):
        minutes = float(raw)
        if 0 < minutes <= 24 * 60 * 7:
            return minutes
    raise ValueError(f"{IDLE_ENV} (idle_minutes) must be minutes > 0 (up to a week), got {raw!r}.")


def _key() -> str:
    from langchain_ltm import __version__

    return encoder_key(
        VERSION, __version__, MINILM_INT8_SHA256, MINILM_TOKENIZER_SHA256, _ort_version()
    )


def _ort_version() -> str:
    """The version of onnxruntime, read without importing it (the import is what is saved)."""
    import importlib.util

    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or not spec.submodule_search_locations:
        return "none"
    root = Path(next(iter(spec.submodule_search_locations)))
    for info in root.parent.glob("onnxruntime*.dist-info"):
        return info.name
    return str(root)
