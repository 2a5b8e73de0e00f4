"""The warm encoder: real server processes on real Unix sockets, the real MiniLM model.

Each test gets a runtime folder of its own (``XDG_RUNTIME_DIR``) and stops every encoder
it started.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from langchain_ltm._minilm import MiniLMEncoder
from langchain_ltm.cli.warm.client import WarmEncoder
from langchain_ltm.cli.warm.server import lock_path

TEXTS = ["Prefers answers in Spanish", "Lives in Lyon", "x" * 2000]


@pytest.fixture(scope="module")
def local() -> MiniLMEncoder:
    return MiniLMEncoder()


@pytest.fixture
def runtime(monkeypatch):
    folder = Path(tempfile.mkdtemp(prefix="ltm-rt-"))  # short: a socket path has 108 bytes
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    monkeypatch.setenv("LTM_ENCODER_SERVER", "auto")
    monkeypatch.setenv("LTM_ENCODER_IDLE_MINUTES", "0.5")  # a stray one exits soon anyway
    yield folder / "langchain-ltm"
    assert _wait_for(_none_left, 60), "an encoder outlived its test"
    shutil.rmtree(folder, ignore_errors=True)


def _none_left() -> bool:
    """Stop the encoder (also one still loading its model); True once none holds the lock."""
    warm = WarmEncoder()
    warm.stop()
    if not lock_path(warm.address).exists():
        return True
    with open(lock_path(warm.address), "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(lock, fcntl.LOCK_UN)
        return True


def _wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_vectors_from_the_encoder_are_the_local_ones(runtime, local):
    warm = WarmEncoder()
    status = warm.start()
    assert status["pid"] != os.getpid() and Path(status["socket"]) == warm.address
    assert warm.embed_documents(TEXTS) == local.embed_documents(TEXTS)
    assert warm.embed_query("language?") == local.embed_query("language?")
    assert warm.served_remotely == 2 and warm._local is None  # never loaded the model here
    assert warm.embed_documents([]) == []
    mode = os.stat(warm.address).st_mode & 0o777
    assert mode == 0o600 and os.stat(runtime).st_mode & 0o777 == 0o700


def test_first_use_embeds_here_and_starts_the_encoder(runtime, local):
    first = WarmEncoder()
    assert first.embed_query("language?") == local.embed_query("language?")
    assert first.served_remotely == 0 and first._local is not None  # embedded here
    assert _wait_for(lambda: WarmEncoder().status() is not None, 60)  # started for next time
    second = WarmEncoder()
    assert second.embed_query("language?") == local.embed_query("language?")
    assert second.served_remotely == 1 and second._local is None


def test_off_never_starts_one(runtime, local, monkeypatch):
    monkeypatch.setenv("LTM_ENCODER_SERVER", "off")
    warm = WarmEncoder()
    assert warm.embed_documents(TEXTS) == local.embed_documents(TEXTS)
    time.sleep(0.5)
    assert not warm.address.exists() and WarmEncoder(mode="auto").status() is None


def test_async_twins(runtime, local):
    import asyncio

    warm = WarmEncoder()
    warm.start()

    async def both():
        return await warm.aembed_documents(TEXTS), await warm.aembed_query("language?")

    documents, query = asyncio.run(both())
    assert documents == local.embed_documents(TEXTS) and query == local.embed_query("language?")
    assert warm.served_remotely == 2


def test_a_stale_socket_file_is_replaced(runtime, local):
    warm = WarmEncoder()
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(warm.address))  # a socket nobody listens on, as after a crash
    dead.close()
    assert warm.embed_query("language?") == local.embed_query("language?")
    assert _wait_for(lambda: WarmEncoder().status() is not None, 60)


def test_a_peer_that_is_not_the_encoder_is_not_believed(runtime, local):
    warm = WarmEncoder()
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    impostor = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    impostor.bind(str(warm.address))
    impostor.listen(8)
    replies = [
        b"\x00\x00\x00\x05hello",  # not JSON
        b'\x00\x00\x00\x1d{"ok": true, "rows": 9, "dims": 3}',  # wrong row count
        b"\xff\xff\xff\xff",  # absurd length
        b"",  # closes at once
    ]

    def serve() -> None:
        for reply in replies:
            conn, _ = impostor.accept()
            with conn:
                conn.recv(1 << 16)
                conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        for _ in replies:
            assert warm.embed_query("language?") == local.embed_query("language?")
        assert warm.served_remotely == 0
    finally:
        thread.join(5)
        impostor.close()
        warm.address.unlink()


def test_a_folder_others_may_enter_is_not_used(runtime, local):
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(runtime, 0o777)
    warm = WarmEncoder()
    assert warm.embed_query("language?") == local.embed_query("language?")
    time.sleep(0.5)
    assert list(runtime.iterdir()) == []  # no socket, no lock, no log: nothing started
    os.chmod(runtime, 0o700)


def test_it_exits_when_idle_and_one_at_a_time(runtime):
    warm = WarmEncoder(idle_minutes=1.5 / 60)  # 1.5 seconds
    pid = warm.start()["pid"]
    other = subprocess.run(  # a second encoder on the same socket gives up at once
        [sys.executable, "-m", "langchain_ltm.cli.warm.server", "--socket", str(warm.address)],
        capture_output=True,
        timeout=60,
    )
    assert other.returncode == 0 and warm.status()["pid"] == pid
    assert _wait_for(lambda: not warm.address.exists(), 30)  # idle: gone, socket removed
    assert warm.status() is None and lock_path(warm.address).exists()


def test_bad_settings_are_refused(monkeypatch):
    with pytest.raises(ValueError, match="must be auto or off, got 'sometimes'"):
        WarmEncoder(mode="sometimes")
    monkeypatch.setenv("LTM_ENCODER_IDLE_MINUTES", "-3")
    with pytest.raises(ValueError, match=r"LTM_ENCODER_IDLE_MINUTES .* got '-3'"):
        WarmEncoder()


def test_ltm_encoder_command_and_recall_through_it(runtime, tmp_path):
    env = {**os.environ}
    url = f"sqlite:///{tmp_path}/m.db"

    def ltm(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "langchain_ltm.cli", *args]
        return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)

    assert ltm("encoder").returncode == 1  # none yet
    assert "Running: pid" in ltm("encoder", "start").stdout
    remembered = ltm("remember", "--user", "alice", "--store", url, "Prefers answers in Spanish")
    assert remembered.returncode == 0, remembered.stderr
    warm = ltm("recall", "--user", "alice", "--store", url, "which language?").stdout
    status = ltm("encoder", "status", "--json")
    assert '"served": 2' in status.stdout or '"served": 3' in status.stdout, status.stdout
    env["LTM_ENCODER_SERVER"] = "off"
    cold = ltm("recall", "--user", "alice", "--store", url, "which language?").stdout
    assert warm == cold and "Prefers answers in Spanish" in warm
    env["LTM_ENCODER_SERVER"] = "auto"
    assert "Stopping: pid" in ltm("encoder", "stop").stdout
    assert _wait_for(lambda: ltm("encoder").returncode == 1, 30)
