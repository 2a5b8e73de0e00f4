"""Whole-array binary parameters for the write statement: one buffer per column of a batch.

psycopg dumps a list parameter one element at a time, with a Python call per element: for
the 1,000 vectors, ids and JSON values of a batch that was most of the client's share of
the write. These wrappers carry a column of the batch and are dumped in one piece, in
Postgres' binary array format (``array_recv``): the vectors from one float32 matrix with
numpy, the ids as their 16 raw bytes. The server receives the same values as before.

The wrappers are plain data (the statement modules build them without I/O);
:func:`register` teaches a connection to dump them, next to pgvector's own adapters. The
JSON values are written the way the connection writes a ``Jsonb``: a pool whose connections
were given their own dumps (``psycopg.types.json.set_json_dumps(dumps, conn)`` in its
``configure=``, or globally) writes with it; psycopg's default writes with ``json.dumps``,
NaN and infinities refused before the statement is sent (``jsonb`` has none). Reading,
:func:`json_loads` turns the ``jsonb`` values a search returns into Python with ``orjson``
where it is installed (langsmith, and so langchain-core, brings it on CPython), exactly as
``json`` reads them.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
from psycopg import postgres
from psycopg.abc import AdaptContext
from psycopg.adapt import Dumper, PyFormat
from psycopg.errors import ProgrammingError
from psycopg.pq import Format
from psycopg.types.json import Jsonb, JsonbBinaryDumper

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
    """JSON values, as one binary ``jsonb[]`` parameter (dumped as the connection dumps JSON)."""

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


# psycopg's default (json.dumps), except that NaN and infinities raise here, not on the server
_ENCODE = json.JSONEncoder(allow_nan=False).encode
_UNDUMPABLE = (
    "The Postgres engine stores values as jsonb ({}): use dicts, lists, strings, numbers, "
    "booleans and None (convert datetimes to ISO strings, no NaN or infinity), or hand in a "
    "pool whose connections dump such values (psycopg.types.json.set_json_dumps(dumps, "
    "conn) in its configure=)."
)
_UNDUMPABLE_CUSTOM = (
    "The Postgres engine writes values with the JSON dumps configured on this connection, "
    "which refused one ({}): convert the value, or extend that dumps function."
)


def _jsonb_element(context: AdaptContext | None) -> Any:
    """How ``context`` dumps one binary ``jsonb`` value; ``None``: psycopg's default.

    The connection's own ``Jsonb`` binary dumper decides: psycopg's (its ``_dumps``, which
    ``set_json_dumps`` sets per connection or globally) or one the user registered.
    """
    adapters = context.adapters if context is not None else postgres.adapters
    try:
        base = adapters.get_dumper(Jsonb, PyFormat.BINARY)
    except ProgrammingError:  # nothing registered for Jsonb: psycopg's default
        return None
    if issubclass(base, JsonbBinaryDumper) and base.dump is JsonbBinaryDumper.dump:
        dumps = base._dumps
        if dumps is json.dumps:
            return None

        def element(value: Any) -> bytes:
            data = dumps(value)
            return b"\x01" + (data.encode() if isinstance(data, str) else bytes(data))

        return element
    dumper = base(Jsonb, context)  # a dumper class of the user's own: its whole output

    def own(value: Any) -> bytes:
        data = dumper.dump(Jsonb(value))
        if data is None:  # NULL: an item's value is never missing
            raise TypeError(f"{base.__name__}.dump() returned None")
        return bytes(data)

    return own


class _JsonbRowsDumper(Dumper):
    format = Format.BINARY
    oid = _JSONB_ARRAY_OID

    def __init__(self, cls: type, context: AdaptContext | None = None) -> None:
        super().__init__(cls, context)
        self._element = _jsonb_element(context)

    def dump(self, obj: JsonbRows) -> bytes:
        # jsonb's binary input is a version byte (1) and the JSON text, as psycopg's Jsonb
        element = self._element
        try:
            if element is None:
                encode = _ENCODE
                parts = [b"\x01" + encode(value).encode() for value in obj.values]
            else:
                parts = [element(value) for value in obj.values]
        except (TypeError, ValueError) as exc:
            message = _UNDUMPABLE if element is None else _UNDUMPABLE_CUSTOM
            # ValueError or TypeError as caught (a UnicodeEncodeError is a ValueError whose
            # constructor takes five arguments: never rebuild the caught type)
            kind = ValueError if isinstance(exc, ValueError) else TypeError
            raise kind(message.format(exc)) from exc
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
