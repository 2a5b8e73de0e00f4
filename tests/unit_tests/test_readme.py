"""The README's quickstart runs as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def python_block(heading: str) -> str:
    """The first Python block after ``heading`` (a heading, or any text that starts a part)."""
    text = README.read_text()
    start = text.index(f"## {heading}") if not heading.startswith("**") else text.index(heading)
    return re.search(r"```python\n(.*?)```", text[start:], re.S).group(1)


def test_quickstart_runs_as_written(capsys):
    code = python_block("Quickstart")
    assert len(code.strip().splitlines()) <= 16
    exec(compile(code, "README quickstart", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "created"
    assert lines[1] == "duplicate"
    assert lines[2].startswith("updated ") and lines[2].endswith("I prefer answers in Spanish")
    assert lines[3] == "created [('My sister is allergic to peanuts', 'different_subject')]"
    assert "Spanish" in lines[4]
    assert lines[-1] == "[]"


def test_agent_example_runs_as_written(capsys, monkeypatch):
    monkeypatch.delenv("LTM_CHAT_MODEL", raising=False)
    exec(compile(python_block("Memory tools for agents"), "README agent example", "exec"), {})
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1] == "['Prefers answers in Spanish', 'Works on the payments team']"


def test_memory_middleware_example_runs_as_written(capsys):
    exec(compile(python_block("Memory without the model asking"), "README middleware", "exec"), {})
    assert capsys.readouterr().out.strip().splitlines()[-1] == "Estás en el equipo de pagos."


def test_ttl_example_runs_as_written(capsys):
    exec(compile(python_block("TTL: items that expire"), "README TTL example", "exec"), {})
    assert capsys.readouterr().out.strip().splitlines() == [
        "None",
        "['cart', 'draft', 'profile']",
        "1",
    ]


def test_session_and_erase_examples_run_in_sequence(capsys):
    scope: dict = {}
    for heading in ("Memory without the model asking", "Session memory", "Erasing a user"):
        exec(compile(python_block(heading), f"README {heading}", "exec"), scope)
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-2] == "Your passport."
    assert lines[-1] == "3 2 ('t1', 't2')"
    assert scope["store"].list_all("alice") == []
    assert [f["content"] for f in scope["data"]["facts"]] != []


def test_fact_store_example_runs_as_written(capsys, tmp_path, monkeypatch):
    from langchain_ltm import LongTermMemoryStore
    from langchain_ltm.embeddings import LocalMiniLMEmbeddings

    monkeypatch.chdir(tmp_path)
    code = python_block("**Only the facts, quickly**")
    exec(compile(code, "README FactStore example", "exec"), {})
    assert capsys.readouterr().out.strip() == "['Prefers answers in Spanish']"
    with LongTermMemoryStore.from_sqlite("memories.db", LocalMiniLMEmbeddings()) as store:
        assert [f.content for f in store.list_all("alice@example.com")] == [
            "Prefers answers in Spanish"
        ]


def test_when_and_where_example_runs_as_written(capsys):
    code = python_block("When and where a fact came from")
    exec(compile(code, "README when and where", "exec"), {})
    expected = code.strip().splitlines()[-1].removeprefix("# ")
    assert capsys.readouterr().out.strip().splitlines() == [expected]
