"""Writing facts: remember (sans-I/O logic, see ``langchain_ltm._steps``).

``update_fact`` and ``pin`` are :mod:`langchain_ltm.facts.updates`, the records both write
:mod:`langchain_ltm.facts.records`; import (restore and merge) is
:mod:`langchain_ltm.facts.imports`, on top of these.

``observed_at`` and ``metadata`` (checked by :mod:`~langchain_ltm.facts.provenance`) say
when and where a text was said; :mod:`~langchain_ltm.facts.timeline` places it among the
fact's versions by that moment, so a backfill of old conversations is stored as said.

Each function yields backend, embedder and resolver calls and receives their results;
``LongTermMemoryStore`` runs it with its sync or its async shell. Nothing here calls back
into the store. The decide-and-write of one user holds the user's lock
(:class:`~langchain_ltm.facts._locks.UserLocks`) from the first read to the write.

TTL: a fact remembered with ``ttl`` (minutes) expires with every version it has; a new
version of it (``update``, or a ``remember`` with a TTL merging into it) takes the TTL,
refreshed from the write (never from ``observed_at``): the call's own for a ``remember``.
A lasting text never merges into a fact that expires, nor one with a TTL into a lasting
fact (one lifetime per fact); said again word for word without a TTL, a fact that was to
expire lasts from then on (its versions keep their own expiry). ``update_fact`` onto the
text of another fact is the exception: it merges that fact in when the text then lasts at
least as long as it would have (a TTL'd fact into a lasting one, or one expiring later).
Expired facts are gone for every read here at once, whatever the store's ``omit_expired``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from langchain_ltm import _clock
from langchain_ltm._clock import check_ttl
from langchain_ltm._filters import Condition, Filter
from langchain_ltm._ids import fact_key
from langchain_ltm._labels import encode_label
from langchain_ltm._steps import Logic, Step, call
from langchain_ltm.backends.base import (
    Hit,
    Record,
    SearchRequest,
    StoredItem,
    is_alive,
)
from langchain_ltm.errors import DuplicateFactError, InvalidFactError
from langchain_ltm.facts import versions as layout
from langchain_ltm.facts.context import FactContext
from langchain_ltm.facts.decision import BatchDecision, Decision, FactState, decide_batch
from langchain_ltm.facts.model import RememberResult
from langchain_ltm.facts.provenance import (
    check_metadata,
    check_observed_at,
    secret_in,
)
from langchain_ltm.facts.reads import WIDEST, may_have_more
from langchain_ltm.facts.records import (
    decision_records,
    embed_versions,
    fact_after,
    fact_rewrite,
    live_histories,
    rewrite,
    rewritten,
)
from langchain_ltm.facts.resolution import check_resolutions
from langchain_ltm.facts.text import content_hash, validate_text
from langchain_ltm.facts.timeline import Said, Timeline

__all__ = ["nearest_facts", "remember", "remember_each", "with_hashes"]

# ---- remember ------------------------------------------------------------------------------


def remember(
    ctx: FactContext,
    user_id: str,
    facts: str | Sequence[str],
    dry_run: bool = False,
    pinned: bool = False,
    ttl: float | None = None,
    metadata: Mapping[str, Any] | None = None,
    observed_at: datetime | None = None,
) -> Logic[RememberResult | list[RememberResult]]:
    """The logic of ``LongTermMemoryStore.remember``; ``dry_run`` decides without writing."""
    meta = check_metadata(metadata)
    when = check_observed_at(observed_at, _clock.utcnow())
    count = 1 if isinstance(facts, str) else len(facts) if isinstance(facts, (list, tuple)) else 0
    return (
        yield from remember_each(
            ctx, user_id, facts, [meta] * count, [when] * count, dry_run, pinned, ttl
        )
    )


def remember_each(
    ctx: FactContext,
    user_id: str,
    facts: str | Sequence[str],
    metadata: Sequence[Mapping[str, Any]],
    observed: Sequence[datetime | None],
    dry_run: bool = False,
    pinned: bool = False,
    ttl: float | None = None,
) -> Logic[RememberResult | list[RememberResult]]:
    """:func:`remember` with each text's own (checked) metadata and moment (``None``: now)."""
    ttl = check_ttl(ttl)
    if not isinstance(pinned, bool):  # "no" would pin the stored fact (it is truthy)
        raise TypeError(f"pinned must be True or False, got {pinned!r}.")
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
    for i, text in enumerate(texts):  # a secret in the text or in its metadata
        reason = secret_in(ctx.guard, text, metadata[i])
        if reason:
            results[i] = RememberResult("rejected", None, reason=reason)
        else:
            accepted.append(i)
    if accepted:
        batch = [texts[i] for i in accepted]
        said = [(observed[i], metadata[i]) for i in accepted]
        try:
            stored = yield from _store_facts(ctx, user_id, batch, said, dry_run, pinned, ttl)
        except DuplicateFactError:  # another process stored one of them just now
            stored = yield from _store_facts(ctx, user_id, batch, said, dry_run, pinned, ttl)
        for i, result in zip(accepted, stored, strict=True):
            results[i] = result
    done = [r for r in results if r is not None]
    return done[0] if single else done


