"""A real Chroma server for the tests: ``chroma run`` from the installed ``chromadb`` wheel.

The server keeps its data in a folder of its own, listens on a free localhost port, has
telemetry off, and is stopped (then killed if it lingers) by :meth:`ChromaServer.stop`.
Nothing is downloaded: the server is the Rust binary inside the wheel.
"""

from __future__ import annotations

import os
import shutil
import sys
import urllib.error
import urllib.request
from pathlib import Path

from tests.local_server import LocalServer, free_port

__all__ = ["ChromaServer", "free_port"]


def _chroma_command() -> str:
    beside = Path(sys.executable).with_name("chroma")  # the venv's own console script
    found = str(beside) if beside.exists() else shutil.which("chroma")
    if found is None:
        raise RuntimeError("no `chroma` command: pip install chromadb (the [chroma] extra)")
    return found


class ChromaServer(LocalServer):
    """``chroma run --path <folder> --port <free port>``, started and stopped by the tests.

    Example (not run here: it starts a server):
        server = ChromaServer(tmp_folder); server.start()
        client = chromadb.HttpClient(host=server.host, port=server.port)
        ...; server.stop()
    """

    host = "localhost"
    name = "chroma-server"
    poll_seconds = 0.2

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 90.0) -> ChromaServer:
        """Start the server and wait until its heartbeat answers; a failure says why."""
        super().start(timeout)
        return self

    def command(self) -> list[str]:
        command = [_chroma_command(), "run", "--path", str(self.folder / "data")]
        return [*command, "--host", self.host, "--port", str(self.port)]

    def environment(self) -> dict[str, str]:
        return {**os.environ, "ANONYMIZED_TELEMETRY": "False", "CHROMA_TELEMETRY": "False"}

    def answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=2) as r:
                return bool(r.status == 200)
        except (urllib.error.URLError, OSError):
            return False
