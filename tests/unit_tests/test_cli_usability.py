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
        "from langchain_ltm.cli import parser; parser.build_parser().parse_args("
        "['recall', '--store', 'memory://', '--user', 'a', '-q', 'x'])"
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
