"""`ltm` usability: a fast --help, global options anywhere, id prefixes, env defaults, progress."""

import io
import json
import subprocess
import sys

import pytest

from langchain_ltm import cli, defaults
from langchain_ltm.cli import parser
from langchain_ltm.cli import session as cli_session
from langchain_ltm.store import DEFAULT_MERGE_THRESHOLD
from tests.unit_tests.test_cli import _isolated_home, as_json, ltm, opened  # noqa: F401

HEAVY = (
    "numpy",
    "langchain_ltm.store",
    "langchain_ltm.defaults",
    "langchain_core",
    "langgraph",
    "qdrant_client",
    "psycopg",
    "onnxruntime",
    "tokenizers",
)


def _modules_after(code):
    """The heavy modules loaded by ``code`` in a fresh interpreter."""
    script = (
        "import contextlib, io, sys\n"
        "from contextlib import redirect_stderr, redirect_stdout\n"
        "with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):\n"
        f"    {code}\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r} or m in {HEAVY!r}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["recall", "--help"],
        ["import", "--help"],
        [],  # a bare ltm prints the help too
        ["remembr"],  # a typo: did you mean
        ["--version"],
    ],
)
def test_help_imports_nothing_heavy(argv):
    assert _modules_after(f"from langchain_ltm.cli import main; main({argv!r})") == "[]"


def test_parsing_a_command_imports_nothing_heavy():
    code = (
        "from langchain_ltm.cli import parser; "
        "parser.parse(['--store', 'memory://', 'recall', '--user', 'a', '-q', 'x', '--json'])"
    )
    assert _modules_after(code) == "[]"


