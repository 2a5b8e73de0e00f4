"""`ltm` usability: a fast --help, global options anywhere, id prefixes, env defaults, progress."""

import subprocess
import sys

import pytest

from langchain_ltm import defaults
from langchain_ltm.cli import parser
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
    from langchain_ltm import cli

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
