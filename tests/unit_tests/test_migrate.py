"""`ltm migrate` between two embedded Qdrant folders, driven in-process through main()."""

import contextlib
import io
import json
import sys

import pytest

from langchain_ltm import cli
from langchain_ltm.cli import session as cli_session
from langchain_ltm.defaults import open_store
from tests.cli_runs import isolated_home, ltm  # noqa: F401  (isolated_home: autouse fixture)

NOTES = ("agent", "notes")
PREFS = ("prefs",)


@contextlib.contextmanager
def opened(folder):
    """The store in ``folder`` as the CLI opens it (closed after: one client per folder)."""
    store, _ = open_store(str(folder), embeddings=cli_session.default_embeddings())
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def source(tmp_path):
    """A folder store with two users' facts (one with two earlier versions) and other items."""
    folder = tmp_path / "source"
    with opened(folder) as store:
        kid = store.remember("alice", "Has one kid").fact
        second = store.remember("alice", "Has two kids now")
        if second.action != "updated":  # the model decides; make sure there are versions
            store.forget("alice", second.fact.id)
            store.update_fact("alice", kid.id, "Has two kids now")
        store.update_fact("alice", kid.id, "Has three kids")
        store.remember("alice", "Lives in Paris")
        store.remember("bob", ["Plays the cello", "Works on the payments team"])
        alice = store.user_namespace("alice")
        store.put(NOTES, "n1", {"text": "call back on Monday", "n": 1})
        store.put(PREFS, "theme", {"dark": True, "sizes": [1, 2.5]})
        store.put(alice, "profile", {"name": "Alice"})  # not a fact: no content
        store.put((*alice, "threads"), "t1", {"content": "a note under alice's namespace"})
        assert [len(f.history) for f in store.list_all("alice")] == [2, 0]
    return folder


def snapshot(folder, users=("alice", "bob")):
    """Everything in a store: each user's export, and every other item's value."""
    with opened(folder) as store:
        exports = {user: store.export_user(user) for user in users}
        items = {
            (item.namespace, item.key): item.value
            for item in store.search((), limit=1000)
            if not _is_fact(store, item)
        }
        kid_recall = store.recall("alice", "how many children?", limit=1)
        old = store.recall("alice", "one kid", include_history=True, limit=1)
    return exports, items, (kid_recall, old)


def _is_fact(store, item):
    return store.user_id_of(item.namespace) is not None and "content" in item.value


def test_migrate_copies_facts_versions_and_items(source, tmp_path):
    target = tmp_path / "target"
    code, out, err = ltm("migrate", "--from", source, "--to", target, "--json")
    assert (code, err) == (0, "")  # stderr is not a TTY: no progress bar
    report = json.loads(out)
    assert report["verified"] is True
    assert report["source"] == {"users": 2, "facts": 4, "versions": 2, "items": 4}
    assert report["target"] == report["source"]
    assert report["extra_in_target"] == {"facts": 0, "items": 0}
    assert [(u["user_id"], u["facts"], u["versions"]) for u in report["users"]] == [
        ("alice", 2, 2),
        ("bob", 2, 0),
    ]

    exports, items, _ = snapshot(source)
    copied, copied_items, (recalled, old) = snapshot(target)
    assert copied == exports  # ids, texts, timestamps, every version, metadata
    assert copied_items == items and len(items) == 4
    assert recalled[0].content == "Has three kids"  # the copy is indexed: recall works
    assert old[0].superseded and old[0].content == "Has one kid"  # and so are its versions
    assert snapshot(source)[0] == exports  # the source is only read


def test_migrate_prints_counts_for_people(source, tmp_path):
    code, out, _ = ltm("migrate", "--from", source, "--to", tmp_path / "target")
    rows = [line.split() for line in out.splitlines()]
    assert code == 0
    assert ["SOURCE", "TARGET"] in rows
    assert ["facts", "4", "4"] in rows and ["versions", "2", "2"] in rows
    assert ["other", "items", "4", "4"] in rows
    assert "Verified: the target has every fact, version and item" in out
    assert "time of the copy" not in out  # items keep their own created_at


