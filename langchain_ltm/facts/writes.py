"""Writing facts: remember, update, import (sans-I/O logic, see ``langchain_ltm._steps``).

Each function yields backend, embedder and resolver calls and receives their results;
``LongTermMemoryStore`` runs it with its sync or its async shell. Nothing here calls back
into the store. The decide-and-write of one user holds the user's lock
(:class:`~langchain_ltm.facts._locks.UserLocks`) from the first read to the write.

TTL: a fact remembered with ``ttl`` (minutes) expires with every version it has; a new
version of it (``update``, or ``remember`` merging into it) keeps the TTL, refreshed from
the write, unless the ``remember`` call gives its own. Expired facts are gone for every
read here at once, whatever the store's ``omit_expired``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from langchain_ltm import _clock
from langchain_ltm._clock import check_ttl
from langchain_ltm._filters import Condition, Filter
from langchain_ltm._ids import fact_key
from langchain_ltm._labels import encode_label
from langchain_ltm._steps import Logic, Step, call
from langchain_ltm.backends.base import ItemKey, Record, SearchRequest, StoredItem, is_alive
from langchain_ltm.errors import DuplicateFactError, FactNotFoundError, InvalidFactError
from langchain_ltm.facts import versions as layout
from langchain_ltm.facts.context import FactContext
from langchain_ltm.facts.decision import BatchDecision, FactState, decide_batch
from langchain_ltm.facts.model import Fact, FactVersion, RememberResult
from langchain_ltm.facts.reads import check_id, list_all, versions_of
from langchain_ltm.facts.resolution import check_resolutions
from langchain_ltm.facts.text import content_hash, validate_text

__all__ = ["ImportMode", "ImportResult", "import_user", "remember", "update"]

ImportMode = Literal["restore", "merge"]


@dataclass(frozen=True)
class ImportResult:
    """What ``import_user`` did.

    Attributes:
        mode: ``restore`` (records written back as they were) or ``merge`` (each text
            re-decided by ``remember``).
        restored: Facts written back (restore).
        conflicts: Ids of records not restored because another fact of the user already has
            the same text (restore into a store that has it; nothing was changed for them).
        results: One ``RememberResult`` per text re-decided (merge), oldest version first.
        dry_run: Nothing was written.
        expired: Ids of records left out because their ``expires_at`` had passed (a fact
            remembered with a TTL is not brought back by importing an old export).

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

    def counts(self) -> dict[str, int]:
        """How many texts got each action (merge)."""
        out: dict[str, int] = {}
        for result in self.results:
            out[result.action] = out.get(result.action, 0) + 1
        return out


# ---- remember / update --------------------------------------------------------------------


def remember(
    ctx: FactContext,
    user_id: str,
    facts: str | Sequence[str],
    dry_run: bool = False,
    pinned: bool = False,
    ttl: float | None = None,
) -> Logic[RememberResult | list[RememberResult]]:
    """The logic of ``LongTermMemoryStore.remember``; ``dry_run`` decides without writing."""
    ttl = check_ttl(ttl)
    if ttl is not None and not ctx.backend.capabilities.ttl:
        raise NotImplementedError(
            f"The {ctx.backend.capabilities.name} engine does not support TTL; leave out ttl."
        )
    single = isinstance(facts, str)
    if not single and not isinstance(facts, (list, tuple)):
        raise InvalidFactError(f"facts must be a str or a list of str, got {type(facts).__name__}.")
    texts = [validate_text(f, "fact", ctx.max_fact_chars) for f in ([facts] if single else facts)]
    results: list[RememberResult | None] = [None] * len(texts)
    accepted: list[int] = []
    for i, text in enumerate(texts):
        reason = ctx.guard(text) if ctx.guard else None
        if reason:
            results[i] = RememberResult("rejected", None, reason=reason)
        else:
            accepted.append(i)
    if accepted:
        batch = [texts[i] for i in accepted]
        try:
            stored = yield from _store_facts(ctx, user_id, batch, dry_run, pinned, ttl)
        except DuplicateFactError:  # another process stored one of them just now
            stored = yield from _store_facts(ctx, user_id, batch, dry_run, pinned, ttl)
        for i, result in zip(accepted, stored, strict=True):
            results[i] = result
    done = [r for r in results if r is not None]
    return done[0] if single else done