def test_the_parser_copies_of_store_defaults_agree(monkeypatch, tmp_path):
    assert parser.MERGE_THRESHOLD == DEFAULT_MERGE_THRESHOLD
    monkeypatch.setenv("LTM_HOME", str(tmp_path / "home"))
    assert parser.data_dir() == defaults.data_dir() == tmp_path / "home"
    monkeypatch.delenv("LTM_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert parser.data_dir() == defaults.data_dir()
    monkeypatch.delenv("XDG_DATA_HOME")
    assert parser.data_dir() == defaults.data_dir()


# ---- global options, environment, bare ltm, did you mean ------------------------------------


def test_global_options_before_or_after_the_command(ltm, tmp_path):
    store = str(tmp_path / "q")
    before = ("--store", store, "--user", "alice", "--json")
    code, out, err = ltm(*before, "remember", "Owns a cat", store_url=None)
    assert (code, err) == (0, "") and as_json(out)[0]["action"] == "created"
    code, out, _ = ltm("--json", "list", "--store", store, "--user", "alice", store_url=None)
    assert code == 0 and [f["content"] for f in as_json(out)] == ["Owns a cat"]
    code, out, _ = ltm("--user", "alice", "--store", store, "recall", "-q", "pets", store_url=None)
    assert code == 0 and out.splitlines()[0].split()[0] == "SCORE"  # a table: no --json
    # given on both sides, the one after the command wins
    other = str(tmp_path / "other")
    code, out, _ = ltm("--store", other, "list", "--user", "alice", "--store", store, "--json")
    assert code == 0 and len(as_json(out)) == 1
    code, out, _ = ltm("--user", "bob", "list", "--user", "alice", "--json")
    assert len(as_json(out)) == 1
    assert not (tmp_path / "other").exists()


def test_migrate_takes_no_store(ltm, tmp_path):
    code, _, err = ltm(
        "--store", "memory://", "migrate", "--from", "a", "--to", "b", store_url=None
    )
    assert code == 2 and "migrate takes no --store" in err


def test_user_from_the_environment(ltm, monkeypatch):
    monkeypatch.setenv("LTM_USER", "alice")
    assert ltm("remember", "Owns a cat")[0] == 0
    code, out, _ = ltm("list", "--json")
    assert code == 0 and [f["user_id"] for f in as_json(out)] == ["alice"]
    code, out, _ = ltm("list", "--user", "bob", "--json")  # --user wins
    assert (code, as_json(out)) == (0, [])
    code, out, _ = ltm("stats", "--json")  # stats without --user: the whole store
    assert as_json(out)["users"] == 1 and "per_user" in as_json(out)
    monkeypatch.setenv("LTM_USER", "")  # empty is unset
    code, _, err = ltm("list")
    assert code == 2 and "required: --user (or set $LTM_USER)" in err
    monkeypatch.setenv("LTM_USER", " ")  # checked like --user, before the store opens
    code, _, err = ltm("list")
    assert code == 2 and "user_id" in err and "Traceback" not in err


def test_bare_ltm_prints_the_help_and_exits_2(capsys):
    assert cli.main([]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("usage: ltm ")
    for command in ("remember", "recall", "forget", "import", "migrate", "forget-user"):
        assert f"\n    {command}" in err
    assert "LTM_USER" in err and "before or after the command" in err
    assert err.endswith(
        "ltm: error: the following arguments are required: COMMAND (listed above)\n"
    )


@pytest.mark.parametrize(
    ("typo", "hint"),
    [
        ("remembr", "did you mean 'remember'?"),
        ("recal", "did you mean 'recall'?"),
        ("forgetuser", "did you mean 'forget-user'"),
        ("exprt", "did you mean 'export'"),
        ("export-user", "did you mean 'export-user-data'"),
        ("mig", "did you mean 'migrate'?"),
    ],
)
def test_a_mistyped_command_gets_a_did_you_mean(ltm, typo, hint):
    code, out, err = ltm("--user", "alice", typo, store_url=None)
    assert (code, out) == (2, "")
    assert f"invalid choice: {typo!r} ({hint}" in err and "Traceback" not in err


def test_a_command_nothing_like_ours_lists_the_commands(ltm):
    code, _, err = ltm("frobnicate", store_url=None)
    assert code == 2 and "invalid choice: 'frobnicate' (choose from remember, recall," in err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["--at", "2023-05-08", "remember", "--user", "z", "Adopted a cat"],
            "--at is an option of remember: put it after the command (only --store, --user "
            "and --json go before it)",
        ),
        (["--meta", "session=1", "recall", "--user", "z", "cat"], "--meta is an option of recall:"),
        (["--at=2023-05-08", "remember", "--user", "z", "x"], "--at is an option of remember:"),
        (  # a user named "remember": the value of --user is no command
            ["--user", "remember", "--at", "2023", "recall", "x"],
            "--at is an option of remember, not of recall",
        ),
        (["--meta", "session=1", "remembr", "x"], "--meta is an option of remember and recall:"),
    ],
)
def test_a_commands_option_before_the_command_says_where_it_goes(ltm, argv, said):
    """``ltm --at 2023-05-08 remember ...`` said "invalid choice: '2023-05-08'", the value of
    the option taken for the command; only --store, --user and --json go before it."""
    code, out, err = ltm(*argv, store_url="memory://")
    assert (code, out) == (2, "")
    assert f"ltm: error: {said}" in err and "invalid choice" not in err


