"""The warm encoder: real server processes on real Unix sockets, the real MiniLM model.

Each test gets a runtime folder of its own (``XDG_RUNTIME_DIR``) and stops every encoder
it started.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from langchain_ltm._minilm import MiniLMEncoder
from langchain_ltm.cli.warm import protocol
from langchain_ltm.cli.warm.client import WarmEncoder

TEXTS = ["Prefers answers in Spanish", "Lives in Lyon", "x" * 2000]


@pytest.fixture(scope="module")
def local() -> MiniLMEncoder:
    return MiniLMEncoder()


@pytest.fixture
def runtime(monkeypatch):
    folder = Path(tempfile.mkdtemp(prefix="ltm-rt-", dir="/tmp"))  # a socket path is short
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    monkeypatch.setattr(protocol, "_FALLBACK_BASE", folder)  # never the user's real one
    monkeypatch.setenv("LTM_ENCODER_SERVER", "auto")
    monkeypatch.setenv("LTM_ENCODER_IDLE_MINUTES", "0.5")  # a stray one exits soon anyway
    yield folder / "langchain-ltm"
    assert _wait_for(_none_left, 60), "an encoder outlived its test"
    shutil.rmtree(folder, ignore_errors=True)


def _none_left() -> bool:
    """Stop the encoder (also one still loading its model); True once none holds the lock."""
    warm = WarmEncoder()
    warm.stop()
    return not warm.files.lock.exists() or not warm._alive()


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


def test_the_first_command_leaves_the_model_copy_to_the_encoder_it_starts(
    runtime, local, monkeypatch, tmp_path
):
    from langchain_ltm import _ort_cache

    cache = tmp_path / "model-cache"  # no optimised copy yet: as just after installing
    monkeypatch.setenv(_ort_cache.CACHE_ENV, str(cache))
    made: list[object] = []
    real_make = _ort_cache._make
    monkeypatch.setattr(
        _ort_cache, "_make", lambda *a, **k: (made.append(a), real_make(*a, **k))[1]
    )
    first = WarmEncoder()
    assert first.embed_query("language?") == local.embed_query("language?")
    assert first._local is not None and made == []  # embedded here, without making the copy
    # the encoder it started makes the copy (it inherits LTM_MODEL_CACHE)
    assert _wait_for(lambda: WarmEncoder().status() is not None, 60)
    assert len([p for p in cache.iterdir() if p.name.startswith("onnx-")]) == 1
    assert WarmEncoder().embed_query("language?") == local.embed_query("language?")


def test_a_failed_start_of_the_encoder_leaves_the_copy_to_this_command(
    runtime, local, monkeypatch, tmp_path
):
    """review1: otherwise no process would ever make the copy while the encoder cannot start."""
    from langchain_ltm import _ort_cache

    cache = tmp_path / "model-cache"
    monkeypatch.setenv(_ort_cache.CACHE_ENV, str(cache))
    monkeypatch.setattr(WarmEncoder, "_spawn", lambda self: False)
    first = WarmEncoder()
    assert first.embed_query("language?") == local.embed_query("language?")
    assert len([p for p in cache.iterdir() if p.name.startswith("onnx-")]) == 1
    assert WarmEncoder(mode="auto").status() is None  # and no encoder runs


def test_with_no_encoder_the_command_makes_the_copy_itself(runtime, local, monkeypatch, tmp_path):
    from langchain_ltm import _ort_cache

    cache = tmp_path / "model-cache"
    monkeypatch.setenv(_ort_cache.CACHE_ENV, str(cache))
    monkeypatch.setenv("LTM_ENCODER_SERVER", "off")
    assert WarmEncoder().embed_query("language?") == local.embed_query("language?")
    assert len([p for p in cache.iterdir() if p.name.startswith("onnx-")]) == 1


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


def test_a_folder_at_the_socket_s_path_is_reported_in_a_line(runtime, local):
    """bug hunt: each new encoder died with a traceback and left a `.PID` socket behind."""
    warm = WarmEncoder()
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    warm.address.mkdir()
    started = time.monotonic()
    with pytest.raises(protocol.EncoderUnavailable, match="is a folder, where its socket goes"):
        warm.start(wait=20)
    assert time.monotonic() - started < 5  # none started to die
    assert warm.embed_query("language?") == local.embed_query("language?")
    server = [sys.executable, "-m", "langchain_ltm.cli.warm.server", "--socket"]
    ran = subprocess.run([*server, str(warm.address), "--key", warm.key], capture_output=True)
    assert ran.returncode == 0 and "Traceback" not in ran.stderr.decode()
    assert f"cannot listen on {warm.address}: Is a directory; a folder" in ran.stderr.decode()
    assert [p.name for p in runtime.iterdir() if p.name.startswith(".")] == []  # no staging


def test_a_peer_that_is_not_the_encoder_is_not_believed(runtime, local):
    warm = WarmEncoder()
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    impostor = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    impostor.bind(str(warm.address))
    impostor.listen(8)

    def message(fields: dict[str, object]) -> bytes:
        data = json.dumps(fields).encode()
        return len(data).to_bytes(4, "big") + data

    taken = message({"ok": True, "key": warm.key, "accepted": 1})
    nan = np.full(384, np.nan, dtype="<f4").tobytes()
    replies = [
        message({"ok": True, "key": "someone-else", "accepted": 1}),  # another encoder's
        taken
        + message({"ok": True, "key": "someone-else", "rows": 1, "dims": 384})
        + bytes(384 * 4),
        taken + message({"ok": True, "key": warm.key, "rows": 1, "dims": 384}) + nan,  # NaN
        taken + message({"ok": True, "key": warm.key, "rows": 1, "dims": 3}) + bytes(3 * 4),
        message({"ok": True, "key": warm.key, "accepted": 7}),  # took other texts
        taken + message({"ok": True, "key": warm.key}),  # vectors never come
        b"\x00\x00\x00\x05hello",  # not JSON
        taken + message({"ok": True, "key": warm.key, "rows": 9, "dims": 384}),  # row count
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
        for _ in replies:  # each a new command (one that was fooled once asks no more)
            warm = WarmEncoder()
            assert warm.embed_query("language?") == local.embed_query("language?")
            assert warm.served_remotely == 0 and warm.given_up is not None
    finally:
        thread.join(5)
        impostor.close()
        warm.address.unlink()


def test_a_stuck_encoder_costs_a_command_one_wait_not_one_per_call(runtime, local):
    """bug hunt: a stopped encoder made `ltm import` of 600 lines wait 2 s for each batch."""
    import signal

    pid = WarmEncoder().start()["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        warm = WarmEncoder()
        started = time.monotonic()
        for text in TEXTS:  # three batches of one command
            assert warm.embed_query(text) == local.embed_query(text)
        took = time.monotonic() - started
        assert took < 2 * 2.0, took  # one reply wait (2 s), not one per call
        assert warm.served_remotely == 0 and "timed out" in (warm.given_up or "")
    finally:
        os.kill(pid, signal.SIGCONT)


def _ltm(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "langchain_ltm.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_a_stuck_encoder_is_reported_and_stopped(runtime):
    """bug hunt: status and stop said "No warm encoder is running" while it held the socket."""
    import signal

    pid = WarmEncoder().start()["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        status = _ltm("encoder", "status")
        assert status.returncode == 3, status
        assert f"Not answering: pid {pid} holds" in status.stdout
        stop = _ltm("encoder", "stop")
        assert stop.returncode == 0 and f"Stopped: pid {pid} held" in stop.stdout, stop
        assert _wait_for(lambda: _encoders(WarmEncoder().address) == [], 10)
        assert _ltm("encoder", "status").returncode == 1
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


def test_stop_ends_an_encoder_still_starting(runtime):
    """bug hunt: right after the command that started it, stop found none and it stayed up."""
    warm = WarmEncoder()
    assert warm._spawn()  # as the first command does: no socket yet, the model is loading
    (pid,) = _encoders(warm.address)
    stopped = warm.stop()
    assert stopped is not None and stopped["pid"] == pid and stopped["answering"] is False
    assert _wait_for(lambda: _encoders(warm.address) == [], 10)
    time.sleep(1)
    assert WarmEncoder().status() is None and warm.holder() is None


def test_start_after_stop_waits_for_the_stopping_encoder_and_starts_a_new_one(runtime, local):
    """bug hunt: a draining encoder answered status ok, so start reported it as running."""
    old = WarmEncoder().start()["pid"]
    long = [f"{i} " + "word " * 200 for i in range(120)]  # seconds of work
    vectors: list[list[list[float]]] = []
    busy = threading.Thread(target=lambda: vectors.append(WarmEncoder().embed_documents(long)))
    busy.start()
    time.sleep(0.5)  # the request is being embedded
    warm = WarmEncoder()
    assert warm.stop()["pid"] == old
    status = warm.status()  # still answering, while it drains
    assert status is None or status.get("stopping") is True
    assert _ltm("encoder", "status").returncode == 1
    new = warm.start()
    assert new["pid"] != old and new.get("stopping") is False
    busy.join(60)
    assert vectors == [local.embed_documents(long)]  # the request in flight was answered
    assert _encoders(warm.address) == [new["pid"]]


def _rss_mb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return (
        int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1])
        // 1024
    )


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_the_encoder_gives_a_big_request_s_memory_back(runtime, local):
    """bug hunt: 1.5 GB after one request of 256 long texts, kept for the encoder's life."""
    warm = WarmEncoder()
    pid = warm.start()["pid"]
    base = _rss_mb(pid)
    long = [f"{i} " + "zażółć gęślą jaźń 日本 " * 60 for i in range(32)]  # 256 tokens each
    assert warm.embed_documents(long) == local.embed_documents(long)
    assert _wait_for(lambda: _rss_mb(pid) < base + 250, 5), (base, _rss_mb(pid))


