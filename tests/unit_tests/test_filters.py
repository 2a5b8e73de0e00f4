import pytest

from langchain_ltm import InvalidFilterError
from langchain_ltm._filters import compile_filter, json_equal, matches

VALUE = {"n": 10, "s": "b", "flag": True, "nested": {"x": 1, "y": [1, 2]}, "none": None}


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"n": 10}, True),
        ({"n": 10.0}, True),
        ({"n": "10"}, False),
        ({"flag": True}, True),
        ({"flag": 1}, False),  # JSON: true is not 1
        ({"n": {"$gt": 9}}, True),  # numbers compare as numbers, not text ("10" < "9")
        ({"n": {"$gte": 10, "$lt": 11}}, True),
        ({"n": {"$lte": 9.5}}, False),
        ({"s": {"$gt": "a"}}, True),
        ({"s": {"$gt": 1}}, False),  # a string never compares with a number
        ({"missing": {"$gt": 1}}, False),
        ({"n": {"$ne": 3}}, True),
        ({"missing": {"$ne": 3}}, True),
        ({"missing": None}, True),  # InMemoryStore: a missing key reads as None
        ({"nested": {"x": 1}}, True),
        ({"nested": {"x": 2}}, False),
        ({"nested": {"y": [1, 2]}}, True),
        ({"nested": {"y": [2, 1]}}, False),
        ({"n": 10, "s": "c"}, False),
    ],
)
def test_filter_semantics(flt, expected):
    assert matches(VALUE, compile_filter(flt)) is expected


@pytest.mark.parametrize(
    "flt",
    [
        {"n": {"$foo": 1}},
        {"n": {"$in": [1]}},  # internal operator, not part of the public filter language
        {"n": {"$gt": [1]}},
        {"n": {"$gt": None}},
        {"n": {"$eq": 1, "plain": 2}},
        "not a dict",
    ],
)
def test_bad_filters_raise(flt):
    with pytest.raises(InvalidFilterError) as info:
        compile_filter(flt)
    assert isinstance(info.value, ValueError)


def test_json_equal_is_strict_about_types():
    assert json_equal({"a": [1, {"b": 2.0}]}, {"a": [1, {"b": 2}]})
    assert not json_equal([True], [1])
    assert not json_equal("1", 1)
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})


def test_in_looks_strings_and_missing_values_up_with_json_equality():
    """``$in`` (the fact API's) answers like comparing with every member, for every type."""
    from langchain_ltm._filters import Condition

    members = ["a", "b", 1, 2.0, True, None, {"k": 1}, [1, 2]]
    values = ["a", "c", "", 1, 1.0, 2, 3, True, False, 0, None, {"k": 1}, [1, 2], [2, 1]]
    for operand in (members, [m for m in members if m is not None], ["x"] * 3, []):
        cond = Condition(("f",), "$in", operand)
        for value in values:
            expected = any(json_equal(value, o) for o in operand)
            assert matches({"f": value}, (cond,)) is expected, (operand, value)
        assert matches({}, (cond,)) is (None in operand)  # a missing field is None
    big = Condition(("h",), "$in", [f"hash-{i}" for i in range(5000)])
    assert matches({"h": "hash-4999"}, (big,)) and not matches({"h": "hash-5000"}, (big,))
    assert Condition(("h",), "$in", ["x"]) == Condition(("h",), "$in", ["x"])
