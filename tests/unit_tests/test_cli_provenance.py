"""``ltm remember --meta K=V --at TIME``, ``ltm recall --meta K=V``, and what import keeps."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from tests.unit_tests.test_cli import as_json, ltm  # noqa: F401  (fixture)

SAID = "2023-05-08T13:56:00+00:00"


def test_remember_with_meta_and_at_then_recall_by_meta(ltm):
    code, out, err = ltm(
        "remember",
        "--user",
        "alice",
        "--meta",
        "source=chat",
        "--meta",
        "link=a=b",
        "--at",
        "2023-05-08T13:56Z",
        "--json",
        "Adopted a cat named Tom",
    )
    assert (code, err) == (0, "")
    (record,) = as_json(out)
    fact = record["fact"]
    assert fact["metadata"] == {"source": "chat", "link": "a=b"}
    assert (fact["valid_from"], fact["created_at"]) == (SAID, SAID)
    ltm("remember", "--user", "alice", "--at", "2023-05-09", "Owns a dog named Rex")
    code, out, _ = ltm("recall", "--user", "alice", "--meta", "source=chat", "pets", "--json")
    assert code == 0 and [f["content"] for f in as_json(out)] == ["Adopted a cat named Tom"]
    (dog,) = [
        f for f in as_json(ltm("list", "--user", "alice", "--json")[1]) if "dog" in f["content"]
    ]
    assert dog["valid_from"] == "2023-05-09T00:00:00+00:00"  # a time without a zone is UTC
    code, out, _ = ltm("recall", "--user", "alice", "--meta", "source=mail", "pets")
    assert code == 0 and out.strip() == "No facts of user 'alice' with source=mail match."


def test_bad_meta_and_at_exit_2_and_store_nothing(ltm):
    future = (datetime.now(timezone.utc) + timedelta(days=2)).isoformat()
    cases = [
        (("remember", "--meta", "source", "A fact"), "expected KEY=VALUE"),
        (("remember", "--meta", "=chat", "A fact"), "expected KEY=VALUE"),
        (("remember", "--at", "yesterday", "A fact"), "ISO 8601"),
        (("remember", "--at", future, "A fact"), "in the future"),
        (("remember", "--meta", "content=x", "A fact"), "'content' is a field of the stored fact"),
        (("recall", "--meta", "valid_from=x", "A fact"), "'valid_from' is a field of the stored"),
        (("recall", "--meta", "nothing", "A fact"), "expected KEY=VALUE"),
        (("remember", "--meta", "tag=work", "--meta", "tag=urgent", "A fact"), "given twice"),
        (("recall", "--meta", "tag=work", "--meta", "tag=urgent", "A fact"), "given twice"),
    ]
    for args, message in cases:
        code, _, err = ltm(args[0], "--user", "alice", *args[1:])
        assert code == 2 and message in err, (args, err)
    assert as_json(ltm("list", "--user", "alice", "--json")[1]) == []


def test_import_keeps_metadata_and_when_a_plain_line_was_said(ltm, tmp_path):
    path = tmp_path / "said.jsonl"
    line = {"content": "Went to a support group", "metadata": {"session": 1}, "valid_from": SAID}
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    code, _, err = ltm("import", "--user", "alice", str(path))
    assert (code, err) == (0, "")
    (fact,) = as_json(ltm("list", "--user", "alice", "--json")[1])
    assert (fact["metadata"], fact["valid_from"]) == ({"session": 1}, SAID)
    exported = tmp_path / "alice.jsonl"
    assert ltm("export", "--user", "alice", "-o", str(exported))[0] == 0
    assert ltm("import", "--user", "bob", str(exported))[0] == 0
    (copy,) = as_json(ltm("list", "--user", "bob", "--json")[1])
    assert {k: v for k, v in copy.items() if k != "user_id"} == {
        k: v for k, v in fact.items() if k != "user_id"
    }


def test_import_keeps_pinned_on_a_plain_line_and_checks_it(ltm, tmp_path):
    """A plain line's ``pinned`` was dropped unchecked: ``"pinned": "yes"`` exited 0."""
    path = tmp_path / "profile.jsonl"
    path.write_text(json.dumps({"content": "Name is Alice", "pinned": True}) + "\n")
    assert ltm("import", "--user", "alice", str(path))[0] == 0
    (fact,) = as_json(ltm("list", "--user", "alice", "--json")[1])
    assert fact["pinned"] is True
    path.write_text(json.dumps({"content": "Likes tea", "pinned": "yes"}) + "\n")
    code, _, err = ltm("import", "--user", "bob", str(path))
    assert code == 2 and "pinned must be true or false" in err
    assert ltm("list", "--user", "bob", "--json")[1].strip() == "[]"


def test_a_whole_number_is_a_number_on_both_sides(ltm, tmp_path):
    ltm("remember", "--user", "alice", "--meta", "session=1", "--meta", "zip=02134", "Has a cat")
    (fact,) = as_json(ltm("list", "--user", "alice", "--json")[1])
    assert fact["metadata"] == {"session": 1, "zip": "02134"}  # 02134: not a plain number
    path = tmp_path / "api.jsonl"  # what remember(..., metadata={"session": 2}) stores
    path.write_text(json.dumps({"content": "Has a dog", "metadata": {"session": 2}}) + "\n")
    assert ltm("import", "--user", "alice", str(path))[0] == 0
    for session, found in (("1", "Has a cat"), ("2", "Has a dog")):
        code, out, _ = ltm("recall", "--user", "alice", "--meta", f"session={session}", "pet")
        assert code == 0 and found in out and out.count("Has a") == 1, out
    code, out, _ = ltm("recall", "--user", "alice", "--meta", "zip=2134", "pet")
    assert "No facts of user 'alice' with zip=2134 match." in out
    # "-0" was stored as the number 0 (read back "0", not as typed); -5 is a number
    ltm("remember", "--user", "bob", "--meta", "x=-0", "--meta", "y=-5", "Has a fish")
    (fact,) = as_json(ltm("list", "--user", "bob", "--json")[1])
    assert fact["metadata"] == {"x": "-0", "y": -5}


def test_import_keeps_created_at_of_a_plain_line(ltm, tmp_path):
    path = tmp_path / "old.jsonl"
    line = {"content": "Adopted a cat named Luna", "created_at": "2021-04-01T00:00:00Z"}
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    assert ltm("import", "--user", "alice", str(path))[0] == 0
    (fact,) = as_json(ltm("list", "--user", "alice", "--json")[1])
    assert fact["created_at"] == fact["valid_from"] == "2021-04-01T00:00:00+00:00"
