"""The hand-built ``vector_id`` equals its definition, uuid5 over the JSON of its inputs."""

from __future__ import annotations

import json
import uuid

import pytest

from langchain_ltm._ids import _ID_NAMESPACE, fact_key, vector_id, vector_id_bytes

CASES = [
    (("memories", "alice@example.com"), "k1", "content"),
    ((), "", ""),
    (("a",), "key with spaces", "tags.0"),
    (("caf\u00e9", "\u65e5\u672c", "emoji \U0001f600"), "\u00fc", "\u2028"),
    (('quote"', "back\\slash", "ctrl\x01\x1f\t\n"), "nul\x00", "p"),
    (("lone \ud800 surrogate",), "\udfff", "x"),
    (tuple(f"l{i}" for i in range(20)), "k" * 500, "a.b.c"),
]


def definition(namespace: tuple[str, ...], key: str, path: str) -> str:
    return str(uuid.uuid5(uuid.UUID(_ID_NAMESPACE), json.dumps([list(namespace), key, path])))


@pytest.mark.parametrize(("namespace", "key", "path"), CASES)
def test_vector_id_matches_uuid5_of_json(namespace: tuple[str, ...], key: str, path: str) -> None:
    got = vector_id(namespace, key, path)
    assert got == definition(namespace, key, path)
    assert uuid.UUID(got).version == 5


def test_vector_id_separates_its_parts() -> None:
    # the same characters split differently between namespace, key and path differ
    ids = {
        vector_id(("a", "b"), "c", "d"),
        vector_id(("a",), "b", "c.d"),
        vector_id(("a", "b", "c"), "", "d"),
        vector_id(("ab",), "c", "d"),
    }
    assert len(ids) == 4


def test_fact_key_is_uuid5_of_label_and_hash() -> None:
    for label, digest in [("alice", "ab12"), ("caf\u00e9 \U0001f600", ""), ("", "ff" * 32)]:
        name = f"fact\x00{label}\x00{digest}"
        assert fact_key(label, digest) == str(uuid.uuid5(uuid.UUID(_ID_NAMESPACE), name))


@pytest.mark.parametrize(("namespace", "key", "path"), CASES)
def test_vector_id_bytes_are_the_same_uuid(namespace: tuple[str, ...], key: str, path: str) -> None:
    raw = vector_id_bytes(namespace, key, path)
    assert raw == uuid.UUID(definition(namespace, key, path)).bytes
    assert str(uuid.UUID(bytes=raw)) == vector_id(namespace, key, path)
