"""The `ltm` command, driven in-process through main() against an embedded Qdrant folder."""

import contextlib
import errno
import io
import json
import os
import sqlite3
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest

from langchain_ltm import cli
from langchain_ltm.cli import session as cli_session
from langchain_ltm.cli.io import Progress, table
from langchain_ltm.defaults import open_store
from langchain_ltm.errors import BackendError
from langchain_ltm.facts import Fact
from langchain_ltm.store import LongTermMemoryStore
from tests.fakes import KeywordEmbeddings

CARD = "my card is 4111 1111 1111 1111"


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path, monkeypatch):
    """Never touch the real data directory; no store from the environment unless a test sets it."""
    monkeypatch.setenv("LTM_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("LTM_STORE", raising=False)


@pytest.fixture
def ltm(tmp_path, capsys):
    """Run `ltm ... --store <tmp>/q`; returns (exit code, stdout, stderr)."""
    store = str(tmp_path / "q")

    def run(*args, store_url=store):
        capsys.readouterr()
        extra = ["--store", store_url] if store_url is not None else []
        code = cli.main([*args, *extra])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def as_json(out):
    return json.loads(out)


def _a_fact():
    now = datetime.now(timezone.utc)
    return Fact("f1", "u1", "Likes tea", now, now)


def _line(**fields):
    """One line of an import file: an exported fact when it has an id."""
    record = {"content": "A new fact", **fields}
    return json.dumps(record) + "\n"


def _export_lines(n):
    """``n`` valid exported facts (ids f1, f2, ...) as `ltm export` writes them."""
    return "".join(
        _line(
            id=f"f{i + 1}",
            user_id="someone",
            content=f"Fact {i}",
            created_at="2025-01-02T03:04:05.123456+00:00",
            updated_at="2025-01-02T03:04:05.123456+00:00",
            valid_from="2025-01-02T03:04:05.123456+00:00",
            history=[],
            metadata={},
        )
        for i in range(n)
    )


@contextlib.contextmanager
def opened(folder):
    """The CLI's store in ``folder`` through the Python API (closed after, for the CLI)."""
    store, _ = open_store(str(folder), embeddings=cli_session.default_embeddings())
    try:
        yield store
    finally:
        store.close()


def test_remember_prints_one_action_per_fact(ltm):
    code, out, err = ltm("remember", "--user", "alice", "Prefers answers in Spanish", "Owns a cat")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == ["ACTION", "ID", "FACT"]
    assert [line.split()[0] for line in lines[1:]] == ["created", "created"]
    assert lines[1].endswith("Prefers answers in Spanish")
    # the FACT column starts at the same offset on every line (aligned table)
    assert len({line.index(word) for line, word in zip(lines, ["FACT", "Prefers", "Owns"])}) == 1

    code, out, _ = ltm("remember", "--user", "alice", "--json", "prefers answers in spanish.")
    (record,) = as_json(out)
    assert code == 0
    assert set(record) == {
        "index",
        "text",
        "action",
        "fact",
        "previous",
        "similarity",
        "similar",
        "reason",
    }
    assert record["action"] == "duplicate" and record["similarity"] == 1.0
    assert record["similar"] == []
    assert record["fact"]["content"] == "Prefers answers in Spanish"
    assert set(record["fact"]) == set(_a_fact().to_dict())  # every field of a Fact
    assert {
        "id",
        "user_id",
        "content",
        "created_at",
        "updated_at",
        "valid_from",
        "history",
        "metadata",
    } <= set(record["fact"])
    assert "score" not in record["fact"]
    assert (record["fact"]["history"], record["fact"]["metadata"]) == ([], {})


def test_remember_lists_similar_facts_it_kept_apart(ltm):
    ltm("remember", "--user", "alice", "Likes black tea")
    code, out, _ = ltm("remember", "--user", "alice", "--json", "Enjoys drinking tea")
    (record,) = as_json(out)
    assert (code, record["action"]) == (0, "created")
    (similar,) = record["similar"]
    assert similar["content"] == "Likes black tea" and similar["reason"] == "loses_information"
    assert 0 < similar["score"] < 1
    ltm("remember", "--user", "bob", "Likes black tea")
    code, out, _ = ltm("remember", "--user", "bob", "Enjoys drinking tea")
    assert code == 0 and "kept apart from similar" in out and "'Likes black tea'" in out


def test_remember_reads_stdin_lines(ltm, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("Lives in Lisbon\n\n  Plays the cello  \n"))
    code, out, _ = ltm("remember", "--user", "alice", "--json", "-")
    assert code == 0
    assert [r["fact"]["content"] for r in as_json(out)] == ["Lives in Lisbon", "Plays the cello"]

    monkeypatch.setattr(sys, "stdin", io.StringIO("\n \n"))
    code, _, err = ltm("remember", "--user", "alice", "-")
    assert code == 2 and "stdin was empty" in err


def test_an_interrupted_remember_says_how_many_facts_were_stored(ltm, monkeypatch):
    """Ctrl-C during ``remember -`` of many lines said only "interrupted"."""
    from langchain_ltm.facts.api import FactAPI

    real, calls = FactAPI.remember, []

    def remember(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(FactAPI, "remember", remember)
    said = "".join(f"Fact number {i} about thing {i}\n" for i in range(300))
    monkeypatch.setattr(sys, "stdin", io.StringIO(said))
    code, _, err = ltm("remember", "--user", "alice", "-")
    assert code != 0
    assert "the first 256 of 300 facts were remembered" in err
    monkeypatch.setattr(FactAPI, "remember", real)
    assert len(as_json(ltm("list", "--user", "alice", "--json")[1])) == 256


def test_an_interrupted_remember_says_truthfully_how_to_finish(ltm, tmp_path, monkeypatch):
    """It said remembering all the facts again was safe ("those come back duplicate"), but
    a text a later one had updated came back as an update: history [blue, green, blue]."""
    from langchain_ltm.cli.commands import facts as fact_commands
    from langchain_ltm.facts.standalone import FactStore

    store = f"sqlite:///{tmp_path / 'm.db'}"
    texts = ["My favourite colour is blue", "My favourite colour is now green"]
    monkeypatch.setattr(fact_commands, "BATCH_SIZE", 1)
    remember = FactStore.remember
    calls = []

    def interrupted(self, *args, **kwargs):  # Ctrl-C as the second batch starts
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return remember(self, *args, **kwargs)

    monkeypatch.setattr(FactStore, "remember", interrupted)
    code, _, err = ltm("remember", "--user", "a", *texts, store_url=store)
    assert code == 130 and "the first 1 of 2 facts were remembered" in err
    assert "safe" not in err and "come back duplicate" not in err
    assert "remember the other 1 (from fact 2 on)" in err and "a new version" in err
    monkeypatch.setattr(FactStore, "remember", remember)
    # what it says: the rest alone finishes it, as one run would have
    assert ltm("remember", "--user", "a", texts[1], store_url=store)[0] == 0
    code, out, _ = ltm("list", "--user", "a", "--json", store_url=store)
    (fact,) = as_json(out)
    assert [v["content"] for v in fact["history"]] + [fact["content"]] == texts
    # and all of them again stores the first once more, as a new version (not a duplicate)
    code, out, _ = ltm("remember", "--user", "a", "--json", *texts, store_url=store)
    assert [r["action"] for r in as_json(out)] == ["updated", "updated"]


def test_stdin_lines_end_at_newlines_only(ltm, monkeypatch):
    """``splitlines()`` also split at U+2028, U+0085 and form feeds: one fact became two."""
    said = "Likes jazz\u2028and blues\nNotes\x0cpage two\r\nSays \x85hi\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(said))
    code, out, _ = ltm("remember", "--user", "alice", "--json", "-")
    assert code == 0
    assert len(as_json(out)) == 3
    assert {r["fact"]["content"] for r in as_json(out)} == {
        "Likes jazz\u2028and blues",
        "Notes\x0cpage two",
        "Says \x85hi",
    }


@pytest.mark.parametrize("at", ["0001-01-01T00:00:00+01:00", "0001-01-01T00:30:00+05:00"])
def test_a_time_out_of_range_in_utc_is_a_usage_error(ltm, tmp_path, at):
    code, _, err = ltm("remember", "--user", "alice", "--at", at, "Was born long ago")
    assert code == 2 and "out of range in UTC" in err and "Traceback" not in err
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps({"content": "Was born long ago", "created_at": at}) + "\n")
    code, _, err = ltm("import", "--user", "alice", str(path))
    assert code == 2 and "Traceback" not in err


def test_a_bom_or_invisible_marks_change_no_fact(ltm, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("\ufeffsame text\r\nother\u200b text\n"))
    code, out, _ = ltm("remember", "--user", "alice", "--json", "-")
    assert code == 0
    assert [r["fact"]["content"] for r in as_json(out)] == ["same text", "other\u200b text"]
    code, out, _ = ltm("remember", "--user", "alice", "--json", "same text", "other text")
    assert [r["action"] for r in as_json(out)] == ["duplicate", "duplicate"]
    for invisible in ("\ufeff", "\u200b", "\u200b\u00ad "):
        code, _, err = ltm("remember", "--user", "alice", invisible)
        assert code == 2 and "no content" in err, invisible
    assert len(as_json(ltm("list", "--user", "alice", "--json")[1])) == 2


READ_OR_DELETE = (
    ("list", "--user", "a"),
    ("recall", "--user", "a", "tea"),
    ("forget", "--user", "a", "abcd1234"),
    ("clear", "--user", "a", "--yes"),
    ("stats",),
    ("export", "--user", "a"),
    ("export-user-data", "--user", "a"),
    ("forget-user", "--user", "a", "--yes"),
)
"""Commands that only read or delete: none of them creates the store it is given."""


def test_a_mistyped_sqlite_store_is_not_created_by_a_command_that_reads(ltm, tmp_path):
    typo = tmp_path / "typo" / "memories.db"
    url = f"sqlite:///{typo}"
    for args in READ_OR_DELETE:
        code, _, err = ltm(*args, store_url=url)
        assert code == 1 and f"there is no SQLite file at {typo}" in err, (args, err)
    assert not typo.parent.exists()  # neither the file nor its folder was made
    assert ltm("remember", "--user", "a", "Likes tea", store_url=url)[0] == 0  # this one creates
    code, out, _ = ltm("list", "--user", "a", store_url=url)
    assert code == 0 and "Likes tea" in out


@pytest.mark.parametrize("form", ["{}", "qdrant:{}", "chroma:{}", "faiss:{}"])
def test_a_mistyped_store_folder_is_not_created_by_a_command_that_reads(ltm, tmp_path, form):
    """A folder store was created by the first command given it, even one that only reads:
    a typo in --store made a new, empty store and reported nothing stored."""
    typo = tmp_path / "typo" / "memories"
    url = form.format(typo)
    for args in READ_OR_DELETE:
        code, out, err = ltm(*args, store_url=url)
        assert (code, out) == (1, ""), (args, err)
        assert f"there is no folder {typo}: nothing to read or delete" in err, (args, err)
    assert not typo.parent.exists()
    assert ltm("remember", "--user", "a", "Likes tea", store_url=url)[0] == 0  # this one creates
    code, out, _ = ltm("list", "--user", "a", store_url=url)
    assert code == 0 and "Likes tea" in out


@pytest.mark.parametrize("form", ["{}", "qdrant:{}", "chroma:{}", "faiss:{}"])
def test_an_empty_folder_is_not_made_a_store_by_a_command_that_reads(ltm, tmp_path, form):
    """An existing folder without a store in it was turned into a new, empty store by
    `ltm list` (Qdrant files or a Chroma/FAISS catalog written into it), which reported
    nothing stored; `ltm migrate --from` the same folder already refused it."""
    empty = tmp_path / "empty"
    empty.mkdir()
    url = form.format(empty)
    for args in READ_OR_DELETE:
        code, out, err = ltm(*args, store_url=url)
        assert (code, out) == (1, ""), (args, err)
        assert f"{empty} holds no " in err and "nothing to read or delete" in err, (args, err)
    assert list(empty.iterdir()) == []
    code, _, err = ltm(
        "migrate", "--from", url, "--to", f"sqlite:///{tmp_path / 'to.db'}", store_url=None
    )
    assert code == 2 and f"--from {url}: {empty} holds no " in err
    assert list(empty.iterdir()) == [] and not (tmp_path / "to.db").exists()


def test_recall_merges_phrasings_and_lists(ltm):
    ltm("remember", "--user", "alice", "Prefers answers in Spanish", "Works on the payments team")
    code, out, _ = ltm(
        "recall", "--user", "alice", "-q", "which language?", "-q", "team", "--limit", "5", "--json"
    )
    facts = as_json(out)
    assert code == 0
    assert sorted(f["content"] for f in facts) == [
        "Prefers answers in Spanish",
        "Works on the payments team",
    ]
    assert all(isinstance(f["score"], float) and f["superseded"] is False for f in facts)
    assert facts == sorted(facts, key=lambda f: -f["score"])

    code, out, _ = ltm("recall", "--user", "alice", "language", "--limit", "1")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["SCORE", "ID", "CREATED", "UPDATED", "FACT"]
    assert len(lines) == 2 and lines[1].endswith("Prefers answers in Spanish")

    code, out, _ = ltm("list", "--user", "alice", "--json")
    listed = as_json(out)
    assert code == 0 and len(listed) == 2
    assert not any("score" in f for f in listed)  # a listed fact has no score
    code, out, _ = ltm("list", "--user", "alice")
    assert out.splitlines()[0].split() == ["ID", "CREATED", "UPDATED", "FACT"]


def test_users_are_isolated(ltm):
    ltm("remember", "--user", "alice@example.com", "Prefers answers in Spanish")
    code, out, _ = ltm("recall", "--user", "bob", "-q", "Prefers answers in Spanish", "--json")
    assert (code, as_json(out)) == (0, [])  # nothing found is not an error
    code, out, _ = ltm("recall", "--user", "bob", "-q", "language")
    assert code == 0 and "No facts of user 'bob' match" in out
    code, out, _ = ltm("list", "--user", "bob", "--json")
    assert as_json(out) == []
    code, out, _ = ltm("export", "--user", "bob")
    assert (code, out) == (0, "")
    alice_id = as_json(ltm("list", "--user", "alice@example.com", "--json")[1])[0]["id"]
    code, _, err = ltm("forget", "--user", "bob", alice_id)
    assert code == 1 and "no fact with id" in err
    assert len(as_json(ltm("list", "--user", "alice@example.com", "--json")[1])) == 1


def test_forget_and_unknown_id(ltm):
    ltm("remember", "--user", "alice", "Owns a cat")
    (fact,) = as_json(ltm("list", "--user", "alice", "--json")[1])
    code, out, err = ltm("forget", "--user", "alice", fact["id"], "--json")
    assert (code, err) == (0, "")
    assert as_json(out) == {"user_id": "alice", "id": fact["id"], "forgotten": True}
    code, out, err = ltm("forget", "--user", "alice", fact["id"])
    assert code == 1 and out == ""
    assert err.startswith("ltm: error: user 'alice' has no fact with id")
    assert "ltm list --user alice" in err


def test_clear_needs_yes(ltm):
    ltm("remember", "--user", "alice", "Owns a cat", "Lives in Lisbon")
    code, _, err = ltm("clear", "--user", "alice")
    assert code == 2 and "--yes" in err
    assert len(as_json(ltm("list", "--user", "alice", "--json")[1])) == 2  # nothing deleted
    code, out, _ = ltm("clear", "--user", "alice", "--yes", "--json")
    assert (code, as_json(out)) == (0, {"user_id": "alice", "deleted": 2})
    code, out, _ = ltm("clear", "--user", "alice", "--yes")
    assert (code, out.strip()) == (0, "Deleted 0 items of user 'alice'.")


def test_export_import_round_trip_into_another_user(ltm, tmp_path):
    facts = ["Prefers answers in Spanish", "Works on the payments team", "Owns a cat named Miso"]
    ltm("remember", "--user", "alice", *facts)
    code, stdout_export, _ = ltm("export", "--user", "alice")
    assert code == 0
    lines = [json.loads(line) for line in stdout_export.splitlines()]
    listed = as_json(ltm("list", "--user", "alice", "--json")[1])
    assert lines == listed  # export writes the list_all dicts, oldest first
    assert sorted(r["content"] for r in lines) == sorted(facts)
    assert all(r["user_id"] == "alice" for r in lines)

    path = tmp_path / "alice.jsonl"
    code, out, _ = ltm("export", "--user", "alice", "-o", str(path), "--json")
    assert code == 0 and as_json(out) == {
        "user_id": "alice",
        "path": str(path),
        "exported": 3,
        "client_items": 0,
        "other_items_left_out": 0,
    }
    assert path.read_text(encoding="utf-8") == stdout_export

    code, out, err = ltm("import", "--user", "bob", str(path), "--json")
    assert (code, err) == (0, "")  # stderr is not a TTY: no progress bar
    assert as_json(out) == {
        "user_id": "bob",
        "read": 3,
        "dry_run": False,
        "restored": 3,
        "conflicts": 0,
        "expired": 0,
        "created": 0,
        "duplicate": 0,
        "updated": 0,
        "rejected": 0,
        "rejected_lines": [],
        "conflict_lines": [],
    }
    bob = as_json(ltm("list", "--user", "bob", "--json")[1])
    assert sorted(f["content"] for f in bob) == sorted(facts)
    assert all(f["user_id"] == "bob" for f in bob)
    # restored as they were: same ids, timestamps and versions, only the owner differs
    assert [dict(f, user_id="alice") for f in bob] == listed

    code, out, _ = ltm("import", "--user", "bob", str(path), "--batch-size", "2")
    assert code == 0
    assert out.strip() == "Read 3 facts for user 'bob': 3 restored, 0 conflicts."
    assert as_json(ltm("list", "--user", "bob", "--json")[1]) == bob  # importing twice: no change

    code, out, _ = ltm("import", "--user", "bob", str(path), "--merge", "--batch-size", "2")
    assert code == 0
    assert out.strip() == (
        "Read 3 facts for user 'bob': 0 created, 3 duplicate, 0 updated, 0 rejected."
    )
    assert as_json(ltm("list", "--user", "bob", "--json")[1]) == bob


def test_import_accepts_fact_lines_and_reports_rejections(ltm, tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(
        '{"fact": "Lives in Lisbon"}\n\n{"content": "Plays the cello", "extra": 1}\n'
        + json.dumps({"fact": CARD})
        + "\n",
        encoding="utf-8",
    )
    code, out, err = ltm("import", "--user", "carol", str(path), "--json")
    summary = as_json(out)
    assert code == 2 and "1 of 3 lines were not stored (1 rejected, 0 conflicts" in err
    assert (summary["read"], summary["created"], summary["rejected"]) == (3, 2, 1)
    assert summary["rejected_lines"][0]["line"] == 4
    assert "card" in summary["rejected_lines"][0]["reason"]
    code, out, _ = ltm("import", "--user", "carol", str(path))
    assert "LINE  REJECTED BECAUSE" in out and "4111" not in out


def test_import_reports_lines_in_order_and_no_others_when_there_are_none(ltm, tmp_path):
    """A dry run listed rejected lines first (then restored, then merged ones), and a file
    of one rejected line said "1 of 1 lines were not stored ...; the others were"."""
    path = tmp_path / "in.jsonl"
    exported = _export_lines(1)
    path.write_text(_line(content="Plays the cello") + json.dumps({"fact": CARD}) + "\n" + exported)
    code, out, err = ltm("import", "--user", "carol", str(path), "--dry-run", "--json")
    assert code == 2 and "1 of 3 lines would not be stored" in err
    assert "; the others would be." in err
    report = as_json(out)
    assert [(r["line"], r["action"]) for r in report["lines"]] == [
        (1, "created"),
        (2, "rejected"),
        (3, "restored"),
    ]
    code, out, _ = ltm("import", "--user", "carol", str(path), "--dry-run")
    assert [line.split()[0] for line in out.splitlines()[3:]] == ["1", "2", "3"]
    path.write_text(json.dumps({"fact": CARD}) + "\n")
    code, _, err = ltm("import", "--user", "carol", str(path))
    assert code == 2 and "1 of 1 lines were not stored" in err and "others" not in err


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"content": "ok"}\n{"content": "fine"}\nnot json\n', "line 3: not valid JSON"),
        ('{"content": "ok"}\n["a list"]\n', "line 2: each line must be one JSON object"),
        ('{"content": "ok"}\n{"other": "x"}\n', "line 2: each line must be one JSON object"),
        ('{"content": "ok"}\n{"content": "   "}\n', "line 2: fact is empty"),
        (b'{"content": "caf\xe9"}\n', "line 1: not UTF-8 text"),
        # a traceback (RecursionError) and Python's own advice, naming no line
        (
            '{"content": "ok"}\n{"content": "x", "m": ' + "[" * 5000 + "]" * 5000 + "}\n",
            "line 2: its JSON nests too deeply",
        ),
        (
            '{"content": "ok"}\n{"content": "x", "n": ' + "9" * 5000 + "}\n",
            "line 2: it holds a number of more than 4,300 digits",
        ),
        ('{"content": "ok"}\n' + json.dumps({"content": "x" * 2001}), "line 2: fact is 2,001"),
        # exported facts: the first bad line stops the file before the first batch is written
        (_export_lines(3) + _line(id="z", created_at="yesterday"), "line 4: created_at must be"),
        (_export_lines(3) + _line(id="a@1"), "line 4: id 'a@1' may not contain '@'"),
        (_export_lines(3) + _line(id=7), "line 4: id must be"),
        (_export_lines(3) + _line(id="f1", content="Other"), "line 4: the same id as line 1"),
        (_export_lines(3) + _line(id="z", history="Had a dog"), "line 4: history must be a list"),
        # a text the store does not take stops a line without an id (new input, as
        # remember's); an exported line with one is rejected alone (test_export_counts_...)
        (
            _export_lines(3) + _line(history=[{"content": " "}]),
            "line 4: history[0]: content",
        ),
        (_export_lines(3) + _line(id="z", history=[{"content": "a", "valid_to": 5}]), "valid_to"),
        (_export_lines(3) + _line(id="z", metadata=["x"]), "line 4: metadata must be an object"),
        # an earlier text's own expiry: checked as the line's own (it was dropped unread)
        (
            _export_lines(3) + _line(id="z", history=[{"content": "a", "expires_at": "soon"}]),
            "line 4: history[0]: expires_at must be",
        ),
        (
            _export_lines(3)
            + _line(
                id="z",
                history=[{"content": "a", "expires_at": "2999-01-01T00:00Z", "ttl_minutes": -1}],
            ),
            "line 4: history[0]: ttl_minutes must be a positive number",
        ),
        # a line without an id: its history is checked like an exported line's (it was dropped)
        (_line(history=[{"content": "a", "valid_from": "nope"}]), "line 1: history[0]: valid_from"),
        # a NUL passed the file check, then failed on Postgres part way through the file
        (_export_lines(3) + _line(id="bad\x00id"), "line 4: id 'bad\\x00id' contains a NUL"),
        (_export_lines(3) + _line(id="z", content=None), "line 4: each line must be one JSON"),
    ],
)
@pytest.mark.parametrize("mode", [[], ["--merge"], ["--merge", "--dry-run"]])
def test_import_bad_line_names_it_and_stores_nothing(ltm, tmp_path, content, expected, mode):
    path = tmp_path / "bad.jsonl"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    code, out, err = ltm("import", "--user", "dave", str(path), "--batch-size", "1", *mode)
    assert code == 2 and out == ""
    assert err.startswith("ltm: error: ") and expected in err and "Traceback" not in err
    if (tmp_path / "q").exists():  # opened to read its limits; nothing written
        assert as_json(ltm("list", "--user", "dave", "--json")[1]) == []


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ({"created_at": "2921-01-01T00:00:00+00:00"}, "created_at"),
        ({"ttl_minutes": "sixty", "expires_at": "2999-01-01T00:00:00+00:00"}, "ttl_minutes"),
        ({"pinned": "yes"}, "pinned must be true or false"),
    ],
)
def test_import_checks_every_line_before_writing_and_names_its_file_line(
    ltm, tmp_path, bad, expected
):
    """A line only the store's own checks refuse (a time in the future, a bad TTL) was found
    in its batch, after the batches before it were stored, and named "record 44"."""
    path = tmp_path / "export.jsonl"
    lines = _export_lines(30).splitlines(keepends=True)
    lines[29] = _line(**{**json.loads(lines[29]), **bad})
    path.write_text("".join(lines), encoding="utf-8")
    code, out, err = ltm("import", "--user", "dave", str(path), "--batch-size", "4")
    assert code == 2 and out == ""
    assert f"{path}, line 30: " in err and expected in err and "Traceback" not in err
    if (tmp_path / "q").exists():  # a line refused by the file check: not even opened
        assert as_json(ltm("list", "--user", "dave", "--json")[1]) == []