def test_migrate_one_user(source, tmp_path):
    target = tmp_path / "target"
    code, out, _ = ltm("migrate", "--from", source, "--to", target, "--user", "alice", "--json")
    report = json.loads(out)
    assert code == 0 and report["verified"] and report["user_id"] == "alice"
    # alice's profile; not the item of ("memories", "alice", "threads") below her namespace
    assert report["source"] == {"users": 1, "facts": 2, "versions": 2, "items": 1}
    exports, items, _ = snapshot(source)
    copied, copied_items, _ = snapshot(target)
    assert copied == {"alice": exports["alice"], "bob": []}
    assert set(copied_items) == {k for k in items if k[0] == ("memories", "alice")}

    # then bob into the same target: it is not empty any more, but bob's part of it is
    code, out, _ = ltm("migrate", "--from", source, "--to", target, "--user", "bob", "--json")
    assert code == 0 and json.loads(out)["source"]["facts"] == 2
    assert snapshot(target)[0] == exports


def test_migrate_into_a_store_with_data_needs_yes_and_repeats_safely(source, tmp_path):
    target = tmp_path / "target"
    assert ltm("migrate", "--from", source, "--to", target)[0] == 0
    before = snapshot(target)[:2]
    code, out, err = ltm("migrate", "--from", source, "--to", target)
    assert (code, out) == (2, "")
    assert "holds 10 items already" in err and "--yes" in err
    code, out, _ = ltm("migrate", "--from", source, "--to", target, "--yes", "--json")
    assert code == 0 and json.loads(out)["verified"]
    assert snapshot(target)[:2] == before  # a second run changes nothing


def test_migrate_keeps_what_the_target_had(source, tmp_path):
    target = tmp_path / "target"
    with opened(target) as store:
        store.remember("carol", "Owns a boat")
        store.put(NOTES, "n2", {"text": "kept"})
    code, out, _ = ltm("migrate", "--from", source, "--to", target, "--yes", "--json")
    report = json.loads(out)
    assert code == 0 and report["verified"]
    assert report["extra_in_target"] == {"facts": 1, "items": 1}
    with opened(target) as store:
        assert [f.content for f in store.list_all("carol")] == ["Owns a boat"]
        assert store.get(NOTES, "n2").value == {"text": "kept"}


def test_migrate_exits_3_when_the_target_is_short(source, tmp_path):
    """A fact whose text the target user already has under another id is not restored."""
    target = tmp_path / "target"
    with opened(target) as store:
        rome = store.remember("alice", "Lives in Rome").fact
        store.update_fact("alice", rome.id, "Lives in Paris")  # same text, another id
    code, out, err = ltm("migrate", "--from", source, "--to", target, "--yes")
    assert code == 3
    assert err.startswith("ltm: error: the target does not have everything the source has")
    assert "--yes" in err
    rows = [line.split() for line in out.splitlines()]
    assert ["facts", "4", "3"] in rows
    paris = next(f for f in snapshot(source)[0]["alice"] if f["content"] == "Lives in Paris")
    assert ["USER", "FACTS", "VERSIONS", "NOT", "RESTORED", "(WHY)"] in rows
    assert f"{paris['id']} (the target has its text as another fact)" in out
    assert ["alice", "1/2", "2/2", paris["id"]] in [row[:4] for row in rows]

    code, out, _ = ltm("migrate", "--from", source, "--to", target, "--yes", "--json")
    report = json.loads(out)
    assert code == 3 and report["verified"] is False
    alice = next(u for u in report["users"] if u["user_id"] == "alice")
    assert (alice["facts"], alice["target_facts"], alice["conflicts"]) == (2, 1, [paris["id"]])
    assert alice["not_restored"] == [{"id": paris["id"], "reason": "same_text"}]