def _store_facts(
    ctx: FactContext,
    user_id: str,
    texts: list[str],
    said: list[tuple[datetime | None, Mapping[str, Any]]],
    dry_run: bool,
    pinned: bool,
    ttl: float | None = None,
) -> Logic[list[RememberResult]]:
    label = encode_label(user_id)
    namespace = (*ctx.namespace, label)
    every_vector = yield call(ctx.embedder, "embed", texts, False)
    every_digest = [content_hash(t) for t in texts]
    every_said = said
    held = yield from ctx.locks.acquire(ctx.backend, label)
    try:
        alive_at = _clock.utcnow()
        # a text some fact already had at the moment it is said again: a re-run backfill
        recorded = yield from _said_before(ctx, namespace, every_digest, said, alive_at)
        fresh = [i for i in range(len(texts)) if i not in recorded]
        texts = [texts[i] for i in fresh]
        digests = [every_digest[i] for i in fresh]
        said = [every_said[i] for i in fresh]
        vectors = every_vector[fresh]
        hashes = list(dict.fromkeys(digests))
        (same_hash,) = yield call(
            ctx.backend,
            "search",
            SearchRequest(namespace, None, with_hashes(hashes), None, 0),
        )
        # the search covers namespaces below the user's, which another configuration may
        # use for other users (namespace=("memories", "acme") puts Bob under user acme's)
        same_hash = [h for h in same_hash if h.item.namespace == namespace]
        exact_hits = [h for h in same_hash if is_alive(h.item, alive_at)]
        # an expired fact with one of these texts is gone: its row goes in this write
        expired = [h.item for h in same_hash if not is_alive(h.item, alive_at)]
        neighbours = (
            (yield from nearest_facts(ctx, namespace, vectors, len(texts), alive_at))
            if texts
            else []
        )
        taken = yield call(ctx.backend, "get", [(namespace, fact_key(label, h)) for h in hashes])
        taken = [item for item in taken if item is not None and is_alive(item, alive_at)]
        # keyed by the hash of the text each holds: a hash a client copied with a fact's
        # value (put before puts computed it again) names a text the item does not hold
        exact = {_hash_of(h.item): h.item for h in exact_hits}
        # an item another client stored with the same text (LangMem's {"content": ...},
        # no hash of ours) is that text already: a duplicate, not a new version of it
        for hits in neighbours:
            for hit in hits:
                if isinstance(hit.item.value.get("content"), str):
                    exact.setdefault(_hash_of(hit.item), hit.item)

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
                moments=[at for at, _ in said],
                ttl=ttl,
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
        stored.update(
            (item.key, item) for item in recorded.values() if item.key not in decision.touched
        )
        histories, lapsed = yield from live_histories(
            ctx, namespace, [*_bases(decision), *stored.values()], now
        )
        chains = _chains(decision, said, now)
        records, deletes, lines = decision_records(
            ctx, namespace, decision, vectors, histories, chains, now, pinned, ttl
        )
        written = {(r.namespace, r.key) for r in records}
        deletes += [(i.namespace, i.key) for i in expired if (i.namespace, i.key) not in written]
        deletes += [key for key in lapsed if key not in written]
        before = dict(stored)  # as read: a 0.1.0 fact's inline texts dated as they read now
        rewrites, ended = _said_earlier(decision, said, stored, histories, now)
        if ttl is None:  # said again for good: a fact that was to expire now lasts
            for d in decision.decisions:
                item = stored.get(d.key) if d.action == "duplicate" else None
                if item is not None and d.key not in decision.touched and item.ttl_minutes:
                    item = dataclasses.replace(item, ttl_minutes=None, expires_at=None)
                    stored[d.key] = rewritten(item, dict(item.value), now)
                    rewrites.append(d.key)
        pin_vectors: dict[str, Any] = {}
        if pinned:  # pinning an already stored fact rewrites it, no new version
            dups = [(d.key, vectors[d.row : d.row + 1]) for d in decision.decisions]
            for key, vector in [*dups, *((item.key, None) for item in recorded.values())]:
                item = stored.get(key)
                if item is not None and item.value.get("pinned") is not True:
                    stored[key] = rewritten(item, {**item.value, "pinned": True}, now)
                    rewrites.append(key)
                    pin_vectors[key] = vector
        rewritten_records = {r.key: r for r in ended}
        for key in dict.fromkeys(rewrites):  # each rewritten fact (records.fact_rewrite)
            versions = histories.get(key, [])
            fact_records = fact_rewrite(
                before[key], stored[key], now, versions, pin_vectors.get(key)
            )
            rewritten_records.update((r.key, r) for r in fact_records)
            inline = layout.legacy_versions(before[key], versions)
            histories[key] = [*inline, *versions]
            # an expired version at a number they take is written over, not deleted after
            taken = {(v.namespace, v.key) for v in inline}
            deletes = [k for k in deletes if k not in taken]
        records += rewritten_records.values()
        if (records or deletes) and not dry_run:
            records = yield from embed_versions(ctx, records)
            yield call(ctx.backend, "write", records, deletes)
    finally:
        yield from ctx.locks.release(ctx.backend, held)
    out: list[RememberResult | None] = [None] * len(every_said)
    for row, item in recorded.items():
        again = Decision("duplicate", item.key, -1, similarity=1.0)
        out[row] = _result(
            again, decision.touched, stored, histories, lines, user_id, now, pinned, ttl
        )
    for row, d in zip(fresh, decision.decisions, strict=True):
        out[row] = _result(d, decision.touched, stored, histories, lines, user_id, now, pinned, ttl)
    return [r for r in out if r is not None]