def _store_facts(
    ctx: FactContext,
    user_id: str,
    texts: list[str],
    dry_run: bool,
    pinned: bool,
    ttl: float | None = None,
) -> Logic[list[RememberResult]]:
    label = encode_label(user_id)
    namespace = (*ctx.namespace, label)
    vectors = yield call(ctx.embedder, "embed", texts, False)
    digests = [content_hash(t) for t in texts]
    hashes = list(dict.fromkeys(digests))
    held = yield from ctx.locks.acquire(ctx.backend, label)
    try:
        alive_at = _clock.utcnow()
        (same_hash,) = yield call(
            ctx.backend,
            "search",
            SearchRequest(namespace, None, _with_hashes(hashes), None, 0),
        )
        exact_hits = [h for h in same_hash if is_alive(h.item, alive_at)]
        # an expired fact with one of these texts is gone: its row goes in this write
        expired = [h.item for h in same_hash if not is_alive(h.item, alive_at)]
        neighbours = yield call(
            ctx.backend,
            "search",
            SearchRequest(
                namespace,
                vectors,
                layout.CURRENT_FACTS,
                len(texts) + ctx.policy.max_similar,
                0,
                alive_at,
            ),
        )
        taken = yield call(ctx.backend, "get", [(namespace, fact_key(label, h)) for h in hashes])
        taken = [item for item in taken if item is not None and is_alive(item, alive_at)]
        exact = {str(h.item.value.get("content_hash")): h.item for h in exact_hits}

        def decide(resolutions: Mapping[int, Any] | None) -> BatchDecision:
            return decide_batch(
                texts,
                digests,
                vectors,
                exact=exact,
                neighbours=neighbours,
                taken_keys={item.key for item in taken},
                new_key=lambda digest: fact_key(label, digest),
                policy=ctx.policy,
                resolutions=resolutions,
            )

        decision = decide(None)
        if decision.ambiguous and ctx.resolver is not None:
            rows = list(decision.ambiguous)
            asked = [decision.ambiguous[r] for r in rows]
            answers = yield Step(ctx.resolver.resolve, ctx.resolver.aresolve, (asked,))
            decision = decide(dict(zip(rows, check_resolutions(asked, answers), strict=True)))
        now = _clock.utcnow()
        known = {h.item.key: h.item for hits in (*neighbours, exact_hits) for h in hits}
        stored = {
            d.key: known[d.key]
            for d in decision.decisions
            if d.action == "duplicate" and d.key not in decision.touched
        }
        histories = yield from versions_of(ctx, namespace, [*_bases(decision), *stored.values()])
        records, deletes = _records(ctx, namespace, decision, vectors, histories, now, pinned, ttl)
        written = {(r.namespace, r.key) for r in records}
        deletes += [(i.namespace, i.key) for i in expired if (i.namespace, i.key) not in written]
        if pinned:  # pinning an already stored fact rewrites it, no new version
            for d in decision.decisions:
                item = stored.get(d.key)
                if item is not None and item.value.get("pinned") is not True:
                    item = dataclasses.replace(item, value={**item.value, "pinned": True})
                    stored[d.key] = item
                    records.append(_rewrite(item, vectors[d.row : d.row + 1], now))
        if (records or deletes) and not dry_run:
            records = yield from _embed_versions(ctx, records)
            yield call(ctx.backend, "write", records, deletes)
    finally:
        yield from ctx.locks.release(ctx.backend, held)
    return [
        _result(d, decision.touched, stored, histories, texts, user_id, now, pinned, ttl)
        for d in decision.decisions
    ]


