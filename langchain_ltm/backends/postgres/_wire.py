"""Whole-array binary parameters for the write statement: one buffer per column of a batch.

psycopg dumps a list parameter one element at a time, with a Python call per element: for
the 1,000 vectors, ids and JSON values of a batch that was most of the client's share of
the write. These wrappers carry a column of the batch and are dumped in one piece, in
Postgres' binary array format (``array_recv``): the vectors from one float32 matrix with
numpy, the ids as their 16 raw bytes. The server receives the same values as before.

The wrappers are plain data (``_sql`` builds them without I/O); :func:`register` teaches a
connection to dump them, next to pgvector's own adapters. Reading, :func:`json_loads` turns
the ``jsonb`` values a search returns into Python with ``orjson`` where it is installed
(langsmith, and so langchain-core, brings it on CPython), exactly as ``json`` reads them.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
from psycopg.adapt import Dumper
from psycopg.pq import Format

try:
    import orjson
except ImportError:  # pragma: no cover - PyPy, or a slimmed install
    orjson = None  # type: ignore[assignment]

# ndim, flags (no nulls), element type, then (length, lower bound) of the one dimension
_HEADER = struct.Struct(">iiiii")
_EMPTY = struct.Struct(">iii")  # an empty array has no dimensions
_UUID_OID, _UUID_ARRAY_OID = 2950, 2951
_JSONB_OID, _JSONB_ARRAY_OID = 3802, 3807
_LEN_16 = (16).to_bytes(4, "big")


class VectorRows:
    """The rows of an ``(n, d)`` float32 matrix, as one binary ``vector[]`` parameter."""

    __slots__ = ("matrix",)

    def __init__(self, matrix: np.ndarray[Any, Any]) -> None:
        self.matrix = matrix


class UuidRows:
    """16-byte uuids (``uuid.UUID.bytes``), as one binary ``uuid[]`` parameter."""

    __slots__ = ("ids",)

    def __init__(self, ids: Sequence[bytes]) -> None:
        self.ids = ids


class JsonbRows:
    """JSON values, as one binary ``jsonb[]`` parameter (each value ``json.dumps``-ed)."""

    __slots__ = ("values",)

    def __init__(self, values: Sequence[Any]) -> None:
        self.values = values


def _array(element: int, count: int, body: bytes | bytearray) -> bytes:
    if not count:
        return _EMPTY.pack(0, 0, element)
    return _HEADER.pack(1, 0, element, count, 1) + body


class _VectorRowsDumper(Dumper):
    format = Format.BINARY
    element = 0  # the vector type's oid, set per database by register()

    def dump(self, obj: VectorRows) -> bytearray | bytes:
        matrix = obj.matrix
        rows, dims = matrix.shape
        if not rows:
            return _EMPTY.pack(0, 0, self.element)
        # each element: its length, then pgvector's binary vector (int16 dims, int16 unused,
        # big-endian float4s); written straight into the parameter's buffer
        buf = bytearray(_HEADER.size + rows * (dims + 2) * 4)
        _HEADER.pack_into(buf, 0, 1, 0, self.element, rows, 1)
        out = np.frombuffer(buf, dtype=">f4", offset=_HEADER.size).reshape(rows, dims + 2)
        words = out.view(">i4")
        words[:, 0] = 4 + 4 * dims
        words[:, 1] = dims << 16
        out[:, 2:] = matrix
        return buf


class _UuidRowsDumper(Dumper):
    format = Format.BINARY
    oid = _UUID_ARRAY_OID

    def dump(self, obj: UuidRows) -> bytes:
        return _array(_UUID_OID, len(obj.ids), b"".join([_LEN_16 + raw for raw in obj.ids]))


class _JsonbRowsDumper(Dumper):
    format = Format.BINARY
    oid = _JSONB_ARRAY_OID

    def dump(self, obj: JsonbRows) -> bytes:
        # jsonb's binary input is a version byte (1) and the JSON text, as psycopg's Jsonb
        dumps = json.dumps
        parts = [b"\x01" + dumps(value).encode() for value in obj.values]
        body = b"".join([len(part).to_bytes(4, "big") + part for part in parts])
        return _array(_JSONB_OID, len(parts), body)


_VECTOR_DUMPERS: dict[tuple[int, int], type[Dumper]] = {}


def register(conn: Any, vector_oid: int, vector_array_oid: int) -> None:
    """Dump the wrappers on ``conn`` (the vector type's oids are per database)."""
    dumper = _VECTOR_DUMPERS.get((vector_oid, vector_array_oid))
    if dumper is None:
        dumper = type(
            "VectorRowsDumper",
            (_VectorRowsDumper,),
            {"oid": vector_array_oid, "element": vector_oid},
        )
        _VECTOR_DUMPERS[(vector_oid, vector_array_oid)] = dumper
    adapters = conn.adapters
    adapters.register_dumper(VectorRows, dumper)
    adapters.register_dumper(UuidRows, _UuidRowsDumper)
    adapters.register_dumper(JsonbRows, _JsonbRowsDumper)


def json_loads(data: bytes | bytearray | memoryview | str) -> Any:
    """A ``jsonb`` value as Python, exactly as ``json.loads`` reads it.

    ``orjson`` first (2.3 -> 1.1 us for a fact's value of 130 bytes, the check below
    included). It reads an integer beyond 64 bits as a float, so a value holding a run of
    19 or more digits goes to ``json`` (whose integers are exact), and so does whatever
    ``orjson`` refuses (a lone surrogate, nesting deeper than 1,024) and text given as
    ``str``: no value reads differently.

    Example:
        >>> json_loads(b'{"content": "likes tea", "n": 123456789012345678901234567890}')
        {'content': 'likes tea', 'n': 123456789012345678901234567890}
    """
    if isinstance(data, (memoryview, bytearray)):
        data = bytes(data)
    if (
        orjson is not None
        and isinstance(data, bytes)
        and _NINETEEN_DIGITS not in data.translate(_DIGITS_AS_ZERO)
    ):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data)


# every digit read as "0", so a run of 19 digits (which may pass -2**63) is 19 zeros
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_NINETEEN_DIGITS = b"0" * 19
