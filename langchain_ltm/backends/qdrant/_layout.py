"""How items live in a Qdrant collection: point ids, payload layout, filters (all pure).

One point per embedded text, laid out the way ``langchain_qdrant.QdrantVectorStore`` reads
points (``page_content`` = the text, ``metadata`` = namespace/key/path), so that vectorstore
can search what we wrote. Next to those, our own payload fields:

==================  ========================================================================
``namespace``       the item's namespace labels
``ns``              JSON of the namespace (exact match; facet key of ``list_namespaces``)
``ns_prefixes``     JSON of every prefix of the namespace, ``[]`` included: a whole-label
                    prefix scope is one keyword match, and ``[]`` marks points as ours
``user``            the label at ``tenant_depth`` (the user label of the fact API): the
                    tenant payload index on a server
``key``             the item key
``value``           the item value (JSON object; filters translate to ``value.<path>``)
``created_at_us``   timestamps, integer microseconds since the Unix epoch (exact round trip)
``updated_at_us``
``expires_at_us``   TTL: when the item expires (same unit; absent without a TTL), indexed
``ttl_minutes``     TTL: what a refresh on read extends by
``head``            ``True`` on the item's one head point (see below)
``indexed``         on the head: whether the item has vectors
``paths``           on the head: the index paths of the item's texts, in order
==================  ========================================================================

Every point of an item carries the whole item (value and timestamps), so a search hit never
needs a second read. The *head* point (id ``uuid5(namespace, key, "")``) carries the first
text's vector, or no vector at all for an item without texts (``vector={}``: Qdrant allows
points without their vectors, and vector queries never return them). Other texts get
``uuid5(namespace, key, path)``. ``get`` is then one ``retrieve`` of head ids, and a
concurrent duplicate write is an idempotent upsert of the same ids.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Any

from qdrant_client import models

from langchain_ltm._filters import Condition, Filter
from langchain_ltm._ids import vector_id
from langchain_ltm.backends.base import Record, StoredItem

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
ITEM_FIELDS = [
    "namespace",
    "key",
    "value",
    "created_at_us",
    "updated_at_us",
    "expires_at_us",
    "ttl_minutes",
]
HEAD_FIELDS = ["created_at_us", "paths"]
# keyword payload indexes created on a server ("user" is the tenant index)
KEYWORD_INDEXES = ("ns", "ns_prefixes", "key", "value.content_hash")
BOOL_INDEXES = ("head", "indexed")
INTEGER_INDEXES = ("expires_at_us",)

_SAFE_SEGMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_EXACT_FLOAT_INT = 2**53


def ns_json(namespace: Sequence[str]) -> str:
    return json.dumps(list(namespace), ensure_ascii=False, separators=(",", ":"))


@lru_cache(maxsize=4096)  # a write asks for each item's head id several times
def head_id(namespace: tuple[str, ...], key: str) -> str:
    return vector_id(namespace, key, "")


@lru_cache(maxsize=65536)  # namespaces repeat (one per user): JSON-encode each once
def _scope_fields(namespace: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    return ns_json(namespace), tuple(ns_json(namespace[:d]) for d in range(len(namespace) + 1))


_EMPTY_PATH = "\x00"
"""Stands for the path ``""`` in a further text's id: ``vector_id(..., "")`` is the head's."""


def point_ids(namespace: tuple[str, ...], key: str, paths: Sequence[str]) -> list[str]:
    """Ids of an item's points: the head, then one per further text.

    A further text under the path ``""`` (a value's ``""`` field) gets an id of its own: it
    took the head's and overwrote it, so the item was gone once the folder was reopened.
    """
    return [head_id(namespace, key)] + [
        vector_id(namespace, key, p or _EMPTY_PATH) for p in paths[1:]
    ]


def item_points(keys: Sequence[tuple[tuple[str, ...], str]]) -> models.Filter:
    """Every point of the items ``keys`` (exact namespace and key)."""
    return models.Filter(
        should=[
            models.Filter(must=[_match("ns", ns_json(ns)), _match("key", key)]) for ns, key in keys
        ]
    )


def to_us(moment: datetime) -> int:
    return (moment - EPOCH) // timedelta(microseconds=1)


def from_us(micros: int) -> datetime:
    return EPOCH + timedelta(microseconds=int(micros))


def build_points(
    record: Record, created_at: datetime, tenant_depth: int, vector_name: str
) -> list[models.PointStruct]:
    """The points of one item (at least one: the head)."""
    namespace, key = record.namespace, record.key
    exact, prefixes = _scope_fields(namespace)
    shared: dict[str, Any] = {
        "namespace": list(namespace),
        "ns": exact,
        "ns_prefixes": list(prefixes),
        "key": key,
        "value": record.value,
        "created_at_us": to_us(created_at),
        "updated_at_us": to_us(record.now),
    }
    if len(namespace) >= tenant_depth:
        shared["user"] = namespace[tenant_depth - 1]
    expires_at = record.expires
    if expires_at is not None:
        shared["expires_at_us"] = to_us(expires_at)
        shared["ttl_minutes"] = record.ttl_minutes
    vectors = record.vectors if record.vectors is not None else ()
    texts = record.texts if len(vectors) else ()
    paths = list(record.paths) if len(vectors) else []
    ids = point_ids(namespace, key, paths or [""])
    points = []
    for i, point_id in enumerate(ids):
        text, path = (texts[i], paths[i]) if texts else ("", "")
        payload = {
            **shared,
            "page_content": text,
            "metadata": {"namespace": list(namespace), "key": key, "path": path},
            "head": i == 0,
        }
        if i == 0:
            payload["indexed"] = bool(texts)
            payload["paths"] = paths
        vector: dict[str, Any] = {vector_name: vectors[i].tolist()} if texts else {}
        # built from checked parts: skip pydantic re-validating 384 floats per point
        points.append(
            models.PointStruct.model_construct(id=point_id, vector=vector, payload=payload)
        )
    return points


def stored_item(payload: dict[str, Any]) -> StoredItem:
    expires = payload.get("expires_at_us")
    ttl = payload.get("ttl_minutes")
    return StoredItem(
        namespace=tuple(payload["namespace"]),
        key=payload["key"],
        value=payload["value"],
        created_at=from_us(payload["created_at_us"]),
        updated_at=from_us(payload["updated_at_us"]),
        expires_at=from_us(expires) if expires is not None else None,
        ttl_minutes=float(ttl) if ttl is not None else None,
    )


def alive_condition(at: datetime) -> models.Condition:
    """Points of items without a TTL or expiring after ``at``."""
    return models.Filter(
        should=[
            models.IsEmptyCondition(is_empty=models.PayloadField(key="expires_at_us")),
            models.FieldCondition(key="expires_at_us", range=models.Range(gt=to_us(at))),
        ]
    )


def expired_condition(at: datetime) -> models.Condition:
    """Points of items that have expired at ``at``."""
    return models.FieldCondition(key="expires_at_us", range=models.Range(lte=to_us(at)))


def is_ours(payload: dict[str, Any] | None) -> bool:
    return isinstance(payload, dict) and "namespace" in payload and "value" in payload


# filters


def _match(key: str, value: Any) -> models.FieldCondition:
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


def scope_conditions(prefix: tuple[str, ...], tenant_depth: int) -> list[models.Condition]:
    """Whole-label prefix scope (``[]`` for the empty prefix: only our points)."""
    out: list[models.Condition] = [_match("ns_prefixes", ns_json(prefix))]
    if len(prefix) >= tenant_depth:
        out.insert(0, _match("user", prefix[tenant_depth - 1]))
    return out


def translate(conditions: Filter) -> list[models.Condition]:
    """Qdrant conditions selecting a *superset* of the items that pass ``conditions``.

    Qdrant differs from the contract's JSON semantics in ways no ``models.Filter`` fixes:
    a match on an array field matches any element, a path walks into arrays of objects,
    integer matches miss ``1.0``, ranges do not compare strings, and there is no
    "key present" test that also covers ``[]``. So each condition becomes the tightest
    Qdrant condition that never drops a matching item, conditions with no such form
    (``$ne``, string ranges, list/dict operands, keys that are not identifiers) are left
    out, and the backend re-checks every candidate with the exact Python predicate.
    The one lossy case is ``$exists: True`` on a key holding ``[]`` (Qdrant calls that
    empty); the fact API only asks it of ``content``, which is always a non-empty string.
    """
    out: list[models.Condition] = []
    for cond in conditions:
        if not all(_SAFE_SEGMENT.match(part) for part in cond.path):
            continue
        translated = _translate_one(cond, "value." + ".".join(cond.path))
        if translated is not None:
            out.append(translated)
    return out


def _translate_one(cond: Condition, key: str) -> models.Condition | None:
    op, operand = cond.op, cond.operand
    if op == "$eq":
        return _equals(key, operand)
    if op == "$in":
        options = [_equals(key, o) for o in operand]
        if not options or any(o is None for o in options):
            return None
        if all(isinstance(o, str) for o in operand):
            return models.FieldCondition(key=key, match=models.MatchAny(any=list(operand)))
        return models.Filter(should=[o for o in options if o is not None])
    if op == "$exists":
        empty = models.IsEmptyCondition(is_empty=models.PayloadField(key=key))
        if not operand:
            return empty
        null = models.IsNullCondition(is_null=models.PayloadField(key=key))
        return models.Filter(should=[models.Filter(must_not=[empty]), null])
    if op in ("$gt", "$gte", "$lt", "$lte") and _is_exact_number(operand):
        bound = float(operand)
        return models.FieldCondition(key=key, range=models.Range(**{op[1:]: bound}))
    return None  # $ne, string ranges: checked in Python only


def _equals(key: str, operand: Any) -> models.Condition | None:
    if isinstance(operand, (str, bool)):
        return _match(key, operand)
    if _is_exact_number(operand):
        return models.FieldCondition(
            key=key, range=models.Range(gte=float(operand), lte=float(operand))
        )
    if operand is None:
        return models.IsEmptyCondition(is_empty=models.PayloadField(key=key))
    return None


def _is_exact_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return not isinstance(value, int) or abs(value) <= _EXACT_FLOAT_INT


def search_filter(
    prefix: tuple[str, ...],
    tenant_depth: int,
    conditions: Filter,
    extra: Iterable[models.Condition] = (),
) -> models.Filter:
    return models.Filter(
        must=[*scope_conditions(prefix, tenant_depth), *translate(conditions), *extra]
    )


HEADS = _match("head", True)
UNINDEXED_HEADS = _match("indexed", False)
