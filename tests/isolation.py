"""Randomized multi-user isolation run: many users, mixed operations, threads and asyncio.

Each user's operations run in order on one worker (a thread or an asyncio task), while
all users run at once. That keeps a per-user model exact: after every read the answer must
hold only that user's data (each text carries its owner's marker) and every acknowledged
fact must be there. Seeded and reproducible in its choices (interleavings vary).
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from dataclasses import dataclass, field
from typing import Any

from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver

from langchain_ltm import LongTermMemoryStore, create_memory_tools
from tests.fakes import ScriptedToolModel, tool_outputs

# ids that collide under naive encodings, case and Unicode look-alikes, very long ones
TRICKY_USERS = [
    "u1",
    "u10",
    "u_1",
    "u%1",
    "a.b",
    "a%2Eb",
    "Alice",
    "alice",
    "\u0430lice",  # Cyrillic a
    "ｕ1",  # fullwidth
    "x" * 500,
    "x" * 499,
    "bob@example.com",
    "bob@example%2Ecom",
    "*",
    "%",
]


def users(n: int = 50) -> list[str]:
    extra = [f"user-{i}@example.com" for i in range(n - len(TRICKY_USERS))]
    return TRICKY_USERS + extra


@dataclass
class Report:
    operations: int = 0
    reads_checked: int = 0
    leaks: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, ops: int = 1, reads: int = 0) -> None:
        with self.lock:
            self.operations += ops
            self.reads_checked += reads


def marker(index: int) -> str:
    return f"owner{index:03d}"


class UserRun:
    """One user's sequence of operations and the model of what it must see."""

    def __init__(self, store: LongTermMemoryStore, agent: Any, index: int, user: str, seed: int):
        self.store, self.agent, self.index, self.user = store, agent, index, user
        self.rng = random.Random(seed)
        self.mark = marker(index)
        self.facts: dict[str, str] = {}  # content -> fact id
        self.notes: dict[str, str] = {}  # key -> note text (BaseStore items without content)
        self.n = 0
        self.namespace = store.user_namespace(user)

    def new_fact(self) -> str:
        self.n += 1
        # distinct word sets per fact keep them below the (high) upsert threshold
        return f"{self.mark} fact{self.n} w{self.rng.randrange(10**9)} z{self.n * 7919}"

    def check(self, report: Report, texts: list[str], what: str, exact: bool = False) -> None:
        report.count(0, 1)
        for text in texts:
            if self.mark not in text:
                report.leaks.append(f"{what}: user {self.user!r} saw {text!r}")
        if exact:
            got = {t for t in texts if " fact" in t}
            for content in self.facts:
                if content not in got:
                    report.missing.append(f"{what}: user {self.user!r} lost {content!r}")

    def plan(self, steps: int) -> list[str]:
        kinds = ["remember", "batch", "recall", "forget", "list", "put", "search", "delete"]
        weights = [20, 8, 20, 8, 10, 8, 10, 4]
        plan = self.rng.choices(kinds, weights, k=steps)
        plan[self.rng.randrange(steps)] = "clear"
        for _ in range(2):
            plan[self.rng.randrange(steps)] = "agent"
        return plan


def step_sync(run: UserRun, kind: str, report: Report) -> None:
    s, user = run.store, run.user
    if kind == "remember":
        text = run.new_fact()
        result = s.remember(user, text)
        assert result.action == "created", result
        run.facts[text] = result.fact.id
    elif kind == "batch":
        texts = [run.new_fact() for _ in range(run.rng.randint(2, 6))]
        for text, result in zip(texts, s.remember(user, texts), strict=True):
            assert result.action == "created", result
            run.facts[text] = result.fact.id
    elif kind == "recall":
        queries = [run.mark, f"fact{run.rng.randint(1, max(run.n, 1))}"]
        run.check(report, [f.content for f in s.recall(user, queries, limit=10)], "recall")
    elif kind == "forget" and run.facts:
        text = run.rng.choice(sorted(run.facts))
        assert s.forget(user, run.facts.pop(text)) is True
    elif kind == "list":
        run.check(report, [f.content for f in s.list_all(user)], "list_all", exact=True)
    elif kind == "put":
        key = f"note{run.rng.randrange(1000)}"
        run.notes[key] = f"{run.mark} note {key}"
        s.put(run.namespace, key, {"note": run.notes[key]}, index=False)
    elif kind == "search":
        items = s.search(run.namespace, limit=1000)
        texts = [i.value.get("content") or i.value.get("note") for i in items]
        run.check(report, texts, "search")
        notes = {i.key for i in items if "note" in i.value}
        if notes != set(run.notes):
            report.missing.append(f"search: user {user!r} notes {notes} != {set(run.notes)}")
    elif kind == "delete" and run.notes:
        key = run.rng.choice(sorted(run.notes))
        del run.notes[key]
        s.delete(run.namespace, key)
    elif kind == "clear":
        s.clear_user(user)
        run.facts.clear()
        run.notes.clear()
    elif kind == "agent":
        text = run.new_fact()
        config = {"configurable": {"user_id": user, "thread_id": f"{run.index}-{run.n}"}}
        out = run.agent.invoke({"messages": [("user", f"remember: {text}")]}, config)
        (made,) = tool_outputs(out)
        run.facts[text] = made["id"]
        out = run.agent.invoke({"messages": [("user", f"recall: {run.mark} | {text}")]}, config)
        run.check(report, [f["fact"] for f in tool_outputs(out)[0]["facts"]], "agent recall")
    report.count()