def test_import_messages_name_the_command_lines_flag_and_count_history_from_0(ltm, tmp_path):
    """A time in the future told the command's user to import with mode="merge" (the
    Python argument), and one history entry was history[1] in one message, history[0] in
    another."""
    path = tmp_path / "in.jsonl"
    path.write_text(_line(id="f1", created_at="2999-01-01T00:00:00+00:00"), encoding="utf-8")
    code, _, err = ltm("import", "--user", "u", str(path))
    assert code == 2 and "created_at" in err and "ltm import --merge" in err
    entry = {"content": "Likes coffee", "valid_from": "2024-01-01T00:00:00+00:00"}
    for bad, expected in (
        ({**entry, "valid_from": "nope"}, "history[0]: valid_from must be"),
        ({**entry, "valid_to": "2023-01-01T00:00:00+00:00"}, "history[0]: valid_to 2023"),
    ):
        path.write_text(_line(id="f1", history=[bad]), encoding="utf-8")
        code, _, err = ltm("import", "--user", "u", str(path))
        assert code == 2 and f"{path}, line 1: {expected}" in err, err


def test_a_line_without_an_id_keeps_its_history_and_expiry(ltm, tmp_path):
    """`ltm import` kept only the text of a line without an id and dropped its ``history``,
    where ``import_user(..., "merge")`` re-decides every text of it; and such a line whose
    ``expires_at`` had passed stopped the import on a ``zip()`` error."""
    history = [
        {
            "content": "Has a pet parrot called Polly",
            "valid_from": "2020-01-01T00:00:00+00:00",
            "valid_to": "2021-01-01T00:00:00+00:00",
        }
    ]
    line = {"content": "Works at Globex as CTO", "valid_from": "2021-01-01T00:00:00+00:00"}
    path = tmp_path / "plain.jsonl"
    path.write_text(
        json.dumps({**line, "history": history})
        + "\n"
        + _line(content="Likes tea", expires_at="2020-01-01T00:00:00+00:00"),
        encoding="utf-8",
    )
    code, out, _ = ltm("import", "--user", "dave", str(path), "--dry-run", "--json")
    assert code == 0
    assert [(r["line"], r["action"], r["content"]) for r in as_json(out)["lines"]] == [
        (1, "created", "Has a pet parrot called Polly"),
        (1, "created", "Works at Globex as CTO"),
        (2, "expired", "Likes tea"),
    ]
    for n, extra in enumerate(([], ["--merge"])):
        url = f"sqlite:///{tmp_path}/s{n}.db"
        code, out, err = ltm("import", "--user", "dave", str(path), *extra, "--json", store_url=url)
        assert (code, err) == (0, "")
        assert (as_json(out)["created"], as_json(out)["expired"]) == (2, 1)
        listed = as_json(ltm("list", "--user", "dave", "--json", store_url=url)[1])
        assert sorted((f["content"], f["valid_from"][:4]) for f in listed) == [
            ("Has a pet parrot called Polly", "2020"),
            ("Works at Globex as CTO", "2021"),
        ]


