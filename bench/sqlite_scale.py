"""SQLite at a personal agent's scale after years: one file of 1M facts over many users.

Builds the file as a new user would fill it: facts of ``--users`` users (each fact owned by
a random user, so a user's rows are scattered over the file as when they arrive over time)
written through LangGraph's ``BaseStore.batch`` in batches of 1,000 ``PutOp``s in the fact
layout (embeddings precomputed: texts map to random 384-d unit vectors, so embedding time is
~0), plus ``--remembered`` facts through ``store.remember`` (dedup, decision, lock) for
realism. Then, in one run, with the load average printed beside each table:

1. **Size**: the file (WAL checkpointed), bytes per fact, and the tables and indexes
   (SQLite's ``dbstat``).
2. **Open**: ``LongTermMemoryStore.from_sqlite`` on the file (a new process's connections,
   the OS page cache warm), and open + the first per-user search.
3. **Per-user search** (``store.search(user_namespace, query=..., limit=5)``), p50/p95,
   interleaved query by query with its floors over the *same user's vectors*: the numpy
   scan of them in memory (scoring and top-k only), and one SQL read of the user's vector
   blobs + that scan (what any exact search on this file must do). Both the first search of
   a user (no vector cache) and a repeated one (cached), and ``recall`` of the fact API.
4. **The ``ltm`` command on the file**: ``ltm recall`` and ``ltm list`` of one user, as fresh
   processes (warm encoder), beside the same commands on a file holding only that user's
   facts and the import floor ``python -c "import onnxruntime, tokenizers, numpy"``, all
   interleaved over ``--rounds`` rounds.
5. **Mass delete and compact**: every other user erased (``clear_user``), the file size
   after (SQLite keeps freed pages), then ``ltm compact``: its time and the bytes it gives
   back, and search p50 after.

At 1M facts the build takes minutes and ~2 GB of disk (in ``--dir``, default a temporary
folder, removed afterwards unless ``--keep``). Not in CI.

Usage:
    python bench/sqlite_scale.py                              # 1,000,000 facts, 10,000 users
    python bench/sqlite_scale.py --facts 100000 --users 1000  # smaller: same per-user size
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import zlib
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.sqlite._sql import ns_range
from langchain_ltm.facts.versions import fact_value

DIMS = 384
K = 5
BATCH = 1_000
BIN = Path(sys.executable).parent
LTM = str(BIN / "ltm")
FLOOR = [sys.executable, "-c", "import onnxruntime, tokenizers, numpy"]


class IndexEmbeddings(Embeddings):
    """``f<i>: ...`` -> row ``i`` of a matrix; ``q<j>`` -> query ``j``; else a hashed vector."""

    def __init__(self, facts: np.ndarray, queries: np.ndarray) -> None:
        self.facts, self.queries = facts, queries

    def _one(self, text: str) -> list[float]:
        head = text.split(":", 1)[0]
        if head[:1] == "f" and head[1:].isdigit():
            return self.facts[int(head[1:])].tolist()  # type: ignore[no-any-return]
        if head[:1] == "q" and head[1:].isdigit():
            return self.queries[int(head[1:])].tolist()  # type: ignore[no-any-return]
        rng = np.random.default_rng(zlib.crc32(text.encode()))
        v = rng.standard_normal(DIMS).astype(np.float32)
        return (v / np.linalg.norm(v)).tolist()  # type: ignore[no-any-return]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


def unit_rows(rng: np.random.Generator, n: int) -> np.ndarray:
    out = np.empty((n, DIMS), dtype=np.float32)
    for start in range(0, n, 100_000):  # in slices: no float64 copy of the whole matrix
        part = rng.standard_normal((min(n, start + 100_000) - start, DIMS), dtype=np.float32)
        part /= np.linalg.norm(part, axis=1, keepdims=True)
        out[start : start + len(part)] = part
    return out


def user_id(u: int) -> str:
    return f"user{u:06d}@example.com"


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def ms(values: list[float], q: float = 0.5) -> float:
    return float(np.quantile(np.array(values), q) * 1000)


def file_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


def checkpoint(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def build(
    path: Path, emb: IndexEmbeddings, owner: np.ndarray, remembered: int, users: int
) -> dict[str, float]:
    n = len(owner)
    when = dt.datetime(2024, 1, 2, tzinfo=dt.timezone.utc)
    t0 = time.perf_counter()
    with LongTermMemoryStore.from_sqlite(path, emb) as store:
        for start in range(0, n, BATCH):
            ops = []
            for i in range(start, min(n, start + BATCH)):
                content = f"f{i}: the user mentioned topic {i * 7919 % 10007}"
                ns = store.user_namespace(user_id(int(owner[i])))
                value = fact_value(content, when + dt.timedelta(seconds=i), 0)
                ops.append(PutOp(ns, str(uuid.UUID(int=i + 1)), value, index=["content"]))
            store.batch(ops)
            if start and start % 100_000 == 0:
                rate = start / (time.perf_counter() - t0)
                print(f"  {start:,} facts, {rate:,.0f} facts/s (load {load()})", flush=True)
        ingest = time.perf_counter() - t0
        t1 = time.perf_counter()
        per_user = 10
        for r in range(remembered // per_user):
            u = r * 7 % users
            texts = [
                f"Remembered {r}-{j}: prefers option {j} for project {r % 97}"
                for j in range(per_user)
            ]
            store.remember(user_id(u), texts)
        remember = time.perf_counter() - t1
    checkpoint(path)
    return {
        "ingest_s": ingest,
        "ingest_rate": n / ingest,
        "remember_s": remember,
        "remember_rate": remembered / remember if remember else 0.0,
    }


def table_sizes(path: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
        ).fetchall()
    conn.close()
    return [(str(name), int(size)) for name, size in rows]


def timed_open(path: Path, emb: IndexEmbeddings, uid: str, qtext: str) -> tuple[float, float]:
    t0 = time.perf_counter()
    store = LongTermMemoryStore.from_sqlite(path, emb)
    opened = time.perf_counter() - t0
    store.search(store.user_namespace(uid), query=qtext, limit=K)
    first = time.perf_counter() - t0
    store.close()
    return opened, first


def search_round(
    path: Path,
    emb: IndexEmbeddings,
    rows: list[np.ndarray],
    vecs: np.ndarray,
    qvecs: np.ndarray,
    query_user: np.ndarray,
    which: list[int],
) -> dict[str, list[float]]:
    """Queries ``which`` on every path, interleaved; returns seconds per path."""
    times: dict[str, list[float]] = {
        k: [] for k in ("numpy", "sql+numpy", "nocache", "cached", "recall")
    }
    cold = LongTermMemoryStore.from_sqlite(path, emb, vector_cache_mb=0)
    warm = LongTermMemoryStore.from_sqlite(path, emb)
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("PRAGMA mmap_size = 2147418112")  # as the engine maps it
    recall_hits = 0
    try:
        for j in which:
            u = int(query_user[j])
            uid, q = user_id(u), qvecs[j]
            ns = cold.user_namespace(uid)
            qtext = f"q{j}"
            t0 = time.perf_counter()
            mine = vecs[rows[u]]
            scores = mine @ q
            top = np.argpartition(-scores, min(K, len(scores) - 1))[:K]
            top = top[np.argsort(-scores[top])]
            times["numpy"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            blob = raw.execute(
                "SELECT CAST(group_concat(embeddings, '') AS BLOB) FROM ltm_items_vectors "
                "WHERE ns >= ? AND ns < ?",
                ns_range(ns),
            ).fetchone()[0]
            m = np.frombuffer(blob, dtype="<f4").reshape(-1, DIMS)
            s2 = m @ q
            np.argpartition(-s2, min(K, len(s2) - 1))[:K]
            times["sql+numpy"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            got = cold.search(ns, query=qtext, limit=K)
            times["nocache"].append(time.perf_counter() - t0)
            warm.search(ns, query=qtext, limit=K)  # fills the cache for this user
            t0 = time.perf_counter()
            warm.search(ns, query=qtext, limit=K)
            times["cached"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            recalled = cold.recall(uid, qtext, limit=K)
            times["recall"].append(time.perf_counter() - t0)
            best = str(uuid.UUID(int=int(rows[u][top[0]]) + 1))
            assert got[0].key == best, (uid, got[0].key, best)  # exact: the same top hit
            recall_hits += recalled[0].id == best
    finally:
        cold.close()
        warm.close()
        raw.close()
    assert recall_hits == len(which), f"recall found the top fact {recall_hits} times"
    return times


def print_search(times: dict[str, list[float]], title: str) -> None:
    print(f"\n### {title} (load average {load()})\n")
    print("| path | p50 | p95 | x numpy floor | x SQL read + numpy |")
    print("|---|---|---|---|---|")
    floor, read = ms(times["numpy"]), ms(times["sql+numpy"])
    labels = {
        "numpy": "floor: numpy over the user's vectors (in memory)",
        "sql+numpy": "floor: one SQL read of the user's blobs + numpy",
        "nocache": "`store.search`, no vector cache (a user's first search)",
        "cached": "`store.search`, vectors cached (a repeated search)",
        "recall": "`store.recall` (fact API, no cache)",
    }
    for key, label in labels.items():
        p50 = ms(times[key])
        print(
            f"| {label} | {p50:.3f} ms | {ms(times[key], 0.95):.3f} ms | "
            f"{p50 / floor:.1f}x | {p50 / read:.2f}x |"
        )


def cli_env(work: Path, store: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("LTM_")}
    out.update(
        LTM_HOME=str(work / "home"),
        XDG_RUNTIME_DIR=str(work / "run"),
        LTM_ENCODER_SERVER="auto",
        LTM_STORE=f"sqlite:///{store}",
    )
    out.pop("PYTHONDONTWRITEBYTECODE", None)
    return out


def run_cli(args: list[str], environ: dict[str, str] | None) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(args, env=environ, capture_output=True, check=False)
    took = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{args} exited {done.returncode}: {done.stderr.decode()[-400:]}")
    return took


def cli_times(work: Path, big: Path, small: Path, uid: str, rounds: int) -> None:
    (work / "run").mkdir(mode=0o700, exist_ok=True)
    envs = {"big": cli_env(work, big), "small": cli_env(work, small)}
    subprocess.run([LTM, "encoder", "start"], env=envs["big"], check=True, capture_output=True)
    cells: dict[str, list[float]] = {}
    before = load()
    try:
        for _ in range(rounds):
            cells.setdefault("floor", []).append(run_cli(FLOOR, None))
            for size in ("big", "small"):
                for command in ("recall", "list"):
                    args = [LTM, command, "--user", uid]
                    if command == "recall":
                        args.append("which topic did the user mention?")
                    cells.setdefault(f"{command} {size}", []).append(run_cli(args, envs[size]))
    finally:
        subprocess.run([LTM, "encoder", "stop"], env=envs["big"], capture_output=True, check=False)
    floor = statistics.median(cells["floor"])
    print(
        f"\n### `ltm` on the file, fresh processes, warm encoder, median of {rounds} rounds "
        f"(interleaved; load average before {before}, after {load()})\n"
    )
    print(f'Import floor `python -c "import onnxruntime, tokenizers, numpy"`: {floor:.2f} s\n')
    print("| command | the big file | a file of this user only | big / floor |")
    print("|---|---|---|---|")
    for command in ("recall", "list"):
        b = statistics.median(cells[f"{command} big"])
        s = statistics.median(cells[f"{command} small"])
        print(f"| `ltm {command}` | {b:.2f} s | {s:.2f} s | {b / floor:.2f}x |")


def small_copy(path: Path, emb: IndexEmbeddings, uid: str, small: Path) -> int:
    """A file with only ``uid``'s items (same values and vectors), through export/import."""
    with LongTermMemoryStore.from_sqlite(path, emb) as big:
        records = big.export_user(uid)
    with LongTermMemoryStore.from_sqlite(small, emb) as store:
        store.import_user(uid, records, "restore")
        return len(store.list_all(uid))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--facts", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--remembered", type=int, default=3_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the ltm commands")
    parser.add_argument("--dir", help="where the files go (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the files afterwards")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ltm-sqlite-scale-", dir=args.dir))
    path = work / "memories.db"
    rng = np.random.default_rng(0)
    print(
        f"python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}, {os.cpu_count()} "
        f"cores, load average {load()}; {args.facts:,} facts over {args.users:,} users "
        f"(+{args.remembered:,} remembered), file in {work}"
    )
    try:
        vecs = unit_rows(rng, args.facts)
        owner = rng.integers(0, args.users, args.facts)
        rows = [np.flatnonzero(owner == u) for u in range(args.users)] if args.users else []
        query_user = rng.integers(0, args.users, args.queries)
        anchors = np.array([rng.choice(rows[u]) for u in query_user])
        qvecs = vecs[anchors] + unit_rows(rng, args.queries)  # cosine ~0.7 to a fact
        qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
        emb = IndexEmbeddings(vecs, qvecs.astype(np.float32))

        built = build(path, emb, owner, args.remembered, args.users)
        size = file_bytes(path)
        total = args.facts + args.remembered
        print(f"\n### Build and size (load average {load()})\n")
        print("| what | value |\n|---|---|")
        print(
            f"| `BaseStore.batch` of {BATCH:,} puts, given vectors | {built['ingest_rate']:,.0f} "
            f"facts/s ({built['ingest_s']:.0f} s) |"
        )
        print(
            f"| `remember`, 10 facts a call | {built['remember_rate']:,.0f} facts/s "
            f"({built['remember_s']:.1f} s) |"
        )
        print(f"| file (WAL checkpointed) | {size / 1e6:,.0f} MB, {size / total:,.0f} B a fact |")
        for name, nbytes in table_sizes(path):
            print(f"| `{name}` | {nbytes / 1e6:,.1f} MB |")

        uid0 = user_id(int(query_user[0]))
        opens = [timed_open(path, emb, uid0, "q0") for _ in range(7)]
        print(f"\n### Open (median of 7, load average {load()})\n")
        print("| what | median |\n|---|---|")
        print(f"| `from_sqlite` | {statistics.median(o[0] for o in opens) * 1000:.1f} ms |")
        print(
            f"| `from_sqlite` + first search | "
            f"{statistics.median(o[1] for o in opens) * 1000:.1f} ms |"
        )

        times = search_round(path, emb, rows, vecs, qvecs, query_user, list(range(args.queries)))
        per_user = total / max(args.users, 1)
        print_search(
            times,
            f"Per-user search, {args.queries} queries, ~{per_user:.0f} facts a user, "
            "interleaved, exact top hit checked",
        )

        small = work / "one-user.db"
        n_small = small_copy(path, emb, uid0, small)
        print(f"\n(`ltm` user {uid0}: {n_small} facts)")
        cli_times(work, path, small, uid0, args.rounds)

        t0 = time.perf_counter()
        with LongTermMemoryStore.from_sqlite(path, emb) as store:
            for u in range(0, args.users, 2):
                store.clear_user(user_id(u))
        erased = time.perf_counter() - t0
        checkpoint(path)
        before = file_bytes(path)
        t0 = time.perf_counter()
        done = subprocess.run(
            [LTM, "compact", "--store", f"sqlite:///{path}", "--json"],
            capture_output=True,
            check=False,
            env=cli_env(work, path),
        )
        compact = time.perf_counter() - t0
        if done.returncode != 0:
            raise SystemExit(f"ltm compact exited {done.returncode}: {done.stderr.decode()}")
        after = file_bytes(path)
        kept = [j for j, u in enumerate(query_user) if u % 2 == 1]
        times2 = search_round(path, emb, rows, vecs, qvecs, query_user, kept)
        print(f"\n### Half the users erased, then `ltm compact` (load average {load()})\n")
        print("| what | value |\n|---|---|")
        print(f"| `clear_user` of {len(range(0, args.users, 2)):,} users | {erased:.0f} s |")
        print(f"| file after the deletes | {before / 1e6:,.0f} MB (was {size / 1e6:,.0f} MB) |")
        print(f"| `ltm compact` | {compact:.1f} s, file {after / 1e6:,.0f} MB |")
        print(f"| given back | {(before - after) / 1e6:,.0f} MB ({1 - after / before:.0%}) |")
        print(
            f"| search p50 after (no cache / numpy floor) | {ms(times2['nocache']):.3f} ms / "
            f"{ms(times2['numpy']):.3f} ms |"
        )
    finally:
        if args.keep:
            print(f"\nfiles kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