def test_migrate_is_not_verified_when_the_targets_fact_of_an_id_holds_other_texts(tmp_path):
    """The target's fact of the same id held other texts (Paris, then Rome): the source's
    (Paris, then Berlin) was not restored, a conflict, yet migrate said "Verified" and
    exited 0: it only checked that the id was there with as many versions."""
    source, target = f"sqlite:///{tmp_path / 'src.db'}", f"sqlite:///{tmp_path / 'dst.db'}"
    with opened(source) as store:
        fact = store.remember("u", "Lives in Paris").fact
        store.update_fact("u", fact.id, "Lives in Berlin")
    with opened(target) as store:
        store.import_user("u", [{"id": fact.id, "content": "Lives in Paris"}])
        store.update_fact("u", fact.id, "Lives in Rome")
    code, out, err = ltm("migrate", "--from", source, "--to", target, "--yes")
    assert code == 3 and "does not have everything" in err
    assert "Verified" not in out
    assert f"{fact.id} (the target's fact with this id holds other texts)" in out
    assert "same text as another fact" not in out
    code, out, _ = ltm("migrate", "--from", source, "--to", target, "--yes", "--json")
    report = json.loads(out)
    assert code == 3 and report["verified"] is False
    (user,) = report["users"]
    assert (user["target_facts"], user["conflicts"]) == (0, [fact.id])
    assert user["not_restored"] == [{"id": fact.id, "reason": "other_texts"}]
    with opened(target) as store:  # nothing of the target was overwritten
        assert [v.content for v in store.history("u", fact.id)] == [
            "Lives in Paris",
            "Lives in Rome",
        ]


def test_migrate_again_keeps_a_fact_the_target_has_since_kept_for_good(tmp_path):
    """Run again into a used target, migrate restored the source's older state of a fact
    the user had since said again for good (and pinned) there: it had its expiry back."""
    source, target = f"sqlite:///{tmp_path / 'src.db'}", f"sqlite:///{tmp_path / 'dst.db'}"
    with opened(source) as store:
        fact = store.remember("u", "Is allergic to penicillin", ttl=60).fact
    assert ltm("migrate", "--from", source, "--to", target)[0] == 0
    with opened(target) as store:
        store.remember("u", "Is allergic to penicillin", pinned=True)
        kept = store.export_user("u")
    assert kept[0]["expires_at"] is None and kept[0]["pinned"] is True
    code, out, err = ltm("migrate", "--from", source, "--to", target, "--yes", "--json")
    report = json.loads(out)
    assert (code, err, report["verified"]) == (0, "", True)
    (user,) = report["users"]
    assert (user["conflicts"], user["newer_in_target"], user["not_restored"]) == (
        [fact.id],
        [fact.id],
        [],
    )
    with opened(target) as store:
        assert store.export_user("u") == kept
    code, out, _ = ltm("migrate", "--from", source, "--to", target, "--yes")
    assert code == 0 and f"({fact.id}) was written there after the source's" in out


def test_migrate_again_keeps_the_expiry_reads_in_the_target_pushed(tmp_path, monkeypatch):
    """Run again into a target read since, migrate wrote the source's expiry back over the
    one the read had pushed (a read moves no ``updated_at``): both texts went early."""
    from datetime import datetime, timedelta, timezone

    from langchain_ltm import _clock
    from langchain_ltm.cli.commands import transfer

    now = [datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)]
    monkeypatch.setattr(_clock, "utcnow", lambda: now[0])
    monkeypatch.setattr(transfer, "utcnow", lambda: now[0])
    source, target = f"sqlite:///{tmp_path / 'src.db'}", f"sqlite:///{tmp_path / 'dst.db'}"
    with opened(source) as store:
        fact = store.remember("u", "Pam's rental car is a red Fiat", ttl=60).fact
        store.update_fact("u", fact.id, "Pam's rental car is a blue Fiat")
    assert ltm("migrate", "--from", source, "--to", target)[0] == 0
    now[0] += timedelta(minutes=50)
    with opened(target) as store:
        assert len(store.history("u", fact.id)) == 2  # a read: expires 110 min after the write
    now[0] += timedelta(minutes=5)
    code, out, err = ltm("migrate", "--from", source, "--to", target, "--yes", "--json")
    assert (code, err, json.loads(out)["verified"]) == (0, "", True)
    now[0] += timedelta(minutes=10)  # the source's expiry has passed, the read's has not
    with opened(target) as store:
        assert [v.content for v in store.history("u", fact.id, refresh_ttl=False)] == [
            "Pam's rental car is a red Fiat",
            "Pam's rental car is a blue Fiat",
        ]


