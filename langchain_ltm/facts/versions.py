"""How facts and their versions are laid out as BaseStore items (pure).

A fact of user ``u`` is the item ``(*namespace, label(u)) / fact_id`` with the value::

    {"content": "Lives in Berlin", "content_hash": "...", "valid_from": "2026-...Z",
     "versions": 1, ...any other fields...}

Every earlier text is an item of its own in the same namespace, key ``{fact_id}@{n}``::

    {"content": "Lives in Paris", "version_of": fact_id, "version": 1,
     "valid_from": "2025-...Z", "valid_to": "2026-...Z", ...its metadata...}

"Any other fields" are the metadata of the text (``remember(..., metadata=)``), stored
beside the layout's fields in the fact and in each version, so a ``recall`` filter on them
runs inside the engine like a BaseStore filter; a version keeps the metadata its text was
remembered with. Versions are numbered in the order of ``valid_from``.

Version items are embedded like facts (so ``recall(include_history=True)`` and ``as_of``
search them inside the engine) but carry no ``content_hash``: exact dedup, and the
Postgres uniqueness constraint on it, only see current texts. ``forget`` and
``clear_user`` delete a fact's versions with it. Timestamps are stored as fixed-width UTC
strings, so the engines' string range filters order them correctly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Protocol

from langchain_ltm._filters import Condition, Filter
from langchain_ltm.backends.base import StoredItem
from langchain_ltm.facts.model import Fact, FactVersion, RecalledFact
from langchain_ltm.facts.text import content_hash

__all__ = [
    "CURRENT_FACTS",
    "MAX_COUNT_DIGITS",
    "PINNED",
    "RESERVED",
    "VERSIONS",
    "fact_from_items",
    "fact_value",
    "format_time",
    "holds_hash",
    "parse_time",
    "stored_time",
    "version_key",
    "version_value",
]

RESERVED = frozenset(
    {
        "content",
        "content_hash",
        "valid_from",
        "valid_to",
        "versions",
        "version_of",
        "version",
        "pinned",
        "history",
    }
)
"""Fields of the fact layout: not metadata keys (``history`` is 0.1.0's inline history)."""
_LEGACY_HISTORY = "history"  # 0.1.0 kept up to 5 earlier texts inline

CURRENT_FACTS: Filter = (
    Condition(("content",), "$exists", True),
    Condition(("version_of",), "$exists", False),
)
"""Current facts only (exact dedup, recall, list).

No engine-independent condition says "a string": a client's item whose ``content`` is not
one (LangMem's ``{"content": {"content": ...}}``) passes, and every read drops it after
(:func:`is_fact`), widening its window as for any hit it cannot use.
"""


def holds_hash(value: Mapping[str, Any]) -> bool:
    """Whether a value is in the fact layout: a fact's value as the fact API writes it.

    A ``content``, a text ``content_hash``, a ``versions`` count (a whole number of at
    most :data:`MAX_COUNT_DIGITS` digits: not a bool, not a float) and no ``version_of``.
    The one definition of the items that hold their text's hash: a put of such a value in
    a user's namespace gets the hash of its own text (``client_puts``), at most one such
    item of a namespace holds a hash, ``remember`` finds every such item by its hash
    (``writes.with_hashes``: :data:`CURRENT_FACTS` with it), and Postgres' one-fact-per-hash
    constraint covers exactly these rows (``FACT_ROW``, schema version 5). Any other value
    (a document with hash and ``versions`` fields of its own, a hash that is no text, an
    item naming another in ``version_of``) is a client's own, stored as given.

    The count's bound: JSON writes a float of 1e16 or more without a fraction (``1e+20``),
    which Postgres reads as an integer of 17 digits or more; a smaller float is written
    with one (``2.0``), which Postgres does not read as an integer either.
    """
    count = value.get("versions")
    return (
        "content" in value
        and isinstance(value.get("content_hash"), str)
        and isinstance(count, int)
        and not isinstance(count, bool)
        and -_COUNT_BOUND < count < _COUNT_BOUND
        and "version_of" not in value
    )


MAX_COUNT_DIGITS = 15
"""The most digits a fact's ``versions`` count has in :func:`holds_hash` (and ``FACT_ROW``)."""

_COUNT_BOUND = 10**MAX_COUNT_DIGITS


VERSIONS: Filter = (Condition(("version_of",), "$exists", True),)
"""Earlier versions only."""

PINNED: Filter = (*CURRENT_FACTS, Condition(("pinned",), "$eq", True))
"""Pinned current facts (the profile block of the middleware)."""


ANY_TEXT: Filter = (Condition(("content",), "$exists", True),)
"""Facts and their earlier versions."""

LEGACY_FACTS: Filter = (
    *CURRENT_FACTS,
    Condition((_LEGACY_HISTORY,), "$exists", True),
    Condition(("versions",), "$exists", False),
)
"""Facts 0.1.0 wrote with earlier texts inline (:func:`legacy_history` of each has them)."""


def current_view(requested: Mapping[str, Any] | None, conditions: Filter) -> Filter:
    """What ``BaseStore.search`` of one user's namespace finds: no earlier versions, unless asked.

    A superseded text ("Lives in Paris" after "Lives in Berlin") is history, not what the
    agent should see: a client searching a user's namespace (LangMem's search tool, a
    prompt calling ``store.search``) gets current items only. A filter that names
    ``version_of`` asks for versions, and gets them; ``get`` reads any item. Searches of
    other prefixes (broader ones, other namespaces) are left as they are: a search above
    the users' namespaces returns versions too (an admin view's), and
    ``filter={"version_of": None}`` leaves them out.
    """
    if requested and "version_of" in requested:
        return conditions
    return (*conditions, Condition(("version_of",), "$exists", False))


def format_time(moment: datetime) -> str:
    """Fixed-width UTC text: sorts like the instant it names.

    Raises:
        ValueError: ``moment`` is naive, or out of UTC's range.
    """
    if moment.tzinfo is None:
        raise ValueError(
            f"{moment!r} has no time zone; pass an aware datetime, e.g. "
            "datetime(2026, 1, 1, tzinfo=timezone.utc)."
        )
    try:
        utc = moment.astimezone(timezone.utc)
    except OverflowError:  # 0001-01-01T01:00+05:00 is before year 1 in UTC
        raise ValueError(
            f"{moment.isoformat()} is out of range in UTC (before year 1 or after 9999)."
        ) from None
    # the year padded by hand: strftime("%Y") gives "999", which sorts and parses wrong
    return f"{utc.year:04d}-" + utc.strftime("%m-%dT%H:%M:%S.%fZ")


def parse_time(text: Any, default: datetime) -> datetime:
    """Inverse of :func:`format_time` (ISO 8601 in general); ``default`` when missing."""
    if not isinstance(text, str):
        return default
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def stored_time(text: Any, default: datetime) -> datetime:
    """A time in a stored value, as reads take it: ``default`` when missing or unreadable.

    A client may put any ``valid_from`` beside a ``content`` (``"yesterday"``, a year-1
    time east of UTC): one such item raised in every read of the user's facts, their
    export, and ``forget_user``. It reads as the item's own time instead, as a number does.
    """
    try:
        moment = parse_time(text, default)
        moment.astimezone(timezone.utc)  # format_time (exports, rewrites) needs it in UTC
    except (ValueError, OverflowError):
        return default
    return moment


def version_key(fact_id: str, number: int) -> str:
    """Key of the ``number``-th earlier version (from 1) of a fact."""
    return f"{fact_id}@{number}"


def fact_value(
    content: str,
    valid_from: datetime,
    versions: int,
    metadata: Mapping[str, Any] | None = None,
    pinned: bool = False,
) -> dict[str, Any]:
    """The value of a fact item: the layout's fields and ``metadata`` (its layout keys dropped)."""
    value = metadata_of(metadata or {})
    value.update(
        content=content,
        content_hash=content_hash(content),
        valid_from=format_time(valid_from),
        versions=versions,
    )
    if pinned:
        value["pinned"] = True
    return value


def version_value(
    fact_id: str,
    number: int,
    content: str,
    valid_from: datetime,
    valid_to: datetime,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The value of the ``number``-th earlier version of ``fact_id``."""
    value = metadata_of(metadata or {})
    value.update(
        content=content,
        version_of=fact_id,
        version=number,
        valid_from=format_time(valid_from),
        valid_to=format_time(valid_to),
    )
    return value


def version_count(item: StoredItem) -> int:
    """How many earlier versions the stored fact has (legacy inline history included)."""
    count = item.value.get("versions")
    if isinstance(count, int) and not isinstance(count, bool):
        return count
    return len(legacy_history(item))


def may_have_versions(item: StoredItem) -> bool:
    """Whether version items may point at this fact: it counts some, or it keeps no count.

    A fact written by this layout always counts its versions. An item without the count
    was written by a client (a BaseStore ``put`` over a fact, as LangMem's update action
    does) or by 0.1.0: versions it had before stay in the store, so they must be looked up.
    """
    count = item.value.get("versions")
    return version_count(item) > 0 or not isinstance(count, int) or isinstance(count, bool)


def legacy_history(item: StoredItem) -> list[FactVersion]:
    """Earlier texts a 0.1.0 fact kept inline (no dates then: its lifetime is used)."""
    texts = item.value.get(_LEGACY_HISTORY)
    if "versions" in item.value or not isinstance(texts, list):
        return []
    return [
        FactVersion(str(t), item.created_at, item.updated_at) for t in texts if isinstance(t, str)
    ]


def legacy_versions(item: StoredItem, stored: Sequence[_Keyed] = ()) -> list[StoredItem]:
    """A 0.1.0 fact's inline texts as the version items that keep them (``@1`` to ``@n``).

    Dated as they read before any write (:func:`legacy_history`): inline, a text ends where
    the fact was last written, so a rewrite of the fact would move its end to the rewrite.
    Every write that rewrites a 0.1.0 fact writes these in the same write, and the fact
    without ``history`` (:func:`upgraded_value`). None for any other fact.

    ``stored``: the fact's version items (expired ones too). Should one hold a number of
    ``1..n`` (a client's own ``history`` field put over a fact with versions), the inline
    texts are numbered after the highest instead: out of time order, but none is written
    over a stored text.
    """
    earlier = legacy_history(item)
    numbers = {int(v.value["version"]) for v in stored if is_version(v)}
    start = max(numbers) if numbers & set(range(1, len(earlier) + 1)) else 0
    return [
        StoredItem(
            item.namespace,
            version_key(item.key, start + number),
            version_value(
                item.key, start + number, v.content, v.valid_from, v.valid_to or item.updated_at
            ),
            item.created_at,
            item.updated_at,
            item.expires_at,
            item.ttl_minutes,
        )
        for number, v in enumerate(earlier, 1)
    ]


def upgraded_value(item: StoredItem, value: Mapping[str, Any]) -> dict[str, Any]:
    """``value``, to be written over ``item``, once :func:`legacy_versions` are written out.

    Without 0.1.0's ``history`` (its texts are version items now), counting them unless it
    counts its own, and with when the current text began: a fact without ``valid_from``
    (0.1.0's, or one a client put under a new key, LangMem's create) began when it was last
    written, which this write moves, so the moment is written down (``value``'s own wins).
    """
    earlier = legacy_history(item)
    out = {k: v for k, v in value.items() if k != _LEGACY_HISTORY} if earlier else dict(value)
    if earlier:
        out.setdefault("versions", len(earlier))
    if is_fact(item):
        out.setdefault("valid_from", format_time(valid_from(item)))
    return out


def valid_from(item: StoredItem) -> datetime:
    """When the stored fact's current text became its text."""
    return stored_time(item.value.get("valid_from"), item.updated_at)


def to_version(item: StoredItem) -> FactVersion:
    """A version item as a :class:`FactVersion`."""
    value = item.value
    return FactVersion(
        str(value["content"]),
        stored_time(value.get("valid_from"), item.created_at),
        stored_time(value.get("valid_to"), item.updated_at),
        metadata_of(value),
        item.expires_at,
        item.ttl_minutes,
    )


class _Keyed(Protocol):
    """A stored item or LangGraph's ``Item``: what :func:`is_version` reads."""

    @property
    def key(self) -> str: ...

    @property
    def value(self) -> Mapping[str, Any]: ...


def is_version(item: _Keyed) -> bool:
    """Whether the item is an earlier version of a fact, as this layout writes them.

    Its ``version_of`` names a fact and its key is :func:`version_key` of its number: a
    client's own item that happens to have a ``version_of`` field (``{"text": ...,
    "version_of": "doc1"}``) is not one, and is never deleted or renumbered with ``doc1``.
    """
    return is_version_value(item.key, item.value)


def is_version_value(key: str, value: Mapping[str, Any]) -> bool:
    """:func:`is_version` of the item ``value`` at ``key`` (a put not yet written)."""
    fact_id, number = value.get("version_of"), value.get("version")
    return (
        isinstance(fact_id, str)
        and isinstance(number, int)
        and not isinstance(number, bool)
        and key == version_key(fact_id, number)
    )


def is_fact(item: _Keyed) -> bool:
    """Whether the item of a user's namespace is a fact (a current text) for the fact API.

    A text ``content`` and not an earlier version: a fact ``remember`` wrote, and a
    client's item with a text ``content`` (a LangMem memory, a fact a client put over), with
    or without the layout's other fields. The one rule for a client's put over a fact, for
    a read refreshing a fact's versions, and for what the fact API lists.
    """
    return isinstance(item.value.get("content"), str) and not is_version(item)


def fact_from_items(item: StoredItem, user_id: str, versions: Sequence[StoredItem] = ()) -> Fact:
    """A fact from its item and its version items (any order)."""
    return Fact(
        id=item.key,
        user_id=user_id,
        content=str(item.value["content"]),
        created_at=item.created_at,
        updated_at=item.updated_at,
        history=history_of(item, versions),
        valid_from=valid_from(item),
        metadata=metadata_of(item.value),
        pinned=item.value.get("pinned") is True,
        expires_at=item.expires_at,
        ttl_minutes=item.ttl_minutes,
    )


def history_of(item: StoredItem, versions: Sequence[StoredItem]) -> tuple[FactVersion, ...]:
    """The fact's earlier versions, oldest first."""
    ordered = sorted(versions, key=lambda v: int(v.value.get("version") or 0))
    return (*legacy_history(item), *(to_version(v) for v in ordered))


def metadata_of(value: Mapping[str, Any]) -> dict[str, Any]:
    """The value's fields outside the fact layout."""
    return {k: v for k, v in value.items() if k not in RESERVED}


def recalled(fact: Fact, score: float, version: StoredItem | None = None) -> RecalledFact:
    """A recall hit: the fact, or (``version`` given) one of its earlier texts."""
    superseded = to_version(version) if version is not None else None
    return RecalledFact(
        id=fact.id,
        user_id=fact.user_id,
        content=superseded.content if superseded else fact.content,
        created_at=fact.created_at,
        updated_at=fact.updated_at,
        history=fact.history,
        valid_from=superseded.valid_from if superseded else fact.valid_from,
        metadata=superseded.metadata if superseded else fact.metadata,
        pinned=fact.pinned,
        expires_at=fact.expires_at,
        ttl_minutes=fact.ttl_minutes,
        score=score,
        superseded=superseded is not None,
        valid_to=superseded.valid_to if superseded else None,
    )
