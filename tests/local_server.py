"""A server process the tests start on a free localhost port: the part every such server shares.

Subclasses say how to run it (:meth:`LocalServer.command`, :meth:`LocalServer.environment`)
and when it is ready (:meth:`LocalServer.answers`); :meth:`LocalServer.start` retries on
another port when the one chosen was taken before the server bound it, and raises with the
end of the server's log when it never answers. :meth:`LocalServer.stop` ends it (SIGTERM,
or the subclass's :meth:`LocalServer.shut_down`, then SIGKILL if it lingers).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

__all__ = ["LocalServer", "free_port"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (the OS's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class LocalServer:
    """One server process: its folder, log, port and process handle.

    Example (a subclass; not run here: it starts a server):
        server = ChromaServer(tmp_folder).start(); ...; server.stop()
    """

    host = "127.0.0.1"
    name = "server"  # for messages and the log's file name
    poll_seconds = 0.1

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.port = 0
        self.log = self.folder / f"{self.name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    # what a subclass says

    def command(self) -> list[str]:
        """The command line for :attr:`port` (chosen before each attempt)."""
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        return dict(os.environ)

    def answers(self) -> bool:
        """Whether the running server answers as ready (a refused connection: ``False``)."""
        raise NotImplementedError

    def shut_down(self, proc: subprocess.Popen[bytes]) -> None:
        """Ask the server to exit (default: SIGTERM)."""
        proc.terminate()

    # shared

    def start(self, timeout: float) -> LocalServer:
        """Start the server and wait until it answers; a failure says why (its log)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        env = self.environment()
        for _ in range(3):  # a port taken between free_port() and the bind: try another
            self.port = free_port(self.host)
            with self.log.open("ab") as log:
                self.proc = subprocess.Popen(
                    self.command(), stdout=log, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, env=env, start_new_session=True,
                )  # fmt: skip
            if self._wait(timeout):
                return self
            self._end()
        tail = self.log.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"{self.name} did not answer on port {self.port}; its log ends:\n{tail}")

    def stop(self) -> None:
        """Stop the server: :meth:`shut_down`, then SIGKILL if it lingers 15 s."""
        self._end()

    def restart(self, timeout: float) -> LocalServer:
        """Start the stopped server again on the same port and folder (clients reconnect)."""
        if self.proc is not None or not self.port:
            raise RuntimeError(f"{self.name}: restart() needs a server started, then stopped")
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=self.environment(), start_new_session=True,
            )  # fmt: skip
        if not self._wait(timeout):
            self._end()
            tail = self.log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{self.name} did not answer again on port {self.port}:\n{tail}")
        return self

    def _wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                return False  # exited: a port clash or a bad set-up (see the log)
            if self.answers():
                return True
            time.sleep(self.poll_seconds)
        return False

    def _end(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        self.shut_down(proc)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
