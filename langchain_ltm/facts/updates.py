"""Writing facts the caller chose: ``update_fact`` (with its merge), ``pin``, ``prune_history``.

Sans-I/O logic, as :mod:`~langchain_ltm.facts.writes`: each function yields backend and
embedder calls under the user's lock and receives their results.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from langchain_ltm import _clock
from langchain_ltm._filters import Condition, Filter
from langchain_ltm._labels import encode_label
from langchain_ltm._steps import Logic, call
from langchain_ltm._utf8 import encodes_as_utf8
from langchain_ltm.backends.base import (
    ItemKey,
    Record,
    SearchRequest,
    StoredItem,
    expiry,
    is_alive,
)
from langchain_ltm.errors import FactNotFoundError
from langchain_ltm.facts import versions as layout
from langchain_ltm.facts.context import FactContext
from langchain_ltm.facts.decision import BatchDecision, FactState
from langchain_ltm.facts.model import Fact, RememberResult
from langchain_ltm.facts.reads import check_id, versions_of
from langchain_ltm.facts.records import (
    decision_records,
    embed_versions,
    fact_after,
    fact_rewrite,
    live_histories,
    rewritten,
    upgraded,
)
from langchain_ltm.facts.text import content_hash, validate_text
from langchain_ltm.facts.timeline import Said
from langchain_ltm.facts.writes import nearest_facts, with_hashes

__all__ = ["pin", "prune_history", "update", "upgrade_legacy"]


def update(ctx: FactContext, user_id: str, fact_id: str, text: str) -> Logic[RememberResult]:
    """A new version of one fact, chosen by the caller (the ``update_fact`` tool).

    A text that is already another fact of the user's (X) merges X into this one, in one
    write under the user's lock: the text becomes this fact's new version (with the
    metadata X had, said when X was, if that is after this fact's current text began;
    pinned if X was) and X is deleted. What an agent does when ``remember`` kept a new fact
    apart and listed this one as ``similar``: the new fact becomes this fact's new version
    and a ``forget`` of it afterwards finds nothing, so no text is lost either way round.
    An X with earlier versions of its own, or one that lasts longer than this fact would
    from now, is not merged (its history, or its text, would be lost): the answer is
    ``duplicate`` with X, a ``reason`` saying so, and nothing changes.
    """
    text = validate_text(text, "fact", ctx.max_fact_chars)
    check_id(fact_id)
    if not encodes_as_utf8(fact_id):
        raise _not_found(fact_id)
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
        if item is None or not layout.is_fact(item):
            raise _not_found(fact_id)
        digest = content_hash(text)
        (with_text,) = yield call(
            ctx.backend,
            "search",
            SearchRequest(namespace, None, with_hashes([digest]), None, 0),
        )
        with_text = [h for h in with_text if h.item.namespace == namespace]  # not a child's
        same_text = [h.item for h in with_text if is_alive(h.item, now)]
        if not same_text:  # a client's fact holds it with no hash of ours (LangMem's put)
            same_text = yield from _unhashed_holders(ctx, namespace, vectors, digest, now)
        # this fact's own text, else another fact's (one: Postgres allows no second)
        same_text = sorted(same_text, key=lambda i: i.key != fact_id)[:1]
        # a fact with this text whose TTL has passed is gone: its row goes in this write
        # (not yet swept, it would still hold the text in Postgres' fact-hash constraint)
        expired = [(h.item.namespace, h.item.key) for h in with_text if not is_alive(h.item, now)]
        histories, lapsed = yield from live_histories(ctx, namespace, [item, *same_text], now)
        # after the current text even if a writer's clock ran ahead: an update is current
        said = Said(text, 0, max(now, layout.valid_from(item)), {})
        other = same_text[0] if same_text else None
        if other is not None:
            holder = layout.fact_from_items(other, user_id, histories.get(other.key, ()))
            if other.key == fact_id:  # already this fact's text: nothing to write
                return RememberResult("duplicate", holder, similarity=1.0)
            reason = _kept_apart(holder, other, item, now)
            if reason:  # another fact's, which stays as it is
                return RememberResult("duplicate", holder, similarity=1.0, reason=reason)
            said = _merged(said, other, item)
            expired.append((other.namespace, other.key))  # merged: gone in the same write
        state = FactState(fact_id, text, 0, item, [str(item.value["content"])])
        decision = BatchDecision(decisions=[], touched={fact_id: state})
        pinned = other is not None and other.value.get("pinned") is True
        records, deletes, lines = decision_records(
            ctx, namespace, decision, vectors, histories, {fact_id: [said]}, now, pinned, None
        )
        records = yield from embed_versions(ctx, records)
        written = {(r.namespace, r.key) for r in records}
        lapsed = [key for key in lapsed if key not in written]
        yield call(ctx.backend, "write", records, [*deletes, *expired, *lapsed])
    finally:
        yield from ctx.locks.release(ctx.backend, held)
    fact = fact_after(state, lines[fact_id], histories, user_id, now, pinned)
    merged = other.key if other is not None else None
    return RememberResult("updated", fact, previous=state.superseded[-1], merged=merged)


def _unhashed_holders(
    ctx: FactContext, namespace: tuple[str, ...], vectors: Any, digest: str, now: datetime
) -> Logic[list[StoredItem]]:
    """The user's current facts holding the text of hash ``digest`` without that hash.

    A client's ``{"content": ...}`` put (LangMem's) is a fact with no ``content_hash``:
    ``remember`` of its text finds it among the text's nearest facts and answers
    ``duplicate``, so an update to its text finds it the same way (the text scores highest)
    and merges it as it merges a fact with the hash.
    """
    (hits,) = yield from nearest_facts(ctx, namespace, vectors, 1, now)
    return [
        h.item
        for h in hits
        if isinstance(h.item.value.get("content"), str)
        and content_hash(h.item.value["content"]) == digest
    ]


def _kept_apart(holder: Fact, other: StoredItem, item: StoredItem, now: datetime) -> str | None:
    """Why ``holder`` (``other``, another fact with the new text) is not merged, if so.

    Into ``item``, its history would be lost, or its text expire sooner than it would.
    Merged, the text takes ``item``'s TTL from ``now``: a text that lasts, or lasts
    longer than that, would be gone before its time.
    """
    ends = expiry(now, item.ttl_minutes)  # the merged text's end: this fact's TTL from now
    sooner = ends is not None and (other.expires_at is None or other.expires_at > ends)
    if holder.history:
        why = "which has earlier versions of its own (merged, they would be lost)"
    elif sooner:
        why = (
            "which lasts longer than this one (merged, the text would expire with this "
            "fact, sooner than it would have)"
        )
    else:
        return None
    return (
        f"This text is already fact {holder.id}, {why}, so it was not merged into fact "
        f"{item.key}: nothing changed. Fact {holder.id} keeps the text: do not forget it."
    )


def _merged(update: Said, other: StoredItem, item: StoredItem) -> Said:
    """The new text of ``item`` as ``other`` (another fact that holds it, merged in) said it.

    It keeps ``other``'s metadata, and the moment ``other``'s text began when that is after
    ``item``'s current text began: it was said then. Otherwise it is said as any update
    (``update.at``: now, or just after a current text from a clock ahead).
    """
    began = layout.valid_from(other)
    at = began if began > layout.valid_from(item) else update.at
    return Said(update.content, 0, at, layout.metadata_of(other.value))


def _not_found(fact_id: str) -> FactNotFoundError:
    return FactNotFoundError(
        f"The user has no fact with id {fact_id!r}; use an id returned by remember or recall."
    )


def pin(ctx: FactContext, user_id: str, fact_ids: Sequence[str]) -> Logic[list[str]]:
    """Pin the user's current facts with these ids (a rewrite: no new version); those pinned.

    What a merge import does for a record that was pinned, once its text is decided: the
    fact it became (created, updated or already there) is pinned, as ``remember(...,
    pinned=True)`` pins a duplicate. Ids of no live fact, and facts pinned already, are
    left as they are.
    """
    if not fact_ids:
        return []
    label = encode_label(user_id)
    namespace = (*ctx.namespace, label)
    held = yield from ctx.locks.acquire(ctx.backend, label)
    try:
        now = _clock.utcnow()
        found = yield call(ctx.backend, "get", [(namespace, k) for k in dict.fromkeys(fact_ids)])
        chosen = [
            item
            for item in found
            if item is not None
            and is_alive(item, now)
            and layout.is_fact(item)
            and item.value.get("pinned") is not True
        ]
        every = yield from versions_of(ctx, namespace, chosen)
        facts = [rewritten(item, {**item.value, "pinned": True}, now) for item in chosen]
        records = [
            record
            for before, after in zip(chosen, facts, strict=True)
            for record in fact_rewrite(before, after, now, every.get(before.key, ()))
        ]
        if records:
            records = yield from embed_versions(ctx, records)
            yield call(ctx.backend, "write", records, [])
    finally:
        yield from ctx.locks.release(ctx.backend, held)
    return [item.key for item in facts]


def prune_history(ctx: FactContext, user_id: str, fact_id: str | None, keep: int) -> Logic[int]:
    """The logic of ``LongTermMemoryStore.prune_history``.

    A fact written by 0.1.0 counts its inline earlier texts, oldest first: when some go,
    the fact is written again in this layout (``records.upgraded``) with the ones kept as
    version items, in the same write. Returns how many versions it chose to delete under
    the lock (see ``reads.forget``: not the engine's count, which a retried write reports
    as 0).
    """
    if not isinstance(keep, int) or isinstance(keep, bool) or keep < 0:
        raise ValueError(f"keep must be an int >= 0, got {keep!r}.")
    namespace = ctx.user_namespace(user_id)
    scope: Filter = layout.VERSIONS
    if fact_id is not None:
        check_id(fact_id)
        if not encodes_as_utf8(fact_id):
            return 0  # no fact, so no versions
        scope = (Condition(("version_of",), "$eq", fact_id),)
    held = yield from ctx.locks.acquire(ctx.backend, namespace[-1])  # as every fact write
    try:
        now = _clock.utcnow()
        request = SearchRequest(namespace, None, scope, None, 0)
        (hits,) = yield call(ctx.backend, "search", request)
        by_fact: dict[str, list[StoredItem]] = {}
        for hit in hits:
            if hit.item.namespace != namespace or not layout.is_version(hit.item):
                continue  # an item of a child namespace, or a client's with a version_of
            by_fact.setdefault(str(hit.item.value["version_of"]), []).append(hit.item)
        records: list[Record] = []
        unstored: set[ItemKey] = set()  # inline texts: no item to delete
        for item in (yield from _legacy_facts(ctx, namespace, fact_id, now)):
            stored = by_fact.get(item.key, [])
            inline = layout.legacy_versions(item, stored)
            versions = [*inline, *stored]
            if len(versions) > keep:  # else nothing of it goes: left as it is
                by_fact[item.key] = versions
                unstored |= {(v.namespace, v.key) for v in inline}
                records += upgraded(item, now, stored)
        doomed: set[ItemKey] = set()
        for items in by_fact.values():
            items.sort(key=lambda v: int(v.value.get("version") or 0))
            doomed |= {(v.namespace, v.key) for v in items[: max(len(items) - keep, 0)]}
        records = [r for r in records if (r.namespace, r.key) not in doomed]
        if records:
            records = yield from embed_versions(ctx, records)
        if records or doomed:
            yield call(ctx.backend, "write", records, sorted(doomed - unstored))
    finally:
        yield from ctx.locks.release(ctx.backend, held)
    return len(doomed)


def _legacy_facts(
    ctx: FactContext, namespace: tuple[str, ...], fact_id: str | None, now: datetime
) -> Logic[list[StoredItem]]:
    """The live facts of ``namespace`` with 0.1.0 inline history (``fact_id``: that one)."""
    if fact_id is None:
        request = SearchRequest(namespace, None, layout.LEGACY_FACTS, None, 0, now)
        (hits,) = yield call(ctx.backend, "search", request)
        found = [h.item for h in hits if h.item.namespace == namespace]
    else:
        found = yield call(ctx.backend, "get", [(namespace, fact_id)])
    return [
        i
        for i in found
        if i is not None and is_alive(i, now) and layout.is_fact(i) and layout.legacy_history(i)
    ]


def upgrade_legacy(ctx: FactContext) -> Logic[int]:
    """The logic of ``LongTermMemoryStore.upgrade_legacy_facts``; how many facts it wrote.

    One search finds the users with 0.1.0 facts; each user's are read again and written
    in this layout (``records.upgraded``) under that user's lock, one user at a time. A
    fact already written in this layout is not found: running it again writes nothing.
    """
    now = _clock.utcnow()
    request = SearchRequest(ctx.namespace, None, layout.LEGACY_FACTS, None, 0, now)
    (hits,) = yield call(ctx.backend, "search", request)
    labels = sorted({h.item.namespace[-1] for h in hits if ctx.is_user_namespace(h.item.namespace)})
    count = 0
    for label in labels:
        namespace = (*ctx.namespace, label)
        held = yield from ctx.locks.acquire(ctx.backend, label)
        try:
            now = _clock.utcnow()
            facts = yield from _legacy_facts(ctx, namespace, None, now)
            stored = yield from versions_of(ctx, namespace, facts)
            records = [r for f in facts for r in upgraded(f, now, stored.get(f.key, ()))]
            if records:
                records = yield from embed_versions(ctx, records)
                yield call(ctx.backend, "write", records, [])
            count += len(facts)
        finally:
            yield from ctx.locks.release(ctx.backend, held)
    return count
