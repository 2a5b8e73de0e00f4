"""`ltm --store` on the generic vectorstore engine: chroma:PATH, faiss:PATH, module:factory.

Real Chroma (a persistent folder) and real FAISS (saved with save_local), driven through
main() as a user would; a Chroma server URL is checked for its errors here (the server
itself runs in the integration tests of the engine).
"""

import contextlib
import json
import logging
import os
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta, timezone

import pytest

from langchain_ltm import cli
from langchain_ltm.cli import session as cli_session
from langchain_ltm.defaults import open_store
from tests.cli_runs import isolated_home, ltm  # noqa: F401  (isolated_home: autouse fixture)

NOTES = ("agent", "notes")


@contextlib.contextmanager
def opened(url):
    store, _ = open_store(url, embeddings=cli_session.default_embeddings())
    try:
        yield store
    finally:
        store.close()


def everything(url):
    """Each user's export (ids, texts, versions, metadata, times, expires_at) and other items."""
    with opened(url) as store:
        exports = {user: store.export_user(user) for user in ("alice", "bob")}
        items = {
            (i.namespace, i.key): i.value for i in store.search(NOTES, limit=100, refresh_ttl=False)
        }
        recalled = [f.content for f in store.recall("alice", "how many children?", limit=1)]
    return exports, items, recalled


def item_expiry(url):
    with opened(url) as store:
        (note,) = store.backend.get([(NOTES, "n2")])
    assert note is not None and note.expires_at is not None
    return note.expires_at


def test_round_trip_sqlite_chroma_faiss_sqlite_loses_nothing(tmp_path):
    start, back = f"sqlite:///{tmp_path / 'start.db'}", f"sqlite:///{tmp_path / 'back.db'}"
    chroma, faiss = f"chroma:{tmp_path / 'chroma'}", f"faiss:{tmp_path / 'faiss'}"
    may = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    with opened(start) as store:
        kid = store.remember("alice", "Has one kid", metadata={"session": 1}, observed_at=may)
        store.update_fact("alice", kid.fact.id, "Has two kids")
        store.update_fact("alice", kid.fact.id, "Has three kids")
        card = store.remember("alice", "Reported a lost card this morning", ttl=600).fact
        store.remember("bob", ["Plays the cello", "Works on the payments team"])
        store.put(NOTES, "n1", {"text": "call back on Monday", "n": 1})
        store.put(NOTES, "n2", {"text": "the door code changes tonight"}, ttl=120)
    before = everything(start)
    note_expires = item_expiry(start)
    assert before[2] == ["Has three kids"]
    alice = {r["id"]: r for r in before[0]["alice"]}
    assert len(alice[kid.fact.id]["history"]) == 2
    expires = datetime.fromisoformat(alice[card.id]["expires_at"])
    assert timedelta(minutes=590) < expires - datetime.now(timezone.utc) <= timedelta(minutes=600)

    for source, target in ((start, chroma), (chroma, faiss), (faiss, back)):
        source_expires = item_expiry(source)
        code, out, err = ltm("migrate", "--from", source, "--to", target, "--json")
        assert code == 0, err
        report = json.loads(out)
        assert report["verified"] is True
        assert report["source"] == {"users": 2, "facts": 4, "versions": 2, "items": 2}
        assert report["target"] == report["source"]
        assert everything(target) == before  # versions, metadata, TTL, items; recall works
        assert everything(source) == before  # and the source was only read (no TTL refresh)
        assert item_expiry(source) == source_expires
        assert abs(item_expiry(target) - note_expires) < timedelta(seconds=5)  # a TTL item too
    assert (tmp_path / "chroma" / "ltm-catalog.sqlite").is_file()  # the catalog beside the data
    assert {p.name for p in (tmp_path / "faiss").iterdir()} >= {
        "index.faiss",
        "index.pkl",
        "ltm-catalog.sqlite",
    }


class _Messages(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage()[:120])


def test_faiss_folder_keeps_its_vectors_across_commands(tmp_path):
    url = f"faiss:{tmp_path / 'f'}"
    faiss_log, seen = logging.getLogger("langchain_community.vectorstores.faiss"), _Messages()
    faiss_log.addHandler(seen)
    try:
        assert ltm("--store", url, "remember", "--user", "bob", "Lives in Lisbon")[0] == 0
    finally:
        faiss_log.removeHandler(seen)
    assert seen.messages == []  # FAISS is handed LangChain Embeddings: it warns of nothing
    assert ltm("--store", url, "remember", "--user", "bob", "Plays the cello")[0] == 0
    code, out, _ = ltm("--store", url, "recall", "--user", "bob", "--json", "music instrument")
    assert code == 0
    assert json.loads(out)[0]["content"] == "Plays the cello"  # ranked from the saved index
    from langchain_community.vectorstores import FAISS

    saved = FAISS.load_local(
        str(tmp_path / "f"), cli_session.default_embeddings(), allow_dangerous_deserialization=True
    )
    assert sorted(d.page_content for d in saved.docstore._dict.values()) == [
        "Lives in Lisbon",
        "Plays the cello",
    ]


