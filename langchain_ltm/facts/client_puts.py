"""A client's BaseStore ``put`` or ``delete`` of a fact: written as the fact API would.

LangMem's update action, or any client that rewrites an item of a user's namespace by its
key, puts a new ``content`` over a fact. Written as it came, the fact's earlier text was
gone (``update_fact`` keeps it), and a value read, changed and put back carried the old
text's hash, version count and ``valid_from``. Here such a put, under the user's lock (as
every write of facts):

- keeps the replaced text as the fact's newest earlier version (``{fact_id}@{n}``),
  with the replaced text's own expiry, or the put's TTL when it has one (then the fact's
  other versions take it too: versions never outlive their fact), pruned to the store's
  ``history_limit``;
- writes the layout fields a copied value carries (``content_hash``, ``versions``,
  ``valid_from``) for the new text; a ``valid_from`` of the client's own is kept as put
  when it lies within the fact's timeline (:func:`_began`), else the text holds from the
  put;
- writes a 0.1.0 fact's inline earlier texts out as its versions ``@1``..``@n`` with the
  dates they had (``layout.legacy_versions``), and the fact without ``history``: the put's
  value has none (they were lost), or a copy of it (their ends moved to the put);
- is refused when its value has no text ``content`` (``ValueError``): the fact and its
  versions would be left as an item that is no fact, their texts out of every export.

Every put into a user's namespace whose value is in the fact layout
(``versions.holds_hash``: a ``content_hash``, an integer ``versions`` count and no
``version_of``: a fact's value, read and put back, under its key or another)
gets its hash computed again from its text ``content``, or loses it when ``content`` is
not a text: a copied hash named a text the
item does not hold, so the fact API took the item for the holder of that text (a restore
of it was a "conflict"; on Postgres, whose constraint keeps one fact per text, every later
``remember`` of it failed). One current fact of a user has a text's hash: a put of a text
another item of the user holds with its hash is written without one, as LangMem's puts
are (so it is stored on every engine, Postgres' constraint included; the fact API still
reads it as a fact, and ``remember`` of its text is a duplicate). Such puts are written
under the user's lock, where that is checked.

A ``delete`` of a fact deletes its versions, found under the lock too. A batch reads the
items its puts and deletes in user namespaces touch (one ``get``); puts of new keys
that are not in the fact layout and writes outside user namespaces go in one write, with
no lock, and each user with a fact touched or a hash to write is written on its own, under
that user's lock, after reading again. A put at a key read as holding nothing is written
create-only (``Record.create_only``), locked or not: two clients putting at one new key at
once (LangMem's ``{"content": ...}``) made the later write replace the fact the other had
just made, its text in no version. The engine refuses such a write whole when the key was
taken meanwhile (``KeyTakenError``); the puts of those keys' users are then written under
the lock after reading again, as if put after the other client's (its text kept as a
version, a put without a text refused), and a locked write reads and writes again.

A put of a new fact (a text ``content`` at a key holding none) is written as given, but
for a ``valid_from`` out of the bounds a put over a fact has: later than now plus the
clock skew, or in the store's format but no time; it holds from the put
(:func:`_new_fact_in_bounds`).

The secret guard is not run here: a ``put`` stores what the client gives, as any
``BaseStore`` does (refusing would break drop-in clients, a deepagents file holding a
password). SECURITY.md says so, and how to guard LangMem's tools.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from langchain_ltm._filters import STORED_TIME
from langchain_ltm._steps import Logic, call
from langchain_ltm.backends.base import ItemKey, Record, SearchRequest, StoredItem, is_alive
from langchain_ltm.errors import DuplicateFactError, KeyTakenError
from langchain_ltm.facts import versions as layout
from langchain_ltm.facts.context import FactContext
from langchain_ltm.facts.import_records import CLOCK_SKEW
from langchain_ltm.facts.reads import versions_by_fact
from langchain_ltm.facts.records import embed_versions, with_ttl
from langchain_ltm.facts.text import content_hash
from langchain_ltm.facts.writes import with_hashes

__all__ = ["holds_nothing", "unique_hashes", "write_puts"]


def keys_to_read(ctx: FactContext, puts: Iterable[tuple[ItemKey, Any]]) -> list[ItemKey]:
    """The keys :func:`write_puts` reads first, with the batch's gets.

    The batch's puts (``value``: a dict) and deletes (``value`` None) in user namespaces,
    but no put of a version item.
    """
    out = []
    for (namespace, key), put in puts:
        value = getattr(put, "value", put)
        if not ctx.is_user_namespace(namespace):
            continue
        if value is not None and layout.is_version_value(key, value):
            continue
        out.append((namespace, key))
    return out


def write_puts(
    ctx: FactContext,
    upserts: list[Record],
    deletes: list[ItemKey],
    now: datetime,
    found: dict[ItemKey, StoredItem | None] | None = None,
) -> Logic[None]:
    """Write a batch's puts and deletes; those touching a user's fact as described above.

    ``found``: the items at :func:`keys_to_read`'s keys, read with the batch's gets (else
    read here).

    Raises:
        ValueError: A put over a fact has no text ``content`` (nothing of the batch written).
    """
    # whole values of a fact (their hash names their own text), before the hash is redone
    whole = {(r.namespace, r.key) for r in upserts if _whole_fact_value(r.value)}
    upserts = [
        _with_own_hash(r) if ctx.is_user_namespace(r.namespace) and not layout.is_version(r) else r
        for r in upserts
    ]
    puts = [r for r in upserts if ctx.is_user_namespace(r.namespace) and not layout.is_version(r)]
    gone = [key for key in deletes if ctx.is_user_namespace(key[0])]
    keys = [*_keys(puts), *gone]
    if found is None:
        found = dict(zip(keys, (yield call(ctx.backend, "get", keys)), strict=True)) if keys else {}
    for record in puts:
        _check_put(found[(record.namespace, record.key)], record, now)
    bounded = {
        id(r): _new_fact_in_bounds(r, now)
        for r in puts
        if not _is_fact(found[(r.namespace, r.key)], now)
    }
    upserts = [bounded.get(id(r), r) for r in upserts]
    puts = [bounded.get(id(r), r) for r in puts]
    users = sorted(
        {
            r.namespace[-1]
            for r in puts
            if layout.holds_hash(r.value) or _is_fact(found[(r.namespace, r.key)], now)
        }
        | {namespace[-1] for namespace, _ in gone}
    )
    # a put at a key read as holding nothing is written only if the key still holds
    # nothing (create-only): another client may make a fact there before the write lands
    # (the store's batch builds its records so: marked here, a batch of 1,000 new puts
    # took 5 ms more of the client's CPU, the copies)
    fresh = {id(r) for r in puts if holds_nothing(found[(r.namespace, r.key)], now)}
    loose = [key for key in deletes if key not in gone]
    while True:
        locked = {id(r) for r in puts if r.namespace[-1] in users}
        rest = [_marked(r, id(r) in fresh) for r in upserts if id(r) not in locked]
        if not rest and not loose:
            break
        try:
            yield from _write_unlocked(ctx, rest, loose, deletes)
            break
        except KeyTakenError as exc:  # nothing written: their users' puts go under the lock
            more = sorted({*users, *(namespace[-1] for namespace, _ in exc.keys)})
            if more == users:  # no key of a put left unlocked: an engine's error, not a race
                raise
            users = more
    for label in users:
        mine = [r for r in puts if r.namespace[-1] == label]
        theirs = [key for key in gone if key[0][-1] == label]
        held = yield from ctx.locks.acquire(ctx.backend, label)
        try:
            for attempt in range(1, _TAKEN_RETRIES + 1):
                records, removed = yield from _user_write(ctx, mine, theirs, now, whole)
                try:
                    yield from _write(ctx, records, removed)
                    break
                except KeyTakenError:  # an unlocked put made the key meanwhile: read again
                    if attempt == _TAKEN_RETRIES:
                        raise
        finally:
            yield from ctx.locks.release(ctx.backend, held)


_TAKEN_RETRIES = 3
"""Reads and writes of one user's puts under the lock before a key taken each time is raised."""