@pytest.mark.parametrize("case", ["long", "guard_off", "clock_ahead"])
def test_migrate_copies_facts_the_source_holds_whatever_the_targets_input_policy(
    tmp_path, monkeypatch, case
):
    """Migrate restored each fact through the target's input checks: a source made with
    max_fact_chars=5000 holding a 3,015-character fact, one made with secret_guard=False,
    or a fact written by a machine whose clock ran 20 minutes ahead stopped it half way
    (exit 2, "record 1"), and again with --yes."""
    from datetime import timedelta

    from langchain_ltm import LongTermMemoryStore, _clock

    path = tmp_path / "src.db"
    options = {"long": {"max_fact_chars": 5000}, "guard_off": {"secret_guard": False}}
    store = LongTermMemoryStore.from_sqlite(
        path, cli_session.default_embeddings(), **options.get(case, {})
    )
    store.remember("alice", "Likes green tea")
    text = {
        "long": "Meeting notes: " + "lorem ipsum " * 250,
        "guard_off": "Wifi password is Tr0ub4dor&3xq",
        "clock_ahead": "Plays chess",
    }[case]
    if case == "clock_ahead":
        real = _clock.utcnow
        monkeypatch.setattr(_clock, "utcnow", lambda: real() + timedelta(minutes=20))
    bob = store.remember("bob", text).fact
    monkeypatch.undo()
    store.remember("carol", "Speaks Italian")
    store.close()
    source, target = f"sqlite:///{path}", f"sqlite:///{tmp_path / 'dst.db'}"
    code, out, err = ltm("migrate", "--from", source, "--to", target, "--json")
    assert (code, err) == (0, "") and json.loads(out)["verified"] is True
    with opened(target) as copied:
        (fact,) = copied.list_all("bob")
        assert (fact.id, fact.content, fact.created_at) == (bob.id, text, bob.created_at)
        assert [f.content for f in copied.list_all("carol")] == ["Speaks Italian"]


def test_migrate_names_the_user_and_fact_the_target_cannot_take(tmp_path):
    """What still fails a copy (here a client's item made to look like one of our facts,
    with no words in its text) names the user and the fact, not "record 1" of a batch."""
    source, target = f"sqlite:///{tmp_path / 'src.db'}", f"sqlite:///{tmp_path / 'dst.db'}"
    with opened(source) as store:
        store.remember("alice", "Likes green tea")
        store.put(store.user_namespace("bob"), "odd-1", {"content": "?!", "content_hash": "x"})
    code, _, err = ltm("migrate", "--from", source, "--to", target)
    assert code == 2
    assert "user 'bob', fact 'odd-1': content has no content" in err
    assert "record 1" not in err and "--yes" in err


def test_migrate_of_one_user_copies_their_session_turns_and_threads(tmp_path):
    """``--user`` copied the user's facts alone and said "Verified": the session turns
    and the thread records (what forget_user erases) stayed behind."""
    from langchain_ltm.agents._registry import session_namespace, thread_namespace

    source, target = f"sqlite:///{tmp_path / 'src.db'}", f"sqlite:///{tmp_path / 'dst.db'}"
    turn = {"thread_id": "t1", "turn": 1, "user": "hi", "answer": "hello", "text": "hi hello"}
    thread = {"thread_id": "t1", "first_seen": "2024-01-01T00:00:00+00:00"}
    with opened(source) as store:
        store.remember("bob", "Likes tea")
        for user in ("bob", "carol"):
            store.put(session_namespace(user), "t1:m1", turn, index=["text"])
            store.put(thread_namespace(user), "t1", thread, index=False)
        store.remember("carol", "Likes coffee")
    code, out, err = ltm("migrate", "--from", source, "--to", target, "--user", "bob", "--json")
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert report["verified"] is True
    assert (report["source"]["items"], report["target"]["items"]) == (2, 2)
    with opened(target) as store:
        assert [f.content for f in store.list_all("bob")] == ["Likes tea"]
        assert store.get(session_namespace("bob"), "t1:m1").value == turn
        assert store.get(thread_namespace("bob"), "t1").value == thread
        assert store.list_all("carol") == []
        assert store.get(session_namespace("carol"), "t1:m1") is None  # not bob's
    code, out, err = ltm("migrate", "--from", source, "--to", target, "--user", "bob")
    assert code == 2 and "holds 3 items for user 'bob'" in err  # the turn and thread count