def test_chroma_folder_with_a_named_collection(tmp_path):
    url = f"chroma:{tmp_path / 'c'}?collection=team_memories"
    assert ltm("--store", url, "remember", "--user", "alice", "Prefers answers in Spanish")[0] == 0
    code, out, _ = ltm("--store", url, "list", "--user", "alice", "--json")
    assert code == 0 and [f["content"] for f in json.loads(out)] == ["Prefers answers in Spanish"]
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(
        str(tmp_path / "c"), settings=Settings(anonymized_telemetry=False)
    )
    assert [c.name for c in client.list_collections()] == ["team_memories"]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("chroma://localhost/", "chroma://HOST:PORT/COLLECTION"),
        ("chroma://localhost:port/memories", "chroma://HOST:PORT/COLLECTION"),
        ("chroma://localhost:8000/a/b", "chroma://HOST:PORT/COLLECTION"),
        ("chroma://localhost:8000/m?colour=red", "unknown option 'colour'"),
        ("chroma:", "write chroma:PATH"),
        ("chroma:{tmp}/c?colour=red", "write chroma:PATH"),
        ("chroma:{tmp}/c?share_collection=yes", "share_collection is 1 or 0"),
        ("faiss:", "write faiss:PATH"),
        ("faiss:{tmp}/c?collection=x", "write faiss:PATH"),
        ("faiss:{tmp}/c?junk", "write faiss:PATH"),
        ("faiss:{tmp}/a-file", "is a file"),
        ("redis://localhost:6379/", "redis://HOST:PORT/INDEX"),
        ("redis://localhost:6379/a-b", "INDEX is letters, digits and _"),
        ("redis://localhost:port/m", "redis://HOST:PORT/INDEX"),
        ("redis://localhost:6379/m?colour=red", "unknown option 'colour'"),
        ("redis://localhost:6379/m?depth=0", "depth is 1 or more"),
        ("redis://localhost:6379/m?depth=x", "depth is a whole number"),
        ("redis://localhost:6379/m?db=1", "unknown option 'db'"),
        ("redis://me:s3cret@localhost:6379/a-b", "redis://***@localhost"),
    ],
)
def test_a_bad_url_exits_2_saying_how_to_write_it(tmp_path, url, expected):
    (tmp_path / "a-file").write_text("not a folder")
    url = url.format(tmp=tmp_path)
    code, out, err = ltm("--store", url, "list", "--user", "alice")
    assert (code, out) == (2, "")
    assert expected in err
    assert "s3cret" not in err  # a password in a URL is never printed
    assert not (tmp_path / "c").exists()  # nothing was made for a bad URL


@pytest.mark.parametrize("secret", ["s3cr/et", "s3cr?et", "s3cr#et"])
def test_a_redis_password_with_url_delimiters_is_never_printed(secret):
    """review1: urlsplit ends the netloc at the first '/', '?' or '#', so such a password
    (base64 ones hold '/') is no ``parts.password``; the whole URL went into the message."""
    url = f"redis://default:{secret}@localhost:6379/m"
    code, out, err = ltm("--store", url, "list", "--user", "a")
    assert out == ""
    assert code == 2
    assert secret not in err and "s3cr" not in err


@pytest.fixture
def factories(tmp_path, monkeypatch):
    """A module ``ltm_factories`` in the current folder, as a user would write one."""
    folder = tmp_path / "chroma-of-mine"
    (tmp_path / "ltm_factories.py").write_text(
        textwrap.dedent(f"""
        import chromadb
        from chromadb.config import Settings
        from langchain_chroma import Chroma

        from langchain_ltm import LongTermMemoryStore

        def my_chroma(embeddings):
            client = chromadb.PersistentClient(
                {str(folder)!r}, settings=Settings(anonymized_telemetry=False)
            )
            return Chroma("mine", embeddings, client=client)

        def my_store(embeddings):
            return LongTermMemoryStore.from_sqlite({str(tmp_path / "mine.db")!r}, embeddings)

        def not_a_store():
            return {{"chroma": "please"}}

        def in_memory(embeddings):
            from langchain_core.vectorstores import InMemoryVectorStore

            return InMemoryVectorStore(embeddings)

        def broken():
            raise ConnectionError("no route to the vector database")

        NOT_CALLABLE = 3
        """)
    )
    monkeypatch.chdir(tmp_path)
    yield
    sys.modules.pop("ltm_factories", None)


