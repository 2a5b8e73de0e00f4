"""Several processes on one SQLite file: readers never wait, writers wait, then fail clearly.

Every worker is a real Python process with its own store on the same file. Workers that
must run at the same moment print ``ready`` and wait for a line on stdin. Every wait has a
deadline, so a bug fails the test instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

import pytest

from langchain_ltm import BackendError, LongTermMemoryStore
from tests.fakes import KeywordEmbeddings

ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 120

PRELUDE = """
import json, sys, time
from langchain_ltm import LongTermMemoryStore
from tests.fakes import KeywordEmbeddings

def store(path, **kwargs):
    return LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(dims=64), **kwargs)

def wait_for_go():
    print("ready", flush=True)
    sys.stdin.readline()
"""

# holds SQLite's write lock (an open BEGIN IMMEDIATE) until told to commit
HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT OR REPLACE INTO ltm_items_meta (name, value) VALUES ('holder', 1)")
print("holding", flush=True)
sys.stdin.readline()
conn.execute("COMMIT")
"""

READER = (
    PRELUDE
    + """
path = sys.argv[1]
s = store(path)
s.list_all("warm-up")
wait_for_go()
started = time.monotonic()
facts = [f.content for f in s.recall("alice", "green tea", limit=10)]
listed = [f.content for f in s.list_all("alice")]
found = [i.key for i in s.search(("memories",), query="tea")]
print(json.dumps({"recall": facts, "list": listed, "search": len(found),
                  "seconds": time.monotonic() - started}), flush=True)
"""
)


def spawn(code: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )


def expect_line(proc: subprocess.Popen[str], line: str) -> None:
    assert proc.stdout is not None
    got = proc.stdout.readline().strip()
    if got != line:
        proc.kill()
        raise AssertionError(f"worker said {got!r}, not {line!r}: {proc.stderr.read()}")


def go(procs: list[subprocess.Popen[str]]) -> list[str]:
    """Start every ready worker at once; their stdout once they exit (each must exit 0)."""
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    outputs = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=DEADLINE)
            assert proc.returncode == 0, err
            outputs.append(out)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    return outputs


@pytest.fixture
def path(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    seed = LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(dims=64))
    seed.remember("alice", ["I like green tea", "I live in Paris"])
    seed.close()
    return path


@pytest.fixture
def holder(path):
    """Another process holding the file's write lock until ``release()``."""
    proc = spawn(HOLDER, path)
    expect_line(proc, "holding")

    def release() -> None:
        if proc.poll() is None:
            assert proc.stdin is not None
            proc.stdin.write("commit\n")
            proc.stdin.flush()
            proc.wait(timeout=DEADLINE)

    yield release
    release()


def test_readers_in_several_processes_go_on_while_another_process_writes(path, holder):
    readers = [spawn(READER, path) for _ in range(4)]
    for proc in readers:
        expect_line(proc, "ready")
    for out in go(readers):  # the write lock is held the whole time
        answer = json.loads(out)
        assert sorted(answer["recall"]) == ["I like green tea", "I live in Paris"]
        assert sorted(answer["list"]) == ["I like green tea", "I live in Paris"]
        assert answer["search"] == 2
        assert answer["seconds"] < 5  # nowhere near the 10 s busy timeout: nobody waited


def test_a_writer_blocked_past_the_busy_timeout_gets_a_clear_error(path, holder):
    store = LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(dims=64), busy_timeout=0.3)
    started = time.monotonic()
    with pytest.raises(BackendError, match=r"busy_timeout=0\.3 s") as caught:
        store.remember("bob", "I like coffee")
    assert time.monotonic() - started >= 0.3
    message = str(caught.value)
    assert "nothing of this call was written" in message and "Retry" in message
    assert store.list_all("bob") == []  # reads still work while the lock is held
    holder()
    assert store.remember("bob", "I like coffee").action == "created"
    store.close()


async def test_an_async_writer_blocked_past_the_busy_timeout_gets_a_clear_error(path, holder):
    store = LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(dims=64), busy_timeout=0.3)
    with pytest.raises(BackendError, match="busy_timeout"):
        await store.aput(("docs",), "k", {"text": "tea"})
    holder()
    await store.aput(("docs",), "k", {"text": "tea"})
    assert (await store.aget(("docs",), "k")).value == {"text": "tea"}
    await store.aclose()


def test_reads_of_ttl_items_go_on_while_another_process_writes(path):
    """A read refreshes its TTL items (a write): with another process holding SQLite's write
    lock it waited busy_timeout, then raised "nothing of this call was written", returning
    nothing. The refresh is skipped instead: the read answers at once, the items keep their
    expiry, and a later read refreshes them."""
    store = LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(dims=64), busy_timeout=3)
    store.remember("bob", "I like green tea", ttl=60)
    store.put(("docs",), "k", {"text": "tea"}, ttl=60)
    keys = [(("docs",), "k"), *((store.user_namespace("bob"), f.id) for f in store.list_all("bob"))]

    def expiries() -> list[object]:
        return [item.expires_at for item in store.backend.get(keys)]

    before = expiries()
    other = spawn(HOLDER, path)
    try:
        expect_line(other, "holding")
        started = time.monotonic()
        assert [f.content for f in store.recall("bob", "green tea")] == ["I like green tea"]
        assert [f.content for f in store.list_all("bob")] == ["I like green tea"]
        assert store.get(("docs",), "k").value == {"text": "tea"}
        assert [i.key for i in store.search(("docs",), query="tea")] == ["k"]
        assert time.monotonic() - started < 2  # no read waited for the 3 s busy timeout
        assert expiries() == before  # skipped: nothing expires sooner than before the reads
    finally:
        go([other])
    store.get(("docs",), "k")
    store.recall("bob", "green tea")
    assert all(after > old for after, old in zip(expiries(), before, strict=True))
    store.close()