def test_an_unknown_scheme_lists_the_stores_the_help_lists(ltm, capsys):
    """The message of an unknown scheme left out redis://, chroma://HOST:PORT/COLLECTION and
    module:factory, which ``ltm --help`` lists: both quote one list."""
    from langchain_ltm._store_forms import STORE_URLS

    code, _, err = ltm("list", "--user", "z", store_url="mongodb://localhost/x")
    assert code == 2 and f"unknown store scheme 'mongodb'; use {STORE_URLS} (" in err
    assert cli.main(["--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert STORE_URLS in help_text
    for form in ("redis://HOST:PORT/INDEX", "chroma://HOST:PORT/COLLECTION", "module:factory"):
        assert form in err


# ---- id prefixes -------------------------------------------------------------------------

IDS = {
    "3f2c1a00-0000-4000-8000-000000000001": "Owns a cat",
    "3f2c9b00-0000-4000-8000-000000000002": "Lives in Lisbon",
    "7d1e0000-0000-4000-8000-000000000003": "Plays the cello",
}


@pytest.fixture
def facts_with_ids(ltm, tmp_path):
    """alice's facts with the ids of IDS (two share the prefix 3f2c); bob has the third."""
    stamp = "2025-01-02T03:04:05+00:00"
    lines = [
        json.dumps({"id": fact_id, "content": text, "created_at": stamp, "updated_at": stamp})
        for fact_id, text in IDS.items()
    ]
    path = tmp_path / "ids.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert ltm("import", "--user", "alice", str(path))[0] == 0
    path.write_text(lines[2] + "\n", encoding="utf-8")
    assert ltm("import", "--user", "bob", str(path))[0] == 0


def _alice_ids(ltm):
    return sorted(f["id"] for f in as_json(ltm("list", "--user", "alice", "--json")[1]))


def test_forget_takes_a_unique_prefix(ltm, facts_with_ids):
    code, out, err = ltm("forget", "--user", "alice", "7d1e", "--json")
    assert (code, err) == (0, "")
    assert as_json(out) == {
        "user_id": "alice",
        "id": "7d1e0000-0000-4000-8000-000000000003",
        "forgotten": True,
    }
    code, out, _ = ltm("forget", "--user", "alice", "3f2c9b00")  # the 8 characters the demo prints
    assert (code, out.strip()) == (
        0,
        "Forgot fact 3f2c9b00-0000-4000-8000-000000000002 of user 'alice'.",
    )
    assert _alice_ids(ltm) == ["3f2c1a00-0000-4000-8000-000000000001"]
    # bob's copy of the cello fact was not touched: prefixes are looked up among the user's facts
    code, out, _ = ltm("list", "--user", "bob", "--json")
    assert [f["id"] for f in as_json(out)] == ["7d1e0000-0000-4000-8000-000000000003"]


def test_an_ambiguous_prefix_exits_2_and_lists_the_candidates(ltm, facts_with_ids):
    code, out, err = ltm("forget", "--user", "alice", "3f2c")
    assert (code, out) == (2, "")
    assert err.startswith("ltm: error: '3f2c' begins 2 facts of user 'alice'; give more of the id:")
    assert "3f2c1a00-0000-4000-8000-000000000001  Owns a cat" in err
    assert "3f2c9b00-0000-4000-8000-000000000002  Lives in Lisbon" in err
    assert "7d1e" not in err
    assert len(_alice_ids(ltm)) == 3  # nothing deleted


def test_a_prefix_of_nothing_exits_1(ltm, facts_with_ids):
    code, out, err = ltm("forget", "--user", "alice", "abcd")
    assert (code, out) == (1, "")
    assert "user 'alice' has no fact with id 'abcd' (nor one starting with it)" in err
    assert "ltm list --user alice" in err
    code, _, _ = ltm("forget", "--user", "bob", "3f2c1a00")  # alice's fact, not bob's
    assert code == 1
    assert len(_alice_ids(ltm)) == 3


def test_a_prefix_needs_4_characters(ltm, facts_with_ids):
    code, _, err = ltm("forget", "--user", "alice", "7d1")
    assert code == 2 and "'7d1' is too short for an id prefix (give 4 characters or more)" in err
    assert "7d1e0000-0000-4000-8000-000000000003  Plays the cello" in err  # what it would be
    assert len(_alice_ids(ltm)) == 3


def test_a_whole_id_wins_over_a_prefix(ltm, tmp_path):
    """Ids from an import can be short, and one id can begin another: the whole id is meant."""
    stamp = "2025-01-02T03:04:05+00:00"
    path = tmp_path / "short.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": i, "content": t, "created_at": stamp, "updated_at": stamp}) + "\n"
            for i, t in [("f1", "Owns a cat"), ("f10", "Lives in Lisbon")]
        ),
        encoding="utf-8",
    )
    assert ltm("import", "--user", "alice", str(path))[0] == 0
    code, out, _ = ltm("forget", "--user", "alice", "f1", "--json")
    assert code == 0 and as_json(out)["id"] == "f1"
    assert _alice_ids(ltm) == ["f10"]