def test_a_factory_returning_a_vectorstore_keeps_its_catalog_in_the_data_dir(factories, tmp_path):
    url = "ltm_factories:my_chroma"
    assert ltm("--store", url, "remember", "--user", "alice", "Works on payments")[0] == 0
    code, out, _ = ltm("--store", url, "recall", "--user", "alice", "--json", "job")
    assert code == 0 and json.loads(out)[0]["content"] == "Works on payments"
    catalog = tmp_path / "home" / "catalogs" / "ltm_factories.my_chroma.sqlite"
    assert catalog.is_file()


def test_a_factory_returning_a_store_is_used_as_it_is(factories, tmp_path):
    code, _, err = ltm("--store", "ltm_factories:my_store", "remember", "--user", "a", "Likes tea")
    assert code == 0, err
    with opened(f"sqlite:///{tmp_path / 'mine.db'}") as store:
        assert [f.content for f in store.list_all("a")] == ["Likes tea"]


def test_a_factory_returning_an_in_memory_vectorstore_says_it_keeps_nothing(factories):
    code, _, err = ltm("--store", "ltm_factories:in_memory", "remember", "--user", "a", "Likes tea")
    assert code == 0
    assert "ltm: note: ltm_factories:in_memory (InMemoryVectorStore) keeps nothing on disk" in err
    code, _, err = ltm("--store", "memory://", "remember", "--user", "a", "Likes tea")
    assert code == 0 and "note" not in err  # memory:// says so in --help already


@pytest.mark.parametrize(
    ("url", "code", "expected"),
    [
        ("ltm_factories:not_a_store", 2, "returned dict, not a LangChain VectorStore"),
        ("ltm_factories:NOT_CALLABLE", 2, "it is not callable"),
        ("ltm_factories:missing", 2, "no function 'missing'"),
        ("no_such_module_here:make", 2, "cannot import module 'no_such_module_here'"),
        ("ltm_factories:broken", 3, "broken() raised ConnectionError"),
    ],
)
def test_a_bad_factory_gets_a_clear_error(factories, url, code, expected):
    got, out, err = ltm("--store", url, "list", "--user", "alice")
    assert (got, out) == (code, "")
    assert expected in err and "Traceback" not in err


def test_migrate_from_a_folder_without_a_store_exits_2(tmp_path):
    (tmp_path / "empty").mkdir()
    code, _, err = ltm("migrate", "--from", f"faiss:{tmp_path / 'empty'}", "--to", "sqlite:///x.db")
    assert code == 2 and "holds no langchain-ltm store" in err
    assert ltm("--store", f"chroma:{tmp_path}/c", "remember", "--user", "a", "Likes tea")[0] == 0
    same = f"chroma:{tmp_path}/./c?collection=langchain_ltm"
    code, _, err = ltm("migrate", "--from", f"chroma:{tmp_path}/c", "--to", same)
    assert code == 2 and "the same store" in err
    code, _, err = ltm("migrate", "--from", f"chroma:{tmp_path}/c?collection=x", "--to", same)
    assert code == 2 and "no ltm-catalog-x.sqlite)" in err


def test_qdrant_scheme_and_faiss_abs_urls_create_no_store(tmp_path, monkeypatch):
    """``--store qdrant://localhost:6333`` was the embedded folder "//localhost:6333" (made
    by every command, ``list`` too); ``faiss:///abs`` skipped the missing-folder check of
    the commands that only read (both returned early for any "://")."""
    monkeypatch.chdir(tmp_path)
    # qdrant://HOST:PORT as a user writes it; HOST is a folder of tmp_path here, so that the
    # code before the fix made its folder there, not at the root of the machine
    url = f"qdrant:/{tmp_path}/srv:6333"
    for command in (["list", "--user", "a"], ["remember", "--user", "a", "Likes tea"]):
        code, out, err = ltm("--store", url, *command)
        assert (code, out) == (2, ""), err
        assert "http://HOST:6333" in err and "qdrant:PATH" in err
    assert list(tmp_path.iterdir()) == []  # no folder made
    missing = tmp_path / "fmissing"
    for command in ("list", "stats", "export"):
        code, _, err = ltm("--store", f"faiss://{missing}", command, "--user", "a")
        assert code == 1 and f"there is no folder {missing}" in err
    assert not missing.exists()
    assert ltm("--store", f"faiss://{missing}", "remember", "--user", "a", "Likes tea")[0] == 0
    code, out, _ = ltm("--store", f"faiss:{missing}", "list", "--user", "a")
    assert code == 0 and "Likes tea" in out


