"""``ltm compact`` and ``backends.sqlite.compact``: free pages back to the disk, only when alone.

Real SQLite files and real processes: the store is filled and emptied through the Python
API (keyword embeddings), the command runs through ``cli.main`` in this process (which has
no connection to the file open), and "another process holds the store" is a real child
process with the store open.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from langchain_ltm import LongTermMemoryStore, cli
from langchain_ltm.backends.sqlite import StoreInUseError, compact
from langchain_ltm.errors import BackendError
from tests.fakes import KeywordEmbeddings

ROOT = Path(__file__).resolve().parents[2]
HOLDER = """
import sys
from langchain_ltm import LongTermMemoryStore
from tests.fakes import KeywordEmbeddings
store = LongTermMemoryStore.from_sqlite(sys.argv[1], KeywordEmbeddings(dims=64))
store.list_all("bob")  # connections open, no transaction
print("open", flush=True)
sys.stdin.readline()
store.close()
"""


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path, monkeypatch):
    monkeypatch.setenv("LTM_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("LTM_STORE", raising=False)


def _on_disk(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


def _journal_mode(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        conn.close()


@pytest.fixture
def emptied(tmp_path) -> tuple[Path, list[tuple[str, str]]]:
    """A file where alice's 400 facts were erased and bob's 50 remain; bob's (id, text)."""
    path = tmp_path / "memories.db"
    with LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(dims=64)) as store:
        store.remember("alice", [f"alice fact number {i} about topic {i * 7}" for i in range(400)])
        store.remember("bob", [f"bob likes item {i} in colour {i * 3}" for i in range(50)])
        store.clear_user("alice")
        kept = [(f.id, f.content) for f in store.list_all("bob")]
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the deletes are in the file itself
    conn.close()
    assert len(kept) == 50
    return path, kept


def _bob(path: Path) -> list[tuple[str, str]]:
    with LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(dims=64)) as store:
        assert store.recall("bob", "bob likes item 7 in colour 21")[0].content == (
            "bob likes item 7 in colour 21"
        )
        return [(f.id, f.content) for f in store.list_all("bob")]