def test_migrate_reads_every_page_as_of_one_moment(tmp_path, monkeypatch):
    """Items expiring while migrate ran made it skip live ones: each page was read by
    offset with the clock read again, so the expired items before it moved every later item
    up a place, and the ones at the page boundary were never read (nor copied)."""
    from datetime import datetime, timedelta, timezone

    from langgraph.store.base import PutOp

    from langchain_ltm.cli.commands import transfer

    source, target = f"sqlite:///{tmp_path / 'src.db'}", f"sqlite:///{tmp_path / 'dst.db'}"
    with opened(source) as store:
        store.batch([PutOp(("docs",), f"keep-{i:02}", {"text": f"doc {i}"}) for i in range(30)])
        store.batch([PutOp(("cache",), f"tmp-{i}", {"text": f"c {i}"}, ttl=1) for i in range(10)])
    start, calls = datetime.now(timezone.utc), []

    def ticking():  # each reading of the clock is two minutes later: the cache expires
        calls.append(None)
        return start + timedelta(minutes=2 * (len(calls) - 1))

    monkeypatch.setattr(transfer, "utcnow", ticking)
    code, out, err = ltm("migrate", "--from", source, "--to", target, "--batch-size", "10")
    assert (code, err) == (0, ""), err
    assert "Verified" in out
    with opened(target) as store:
        (hits,) = store.backend.search(transfer.SearchRequest(("docs",), None, (), None, 0))
    assert sorted(h.item.key for h in hits) == [f"keep-{i:02}" for i in range(30)]


def test_migrate_into_the_same_file_through_a_hard_link_is_refused(tmp_path):
    """A hard link is the same SQLite file under another name: it was taken for another
    store, and with --yes the migrate failed with "disk I/O error" (two WAL files)."""
    import os

    source = tmp_path / "a.db"
    with opened(f"sqlite:///{source}") as store:
        store.remember("alice", "Likes tea")
    os.link(source, tmp_path / "b.db")
    for extra in ([], ["--yes"]):
        code, out, err = ltm(
            "migrate", "--from", f"sqlite:///{source}", "--to", f"sqlite:///{tmp_path}/b.db", *extra
        )
        assert (code, out) == (2, "") and "the same store" in err
    with opened(f"sqlite:///{source}") as store:
        assert [f.content for f in store.list_all("alice")] == ["Likes tea"]


def test_migrate_exits_3_when_writes_go_missing(source, tmp_path, monkeypatch):
    from langchain_ltm.cli.commands import transfer

    real = transfer.copy_items

    def lossy(store, items, paths, **kwargs):  # the target drops one of the other items
        return real(store, items[1:], paths[1:], **kwargs)

    monkeypatch.setattr(transfer, "copy_items", lossy)
    code, out, err = ltm("migrate", "--from", source, "--to", tmp_path / "target", "--json")
    report = json.loads(out)
    assert code == 3 and "does not have everything" in err
    assert (report["source"]["items"], report["target"]["items"]) == (4, 3)


def test_migrate_shows_a_progress_bar_on_a_terminal(source, tmp_path, monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    err = Tty()
    monkeypatch.setattr(sys, "stderr", err)
    code = cli.main(["migrate", "--from", str(source), "--to", str(tmp_path / "t"), "--json"])
    assert code == 0
    assert err.getvalue().startswith("\rmigrate [")
    assert "10/10 (100%)" in err.getvalue() and "items/s" in err.getvalue()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--from", "memory://", "--to", "{t}"], "--from memory:// is a store inside one process"),
        (["--from", "{s}", "--to", "memory://"], "--to memory:// is a store inside one process"),
        (["--from", "{s}", "--to", "{s}"], "--from and --to are the same store"),
        (["--from", "{s}", "--to", "qdrant:{s}"], "--from and --to are the same store"),
        (["--from", "{s}"], "the following arguments are required: --to"),
        (["--from", "{s}/typo", "--to", "{t}"], "typo: there is no folder"),
        (["--from", "sqllite:///{s}/x.db", "--to", "{t}"], "unknown store scheme 'sqllite'"),
        (["--from", "mysql://host/db", "--to", "{t}"], "unknown store scheme 'mysql'"),
        (["--from", "{s}", "--to", "qdrant:"], "'qdrant:' names no folder"),
        (["--from", "{s}", "--to", "{t}", "--user", ""], "user_id is empty"),
    ],
)
def test_migrate_bad_usage_exits_2(source, tmp_path, args, expected):
    filled = [a.format(s=source, t=tmp_path / "target") for a in args]
    code, out, err = ltm("migrate", *filled)
    assert code == 2 and out == ""
    assert expected in err and "Traceback" not in err
    assert not (tmp_path / "target").exists()  # nothing was created
    assert not (source / "typo").exists()