def test_import_keeps_each_earlier_texts_own_expiry(ltm, tmp_path, monkeypatch):
    """`ltm import` rebuilt each history entry from its text, times and metadata: an
    earlier text's own ``expires_at`` and ``ttl_minutes`` were dropped, so a text meant to
    expire was kept for good, and came back once expired (``import_user`` leaves it out)."""
    import langchain_ltm._clock as clock

    url = f"sqlite:///{tmp_path}/src.db"
    with opened(url) as store:
        paris = store.remember("carol", "Lives in Paris", ttl=60).fact
        store.update_fact("carol", paris.id, "Lives in Berlin")
        assert store.remember("carol", "Lives in Berlin").action == "duplicate"  # for good
    path = tmp_path / "carol.jsonl"
    assert ltm("export", "--user", "carol", "-o", str(path), store_url=url)[0] == 0
    (exported,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert exported["expires_at"] is None and exported["history"][0]["ttl_minutes"] == 60
    copy = f"sqlite:///{tmp_path}/copy.db"
    assert ltm("import", "--user", "carol", str(path), store_url=copy)[0] == 0
    assert ltm("export", "--user", "carol", store_url=copy)[1] == path.read_text()
    # an hour later Paris has expired: neither a restore nor a merge brings it back
    later = datetime.now(timezone.utc) + timedelta(minutes=61)
    monkeypatch.setattr(clock, "utcnow", lambda: later)
    for n, extra in enumerate(([], ["--merge"])):
        late = f"sqlite:///{tmp_path}/late{n}.db"
        code, _, err = ltm("import", "--user", "carol", str(path), *extra, store_url=late)
        assert (code, err) == (0, "")
        (fact,) = as_json(ltm("list", "--user", "carol", "--json", store_url=late)[1])
        assert (fact["content"], fact["history"]) == ("Lives in Berlin", [])
    with opened(copy) as store:  # and the restored copy lost it when the source did
        (fact,) = store.list_all("carol")
        assert (fact.content, fact.history) == ("Lives in Berlin", ())


def test_import_from_stdin(ltm, monkeypatch):
    data = json.dumps({"content": "Lives in Lisbon"}) + "\n" + json.dumps({"fact": "Has a dog"})
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data.encode("utf-8"))))
    code, out, _ = ltm("import", "--user", "erin", "-", "--json")
    assert code == 0 and as_json(out)["created"] == 2


def test_import_restores_an_export_exactly(ltm, tmp_path):
    """Export lines (with versions) go through `ltm import` into another store unchanged."""
    with opened(tmp_path / "q") as store:
        kid = store.remember("alice", "Has one kid").fact
        store.remember("alice", ["Lives in Paris", "Has two kids now"])
        store.update_fact("alice", kid.id, "Has three kids")
        put_ns = store.user_namespace("alice")
        item = store.get(put_ns, kid.id)
        store.put(put_ns, kid.id, {**item.value, "source": "chat"}, index=["content"])
    path = tmp_path / "alice.jsonl"
    assert ltm("export", "--user", "alice", "-o", str(path))[0] == 0
    exported = [json.loads(line) for line in path.read_text().splitlines()]
    versions = {r["content"]: [v["content"] for v in r["history"]] for r in exported}
    assert versions["Has three kids"][0] == "Has one kid"  # versions were made
    assert next(r for r in exported if r["id"] == kid.id)["metadata"] == {"source": "chat"}

    other = str(tmp_path / "other")
    for _ in range(2):  # restoring twice changes nothing
        code, out, err = ltm("import", "--user", "alice", str(path), "--json", store_url=other)
        assert (code, err) == (0, "")
        assert (as_json(out)["restored"], as_json(out)["conflicts"]) == (2, 0)
        code, out, _ = ltm("export", "--user", "alice", store_url=other)
        assert out == path.read_text()  # same ids, text, timestamps, versions, metadata
    code, out, _ = ltm("recall", "--user", "alice", "how many children?", "--json", store_url=other)
    assert as_json(out)[0]["content"] == "Has three kids"


def test_import_mixes_exported_and_new_lines(ltm, tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(
        _export_lines(1)
        + _line(content="Plays the cello")
        + json.dumps("Lives in Lisbon")
        + "\n"
        + json.dumps({"fact": "Has a dog"}),
        encoding="utf-8",
    )
    code, out, _ = ltm("import", "--user", "erin", str(path), "--json")
    summary = as_json(out)
    assert code == 0
    assert (summary["read"], summary["restored"], summary["created"]) == (4, 1, 3)
    listed = as_json(ltm("list", "--user", "erin", "--json")[1])
    assert sorted(f["content"] for f in listed) == [
        "Fact 0",
        "Has a dog",
        "Lives in Lisbon",
        "Plays the cello",
    ]
    restored = next(f for f in listed if f["id"] == "f1")
    assert restored["created_at"] == "2025-01-02T03:04:05.123456+00:00"


def test_import_restores_a_0_1_export(ltm, tmp_path):
    """0.1 wrote ``history`` as a list of earlier texts and a ``score``."""
    old = {
        "id": "3f2c",
        "user_id": "alice",
        "content": "Lives in Berlin",
        "created_at": "2025-01-01T00:00:00+00:00",
        "updated_at": "2025-02-01T00:00:00+00:00",
        "score": None,
        "history": ["Lives in Paris"],
    }
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(old) + "\n", encoding="utf-8")
    code, out, _ = ltm("import", "--user", "alice", str(path), "--json")
    assert (code, as_json(out)["restored"]) == (0, 1)
    (fact,) = as_json(ltm("list", "--user", "alice", "--json")[1])
    assert (fact["id"], fact["content"], fact["created_at"]) == (
        "3f2c",
        "Lives in Berlin",
        old["created_at"],
    )
    assert fact["history"] == [
        {
            "content": "Lives in Paris",
            "valid_from": "2025-01-01T00:00:00+00:00",
            "valid_to": "2025-02-01T00:00:00+00:00",
            "metadata": {},
        }
    ]
    assert fact["valid_from"] == "2025-02-01T00:00:00+00:00"