async def test_async_reads_of_ttl_items_go_on_while_another_process_writes(path):
    store = LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(dims=64), busy_timeout=3)
    await store.aremember("bob", "I like green tea", ttl=60)
    other = spawn(HOLDER, path)
    try:
        expect_line(other, "holding")
        started = time.monotonic()
        recalled = await store.arecall("bob", "green tea")
        assert [f.content for f in recalled] == ["I like green tea"]
        assert time.monotonic() - started < 2
    finally:
        go([other])
    await store.aclose()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_read_only_file_reads_its_ttl_facts():
    """A file this process may not write: facts with a TTL could not be read at all (the
    read's refresh raised "read-only"); now the refresh is skipped and the read answers."""
    import shutil
    import tempfile

    from langchain_ltm.facts import FactStore

    # a folder another user can reach (pytest's tmp folders are root's only)
    folder = Path(tempfile.mkdtemp(prefix="ltm-ro-"))
    try:
        db = folder / "m.db"
        seed = FactStore.from_sqlite(str(db), KeywordEmbeddings(dims=64))
        seed.remember("bob", "bob likes green tea", ttl=600)
        seed.close()
        if os.geteuid() == 0:  # root writes anything: read as nobody, as the hunt did
            for entry in [folder, *folder.iterdir()]:
                os.chown(entry, 65534, 65534)
        os.chmod(db, 0o444)
        folder.chmod(0o755)
        out, into = os.pipe()
        pid = os.fork()
        if pid == 0:  # the reader: another process, as another user when root
            code = 1
            try:
                if os.geteuid() == 0:
                    os.setgid(65534)
                    os.setuid(65534)
                reader = FactStore.from_sqlite(str(db), KeywordEmbeddings(dims=64))
                recalled = [f.content for f in reader.recall("bob", "green tea")]
                os.write(into, json.dumps(recalled).encode())
                code = 0
            except BaseException as exc:
                os.write(into, repr(exc).encode())
            finally:
                os._exit(code)
        os.close(into)
        with os.fdopen(out) as said:
            answer = said.read()
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, answer
        assert json.loads(answer) == ["bob likes green tea"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


WRITER = (
    PRELUDE
    + """
s = store(sys.argv[1], merge_threshold=1.0)
wait_for_go()
for i in range(int(sys.argv[2])):
    # one word each (no shared words, no numbers apart): five new facts per batch
    s.remember("writer", [f"w{i}x{j}" for j in range(5)])
print("done", flush=True)
"""
)

POLLER = (
    PRELUDE
    + """
s = store(sys.argv[1])
wait_for_go()
counts, deadline = [], time.monotonic() + 30
while time.monotonic() < deadline:
    counts.append(len(s.list_all("writer")))
    if counts[-1] == int(sys.argv[2]):
        break
print(json.dumps(counts), flush=True)
"""
)


def test_readers_see_a_writers_batches_whole_and_in_order(path):
    batches = 30
    writer = spawn(WRITER, path, str(batches))
    pollers = [spawn(POLLER, path, str(batches * 5)) for _ in range(3)]
    for proc in [writer, *pollers]:
        expect_line(proc, "ready")
    out = go([writer, *pollers])
    assert out[0].strip() == "done"
    for counts in (json.loads(line) for line in out[1:]):
        assert counts[-1] == batches * 5
        assert counts == sorted(counts)  # a reader never sees a write go away
        assert all(n % 5 == 0 for n in counts)  # a batch lands whole or not at all


PARAPHRASER = (
    PRELUDE
    + """
s = store(sys.argv[1], merge_threshold=0.6)
wait_for_go()
result = s.remember("carol", sys.argv[2])
print(result.action, result.fact.id, flush=True)
"""
)

# every pair shares 5 of 6 words: cosine about 0.83 with KeywordEmbeddings, above 0.6
# each one changes the value of the others (an update in any order)
PARAPHRASES = [f"I have {n} cats at home" for n in range(1, 7)]


def test_processes_remembering_paraphrases_end_with_one_fact(path):
    """Without the per-user lock every process reads "nothing similar yet" and creates."""
    procs = [spawn(PARAPHRASER, path, text) for text in PARAPHRASES]
    for proc in procs:
        expect_line(proc, "ready")
    outputs = go(procs)
    actions = sorted(out.split()[0] for out in outputs)
    assert actions == ["created"] + ["updated"] * (len(PARAPHRASES) - 1)
    assert len({out.split()[1] for out in outputs}) == 1  # every process hit one fact
    store = LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(dims=64))
    (fact,) = store.list_all("carol")
    # nothing a process said is lost: the other five texts are its earlier versions
    assert sorted([fact.content, *(v.content for v in fact.history)]) == sorted(PARAPHRASES)
    store.close()


