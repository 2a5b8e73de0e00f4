"""`make demo` runs the main job: two sessions, isolation, a refused secret, persistence."""

from langchain_ltm import demo
from langchain_ltm.defaults import _redact, data_dir


def test_demo_runs_and_persists(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LTM_HOME", str(tmp_path))
    monkeypatch.delenv("LTM_CHAT_MODEL", raising=False)
    demo.main([])
    first = capsys.readouterr().out
    assert "SCRIPTED" in first
    assert '"action": "created"' in first and '"action": "rejected"' in first
    assert "session-2" in first and "Prefers answers in Spanish" in first.split("session-2")[1]
    bob = first.split("[bob")[1]
    assert '{"facts": []}' in bob and "(nothing)" in bob
    assert "4111" not in first.split("What is stored now:")[1]
    demo.main([])  # a second run finds the same store on disk
    second = capsys.readouterr().out
    assert '"action": "duplicate"' in second and '"action": "created"' not in second


def test_data_dir_and_redaction(monkeypatch, tmp_path):
    monkeypatch.setenv("LTM_HOME", str(tmp_path / "x"))
    assert data_dir() == tmp_path / "x"
    monkeypatch.delenv("LTM_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert data_dir() == tmp_path / "langchain-ltm"
    assert _redact("postgresql://u:secret@h:5432/db") == "postgresql://***@h:5432/db"