def test_a_qdrant_folder_named_name_colon_digits_is_reached_by_dot_slash(tmp_path, monkeypatch):
    """``--store ./backup:2024`` and ``qdrant:./backup:2024`` (what the refusal of
    ``backup:2024`` advised) exited 2 saying "'backup:2024' is not a Qdrant folder": the
    CLI's path lost its ./ on the way to from_qdrant."""
    monkeypatch.chdir(tmp_path)
    for url in ("./backup:2024", "qdrant:./backup:2024"):
        code, out, err = ltm("--store", url, "remember", "--user", "a", "Likes tea")
        assert code == 0, err
    code, out, _ = ltm("--store", "./backup:2024", "list", "--user", "a")
    assert code == 0 and "Likes tea" in out
    assert (tmp_path / "backup:2024" / "meta.json").is_file()


def test_two_collections_of_one_chroma_folder_keep_apart(tmp_path):
    mine, theirs = f"chroma:{tmp_path}/c", f"chroma:{tmp_path}/c?collection=team"
    assert ltm("--store", mine, "remember", "--user", "a", "Likes tea")[0] == 0
    assert ltm("--store", theirs, "remember", "--user", "a", "Works on payments")[0] == 0
    for url, fact in ((mine, "Likes tea"), (theirs, "Works on payments")):
        code, out, _ = ltm("--store", url, "recall", "--user", "a", "--json", fact)
        assert code == 0 and [f["content"] for f in json.loads(out)] == [fact]
    assert {p.name for p in (tmp_path / "c").glob("ltm-catalog*.sqlite")} == {
        "ltm-catalog.sqlite",
        "ltm-catalog-team.sqlite",
    }


def test_help_lists_the_vectorstore_urls(capsys):
    assert cli.main(["--help"]) == 0
    text = capsys.readouterr().out
    urls = ("chroma://HOST:PORT/COLLECTION", "chroma:PATH", "faiss:PATH", "redis://HOST:PORT/INDEX")
    for url in (*urls, "module:factory"):
        assert url in text


def test_chromadb_and_faiss_load_only_for_their_urls(tmp_path):
    code = (
        "import sys; from langchain_ltm import cli; "
        f"cli.main(['--store', 'sqlite:///{tmp_path / 'm.db'}', 'list', '--user', 'a']); "
        "print(sorted(m for m in ('chromadb', 'faiss', 'langchain_chroma') if m in sys.modules))"
    )
    env = {**os.environ, "LTM_HOME": str(tmp_path), "LTM_ENCODER_SERVER": "off"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_a_warning_while_the_store_opens_is_shown_once(tmp_path):
    """It was re-shown inside catch_warnings, recorded again, and so on until memory ran out.

    Run in a child process with a 30 s timeout and a 3 GB address-space limit, so the old
    loop fails the test instead of exhausting the machine.
    """
    (tmp_path / "warns.py").write_text(
        textwrap.dedent("""
        import warnings
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_core.vectorstores import InMemoryVectorStore

        def store():
            warnings.warn("this vector database is old", UserWarning)
            return InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
        """)
    )
    code = "from langchain_ltm import cli; raise SystemExit(cli.main(sys.argv[1:]))"

    def limit():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys; {code}",
            "--store",
            "warns:store",
            "list",
            "--user",
            "a",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "LTM_HOME": str(tmp_path / "home"), "LTM_ENCODER_SERVER": "off"},
        timeout=30,
        preexec_fn=limit,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.count("UserWarning: this vector database is old") == 1


def test_a_faiss_folder_older_than_its_catalog_gets_its_vectors_back_on_open(tmp_path):
    # a crash between a write's catalog commit and its index save: the saved index lacks
    # the last fact; opening the folder puts it back from the catalog's vectors
    import shutil

    folder = tmp_path / "f"
    url = f"faiss:{folder}"
    assert ltm("--store", url, "remember", "--user", "bob", "Lives in Lisbon")[0] == 0
    older = tmp_path / "older"
    older.mkdir()
    for name in ("index.faiss", "index.pkl"):
        shutil.copy(folder / name, older / name)
    assert ltm("--store", url, "remember", "--user", "bob", "Plays the cello")[0] == 0
    for name in ("index.faiss", "index.pkl"):  # the index as it was before the last save
        shutil.copy(older / name, folder / name)
    with opened(url) as store:
        (hit,) = store.search(("memories", "bob"), query="cello instrument", limit=1)
        assert hit.value["content"] == "Plays the cello" and hit.score is not None
        docs = store.backend.vectorstore.docstore._dict.values()
        assert sorted(d.page_content for d in docs) == ["Lives in Lisbon", "Plays the cello"]