COUNTER = (
    PRELUDE
    + """
from langchain_ltm.backends.sqlite import sqlite_backend
backend = sqlite_backend(sys.argv[1])
s = LongTermMemoryStore(backend, embeddings=KeywordEmbeddings(dims=64))
wait_for_go()
for _ in range(int(sys.argv[2])):
    token = backend.lock("counter")
    try:
        item = s.get(("counters",), "n")
        s.put(("counters",), "n", {"n": (item.value["n"] if item else 0) + 1}, index=False)
    finally:
        backend.unlock(token)
print("done", flush=True)
"""
)


def test_processes_incrementing_one_counter_under_the_lock_lose_nothing(path):
    procs = [spawn(COUNTER, path, "25") for _ in range(4)]
    for proc in procs:
        expect_line(proc, "ready")
    go(procs)
    store = LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(dims=64))
    assert store.get(("counters",), "n").value == {"n": 100}
    store.close()


LOCK_HOLDER = """
import sys
from langchain_ltm.backends.sqlite import sqlite_backend
backend = sqlite_backend(sys.argv[1])
token = backend.lock("alice")
print("locked", flush=True)
sys.stdin.readline()
backend.unlock(token)
"""


def test_a_symlink_and_its_target_share_the_per_user_lock(path, tmp_path):
    """A process holding alice's lock through the file's real path excludes a process
    opening it through a symlink (each name had its own lock folder: no exclusion)."""
    import threading

    from langchain_ltm.backends.sqlite import sqlite_backend

    link = tmp_path / "link.sqlite"
    link.symlink_to(path)
    through_link = sqlite_backend(str(link))
    real = sqlite_backend(path)
    assert through_link._locks.folder == real._locks.folder == f"{path}-locks"
    real.close()
    holder = spawn(LOCK_HOLDER, path)
    try:
        expect_line(holder, "locked")
        taken = threading.Event()

        def take() -> None:
            through_link.unlock(through_link.lock("alice"))
            taken.set()

        waiter = threading.Thread(target=take, daemon=True)
        waiter.start()
        assert not taken.wait(0.5)  # waits for the other process's hold
        go([holder])  # the holder unlocks and exits
        assert taken.wait(DEADLINE)
    finally:
        if holder.poll() is None:
            holder.kill()
        through_link.close()


def _wait_for(event) -> None:  # a forked worker doing unrelated work until told to stop
    event.wait(DEADLINE)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_does_not_keep_the_lock_its_parent_releases(path):
    """A thread holds alice's lock while the process forks a long-lived worker: once the
    thread releases it, alice can be locked again (the child's copy of the lock file kept
    the flock: every writer of alice waited for the child to exit)."""
    import multiprocessing
    import threading

    from langchain_ltm.backends.sqlite import sqlite_backend

    backend = sqlite_backend(path)
    ctx = multiprocessing.get_context("fork")
    stop = ctx.Event()
    held, release = threading.Event(), threading.Event()

    def holder() -> None:  # stands for a remember of alice in progress
        token = backend.lock("alice")
        held.set()
        release.wait(DEADLINE)
        backend.unlock(token)

    waiter = threading.Thread(target=holder, daemon=True)
    waiter.start()
    assert held.wait(DEADLINE)
    child = ctx.Process(target=_wait_for, args=(stop,))
    child.start()
    try:
        release.set()
        waiter.join(DEADLINE)
        taken = threading.Event()

        def take() -> None:
            backend.unlock(backend.lock("alice"))
            taken.set()

        threading.Thread(target=take, daemon=True).start()
        assert taken.wait(5), "alice's lock is still held by the forked child"
        assert child.is_alive()
    finally:
        stop.set()
        child.join(DEADLINE)
        backend.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_never_releases_its_parents_lock(path):
    """A child forked while its parent holds alice's lock holds nothing: its unlock of the
    copied token does nothing, and the parent's lock excludes other processes throughout."""
    from langchain_ltm.backends.sqlite import sqlite_backend

    backend = sqlite_backend(path)
    token = backend.lock("alice")
    pid = os.fork()
    if pid == 0:  # the child: release what it believes it holds, then leave at once
        code = 1
        try:
            backend.unlock(token)
            code = 0 if token.released else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    other = spawn(LOCK_HOLDER, path)
    try:
        assert other.stdout is not None
        with selectors.DefaultSelector() as waiting:  # poll/epoll: select() caps fds at 1024
            waiting.register(other.stdout, selectors.EVENT_READ)
            ready = waiting.select(3)
        assert not ready and other.poll() is None  # still waiting for the parent's lock
        backend.unlock(token)
        expect_line(other, "locked")
        go([other])
    finally:
        if other.poll() is None:
            other.kill()
        backend.close()
