"""Import: restore exported facts exactly, or re-decide texts through ``remember`` (merge).

``import_user`` is the logic of ``LongTermMemoryStore.import_user`` / ``FactStore.import_user``:
records are checked first (a bad one raises before anything is written), records whose
``expires_at`` has passed are left out, then exported facts are restored with their ids,
timestamps, versions (each with its metadata) and expiry, and the rest are merged. Restored
over the user's live fact of the same id, an item holding the same text keeps the later
expiry of the two (a read since the export pushed it without moving ``updated_at``).

How a record is read and checked (a restore refuses times in the future, beyond a few
minutes of clock skew; a merge counts them as now) is :mod:`langchain_ltm.facts.import_records`.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from langchain_ltm import _clock
from langchain_ltm._filters import Condition
from langchain_ltm._labels import encode_label
from langchain_ltm._steps import Logic, call
from langchain_ltm.backends.base import (
    Hit,
    ItemKey,
    Record,
    SearchRequest,
    StoredItem,
    is_alive,
)
from langchain_ltm.errors import InvalidFactError
from langchain_ltm.facts import versions as layout
from langchain_ltm.facts.context import FactContext
from langchain_ltm.facts.import_records import (
    ImportMode,
    RefusedText,
    as_record_list,
    parse_record,
)
from langchain_ltm.facts.model import Fact, RememberResult
from langchain_ltm.facts.reads import list_all
from langchain_ltm.facts.text import content_hash
from langchain_ltm.facts.timeline import holds
from langchain_ltm.facts.updates import pin
from langchain_ltm.facts.writes import remember_each, with_hashes

__all__ = ["ConflictReason", "ImportMode", "ImportResult", "import_user"]

ConflictReason = Literal["same_text", "earlier_record", "other_texts", "newer"]
"""Why a restore left a record alone (``ImportResult.conflict_reasons``)."""


@dataclass(frozen=True)
class ImportResult:
    """What ``import_user`` did.

    Attributes:
        mode: ``restore`` (records written back as they were) or ``merge`` (each text
            re-decided by ``remember``).
        restored: Facts written back (restore).
        conflicts: Ids of records not restored, nothing changed for them: another fact of
            the user already has the same text (or an earlier record of the restore
            brings it), or the user's fact with that id holds a
            text the record does not carry, or was written after the record's
            ``updated_at`` (a newer state than the export's: restoring would hide a text,
            or give back an expiry, pin or metadata the user has since changed).
            ``mode="merge"`` folds such records into the stored facts.
        results: One ``RememberResult`` per text re-decided (merge), oldest version first.
        dry_run: Nothing was written.
        expired: Ids of records left out because their ``expires_at`` had passed (a fact
            remembered with a TTL is not brought back by importing an old export).
        sources: One ``(record, text)`` per entry of ``results`` (merge): the index in
            ``records`` of the record the text came from, and the text. An earlier text
            whose own ``expires_at`` had passed is left out, so a record may bring fewer
            results than it has texts.
        refused: ``(id, why)`` of each exported record left out because a text of it
            (current, or an earlier one not expired) is one this store does not take:
            longer than its ``max_fact_chars``, a NUL, no content (an item another
            client put, such as LangMem's ``{"content": ...}``, or an export of a store
            with a higher limit). The other records are imported.
        conflict_texts: ``(id, texts)`` of each record in ``conflicts`` bringing texts
            (its current one or earlier ones, oldest first) that the user holds nowhere,
            as a fact, a version or another client's item: say another fact took the
            record's current text, its earlier texts are then in the records only. Nothing
            is written for them; import those records with ``mode="merge"`` to fold the
            texts into the stored facts (as earlier versions when they were said before).
        conflict_reasons: ``(id, why)`` of each record in ``conflicts``, in its order:
            ``same_text`` (another fact, or another client's item, of the user has its
            text), ``earlier_record`` (an earlier record of this call brings its text and
            is restored), ``other_texts`` (the user's fact with this id holds a text the
            record lacks, such as a text it was updated to since the export) or ``newer``
            (that fact was written after the record's ``updated_at``). The first that
            applies, in that order.

    Example:
        >>> ImportResult("merge").counts()
        {}
    """

    mode: ImportMode
    restored: int = 0
    conflicts: tuple[str, ...] = ()
    results: tuple[RememberResult, ...] = ()
    dry_run: bool = False
    expired: tuple[str, ...] = ()
    sources: tuple[tuple[int, str], ...] = ()
    refused: tuple[tuple[str, str], ...] = ()
    conflict_texts: tuple[tuple[str, tuple[str, ...]], ...] = ()
    conflict_reasons: tuple[tuple[str, ConflictReason], ...] = ()

    def counts(self) -> dict[str, int]:
        """How many texts got each action (merge)."""
        out: dict[str, int] = {}
        for result in self.results:
            out[result.action] = out.get(result.action, 0) + 1
        return out


def import_user(
    ctx: FactContext,
    user_id: str,
    records: Sequence[Mapping[str, Any] | str],
    mode: ImportMode,
    dry_run: bool = False,
    *,
    as_stored: bool = False,
    names: Sequence[str] | None = None,
) -> Logic[ImportResult]:
    """The logic of ``LongTermMemoryStore.import_user``.

    Restore writes back records that carry an ``id``; records without one (plain texts)
    cannot be placed exactly, so they are merged, as in ``mode="merge"``.

    ``as_stored``: the records are another store's facts as it holds them (``ltm
    migrate``), copied without this store's input policy: its ``max_fact_chars``, its
    secret guard and the refusal of future times (a fact written by a clock running
    ahead) apply to what users say, not to a copy. ``names``: what an error calls each
    record (default ``record 1``, ``record 2``, ...).
    """
    if mode not in ("restore", "merge"):
        raise ValueError(f'mode must be "restore" or "merge", got {mode!r}.')
    records = as_record_list(records)
    if names is None:
        names = [f"record {line}" for line in range(1, len(records) + 1)]
    parsed: list[tuple[Fact, bool, bool]] = []
    places: list[int] = []  # each parsed record's place in records
    refused: list[tuple[str, str]] = []
    for n, (name, record) in enumerate(zip(names, records, strict=True)):
        try:
            parsed.append(parse_record(ctx, record, name, user_id, mode == "restore", as_stored))
            places.append(n)
        except RefusedText as exc:  # an exported text this store does not take: that record
            if as_stored:  # a copy (ltm migrate) is whole or fails, naming what it cannot take
                raise
            refused.append((str(record["id"]), str(exc)))
    now = _clock.utcnow()
    gone = [f.expires_at is not None and f.expires_at <= now for f, _, _ in parsed]
    expired = tuple(f.id for (f, _, _), out in zip(parsed, gone, strict=True) if out)
    live = [(n, record) for n, record, out in zip(places, parsed, gone, strict=True) if not out]
    if (
        mode == "restore"
        and any(f.expires_at for _, (f, _, _) in live)
        and not ctx.backend.capabilities.ttl
    ):
        raise InvalidFactError(
            f"The records carry expires_at, and the {ctx.backend.capabilities.name} engine "
            "does not support TTL; import them into an engine that does (or remove the field)."
        )
    if mode == "restore":
        _one_record_per_id(parsed, places)
    exact = [fact for _, (fact, has_id, _) in live if has_id and mode == "restore"]
    loose = [
        (n, fact, dated) for n, (fact, has_id, dated) in live if not (has_id and mode == "restore")
    ]
    result = ImportResult(mode, dry_run=dry_run)
    if exact:
        result = yield from _restore(ctx, user_id, exact, dry_run)
    if loose:
        merged = yield from _merge(ctx, user_id, [(f, d) for _, f, d in loose], dry_run)
        sources = tuple((n, v.content) for n, fact, _ in loose for v in fact.versions)
        result = dataclasses.replace(result, results=tuple(merged), sources=sources)
    return dataclasses.replace(result, expired=expired, refused=tuple(refused))


def _merge(
    ctx: FactContext, user_id: str, facts: list[tuple[Fact, bool]], dry_run: bool
) -> Logic[list[RememberResult]]:
    """Re-decide every text, in the order the texts were said, in one ``remember`` batch.

    A dated text the user already has, current or earlier, said at a moment it held is a
    duplicate: re-importing an export never brings a replaced text back. An undated text
    is said now, as in ``remember``: the current text again is a duplicate, a replaced one
    leads again (the last word wins). Either way a text is decided alike whether an
    earlier call or an earlier record of this one holds it, so an import split into calls
    (``ltm import --batch-size``) ends as one call does.
    Each text keeps its metadata and, when the record says when (``valid_from``/
    ``created_at``; a time in the future counts as now), is remembered as said then
    (``observed_at``). TTLs are not carried (the texts are remembered anew, and may become
    versions of facts that have their own); records already expired were left out before.
    """
    now = _clock.utcnow()
    said = [
        (v, min(v.valid_from, now) if dated else None)
        for fact, dated in facts
        for v in fact.versions
    ]
    known: dict[str, Fact] = {}
    if any(at is not None for _, at in said):  # only a dated text can be held already
        stored: list[Fact] = yield from list_all(ctx, user_id, refresh_ttl=False)
        # a text the user holds for good is a duplicate; one held only with an expiry goes
        # through remember, which makes it last (as any text said again without a TTL)
        known = {
            content_hash(v.content): f
            for f in stored
            for v, expires in [
                *((h, h.expires_at) for h in f.history),
                (f.versions[-1], f.expires_at),
            ]
            if expires is None
        }
    # ... at a moment it held then; said at another, remember places it (Paris, Berlin,
    # Paris again leads; said while another text held, it is an earlier version there)
    fresh = [(v, at) for v, at in said if not _held_already(known, v.content, at)]
    # in the order they were said (undated ones last, as said now): a text met again at
    # an earlier date than its first line is then decided at that date, not after it
    order = sorted(range(len(fresh)), key=lambda i: (fresh[i][1] is None, fresh[i][1] or now))
    decided: list[RememberResult] = []
    if fresh:
        out = yield from remember_each(
            ctx,
            user_id,
            [fresh[i][0].content for i in order],
            [fresh[i][0].metadata for i in order],
            [fresh[i][1] for i in order],
            dry_run,
        )
        assert isinstance(out, list)
        decided = [result for _, result in sorted(zip(order, out, strict=True))]
    answers = iter(decided)
    results = [
        RememberResult("duplicate", known[content_hash(v.content)], similarity=1.0)
        if _held_already(known, v.content, at)
        else next(answers)
        for v, at in said
    ]
    if dry_run:
        return results
    # a pinned record pins the fact its current text (its last version) became
    ends = itertools.accumulate(len(fact.versions) for fact, _ in facts)
    current = [results[end - 1] for end in ends]
    wanted = [
        r.fact.id for (fact, _), r in zip(facts, current, strict=True) if fact.pinned and r.fact
    ]
    pinned = set((yield from pin(ctx, user_id, wanted)))
    return [
        dataclasses.replace(r, fact=dataclasses.replace(r.fact, pinned=True))
        if r.fact is not None and r.fact.id in pinned
        else r
        for r in results
    ]


def _held_already(known: Mapping[str, Fact], text: str, said_at: datetime | None) -> bool:
    """Whether a merged text is one the user holds already, as said then (a duplicate).

    A dated text is when it held then on the holding fact's timeline (the timeline's rule,
    :func:`~langchain_ltm.facts.timeline.holds`). Said after the fact's current text began,
    ``remember`` makes it lead (Paris, Berlin, Paris again); said while another text held,
    or just before it began, ``remember`` places it on the timeline (an earlier version, or
    the text's start moved back). An undated one is said now, after it: ``remember``
    decides it (the current text again is its duplicate there). Either way an earlier call
    holding it decides nothing an earlier record of the same call would not.
    """
    fact = known.get(content_hash(text))
    if fact is None or said_at is None:
        return False
    # the current text said again goes to remember, which this call's records may change
    return holds(fact.history, text, said_at) or (
        content_hash(fact.content) == content_hash(text) and said_at == fact.valid_from
    )


def _restore(
    ctx: FactContext, user_id: str, facts: list[Fact], dry_run: bool
) -> Logic[ImportResult]:
    label = encode_label(user_id)
    namespace = (*ctx.namespace, label)
    if not facts:
        return ImportResult("restore", dry_run=dry_run)
    # the first record with a text restores it (an export holds two facts with one text
    # when a client put it twice): the others are conflicts, as for a text already held
    seen: dict[str, str] = {}
    for fact in facts:
        seen.setdefault(content_hash(fact.content), fact.id)
    texts = list(dict.fromkeys(v.content for fact in facts for v in fact.versions))
    vectors = yield call(ctx.embedder, "embed", texts, False)
    row = {text: i for i, text in enumerate(texts)}
    held = yield from ctx.locks.acquire(ctx.backend, label)
    try:
        (same_text,) = yield call(
            ctx.backend, "search", SearchRequest(namespace, None, with_hashes(list(seen)), None, 0)
        )
        now = _clock.utcnow()
        same_text = [h for h in same_text if h.item.namespace == namespace]  # not a child's
        # a fact whose TTL has passed is gone (if not yet swept): it holds no text, and its
        # row goes in this write (Postgres' fact-hash constraint would still see it)
        gone = [h.item for h in same_text if not is_alive(h.item, now)]
        same_text = [h for h in same_text if is_alive(h.item, now)]
        # the text an item holds, not the hash it stores: a value a client copied under
        # another key carried the old text's (earlier releases kept it)
        owner = {
            content_hash(text): h.item.key
            for h in same_text
            if isinstance(text := h.item.value.get("content"), str)
        }
        # an item another client put with a text (LangMem's {"content": ...}) has no hash
        # of ours: it holds its text all the same, and a restore made a second fact of it
        (puts,) = yield call(
            ctx.backend, "search", SearchRequest(namespace, None, _CLIENT_TEXTS, None, 0, now)
        )
        for hit in puts:
            text = hit.item.value.get("content")
            if hit.item.namespace == namespace and isinstance(text, str) and text.strip():
                owner.setdefault(content_hash(text), hit.item.key)
        # each text goes to the fact holding it, else to the first record bringing it
        holder = {**seen, **owner}
        taken = {f.id for f in facts if holder[content_hash(f.content)] != f.id}
        candidates = [f for f in facts if f.id not in taken]
        stored = yield call(ctx.backend, "get", [(namespace, f.id) for f in candidates])
        (old_versions,) = yield call(
            ctx.backend,
            "search",
            SearchRequest(
                namespace,
                None,
                (Condition(("version_of",), "$in", [f.id for f in candidates] or [""]),),
                None,
                0,
            ),
        )
        # a record may replace the stored fact of its id only if it carries every text of
        # it (an older export restored over newer texts would hide them for good)
        old_versions = [
            h for h in old_versions if h.item.namespace == namespace and layout.is_version(h.item)
        ]
        alive = [i if i is not None and is_alive(i, now) else None for i in stored]
        live_versions = [h for h in old_versions if is_alive(h.item, now)]
        held_texts = _stored_texts(candidates, alive, live_versions)
        # ... and only if it is not older than it: a fact written since the export (said
        # again for good, pinned, given new metadata) would get back the record's expiry
        # and lose its pin, and a text the user now keeps for good would expire
        newer = {
            f.id
            for f, item in zip(candidates, alive, strict=True)
            if item is not None and item.updated_at > f.updated_at
        }
        reasons = tuple(
            (f.id, why)
            for f in facts
            if (why := _why_left(f, owner, taken, held_texts, newer)) is not None
        )
        conflicts = tuple(fact_id for fact_id, _ in reasons)
        restored = [f for f in candidates if f.id not in conflicts]
        old_versions = [h for h in old_versions if h.item.value.get("version_of") not in conflicts]
        records: list[Record] = []
        for fact in restored:
            records.extend(_fact_records(namespace, fact, vectors, row))
        live = {(i.namespace, i.key): i for i in alive if i is not None}
        live.update(((h.item.namespace, h.item.key), h.item) for h in live_versions)
        records = _no_earlier_expiry(records, live)
        written = {(r.namespace, r.key) for r in records}
        stale = [
            (h.item.namespace, h.item.key)
            for h in old_versions
            if (h.item.namespace, h.item.key) not in written
        ]
        stale += [(i.namespace, i.key) for i in gone if (i.namespace, i.key) not in written]
        # a record left alone may bring texts the user holds nowhere (one read of every
        # text of the user, only for a batch with conflicts)
        every: list[Hit] = []
        if conflicts:
            (every,) = yield call(
                ctx.backend, "search", SearchRequest(namespace, None, layout.ANY_TEXT, None, 0, now)
            )
        if records and not dry_run:
            yield call(ctx.backend, "write", records, stale)
    finally:
        yield from ctx.locks.release(ctx.backend, held)
    items = [h.item for h in every if h.item.namespace == namespace]  # not a child's
    unheld = _not_held([f for f in facts if f.id in conflicts], items, restored, now)
    return ImportResult(
        "restore",
        restored=len(restored),
        conflicts=conflicts,
        dry_run=dry_run,
        conflict_texts=unheld,
        conflict_reasons=reasons,
    )


def _why_left(
    fact: Fact,
    owner: Mapping[str, str],
    taken: set[str],
    held: Mapping[str, set[str]],
    newer: set[str],
) -> ConflictReason | None:
    """Why a restore leaves ``fact`` alone (a conflict), or None when it restores it."""
    if fact.id in taken:  # its text goes to the fact holding it, else to an earlier record
        return "same_text" if content_hash(fact.content) in owner else "earlier_record"
    if not held[fact.id] <= _record_texts(fact):
        return "other_texts"
    return "newer" if fact.id in newer else None


def _not_held(
    conflicts: Sequence[Fact], items: Sequence[StoredItem], restored: Sequence[Fact], now: datetime
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Per conflict record, its texts (current and earlier) that no text of the user matches.

    A record left alone may bring earlier texts the user holds nowhere (another fact took
    its current text): they are then only in the records, and the result names them.
    Held: a live item's text (a fact, a version, another client's item, a 0.1 fact's
    inline history) or a text restored in the same call.
    """
    held = {content_hash(v.content) for f in restored for v in f.versions}
    for item in items:
        if not is_alive(item, now):
            continue
        text = item.value.get("content")
        if isinstance(text, str):
            held.add(content_hash(text))
        held.update(content_hash(v.content) for v in layout.legacy_history(item))
    out = []
    for fact in conflicts:
        texts = dict.fromkeys(
            v.content for v in fact.versions if content_hash(v.content) not in held
        )
        if texts:
            out.append((fact.id, tuple(texts)))
    return tuple(out)


_CLIENT_TEXTS = (*layout.CURRENT_FACTS, Condition(("content_hash",), "$exists", False))
"""Current items of a user's namespace that another client put (no ``content_hash``)."""


def _one_record_per_id(parsed: Sequence[tuple[Fact, bool, bool]], places: Sequence[int]) -> None:
    """Raise InvalidFactError when two records of a restore carry the same ``id``."""
    first: dict[str, int] = {}
    for line, (fact, has_id, _) in zip((n + 1 for n in places), parsed, strict=True):
        if not has_id:
            continue
        if fact.id in first:
            raise InvalidFactError(
                f"Records {first[fact.id]} and {line} have the same id {fact.id!r}: a restore "
                "would keep only one of their texts. Give one of them another id (or drop "
                'it), or import with mode="merge".'
            )
        first[fact.id] = line


def _record_texts(fact: Fact) -> set[str]:
    """The texts (as content hashes) a record brings: its current text and its versions."""
    return {content_hash(fact.content), *(content_hash(v.content) for v in fact.history)}


def _stored_texts(
    facts: Sequence[Fact], stored: Sequence[Any], versions: Sequence[Any]
) -> dict[str, set[str]]:
    """Per record id, the texts (content hashes) the store holds under that id now."""
    held: dict[str, set[str]] = {f.id: set() for f in facts}
    for fact, item in zip(facts, stored, strict=True):
        if item is None:
            continue
        value = item.value
        texts = [value.get("content"), *(value.get("history") or ())]  # 0.1: inline history
        held[fact.id].update(content_hash(t) for t in texts if isinstance(t, str) and t)
    for hit in versions:
        text, owner = hit.item.value.get("content"), hit.item.value.get("version_of")
        if isinstance(text, str) and text and owner in held:
            held[owner].add(content_hash(text))
    return held


def _fact_records(
    namespace: tuple[str, ...], fact: Fact, vectors: Any, row: Mapping[str, int]
) -> list[Record]:
    """A fact as it was exported: same id, timestamps, versions and other fields."""
    out = []
    # versions expire with their fact, and a read refreshes them with it: the fact's TTL
    # and expiry (an export before ttl_minutes: the TTL counted from updated_at)
    ttl = fact.ttl_minutes
    if ttl is None:
        ttl = _minutes_until(fact.expires_at, fact.updated_at)
    for number, version in enumerate(fact.history, 1):
        end = version.valid_to or fact.valid_from
        i = row[version.content]
        # an expiry of its own (a fact said again for good keeps its earlier texts'), else
        # the fact's (exports made before versions carried theirs)
        expires, lifetime = version.expires_at, version.ttl_minutes
        if expires is None:
            expires, lifetime = fact.expires_at, ttl
        elif lifetime is None:
            lifetime = _minutes_until(expires, fact.updated_at)
        out.append(
            Record(
                namespace=namespace,
                key=layout.version_key(fact.id, number),
                value=layout.version_value(
                    fact.id, number, version.content, version.valid_from, end, version.metadata
                ),
                texts=(version.content,),
                paths=("content",),
                vectors=vectors[i : i + 1],
                now=end if lifetime is None else fact.updated_at,
                created_at=version.valid_from,
                ttl_minutes=lifetime,
                expires_at=expires,
            )
        )
    i = row[fact.content]
    out.append(
        Record(
            namespace=namespace,
            key=fact.id,
            value=layout.fact_value(
                fact.content,
                fact.valid_from,
                len(fact.history),
                fact.metadata,
                fact.pinned,
            ),
            texts=(fact.content,),
            paths=("content",),
            vectors=vectors[i : i + 1],
            now=fact.updated_at,
            created_at=fact.created_at,
            ttl_minutes=ttl,
            expires_at=fact.expires_at,
        )
    )
    return out


def _no_earlier_expiry(
    records: Sequence[Record], live: Mapping[ItemKey, StoredItem]
) -> list[Record]:
    """Each record written over a live item holding its text keeps the later expiry of the two.

    A read pushes the expiry of a fact and its versions without moving ``updated_at``, so a
    restore of an export taken before that read (``import_user`` twice, ``ltm import``, an
    ``ltm migrate`` run again into a target read since) is not a newer state, and it wrote
    the export's earlier expiry back: the texts went before they would have. An item that
    lasts stays lasting. Only the same state counts (the item written when the record was,
    ``updated_at``): a record of a later write (a TTL the user shortened or added since the
    copy was made) is restored as it is. One place for the import and the migration, which
    both restore here.
    """
    out = []
    for record in records:
        item = live.get((record.namespace, record.key))
        ends = record.expires
        if (
            item is None
            or ends is None
            or item.updated_at != record.now
            or not _same_text(item, record)
        ):
            out.append(record)
        elif item.expires_at is None or item.expires_at > ends:
            # the item's own expiry and TTL, as reads left them
            out.append(
                dataclasses.replace(
                    record, ttl_minutes=item.ttl_minutes, expires_at=item.expires_at
                )
            )
        else:
            out.append(record)
    return out


def _same_text(item: StoredItem, record: Record) -> bool:
    text = item.value.get("content")
    return isinstance(text, str) and content_hash(text) == content_hash(record.texts[0])


_LONGEST_TTL = _clock.MAX_TTL_MINUTES - 1
"""The longest TTL ``put`` and ``remember`` take (their limit is exclusive)."""


def _minutes_until(expires_at: datetime | None, since: datetime) -> float | None:
    """The TTL that, written at ``since``, expires at ``expires_at`` (versions: with the fact).

    At most :data:`_LONGEST_TTL`: an old export (no ``ttl_minutes``) of a fact expiring in
    year 9000 is a valid record, but a refresh by a longer step overflowed every read.
    """
    if expires_at is None:
        return None
    return min(max((expires_at - since).total_seconds() / 60, 1e-6), _LONGEST_TTL)