def test_migrate_help_says_what_is_kept():
    code, out, _ = ltm("migrate", "--help")
    assert code == 0
    assert "--from" in out and "--to" in out and "--user" in out and "--yes" in out
    # the timestamps and indexed fields of other items are kept (checked below, by value)
    assert "created_at" in out and "byte for byte" in out and "time of the copy" not in out
    code, out, _ = ltm("--help")
    assert code == 0 and "migrate" in out


@pytest.mark.parametrize("relative", [False, True])
def test_migrate_from_a_missing_sqlite_file_exits_2_and_creates_nothing(
    tmp_path, monkeypatch, relative
):
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "missing.db"
    url = "sqlite:///missing.db" if relative else f"sqlite:///{missing}"
    code, out, err = ltm("migrate", "--from", url, "--to", str(tmp_path / "target"))
    assert code == 2 and out == ""
    assert f"--from {url}: there is no SQLite file at" in err and "Traceback" not in err
    assert not missing.exists() and not (tmp_path / "target").exists()


def test_migrate_between_a_folder_and_a_sqlite_file(source, tmp_path):
    db = tmp_path / "memories.db"
    code, out, err = ltm("migrate", "--from", str(source), "--to", f"sqlite:///{db}", "--json")
    assert code == 0, err
    assert json.loads(out)["verified"] is True
    code, out, err = ltm(
        "migrate", "--from", f"sqlite:///{db}", "--to", str(tmp_path / "back"), "--json"
    )
    assert code == 0, err
    assert json.loads(out)["verified"] is True
    with opened(source) as before, opened(tmp_path / "back") as after:
        for user in ("alice", "bob"):
            assert before.export_user(user) == after.export_user(user)
    code, _, err = ltm(
        "migrate", "--from", f"sqlite:///{db}", "--to", f"sqlite:///{tmp_path}/./memories.db"
    )
    assert code == 2 and "the same store" in err


def test_migrate_carries_metadata_and_when_each_version_was_said(tmp_path):
    from datetime import datetime, timezone

    source, target = tmp_path / "said", tmp_path / "copy.db"
    may = [datetime(2023, 5, day, 13, 56, tzinfo=timezone.utc) for day in (1, 8, 20)]
    with opened(source) as store:
        kid = store.remember("alice", "Has one kid", metadata={"session": 1}, observed_at=may[0])
        store.update_fact("alice", kid.fact.id, "Has two kids")  # said now, after the others
        store.remember("alice", "Has three kids", metadata={"session": 3}, observed_at=may[2])
        store.remember("alice", "Plays the cello", metadata={"session": 2}, observed_at=may[1])
    code, _, err = ltm("migrate", "--from", source, "--to", f"sqlite:///{target}")
    assert (code, err) == (0, "")
    exports, _, _ = snapshot(source, ("alice",))
    with opened(f"sqlite:///{target}") as copy:
        assert copy.export_user("alice") == exports["alice"]
        cello = copy.recall("alice", "music", filter={"session": 2})
        assert [(f.content, f.valid_from) for f in cello] == [("Plays the cello", may[1])]
        then = copy.recall("alice", "how many kids", as_of=may[1], filter={"session": 1})
        assert [(f.content, f.superseded) for f in then] == [("Has one kid", True)]


def test_migrate_reads_without_refreshing_ttls_and_keeps_them(tmp_path):
    source, target = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    with opened(source) as store:
        card = store.remember("alice", "Reported a lost card this morning", ttl=600).fact
        store.put(NOTES, "code", {"text": "the door code changes tonight"}, ttl=120)
        (note,) = store.backend.get([(NOTES, "code")])
    code, _, err = ltm("migrate", "--from", source, "--to", target)
    assert (code, err) == (0, "")
    for url in (source, target):
        with opened(url) as store:
            (fact,) = store.list_all("alice", refresh_ttl=False)
            (copied,) = store.backend.get([(NOTES, "code")])
        assert fact.expires_at == card.expires_at  # a read is no refresh, the copy the same
        assert copied is not None and copied.expires_at is not None
        assert (copied.expires_at, copied.ttl_minutes) == (note.expires_at, 120)


