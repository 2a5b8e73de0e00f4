"""Running the ``ltm`` command in the test process, for the CLI tests.

:func:`ltm` calls ``cli.main`` with stdout and stderr captured, as a user's shell would see
them; :func:`isolated_home` (an autouse fixture for the modules that import it) points
``LTM_HOME`` at the test's own folder and clears ``LTM_STORE``, so no test reads or writes
the user's real data directory or follows their default store.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from langchain_ltm import cli

__all__ = ["isolated_home", "ltm"]


def ltm(*args: object) -> tuple[int, str, str]:
    """Run ``ltm ARGS...`` in process; returns (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``LTM_HOME`` is ``tmp_path / "home"`` and ``LTM_STORE`` unset, for each test."""
    home = tmp_path / "home"
    monkeypatch.setenv("LTM_HOME", str(home))
    monkeypatch.delenv("LTM_STORE", raising=False)
    return home