def holds_nothing(item: StoredItem | None, now: datetime) -> bool:
    """Whether a key read as ``item`` holds nothing: no item, or an expired one.

    A put there is written create-only (``Record.create_only``): only while it still does.
    """
    return item is None or not is_alive(item, now)


def _marked(record: Record, create_only: bool) -> Record:
    """``record`` written create-only or not (the same record when it already is)."""
    if record.create_only == create_only:
        return record
    return dataclasses.replace(record, create_only=create_only)


def _write_unlocked(
    ctx: FactContext, upserts: list[Record], deletes: list[ItemKey], every_delete: list[ItemKey]
) -> Logic[None]:
    """Write the puts and deletes no user's lock covers: new keys, copies outside the users'.

    A put at a key read as holding nothing comes marked create-only (the engine raises
    ``KeyTakenError`` and writes nothing if another writer made the key meanwhile). A copy
    outside user namespaces is written as given, but for a hash Postgres lets one item of
    a namespace hold (:func:`unique_hashes`; ``every_delete``: the batch's deletes). The
    look for another holder takes no lock: a copy another writer stores between it and the write
    makes the constraint refuse the write (two copies of a fact's value put in a backup at
    once raised ``DuplicateFactError``), so the look and the write run again, once, as
    ``remember`` retries; the second time the look sees the other copy.
    """
    for attempt in (1, 2):
        outside = [r for r in upserts if not ctx.is_user_namespace(r.namespace)]
        written = (yield from unique_hashes(ctx, outside, every_delete)) if outside else []
        swap = dict(zip(map(id, outside), written, strict=True))
        try:
            yield from _write(ctx, [swap.get(id(r), r) for r in upserts], deletes)
            return
        except DuplicateFactError:
            if attempt == 2 or not any(layout.holds_hash(r.value) for r in outside):
                raise