@pytest.mark.parametrize("to", ["sqlite", "folder"])
def test_migrate_copies_items_as_they_were_indexed_dated_and_expiring(tmp_path, monkeypatch, to):
    """An item keeps its timestamps, expiry and TTL (a read had pushed the expiry: the copy
    got the time left as its TTL, 5 minutes for an hour), and embeds what the source did: an
    ``index=False`` item had become the best hit for its text, and an item indexed on its
    title alone was embedded on the default fields."""
    from datetime import datetime, timedelta, timezone

    from langchain_ltm import _clock
    from langchain_ltm.cli.commands import transfer

    now = [datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)]
    monkeypatch.setattr(_clock, "utcnow", lambda: now[0])
    monkeypatch.setattr(transfer, "utcnow", lambda: now[0])
    source = f"sqlite:///{tmp_path / 'a.db'}"
    target = f"sqlite:///{tmp_path / 'b.db'}" if to == "sqlite" else tmp_path / "b"
    codes = {"text": "the launch codes are in the safe"}
    items = {
        "private": (codes, False),
        "titled": ({"title": "weather report", "body": codes["text"]}, ["title"]),
        "tagged": ({"tags": ["launch codes", "safe"], "text": "x"}, ["tags[*]"]),
        "plain": ({"text": "a note about lunch"}, None),
    }
    with opened(source) as store:
        for key, (value, index) in items.items():
            store.put(NOTES, key, value, index=index)
        store.put(NOTES, "code", {"text": "the door code changes tonight"}, ttl=60)
        now[0] += timedelta(minutes=50)
        assert store.get(NOTES, "code") is not None  # refreshed: expires 110 min after the put
    now[0] += timedelta(minutes=5)
    code, _, err = ltm("migrate", "--from", source, "--to", target)
    assert (code, err) == (0, "")
    seen = {}
    for url in (source, target):
        with opened(url) as store:
            keys = [(NOTES, key) for key in [*items, "code"]]
            stored = store.backend.get(keys)
            seen[url] = (
                [
                    (s.value, s.created_at, s.updated_at, s.expires_at, s.ttl_minutes)
                    for s in stored
                ],
                [sorted(p) for p in store.backend.indexed_paths(keys)],
                [
                    (h.key, h.score is None)
                    for h in store.search(NOTES, query="where are the launch codes", limit=9)
                ],
            )
    assert seen[source][0] == seen[target][0]  # values, timestamps, expiry, TTL
    assert (
        seen[source][1]
        == seen[target][1]
        == [
            [],
            ["title"],
            ["tags[*].0", "tags[*].1"],
            ["$"],  # the CLI's default: the whole value
            ["$"],
        ]
    )
    assert seen[target][2][-1] == ("private", True)  # still not embedded: never a ranked hit
    assert sorted(seen[source][2]) == sorted(seen[target][2])
    for step, alive in ((50, True), (30, True), (61, False)):  # a read pushes both an hour
        now[0] += timedelta(minutes=step)
        for url in (source, target):
            with opened(url) as store:
                assert (store.get(NOTES, "code") is not None) is alive, (url, step)


def test_migrate_copies_other_clients_items_in_a_users_namespace_as_they_are(tmp_path):
    """LangMem memories and deepagents files beside a user's facts are items, not new
    facts: none is checked as one (length, secrets, '@' in a key, a non-text content)."""
    folder = tmp_path / "source"
    odd = {
        "/.env": {"content": "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"},
        "empty": {"content": ""},
        "/big.md": {"content": "\n".join(f"line {i}" for i in range(500))},
        "/team@corp.md": {"content": "team file"},
        "profile": {"kind": "Memory", "content": {"name": "Al", "langs": ["es"]}},
        "notes": {"content": "release notes", "version_of": ["2.0", "2.1"]},  # not a str
    }
    with opened(folder) as store:
        alice = store.user_namespace("alice")
        fact = store.remember("alice", "Lives in Paris").fact
        store.update_fact("alice", fact.id, "Lives in Berlin")
        for key, value in odd.items():
            store.put(alice, key, value, index=False)
        store.put(("docs",), "notes", {"text": "Changes in 2.0", "version_of": "langgraph"})
    target = tmp_path / "target"
    code, out, err = ltm("migrate", "--from", folder, "--to", target, "--json")
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert report["verified"] is True
    assert (report["source"]["facts"], report["source"]["versions"]) == (1, 1)
    assert report["target"]["items"] == report["source"]["items"] == len(odd) + 1
    with opened(target) as copied:
        for key, value in odd.items():
            assert copied.get(alice, key).value == value  # byte for byte
        assert copied.get(("docs",), "notes").value["version_of"] == "langgraph"
        assert [v.content for v in copied.history("alice", fact.id)] == [
            "Lives in Paris",
            "Lives in Berlin",
        ]


