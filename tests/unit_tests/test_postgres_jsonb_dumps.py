"""A refused value under a pool's own JSON dumps raises a clear error (review 2).

A dumps returning ``str`` with ``ensure_ascii=False`` meets a lone surrogate: encoding it
raises ``UnicodeEncodeError`` (a ``ValueError`` whose constructor takes five arguments),
which the dumper once rebuilt by its type with one argument, ending in
``TypeError: function takes exactly 5 arguments (1 given)``.
"""

from __future__ import annotations

import functools
import json

import pytest
from psycopg import postgres
from psycopg.adapt import AdaptersMap
from psycopg.types.json import set_json_dumps

from langchain_ltm.backends.postgres import _wire


class _Context:
    def __init__(self) -> None:
        self.adapters = AdaptersMap(postgres.adapters)
        self.connection = None


def test_a_lone_surrogate_under_custom_dumps_is_a_clear_value_error():
    context = _Context()
    set_json_dumps(functools.partial(json.dumps, ensure_ascii=False), context)
    dumper = _wire._JsonbRowsDumper(_wire.JsonbRows, context)
    assert dumper.dump(_wire.JsonbRows([{"a": "é"}])).endswith('"a": "é"}'.encode())
    with pytest.raises(ValueError, match="JSON dumps configured on this connection"):
        dumper.dump(_wire.JsonbRows([{"a": "\ud800"}]))