def _write(ctx: FactContext, upserts: list[Record], deletes: list[ItemKey]) -> Logic[None]:
    """Write puts; a fact-hash conflict (Postgres) raised in a put's words, not remember's."""
    try:
        yield call(ctx.backend, "write", upserts, deletes)
    except DuplicateFactError as exc:
        error = DuplicateFactError(
            f"The store keeps one item in the fact layout per text and namespace{exc.where}, "
            "so this batch of puts was not written: another writer stored an item holding "
            "that text's hash there at the same moment. Put it again: a put of a text "
            "another item of the namespace holds is stored without its content_hash."
        )
        error.detail, error.where = exc.detail, exc.where
        raise error from exc
    return None


def _user_write(
    ctx: FactContext,
    puts: list[Record],
    deletes: list[ItemKey],
    now: datetime,
    whole: set[ItemKey],
) -> Logic[tuple[list[Record], list[ItemKey]]]:
    """One user's puts and deletes, read again under the lock: the records and keys to write.

    ``whole``: the puts whose value is a whole fact's value as read (:func:`_whole_fact_value`).
    """
    namespace = puts[0].namespace if puts else deletes[0][0]
    items = yield call(ctx.backend, "get", [*_keys(puts), *deletes])
    current = dict(zip([r.key for r in puts], items[: len(puts)], strict=True))
    for record in puts:
        _check_put(current[record.key], record, now)
    replaced = [r for r in puts if _is_fact(current[r.key], now)]
    owners = [r.key for r in replaced] + [key for _, key in deletes]
    stored = yield from versions_by_fact(ctx, namespace, owners)
    removed = [*deletes, *((namespace, v.key) for _, key in deletes for v in stored.get(key, ()))]
    facts = {id(r) for r in replaced}
    records = [r for r in puts if id(r) not in facts]
    kept: list[Record] = []
    for record in replaced:
        item = current[record.key]
        assert item is not None
        # a 0.1.0 fact's inline texts: written out as versions @1..@n, dated as they read
        # (the put's value has no `history`: they were gone, or their ends moved to it)
        inline = layout.legacy_versions(item, stored.get(record.key, []))
        versions = [*inline, *stored.get(record.key, [])]
        new_text = content_hash(item.value["content"]) != content_hash(record.value["content"])
        number = max([layout.version_count(item), *(int(v.value["version"]) for v in versions)])
        # the new text starts now, or where the old one started if a clock ran ahead
        # (a restored fact, another writer): never a version that ends before it begins
        switch = max(now, layout.valid_from(item))
        # ... unless the value says when it began (a valid_from of the client's own, within
        # bounds): then the replaced text ends there
        copied = new_text and (record.namespace, record.key) in whole
        began, as_put = _began(item, record.value, new_text, switch, versions, now, copied)
        added = [_replaced_version(item, record, number + 1, now, began)] if new_text else []
        lasting = [v for v in versions if is_alive(v, now)]
        if record.ttl_minutes is not None:  # versions never outlive their fact
            added += [with_ttl(v, record.ttl_minutes, now) for v in lasting]
        else:  # inline texts keep the fact's expiry, as the replaced text does
            added += [with_ttl(v, v.ttl_minutes, now, v.expires_at) for v in inline]
        doomed = _pruned(ctx, [*lasting, *added[:1]] if new_text else lasting)
        kept += [k for k in added if (k.namespace, k.key) not in doomed]
        unstored = {(namespace, layout.version_key(item.key, number + 1))}
        removed += sorted(doomed - unstored - {(v.namespace, v.key) for v in inline})
        # the same text holds since it did: upgraded_value writes down when it began, as
        # for every rewrite (without it the fact would seem to start now, and an as_of
        # before the put would find nothing)
        record = dataclasses.replace(record, value=layout.upgraded_value(item, record.value))
        records.append(_as_fact(record, number + new_text, None if as_put else began))
    # a key holding nothing is written only while it does: a put taking no lock (another
    # client's put of a new key) may land between this read and the write
    records = [_marked(r, holds_nothing(current[r.key], now)) for r in records]
    records = yield from _one_hash_per_text(ctx, namespace, records, deletes)
    if kept:
        kept = yield from embed_versions(ctx, kept)
    return [*records, *kept], removed