# ---- progress bars -------------------------------------------------------------------------


class Tty(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def terminal(monkeypatch, tmp_path):
    """Run `ltm ... --store <tmp>/q` with stderr a fake terminal, bars from 2 items on.

    Returns ``run(*args) -> (exit code, what the terminal got)``.
    """
    monkeypatch.setattr(cli_session, "MANY", 2)
    store = str(tmp_path / "q")

    def run(*args):
        err = Tty()
        monkeypatch.setattr(sys, "stderr", err)
        code = cli.main([*args, "--store", store])
        return code, err.getvalue()

    return run


def test_every_long_command_draws_a_bar_on_a_terminal(terminal, tmp_path, capsys):
    from tests.unit_tests.test_cli import _chatted

    code, err = terminal("remember", "--user", "alice", "Owns a cat", "Lives in Lisbon", "Is 40")
    assert code == 0 and err.startswith("\rremember [") and "3/3 (100%)" in err
    assert "facts/s" in err and err.endswith("\n")

    code, err = terminal("export", "--user", "alice", "-o", str(tmp_path / "a.jsonl"))
    assert code == 0 and err.startswith("\rexport [") and "0/3 (0%)" in err
    assert "3/3 (100%)" in err and "items/s" in err

    code, err = terminal("clear", "--user", "alice", "--yes")
    assert code == 0 and err.startswith("\rclear [") and "3/3 (100%)" in err

    _chatted(tmp_path / "q")  # alice and bob: facts with versions, session turns, threads
    code, err = terminal("stats")
    assert code == 0 and err.startswith("\rstats [") and "2/2 (100%)" in err and "users/s" in err

    code, err = terminal("export-user-data", "--user", "alice", "-o", str(tmp_path / "a.json"))
    assert code == 0 and err.startswith("\rexport-user-data [")
    total = err.split("/")[1].split()[0]  # facts, versions, turns and thread records
    assert int(total) > 4 and f"{total}/{total} (100%)" in err

    code, err = terminal("forget-user", "--user", "alice", "--yes")
    assert code == 0 and err.startswith("\rforget-user [") and f"{total}/{total} (100%)" in err
    assert "Erased user 'alice'" in capsys.readouterr().out


def test_no_bar_below_many_items(terminal, monkeypatch):
    monkeypatch.setattr(cli_session, "MANY", 4)
    code, err = terminal("remember", "--user", "alice", "Owns a cat", "Lives in Lisbon", "Is 40")
    assert (code, err) == (0, "")
    assert terminal("clear", "--user", "alice", "--yes") == (0, "")


def test_no_bar_and_no_count_off_a_terminal(ltm, monkeypatch):
    def no_count(self, *namespaces):
        def count():
            raise AssertionError("off a terminal nothing is counted for a bar")

        return count

    monkeypatch.setattr(cli_session, "MANY", 1)
    monkeypatch.setattr(cli_session.Session, "counter", no_count)
    for args in (
        ["remember", "--user", "alice", "Owns a cat", "Lives in Lisbon"],
        ["export", "--user", "alice"],
        ["export-user-data", "--user", "alice"],
        ["stats"],
        ["clear", "--user", "alice", "--yes"],
        ["forget-user", "--user", "alice", "--yes"],
    ):
        code, _, err = ltm(*args)  # stderr is captured: not a terminal
        assert (code, err) == (0, ""), args
