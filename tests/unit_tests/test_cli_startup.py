"""What a short-lived ``ltm`` fact command imports: nothing it does not use.

Each module below costs start-up time in every command (``bench/cli_startup.py`` measures
it) and is needed only by async code, by writes, or by the model itself. Each test runs a
real command in a fresh interpreter on a real SQLite file and lists what got imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from langchain_ltm import LongTermMemoryStore
from tests.fakes import KeywordEmbeddings

NOT_NEEDED = (
    "asyncio",  # only async methods use it
    "concurrent",  # the SQLite engine's worker threads: async only
    "logging",  # only when there is something to log
    "uuid",  # new fact ids: writes only
    "subprocess",  # only to start the warm encoder
    "langchain_core",
    "langgraph",
    "pydantic",
    "onnxruntime",  # ltm list embeds nothing
    "tokenizers",
)


def _imported(argv: list[str], env: dict[str, str]) -> list[str]:
    script = (
        "import contextlib, io, sys\n"
        "from langchain_ltm.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main({argv!r})\n"
        "assert code == 0, code\n"
        "import json\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {NOT_NEEDED!r})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip())


@pytest.fixture
def store_url(tmp_path) -> str:
    path = tmp_path / "memories.db"
    # 384 dimensions, like the packaged MiniLM that ltm recall embeds the query with
    with LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(dims=384)) as store:
        store.remember("alice", ["likes green tea", "lives in Paris"])
    return f"sqlite:///{path}"


def _env(tmp_path) -> dict[str, str]:
    # off: the command embeds in its own process (no warm encoder is started by the test)
    return {**os.environ, "LTM_HOME": str(tmp_path / "home"), "LTM_ENCODER_SERVER": "off"}


def test_list_imports_only_what_it_uses(store_url, tmp_path):
    assert _imported(["list", "--user", "alice", "--store", store_url], _env(tmp_path)) == []


def test_recall_imports_the_model_but_nothing_else_it_does_not_use(store_url, tmp_path):
    argv = ["recall", "--user", "alice", "--store", store_url, "what does alice drink?"]
    found = _imported(argv, _env(tmp_path))
    assert "onnxruntime" in found  # it did embed here (the check sees imports)
    assert [m for m in found if m.split(".")[0] not in ("onnxruntime", "tokenizers")] == []