def _with_own_hash(record: Record) -> Record:
    """The put with the ``content_hash`` of its own text, or none when its content is no text.

    Only a value in the fact layout (``layout.holds_hash``): any other put is written as given
    (LangMem's ``{"content": ...}``, a client's document with a hash field of its own).
    """
    value = record.value
    if not layout.holds_hash(value):
        return record
    text = value.get("content")
    if isinstance(text, str):
        digest = content_hash(text)
        if value["content_hash"] == digest:
            return record
        return dataclasses.replace(record, value={**value, "content_hash": digest})
    return _without_hash(record)


def _without_hash(record: Record) -> Record:
    """The put without a ``content_hash``: a fact to the fact API, as LangMem's puts are."""
    value = {k: v for k, v in record.value.items() if k != "content_hash"}
    return dataclasses.replace(record, value=value)


def unique_hashes(
    ctx: FactContext, records: list[Record], deletes: Sequence[ItemKey]
) -> Logic[list[Record]]:
    """``records``, on Postgres each without the hash of a text another item of its namespace holds.

    Postgres keeps one item in the fact layout per text hash and namespace (its constraint
    cannot tell a user's namespace from any other): a second copy of a fact's value under
    another key outside the users' namespaces (a snapshot, a backup) was refused with
    ``DuplicateFactError``, and ``ltm migrate`` of a store holding two failed. The copy is
    stored without the hash, as in a user's namespace. Other engines store it as given.
    """
    if not ctx.backend.capabilities.extra.get("unique_fact_hash"):
        return records
    spaces = dict.fromkeys(r.namespace for r in records if layout.holds_hash(r.value))
    out = {id(r): r for r in records}
    for namespace in spaces:
        mine = [r for r in records if r.namespace == namespace]
        gone = [key for key in deletes if key[0] == namespace]
        kept = yield from _one_hash_per_text(ctx, namespace, mine, gone)
        out.update(zip(map(id, mine), kept, strict=True))
    return [out[id(r)] for r in records]


