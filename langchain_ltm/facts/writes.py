"""Writing facts: remember and update (sans-I/O logic, see ``langchain_ltm._steps``).

Import (restore and merge) is :mod:`langchain_ltm.facts.imports`, on top of these.

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
from datetime import datetime, timedelta
from typing import Any

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
from langchain_ltm.facts.reads import check_id, versions_of
from langchain_ltm.facts.resolution import check_resolutions
from langchain_ltm.facts.text import content_hash, validate_text

__all__ = ["remember", "update", "with_hashes"]

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
            SearchRequest(namespace, None, with_hashes(hashes), None, 0),
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
            SearchRequest(namespace, None, with_hashes([digest]), 1, 0, now),
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


def with_hashes(hashes: Sequence[str]) -> Filter:
    """The current facts whose text has one of these hashes."""
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