def test_import_of_an_export_holding_one_text_twice_restores_the_first(ltm, tmp_path):
    """An export holds two facts with one text when a client put it twice (LangMem's
    create): the file was refused whole ("the same text as line 1"), nothing restored."""
    path = tmp_path / "in.jsonl"
    twice = _export_lines(2) + _line(**{**json.loads(_export_lines(1)), "id": "f3"})
    path.write_text(twice, encoding="utf-8")
    code, out, _ = ltm("import", "--user", "alice", str(path), "--json")
    summary = as_json(out)
    assert code == 2  # as for any conflict: a line was left out
    assert (summary["restored"], summary["conflicts"]) == (2, 1)
    assert summary["conflict_lines"] == [{"line": 3, "id": "f3", "reason": "earlier_record"}]
    listed = as_json(ltm("list", "--user", "alice", "--json")[1])
    assert sorted((f["id"], f["content"]) for f in listed) == [("f1", "Fact 0"), ("f2", "Fact 1")]


def test_import_restore_reports_secrets_and_conflicts(ltm, tmp_path):
    ltm("remember", "--user", "alice", "Lives in Paris")
    path = tmp_path / "in.jsonl"
    path.write_text(
        _line(id="x1", content="Lives in Paris")  # the user has this text as another fact
        + _line(id="x2", content=CARD)
        + _line(id="x3", content="Plays the cello"),
        encoding="utf-8",
    )
    code, out, _ = ltm("import", "--user", "alice", str(path), "--json")
    summary = as_json(out)
    assert code == 2  # as remember: lines were left out
    assert (summary["restored"], summary["conflicts"], summary["rejected"]) == (1, 1, 1)
    assert summary["conflict_lines"] == [{"line": 1, "id": "x1", "reason": "same_text"}]
    assert (
        summary["rejected_lines"][0]["line"] == 2
        and "card" in summary["rejected_lines"][0]["reason"]
    )
    assert "4111" not in out
    listed = as_json(ltm("list", "--user", "alice", "--json")[1])
    assert sorted((f["id"] == "x3", f["content"]) for f in listed) == [
        (False, "Lives in Paris"),
        (True, "Plays the cello"),
    ]
    code, out, _ = ltm("import", "--user", "alice", str(path))
    assert "NOT RESTORED" in out and "--merge" in out and "4111" not in out


def test_a_secret_in_an_exported_history_is_refused_like_one_in_its_text(ltm, tmp_path):
    path = tmp_path / "in.jsonl"
    history = [{"content": f"My card is {CARD}", "valid_from": "2024-01-01T00:00:00+00:00"}]
    path.write_text(
        _line(id="s1", content="Pays by bank transfer", history=history)
        + _line(id="s2", content="Plays the cello"),
        encoding="utf-8",
    )
    code, out, _ = ltm("import", "--user", "alice", str(path), "--json")
    summary = as_json(out)
    assert code == 2 and (summary["restored"], summary["rejected"]) == (1, 1)
    assert summary["rejected_lines"][0]["reason"].startswith("history[0]: ")
    exported = ltm("export", "--user", "alice")[1]
    assert CARD not in exported and "Pays by bank transfer" not in exported


def test_import_checks_only_what_it_would_store(ltm, tmp_path):
    """`ltm import` refused a whole line over a secret in an earlier text that had already
    expired, which import_user drops (storing the harmless current text); it refused a line
    that had expired whole too. It now checks what would be stored: the text, its metadata
    and the earlier versions still alive (named by their place in the line)."""
    gone = {
        "content": "password is hunter22",
        "valid_from": "2023-01-01T00:00:00+00:00",
        "valid_to": "2023-06-01T00:00:00+00:00",
        "expires_at": "2023-07-01T00:00:00+00:00",
    }
    alive = {"content": CARD, "valid_from": "2023-06-01T00:00:00+00:00"}
    alive["valid_to"] = "2024-01-01T00:00:00+00:00"
    old = {"created_at": "2023-01-01T00:00:00+00:00", "updated_at": "2024-01-01T00:00:00+00:00"}
    old["valid_from"] = old["updated_at"]
    path = tmp_path / "in.jsonl"
    path.write_text(
        _line(id="f1", content="Likes tea", history=[gone], **old)  # only an expired secret
        + _line(id="f2", content="Likes coffee", history=[gone, alive], **old)  # a live one
        + _line(id="f3", content=CARD, expires_at="2024-06-01T00:00:00+00:00", **old)  # all gone
        + _line(id="f4", content="Plays chess", metadata={"note": CARD})
        + _line(content="Plays go", history=[gone]),  # merged: the same texts are read
        encoding="utf-8",
    )
    for n, extra in enumerate(([], ["--merge"])):
        url = f"sqlite:///{tmp_path}/s{n}.db"
        code, out, _ = ltm("import", "--user", "alice", str(path), *extra, "--json", store_url=url)
        summary = as_json(out)
        assert code == 2 and "4111" not in out and "hunter22" not in out
        rejected = {r["line"]: r["reason"] for r in summary["rejected_lines"]}
        assert sorted(rejected) == [2, 4]
        assert rejected[2].startswith("history[1]: Not stored")  # its place in the line
        assert rejected[4].startswith("metadata 'note': Not stored")
        assert summary["expired"] == 1
        listed = as_json(ltm("list", "--user", "alice", "--json", store_url=url)[1])
        assert sorted(f["content"] for f in listed) == ["Likes tea", "Plays go"]


@pytest.mark.parametrize(
    "form", ["sqlite:///{}.db", "{}", "qdrant:{}", "chroma:{}", "faiss:{}", "default"]
)
def test_a_dry_run_import_creates_no_store(ltm, tmp_path, form):
    """`ltm import --dry-run` ("nothing written") created the store it was given, so a
    mistyped path became a store that `ltm list` then read as holding nothing."""
    typo = tmp_path / "typo" / "memories"
    path = tmp_path / "in.jsonl"
    path.write_text(_line(content="Lives in Paris") + json.dumps("Owns a cat") + "\n")
    url = None if form == "default" else form.format(typo)
    for mode in ([], ["--merge"]):
        code, out, err = ltm("import", "--user", "a", str(path), *mode, "--dry-run", store_url=url)
        assert code == 0, err
        assert out.startswith("Dry run, nothing written: importing 2 facts"), out
        assert "2 created" in out
    assert not typo.parent.exists() and not (tmp_path / "home").exists()
    code, _, err = ltm("list", "--user", "a", store_url=url)
    assert code == (0 if form == "default" else 1), err  # the default store reads as empty


@pytest.mark.parametrize("mode", [[], ["--merge"]])
def test_an_import_ends_alike_at_every_batch_size_and_as_its_dry_run_says(ltm, tmp_path, mode):
    """An import of "one kid", "two kids", "one kid": the dry run (one call) and a batch
    holding all three made "one kid" current again; `--batch-size 1` or 2 (or the default
    256 with the repeat past line 256) kept "two kids" current, the last line a duplicate
    of the replaced text."""
    path = tmp_path / "kids.jsonl"
    texts = ["I have one kid", "I have two kids", "I have one kid"]
    path.write_text("".join(json.dumps(t) + "\n" for t in texts), encoding="utf-8")
    counts = ("created", "duplicate", "updated")
    code, out, err = ltm("import", "--user", "a", str(path), *mode, "--dry-run", "--json")
    assert (code, err) == (0, "")
    said = as_json(out)
    assert [r["action"] for r in said["lines"]] == ["created", "updated", "updated"]
    for size in ("1", "2", "3"):
        url = f"sqlite:///{tmp_path}/b{size}.db"
        args = ("import", "--user", "a", str(path), *mode, "--batch-size", size, "--json")
        code, out, err = ltm(*args, store_url=url)
        assert (code, err) == (0, "")
        assert {k: as_json(out)[k] for k in counts} == {k: said[k] for k in counts}, size
        (fact,) = as_json(ltm("list", "--user", "a", "--json", store_url=url)[1])
        assert fact["content"] == "I have one kid", size
        assert [h["content"] for h in fact["history"]] == texts[:2]


@pytest.mark.parametrize("mode", [[], ["--merge"]])
def test_a_dated_import_out_of_order_ends_alike_at_every_batch_size(ltm, tmp_path, mode):
    """ "one kid" 2022, "two kids" 2021, "one kid" 2020: the dry run (one call) kept three
    versions, `--batch-size 1` or 2 made the last line a duplicate and lost 2020."""
    path = tmp_path / "kids.jsonl"
    texts = ["I have one kid", "I have two kids", "I have one kid"]
    lines = [
        {"content": t, "valid_from": f"{y}-01-01T00:00:00Z"}
        for t, y in zip(texts, [2022, 2021, 2020])
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    counts = ("created", "duplicate", "updated")
    code, out, err = ltm("import", "--user", "a", str(path), *mode, "--dry-run", "--json")
    assert (code, err) == (0, "")
    said = {k: as_json(out)[k] for k in counts}
    assert said == {"created": 1, "duplicate": 0, "updated": 2}
    for size in ("1", "2", "3"):
        url = f"sqlite:///{tmp_path}/b{size}.db"
        args = ("import", "--user", "a", str(path), *mode, "--batch-size", size, "--json")
        code, out, err = ltm(*args, store_url=url)
        assert (code, err) == (0, "")
        assert {k: as_json(out)[k] for k in counts} == said, size
        (fact,) = as_json(ltm("list", "--user", "a", "--json", store_url=url)[1])
        assert fact["content"] == "I have one kid", size
        assert [(h["content"], h["valid_from"][:4]) for h in fact["history"]] == [
            ("I have one kid", "2020"),
            ("I have two kids", "2021"),
        ], size


def test_import_merge_dry_run_threshold(ltm, tmp_path):
    ltm("remember", "--user", "alice", "Likes black tea", "Lives in Paris")
    before = as_json(ltm("list", "--user", "alice", "--json")[1])
    path = tmp_path / "in.jsonl"
    path.write_text(
        _line(content="lives in paris.")
        + _line(content="Likes black tea from Darjeeling and Assam with breakfast")
        + json.dumps("Owns a cat"),
        encoding="utf-8",
    )
    code, out, err = ltm("import", "--user", "alice", str(path), "--merge", "--dry-run", "--json")
    assert (code, err) == (0, "")
    summary = as_json(out)
    assert summary["dry_run"] is True
    assert [(r["line"], r["action"]) for r in summary["lines"]] == [
        (1, "duplicate"),
        (2, "created"),  # carries the stored text (0.71), but below the merge threshold
        (3, "created"),
    ]
    assert [s["content"] for s in summary["lines"][1]["similar"]] == ["Likes black tea"]
    assert summary["lines"][0]["id"] == next(
        f["id"] for f in before if f["content"] == "Lives in Paris"
    )

    tea = next(f for f in before if f["content"] == "Likes black tea")
    args = ("import", "--user", "alice", str(path), "--merge", "--threshold", "0.6")
    code, out, _ = ltm(*args, "--dry-run")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("Dry run, nothing written: importing 3 facts")
    assert "1 created, 1 duplicate, 1 updated, 0 rejected" in lines[0]
    assert lines[2].split()[:2] == ["LINE", "WOULD"]
    row = next(line for line in lines if "Darjeeling" in line)
    assert (
        row.split()[:3] == ["2", "updated", tea["id"]] and "new version of: Likes black tea" in row
    )
    assert as_json(ltm("list", "--user", "alice", "--json")[1]) == before  # nothing written

    code, out, _ = ltm(*args, "--json")
    assert code == 0 and as_json(out)["updated"] == 1 and "lines" not in as_json(out)
    after = {f["id"]: f for f in as_json(ltm("list", "--user", "alice", "--json")[1])}
    assert after[tea["id"]]["content"] == "Likes black tea from Darjeeling and Assam with breakfast"
    assert [v["content"] for v in after[tea["id"]]["history"]] == ["Likes black tea"]
    assert len(after) == 3


@pytest.mark.parametrize("value", ["1.5", "-2", "high"])
def test_import_threshold_must_be_a_cosine(ltm, tmp_path, value):
    code, _, err = ltm("import", "--user", "u", str(tmp_path / "x.jsonl"), "--threshold", value)
    assert code == 2 and "expected a cosine similarity in [-1, 1]" in err


def test_import_failing_midway_says_what_was_stored(ltm, tmp_path, monkeypatch):
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"content": "Lives in Lisbon"}) + "\n" + json.dumps({"fact": "x"}))
    real = LongTermMemoryStore.import_user
    calls = []

    def flaky(self, user_id, records, mode="restore", **kwargs):
        calls.append(records)
        if len(calls) == 2:
            raise BackendError("Qdrant write failed: disk full")
        return real(self, user_id, records, mode, **kwargs)

    monkeypatch.setattr(LongTermMemoryStore, "import_user", flaky)
    code, _, err = ltm("import", "--user", "u", str(path), "--batch-size", "1")
    assert code == 3
    assert "1 of 2 facts were stored before the failure" in err
    assert err.endswith("ltm: error: Qdrant write failed: disk full\n")