def _one_hash_per_text(
    ctx: FactContext, namespace: tuple[str, ...], puts: list[Record], deletes: list[ItemKey]
) -> Logic[list[Record]]:
    """The puts of one namespace, without the hash of a text another item there holds.

    Another item: one the batch neither puts nor deletes (its hash is read under the lock,
    an expired one's too, which Postgres' constraint still sees), or an earlier put of the
    batch. Two facts may swap texts in one batch.
    """
    hashes = list(
        dict.fromkeys(str(r.value["content_hash"]) for r in puts if layout.holds_hash(r.value))
    )
    if not hashes:
        return puts
    (hits,) = yield call(
        ctx.backend, "search", SearchRequest(namespace, None, with_hashes(hashes), None, 0)
    )
    written = {r.key for r in puts} | {key for _, key in deletes}
    held = {
        str(h.item.value.get("content_hash"))
        for h in hits
        if h.item.namespace == namespace
        and h.item.key not in written
        and layout.holds_hash(h.item.value)
    }
    out = []
    for record in puts:
        digest = record.value.get("content_hash") if layout.holds_hash(record.value) else None
        if digest in held:  # stored as LangMem's puts are: a fact, with no hash of ours
            record = _without_hash(record)
        elif digest is not None:
            held.add(str(digest))
        out.append(record)
    return out


def _is_fact(item: StoredItem | None, now: datetime) -> bool:
    """A live fact: a text ``content``, not an earlier version (``layout.is_fact``)."""
    return item is not None and is_alive(item, now) and layout.is_fact(item)


def _check_put(item: StoredItem | None, record: Record, now: datetime) -> None:
    if _is_fact(item, now) and not isinstance(record.value.get("content"), str):
        raise ValueError(
            f"{record.key!r} in {record.namespace!r} is one of the user's facts: put a value "
            "with a text 'content' (the text it replaces is kept as a version), or delete it "
            "first (its versions go with it). Nothing of the batch was written."
        )


def _replaced_version(
    item: StoredItem, record: Record, number: int, now: datetime, ended: datetime
) -> Record:
    """The text ``record`` replaces, as version ``number`` valid until ``ended``.

    It keeps its own expiry, or takes the put's TTL.
    """
    text = str(item.value["content"])
    own = record.ttl_minutes is None
    return Record(
        namespace=item.namespace,
        key=layout.version_key(item.key, number),
        value=layout.version_value(
            item.key, number, text, layout.valid_from(item), ended, layout.metadata_of(item.value)
        ),
        texts=(text,),
        paths=("content",),
        vectors=None,
        now=now,
        ttl_minutes=item.ttl_minutes if own else record.ttl_minutes,
        expires_at=item.expires_at if own else None,
    )


def _pruned(ctx: FactContext, versions: Sequence[Any]) -> set[ItemKey]:
    """The oldest versions past the store's ``history_limit`` (``None``: none)."""
    limit = ctx.history_limit
    if limit is None or len(versions) <= limit:
        return set()
    ordered = sorted(versions, key=lambda v: int(v.value["version"]))
    return {(v.namespace, v.key) for v in ordered[: len(ordered) - limit]}


def _whole_fact_value(value: Mapping[str, Any]) -> bool:
    """Whether a put's value is a whole fact's value as read: its hash names its own text.

    Another fact's value copied over a fact (or a snapshot put back): its ``valid_from`` is
    when that text began there, not the client's word on this one. A value read, given a
    new text and put back still carries the replaced text's hash.
    """
    text = value.get("content")
    return (
        layout.holds_hash(value)
        and isinstance(text, str)
        and value["content_hash"] == content_hash(text)
    )


