"""`ltm --store chroma://HOST:PORT/COLLECTION` against a real Chroma server.

The server is the chromadb wheel's own ``chroma run`` on a free localhost port: the
integration tests' session server (``chroma_server``, tests/chroma_server.py; or
``LTM_CHROMA_URL``); the client talks to it over HTTP from this process, as the CLI does.
A server that does not start fails.
"""

import json

import pytest

from langchain_ltm.cli import session as cli_session
from langchain_ltm.defaults import open_store
from tests.chroma_server import free_port
from tests.cli_runs import isolated_home, ltm  # noqa: F401  (isolated_home: autouse fixture)


@pytest.fixture
def server_address(chroma_server):
    """``host:port`` of the session's ``chroma run`` server (tests/chroma_server.py)."""
    return f"{chroma_server['host']}:{chroma_server['port']}"


def exports(url):
    store, _ = open_store(url, embeddings=cli_session.default_embeddings())
    try:
        return {user: store.export_user(user) for user in ("alice", "bob")}
    finally:
        store.close()


def test_remember_recall_and_migrate_through_a_chroma_server(server_address, tmp_path):
    url = f"chroma://{server_address}/memories"
    code, _, err = ltm("--store", url, "remember", "--user", "alice", "Prefers answers in Spanish")
    assert code == 0, err
    code, out, _ = ltm("--store", url, "recall", "--user", "alice", "--json", "which language?")
    assert code == 0 and json.loads(out)[0]["content"] == "Prefers answers in Spanish"
    host, port = server_address.split(":")
    catalog = tmp_path / "home" / "chroma" / f"{host}_{port}_memories.sqlite"
    assert catalog.is_file()  # the catalog stays on this machine, in the data dir

    start, back = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    assert ltm("--store", start, "remember", "--user", "bob", "Plays the cello")[0] == 0
    server = f"chroma://{server_address}/copy?catalog={tmp_path / 'copy-catalog.sqlite'}"
    for source, target in ((start, server), (server, back)):
        code, out, err = ltm("migrate", "--from", source, "--to", target, "--json")
        assert code == 0, err
        assert json.loads(out)["verified"] is True
    assert exports(back) == exports(start)
    assert (tmp_path / "copy-catalog.sqlite").is_file()


def test_an_unreachable_server_exits_3(tmp_path):
    port = free_port()  # nothing listens there
    code, out, err = ltm("--store", f"chroma://127.0.0.1:{port}/m", "list", "--user", "alice")
    assert (code, out) == (3, "")
    assert f"the Chroma server at 127.0.0.1:{port} did not answer" in err
