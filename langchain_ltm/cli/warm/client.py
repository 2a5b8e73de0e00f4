"""WarmEncoder: ``ltm``'s embeddings, from the warm encoder process when one is running.

The first command that embeds finds no encoder, embeds in its own process as before and
then starts one in the background (which makes the model's optimised copy, if missing, so
this command does not pay for it); the next commands (until it has been idle for
``LTM_ENCODER_IDLE_MINUTES``, default 10) get their vectors from it and never load
onnxruntime. Anything wrong on the way (no encoder, a stale socket, a folder others may
enter, a peer of another user, a reply that is not the protocol or carries another key)
means: embed in this process. The vectors are the same either way: the key names
everything that computes them (:mod:`.protocol`).

``LTM_ENCODER_SERVER=off`` turns it off (every command loads the model itself). POSIX only:
elsewhere :func:`~langchain_ltm.cli.session.default_embeddings` is the bare encoder.
"""

from __future__ import annotations

import contextlib
import os
import socket
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
    SERVER_MODULE,
    VERSION,
    EncoderFiles,
    EncoderUnavailable,
    ProtocolError,
    encoder_key,
    files_of,
    is_encoder,
    peer_is_me,
    private_dir,
    read_message,
    recv_exact,
    runtime_dir,
    send_message,
)

__all__ = ["IDLE_ENV", "MODE_ENV", "EncoderUnavailable", "WarmEncoder"]

MODE_ENV = "LTM_ENCODER_SERVER"
"""``auto`` (default): use the warm encoder, starting it when missing; ``off``: never."""
IDLE_ENV = "LTM_ENCODER_IDLE_MINUTES"
"""Minutes the warm encoder waits for a request before exiting (default 10)."""
_MODES = ("auto", "off")
_CONNECT_TIMEOUT = 0.5
_DIMS = 384  # all-MiniLM-L6-v2's vectors: the encoder's key names the model
_STATUS_FIELDS: dict[str, type | tuple[type, ...]] = {
    "pid": int,
    "embedded": int,
    "idle_seconds": (int, float),
    "idle_limit_seconds": (int, float),
    "socket": str,
}
_REPLY_SECONDS = (2.0, 0.15)  # wait 2 s for the encoder to take a request, then 2 s + 0.15 s
# per text for the vectors (a query takes ms, 256-token texts ~60 ms each on 2 busy cores);
# a stuck encoder costs a command one 2 s wait, whatever the size of its batches
_STARTUP_GRACE = 10.0  # seconds after a launch before a free lock means the encoder is gone
# Detach the encoder: take its lock (argv[1]; held already: one runs, leave), fork, write the
# child's pid in the lock and leave; the child execs the server in a new session, holding
# the lock. The command waits only for the short-lived middle process, so no child of it is
# left running (or a zombie), and once it returns `ltm encoder stop` finds the new encoder.
_LAUNCH = (
    "import fcntl,os,sys\nlock=os.open(sys.argv[1],os.O_WRONLY|os.O_CREAT|os.O_APPEND,0o600)\n"
    "try:fcntl.flock(lock,fcntl.LOCK_EX|fcntl.LOCK_NB)\nexcept BlockingIOError:os._exit(0)\n"
    "pid=os.fork()\nif pid:os.ftruncate(lock,0);os.write(lock,b'%d\\n'%pid);os._exit(0)\n"
    "os.setsid();os.set_inheritable(lock,True)\n"
    "os.execv(sys.executable,[sys.executable,*sys.argv[2:],'--lock-fd',str(lock)])"
)
_END_WAIT = 3.0  # seconds an encoder that does not answer gets to exit after each signal


