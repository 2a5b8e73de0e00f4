"""An embedded Qdrant folder held by another process: opening waits briefly, then says what to do.

The holder is a real second process (qdrant-client's ``flock`` on the folder's ``.lock``).
It prints ``held`` once it has the folder and closes it when told to on stdin, so the
timings below come from the lock, not from process start-up. Every wait has a deadline.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from langchain_ltm import BackendError, LongTermMemoryStore
from langchain_ltm.backends.qdrant import qdrant_backend
from langchain_ltm.backends.qdrant._folder import folder_in_use
from tests.cli_runs import isolated_home, ltm  # noqa: F401  (isolated_home: autouse fixture)
from tests.fakes import KeywordEmbeddings

ROOT = Path(__file__).resolve().parents[2]

HOLDER = """
import sys
from langchain_ltm import LongTermMemoryStore
from tests.fakes import KeywordEmbeddings
store = LongTermMemoryStore.from_qdrant(sys.argv[1], KeywordEmbeddings(dims=64))
store.remember("alice", "likes green tea")
print("held", flush=True)
sys.stdin.readline()
store.close()
print("released", flush=True)
sys.stdin.readline()
"""


@pytest.fixture
def holder(tmp_path):
    """A second process holding the folder ``tmp_path/q`` until ``release()`` is called."""
    folder = tmp_path / "q"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout is not None and proc.stdin is not None
    line = proc.stdout.readline()
    assert line == "held\n", proc.stderr.read() if proc.stderr else line

    def release() -> None:
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "released\n"

    try:
        yield folder, release
    finally:
        with contextlib.suppress(OSError, ValueError):
            proc.stdin.write("\n\n")
            proc.stdin.close()
        proc.wait(timeout=60)
        proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()


def test_a_held_folder_gives_a_backend_error_saying_what_to_do(holder):
    folder, _ = holder
    assert folder_in_use(str(folder))
    started = time.monotonic()
    with pytest.raises(BackendError) as raised:
        LongTermMemoryStore.from_qdrant(str(folder), KeywordEmbeddings(64), lock_timeout=0.5)
    waited = time.monotonic() - started
    assert 0.5 <= waited < 5, waited  # waited for it, and no longer than asked (plus a probe)
    message = str(raised.value)
    assert str(folder) in message and "open in another process" in message
    assert "waited 0.5 s" in message and "store.close()" in message
    assert f"ltm migrate --from {folder} --to sqlite:///" in message
    assert not isinstance(raised.value.__cause__, RuntimeError)  # not qdrant's bare error


def test_opening_waits_for_a_holder_that_closes(holder):
    folder, release = holder
    timer = threading.Timer(0.6, release)  # the other process finishes its command
    started = time.monotonic()
    timer.start()
    try:
        with LongTermMemoryStore.from_qdrant(str(folder), KeywordEmbeddings(64)) as store:
            waited = time.monotonic() - started
            assert [f.content for f in store.list_all("alice")] == ["likes green tea"]
    finally:
        timer.join()
    assert 0.5 <= waited < 2.0, waited  # the default waits up to 2 s
    assert not folder_in_use(str(folder))  # closed: free for the next one


def test_a_free_folder_opens_at_once_and_lock_timeout_is_checked(tmp_path):
    started = time.monotonic()
    backend = qdrant_backend(tmp_path / "free", dims=8)
    assert time.monotonic() - started < 2.0
    assert folder_in_use(str(tmp_path / "free"))  # held by us now (another open would wait)
    with pytest.raises(BackendError, match="or another store in this one"):
        qdrant_backend(tmp_path / "free", dims=8, lock_timeout=0)
    backend.close()
    for bad in (-1, "2", True):
        with pytest.raises(ValueError, match="lock_timeout"):
            qdrant_backend(tmp_path / "other", dims=8, lock_timeout=bad)


def test_ltm_on_a_held_folder_exits_3_with_the_message(holder):
    folder, _ = holder
    code, out, err = ltm("list", "--user", "alice", "--store", folder)
    assert code == 3 and out == ""
    assert err.startswith("ltm: error: The embedded Qdrant folder")
    assert "Traceback" not in err and "ltm migrate --from" in err


def test_the_clients_own_lock_error_is_retried_then_translated(holder, monkeypatch):
    """The folder taken between the probe and the open: qdrant-client's RuntimeError."""
    from langchain_ltm.backends.qdrant import _folder as _qdrant_folder

    folder, _ = holder
    probes = []
    monkeypatch.setattr(_qdrant_folder, "folder_in_use", lambda path: probes.append(path))
    with pytest.raises(BackendError, match="open in another process"):
        qdrant_backend(folder, dims=64, lock_timeout=0.3)
    assert len(probes) >= 2  # tried again before giving up


def test_a_file_or_a_damaged_folder_at_the_path_gets_a_clear_error(tmp_path):
    """qdrant-client's own FileExistsError and JSONDecodeError came through raw."""
    emb = KeywordEmbeddings(dims=8)
    a_file = tmp_path / "notes.txt"
    a_file.write_text("hello")
    with pytest.raises(BackendError, match="it is a file, not a folder"):
        LongTermMemoryStore.from_qdrant(str(a_file), emb)
    assert a_file.read_text() == "hello"
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "meta.json").write_text("{not json")
    with pytest.raises(BackendError, match=r"meta\.json cannot be read"):
        LongTermMemoryStore.from_qdrant(str(damaged), emb)
    assert (damaged / "meta.json").read_text() == "{not json"
