"""bench/langgraph_suites.py edits only LangGraph's module level, and labels failures honestly."""

import ast
import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "langgraph_suites.py"
spec = importlib.util.spec_from_file_location("langgraph_suites", BENCH)
assert spec is not None and spec.loader is not None
runner = importlib.util.module_from_spec(spec)
sys.modules["langgraph_suites"] = runner  # its dataclasses look their module up
spec.loader.exec_module(runner)

THEIRS = '''"""Their tests."""
from __future__ import annotations

import pytest
from langgraph.store.postgres import PostgresStore
from langgraph.store.postgres.base import _escape_like_literal, _namespace_match_pattern


@pytest.fixture(params=["default", "pipe"])
def store(request) -> PostgresStore:
    yield PostgresStore.from_conn_string("postgres://...")


def _expire_now(store, ns, key):
    store._cursor()


def test_put_get(store: PostgresStore) -> None:
    store.put(("a",), "k", {"v": 1})
    assert store.get(("a",), "k").value == {"v": 1}


def test_expiry(store: PostgresStore) -> None:
    _expire_now(store, ("a",), "k")
'''


def _functions(source: str) -> dict[str, str]:
    tree = ast.parse(source)
    return {
        node.name: ast.get_source_segment(source, node) or ""
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
    }


def test_adapt_swaps_the_store_and_its_fixtures_and_keeps_every_test_body():
    suite = next(s for s in runner.SUITES if s.name == "checkpoint-postgres/test_store")
    ours = runner.adapt(THEIRS, suite)
    tree = ast.parse(ours)  # still valid Python
    before, after = _functions(THEIRS), _functions(ours)
    assert after["test_put_get"] == before["test_put_get"]
    assert after["test_expiry"] == before["test_expiry"]
    assert "store" not in after and "_expire_now" not in after  # ours come from the conftest
    imports = [n for n in tree.body if isinstance(n, ast.ImportFrom)]
    assert imports[0].module == "__future__"  # still first
    mine = next(n for n in imports if n.module == "tests.conftest")
    assert {(a.name, a.asname) for a in mine.names} == {
        ("SuiteStore", "PostgresStore"),
        ("expire_now", "_expire_now"),
    }
    assert not any(
        n.module == "langgraph.store.postgres" for n in imports
    )  # their store is not imported
    assert any(n.module == "langgraph.store.postgres.base" for n in imports)  # the rest is kept


def test_a_failure_is_a_known_difference_only_when_its_text_matches():
    suite = "checkpoint-postgres/test_async_store"
    sweeper = "TypeError: object bool can't be used in 'await' expression"
    assert runner.known("sqlite", suite, "test_store_ttl[sqlite]", sweeper)
    assert runner.known("sqlite", suite, "test_store_ttl[sqlite]", "assert 1 == 0") is None
    assert (
        runner.known("sqlite", "checkpoint-postgres/test_store", "test_store_ttl", sweeper) is None
    )
    sorting = "AssertionError: assert 'Z22' == 'M'"
    assert runner.known("chroma", suite, "test_search_sorting[vector-l2]", sorting)
    assert runner.known("faiss", suite, "test_search_sorting[vector-l2]", sorting) is None
    assert runner.known("chroma-server", suite, "test_search_sorting[halfvec-l2]", sorting)
    assert runner.known("milvus", suite, "test_search_sorting[vector-l2]", sorting) is None
    assert runner.known("pgvector", suite, "test_search_sorting[vector-l2]", sorting) is None
    default = "assert None is not None"
    name = "test_omit_expired_disabled_preserves_expired_rows"
    assert runner.known(
        "faiss", "checkpoint-postgres/test_store", f"{name}[faiss-default]", default
    )
    assert (
        runner.known(
            "faiss", "checkpoint-postgres/test_store", f"{name}[faiss-explicit-false]", default
        )
        is None
    )
