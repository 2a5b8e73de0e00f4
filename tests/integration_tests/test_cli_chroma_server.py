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


def test_one_server_under_two_host_names_refuses_a_second_catalog(chroma_server, tmp_path):
    """`chroma://localhost:P/C` and `chroma://127.0.0.1:P/C` name two default catalogs: through
    the second, `list` said "No facts stored" and `forget-user --yes` reported "facts 0"
    while the collection kept 'Lives in Paris'. The second catalog is now refused."""
    import chromadb

    from tests.vectorstores import chroma_settings

    port = chroma_server["port"]
    first, second = f"chroma://localhost:{port}/alias_c", f"chroma://127.0.0.1:{port}/alias_c"
    assert ltm("--store", first, "remember", "--user", "alice", "Lives in Paris")[0] == 0
    written = tmp_path / "home" / "chroma" / f"localhost_{port}_alias_c.sqlite"
    for command in (["list", "--user", "alice"], ["forget-user", "--user", "alice", "--yes"]):
        code, out, err = ltm("--store", second, *command)
        assert (code, out) == (2, ""), err
        assert "written through another catalog" in err and str(written) in err
        assert f"--store '{second}?catalog={written}'" in err and "share_collection=1" in err
    assert not (tmp_path / "home" / "chroma" / f"127.0.0.1_{port}_alias_c.sqlite").exists()
    client = chromadb.HttpClient(host="localhost", port=port, settings=chroma_settings())
    assert client.get_collection("alias_c").get()["documents"] == ["Lives in Paris"]
    code, out, _ = ltm("--store", f"{second}?catalog={written}", "list", "--user", "alice")
    assert code == 0 and "Lives in Paris" in out  # the advice works
    shared = f"{second}?share_collection=1"  # a second, separate store, on purpose
    assert ltm("--store", shared, "remember", "--user", "alice", "Plays the cello")[0] == 0
    code, out, _ = ltm("--store", second, "list", "--user", "alice")  # now its own catalog
    assert code == 0 and "Plays the cello" in out and "Paris" not in out
    code, out, _ = ltm("--store", first, "list", "--user", "alice")
    assert code == 0 and "Lives in Paris" in out and "cello" not in out
    client.delete_collection("alias_c")


def test_an_invalid_collection_name_on_a_server_is_no_reachability_problem(server_address):
    """The server answered "Expected a name containing 3-512 characters"; the CLI added
    "Check that it is running and reachable" and exited 3."""
    code, out, err = ltm("--store", f"chroma://{server_address}/a", "recall", "--user", "u", "q")
    assert (code, out) == (2, "")
    assert "refused the request: InvalidArgumentError" in err and "reachable" not in err
