"""A real Chroma server for the tests: ``chroma run`` from the installed ``chromadb`` wheel.

The server keeps its data in a folder of its own, listens on a free localhost port, has
telemetry off, and is stopped (then killed if it lingers) by :meth:`ChromaServer.stop`.
Nothing is downloaded: the server is the Rust binary inside the wheel.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

__all__ = ["ChromaServer", "free_port"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (the OS's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _chroma_command() -> str:
    beside = Path(sys.executable).with_name("chroma")  # the venv's own console script
    found = str(beside) if beside.exists() else shutil.which("chroma")
    if found is None:
        raise RuntimeError("no `chroma` command: pip install chromadb (the [chroma] extra)")
    return found


class ChromaServer:
    """``chroma run --path <folder> --port <free port>``, started and stopped by the tests.

    Example (not run here: it starts a server):
        server = ChromaServer(tmp_folder); server.start()
        client = chromadb.HttpClient(host=server.host, port=server.port)
        ...; server.stop()
    """

    host = "localhost"

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.port = 0
        self.log = self.folder / "chroma-server.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 90.0) -> ChromaServer:
        """Start the server and wait until its heartbeat answers; a failure says why."""
        self.folder.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "CHROMA_TELEMETRY": "False"}
        for attempt in range(3):  # a port taken between free_port() and the bind: try another
            self.port = free_port()
            command = [_chroma_command(), "run", "--path", str(self.folder / "data")]
            command += ["--host", self.host, "--port", str(self.port)]
            with self.log.open("ab") as log:
                self.proc = subprocess.Popen(
                    command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env=env, start_new_session=True,
                )  # fmt: skip
            if self._wait(timeout):
                return self
            self.stop()
            if attempt == 2:
                break
        tail = self.log.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"`chroma run` did not answer on {self.url}; its log ends:\n{tail}")

    def _wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                return False  # exited: a port clash or a bad folder (see the log)
            try:
                with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=2) as r:
                    if r.status == 200:
                        return True
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        return False

    def stop(self) -> None:
        """Stop the server: SIGTERM, then SIGKILL after 15 s."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