def update(ctx: FactContext, user_id: str, fact_id: str, text: str) -> Logic[RememberResult]:
    """A new version of one fact, chosen by the caller (the ``update_fact`` tool)."""
    text = validate_text(text, "fact", ctx.max_fact_chars)
    check_id(fact_id)
    reason = ctx.guard(text) if ctx.guard else None
    if reason:
        return RememberResult("rejected", None, reason=reason)
    label = encode_label(user_id)
    namespace = (*ctx.namespace, label)
    vectors = yield call(ctx.embedder, "embed", [text], False)
    held = yield from ctx.locks.acquire(ctx.backend, label)
    try:
        now = _clock.utcnow()
        (item,) = yield call(ctx.backend, "get", [(namespace, fact_id)])
        if item is not None and not is_alive(item, now):
            item = None  # expired: gone
        if item is None or layout.is_version(item) or "content" not in item.value:
            raise FactNotFoundError(
                f"The user has no fact with id {fact_id!r}; use an id returned by "
                "remember or recall."
            )
        digest = content_hash(text)
        (same_text,) = yield call(
            ctx.backend,
            "search",
            SearchRequest(namespace, None, _with_hashes([digest]), 1, 0, now),
        )
        histories = yield from versions_of(ctx, namespace, [item, *(h.item for h in same_text)])
        if same_text:  # already the text of this fact, or of another one: nothing to write
            match = same_text[0].item
            fact = layout.fact_from_items(match, user_id, histories.get(match.key, ()))
            return RememberResult("duplicate", fact, similarity=1.0)
        state = FactState(fact_id, text, 0, item, [str(item.value["content"])])
        decision = BatchDecision(decisions=[], touched={fact_id: state})
        records, deletes = _records(ctx, namespace, decision, vectors, histories, now, False, None)
        records = yield from _embed_versions(ctx, records)
        yield call(ctx.backend, "write", records, deletes)
    finally:
        yield from ctx.locks.release(ctx.backend, held)
    fact = _fact_after(state, histories, user_id, now)
    return RememberResult("updated", fact, previous=state.superseded[-1])


def _with_hashes(hashes: Sequence[str]) -> Filter:
    return (*layout.CURRENT_FACTS, Condition(("content_hash",), "$in", list(hashes)))


def _bases(decision: BatchDecision) -> list[StoredItem]:
    return [s.base for s in decision.touched.values() if s.base is not None]


def _records(
    ctx: FactContext,
    namespace: tuple[str, ...],
    decision: BatchDecision,
    vectors: Any,
    histories: Mapping[str, list[StoredItem]],
    now: datetime,
    pinned: bool,
    ttl: float | None,
) -> tuple[list[Record], list[ItemKey]]:
    """The writes of a decision: each touched fact, each text it superseded, pruning.

    The fact and its new versions get ``ttl``, or (``None``) the stored fact's TTL; with a
    TTL, its stored versions are rewritten with it too, so they expire with the fact.
    """
    records: list[Record] = []
    deletes: list[ItemKey] = []
    for state in decision.touched.values():
        base = state.base
        lifetime = _lifetime(ttl, base)
        stored_versions = histories.get(state.key, []) if base else []
        number = max([int(v.value.get("version") or 0) for v in stored_versions], default=0)
        since = layout.valid_from(base) if base else now
        legacy = layout.legacy_history(base) if base else []
        pending = [(v.content, v.valid_from, v.valid_to or now) for v in legacy]
        for text in state.superseded:
            pending.append((text, since, now))
            since = now
        for text, start, end in pending:
            number += 1
            key = layout.version_key(state.key, number)
            records.append(
                Record(
                    namespace=namespace,
                    key=key,
                    value=layout.version_value(state.key, number, text, start, end),
                    texts=(text,),
                    paths=("content",),
                    vectors=None,  # filled below: a version keeps the vector of its text
                    now=now,
                    ttl_minutes=lifetime,
                )
            )
        kept = number
        if ctx.history_limit is not None and number > ctx.history_limit:
            kept = ctx.history_limit
            deletes.extend(
                (namespace, layout.version_key(state.key, n))
                for n in range(1, number - ctx.history_limit + 1)
            )
        if lifetime is not None:
            pruned = set(deletes)
            records.extend(
                _with_ttl(v, lifetime, now)
                for v in stored_versions
                if (v.namespace, v.key) not in pruned
            )
        records.append(
            Record(
                namespace=base.namespace if base else namespace,
                key=state.key,
                value=layout.fact_value(
                    state.content, since, kept, base.value if base else None, pinned
                ),
                texts=(state.content,),
                paths=("content",),
                vectors=vectors[state.row : state.row + 1],
                now=now,
                ttl_minutes=lifetime,
            )
        )
    return records, deletes


