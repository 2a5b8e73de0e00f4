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
    session_2 = first.split("session-2")[1].split("[bob")[0]
    assert "no tool call needed" in session_2 and "Prefers answers in Spanish" in session_2
    assert "Works on the payments team" in session_2 and "tool recall_facts" not in session_2
    bob = first.split("[bob")[1]
    assert "I don't remember anything about you yet." in bob and "(nothing)" in bob
    erased = first.split("asks to be forgotten")[1]
    assert '"facts": 1' in erased and '"threads": 1' in erased
    assert "cello" not in first.split("What is stored now:")[1]
    assert "4111" not in first.split("What is stored now:")[1]
    demo.main([])  # a second run finds the same store on disk
    second = capsys.readouterr().out
    alice_again = second.split("[carol")[0]  # carol was erased, so she is new again
    assert '"action": "duplicate"' in alice_again and '"action": "created"' not in alice_again


def test_data_dir_and_redaction(monkeypatch, tmp_path):
    monkeypatch.setenv("LTM_HOME", str(tmp_path / "x"))
    assert data_dir() == tmp_path / "x"
    monkeypatch.delenv("LTM_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert data_dir() == tmp_path / "langchain-ltm"
    assert _redact("postgresql://u:secret@h:5432/db") == "postgresql://***@h:5432/db"