def test_a_folder_that_holds_no_store_is_neither_read_nor_written(source, tmp_path):
    """An ordinary folder (or a Chroma folder given without ``chroma:``) was opened as a new
    Qdrant store: ``migrate --from`` it copied nothing and reported "Verified", and it
    wrote Qdrant files into the folder the help says is only read."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.txt").write_text("mine")
    code, out, err = ltm("migrate", "--from", docs, "--to", tmp_path / "target")
    assert code == 2 and out == "" and "holds files but no embedded Qdrant store" in err
    code, out, err = ltm("--store", docs, "--user", "u", "list")
    assert code == 2 and "holds files but no embedded Qdrant store" in err
    assert sorted(p.name for p in docs.iterdir()) == ["notes.txt"]  # untouched
    assert not (tmp_path / "target").exists()


def test_migrate_of_a_user_the_source_does_not_hold_is_refused(source, tmp_path):
    target = tmp_path / "target"
    code, out, err = ltm("migrate", "--from", source, "--to", target, "--user", "alcie")
    assert (code, out) == (2, "")  # not "Verified" for a copy of nothing
    assert "holds nothing for that user" in err and "'alice', 'bob'" in err
    assert not target.exists()  # checked before the target is opened (and created)


def test_migrate_copies_a_clients_item_that_names_a_fact_in_version_of(source, tmp_path):
    """It was taken for one of the fact's versions (in the export already) and not copied."""
    with opened(source) as store:
        fact_id = store.list_all("alice")[0].id
        note = {"content": "a client's note", "version_of": fact_id}
        store.put(store.user_namespace("alice"), "note", note)
    target = tmp_path / "target"
    code, out, _ = ltm("migrate", "--from", source, "--to", target, "--json")
    assert code == 0 and json.loads(out)["verified"]
    with opened(target) as store:
        assert store.get(store.user_namespace("alice"), "note").value == note


def test_migrate_of_one_user_leaves_the_namespaces_below_theirs(tmp_path):
    """``--user acme`` copied (and verified) the items of every namespace below acme's:
    ``("memories", "acme", "bob")`` is user bob of a configuration whose namespace is
    ``("memories", "acme")``, which forget_user and export-user-data leave alone."""
    source, target = f"sqlite:///{tmp_path / 'src.db'}", f"sqlite:///{tmp_path / 'dst.db'}"
    with opened(source) as store:
        store.remember("acme", "Acme pays invoices monthly")
        store.with_options(namespace=("memories", "acme")).remember("bob", "Bob's private note")
        bobs = ("memories", "acme", "bob")
        assert store.backend.count(bobs) == 1
    code, out, err = ltm("migrate", "--from", source, "--to", target, "--user", "acme", "--json")
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert report["verified"] is True
    assert report["source"] == {"users": 1, "facts": 1, "versions": 0, "items": 0}
    with opened(target) as store:
        assert [f.content for f in store.list_all("acme")] == ["Acme pays invoices monthly"]
        assert store.backend.count(bobs) == 0  # bob's note stayed in the source

    # a target holding only a namespace below acme's holds nothing of acme's: no --yes asked
    other = f"sqlite:///{tmp_path / 'other.db'}"
    with opened(other) as store:
        store.with_options(namespace=("memories", "acme")).remember("carol", "Carol's note")
    code, out, err = ltm("migrate", "--from", source, "--to", other, "--user", "acme", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["extra_in_target"] == {"facts": 0, "items": 0}

    # and a user whose namespace only has namespaces below it is no user of the source
    with opened(source) as store:
        store.clear_user("acme")
    code, out, err = ltm("migrate", "--from", source, "--to", other, "--user", "acme")
    assert (code, out) == (2, "") and "holds no user's memories at all" in err