def _rewrite(item: StoredItem, vectors: Any, now: datetime) -> Record:
    """The stored fact written again (keeping its TTL, refreshed from ``now``)."""
    text = str(item.value["content"])
    return Record(
        item.namespace,
        item.key,
        item.value,
        (text,),
        ("content",),
        vectors,
        now,
        ttl_minutes=item.ttl_minutes,
    )


def _with_ttl(version: StoredItem, ttl: float, now: datetime) -> Record:
    """A stored version written again with the fact's TTL (its vector comes from the cache)."""
    text = str(version.value["content"])
    return Record(
        version.namespace,
        version.key,
        version.value,
        (text,),
        ("content",),
        None,
        now,
        created_at=version.created_at,
        ttl_minutes=ttl,
    )


def _embed_versions(ctx: FactContext, records: list[Record]) -> Logic[list[Record]]:
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


def _fact_after(
    state: FactState,
    histories: Mapping[str, list[StoredItem]],
    user_id: str,
    now: datetime,
    pinned: bool = False,
    ttl: float | None = None,
) -> Fact:
    base = state.base
    lifetime = _lifetime(ttl, base)
    earlier: list[FactVersion] = []
    since = now
    if base is not None:
        earlier = list(layout.history_of(base, histories.get(state.key, [])))
        since = layout.valid_from(base)
    for text in state.superseded:
        earlier.append(FactVersion(text, since, now))
        since = now
    return Fact(
        id=state.key,
        user_id=user_id,
        content=state.content,
        created_at=base.created_at if base else now,
        updated_at=now,
        history=tuple(earlier),
        valid_from=now if state.superseded or base is None else layout.valid_from(base),
        metadata=layout.metadata_of(base.value) if base else {},
        pinned=pinned or (base is not None and base.value.get("pinned") is True),
        expires_at=now + timedelta(minutes=lifetime) if lifetime is not None else None,
    )


def _result(
    decision: Any,
    touched: Mapping[str, FactState],
    stored: Mapping[str, StoredItem],
    histories: Mapping[str, list[StoredItem]],
    texts: list[str],
    user_id: str,
    now: datetime,
    pinned: bool,
    ttl: float | None,
) -> RememberResult:
    state = touched.get(decision.key)
    if state is None:
        item = stored.get(decision.key)
        assert item is not None
        fact = layout.fact_from_items(item, user_id, histories.get(item.key, ()))
    else:
        fact = _fact_after(state, histories, user_id, now, pinned, ttl)
    return RememberResult(
        decision.action, fact, decision.previous, decision.similarity, decision.similar
    )


# ---- import ----------------------------------------------------------------------------


def import_user(
    ctx: FactContext,
    user_id: str,
    records: Sequence[Mapping[str, Any] | str],
    mode: ImportMode,
    dry_run: bool = False,
) -> Logic[ImportResult]:
    """The logic of ``LongTermMemoryStore.import_user``.

    Restore writes back records that carry an ``id``; records without one (plain texts)
    cannot be placed exactly, so they are merged, as in ``mode="merge"``.
    """
    if mode not in ("restore", "merge"):
        raise ValueError(f'mode must be "restore" or "merge", got {mode!r}.')
    parsed = [
        _parse_record(ctx, record, line, user_id, mode == "restore")
        for line, record in enumerate(records, 1)
    ]
    now = _clock.utcnow()
    gone = [f.expires_at is not None and f.expires_at <= now for f, _ in parsed]
    expired = tuple(f.id for (f, _), out in zip(parsed, gone, strict=True) if out)
    live = [record for record, out in zip(parsed, gone, strict=True) if not out]
    if (
        mode == "restore"
        and any(f.expires_at for f, _ in live)
        and not ctx.backend.capabilities.ttl
    ):
        raise InvalidFactError(
            f"The records carry expires_at, and the {ctx.backend.capabilities.name} engine "
            "does not support TTL; import them into an engine that does (or remove the field)."
        )
    exact = [fact for fact, has_id in live if has_id and mode == "restore"]
    loose = [fact for fact, has_id in live if not (has_id and mode == "restore")]
    result = ImportResult(mode, dry_run=dry_run)
    if exact:
        result = yield from _restore(ctx, user_id, exact, dry_run)
    if loose:
        merged = yield from _merge(ctx, user_id, loose, dry_run)
        result = dataclasses.replace(result, results=tuple(merged))
    return dataclasses.replace(result, expired=expired)