def test_an_invalid_collection_name_is_a_usage_error_without_the_reachability_hint(tmp_path):
    """Chroma's InvalidArgumentError ("Expected a name containing 3-512 characters") came
    with "Check that it is running and reachable" and exit 3, as if the engine were down."""
    url = f"chroma:{tmp_path / 'c'}?collection=a"
    code, out, err = ltm("--store", url, "remember", "--user", "alice", "Lives in Paris")
    assert (code, out) == (2, "")
    assert "refused the request: InvalidArgumentError" in err and "3-512 characters" in err
    assert "reachable" not in err and "collection or index name" in err


def test_a_chroma_folder_whose_catalog_is_gone_refuses_a_new_one_over_its_memories(tmp_path):
    """With the folder's catalog moved away, `remember` made a new catalog over the same
    collection: the old memories were out of every later command's reach (list showed the
    new fact only, forget-user left the old text in the folder)."""
    folder = tmp_path / "c"
    url = f"chroma:{folder}"
    assert ltm("--store", url, "remember", "--user", "alice", "Lives in Paris")[0] == 0
    (folder / "ltm-catalog.sqlite").rename(tmp_path / "moved.sqlite")
    code, out, err = ltm("--store", url, "remember", "--user", "alice", "Plays the cello")
    assert (code, out) == (2, ""), err
    assert "written through another catalog" in err and "put it back as" in err
    assert not (folder / "ltm-catalog.sqlite").exists()  # nothing created
    (tmp_path / "moved.sqlite").rename(folder / "ltm-catalog.sqlite")
    code, out, _ = ltm("--store", url, "list", "--user", "alice")
    assert code == 0 and "Lives in Paris" in out


@pytest.mark.parametrize("kind", ["chroma", "faiss"])
def test_a_folder_whose_catalog_was_deleted_says_the_ways_out_and_takes_share(kind, tmp_path):
    """With a folder's catalog deleted on purpose (to start over), the refusal said only
    "put the catalog file back", and ``?share_collection=1`` was refused for chroma:PATH
    and faiss:PATH; faiss: showed the Python API's words (``vectorstore_backend(vs, ...)``).
    The message now gives the ways out in ``--store``'s words (the file that wrote them
    when it is in the folder; else share_collection=1, or the folder moved away), and
    ``?share_collection=1`` opens a second, separate store there."""
    folder = tmp_path / kind
    url = f"{kind}:{folder}" + ("?collection=mine" if kind == "chroma" else "")
    catalog = folder / ("ltm-catalog-mine.sqlite" if kind == "chroma" else "ltm-catalog.sqlite")
    assert ltm("--store", url, "remember", "--user", "alice", "Lives in Paris")[0] == 0
    kept = folder / "old-catalog.bak"
    catalog.rename(kept)  # renamed in the folder: named as the one to put back
    code, out, err = ltm("--store", url, "remember", "--user", "alice", "Plays the cello")
    assert (code, out) == (2, ""), err
    assert f"Move {kept} back to {catalog}" in err and "vectorstore_backend" not in err
    kept.unlink()  # deleted on purpose
    code, out, err = ltm("--store", url, "remember", "--user", "alice", "Plays the cello")
    assert (code, out) == (2, ""), err
    shared = f"{url}&share_collection=1" if "?" in url else f"{url}?share_collection=1"
    assert f"--store '{shared}'" in err and "move the folder away" in err
    assert "vectorstore_backend" not in err and not catalog.exists()  # nothing created
    code, out, err = ltm("--store", shared, "remember", "--user", "alice", "Plays the cello")
    assert code == 0, err
    code, out, _ = ltm("--store", url, "list", "--user", "alice")  # the new catalog opens
    assert code == 0 and "Plays the cello" in out and "Lives in Paris" not in out
    assert "Lives in Paris" in _texts_in(kind, folder)  # the earlier memory stays in the folder


def _texts_in(kind, folder):
    """Every text the Chroma collection "mine" or the FAISS index in ``folder`` holds."""
    if kind == "chroma":
        import chromadb
        from chromadb.config import Settings

        client = chromadb.PersistentClient(str(folder), Settings(anonymized_telemetry=False))
        return client.get_collection("mine").get()["documents"]
    from langchain_community.vectorstores import FAISS

    vs = FAISS.load_local(
        str(folder), cli_session.default_embeddings(), allow_dangerous_deserialization=True
    )
    return [doc.page_content for doc in vs.docstore._dict.values()]