def _hash_of(item: StoredItem) -> str:
    """The content hash of the text a stored fact holds (its stored hash if it holds none)."""
    content = item.value.get("content")
    return content_hash(content) if isinstance(content, str) else str(item.value["content_hash"])


def nearest_facts(
    ctx: FactContext,
    namespace: tuple[str, ...],
    vectors: Any,
    count: int,
    alive_at: datetime,
) -> Logic[list[list[Hit]]]:
    """The user's current facts nearest each text (``count`` + ``max_similar`` of them).

    The engine searches the namespace with the ones below it, which another configuration
    may use for its users (``namespace=("memories", "acme")`` keeps Bob's facts under user
    acme's); when their facts took a window's places, it is searched again, wider, so a
    restatement is still compared with the user's own fact.
    """
    window = wanted = count + ctx.policy.max_similar
    while True:
        found = yield call(
            ctx.backend,
            "search",
            SearchRequest(
                namespace, vectors, layout.CURRENT_FACTS, window, 0, alive_at, one_user=True
            ),
        )
        # not a child namespace's, nor a client's item with a structured content
        own = [
            [h for h in hits if h.item.namespace == namespace and layout.is_fact(h.item)]
            for hits in found
        ]
        short = any(
            len(mine) < wanted and may_have_more(hits, window)
            for mine, hits in zip(own, found, strict=True)
        )
        if not short or window >= WIDEST:
            return own  # past WIDEST a restatement is kept apart (created), never lost
        window = min(window * 4, WIDEST)


def with_hashes(hashes: Sequence[str]) -> Filter:
    """The current facts whose text has one of these hashes."""
    return (*layout.CURRENT_FACTS, Condition(("content_hash",), "$in", list(hashes)))


def _bases(decision: BatchDecision) -> list[StoredItem]:
    return [s.base for s in decision.touched.values() if s.base is not None]


def _chains(
    decision: BatchDecision,
    said: list[tuple[datetime | None, Mapping[str, Any]]],
    now: datetime,
) -> dict[str, list[Said]]:
    """Each touched fact's new texts in decision order, with their moments and metadata.

    The rows come from the decisions (the row that created the fact, then each one that
    updated it), so a text said twice keeps each saying's own moment and metadata. A row
    without ``observed_at`` is said now, or at the stored current text's ``valid_from`` if
    that is later (a writer's clock ahead of ours): it always becomes the current text.
    """
    rows: dict[str, list[int]] = {}
    for d in decision.decisions:
        if d.action in ("created", "updated") and d.key in decision.touched:
            rows.setdefault(d.key, []).append(d.row)
    out: dict[str, list[Said]] = {}
    for key, state in decision.touched.items():
        chain = rows.get(key, [])
        assert chain, key
        assert chain[-1] == state.row, (key, chain, state.row)
        floor = now if state.base is None else max(now, layout.valid_from(state.base))
        texts = [*state.superseded[1 if state.base is not None else 0 :], state.content]
        out[key] = []
        for row, text in zip(chain, texts, strict=True):
            at, meta = said[row]
            out[key].append(Said(text, row, at or floor, meta))
    return out


