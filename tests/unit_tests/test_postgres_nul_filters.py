"""Postgres filters naming a NUL: rewritten to the same answers over values without one."""

from __future__ import annotations

import itertools
import random

import pytest

from langchain_ltm._filters import Condition, compile_filter, matches
from langchain_ltm.backends.postgres._sql import filter_sql, has_nul, without_nul

# what a Postgres store can hold: strings, keys and labels without NUL
STRINGS = ["", "a", "b", "ba", "b\x01", "b\x01z", "bz", "c", "\x01", "é", "b c"]
SCALARS = [*STRINGS, 0, 1, 1.5, -2, True, False, None]
OPERANDS = [
    "\x00",
    "b\x00",
    "b\x00c",
    "ba\x00",
    "\x00z",
    "a\x00\x00",
    ["b\x00"],
    {"k\x00": 1},
    {"k": "b\x00"},
]


def _values(rng: random.Random, n: int) -> list[dict]:
    out = []
    for _ in range(n):
        value = {k: rng.choice(SCALARS) for k in rng.sample(["a", "b", "n"], rng.randint(0, 3))}
        if rng.random() < 0.3:
            value["o"] = {"k": rng.choice(SCALARS)}
        out.append(value)
    return [*out, {}, {"a": ["b"]}, {"a": {"k": "b"}}]


def _conditions() -> list[Condition]:
    conds = []
    for path, op, operand in itertools.product(
        [("a",), ("o",), ("a\x00",), ("o", "k\x00")],
        ["$eq", "$ne", "$in", "$gt", "$gte", "$lt", "$lte", "$exists", "$object"],
        [*OPERANDS, "b", 1, None, True],
    ):
        if op in ("$gt", "$gte", "$lt", "$lte") and not isinstance(operand, (str, int)):
            continue
        if op in ("$exists", "$object") and not isinstance(operand, bool):
            continue
        if op == "$in":
            operand = [operand, "b"] if operand != "b" else [operand]
        conds.append(Condition(path, op, operand))
    return conds


@pytest.mark.parametrize("cond", _conditions(), ids=repr)
def test_a_rewritten_condition_answers_as_the_original_over_values_without_nul(cond):
    rng = random.Random(repr(cond))
    kept = without_nul(cond)
    if isinstance(kept, Condition):
        assert not has_nul((kept.path, "")) and "\x00" not in repr(kept.operand)
    for value in _values(rng, 60):
        expected = matches(value, (cond,))
        got = kept if isinstance(kept, bool) else matches(value, (kept,))
        assert got == expected, (value, cond, kept)


def test_a_filter_with_a_nul_gives_sql_with_no_nul_parameter():
    params: list = []
    sql = filter_sql(
        compile_filter({"a": "b\x00", "n": {"$lt": "x\x00y", "$gte": 1}, "z\x00": {"$gt": 1}}),
        "i",
        params,
    )
    assert "FALSE" in sql  # a == "b\0", z\0 > 1: nothing stored
    assert not any("\x00" in str(getattr(p, "obj", p)) for p in params)


def test_a_condition_without_nul_is_left_as_it_is():
    cond = Condition(("a",), "$lt", "b")
    assert without_nul(cond) is cond