def test_an_encoder_whose_model_copy_changed_on_disk_serves_no_more(
    runtime, local, monkeypatch, tmp_path
):
    """bug hunt: it mapped the copy's weights file and served other vectors once it changed."""
    monkeypatch.setenv("LTM_MODEL_CACHE", str(tmp_path))
    MiniLMEncoder().embed_query("make the copy")
    (folder,) = [p for p in tmp_path.iterdir() if p.name.startswith("onnx-")]
    warm = WarmEncoder()
    pid = warm.start()["pid"]  # loads the copy
    weights = folder / "model.onnx.data"
    weights.chmod(0o644)
    with open(weights, "r+b") as handle:  # written in place (here: the same bytes again)
        handle.seek(1 << 20)
        same = handle.read(4096)
        handle.seek(1 << 20)
        handle.write(same)
    assert warm.embed_documents(TEXTS) == local.embed_documents(TEXTS)
    assert warm.served_remotely == 0 and "changed on disk" in (warm.given_up or "")
    assert _wait_for(lambda: pid not in _encoders(warm.address), 10)
    assert "changed on disk" in warm.files.log.read_text()


def test_a_status_without_its_fields_is_no_encoder_not_a_traceback(runtime):
    warm = WarmEncoder()
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    impostor = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    impostor.bind(str(warm.address))
    impostor.listen(1)
    bare = json.dumps({"ok": True, "key": warm.key}).encode()

    def serve() -> None:
        conn, _ = impostor.accept()
        with conn:
            conn.recv(1 << 16)
            conn.sendall(len(bare).to_bytes(4, "big") + bare)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        assert warm.status() is None
    finally:
        thread.join(5)
        impostor.close()
        warm.address.unlink()


