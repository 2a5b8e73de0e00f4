"""What a fact write writes: version records placed in time, rewrites, TTLs, the fact after.

Shared by :mod:`~langchain_ltm.facts.writes` (``remember``) and
:mod:`~langchain_ltm.facts.updates` (``update_fact``, ``pin``); pure record building but
for :func:`live_histories` and :func:`embed_versions`, which yield engine and embedder
calls (sans-I/O, see ``langchain_ltm._steps``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from langchain_ltm._steps import Logic, call
from langchain_ltm.backends.base import (
    ItemKey,
    Record,
    StoredItem,
    expiry,
    is_alive,
)
from langchain_ltm.facts import timeline
from langchain_ltm.facts import versions as layout
from langchain_ltm.facts.context import FactContext
from langchain_ltm.facts.decision import BatchDecision, FactState
from langchain_ltm.facts.model import Fact
from langchain_ltm.facts.reads import versions_of
from langchain_ltm.facts.timeline import Said, Timeline

__all__ = [
    "decision_records",
    "embed_versions",
    "fact_after",
    "fact_rewrite",
    "live_histories",
    "rewrite",
    "rewritten",
    "upgraded",
    "with_ttl",
    "written_out",
]


def live_histories(
    ctx: FactContext, namespace: tuple[str, ...], items: Sequence[StoredItem], now: datetime
) -> Logic[tuple[dict[str, list[StoredItem]], list[ItemKey]]]:
    """The live versions of these facts, and the keys of their expired ones.

    A write places, renumbers and rewrites the live ones, and deletes the others: an
    expired version is gone, as an expired fact is. Kept in the timeline, it was rewritten
    with the fact's TTL and came back ("Lost my blue card", said with ``ttl=1``, in the
    history of the same text remembered again later).
    """
    every = yield from versions_of(ctx, namespace, items)
    live = {key: [v for v in found if is_alive(v, now)] for key, found in every.items()}
    lapsed = [
        (v.namespace, v.key) for found in every.values() for v in found if not is_alive(v, now)
    ]
    return live, lapsed


def decision_records(
    ctx: FactContext,
    namespace: tuple[str, ...],
    decision: BatchDecision,
    vectors: Any,
    histories: Mapping[str, list[StoredItem]],
    chains: Mapping[str, list[Said]],
    now: datetime,
    pinned: bool,
    ttl: float | None,
) -> tuple[list[Record], list[ItemKey], dict[str, Timeline]]:
    """The writes of a decision: each touched fact, its versions placed in time, pruning.

    The fact and its new versions get ``ttl``, or (``None``) the stored fact's TTL, counted
    from this write (not from ``observed_at``); with a TTL, its stored versions are
    rewritten with it too, so they expire with the fact.
    """
    records: list[Record] = []
    deletes: list[ItemKey] = []
    lines: dict[str, Timeline] = {}
    for state in decision.touched.values():
        base = state.base
        stored = histories.get(state.key, []) if base else []
        line = timeline.place(base, stored, chains[state.key], ctx.history_limit)
        lines[state.key] = line
        if not line.changed:
            continue
        lifetime = _lifetime(ttl, base)
        written: set[str] = set()
        for entry in line.writes:
            assert entry.number is not None
            assert entry.valid_to is not None
            key = layout.version_key(state.key, entry.number)
            written.add(key)
            # a stored text of a lasting fact keeps its own expiry (it was said with a TTL
            # before the fact was said again for good); otherwise it lives as the fact does
            own = lifetime is None and entry.row < 0 and entry.expires_at is not None
            records.append(
                Record(
                    namespace=namespace,
                    key=key,
                    value=layout.version_value(
                        state.key,
                        entry.number,
                        entry.content,
                        entry.valid_from,
                        entry.valid_to,
                        entry.metadata,
                    ),
                    texts=(entry.content,),
                    paths=("content",),
                    # a new text has its vector; a stored one keeps its text's (cached)
                    vectors=vectors[entry.row : entry.row + 1] if entry.row >= 0 else None,
                    now=now,
                    ttl_minutes=entry.ttl_minutes if own else lifetime,
                    expires_at=entry.expires_at if own else None,
                )
            )
        gone = {layout.version_key(state.key, n) for n in line.deletes} - written
        deletes.extend((namespace, key) for key in sorted(gone))
        if lifetime is not None:
            records.extend(
                with_ttl(v, lifetime, now) for v in stored if v.key not in written | gone
            )
        current = line.current
        records.append(
            Record(
                namespace=base.namespace if base else namespace,
                key=state.key,
                value=layout.fact_value(
                    current.content,
                    current.valid_from,
                    line.count,
                    current.metadata,
                    pinned or (base is not None and base.value.get("pinned") is True),
                ),
                texts=(current.content,),
                paths=("content",),
                vectors=vectors[current.row : current.row + 1] if current.row >= 0 else None,
                now=now,
                created_at=None
                if base is not None and line.created_at == base.created_at
                else line.created_at,
                ttl_minutes=lifetime,
            )
        )
    return records, deletes, lines


def rewrite(
    item: StoredItem, vectors: Any, now: datetime, created_at: datetime | None = None
) -> Record:
    """The stored item written again (keeping its TTL, refreshed from ``now``).

    ``created_at``: written as given (a fact or version whose times moved), else kept.
    """
    text = str(item.value["content"])
    return Record(
        item.namespace,
        item.key,
        item.value,
        (text,),
        ("content",),
        vectors,
        now,
        created_at=created_at,
        ttl_minutes=item.ttl_minutes,
    )


def rewritten(
    item: StoredItem, value: dict[str, Any], now: datetime, created: datetime | None = None
) -> StoredItem:
    """The stored item as :func:`rewrite` leaves it: new value, written now, TTL refreshed.

    A 0.1.0 fact loses its inline ``history`` (``layout.upgraded_value``): the write that
    rewrites it writes those texts out (:func:`written_out` of ``item``).
    """
    return dataclasses.replace(
        item,
        value=layout.upgraded_value(item, value),
        created_at=created or item.created_at,
        updated_at=now,
        expires_at=expiry(now, item.ttl_minutes),
    )


def with_ttl(
    version: StoredItem, ttl: float | None, now: datetime, expires_at: datetime | None = None
) -> Record:
    """A stored version written again with the fact's TTL (its vector comes from the cache).

    ``ttl`` ``None``: it lasts; ``expires_at``: it keeps that expiry (see ``Record``).
    """
    again = rewrite(version, None, now, version.created_at)
    return dataclasses.replace(again, ttl_minutes=ttl, expires_at=expires_at)


def written_out(
    item: StoredItem, ttl: float | None, now: datetime, stored: Sequence[StoredItem] = ()
) -> list[Record]:
    """A 0.1.0 fact's inline texts as version records, dated as they read before the write.

    For a write that rewrites the fact (:func:`rewritten`), in the same write: inline, the
    texts would end where the fact was last written, now moved to this write. ``ttl``: the
    fact's after the write (versions never outlive it); ``stored``: its version items
    (``layout.legacy_versions``). None for any other fact.
    """
    return [with_ttl(v, ttl, now) for v in layout.legacy_versions(item, stored)]


def fact_rewrite(
    before: StoredItem,
    after: StoredItem,
    now: datetime,
    versions: Sequence[StoredItem] = (),
    vectors: Any = None,
) -> list[Record]:
    """Every record of a fact written again as ``after`` (:func:`rewritten` of ``before``).

    The one place a rewrite of a fact is built (``remember``'s pins, TTL changes and
    backdates, ``pin``, the 0.1.0 upgrade): the fact itself (``vectors``: its text's, else
    the cached one), ``before``'s 0.1.0 inline texts as versions (:func:`written_out`), and,
    since the rewrite refreshes the fact's TTL, its live stored versions with that TTL, or
    they would expire before it. ``versions``: its version items, expired ones too (they
    number the inline texts; an expired one is not written again).
    """
    records = [rewrite(after, vectors, now, after.created_at)]
    records += written_out(before, after.ttl_minutes, now, versions)
    if after.ttl_minutes is not None:
        live = (v for v in versions if is_alive(v, now))
        records += [with_ttl(v, after.ttl_minutes, now) for v in live]
    return records


def upgraded(item: StoredItem, now: datetime, stored: Sequence[StoredItem] = ()) -> list[Record]:
    """A 0.1.0 fact written again in this layout; nothing for any other fact.

    The fact without its inline ``history`` (:func:`rewritten`, keeping when its text
    began, its ``created_at`` and TTL) and those texts as its versions ``@1``..``@n``
    (``stored``: its version items), dated as they read before (:func:`fact_rewrite`).
    """
    if not layout.legacy_history(item):
        return []
    return fact_rewrite(item, rewritten(item, dict(item.value), now), now, stored)


def embed_versions(ctx: FactContext, records: list[Record]) -> Logic[list[Record]]:
    """Vectors for version records (usually cached: they were embedded when they were new).

    A cache miss costs one more embedding call for the batch.
    """
    texts = [r.texts[0] for r in records if r.vectors is None]
    if not texts:
        return records
    vectors = yield call(ctx.embedder, "embed", texts, False)
    rows = iter(range(len(texts)))
    return [
        r if r.vectors is not None else dataclasses.replace(r, vectors=vectors[next(rows)][None])
        for r in records
    ]


def _lifetime(ttl: float | None, base: StoredItem | None) -> float | None:
    """The TTL a write gives a fact: the one given, else the stored fact's (if any)."""
    return ttl if ttl is not None or base is None else base.ttl_minutes


def fact_after(
    state: FactState,
    line: Timeline,
    histories: Mapping[str, list[StoredItem]],
    user_id: str,
    now: datetime,
    pinned: bool = False,
    ttl: float | None = None,
) -> Fact:
    """The fact as ``state``'s write leaves it (its line placed, its TTL counted from now)."""
    base = state.base
    if base is not None and not line.changed:  # every new text was already recorded
        return layout.fact_from_items(base, user_id, histories.get(state.key, ()))
    lifetime = _lifetime(ttl, base)
    return Fact(
        id=state.key,
        user_id=user_id,
        content=line.current.content,
        created_at=line.created_at,
        updated_at=now,
        history=line.history(),
        valid_from=line.current.valid_from,
        metadata=dict(line.current.metadata),
        pinned=pinned or (base is not None and base.value.get("pinned") is True),
        expires_at=expiry(now, lifetime),
        ttl_minutes=lifetime,
    )
