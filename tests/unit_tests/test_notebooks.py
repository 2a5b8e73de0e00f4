"""The notebooks are commit-ready: numbered, outputs stripped, minimal metadata.

Running them is nbmake's job (``pytest --nbmake notebooks``, part of ``make test``); this
checks the files themselves, so a notebook saved with outputs fails fast with a clear fix.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
FIX = "strip it with: nbstripout notebooks/*.ipynb"
ALLOWED_METADATA = {"kernelspec", "language_info"}


def test_notebooks_are_numbered_in_sequence():
    names = [p.name for p in PATHS]
    assert len(names) >= 4, names
    assert all(re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", n) for n in names), names
    assert [int(n[:2]) for n in names] == list(range(1, len(names) + 1)), names


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_notebook_is_stripped(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["nbformat"] == 4
    assert set(nb["metadata"]) <= ALLOWED_METADATA, f"{path.name}: extra metadata; {FIX}"
    assert set(nb["metadata"].get("language_info", {})) <= {"name"}, f"{path.name}: {FIX}"
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    cells = nb["cells"]
    assert cells[0]["cell_type"] == "markdown" and cells[0]["source"][0].startswith("# ")
    for i, cell in enumerate(cells):
        where = f"{path.name} cell {i}"
        assert cell["metadata"] == {}, f"{where} has metadata; {FIX}"
        assert cell.get("id") == str(i), f"{where} id {cell.get('id')!r}; {FIX}"
        assert "".join(cell["source"]).strip(), f"{where} is empty"
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [], f"{where} has outputs; {FIX}"
            assert cell["execution_count"] is None, f"{where} has an execution count; {FIX}"
