"""`ltm --store chroma://HOST:PORT/COLLECTION` against a real Chroma server.

The server is the chromadb wheel's own ``chroma run`` on a free localhost port, started
once for this module in a temporary folder and stopped after it; the client talks to it
over HTTP from this process, as the CLI does. A server that does not start fails.
"""

import contextlib
import io
import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from langchain_ltm import cli
from langchain_ltm.cli import session as cli_session
from langchain_ltm.defaults import open_store


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory):
    chroma = shutil.which("chroma", path=str(Path(sys.executable).parent))
    if chroma is None:
        pytest.fail("the chromadb wheel's `chroma` command is needed: pip install chromadb")
    port = _free_port()
    folder = tmp_path_factory.mktemp("chroma-server")
    log = open(folder / "server.log", "wb")  # noqa: SIM115 (closed below)
    server = subprocess.Popen(
        [chroma, "run", "--path", str(folder / "data"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"chroma run did not start: {(folder / 'server.log').read_text()}")
            time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path, monkeypatch):
    monkeypatch.setenv("LTM_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("LTM_STORE", raising=False)


def ltm(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def exports(url):
    store, _ = open_store(url, embeddings=cli_session.default_embeddings())
    try:
        return {user: store.export_user(user) for user in ("alice", "bob")}
    finally:
        store.close()


def test_remember_recall_and_migrate_through_a_chroma_server(chroma_server, tmp_path):
    url = f"chroma://{chroma_server}/memories"
    code, _, err = ltm("--store", url, "remember", "--user", "alice", "Prefers answers in Spanish")
    assert code == 0, err
    code, out, _ = ltm("--store", url, "recall", "--user", "alice", "--json", "which language?")
    assert code == 0 and json.loads(out)[0]["content"] == "Prefers answers in Spanish"
    host, port = chroma_server.split(":")
    catalog = tmp_path / "home" / "chroma" / f"{host}_{port}_memories.sqlite"
    assert catalog.is_file()  # the catalog stays on this machine, in the data dir

    start, back = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    assert ltm("--store", start, "remember", "--user", "bob", "Plays the cello")[0] == 0
    server = f"chroma://{chroma_server}/copy?catalog={tmp_path / 'copy-catalog.sqlite'}"
    for source, target in ((start, server), (server, back)):
        code, out, err = ltm("migrate", "--from", source, "--to", target, "--json")
        assert code == 0, err
        assert json.loads(out)["verified"] is True
    assert exports(back) == exports(start)
    assert (tmp_path / "copy-catalog.sqlite").is_file()


def test_an_unreachable_server_exits_3(tmp_path):
    port = _free_port()  # nothing listens there
    code, out, err = ltm("--store", f"chroma://127.0.0.1:{port}/m", "list", "--user", "alice")
    assert (code, out) == (3, "")
    assert f"the Chroma server at 127.0.0.1:{port} did not answer" in err
