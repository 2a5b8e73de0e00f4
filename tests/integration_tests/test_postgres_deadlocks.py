"""Concurrent writers of the same keys never deadlock on Postgres.

Threads (and processes) churn a small set of shared keys with everything a write can be:
batches of several keys in random order that mix puts and deletes, single puts whose
values embed into one to four vectors (so a re-put drops some vectors and rewrites others),
deletes and puts with ``index=False``; now and then a bulk batch of more keys than are
locked one by one (it takes their stripes instead); some items have a TTL and a sweeper
deletes them meanwhile. Before writes took their keys' locks in one order, 2 to 89
operations per 1,000 failed with ``BackendError(DeadlockDetected)``; now none may fail,
Postgres itself counts no deadlock (``pg_stat_database``, so the one retry of a rolled-back
call hides nothing), and afterwards every item's vectors are exactly the texts its last
value embeds.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from datetime import datetime, timezone
from typing import Any

import psycopg
from langgraph.store.base import PutOp

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.base import Record
from langchain_ltm.backends.postgres import PostgresBackend, _writes
from langchain_ltm.backends.postgres import _sql as sql
from langchain_ltm.errors import DuplicateFactError
from tests.fakes import KeywordEmbeddings
from tests.processes import run_together

NS = ("churn", "shared")
KEYS = [f"k{n:02d}" for n in range(20)]
WORDS = ["tea", "coffee", "rain", "snow", "green", "blue"]
WORDS += ["north", "south", "quiet", "loud", "early", "late"]
FIELDS = ["text", "tags[*]"]


def churn(store: LongTermMemoryStore, seed: int, ops: int) -> list[str]:
    """``ops`` random writes on the shared keys; the errors they raised, as ``repr``."""
    rng = random.Random(seed)
    errors: list[str] = []

    def value(indexed: bool = True) -> dict[str, Any]:
        return {
            "text": " ".join(rng.sample(WORDS, 3)),
            "tags": rng.sample(WORDS, rng.randint(0, 3)),  # 1 to 4 vectors per item
            "indexed": indexed,
        }

    for _ in range(ops):
        kind = rng.random()
        key = rng.choice(KEYS)
        try:
            if kind < 0.01:  # a bulk batch: more keys than are locked one by one
                bulk = [*KEYS, *(f"bulk{n:03d}" for n in range(_writes.KEY_LOCKS + 10))]
                rng.shuffle(bulk)
                store.batch([PutOp(NS, k, value()) for k in bulk])
            elif kind < 0.35:  # a batch of several keys, in random order, puts and deletes
                ops_: list[PutOp] = []
                for k in rng.sample(KEYS, rng.randint(2, 6)):
                    roll = rng.random()
                    if roll < 0.2:
                        ops_.append(PutOp(NS, k, None))
                    elif roll < 0.35:
                        ops_.append(PutOp(NS, k, value(indexed=False), index=False))
                    else:
                        ops_.append(PutOp(NS, k, value()))
                store.batch(ops_)
            elif kind < 0.6:  # half of them with a TTL, for the sweeper
                store.batch([PutOp(NS, key, value(), ttl=60.0 if rng.random() < 0.5 else None)])
            elif kind < 0.8:
                store.delete(NS, key)
            else:
                store.put(NS, key, value(indexed=False), index=False)
        except Exception as exc:  # counted, not raised: the test reports how many
            errors.append(repr(exc))
    return errors


def make_store(backend: PostgresBackend) -> LongTermMemoryStore:
    return LongTermMemoryStore(backend, embeddings=KeywordEmbeddings(dims=64), fields=FIELDS)


def check_consistent(pg_url: str, backend: PostgresBackend) -> None:
    """Every item's vectors are the texts its value embeds (none for ``index=False``)."""
    t = backend.tables
    with psycopg.connect(pg_url) as conn:
        items = dict(conn.execute(f"SELECT key, value FROM {t.items}").fetchall())
        texts: dict[str, list[str]] = {}
        for key, content in conn.execute(f"SELECT key, content FROM {t.vectors}").fetchall():
            texts.setdefault(key, []).append(content)
    assert set(texts) <= set(items), "vectors without an item"
    for key, value in items.items():
        expected = sorted([value["text"], *value["tags"]]) if value["indexed"] else []
        assert sorted(texts.get(key, [])) == expected, key