def _merge(
    ctx: FactContext, user_id: str, facts: list[Fact], dry_run: bool
) -> Logic[list[RememberResult]]:
    """Re-decide every text, oldest version first, in one ``remember`` batch.

    A text the user already has, current or earlier, is a duplicate: re-importing an export
    never brings a replaced text back. TTLs are not carried (the texts are remembered anew,
    and may become versions of facts that have their own); records already expired were
    left out before.
    """
    texts = [v.content for fact in facts for v in fact.versions]
    stored: list[Fact] = yield from list_all(ctx, user_id)
    known = {content_hash(v.content): f for f in stored for v in f.versions}
    fresh = [t for t in texts if content_hash(t) not in known]
    decided: list[RememberResult] = []
    if fresh:
        out = yield from remember(ctx, user_id, fresh, dry_run)
        assert isinstance(out, list)
        decided = out
    answers = iter(decided)
    return [
        RememberResult("duplicate", known[content_hash(t)], similarity=1.0)
        if content_hash(t) in known
        else next(answers)
        for t in texts
    ]


def _restore(
    ctx: FactContext, user_id: str, facts: list[Fact], dry_run: bool
) -> Logic[ImportResult]:
    label = encode_label(user_id)
    namespace = (*ctx.namespace, label)
    if not facts:
        return ImportResult("restore", dry_run=dry_run)
    seen: dict[str, str] = {}
    for fact in facts:
        digest = content_hash(fact.content)
        if digest in seen and seen[digest] != fact.id:
            raise InvalidFactError(
                f"Facts {seen[digest]!r} and {fact.id!r} have the same text "
                f"({fact.content!r}); a store keeps one current fact per text. Remove one, "
                'or import with mode="merge".'
            )
        seen[digest] = fact.id
    texts = list(dict.fromkeys(v.content for fact in facts for v in fact.versions))
    vectors = yield call(ctx.embedder, "embed", texts, False)
    row = {text: i for i, text in enumerate(texts)}
    held = yield from ctx.locks.acquire(ctx.backend, label)
    try:
        (same_text,) = yield call(
            ctx.backend, "search", SearchRequest(namespace, None, _with_hashes(list(seen)), None, 0)
        )
        owner = {str(h.item.value["content_hash"]): h.item.key for h in same_text}
        conflicts = tuple(f.id for f in facts if owner.get(content_hash(f.content), f.id) != f.id)
        restored = [f for f in facts if f.id not in conflicts]
        (old_versions,) = yield call(
            ctx.backend,
            "search",
            SearchRequest(
                namespace,
                None,
                (Condition(("version_of",), "$in", [f.id for f in restored] or [""]),),
                None,
                0,
            ),
        )
        records: list[Record] = []
        for fact in restored:
            records.extend(_fact_records(namespace, fact, vectors, row))
        keep = {(r.namespace, r.key) for r in records}
        stale = [
            (h.item.namespace, h.item.key)
            for h in old_versions
            if (h.item.namespace, h.item.key) not in keep
        ]
        if records and not dry_run:
            yield call(ctx.backend, "write", records, stale)
    finally:
        yield from ctx.locks.release(ctx.backend, held)
    return ImportResult("restore", restored=len(restored), conflicts=conflicts, dry_run=dry_run)