def _began(
    item: StoredItem,
    value: Mapping[str, Any],
    new_text: bool,
    switch: datetime,
    versions: Sequence[StoredItem],
    now: datetime,
    copied: bool,
) -> tuple[datetime, bool]:
    """When the text put over ``item`` began, and whether ``value``'s ``valid_from`` says it as put.

    The client's own ``valid_from`` (not the stored one carried over by a read-modify-write,
    nor a copied fact's, ``copied``) is kept as given when it is a time within bounds: not
    later than ``now`` plus :data:`CLOCK_SKEW`, and not earlier than the replaced text's
    start (a new text) or the end of the fact's latest earlier version (the same text). A
    ``valid_from`` of 2099 made ``recall(as_of=now)`` miss the fact and its history show a
    gap; one before the replaced text's start put the versions out of order. Otherwise the
    new text began at ``switch`` (when it took over), and the same text when it did.
    """
    default = switch if new_text else layout.valid_from(item)
    given = value.get("valid_from")
    if "valid_from" not in value or given == item.value.get("valid_from") or copied:
        return default, not new_text
    moment = _client_time(given, now)
    if moment is None:
        return default, False
    if new_text:
        lower: datetime | None = layout.valid_from(item)
    else:
        ends = [layout.to_version(v).valid_to for v in versions]
        lower = max((end for end in ends if end is not None), default=None)
    if not _ahead(moment, now) and (lower is None or moment >= lower):
        return moment, True
    return default, False


def _client_time(given: object, now: datetime) -> datetime | None:
    """A client's ``valid_from`` as a time, or ``None`` when it is not one the store reads.

    ``None`` for a value that is no string, no time, or a time no timezone can hold
    (year 1 shifted before UTC's first day).
    """
    if not isinstance(given, str):
        return None
    try:
        moment = layout.parse_time(given, now)
        moment.astimezone(timezone.utc)
    except (ValueError, OverflowError):
        return None
    return moment


def _ahead(moment: datetime, now: datetime) -> bool:
    """Whether ``moment`` is beyond ``now`` plus :data:`CLOCK_SKEW` (a clock running ahead)."""
    return moment > now + CLOCK_SKEW


def _new_fact_in_bounds(record: Record, now: datetime) -> Record:
    """A put of a new fact, its ``valid_from`` the put time when it is out of bounds.

    Out of bounds as over a fact (:func:`_began`): later than ``now`` plus
    :data:`CLOCK_SKEW`, or in the store's format but no time ("2099-02-30T00:00:00.000000Z").
    Reads took such a fact as begun at its write, but the engine's ``as_of`` filter compared
    the text and dropped it from ``recall(as_of=now)``; a 2099 one was missed until 2099.
    Any other ``valid_from`` ("yesterday", a number) is kept: reads take it as the write.
    """
    given = record.value.get("valid_from")
    if not isinstance(record.value.get("content"), str) or not isinstance(given, str):
        return record
    moment = _client_time(given, now)
    if moment is None:  # not a time ("yesterday"), kept; or a date no calendar has
        if not STORED_TIME.fullmatch(given):
            return record
    elif not _ahead(moment, now):
        return record
    value = {**record.value, "valid_from": layout.format_time(now)}
    return dataclasses.replace(record, value=value)


def _as_fact(record: Record, number: int, valid_from: datetime | None) -> Record:
    """The put as written: the layout fields a copied fact's value carries, set for its text.

    Only a value in the fact layout (:func:`~langchain_ltm.facts.versions.holds_hash`) gets
    the hash of its text, and only a count of versions is set to ``number``: a client's own
    ``content_hash`` or ``versions`` field (a list of revisions) is kept as given.
    ``valid_from``: when a new text took over, set even where the value had none (``None``:
    the value's own is kept, which ``layout.upgraded_value`` fills in from the stored fact
    for the same text).
    """
    value: dict[str, Any] = dict(record.value)
    if layout.holds_hash(value):
        value["content_hash"] = content_hash(value["content"])
    count = value.get("versions")  # a count (a copied one, or upgraded_value's): set
    if isinstance(count, int) and not isinstance(count, bool):
        value["versions"] = number
    if valid_from is not None:
        value["valid_from"] = layout.format_time(valid_from)
    return dataclasses.replace(record, value=value) if value != record.value else record


def _keys(records: Sequence[Record]) -> list[ItemKey]:
    return [(r.namespace, r.key) for r in records]