def server_deadlocks(pg_url: str, app: str | None = None) -> int:
    """Deadlocks Postgres has detected in this database, once the sessions of ``app`` ended.

    A victim's session counts its deadlock in its statistics, which reach
    ``pg_stat_database`` by the time the session has exited.
    """
    deadline = time.monotonic() + 30
    with psycopg.connect(pg_url, autocommit=True) as conn:
        while (
            app
            and conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (app,)
            ).fetchone()[0]
        ):
            assert time.monotonic() < deadline, f"the sessions of {app} did not end"
            time.sleep(0.05)
        conn.execute("SELECT pg_stat_clear_snapshot()")
        return conn.execute(
            "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()[0]


def report(errors: list[str], ops: int) -> str:
    kinds: dict[str, int] = {}
    for error in errors:
        kind = error.split("(")[0] + (" DeadlockDetected" if "deadlock" in error else "")
        kinds[kind] = kinds.get(kind, 0) + 1
    rate = 1000 * len(errors) / ops
    return f"{len(errors)} errors in {ops} ops ({rate:.1f} per 1,000): {kinds}; first: {errors[:2]}"


def test_threads_churning_shared_keys_never_deadlock(make_backend, pg_url):
    app = f"churn-{uuid.uuid4().hex[:8]}"
    before = server_deadlocks(pg_url)
    backend = make_backend(dims=64, max_size=8, connect_kwargs={"application_name": app})
    store = make_store(backend)
    threads, ops = 8, 300
    errors: list[str] = []
    start, done = threading.Barrier(threads + 1), threading.Event()
    swept = []

    def worker(seed: int) -> None:
        start.wait()
        errors.extend(churn(store, seed, ops))

    def sweeper() -> None:  # deletes every item with a TTL, as if all had expired
        start.wait()
        while not done.is_set():
            try:
                swept.append(backend.sweep(datetime(2100, 1, 1, tzinfo=timezone.utc)))
            except Exception as exc:
                errors.append(repr(exc))
                return

    workers = [threading.Thread(target=worker, args=(seed,)) for seed in range(threads)]
    sweeping = threading.Thread(target=sweeper)
    for thread in [*workers, sweeping]:
        thread.start()
    for thread in workers:
        thread.join(300)
    done.set()
    sweeping.join(60)
    assert not any(thread.is_alive() for thread in [*workers, sweeping]), "a writer hung"
    backend.close()
    deadlocks = server_deadlocks(pg_url, app) - before
    print(f"swept {sum(swept)} items in {len(swept)} sweeps; {deadlocks} deadlocks in Postgres")
    print(report(errors, threads * ops))
    assert (errors, deadlocks) == ([], 0), report(errors, threads * ops)
    check_consistent(pg_url, backend)


WORKER = """
import json, sys, threading
from langchain_ltm.backends.postgres import postgres_backend
from tests.integration_tests.test_postgres_deadlocks import churn, make_store

url, table, app, seed, threads, ops = *sys.argv[1:4], *map(int, sys.argv[4:7])
backend = postgres_backend(url, table=table, dims=64, max_size=threads,
                           connect_kwargs={"application_name": app})
store = make_store(backend)
store.get(("warm", "up"), "k")  # connect before the start signal
print("ready", flush=True)
sys.stdin.readline()
errors = []
workers = [threading.Thread(target=lambda s=s: errors.extend(churn(store, s, ops)))
           for s in range(seed, seed + threads)]
for w in workers:
    w.start()
for w in workers:
    w.join()
print(json.dumps(errors), flush=True)
store.close()
"""


def test_processes_churning_shared_keys_never_deadlock(make_backend, pg_url):
    backend = make_backend(dims=64)
    app = f"churn-{uuid.uuid4().hex[:8]}"
    before = server_deadlocks(pg_url)
    processes, threads, ops = 4, 3, 150
    outputs = run_together(
        [
            [WORKER, pg_url, backend.tables.table, app, *(str(x) for x in (100 * n, threads, ops))]
            for n in range(processes)
        ],
        timeout=300,
    )
    errors = [error for out in outputs for error in json.loads(out)]
    total = processes * threads * ops
    deadlocks = server_deadlocks(pg_url, app) - before
    print(f"{deadlocks} deadlocks in Postgres; " + report(errors, total))
    assert (errors, deadlocks) == ([], 0), report(errors, total)
    check_consistent(pg_url, backend)


def test_swapping_two_facts_contents_at_once_reports_duplicates(make_backend):
    """The one deadlock left, and why a rolled-back write is retried once.

    Two transactions that swap two facts' contents (a -> b's hash, b -> a's) wait for each
    other in the ``UNIQUE (ns_path, content_hash)`` index (each new row meets the other's
    old row, still being replaced), which spans keys, so no key lock orders it. Postgres
    breaks the deadlock; the victim's retry then finds the duplicate, as the survivor does:
    both report ``DuplicateFactError``.
    """
    backend = make_backend(dims=64)
    ns = ("facts", "u1")

    def fact(key: str, content: str) -> Record:
        value = {"content": content, "content_hash": content, "versions": 0}
        return Record(ns, key, value, (), (), None, datetime.now(timezone.utc))

    outcomes: list[str] = []

    def swap(start: threading.Barrier, key: str, content: str) -> None:
        start.wait()
        try:
            backend.write([fact(key, content)], [])
            outcomes.append("written")
        except DuplicateFactError:
            outcomes.append("duplicate")
        except Exception as exc:
            outcomes.append(repr(exc))

    for n in range(6):
        backend.write([fact(f"a{n}", f"one{n}"), fact(f"b{n}", f"two{n}")], [])
        start = threading.Barrier(2)
        pair = [
            threading.Thread(target=swap, args=(start, f"a{n}", f"two{n}")),
            threading.Thread(target=swap, args=(start, f"b{n}", f"one{n}")),
        ]
        for thread in pair:
            thread.start()
        for thread in pair:
            thread.join(60)
    assert outcomes == ["duplicate"] * 12


def test_write_locks_are_one_global_order_and_bounded():
    t = sql.Tables("public", "ltm_items")
    small = [("memories.u1.", f"k{n}") for n in range(10)]
    tag, _, ids, shared = _writes.write_locks(t, small).params
    # ascending ids, each once: the keys' stripes (shared) first, then the keys (exclusive)
    assert ids == sorted(set(ids)) and shared == sorted(shared, reverse=True)
    assert shared.count(False) == 10 and 1 <= shared.count(True) <= 10
    assert _writes.write_locks(t, small[::-1]).params == (tag, tag, ids, shared)
    # more keys than KEY_LOCKS: only their stripes, exclusive, which small batches share
    big = [("memories.u1.", f"k{n}") for n in range(1000)]
    _, _, big_ids, big_shared = _writes.write_locks(t, big).params
    assert big_ids == sorted(set(big_ids)) and not any(big_shared)
    assert len(big_ids) <= 2 * _writes.KEY_LOCKS
    assert {i for i, s in zip(ids, shared, strict=True) if s} <= set(big_ids)
    # another table: another tag, so its writers never wait for these
    assert _writes.write_locks(sql.Tables("public", "other"), small).params[0] != tag