def _fact_records(
    namespace: tuple[str, ...], fact: Fact, vectors: Any, row: Mapping[str, int]
) -> list[Record]:
    """A fact as it was exported: same id, timestamps, versions and other fields."""
    out = []
    for number, version in enumerate(fact.history, 1):
        end = version.valid_to or fact.valid_from or fact.updated_at
        i = row[version.content]
        out.append(
            Record(
                namespace=namespace,
                key=layout.version_key(fact.id, number),
                value=layout.version_value(
                    fact.id, number, version.content, version.valid_from, end
                ),
                texts=(version.content,),
                paths=("content",),
                vectors=vectors[i : i + 1],
                now=end,
                created_at=version.valid_from,
                ttl_minutes=_minutes_until(fact.expires_at, end),
            )
        )
    i = row[fact.content]
    out.append(
        Record(
            namespace=namespace,
            key=fact.id,
            value=layout.fact_value(
                fact.content,
                fact.valid_from or fact.created_at,
                len(fact.history),
                fact.metadata,
                fact.pinned,
            ),
            texts=(fact.content,),
            paths=("content",),
            vectors=vectors[i : i + 1],
            now=fact.updated_at,
            created_at=fact.created_at,
            ttl_minutes=_minutes_until(fact.expires_at, fact.updated_at),
        )
    )
    return out


def _minutes_until(expires_at: datetime | None, since: datetime) -> float | None:
    """The TTL that, written at ``since``, expires at ``expires_at`` (versions: with the fact)."""
    if expires_at is None:
        return None
    return max((expires_at - since).total_seconds() / 60, 1e-6)


def _parse_record(
    ctx: FactContext, record: Any, line: int, user_id: str, check_secret: bool
) -> tuple[Fact, bool]:
    """One exported fact, checked, and whether it has an id.

    Raises InvalidFactError naming the record and the field. Secrets fail a restore; a
    merge rejects them per text.
    """
    where = f"record {line}"
    if isinstance(record, str):
        record = {"content": record}
    if not isinstance(record, Mapping):
        raise InvalidFactError(f"{where} must be an object with a 'content', got {record!r}.")
    content = validate_text(record.get("content"), f"{where}: content", ctx.max_fact_chars)
    if check_secret and ctx.guard is not None and (reason := ctx.guard(content)):
        raise InvalidFactError(f"{where}: {reason}")
    fact_id = record.get("id")
    if fact_id is not None:
        check_id(fact_id)
        if "@" in fact_id:
            raise InvalidFactError(f"{where}: id {fact_id!r} may not contain '@'.")
    now = _clock.utcnow()
    try:
        created = _time(record, "created_at", now)
        updated = _time(record, "updated_at", created)
        since = _time(record, "valid_from", created)
        expires = _time(record, "expires_at", now) if record.get("expires_at") else None
        if expires is not None and record.get("updated_at") and expires <= updated:
            raise InvalidFactError(
                f"{where}: expires_at {expires.isoformat()} is not after updated_at "
                f"{updated.isoformat()}."
            )
        history = tuple(
            _version(ctx, v, where, created, updated, since) for v in record.get("history") or ()
        )
    except (TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, InvalidFactError):
            raise
        raise InvalidFactError(f"{where}: {exc}") from exc
    metadata = record.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise InvalidFactError(f"{where}: metadata must be an object, got {metadata!r}.")
    fact = Fact(
        id=fact_id or fact_key(encode_label(user_id), content_hash(content)),
        user_id=user_id,
        content=content,
        created_at=created,
        updated_at=updated,
        history=history,
        valid_from=since,
        metadata=dict(metadata),
        pinned=record.get("pinned") is True,
        expires_at=expires,
    )
    return fact, fact_id is not None


def _version(
    ctx: FactContext,
    raw: Any,
    where: str,
    created: datetime,
    updated: datetime,
    since: datetime,
) -> FactVersion:
    """One exported version; a plain string is a 0.1 export's history entry (no dates)."""
    if isinstance(raw, str):
        text = validate_text(raw, f"{where}: history content", ctx.max_fact_chars)
        return FactVersion(text, created, updated)
    if not isinstance(raw, Mapping):
        raise InvalidFactError(f"{where}: a history entry must be an object, got {raw!r}.")
    return FactVersion(
        validate_text(raw.get("content"), f"{where}: history content", ctx.max_fact_chars),
        layout.parse_time(raw.get("valid_from"), created),
        layout.parse_time(raw.get("valid_to"), since),
    )


def _time(record: Mapping[str, Any], name: str, default: datetime) -> datetime:
    text = record.get(name)
    if text is None:
        return default
    if not isinstance(text, str):
        raise InvalidFactError(f"{name} must be an ISO 8601 string, got {text!r}.")
    return layout.parse_time(text, default)