def test_import_missing_file(ltm, tmp_path):
    code, _, err = ltm("import", "--user", "dave", str(tmp_path / "nope.jsonl"))
    assert code == 2 and "cannot read" in err and "No such file" in err


def test_secret_is_rejected_not_echoed(ltm):
    code, out, err = ltm("remember", "--user", "alice", "--json", "Owns a cat", CARD)
    results = as_json(out)
    assert code == 2
    assert [r["action"] for r in results] == ["created", "rejected"]
    assert results[1]["fact"] is None and "card" in results[1]["reason"]
    assert [r["text"] for r in results] == ["Owns a cat", None]  # its text is not echoed
    assert "1 of 2 facts were rejected and not stored" in err and "1 was stored" in err
    assert "4111" not in out + err
    code, out, err = ltm("remember", "--user", "alice", CARD)
    assert code == 2 and "rejected" in out and "4111" not in out
    assert err == "ltm: error: the fact was rejected and not stored (reason in the output).\n"
    stored = as_json(ltm("list", "--user", "alice", "--json")[1])
    assert [f["content"] for f in stored] == ["Owns a cat"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["remember", "--user", "alice", ""], "ltm: error: fact is empty"),
        (["remember", "--user", "alice", "ok", " "], "ltm: error: fact 2 is empty"),
        (["remember", "--user", "", "a fact"], "ltm: error: user_id is empty"),
        (["remember", "a fact"], "the following arguments are required: --user"),
        (["list"], "the following arguments are required: --user"),
        (["recall", "--user", "alice"], "ltm: error: recall needs a query"),
        (["recall", "--user", "alice", "-q", "x", "--limit", "0"], "expected a whole number"),
        (["recall", "--user", "alice", "-q", "x", "--limit", "5000"], "limit must be an int"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_usage_exits_2_without_traceback(ltm, tmp_path, args, expected):
    ltm("remember", "--user", "someone", "Likes tea")  # a store to read: the usage is wrong
    code, _, err = ltm(*args)
    assert code == 2
    assert expected in err and "Traceback" not in err


def test_bad_input_fails_before_the_store_opens(ltm, monkeypatch, tmp_path):
    def no_store(url, embeddings):
        raise AssertionError("the store should not be opened")

    monkeypatch.setattr(cli_session, "open_store", no_store)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(_export_lines(2) + "not json\n", encoding="utf-8")
    for args in (
        ["remember", "--user", "alice", "ok", ""],
        ["remember", "--user", " ", "ok"],
        ["recall", "--user", "alice"],
        ["clear", "--user", "alice"],
        ["import", "--user", "alice", str(bad)],
        ["import", "--user", "alice", str(bad), "--merge", "--dry-run"],
    ):
        code, _, err = ltm(*args)
        assert code == 2 and err.startswith("ltm: error: "), (args, err)
    code, _, err = ltm("migrate", "--from", str(tmp_path), "--to", "memory://", store_url=None)
    assert code == 2 and err.startswith("ltm: error: --to memory://")


def test_import_shows_a_progress_bar_on_a_terminal(tmp_path, monkeypatch, capsys):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"content": f"Fact number {i}"}) + "\n" for i in range(3)))
    err = Tty()
    monkeypatch.setattr(sys, "stderr", err)
    store = str(tmp_path / "q")
    assert (
        cli.main(["import", "--user", "u", "--store", store, str(path), "--batch-size", "2"]) == 0
    )
    assert "2/3 (66%)" in err.getvalue() and "3/3 (100%)" in err.getvalue()
    assert "Read 3 facts" in capsys.readouterr().out

    err.seek(0)
    err.truncate()
    path.write_text(_export_lines(3))  # restored in batches too
    assert (
        cli.main(["import", "--user", "v", "--store", store, str(path), "--batch-size", "2"]) == 0
    )
    assert "2/3 (66%)" in err.getvalue() and "3/3 (100%)" in err.getvalue()
    assert "3 restored" in capsys.readouterr().out


def test_help_and_version_exit_0(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "remember" in out and "exit codes" in out and "LTM_STORE" in out
    assert cli.main(["import", "--help"]) == 0
    out = capsys.readouterr().out
    assert all(flag in out for flag in ("--batch-size", "--merge", "--threshold", "--dry-run"))
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("ltm ")
    assert cli.main([]) == 2
    assert "required: COMMAND" in capsys.readouterr().err


def test_stats_for_the_store_and_one_user(ltm, tmp_path):
    ltm("remember", "--user", "alice@example.com", "Owns a cat")
    ltm("clear", "--user", "alice@example.com", "--yes")
    code, out, _ = ltm("stats", "--json")
    assert code == 0
    assert as_json(out) == {
        "store": f"embedded Qdrant at {tmp_path / 'q'}",
        "users": 0,
        "facts": 0,
        "versions": 0,
        "per_user": [],
    }
    ltm("remember", "--user", "alice@example.com", "Owns a cat", "Lives in Lisbon")
    ltm("remember", "--user", "bob", "Plays the cello")
    with opened(tmp_path / "q") as store:  # an earlier version is not counted as a fact
        (cello,) = store.list_all("bob")
        store.update_fact("bob", cello.id, "Plays the cello in an orchestra")
    data = as_json(ltm("stats", "--json")[1])
    assert (data["users"], data["facts"], data["versions"]) == (2, 3, 1)
    assert data["per_user"] == [
        {"user_id": "alice@example.com", "facts": 2, "versions": 0},
        {"user_id": "bob", "facts": 1, "versions": 1},
    ]
    code, out, _ = ltm("stats")
    rows = [line.split() for line in out.splitlines()]
    assert ["users", "2"] in rows and ["versions", "1"] in rows
    assert ["alice@example.com", "2", "0"] in rows and ["bob", "1", "1"] in rows
    one = as_json(ltm("stats", "--user", "bob", "--json")[1])
    assert (one["user_id"], one["facts"], one["versions"]) == ("bob", 1, 1)
    assert one["first_created"] is not None and one["last_updated"] is not None
    assert as_json(ltm("stats", "--user", "nobody", "--json")[1])["facts"] == 0


def test_store_from_the_environment(ltm, tmp_path, monkeypatch):
    monkeypatch.setenv("LTM_STORE", str(tmp_path / "env-store"))
    code, _, _ = ltm("remember", "--user", "alice", "Owns a cat", store_url=None)
    assert code == 0 and (tmp_path / "env-store").is_dir()
    assert len(as_json(ltm("list", "--user", "alice", "--json", store_url=None)[1])) == 1
    code, _, err = ltm("list", "--user", "alice", "--json")  # --store wins
    assert code == 1 and f"there is no folder {tmp_path / 'q'}" in err


def test_default_store_is_sqlite_in_the_data_dir(ltm, tmp_path):
    code, _, err = ltm("remember", "--user", "alice", "Owns a cat", store_url=None)
    assert code == 0 and err == ""
    assert (tmp_path / "home" / "memories.db").is_file()
    assert not (tmp_path / "home" / "qdrant").exists()
    with LongTermMemoryStore.from_sqlite(
        tmp_path / "home" / "memories.db", cli_session.default_embeddings()
    ) as store:
        assert [f.content for f in store.list_all("alice")] == ["Owns a cat"]


def test_engine_failures_exit_3(ltm, tmp_path, monkeypatch):
    folder = str(tmp_path / "q")
    holder, _ = open_store(folder, embeddings=cli_session.default_embeddings())
    try:  # the folder is locked by another client (in a real case: another process)
        code, _, err = ltm("list", "--user", "alice")
    finally:
        holder.close()
    assert code == 3 and "open in another process" in err
    assert ltm("list", "--user", "alice")[0] == 0  # the CLI closed what it opened

    def down(url, embeddings):
        raise BackendError("Postgres at db:5432 refused the connection; is it running?")

    monkeypatch.setattr(cli_session, "open_store", down)
    monkeypatch.setattr(cli_session, "open_facts", down)  # what the fact commands open
    code, _, err = ltm("list", "--user", "alice")
    assert code == 3 and err == (
        "ltm: error: Postgres at db:5432 refused the connection; is it running?\n"
    )

    def refused(url, embeddings):
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(cli_session, "open_store", refused)
    monkeypatch.setattr(cli_session, "open_facts", refused)
    code, _, err = ltm("list", "--user", "alice", store_url="http://qdrant:6333")
    assert code == 3 and "the store at http://qdrant:6333 failed" in err


def test_lock_errors_say_what_to_do_for_sqlite_and_qdrant_folders():
    import sqlite3

    from langchain_ltm.cli.exits import EXIT_ENGINE, classify

    code, message = classify(sqlite3.OperationalError("database is locked"), "the store at x.db")
    assert code == EXIT_ENGINE and "busy timeout" in message and "Retry it" in message
    assert "the store at x.db" in message and "write transaction open" in message
    code, message = classify(sqlite3.DatabaseError("file is not a database"), "the store")
    assert code == EXIT_ENGINE and "file is not a database" in message
    raw = RuntimeError("Storage folder q is already accessed by another instance of Qdrant client.")
    code, message = classify(raw, "the store at q")
    assert code == EXIT_ENGINE and "open in another process" in message
    assert "ltm migrate --from FOLDER --to sqlite:///FILE" in message


def test_a_busy_postgres_pool_is_told_without_the_python_api():
    """The library's advice (raise max_size/timeout of postgres_backend()) is not the shell's."""
    from psycopg_pool import PoolTimeout

    from langchain_ltm.backends.postgres._errors import translate
    from langchain_ltm.cli.exits import EXIT_ENGINE, classify

    where = "the store at postgresql://***@db/app"
    busy = PoolTimeout("couldn't get a connection after 10.00 sec")
    error = translate(busy, "search")
    error.__cause__ = busy
    assert "postgres_backend()" in str(error)
    code, message = classify(error, where)
    assert code == EXIT_ENGINE and message.startswith(where) and "all stayed busy" in message
    assert "postgres_backend" not in message and "retry the command" in message

    error = translate(busy, "search", "connection refused")  # unreachable: as the library says
    error.__cause__ = busy
    assert classify(error, where) == (EXIT_ENGINE, str(error))
    assert "Cannot connect to Postgres" in str(error) and "max_size" not in str(error)


def test_a_locked_sqlite_file_is_told_without_the_python_api(tmp_path):
    """The CLI said "pass a larger busy_timeout to sqlite_backend() / from_sqlite()"."""
    from langgraph.store.base import PutOp

    from langchain_ltm.cli.exits import EXIT_ENGINE, classify

    path = tmp_path / "m.db"
    store = LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(), busy_timeout=0.1)
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        store.put(("notes",), "a", {"text": "one"})
        holder.execute("BEGIN IMMEDIATE")  # another process's open write transaction
        with pytest.raises(BackendError) as caught:
            store.batch([PutOp(("notes",), "b", {"text": "two"})])
    finally:
        holder.close()
        store.close()
    assert "sqlite_backend()" in str(caught.value)  # the library's advice, for Python
    code, message = classify(caught.value, "the store")
    assert code == EXIT_ENGINE and message.startswith(f"{path} stayed locked")
    assert "more than its busy timeout of 0.1 s" in message
    assert "nothing of this command was written" in message
    assert "Retry the command" in message and "write transaction open" in message
    assert "busy_timeout" not in message and "sqlite_backend" not in message