def test_compact_gives_back_the_space_of_erased_facts(emptied, capsys):
    path, kept = emptied
    before = _on_disk(path)
    code = cli.main(["compact", "--store", f"sqlite:///{path}", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["store"] == str(path)
    assert out["bytes_before"] == before
    assert out["bytes_after"] == _on_disk(path)
    assert out["bytes_after"] < before / 2  # 400 of 450 facts were erased
    assert out["bytes_freed"] == before - out["bytes_after"]
    assert _journal_mode(path) == "wal"  # back in WAL mode: processes share it again
    assert _bob(path) == kept  # every remaining fact, with the same id and text


def test_compact_prints_sizes_for_people(emptied, capsys):
    path, _ = emptied
    assert cli.main(["--store", f"sqlite:///{path}", "compact"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"compacted {path}: ") and "given back" in out


def test_compact_refuses_while_another_process_has_the_store_open(emptied, capsys):
    path, kept = emptied
    before = path.read_bytes()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "open"
        code = cli.main(["compact", "--store", f"sqlite:///{path}"])
        err = capsys.readouterr().err
        assert code == 3
        assert "is open in another process" in err and "nothing was changed" in err
        assert path.read_bytes() == before  # not a byte changed
        with pytest.raises(StoreInUseError, match="run ltm compact again"):
            compact(path)
    finally:
        assert proc.stdin is not None
        proc.communicate("done\n", timeout=60)
    assert proc.returncode == 0
    assert _journal_mode(path) == "wal"
    assert cli.main(["compact", "--store", f"sqlite:///{path}"]) == 0  # alone now: it works
    assert _on_disk(path) < len(before) / 2
    assert _bob(path) == kept


def test_compact_refuses_an_open_connection_of_this_process_too(emptied):
    path, _ = emptied
    conn = sqlite3.connect(path)
    conn.execute("SELECT count(*) FROM ltm_items").fetchone()
    try:
        with pytest.raises(StoreInUseError):
            compact(path)
    finally:
        conn.close()


def test_compact_of_a_file_another_connection_has_locked_says_it_is_in_use(tmp_path):
    """Reading the journal mode found the file locked (another process opening or writing
    a rollback-journal file): 'failed (database is locked) ... if the disk is full', not
    'in use'. Nothing is changed either way."""
    path = tmp_path / "m.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("INSERT INTO t VALUES (1)")
        with pytest.raises(StoreInUseError, match="open in another process"):
            compact(path)
    finally:
        holder.close()


def test_compact_measures_a_wal_file_that_goes_meanwhile_as_nothing(emptied, monkeypatch):
    """Another process closing the store deletes the WAL between a check and a stat: a bare
    FileNotFoundError reported a compaction that had worked as failed (exit 2)."""
    path, _ = emptied
    real_stat = Path.stat

    def vanishing(self, *args, **kwargs):
        if str(self).endswith("-wal"):
            raise FileNotFoundError(2, "No such file or directory", str(self))
        return real_stat(self, *args, **kwargs)

    monkeypatch.setattr(Path, "exists", lambda self: True)  # it was there when checked
    monkeypatch.setattr(Path, "stat", vanishing)
    done = compact(path)
    assert done.after > 0


def test_compact_of_a_store_that_is_not_a_sqlite_file(tmp_path, capsys):
    assert cli.main(["compact", "--store", "memory://"]) == 2
    assert "rewrites SQLite files and Postgres tables" in capsys.readouterr().err
    missing = tmp_path / "nothing.db"
    assert cli.main(["compact", "--store", f"sqlite:///{missing}"]) == 1
    assert f"no SQLite store at {missing}" in capsys.readouterr().err
    assert not missing.exists()  # not created by asking
    garbage = tmp_path / "notes.db"
    garbage.write_bytes(b"not a database at all" * 100)
    assert cli.main(["compact", "--store", f"sqlite:///{garbage}"]) == 3
    assert garbage.read_bytes() == b"not a database at all" * 100
    with pytest.raises(BackendError, match="nothing was lost"):
        compact(garbage)


def test_compact_of_a_sqlite_file_by_its_bare_path_says_how_to_name_it(emptied, capsys):
    """A bare path is an embedded Qdrant folder's form: compact said the SQLite file was
    "neither" SQLite nor Postgres; it now says what the other commands say."""
    path, _ = emptied
    size = path.stat().st_size
    assert cli.main(["compact", "--store", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path} is a SQLite file" in err and f"--store sqlite:///{path}" in err
    assert "neither" not in err
    assert cli.main(["list", "--user", "bob", "--store", str(path)]) == 2
    assert f"pass --store sqlite:///{path} to use it" in capsys.readouterr().err
    assert path.stat().st_size == size  # nothing compacted


def test_compact_takes_no_user_and_defaults_to_the_default_store(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LTM_USER", "someone")  # not needed, not used
    assert cli.main(["compact"]) == 1  # no default store yet: nothing to compact
    assert "memories.db" in capsys.readouterr().err
    home = tmp_path / "home"
    home.mkdir()
    with LongTermMemoryStore.from_sqlite(home / "memories.db", KeywordEmbeddings(dims=64)):
        pass
    assert cli.main(["compact", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["store"] == str(home / "memories.db")


def test_lock_timeout_is_for_postgres_and_must_be_a_sensible_number(emptied, capsys):
    path, _ = emptied
    size = path.stat().st_size
    code = cli.main(["compact", "--store", f"sqlite:///{path}", "--lock-timeout", "5"])
    assert code == 2
    assert "--lock-timeout is for Postgres stores" in capsys.readouterr().err
    assert path.stat().st_size == size  # not compacted
    for bad in ("0", "-1", "nan", "inf", "2147484", "ten"):
        code = cli.main(["compact", "--store", "postgresql://app@db/app", "--lock-timeout", bad])
        assert code == 2
        assert "expected seconds > 0 and at most 2147483" in capsys.readouterr().err
