"""Users of the old default store (an embedded Qdrant folder in the data directory).

While ``qdrant/`` holds their memories and ``memories.db`` does not exist, the default stays
on the folder and every command says, in one line, how to move to the new default; after
``ltm migrate`` the SQLite file is the default and the note is gone.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from langchain_ltm import LongTermMemoryStore, cli
from langchain_ltm.backends.qdrant import QdrantBackend
from langchain_ltm.backends.sqlite import SqliteBackend
from langchain_ltm.cli import session as cli_session
from langchain_ltm.defaults import (
    DefaultStoreWarning,
    default_store_notice,
    default_store_path,
    legacy_store_folder,
    open_store,
)


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path, monkeypatch):
    monkeypatch.setenv("LTM_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("LTM_STORE", raising=False)
    monkeypatch.delenv("LTM_USER", raising=False)


@pytest.fixture
def legacy(tmp_path):
    """The old default folder with alice's facts, as an earlier ``ltm`` left it."""
    folder = tmp_path / "home" / "qdrant"
    embeddings = cli_session.default_embeddings()
    with LongTermMemoryStore.from_qdrant(str(folder), embeddings) as store:
        store.remember("alice", ["Prefers answers in Spanish", "Works on the payments team"])
    return folder


def ltm(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_open_store_keeps_the_old_folder_and_warns(legacy):
    assert legacy_store_folder() == legacy
    with pytest.warns(DefaultStoreWarning) as caught:
        store, where = open_store(None, embeddings=cli_session.default_embeddings())
    with store:
        assert isinstance(store.backend, QdrantBackend)
        assert len(store.list_all("alice")) == 2
    assert where == f"embedded Qdrant at {legacy} (the old default store)"
    (warning,) = caught
    assert str(warning.message) == default_store_notice()
    assert f"ltm migrate --from {legacy} --to sqlite:///{default_store_path()}" in str(
        warning.message
    )
    assert not default_store_path().exists()  # nothing switched, nothing created


def test_ltm_says_so_in_one_line_until_migrated(legacy):
    code, out, err = ltm("list", "--user", "alice", "--json")
    assert code == 0 and len(json.loads(out)) == 2
    assert err == f"ltm: note: {default_store_notice()}\n"
    assert "\n" not in err.rstrip("\n")

    target = f"sqlite:///{default_store_path()}"
    code, out, err = ltm("migrate", "--from", str(legacy), "--to", target, "--json")
    assert code == 0, err
    assert json.loads(out)["verified"] is True and "note" not in err

    code, out, err = ltm("list", "--user", "alice", "--json")
    assert code == 0 and err == ""  # the SQLite file is the default now
    assert sorted(f["content"] for f in json.loads(out)) == [
        "Prefers answers in Spanish",
        "Works on the payments team",
    ]
    assert legacy_store_folder() is None and legacy.is_dir()  # the folder is left as it was
    with LongTermMemoryStore.from_sqlite(
        default_store_path(), cli_session.default_embeddings()
    ) as store:
        assert isinstance(store.backend, SqliteBackend) and len(store.list_all("alice")) == 2


def test_the_note_is_not_printed_for_an_explicit_store(legacy, tmp_path):
    from langchain_ltm.backends.sqlite import sqlite_backend

    sqlite_backend(tmp_path / "x.db").close()  # a store that exists (list creates none)
    code, _, err = ltm("list", "--user", "alice", "--store", f"sqlite:///{tmp_path / 'x.db'}")
    assert code == 0 and err == ""
