"""The planner's shortcut for plain index fields gives what LangGraph's extractor gives."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.store.base import get_text_at_path, tokenize_path

from langchain_ltm._ops import _texts_at

VALUES: list[Any] = [
    {"content": "a fact"},
    {"content": ""},
    {"content": 3},
    {"content": 2.5},
    {"content": True},
    {"content": None},
    {"content": ["a", "b"]},
    {"content": {"nested": "x"}},
    {"other": "no content here"},
    {},
    {"[0]": "odd key", "*": "star key", "{a}": "brace key"},
    {"content": "x", "tags": ["t1", "t2"], "a": {"b": "deep"}},
]
PATHS = ["content", "other", "tags[*]", "tags[0]", "a.b", "*", "{content,other}", "[0]", "$"]


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("path", PATHS)
def test_texts_at_equals_get_text_at_path(value: dict[str, Any], path: str) -> None:
    tokens = path if path == "$" else tokenize_path(path)
    assert _texts_at(value, tokens) == get_text_at_path(value, tokens)


def test_a_str_subclass_goes_the_generic_way() -> None:
    class Label(str):
        def __str__(self) -> str:
            return "label"

    value = {"content": Label("raw")}
    tokens = tokenize_path("content")
    assert _texts_at(value, tokens) == get_text_at_path(value, tokens) == ["label"]