def _said_before(
    ctx: FactContext,
    namespace: tuple[str, ...],
    digests: Sequence[str],
    said: Sequence[tuple[datetime | None, Mapping[str, Any]]],
    alive_at: datetime,
) -> Logic[dict[int, StoredItem]]:
    """Rows whose exact text is an earlier version of a fact said at the row's moment.

    Such a row is already recorded (a backfill run again): it is a ``duplicate`` of that
    fact, whatever its current text is now. Only rows with ``observed_at`` can match.
    """
    moments = sorted({layout.format_time(at) for at, _ in said if at is not None})
    if not moments:
        return {}
    (hits,) = yield call(
        ctx.backend,
        "search",
        SearchRequest(
            namespace,
            None,
            (*layout.VERSIONS, Condition(("valid_from",), "$in", moments)),
            None,
            0,
            alive_at,
        ),
    )
    owners = {
        (content_hash(str(h.item.value["content"])), str(h.item.value["valid_from"])): str(
            h.item.value["version_of"]
        )
        for h in hits
        if h.item.namespace == namespace and "content" in h.item.value and layout.is_version(h.item)
    }
    wanted = {
        row: owners[key]
        for row, (digest, (at, _)) in enumerate(zip(digests, said, strict=True))
        if at is not None and (key := (digest, layout.format_time(at))) in owners
    }
    if not wanted:
        return {}
    keys = sorted(set(wanted.values()))
    facts = yield call(ctx.backend, "get", [(namespace, key) for key in keys])
    alive = {
        f.key: f
        for f in facts
        if f is not None and is_alive(f, alive_at) and not layout.is_version(f)
    }
    return {row: alive[key] for row, key in wanted.items() if key in alive}


def _said_earlier(
    decision: BatchDecision,
    said: Sequence[tuple[datetime | None, Mapping[str, Any]]],
    stored: dict[str, StoredItem],
    histories: dict[str, list[StoredItem]],
    now: datetime,
) -> tuple[list[str], list[Record]]:
    """Facts whose current text was said before it became current (an out-of-order backfill).

    The text has held since then: the fact's ``valid_from`` moves back to the earliest such
    moment, and the version it replaced now ends there (``created_at`` too when it has no
    versions). A moment before that version began (the text said, then an older value,
    then the text again) moves nothing: the row stays a plain duplicate. Only a fact of the
    other lifetime (lasting against expiring) gets here: ``decide_batch`` gives the others
    such a row as an update, which the timeline places (an earlier version then, the start
    moved back, or a duplicate where it held: :func:`~langchain_ltm.facts.timeline.holds`).
    Metadata is the stored text's. ``stored`` and ``histories`` are updated to what is
    written; returns the keys of the facts to rewrite (``records.fact_rewrite``) and the
    ended versions' records.
    """
    earliest: dict[str, datetime] = {}
    for d in decision.decisions:
        moment = said[d.row][0]
        if d.action == "duplicate" and d.key not in decision.touched and moment is not None:
            earliest[d.key] = min(moment, earliest.get(d.key, moment))
    facts: list[str] = []
    ended_records: list[Record] = []
    for key, moment in earliest.items():
        item = stored.get(key)
        if item is None or "history" in item.value or moment >= layout.valid_from(item):
            continue  # (0.1 facts keep their inline history as it is)
        versions = histories.get(key, [])
        last = max(versions, key=layout.valid_from, default=None)
        if last is not None and layout.valid_from(last) >= moment:
            continue
        when = layout.format_time(moment)
        created = min(item.created_at, moment)  # never later than it was
        item = rewritten(item, {**item.value, "valid_from": when}, now, created)
        stored[key] = item
        facts.append(key)
        if last is not None:
            ended = dataclasses.replace(last, value={**last.value, "valid_to": when})
            histories[key] = [ended if v is last else v for v in versions]
            ended_records.append(rewrite(ended, None, now, ended.created_at))
    return facts, ended_records


def _result(
    decision: Any,
    touched: Mapping[str, FactState],
    stored: Mapping[str, StoredItem],
    histories: Mapping[str, list[StoredItem]],
    lines: Mapping[str, Timeline],
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
        line = lines[decision.key]
        fact = fact_after(state, line, histories, user_id, now, pinned, ttl)
        if decision.row in line.recorded:  # the same text said at the same moment
            return RememberResult("duplicate", fact, similarity=1.0)
    return RememberResult(
        decision.action, fact, decision.previous, decision.similarity, decision.similar
    )
