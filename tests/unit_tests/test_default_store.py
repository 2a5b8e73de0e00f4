"""The default store is a SQLite file in the data directory: open_store(None), ltm, processes.

(The old default, an embedded Qdrant folder, still in use until it is migrated:
``test_qdrant_default_migration.py``.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from langchain_ltm import MissingDependencyError, defaults
from langchain_ltm.backends.sqlite import SqliteBackend
from langchain_ltm.cli import parser
from langchain_ltm.defaults import DefaultStoreWarning, default_store_path, open_store
from langchain_ltm.store import LongTermMemoryStore
from tests.fakes import KeywordEmbeddings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path, monkeypatch):
    monkeypatch.setenv("LTM_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("LTM_STORE", raising=False)
    monkeypatch.delenv("LTM_USER", raising=False)


def test_open_store_none_is_a_sqlite_file_in_the_data_dir(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no notice for a new user
        store, where = open_store(None, embeddings=KeywordEmbeddings(64))
    file = tmp_path / "home" / "memories.db"
    assert default_store_path() == file and where == f"SQLite at {file}"
    assert isinstance(store.backend, SqliteBackend) and store.backend.path == str(file)
    store.remember("alice", "likes green tea")
    store.close()
    with LongTermMemoryStore.from_sqlite(file, KeywordEmbeddings(64)) as again:
        assert [f.content for f in again.list_all("alice")] == ["likes green tea"]
    assert defaults.legacy_store_folder() is None and defaults.default_store_notice() is None
    assert (tmp_path / "home").stat().st_mode & 0o777 == 0o700  # personal data: owner only


def test_the_parser_names_the_same_default_file():
    assert parser.DEFAULT_STORE_FILE == defaults.DEFAULT_STORE_FILE
    help_text = parser.build_parser().format_help()
    assert str(default_store_path()) in help_text and "sqlite:///PATH" in help_text


def test_a_legacy_folder_without_qdrant_installed_says_what_to_do(tmp_path, monkeypatch):
    folder = tmp_path / "home" / "qdrant"
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text('{"collections": {}, "aliases": {}}')
    monkeypatch.setitem(sys.modules, "qdrant_client", None)  # import fails: not installed
    for name in [m for m in sys.modules if m.startswith("langchain_ltm.backends.qdrant")]:
        monkeypatch.delitem(sys.modules, name)  # the engine's package is imported anew
    with pytest.warns(DefaultStoreWarning), pytest.raises(MissingDependencyError) as raised:
        open_store(None, embeddings=KeywordEmbeddings(64))
    message = str(raised.value)
    assert 'pip install "langchain-ltm[qdrant]"' in message
    assert f"ltm migrate --from {folder} --to sqlite:///{default_store_path()}" in message
    assert not default_store_path().exists()  # nothing switched behind the user's back


def test_an_existing_sqlite_file_wins_over_a_legacy_folder(tmp_path):
    folder = tmp_path / "home" / "qdrant"
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text('{"collections": {}, "aliases": {}}')
    LongTermMemoryStore.from_sqlite(default_store_path(), KeywordEmbeddings(64)).close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store, where = open_store(None, embeddings=KeywordEmbeddings(64))
    store.close()
    assert where == f"SQLite at {default_store_path()}"


def _ltm(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "langchain_ltm.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )


def test_twenty_concurrent_ltm_remember_processes_all_succeed(tmp_path):
    """20 `ltm remember` processes at once on the default store, one user each."""
    users = [f"user-{i}@example.com" for i in range(20)]
    procs = [
        _ltm("remember", "--user", user, "--json", f"Works on project {i}", f"Owns {i} cats")
        for i, user in enumerate(users)
    ]
    deadline = time.monotonic() + 600
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        results.append((proc.returncode, out, err))
    assert [code for code, _, _ in results] == [0] * 20, [err for _, _, err in results]
    for _, out, _ in results:
        assert [row["action"] for row in json.loads(out)] == ["created", "created"]
    with LongTermMemoryStore.from_sqlite(default_store_path(), KeywordEmbeddings(384)) as store:
        for i, user in enumerate(users):
            stored = sorted(f.content for f in store.list_all(user))
            assert stored == sorted([f"Works on project {i}", f"Owns {i} cats"]), user
        assert store.backend.count(("memories",)) == 40


def test_a_folder_url_without_qdrant_says_so_and_makes_no_folder(tmp_path, monkeypatch):
    import sys

    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_ltm.defaults import open_store
    from langchain_ltm.errors import MissingDependencyError

    monkeypatch.setitem(sys.modules, "qdrant_client", None)  # as without the [qdrant] extra
    folder = tmp_path / "memories"
    with pytest.raises(MissingDependencyError, match=r'pip install "langchain-ltm\[qdrant\]"'):
        open_store(str(folder), embeddings=DeterministicFakeEmbedding(size=8))
    assert not folder.exists()