def test_a_relative_runtime_folder_is_not_used(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "relrun").mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "relrun")  # the encoder runs in "/": another folder
    monkeypatch.setattr(protocol, "_FALLBACK_BASE", tmp_path / "fallback")
    assert protocol.runtime_dir() == tmp_path / "fallback" / f"langchain-ltm-{os.getuid()}"


def test_a_folder_others_may_enter_is_not_used(runtime, local):
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(runtime, 0o777)
    warm = WarmEncoder()
    assert warm.embed_query("language?") == local.embed_query("language?")
    time.sleep(0.5)
    assert list(runtime.iterdir()) == []  # no socket, no lock, no log: nothing started
    os.chmod(runtime, 0o700)


def _encoders(socket_path: Path) -> list[int]:
    """Pids of the processes serving ``socket_path`` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"langchain_ltm.cli.warm.server" in argv and os.fsencode(socket_path) in argv:
                found.append(int(entry.name))
    return found


def test_it_exits_when_idle_and_one_at_a_time(runtime):
    warm = WarmEncoder(idle_minutes=1.5 / 60)  # 1.5 seconds
    pid = warm.start()["pid"]
    assert warm.start()["pid"] == pid and _encoders(warm.address) == [pid]  # one, not three
    second = [sys.executable, "-m", "langchain_ltm.cli.warm.server", "--socket"]
    second += [str(warm.address), "--key", warm.key]
    other = subprocess.run(second, capture_output=True, timeout=60)  # gives up at once
    assert other.returncode == 0 and warm.status()["pid"] == pid
    assert _wait_for(lambda: not warm.address.exists(), 30)  # idle: gone, socket removed
    assert warm.status() is None and warm.files.lock.exists()
    assert _wait_for(lambda: _encoders(warm.address) == [], 10)  # exited, not a zombie of ours


def test_an_encoder_that_cannot_start_is_started_once_and_reported(runtime, monkeypatch):
    warm = WarmEncoder()
    monkeypatch.setattr("langchain_ltm.cli.warm.client._STARTUP_GRACE", 1.0)
    monkeypatch.setattr(warm, "idle_minutes", "x")  # the server refuses its --idle and exits
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    warm.files.log.write_text("an old encoder's last words\n")
    with pytest.raises(protocol.EncoderUnavailable, match="invalid float value") as info:
        warm.start(wait=20)
    assert "did not start within" in str(info.value)
    assert "old encoder" not in str(info.value)  # only what this start logged
    assert warm.files.log.read_text().count("usage:") == 1  # started once, not every 50 ms
    assert _encoders(warm.address) == []


def test_an_encoder_that_cannot_even_be_tried_says_why_at_once(runtime, monkeypatch):
    monkeypatch.setenv("LTM_MODEL_CACHE", "relative/cache")  # the encoder's model would refuse
    started = time.monotonic()
    with pytest.raises(protocol.EncoderUnavailable, match="LTM_MODEL_CACHE must be an absolute"):
        WarmEncoder().start(wait=20)
    assert time.monotonic() - started < 5  # not the start-up wait for an encoder never run
    assert _encoders(WarmEncoder().address) == []


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
    assert '"embedded": 2' in status.stdout, status.stdout  # remember and recall
    env["LTM_ENCODER_SERVER"] = "off"
    cold = ltm("recall", "--user", "alice", "--store", url, "which language?").stdout
    assert warm == cold and "Prefers answers in Spanish" in warm
    env["LTM_ENCODER_SERVER"] = "auto"
    assert "Stopping: pid" in ltm("encoder", "stop").stdout
    assert _wait_for(lambda: ltm("encoder").returncode == 1, 30)


def test_the_key_changes_with_each_upgrade_that_could_change_the_vectors(tmp_path, monkeypatch):
    """A running encoder keeps the libraries and code it started with; a command after an
    upgrade reached it while the key stayed the same. The key left out ``_ort_cache.py``
    (how the session it runs is built), tokenizers and numpy, and read onnxruntime's
    version only from ``onnxruntime-*.dist-info`` (an onnxruntime-gpu upgrade kept it).
    """
    import importlib.machinery
    import types

    from langchain_ltm import _ort_cache
    from langchain_ltm.cli.warm import client

    site = tmp_path / "site-packages"

    def install(package: str, dist: str) -> None:
        (site / package).mkdir(parents=True, exist_ok=True)
        (site / package / "__init__.py").write_text("")
        for old in site.glob(f"{package}*.dist-info"):
            old.rmdir()
        (site / f"{dist}.dist-info").mkdir()
        module = types.ModuleType(package)  # found where it is, without importing it
        module.__spec__ = importlib.machinery.ModuleSpec(package, None, is_package=True)
        module.__spec__.submodule_search_locations = [str(site / package)]
        monkeypatch.setitem(sys.modules, package, module)

    def key() -> str:
        client.files_of.cache_clear()
        return client._key()

    install("onnxruntime", "onnxruntime_gpu-1.20.0")
    install("tokenizers", "tokenizers-0.20.0")
    keys = [key()]
    assert key() == keys[0]  # the same installation: the same encoder
    install("onnxruntime", "onnxruntime_gpu-1.21.0")
    keys.append(key())
    install("tokenizers", "tokenizers-0.21.0")
    keys.append(key())
    monkeypatch.setattr(client.np, "__version__", "99.0.0")
    keys.append(key())
    edited = tmp_path / "_ort_cache.py"
    edited.write_text(Path(_ort_cache.__file__).read_text() + "\n# a new release\n")
    spec = importlib.machinery.ModuleSpec(_ort_cache.__name__, None, origin=str(edited))
    monkeypatch.setattr(_ort_cache, "__spec__", spec)
    keys.append(key())
    client.files_of.cache_clear()
    assert len(set(keys)) == len(keys), keys