def test_hints_name_the_store_and_the_flag_in_use(ltm, tmp_path, monkeypatch):
    """``forget``'s hint "ltm list --user alice" dropped the --store given (it then read
    the default store); migrate given a bare SQLite path was told "pass --store ...",
    which migrate refuses."""
    db = tmp_path / "my mem.db"
    url = f"sqlite:///{db}"
    assert ltm("remember", "--user", "alice", "Likes tea", store_url=url)[0] == 0
    code, _, err = ltm("forget", "--user", "alice", "deadbeef", store_url=url)
    assert code == 1 and err.rstrip().endswith(f"ltm list --user alice --store '{url}'")
    monkeypatch.setenv("LTM_STORE", url)  # from the environment: the hint runs there too
    code, _, err = ltm("forget", "--user", "alice", "deadbeef", store_url=None)
    assert code == 1 and err.rstrip().endswith("see the ids with: ltm list --user alice")
    monkeypatch.delenv("LTM_STORE")
    target = f"sqlite:///{tmp_path / 'new.db'}"
    code, out, err = ltm("migrate", "--from", str(db), "--to", target, store_url=None)
    assert (code, out) == (2, "") and f"pass --from {url} to use it" in err
    code, out, err = ltm("migrate", "--from", target, "--to", str(db), store_url=None)
    assert (code, out) == (2, "") and f"pass --to {url} to use it" in err
    assert not (tmp_path / "new.db").exists()


def test_a_file_is_not_a_store(ltm, tmp_path):
    path = tmp_path / "file.txt"
    path.write_text("x")
    code, _, err = ltm("list", "--user", "alice", store_url=str(path))
    assert code == 2 and "it is a file, not a folder" in err and "sqlite:///PATH" in err


def test_a_sqlite_file_given_as_a_bare_path_is_pointed_to_sqlite_url(ltm, tmp_path):
    """A bare path is an embedded Qdrant folder; the message said only "a folder or a URL"."""
    url = f"sqlite:///{tmp_path / 'mem.db'}"
    assert ltm("remember", "--user", "alice", "Likes tea", store_url=url)[0] == 0
    code, out, err = ltm("list", "--user", "alice", store_url=str(tmp_path / "mem.db"))
    assert (code, out) == (2, "")
    assert f"pass --store {url} to use it" in err
    code, out, _ = ltm("list", "--user", "alice", store_url=url)  # and that works
    assert code == 0 and "Likes tea" in out


def test_a_sqlite_url_naming_a_folder_says_so(ltm, tmp_path):
    """It exited 3 with "check that its folder exists and is writable" (it was, and it did)."""
    (tmp_path / "adir").mkdir()
    for command in (("remember", "--user", "u", "x"), ("list", "--user", "u")):
        code, _, err = ltm(*command, store_url=f"sqlite:///{tmp_path / 'adir'}")
        assert code == 2 and f"{tmp_path / 'adir'} is a folder, not a SQLite file" in err
    assert list((tmp_path / "adir").iterdir()) == []


def test_store_is_closed_after_each_command(ltm, tmp_path, monkeypatch):
    closed = []

    def tracking(real_open):
        def opener(url, embeddings):
            store, where = real_open(url, embeddings=embeddings)
            real_close = store.close
            monkeypatch.setattr(store, "close", lambda: (closed.append(url), real_close()))
            return store, where

        return opener

    for name in ("open_store", "open_facts"):  # the full store, and the fact commands' one
        monkeypatch.setattr(cli_session, name, tracking(getattr(cli_session, name)))
    ltm("remember", "--user", "alice", "Owns a cat")
    ltm("forget", "--user", "alice", "missing-id")  # exit 1 still closes
    ltm("remember", "--user", "alice", CARD)  # exit 2 after opening still closes
    assert closed == [str(tmp_path / "q")] * 3


def test_progress_bar_only_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty, pipe = Tty(), io.StringIO()
    for stream in (tty, pipe):
        bar = Progress(512, stream)
        bar.update(256)
        bar.update(512)
        bar.finish()
    assert pipe.getvalue() == ""
    assert "256/512 (50%)" in tty.getvalue() and "512/512 (100%)" in tty.getvalue()
    assert tty.getvalue().startswith("\rimport [") and tty.getvalue().endswith("\n")


def test_table_keeps_rows_on_one_line():
    assert table(["A", "B"], [["x", "two\nlines"], ["long", "y"]]) == (
        "A     B\nx     two\\nlines\nlong  y"
    )
    assert table([], [["k", "v"], ["key", "value"]]) == "k    v\nkey  value"


def test_a_table_shows_control_characters_instead_of_sending_them_to_the_terminal(ltm):
    """A fact's lone carriage return overwrote its row's ID on a terminal and its ESC
    sequences ran there: facts are other people's words, often extracted from chat."""
    assert table([], [["x", "ok\rEVIL \x1b[31mred\x1b[0m \u202etxet \x85 café"]]) == (
        "x  ok\\x0dEVIL \\x1b[31mred\\x1b[0m \\u202etxet \\x85 café"
    )
    code, _, _ = ltm("remember", "--user", "a", "harmless looking fact\rEVIL")
    assert code == 0
    code, out, _ = ltm("list", "--user", "a")
    assert code == 0 and "harmless looking fact\\x0dEVIL" in out and "\r" not in out
    code, out, _ = ltm("list", "--user", "a", "--json")  # the data itself is unchanged
    assert json.loads(out)[0]["content"] == "harmless looking fact\rEVIL"


def test_console_entry_point_runs_as_a_module(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "LTM_STORE"}
    env["LTM_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-m", "langchain_ltm.cli", "stats", "--store", "memory://", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["users"] == 0


# ---- forget-user / export-user-data -------------------------------------------------------


def _chatted(folder, saver=None):
    """alice and bob chatted on two threads each (facts with versions) in the folder store."""
    from langgraph.checkpoint.memory import InMemorySaver

    from tests.unit_tests.test_erase import build_agent, populate

    saver = saver if saver is not None else InMemorySaver()
    with opened(folder) as store:
        populate(store, build_agent(store, saver))
    return saver


def test_forget_user_needs_yes_then_erases_the_user_and_keeps_the_other(ltm, tmp_path):
    from tests.unit_tests.test_erase import assert_scenario, everything

    _chatted(tmp_path / "q")
    with opened(tmp_path / "q") as store:
        before = everything(store)

    code, out, err = ltm("forget-user", "--user", "alice")
    assert (code, out) == (2, "") and "--yes" in err and "cannot be undone" in err
    with opened(tmp_path / "q") as store:
        assert everything(store) == before  # nothing deleted

    code, out, err = ltm("forget-user", "--user", "alice", "--yes")
    assert (code, err) == (0, "")
    assert out.splitlines()[0].startswith("Erased user 'alice' from ")
    assert table([], [["facts", "2"], ["earlier versions", "2"]]) in out
    assert "session turns     4" in out and "threads           0" in out
    assert "checkpoints of 2 threads were kept (no --checkpointer): alice-1, alice-2" in out
    with opened(tmp_path / "q") as store:
        assert_scenario(before, everything(store))

    code, out, _ = ltm("forget-user", "--user", "alice", "--yes", "--json")
    assert (code, as_json(out)) == (
        0,
        {
            "user_id": "alice",
            "facts": 0,
            "versions": 0,
            "session_turns": 0,
            "threads": 0,
            "thread_ids": [],
            "checkpointer": None,
        },
    )


def _sqlite_saver(path):
    from langgraph.checkpoint.sqlite import SqliteSaver

    return SqliteSaver(sqlite3.connect(path, check_same_thread=False))


def _tables(path):
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}


def test_forget_user_deletes_the_threads_of_a_sqlite_checkpointer(ltm, tmp_path):
    db = tmp_path / "checkpoints.db"
    saver = _chatted(tmp_path / "q", _sqlite_saver(db))
    code, out, err = ltm(
        "forget-user", "--user", "alice", "--checkpointer", f"sqlite:///{db}", "--yes", "--json"
    )
    assert (code, err) == (0, "")
    report = as_json(out)
    assert report["threads"] == 2 and report["thread_ids"] == ["alice-1", "alice-2"]
    assert report["checkpointer"] == f"sqlite:///{db}"
    assert {t.config["configurable"]["thread_id"] for t in saver.list(None)} == {"bob-1", "bob-2"}
    saver.conn.close()


