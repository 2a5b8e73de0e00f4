"""Real worker processes started at the same moment (for cross-process tests).

A worker script prints ``ready`` once it is connected and waits for a line on stdin; the
test starts every worker, waits until all are ready, then releases them together.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any


def run_together(argvs: Sequence[Sequence[str]], timeout: float = 120) -> list[str]:
    """Run ``python -c`` workers (one argv each, script first) together; their stdouts.

    Every worker must exit 0 (the assertion shows its stderr); none is left running.
    """
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in argvs
    ]
    try:
        for proc in procs:  # every worker connected: start them together
            assert proc.stdout is not None
            first = proc.stdout.readline().strip()
            if first != "ready":  # it died setting up: show why
                proc.kill()
                _, err = proc.communicate(timeout=timeout)
                raise AssertionError(f"a worker did not get ready ({first!r}): {err[-3000:]}")
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outputs = [proc.communicate(timeout=timeout) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    return [out for out, _ in outputs]


def note(user: str, i: int) -> str:
    """A user's i-th note: words of its own only, so no two notes are similar."""
    tag = user.replace("-", "")
    return f"n{i}{tag} k{i}{tag} v{i}{tag}"


# every pair shares 5 of 6 words (cosine ~0.83 with KeywordEmbeddings): one fact, updated
PARAPHRASES = [f"I have {n} cats at home" for n in range(1, 9)]


def check_two_writers(
    store: Any, outputs: Sequence[Mapping[str, Any]], users: Sequence[str]
) -> None:
    """What two writer processes left: the shared user's paraphrases are one fact with every
    version (user ``alice``), and each process's own user has each of its notes once.

    ``outputs`` are the workers' reports: ``shared`` and ``own`` lists of (action, fact id).
    """
    actions = sorted(a for out in outputs for a, _ in out["shared"])
    assert actions == ["created"] + ["updated"] * (len(PARAPHRASES) - 1)
    assert len({fid for out in outputs for _, fid in out["shared"]}) == 1
    (fact,) = store.list_all("alice")
    assert sorted([fact.content, *(v.content for v in fact.history)]) == sorted(PARAPHRASES)
    for me, out in zip(users, outputs, strict=True):
        assert [a for a, _ in out["own"]] == ["created"] * len(out["own"])
        facts = store.list_all(me)
        notes = [note(me, i) for i in range(len(out["own"]))]
        assert sorted(f.content for f in facts) == sorted(notes)
        hits = store.recall(me, notes[-1], limit=50)
        assert hits[0].content == notes[-1]
        assert {h.id for h in hits} <= {f.id for f in facts}


WRITERS = ("worker-a", "worker-b")
HALVES = (PARAPHRASES[0::2], PARAPHRASES[1::2])  # each writer's share of the paraphrases


def run_two_writers(worker: str, lead: Sequence[str], modes: Sequence[str]) -> list[dict[str, Any]]:
    """Run ``worker`` (a script ending in :data:`WORKER_WRITES`) as the two :data:`WRITERS`
    at once, its argv ``lead`` + (user, mode, texts, notes); their JSON reports, checked to
    have overlapped in time."""
    argv = [
        [worker, *lead, me, mode, json.dumps(list(texts)),
         json.dumps([note(me, i) for i in range(len(texts))])]
        for me, mode, texts in zip(WRITERS, modes, HALVES, strict=True)
    ]  # fmt: skip
    outputs = [json.loads(out.strip().splitlines()[-1]) for out in run_together(argv)]
    spans = [out["span"] for out in outputs]
    assert max(b for b, _ in spans) < min(e for _, e in spans)  # they wrote at the same time
    return outputs


def check_shared_documents(store: Any) -> set[str]:
    """The shared namespace the :data:`WRITERS` put into holds each put once, listed and
    ranked, and the item both kept replacing holds one writer's last put; its keys."""
    expected = {
        f"{me}-{i}" for me, half in zip(WRITERS, HALVES, strict=True) for i in range(len(half))
    }
    listed = store.search(("docs", "shared"), limit=100)
    assert sorted(it.key for it in listed) == sorted([*expected, "both"])
    ranked = store.search(("docs", "shared"), query="document", limit=100)
    assert sorted(h.key for h in ranked) == sorted([*expected, "both"])
    last = len(HALVES[0]) - 1  # whichever process committed last, its last put
    assert store.get(("docs", "shared"), "both").value["text"] in {
        f"{me} wrote {last}" for me in WRITERS
    }
    return expected


WORKER_WRITES = """
store.list_all("warm-up")  # connected before the start signal
print("ready", flush=True)
sys.stdin.readline()
pairs = list(zip(json.loads(texts), json.loads(notes)))
out = {"shared": [], "own": []}

def run_sync():
    for i, (text, mine) in enumerate(pairs):
        r = store.remember("alice", text)  # the same user from both processes
        out["shared"].append([r.action, r.fact.id])
        r = store.remember(me, mine)
        out["own"].append([r.action, r.fact.id])
        store.put(("docs", "shared"), f"{me}-{i}", {"text": f"{me} document {i}"})
        store.put(("docs", "shared"), "both", {"text": f"{me} wrote {i}"})

async def run_async():
    for i, (text, mine) in enumerate(pairs):
        r = await store.aremember("alice", text)
        out["shared"].append([r.action, r.fact.id])
        r = await store.aremember(me, mine)
        out["own"].append([r.action, r.fact.id])
        await store.aput(("docs", "shared"), f"{me}-{i}", {"text": f"{me} document {i}"})
        await store.aput(("docs", "shared"), "both", {"text": f"{me} wrote {i}"})

began = time.time()
if mode == "async":
    asyncio.run(run_async())
else:
    run_sync()
out["span"] = [began, time.time()]
print(json.dumps(out), flush=True)
store.close()
"""
"""The writes of a two-writer worker script, after its own lines that build ``store``
(``me``, ``mode``, ``texts`` and ``notes`` from its argv; ``asyncio, json, sys, time``
imported): it says ``ready``, waits for a line on stdin, writes half the paraphrases for
the shared user and one note each for its own, puts shared documents, and prints what it
got as JSON (read by :func:`check_two_writers`)."""