async def step_async(run: UserRun, kind: str, report: Report) -> None:
    s, user = run.store, run.user
    if kind == "remember":
        text = run.new_fact()
        result = await s.aremember(user, text)
        assert result.action == "created", result
        run.facts[text] = result.fact.id
    elif kind == "batch":
        texts = [run.new_fact() for _ in range(run.rng.randint(2, 6))]
        for text, result in zip(texts, await s.aremember(user, texts), strict=True):
            assert result.action == "created", result
            run.facts[text] = result.fact.id
    elif kind == "recall":
        queries = [run.mark, f"fact{run.rng.randint(1, max(run.n, 1))}"]
        facts = await s.arecall(user, queries, limit=10)
        run.check(report, [f.content for f in facts], "arecall")
    elif kind == "forget" and run.facts:
        text = run.rng.choice(sorted(run.facts))
        assert await s.aforget(user, run.facts.pop(text)) is True
    elif kind == "list":
        facts = await s.alist_all(user)
        run.check(report, [f.content for f in facts], "alist_all", exact=True)
    elif kind == "put":
        key = f"note{run.rng.randrange(1000)}"
        run.notes[key] = f"{run.mark} note {key}"
        await s.aput(run.namespace, key, {"note": run.notes[key]}, index=False)
    elif kind == "search":
        items = await s.asearch(run.namespace, limit=1000)
        texts = [i.value.get("content") or i.value.get("note") for i in items]
        run.check(report, texts, "asearch")
    elif kind == "delete" and run.notes:
        key = run.rng.choice(sorted(run.notes))
        del run.notes[key]
        await s.adelete(run.namespace, key)
    elif kind == "clear":
        await s.aclear_user(user)
        run.facts.clear()
        run.notes.clear()
    elif kind == "agent":
        text = run.new_fact()
        config = {"configurable": {"user_id": user, "thread_id": f"{run.index}-{run.n}"}}
        out = await run.agent.ainvoke({"messages": [("user", f"remember: {text}")]}, config)
        (made,) = tool_outputs(out)
        run.facts[text] = made["id"]
        out = await run.agent.ainvoke(
            {"messages": [("user", f"recall: {run.mark} | {text}")]}, config
        )
        run.check(report, [f["fact"] for f in tool_outputs(out)[0]["facts"]], "agent arecall")
    report.count()


def run_isolation(
    store: LongTermMemoryStore, *, n_users: int = 50, steps: int = 200, seed: int = 7
) -> Report:
    """Run ``n_users * steps`` operations: half the users on threads, half on asyncio tasks."""
    agent = create_agent(
        ScriptedToolModel(),
        tools=create_memory_tools(store),
        store=store,
        checkpointer=InMemorySaver(),
    )
    runs = [UserRun(store, agent, i, u, seed * 1000 + i) for i, u in enumerate(users(n_users))]
    report = Report()
    sync_runs, async_runs = runs[0::2], runs[1::2]
    errors: list[BaseException] = []

    def thread_body(run: UserRun) -> None:
        try:
            for kind in run.plan(steps):
                step_sync(run, kind, report)
            run.check(report, [f.content for f in store.list_all(run.user)], "final", exact=True)
        except BaseException as exc:  # surfaced after join
            errors.append(exc)

    async def task_body(run: UserRun) -> None:
        for kind in run.plan(steps):
            await step_async(run, kind, report)
        facts = await store.alist_all(run.user)
        run.check(report, [f.content for f in facts], "final", exact=True)

    def loop_body() -> None:
        async def main() -> None:
            await asyncio.gather(*(task_body(r) for r in async_runs))

        try:
            asyncio.run(main())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=thread_body, args=(r,)) for r in sync_runs]
    threads.append(threading.Thread(target=loop_body))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return report


def summary(report: Report, engine: str, n_users: int) -> str:
    return json.dumps(
        {
            "engine": engine,
            "users": n_users,
            "operations": report.operations,
            "reads_checked": report.reads_checked,
            "leaks": len(report.leaks),
            "missing": len(report.missing),
        }
    )