def test_forget_user_refuses_a_checkpointer_it_cannot_use_and_deletes_nothing(
    ltm, tmp_path, monkeypatch
):
    from tests.unit_tests.test_erase import everything

    saver = _chatted(tmp_path / "q", _sqlite_saver(tmp_path / "agent.db"))
    with opened(tmp_path / "q") as store:
        before = everything(store)
    checkpoints = len(list(saver.list(None)))
    yes = ("forget-user", "--user", "alice", "--yes", "--checkpointer")

    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "langgraph.checkpoint.sqlite", None)  # not installed
        code, out, err = ltm(*yes, f"sqlite:///{tmp_path / 'agent.db'}")
        assert (code, out) == (2, "")
        assert "pip install langgraph-checkpoint-sqlite" in err

    for url in ("redis://cache:6379", "memory://", "c.db"):
        code, _, err = ltm(*yes, url)
        assert code == 2 and "postgresql://" in err and "sqlite:///PATH" in err

    code, _, err = ltm(*yes, f"sqlite:///{tmp_path / 'missing.db'}")
    assert code == 2 and "there is no SQLite file" in err
    assert not (tmp_path / "missing.db").exists()

    # SqliteSaver.delete_thread creates its tables first: on these files it deleted no
    # checkpoint, raised nothing, and the erase deleted the thread records (exit 0)
    (tmp_path / "other.db").write_bytes(b"")  # an empty file, as `touch` leaves it
    with contextlib.closing(sqlite3.connect(tmp_path / "app.db")) as conn:
        conn.execute("CREATE TABLE other (x)")  # another application's database
    with LongTermMemoryStore.from_sqlite(tmp_path / "mem.db", KeywordEmbeddings(dims=8)):
        pass  # a memory store, like the one --store names
    for name in ("other.db", "app.db", "mem.db"):
        kept = _tables(tmp_path / name)
        code, out, err = ltm(*yes, f"sqlite:///{tmp_path / name}")
        assert (code, out) == (2, "")
        assert "no LangGraph checkpoint tables" in err and "Nothing was deleted" in err
        assert ("it is a langchain-ltm memory store" in err) == (name == "mem.db")
        assert _tables(tmp_path / name) == kept  # nothing created in it

    (tmp_path / "notes.db").write_text("not a database\n" * 100)
    code, _, err = ltm(*yes, f"sqlite:///{tmp_path / 'notes.db'}")
    assert code == 2 and "is not a SQLite database" in err and "Nothing was deleted" in err

    with opened(tmp_path / "q") as store:
        assert everything(store) == before
    assert len(list(saver.list(None))) == checkpoints
    code, out, _ = ltm(*yes, f"sqlite:///{tmp_path / 'agent.db'}", "--json")  # still findable
    assert code == 0 and as_json(out)["thread_ids"] == ["alice-1", "alice-2"]
    assert {t.config["configurable"]["thread_id"] for t in saver.list(None)} == {"bob-1", "bob-2"}
    saver.conn.close()


def test_export_user_data_prints_or_writes_one_json_document(ltm, tmp_path):
    from langchain_ltm.agents.erase import export_user_data

    _chatted(tmp_path / "q")
    with opened(tmp_path / "q") as store:
        expected = export_user_data(store, "alice")
    code, out, err = ltm("export-user-data", "--user", "alice")
    assert (code, err) == (0, "")
    assert as_json(out) == expected
    assert len(expected["facts"]) == 2 and len(expected["session_turns"]) == 4

    path = tmp_path / "alice.json"
    code, out, _ = ltm("export-user-data", "--user", "alice", "-o", str(path))
    assert code == 0
    assert out.strip() == (f"Exported user 'alice' to {path}: 2 facts, 4 session turns, 2 threads.")
    assert json.loads(path.read_text(encoding="utf-8")) == expected
    code, out, _ = ltm("export-user-data", "--user", "nobody", "-o", str(path), "--json")
    assert as_json(out) == {
        "user_id": "nobody",
        "path": str(path),
        "facts": 0,
        "session_turns": 0,
        "threads": 0,
    }


def test_import_of_an_export_user_data_document_says_it_is_the_wrong_file(ltm, tmp_path):
    """It read as "line 1: not valid JSON" (the document is indented over many lines)."""
    path = tmp_path / "alice.json"
    assert ltm("remember", "--user", "alice", "Likes green tea")[0] == 0
    assert ltm("export-user-data", "--user", "alice", "-o", str(path))[0] == 0
    code, out, err = ltm("import", "--user", "alice", str(path))
    assert (code, out) == (2, "")
    assert "is an `ltm export-user-data` document" in err and "ltm export" in err
    assert "not valid JSON" not in err


def test_import_leaves_out_what_expired_since_the_export(ltm, tmp_path, monkeypatch):
    """An exported TTL fact restores with its expiry; once past it, import leaves it out."""
    import langchain_ltm._clock as clock

    url = f"sqlite:///{tmp_path}/alice.db"
    assert ltm("remember", "--user", "alice", "Likes tea", store_url=url)[0] == 0
    with opened(url) as store:
        card = store.remember("alice", "Reported a lost card this morning", ttl=60).fact
    path = tmp_path / "alice.jsonl"
    assert ltm("export", "--user", "alice", "-o", str(path), store_url=url)[0] == 0
    fresh = f"sqlite:///{tmp_path}/fresh.db"
    code, out, _ = ltm("import", "--user", "alice", str(path), "--json", store_url=fresh)
    assert code == 0 and (as_json(out)["restored"], as_json(out)["expired"]) == (2, 0)
    later = card.updated_at + timedelta(minutes=61)
    monkeypatch.setattr(clock, "utcnow", lambda: later)
    late = f"sqlite:///{tmp_path}/late.db"
    for extra in ([], ["--merge"]):
        code, out, err = ltm("import", "--user", "alice", str(path), *extra, store_url=late)
        assert (code, err) == (0, ""), err
        assert "1 left out: expired" in out
    code, out, _ = ltm("list", "--user", "alice", "--json", store_url=late)
    assert [f["content"] for f in as_json(out)] == ["Likes tea"]
    code, out, _ = ltm("list", "--user", "alice", "--json", store_url=fresh)
    assert [f["content"] for f in as_json(out)] == ["Likes tea"]  # expired there too


def test_ctrl_c_while_starting_is_an_interrupt_not_a_traceback(monkeypatch, capsys):
    def interrupted(argv):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "parse", interrupted)  # Ctrl-C before the command runs
    assert cli.main(["list", "--user", "a"]) == 130
    assert capsys.readouterr().err == "ltm: interrupted\n"