def _note(message: str, *args: object) -> None:
    """An info line on this module's logger (logging imported only when there is one)."""
    import logging

    logging.getLogger(__name__).info(message, *args)


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
        self.key = _key()
        self.files = EncoderFiles.of(self.key)
        self._local: MiniLMEncoder | None = None
        self.spawn_error: str | None = None  # why the last start was not even tried
        self._started = False
        # why this process stopped asking the encoder (a timeout, a bad reply): once is
        # enough, every later call embeds here (a stuck encoder cost each call the wait)
        self.given_up: str | None = None
        self.served_remotely = 0  # requests the warm encoder answered (for tests and bench)

    @property
    def address(self) -> Path:
        """The socket of the encoder computing exactly this package's vectors."""
        return self.files.socket

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

    def unusable(self) -> str | None:
        """Why no encoder can be used here (``None``: one can)."""
        return private_dir(runtime_dir())

    def status(self) -> dict[str, Any] | None:
        """The running encoder's pid, socket, requests served and idle time; ``None`` if none."""
        try:
            return self._ask({"v": VERSION, "op": "status"})
        except OSError:
            return None

    def stop(self) -> dict[str, Any] | None:
        """Ask the running encoder to exit; its last status, or ``None`` if none was running.

        One that holds the lock but does not answer (still starting, or stuck) is ended by
        signal: its pid, ``"answering": False`` and the signal that ended it are returned.

        Raises:
            EncoderUnavailable: It did not exit even on SIGKILL.
        """
        try:
            return self._ask({"v": VERSION, "op": "stop"})
        except OSError:
            held = self.holder()
            if held is None:
                return None
        pid, stopping = held
        if stopping:  # asked already: it answers the requests it holds, then exits
            return {"pid": pid, "answering": False, "stopping": True, "socket": str(self.address)}
        ended = self._end(pid)
        return {"pid": pid, "answering": False, "signal": ended, "socket": str(self.address)}

    def holder(self) -> tuple[int, bool] | None:
        """The encoder holding the lock, answering or not: its pid, and whether it is stopping.

        ``None`` if none holds it.
        """
        if self.unusable() is not None or not self._alive():
            return None
        try:
            pid, *state = self.files.lock.read_text().split()
            held = int(pid), state == ["stopping"]
        except (OSError, ValueError):
            return None
        return held if is_encoder(held[0], self.address) else None

    def start(self, wait: float = 60.0) -> dict[str, Any]:
        """Start an encoder (unless one runs) and wait until it answers; its status.

        One that is stopping is waited for (it answers the requests it holds, then exits)
        before the new one starts.

        Raises:
            EncoderUnavailable: None can run here (the reason), or it did not answer within
                ``wait`` seconds or exited (the lines it logged since are in the message).
        """
        reason = self.unusable()
        if reason is not None:
            raise EncoderUnavailable(f"no warm encoder can run: {reason}")
        began = time.monotonic()
        launched: float | None = None
        log_from = _size(self.files.log)
        while True:
            found = self.status()
            if found is not None and not found.get("stopping"):
                return found
            if found is None and launched is None and not self._alive():  # none to wait for
                log_from = _size(self.files.log)
                if not self._spawn() and self.spawn_error is not None:  # no use waiting
                    raise EncoderUnavailable(f"the warm encoder cannot start: {self.spawn_error}")
                launched = time.monotonic()
            now = time.monotonic()
            exited = launched is not None and now - launched > _STARTUP_GRACE
            if now - began > wait or (exited and not self._alive()):
                raise EncoderUnavailable(self._not_started(now - began, launched, log_from))
            time.sleep(0.05)

    def _not_started(self, waited: float, launched: float | None, log_from: int) -> str:
        """Why :meth:`start` gave up: what holds the lock, or the log of the start it made."""
        held = self.holder()
        if launched is None and held is not None:
            return (
                f"the warm encoder did not start within {waited:.0f} s: pid {held[0]} holds "
                f"its lock and does not answer (still stopping, or stuck); `ltm encoder stop` "
                f"ends it"
            )
        return (
            f"the warm encoder did not start within {waited:.0f} s; what it logged "
            f"({self.files.log}):\n{_tail(self.files.log, log_from)}"
        )

    # internals

    def _embed(self, texts: Sequence[str]) -> list[list[float]]:
        launch = False
        if self.mode == "auto" and self.given_up is None:
            try:
                vectors = self._remote(texts)
                self.served_remotely += 1
                return vectors
            except EncoderUnavailable:  # none runs, and one can run here: start it below
                launch = not self._started
                self._started = True
            except OSError as exc:  # ProtocolError, a timeout, a folder that is not private
                self.given_up = str(exc) or type(exc).__name__
                _note("warm encoder not used (%s); embedding in this process", self.given_up)
        if self._local is None:
            # the encoder started below makes the model's optimised copy: making it here too
            # would cost this command 0.3-1 s more
            self._local = MiniLMEncoder(make_copy=not launch)
        vectors = self._local.embed_documents(list(texts))
        # the encoder starts after this command's own embedding, so the two do not share the
        # CPU; when it cannot start, nothing else makes the model's copy: make it here
        if launch and not self._spawn():
            with contextlib.suppress(Exception):  # (a copy is an optimisation only)
                MiniLMEncoder()._load()
        return vectors

    def _remote(self, texts: Sequence[str]) -> list[list[float]]:
        with self._connect() as conn:
            conn.settimeout(_REPLY_SECONDS[0])  # a stuck encoder: caught in 2 s, any size
            send_message(conn, {"v": VERSION, "op": "embed", "texts": list(texts)})
            accepted = self._ok(_first_reply(conn)).get("accepted")
            if accepted != len(texts):
                raise ProtocolError(f"the warm encoder took {accepted!r} of {len(texts)} texts")
            conn.settimeout(_REPLY_SECONDS[0] + _REPLY_SECONDS[1] * len(texts))
            header = self._ok(read_message(conn))
            rows, dims = header.get("rows"), header.get("dims")
            if rows != len(texts) or dims != _DIMS:
                raise ProtocolError(f"{rows}x{dims} vectors for {len(texts)} texts")
            payload = recv_exact(conn, rows * dims * 4)
        array = np.frombuffer(payload, dtype="<f4").reshape(rows, dims).astype(np.float32)
        if not np.isfinite(array).all():  # never store what this process would not compute
            raise ProtocolError("the warm encoder sent values that are not finite")
        vectors: list[list[float]] = array.tolist()
        return vectors

    def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        with self._connect() as conn:
            conn.settimeout(_REPLY_SECONDS[0])
            send_message(conn, message)
            reply = self._ok(_first_reply(conn))
        missing = [k for k, kind in _STATUS_FIELDS.items() if not isinstance(reply.get(k), kind)]
        if missing:
            raise ProtocolError(f"a status without {', '.join(missing)}: {reply!r}")
        return reply

    def _ok(self, reply: dict[str, Any]) -> dict[str, Any]:
        if reply.get("ok") is not True:
            raise ProtocolError(f"the warm encoder refused: {reply.get('error', reply)!r}")
        if reply.get("key") != self.key:
            raise ProtocolError(f"an encoder with key {reply.get('key')!r}, not {self.key!r}")
        return reply

    def _connect(self) -> socket.socket:
        reason = self.unusable()
        if reason is not None:
            raise ProtocolError(reason)
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(_CONNECT_TIMEOUT)
        try:
            conn.connect(str(self.address))
            if not peer_is_me(conn):
                raise ProtocolError(f"{self.address} is served by another user")
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            conn.close()
            raise EncoderUnavailable(f"no warm encoder at {self.address}") from exc
        except OSError:
            conn.close()
            raise
        return conn

    def _end(self, pid: int) -> str | None:
        """End the encoder ``pid`` by signal (SIGTERM, then SIGKILL); the one that did it.

        ``None``: it exited by itself meanwhile (and its pid may be another's now).
        """
        import signal

        for sig in (signal.SIGTERM, signal.SIGKILL):
            if not is_encoder(pid, self.address):
                return None
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
                os.kill(pid, signal.SIGCONT)  # a stopped process acts on its SIGTERM
            deadline = time.monotonic() + _END_WAIT
            while time.monotonic() < deadline:
                if (self.holder() or (0,))[0] != pid:
                    return sig.name
                time.sleep(0.05)
        raise EncoderUnavailable(f"the warm encoder (pid {pid}) did not exit on SIGKILL")

    def _alive(self) -> bool:
        """Whether an encoder holds the lock (also while it loads the model)."""
        import fcntl

        with open(self.files.lock, "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(lock, fcntl.LOCK_UN)
            return False

    def _spawn(self) -> bool:
        """Start an encoder in the background, unless one runs or none could work here.

        Returns:
            Whether an encoder runs now (started here or already starting).
        """
        if self.unusable() is not None:
            return False
        if self._alive():
            return True
        if self.address.is_dir():  # it could not listen there: never start one to die
            self.spawn_error = f"{self.address} is a folder, where its socket goes: remove it"
            _note("no warm encoder started: %s", self.spawn_error)
            return False
        try:
            MiniLMEncoder()  # the extra, the model and the cache setting are fine (or it crashes)
        except Exception as exc:
            self.spawn_error = str(exc)
            _note("no warm encoder started: %s", exc)
            return False
        import subprocess  # here: a command that finds the encoder never spawns one

        package_root = str(Path(__file__).resolve().parents[3])
        env = dict(os.environ)  # the encoder imports this very package, from anywhere
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        server = ["-m", SERVER_MODULE, "--socket", str(self.address)]
        server += ["--key", self.key, "--idle", str(self.idle_minutes * 60)]
        try:
            with open(self.files.log, "ab") as log:
                launched = subprocess.run(
                    [sys.executable, "-c", _LAUNCH, str(self.files.lock), *server],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    close_fds=True,
                    cwd="/",  # holds no folder of the user's open
                    env=env,
                    check=False,
                    timeout=30,
                )
        except (OSError, subprocess.SubprocessError) as exc:  # no fork, no log, a hung launcher
            _note("no warm encoder started: %s", exc)
            return False
        return launched.returncode == 0


def _first_reply(conn: socket.socket) -> dict[str, Any]:
    """The reply's header; a connection reset before it means no encoder is serving."""
    try:
        return read_message(conn)
    except (ConnectionResetError, BrokenPipeError) as exc:  # it exited while we connected
        raise EncoderUnavailable(f"the warm encoder went away: {exc}") from exc


def _tail(path: Path, offset: int = 0, lines: int = 5) -> str:
    """The last ``lines`` lines of ``path`` written after byte ``offset`` (this start's)."""
    with contextlib.suppress(OSError):
        with open(path, "rb") as log:
            log.seek(offset)
            written = log.read().decode(errors="replace").splitlines()[-lines:]
        return "\n".join(written) if written else "(nothing)"
    return "(no log)"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _idle_minutes(given: float | None) -> float:
    raw: Any = given if given is not None else os.environ.get(IDLE_ENV) or 10
    with contextlib.suppress(TypeError, ValueError):
        minutes = float(raw)
        if 0 < minutes <= 24 * 60 * 7:
            return minutes
    raise ValueError(f"{IDLE_ENV} (idle_minutes) must be minutes > 0 (up to a week), got {raw!r}.")


def _key() -> str:
    """What decides the vectors an encoder computes: a new key starts a new encoder.

    The model and tokenizer files, this package's encoding code (``_ort_cache`` builds the
    session an encoder runs) and the onnxruntime, tokenizers and numpy it has loaded: an
    encoder started before an upgrade of any of them keeps the old ones in memory, and its
    vectors could differ from those of a command that embeds in its own process.
    """
    code = files_of(
        "langchain_ltm._minilm",
        "langchain_ltm._ort_cache",
        "langchain_ltm.cli.warm.protocol",
        "langchain_ltm.cli.warm.server",
    )
    return encoder_key(
        VERSION, MINILM_INT8_SHA256, MINILM_TOKENIZER_SHA256, _installed(), np.__version__, code
    )


_RUNTIMES = (("onnxruntime", "onnxruntime"), ("tokenizers", "tokenizers-"))
"""(package, prefix of its distributions' ``.dist-info`` folders): ``onnxruntime`` is also
installed as ``onnxruntime_gpu``, ``onnxruntime_directml``, ... under the same package."""


def _installed() -> str:
    """The installed onnxruntime and tokenizers, read without importing them.

    Importing them is what the encoder saves a command. Their ``.dist-info`` folders name
    them, else (no such folder: a source or conda install) their ``__init__.py``'s stamp.
    """
    import importlib.util

    listed: dict[Path, list[str]] = {}
    parts = []
    for package, prefix in _RUNTIMES:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            parts.append(f"{package}: none")
            continue
        root = Path(next(iter(spec.submodule_search_locations)))
        if root.parent not in listed:  # one listing of site-packages for both
            try:
                listed[root.parent] = sorted(os.listdir(root.parent))
            except OSError:
                listed[root.parent] = []
        found = [
            name
            for name in listed[root.parent]
            if name.startswith(prefix) and name.endswith(".dist-info")
        ]
        parts.append(",".join(found) or f"{root}@{_mtime(root / '__init__.py')}")
    return ";".join(parts)


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0