@pytest.mark.parametrize("command", ["export", "export-user-data"])
def test_export_to_dev_stdout_appends_where_the_shell_says(ltm, tmp_path, command):
    """`-o /dev/stdout >> all.jsonl` replaced all.jsonl with the export (its lines and mode
    gone: /dev/stdout was resolved to the file and a temporary file renamed over it), and
    `-o /dev/stdout | wc` failed naming a `pipe:[...]` temporary file."""
    url = f"sqlite:///{tmp_path / 'm.db'}"
    assert ltm("remember", "--user", "bob", "Likes tea", store_url=url)[0] == 0
    log = tmp_path / "all.jsonl"
    log.write_text('{"content": "already here"}\n')
    log.chmod(0o644)
    env = {**os.environ, "LTM_HOME": str(tmp_path / "home"), "LTM_ENCODER_SERVER": "off"}
    argv = [sys.executable, "-m", "langchain_ltm.cli", command, "--store", url, "--user", "bob"]
    with open(log, "a") as appended:
        done = subprocess.run(
            [*argv, "-o", "/dev/stdout"],
            stdout=appended,
            stderr=subprocess.PIPE,
            env=env,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    text = log.read_text()
    assert text.startswith('{"content": "already here"}\n') and "Likes tea" in text
    assert "Exported" not in text  # the summary is not part of the output
    assert log.stat().st_mode & 0o777 == 0o644
    piped = subprocess.run(
        [*argv, "-o", "/dev/stdout"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert piped.returncode == 0 and "Likes tea" in piped.stdout, piped.stderr


def test_export_into_a_folder_it_may_not_write_names_the_file_asked_for(ltm, tmp_path, monkeypatch):
    """A folder this user may not write in: the error named the temporary file beside the
    one asked for (`.b.jsonl.8yt7jrt8.tmp`)."""
    from langchain_ltm.cli import io as cli_io

    ltm("remember", "--user", "b", "Likes tea")

    def refused(dir, prefix, suffix):  # what the kernel says in a folder one may not write
        name = os.path.join(dir, f"{prefix}x1y2z3{suffix}")
        raise PermissionError(errno.EACCES, "Permission denied", name)

    monkeypatch.setattr(cli_io.tempfile, "mkstemp", refused)
    code, _, err = ltm("export", "--user", "b", "-o", str(tmp_path / "b.jsonl"))
    assert code == 2 and f"cannot use {tmp_path / 'b.jsonl'}: Permission denied" in err
    assert ".tmp" not in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_full_output_is_named_not_the_store(ltm, tmp_path, monkeypatch):
    """`ltm list > /dev/full` said "cannot use the store at ...: No space left on device".

    And exited 2, "bad usage or input": a full disk is neither (now 3, as an engine that
    cannot write: the same command may work later).
    """
    ltm("remember", "--user", "u", "Likes tea")
    code, _, err = ltm("export", "--user", "u", "-o", "/dev/full")
    assert code == 3 and "cannot use /dev/full: No space left on device" in err
    full = open("/dev/full", "w")  # noqa: SIM115 (closed below, its failure expected)
    try:
        monkeypatch.setattr(sys, "stdout", full)
        err_stream = io.StringIO()
        monkeypatch.setattr(sys, "stderr", err_stream)
        assert cli.main(["list", "--user", "u", "--store", str(tmp_path / "q")]) == 3
    finally:
        with contextlib.suppress(OSError):  # what was not written is still buffered
            full.close()
    assert "cannot use stdout: No space left on device" in err_stream.getvalue()
    assert "the store" not in err_stream.getvalue()


@pytest.mark.parametrize(
    "command", [["export"], ["export-user-data"], ["list"], ["export", "-o", "/dev/stdout"]]
)
def test_a_closed_stdout_is_an_error_not_a_traceback(ltm, tmp_path, monkeypatch, command):
    """`ltm export >&-`: sys.stdout is None, and export died on None.write (with
    `-o /dev/stdout`, on None.flush)."""
    ltm("remember", "--user", "u", "Likes tea")
    monkeypatch.setattr(sys, "stdout", None)
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    assert cli.main([*command, "--user", "u", "--store", str(tmp_path / "q")]) == 2
    assert err.getvalue() == "ltm: error: cannot use stdout: it is closed.\n"


def test_export_to_a_path_it_cannot_use_names_that_path(ltm, tmp_path):
    ltm("remember", "--user", "b", "Likes tea")
    missing = tmp_path / "nodir" / "b.jsonl"
    code, _, err = ltm("export", "--user", "b", "-o", str(missing))
    assert code == 2 and f"cannot use {missing}: there is no folder" in err and ".tmp" not in err
    code, _, err = ltm("export", "--user", "b", "-o", str(tmp_path))
    assert code == 2 and f"cannot use {tmp_path}: it is a folder" in err and ".tmp" not in err


def test_an_overlong_query_is_told_to_be_shorter(ltm, tmp_path):
    ltm("remember", "--user", "a", "Likes tea")
    code, _, err = ltm("recall", "--user", "a", "x" * 2001)
    assert code == 2 and "query is 2,001 characters long" in err and "shorter question" in err


def test_bytes_that_are_not_utf8_are_named_as_such(ltm, monkeypatch):
    undecoded = b"caf\xe9 au lait".decode("utf-8", "surrogateescape")  # as Python reads them
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"Likes tea\n{undecoded}\n"))
    code, _, err = ltm("remember", "--user", "a", "-")
    assert code == 2 and "stdin line 2 is not UTF-8 text" in err and "surrogate" not in err
    code, out, _ = ltm("list", "--user", "a", "--json")
    assert code == 1 or as_json(out) == []  # nothing half-stored (no store at all, or empty)


def test_export_follows_a_symlink_and_writes_into_a_pipe(ltm, tmp_path):
    """``-o`` a symlink replaced the link with a new file (the target kept its old text);
    ``-o`` a FIFO replaced it with a file, and its reader got nothing."""
    import os
    import threading

    ltm("remember", "--user", "u", "Likes tea")
    backups = tmp_path / "backups"
    backups.mkdir()
    (backups / "u.jsonl").write_text("old\n")
    link = tmp_path / "latest.jsonl"
    link.symlink_to(backups / "u.jsonl")
    code, _, _ = ltm("export", "--user", "u", "-o", str(link))
    assert code == 0 and link.is_symlink()
    assert [json.loads(x)["content"] for x in link.read_text().splitlines()] == ["Likes tea"]
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    code, _, _ = ltm("export", "--user", "u", "-o", str(fifo))
    reader.join(10)
    assert code == 0 and not fifo.is_file()
    assert [json.loads(x)["content"] for x in got[0].splitlines()] == ["Likes tea"]


def test_json_errors_are_one_json_document_on_stdout(ltm, tmp_path):
    """With --json a failing command's stdout is the error as JSON (stderr says it too)."""
    store = f"sqlite:///{tmp_path / 'm.db'}"
    code, out, err = ltm("remember", "--user", "u", "Likes tea", "--json", store_url=store)
    assert code == 0
    cases = [
        (["forget", "--user", "u", "zzzz", "--json"], store, 1),  # no such fact
        (["clear", "--user", "u", "--json"], store, 2),  # no --yes
        (["list", "--user", "u", "--json"], f"sqlite:///{tmp_path / 'none.db'}", 1),
    ]
    for args, url, expected in cases:
        code, out, err = ltm(*args, store_url=url)
        assert code == expected, (args, err)
        assert as_json(out) == {
            "error": err.removeprefix("ltm: error: ").strip(),
            "exit_code": code,
        }
    # without --json nothing goes to stdout
    code, out, err = ltm("forget", "--user", "u", "zzzz", store_url=store)
    assert (code, out) == (1, "") and err.startswith("ltm: error:")


def test_a_json_result_is_not_followed_by_an_error_document(ltm, tmp_path):
    """A command that printed its JSON result and then exits non-zero keeps that one document."""
    store = f"sqlite:///{tmp_path / 'm.db'}"
    code, out, err = ltm(
        "remember", "--user", "u", "my password is hunter2", "--json", store_url=store
    )
    assert code == 2 and "rejected" in err
    (row,) = as_json(out)  # one document: the rows, no error object after them
    assert row["action"] == "rejected"


def test_export_counts_other_clients_items_and_import_refuses_only_their_long_text(ltm, tmp_path):
    """`ltm export` did not say it left out a client's structured item, nor that it held a
    client's text; `ltm import` of an export holding a client's text longer than the
    store's limit refused the whole file. The export counts both; the import lists that
    line as rejected (why) and restores the others (exit 2, as for any line left out)."""
    ltm("remember", "--user", "alice", "Lives in Paris")
    store, _ = open_store(str(tmp_path / "q"), embeddings=cli_session.default_embeddings())
    namespace = store.user_namespace("alice")
    store.put(namespace, "langmem-1", {"content": "a short note"})
    store.put(namespace, "profile", {"content": {"name": "Alice"}})
    store.close()
    path = tmp_path / "out.jsonl"
    code, out, _ = ltm("export", "--user", "alice", "-o", str(path), "--json")
    summary = as_json(out)
    assert code == 0 and summary["exported"] == 2
    assert (summary["client_items"], summary["other_items_left_out"]) == (1, 1)
    code, out, _ = ltm("export", "--user", "alice", "-o", str(path))
    assert "1 of them items another client put" in out and "left out 1 other item" in out
    lines = path.read_text(encoding="utf-8") + _line(id="langmem-2", content="x " * 1500)
    path.write_text(lines, encoding="utf-8")
    code, out, _ = ltm("import", "--user", "bob", str(path), "--json")
    summary = as_json(out)
    assert code == 2 and (summary["restored"], summary["rejected"]) == (2, 1)
    assert summary["rejected_lines"][0]["line"] == 3
    assert "3,000 characters long" in summary["rejected_lines"][0]["reason"]


def test_import_names_a_conflicts_texts_the_user_holds_nowhere(ltm, tmp_path):
    """A conflict's earlier texts the user held nowhere went unmentioned: the report
    names them (only in the file; --merge folds them in)."""
    path = tmp_path / "in.jsonl"
    path.write_text(
        _line(
            id="x1",
            content="Lives in Berlin",
            created_at="2025-01-01T00:00:00+00:00",
            updated_at="2025-02-01T00:00:00+00:00",
            valid_from="2025-02-01T00:00:00+00:00",
            history=[{"content": "Lives in Paris", "valid_from": "2025-01-01T00:00:00+00:00"}],
        ),
        encoding="utf-8",
    )
    ltm("remember", "--user", "alice", "Lives in Berlin")
    code, out, _ = ltm("import", "--user", "alice", str(path), "--json")
    assert code == 2
    assert as_json(out)["conflict_lines"] == [
        {"line": 1, "id": "x1", "reason": "same_text", "not_held": ["Lives in Paris"]}
    ]
    code, out, _ = ltm("import", "--user", "alice", str(path))
    assert "texts the user holds nowhere, only in this file: 'Lives in Paris'" in out


def test_import_says_why_each_conflict_was_left_alone(ltm, tmp_path):
    """Every conflict read "the user has this text as another fact", in the dry run too:
    also a line whose fact was updated since the export (its text is an earlier version of
    the same fact) and one whose fact was written after the line."""
    ltm("remember", "--user", "alice", "Lives in Paris", "Plays the cello", "Likes tea")
    path = tmp_path / "in.jsonl"
    ltm("export", "--user", "alice", "-o", str(path))
    exported = {r["content"]: r for r in map(json.loads, path.read_text().splitlines())}
    paris, cello = exported["Lives in Paris"], exported["Plays the cello"]
    with opened(tmp_path / "q") as store:
        store.update_fact("alice", paris["id"], "Lives in Berlin")
    old = "2025-01-02T03:04:05+00:00"  # the cello's fact was written after this line
    path.write_text(
        json.dumps(paris)
        + "\n"
        + _line(**{**cello, "created_at": old, "updated_at": old, "valid_from": old})
        + _line(id="x1", content="Likes tea")  # another fact has the text
        + _line(id="x2", content="Owns a cat")
        + _line(id="x3", content="Owns a cat"),  # line 4 brings the text
        encoding="utf-8",
    )
    why = [
        (1, paris["id"], "other_texts", "the user's fact with this id holds a text this line"),
        (2, cello["id"], "newer", "the user's fact with this id was written after this line's "),
        (3, "x1", "same_text", "the user has this text as another fact"),
        (5, "x3", "earlier_record", "an earlier line of the file has this text"),
    ]
    code, out, _ = ltm("import", "--user", "alice", str(path), "--dry-run", "--json")
    assert code == 2
    assert as_json(out)["conflict_lines"] == [
        {"line": n, "id": i, "reason": r} for n, i, r, _ in why
    ]
    for dry in (["--dry-run"], []):  # the rows of the dry run, then those of the import
        code, out, _ = ltm("import", "--user", "alice", str(path), *dry)
        assert code == 2
        rows = {int(row.split()[0]): row for row in out.splitlines()[3:] if row[:1].isdigit()}
        assert sorted(rows) == ([1, 2, 3, 4, 5] if dry else [1, 2, 3, 5])
        for n, fact_id, _, note in why:
            assert fact_id in rows[n] and f"({note}" in rows[n], rows[n]
        assert "another fact" not in "".join(rows[n] for n in (1, 2, 5))
    # line 4 was restored: line 5's text is now another fact's
    code, out, _ = ltm("import", "--user", "alice", str(path), "--json")
    assert code == 2
    assert as_json(out)["conflict_lines"][-1] == {"line": 5, "id": "x3", "reason": "same_text"}
    listed = as_json(ltm("list", "--user", "alice", "--json")[1])
    assert sorted(f["content"] for f in listed) == [
        "Likes tea",
        "Lives in Berlin",
        "Owns a cat",
        "Plays the cello",
    ]


def test_stats_lists_no_user_for_a_namespace_below_theirs(ltm, tmp_path):
    """A cleared user came back in ``ltm stats`` (0 facts) while a namespace below theirs
    held items: ``("memories", "acme", "bob")`` is bob's of another configuration."""
    with opened(tmp_path / "q") as store:
        store.remember("acme", "Acme pays invoices monthly")
        store.with_options(namespace=("memories", "acme")).remember("bob", "Bob's note")
        store.remember("carol", "Likes tea")
        store.clear_user("acme")
    code, out, _ = ltm("stats", "--json")
    assert code == 0
    assert [u["user_id"] for u in as_json(out)["per_user"]] == ["carol"]


def test_export_into_the_stores_own_file_or_folder_is_refused(ltm, tmp_path, monkeypatch):
    """``ltm export -o <the store's SQLite file>`` replaced the whole store (every user)
    with one user's JSON Lines; export-user-data did the same."""
    db = tmp_path / "m.db"
    store = f"sqlite:///{db}"
    for user, text in (("alice", "Prefers answers in Spanish"), ("bob", "Works on payments")):
        assert ltm("remember", "--user", user, text, store_url=store)[0] == 0
    link = tmp_path / "link.db"
    link.hardlink_to(db)
    monkeypatch.chdir(tmp_path)
    for command in ("export", "export-user-data"):
        for given in (str(db), "m.db", str(link)):  # by its path, a relative one, a hard link
            code, out, err = ltm(command, "--user", "alice", "-o", given, store_url=store)
            assert (code, out) == (2, ""), (command, given)
            assert f"-o {given} is the store's own file" in err and "nothing was written" in err
    code, out, _ = ltm("list", "--user", "bob", "--json", store_url=store)
    assert code == 0 and [f["content"] for f in as_json(out)] == ["Works on payments"]
    # the default store (no --store) and a folder store: a file inside the folder too
    assert ltm("remember", "--user", "alice", "Likes tea", store_url=None)[0] == 0
    home_db = tmp_path / "home" / "memories.db"
    code, _, err = ltm("export", "--user", "alice", "-o", str(home_db), store_url=None)
    assert code == 2 and "the store's own file" in err
    folder = tmp_path / "q"
    assert ltm("remember", "--user", "alice", "Likes tea", store_url=str(folder))[0] == 0
    code, _, err = ltm("export", "--user", "alice", "-o", str(folder / "a.jsonl"))
    assert code == 2 and "inside the store's own folder" in err
    assert not (folder / "a.jsonl").exists()
    # another file beside it is written as before
    code, _, _ = ltm("export", "--user", "alice", "-o", str(tmp_path / "a.jsonl"))
    assert code == 0 and (tmp_path / "a.jsonl").is_file()


def test_remember_shows_each_row_with_its_own_text(ltm):
    """Each row showed the fact as the whole call left it: "I have two kids" (row 2, an
    update) vanished from the report, shown as "I have one kid" (row 3's text)."""
    texts = ["I have one kid", "I have two kids", "I have one kid"]
    code, out, _ = ltm("remember", "--user", "a", *texts)
    rows = out.splitlines()[1:]
    assert code == 0 and [row.split()[0] for row in rows] == ["created", "updated", "updated"]
    assert [row.split(None, 2)[2].split("  (")[0] for row in rows] == texts
    assert "I have two kids  (was: I have one kid;" in rows[1]
    assert rows[1].endswith("(the fact now: I have one kid)")  # row 3 changed it again
    code, out, _ = ltm("remember", "--user", "b", "--json", *texts[:2])
    records = as_json(out)
    assert [r["text"] for r in records] == texts[:2]
    assert [r["previous"] for r in records] == [None, "I have one kid"]
    # "fact": the fact as the call left it (RememberResult.fact), the same for both rows
    assert [r["fact"]["content"] for r in records] == ["I have two kids"] * 2
