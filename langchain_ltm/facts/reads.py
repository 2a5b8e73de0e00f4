"""Reading and deleting facts: recall, list, history, forget, clear (sans-I/O logic).

Expired facts (``remember(..., ttl=...)``) are left out of every read at once, before a
sweep deletes them; deletions (forget, clear; ``updates.prune_history``) take expired rows along.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from langchain_ltm import _clock
from langchain_ltm._filters import Condition, Filter
from langchain_ltm._steps import Logic, call
from langchain_ltm._utf8 import encodes_as_utf8
from langchain_ltm.backends.base import (
    Hit,
    ItemKey,
    SearchRequest,
    StoredItem,
    expiry,
    is_alive,
)
from langchain_ltm.errors import InvalidFactError
from langchain_ltm.facts import versions as layout
from langchain_ltm.facts.context import FactContext, is_user_namespace
from langchain_ltm.facts.model import Fact, FactVersion, RecalledFact
from langchain_ltm.facts.provenance import metadata_filter
from langchain_ltm.facts.text import validate_text

__all__ = [
    "clear_user",
    "forget",
    "history",
    "list_all",
    "pinned",
    "recall",
    "refresh",
]

MAX_LIMIT = 1000
"""The most facts one ``recall`` returns."""


def recall(
    ctx: FactContext,
    user_id: str,
    queries: str | Sequence[str],
    limit: int,
    min_score: float | None = None,
    include_history: bool = False,
    as_of: datetime | None = None,
    filter: Mapping[str, Any] | None = None,
    refresh_ttl: bool | None = None,
) -> Logic[list[RecalledFact]]:
    """The logic of ``LongTermMemoryStore.recall``.

    ``filter`` (metadata keys, BaseStore operators) joins every scope searched, so the
    engine applies it before ranking and ``limit`` still fills. Each (scope, phrasing) is
    its own window, widened until nothing past its edge could outrank the ``limit`` facts
    merged by best score; a window that was not full, or not crowded, costs no second
    search. The facts returned are refreshed (:func:`refreshed`).
    """
    namespace = ctx.user_namespace(user_id)
    phrasings = _phrasings(ctx, queries)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be an int from 1 to {MAX_LIMIT}, got {limit!r}.")
    if min_score is not None and (
        not isinstance(min_score, (int, float)) or not -1.0 <= min_score <= 1.0
    ):
        raise ValueError(f"min_score is a cosine in [-1, 1], got {min_score!r}.")
    if as_of is not None and not isinstance(as_of, datetime):
        raise TypeError(f"as_of must be a datetime, got {type(as_of).__name__}.")
    if as_of is not None:
        try:
            layout.format_time(as_of)
        except ValueError as exc:  # naive, or out of UTC's range: before the first step
            raise ValueError(f"as_of: {exc}") from None
    wanted_meta = metadata_filter(filter)
    scopes = [(*scope, *wanted_meta) for scope in _scopes(include_history, as_of)]
    vectors = yield call(ctx.embedder, "embed", phrasings, True)
    # versions of one fact compete for its place: ask for more so `limit` facts remain.
    # One past `limit` otherwise: a window whose last hit ties the limit-th fact is widened
    # (ties go by fact id), and with one more its last is below it unless there is a tie.
    first = limit + 1 if len(scopes) == 1 and not include_history else limit * 3
    now = _clock.utcnow()
    best: dict[str, Hit] = {}
    # One window per (scope, phrasing), each widened on its own. A window the engine filled
    # may end before facts that outrank what the other windows supplied: its places went to
    # the versions of a few facts, or to the items of namespaces below the user's (another
    # configuration's users: namespace=("memories", "acme") keeps Bob's under user acme's).
    # It is searched again, wider, while its last score beats the limit-th best fact found;
    # then no fact outside every window can outrank one returned.
    todo = {(s, q): first for s in range(len(scopes)) for q in range(len(vectors))}
    while todo:
        ends: dict[tuple[int, int], tuple[int, float]] = {}  # full windows: width, last score
        for (s, wanted), rows in _by_search(todo).items():
            per_query = yield call(
                ctx.backend,
                "search",
                SearchRequest(namespace, vectors[rows], scopes[s], wanted, 0, now, one_user=True),
            )
            for q, hits in zip(rows, per_query, strict=True):
                if may_have_more(hits, wanted, min_score) and wanted < WIDEST:
                    ends[(s, q)] = (wanted, float(hits[-1].score or 0.0))
                _merge(best, hits, namespace, min_score, as_of)
        scores = sorted((h.score or 0.0 for h in best.values()), reverse=True)
        floor = scores[limit - 1] if len(scores) >= limit else None
        # past WIDEST a crowded window answers with what it held. A window ending on a tie
        # with the floor is widened too: which of the tied facts an engine put inside it
        # is its own order (insertion, or namespace and key), and ties go by fact id.
        todo = {
            window: min(wanted * 4, WIDEST)
            for window, (wanted, last) in ends.items()
            if floor is None or last >= floor
        }
    ranked = sorted(best.items(), key=_rank)[:limit]
    facts = {h.item.key: h.item for _, h in ranked if not layout.is_version(h.item)}
    missing = [fact_id for fact_id, _ in ranked if fact_id not in facts]
    if missing:
        found = yield call(ctx.backend, "get", [(namespace, k) for k in missing])
        facts.update(
            {i.key: i for i in found if i is not None and is_alive(i, now) and layout.is_fact(i)}
        )
    histories = yield from versions_of(ctx, namespace, list(facts.values()), now)
    facts, histories = yield from refreshed(ctx, refresh_ttl, facts, histories, now)
    out = []
    for fact_id, hit in ranked:
        item = facts.get(fact_id)
        if item is None:  # forgotten between the two calls
            continue
        versions = histories.get(fact_id, [])
        fact = layout.fact_from_items(item, user_id, versions)
        version = None
        if layout.is_version(hit.item):
            version = next((v for v in versions if v.key == hit.item.key), hit.item)
        out.append(layout.recalled(fact, float(hit.score or 0.0), version))
    return out


def refreshed(
    ctx: FactContext,
    refresh_ttl: bool | None,
    facts: Mapping[str, StoredItem],
    versions: Mapping[str, list[StoredItem]],
    now: datetime,
) -> Logic[tuple[dict[str, StoredItem], dict[str, list[StoredItem]]]]:
    """Refresh the TTL of the facts a read returns and of their versions, as ``store.get``.

    ``facts`` by id, with ``versions`` (alive, by fact id) as read. ``refresh_ttl``:
    ``None`` follows ``ctx.refresh_on_read``. Only facts with a TTL are refreshed (a
    lasting fact leaves its versions' own expiry alone, as ``store.get`` of it does), in
    one ``touch``; none has one: no call. Returns both with the expiry pushed (what the
    engine holds now).
    """
    wanted = ctx.refresh_on_read if refresh_ttl is None else refresh_ttl
    expiring = [f for f in facts.values() if f.ttl_minutes is not None] if wanted else []
    if not expiring:
        return dict(facts), dict(versions)
    known = {(f.namespace, f.key): versions.get(f.key, []) for f in expiring}
    yield from refresh(ctx, expiring, now, known)
    touched = set(known) | {(v.namespace, v.key) for vs in known.values() for v in vs}

    def pushed(item: StoredItem) -> StoredItem:
        if item.ttl_minutes is None or (item.namespace, item.key) not in touched:
            return item
        return replace(item, expires_at=expiry(now, item.ttl_minutes))

    return (
        {k: pushed(f) for k, f in facts.items()},
        {k: [pushed(v) for v in vs] for k, vs in versions.items()},
    )


def refresh(
    ctx: FactContext,
    items: Sequence[StoredItem],
    now: datetime,
    known: Mapping[ItemKey, Sequence[StoredItem]] | None = None,
) -> Logic[None]:
    """Refresh the TTLs of ``items`` read (and their facts' versions) from ``now``.

    The one refresh on read: ``store.get``/``search`` and the fact API's reads come here.
    ``known``: versions already read, by their fact's key (no search for those facts).
    The engine refreshes only items alive at ``now``, so nothing expired comes back.
    """
    if items:
        keys = yield from _with_fact_versions(ctx, items, known or {})
        yield call(ctx.backend, "touch", keys, now)


def _with_fact_versions(
    ctx: FactContext,
    items: Sequence[StoredItem],
    known: Mapping[ItemKey, Sequence[StoredItem]],
) -> Logic[list[ItemKey]]:
    """Keys to refresh: the items, and the versions of the facts among them.

    A fact's versions expire with it, so refreshing a fact refreshes them too (one search
    per user namespace, for facts not in ``known``; a fact is what ``layout.is_fact``
    says, so one a client put over, with no ``content_hash`` left, counts), and a version
    read on its own (``store.search`` over a user's namespace) refreshes its fact and the
    fact's other versions: it never outlives them.
    """
    keys: list[ItemKey] = [(it.namespace, it.key) for it in items]
    by_namespace: dict[tuple[str, ...], list[StoredItem]] = {}
    owners: dict[ItemKey, None] = {}  # the facts of versions read on their own
    for item in items:
        if not is_user_namespace(ctx.namespace, item.namespace):
            continue
        if (item.namespace, item.key) in known:
            keys.extend((v.namespace, v.key) for v in known[(item.namespace, item.key)])
        elif layout.is_fact(item):  # as for a client's put over one (no content_hash left)
            by_namespace.setdefault(item.namespace, []).append(item)
        elif layout.is_version(item):
            owners[(item.namespace, item.value["version_of"])] = None
    read = {(it.namespace, it.key) for it in items}
    wanted = [key for key in owners if key not in read]
    if wanted:  # a version lives as long as its fact: refresh the fact and its versions
        found_facts = yield call(ctx.backend, "get", wanted)
        for fact in found_facts:
            if fact is not None and layout.is_fact(fact):
                keys.append((fact.namespace, fact.key))
                by_namespace.setdefault(fact.namespace, []).append(fact)
    for namespace, facts in by_namespace.items():
        found = yield from versions_of(ctx, namespace, facts)
        keys.extend((v.namespace, v.key) for versions in found.values() for v in versions)
    return list(dict.fromkeys(keys))


WIDEST = 10_000
"""The widest window a search of one user's facts widens to (see :func:`recall`)."""


def _by_search(windows: Mapping[tuple[int, int], int]) -> dict[tuple[int, int], list[int]]:
    """Windows ``(scope, phrasing) -> width`` grouped into one search per scope and width.

    Returns ``(scope, width) -> phrasings`` (indices into the stacked query vectors).
    """
    out: dict[tuple[int, int], list[int]] = {}
    for (scope, query), width in windows.items():
        out.setdefault((scope, width), []).append(query)
    return out


def _rank(entry: tuple[str, Hit]) -> tuple[float, str]:
    """The order of recall's answer: best score first, ties by fact id.

    Equal scores came back in the engine's order (insertion in memory and Qdrant,
    namespace and key in SQLite, Postgres and a vectorstore): one store answered
    otherwise on each engine, and after a rewrite of a fact.
    """
    fact_id, hit = entry
    return (-(hit.score or 0.0), fact_id)


def _merge(
    best: dict[str, Hit],
    hits: Sequence[Hit],
    namespace: tuple[str, ...],
    min_score: float | None,
    as_of: datetime | None,
) -> None:
    """Keep each fact's best-scoring hit (its text or a version's) in ``best``.

    Of texts of one fact scoring the same, the one with the least key (the current text's
    before its versions'), whatever order the engine listed them in.

    With ``as_of``, a current text counts only if it began by then as every read takes its
    ``valid_from`` (``layout.valid_from``: the item's last write when it has none or one
    that reads as no time; see :func:`_scopes`).
    """
    for hit in hits:
        if hit.score is None or (min_score is not None and hit.score < min_score):
            continue
        if hit.item.namespace != namespace:  # an item of a child namespace
            continue
        if not isinstance(hit.item.value.get("content"), str):
            continue  # a client's item with a structured content: no fact
        item = hit.item
        if as_of is not None and not layout.is_version(item) and layout.valid_from(item) > as_of:
            continue
        fact_id = str(item.value["version_of"]) if layout.is_version(item) else item.key
        seen = best.get(fact_id)
        if seen is None or (-hit.score, item.key) < (-(seen.score or 0.0), seen.item.key):
            best[fact_id] = hit


def may_have_more(hits: Sequence[Hit], window: int, min_score: float | None = None) -> bool:
    """Whether a wider window could find more ranked hits above ``min_score`` than ``hits``.

    Not when the window was not filled, nor when it ends in unscored items (the engine
    lists them after every ranked one: the ranked hits ran out).
    """
    if len(hits) < window:
        return False
    last = hits[-1].score
    return last is not None and (min_score is None or last >= min_score)


def _phrasings(ctx: FactContext, queries: str | Sequence[str]) -> list[str]:
    """The distinct phrasings of ``queries``: a str, or a list or tuple of str.

    Anything else is refused by its type, as ``remember`` refuses it: ``bytes`` was read
    as a list of ints ("got int"), ``None`` or a number raised a bare ``TypeError``, and a
    dict or a set was searched by its keys.
    """
    if not isinstance(queries, (str, list, tuple)):
        raise InvalidFactError(
            f"queries must be a str or a list of str, got {type(queries).__name__}."
        )
    phrasings = [queries] if isinstance(queries, str) else list(queries)
    if not phrasings:
        raise InvalidFactError("recall needs at least one query.")
    if len(phrasings) > ctx.max_queries:
        raise InvalidFactError(
            f"recall got {len(phrasings)} phrasings; the limit is {ctx.max_queries}. "
            "Two or three phrasings of one question are enough."
        )
    return list(dict.fromkeys(validate_text(q, "query", ctx.max_fact_chars) for q in phrasings))


def _scopes(include_history: bool, as_of: datetime | None) -> list[Filter]:
    """The filters to search: current facts, every text, or what was true at ``as_of``.

    At ``as_of``: versions valid then, and current facts, less those the engine can tell
    began later: a ``valid_from`` in the store's own format (what ``remember`` and every
    rewrite write) after ``as_of``. A fact with no ``valid_from`` (a client's ``put`` of a
    new key, LangMem's create) or one of a client's own in another form (an offset,
    ``"yesterday"``, a number: compared as text, they were found or missed by the letters)
    is checked by :func:`_merge`, as ``list_all`` and ``history`` read it.
    """
    if as_of is None:
        return [layout.ANY_TEXT if include_history else layout.CURRENT_FACTS]
    moment = layout.format_time(as_of)
    return [
        (*layout.CURRENT_FACTS, Condition(("valid_from",), "$not_after", moment)),
        (
            *layout.VERSIONS,
            Condition(("valid_from",), "$lte", moment),
            Condition(("valid_to",), "$gt", moment),
        ),
    ]


def versions_of(
    ctx: FactContext,
    namespace: tuple[str, ...],
    items: Sequence[StoredItem],
    alive_at: datetime | None = None,
) -> Logic[dict[str, list[StoredItem]]]:
    """Version items of the given facts (one search, only for facts that may have some).

    ``alive_at``: leave out versions expired by then (what reads show); ``None``: every
    stored one (what a write renumbers and rewrites).
    """
    keys = [i.key for i in items if layout.may_have_versions(i)]
    return (yield from versions_by_fact(ctx, namespace, keys, alive_at))


def versions_by_fact(
    ctx: FactContext,
    namespace: tuple[str, ...],
    fact_ids: Sequence[str],
    alive_at: datetime | None = None,
) -> Logic[dict[str, list[StoredItem]]]:
    """Version items of these fact ids, whatever the facts count (one search, none for none).

    For a write that must see every stored version (a client's put or delete of a fact,
    ``forget``): a count a client copied into a value can be stale.
    """
    keys = list(dict.fromkeys(fact_ids))
    out: dict[str, list[StoredItem]] = {k: [] for k in keys}
    if keys:
        request = SearchRequest(
            namespace, None, (Condition(("version_of",), "$in", keys),), None, 0, alive_at
        )
        (hits,) = yield call(ctx.backend, "search", request)
        for hit in hits:
            # not an item of a child namespace, nor a client's with a version_of field
            if hit.item.namespace == namespace and layout.is_version(hit.item):
                out.setdefault(str(hit.item.value["version_of"]), []).append(hit.item)
    return out


def list_all(ctx: FactContext, user_id: str, refresh_ttl: bool | None = None) -> Logic[list[Fact]]:
    """The logic of ``LongTermMemoryStore.list_all``: facts and versions in one search.

    The facts are refreshed (:func:`refreshed`) unless ``refresh_ttl`` is ``False``.
    """
    namespace = ctx.user_namespace(user_id)
    now = _clock.utcnow()
    (hits,) = yield call(
        ctx.backend, "search", SearchRequest(namespace, None, layout.ANY_TEXT, None, 0, now)
    )
    versions: dict[str, list[StoredItem]] = {}
    facts: dict[str, StoredItem] = {}
    for hit in hits:
        if hit.item.namespace != namespace:  # an item of a child namespace
            continue
        if layout.is_version(hit.item):
            versions.setdefault(str(hit.item.value["version_of"]), []).append(hit.item)
        elif layout.is_fact(hit.item):  # not a client's item with a structured content
            facts[hit.item.key] = hit.item
    facts, versions = yield from refreshed(ctx, refresh_ttl, facts, versions, now)
    out = [layout.fact_from_items(i, user_id, versions.get(i.key, ())) for i in facts.values()]
    out.sort(key=lambda f: (f.created_at, f.id))
    return out


def pinned(ctx: FactContext, user_id: str, refresh_ttl: bool | None = None) -> Logic[list[Fact]]:
    """The user's pinned facts, oldest first (one filtered search, nothing embedded).

    Refreshed (:func:`refreshed`) unless ``refresh_ttl`` is ``False``.
    """
    namespace = ctx.user_namespace(user_id)
    now = _clock.utcnow()
    (hits,) = yield call(
        ctx.backend, "search", SearchRequest(namespace, None, layout.PINNED, None, 0, now)
    )
    items = {
        h.item.key: h.item for h in hits if h.item.namespace == namespace and layout.is_fact(h.item)
    }
    histories = yield from versions_of(ctx, namespace, list(items.values()), now)
    items, histories = yield from refreshed(ctx, refresh_ttl, items, histories, now)
    facts = [layout.fact_from_items(i, user_id, histories.get(k, ())) for k, i in items.items()]
    facts.sort(key=lambda f: (f.created_at, f.id))
    return facts


def history(
    ctx: FactContext, user_id: str, fact_id: str, refresh_ttl: bool | None = None
) -> Logic[list[FactVersion]]:
    """The logic of ``LongTermMemoryStore.history`` (refreshed as :func:`list_all`)."""
    namespace = ctx.user_namespace(user_id)
    check_id(fact_id)
    if not encodes_as_utf8(fact_id):  # a lone surrogate (a model's JSON): no stored key
        return []
    (item,) = yield call(ctx.backend, "get", [(namespace, fact_id)])
    now = _clock.utcnow()
    if item is None or not is_alive(item, now):
        return []
    if not layout.is_fact(item):
        return []
    found = yield from versions_of(ctx, namespace, [item], now)
    facts, found = yield from refreshed(ctx, refresh_ttl, {fact_id: item}, found, now)
    return list(layout.fact_from_items(facts[fact_id], user_id, found.get(fact_id, ())).versions)


def forget(ctx: FactContext, user_id: str, fact_id: str) -> Logic[bool]:
    """The logic of ``LongTermMemoryStore.forget``: the fact and its versions in one write.

    Under the user's lock, as every write of facts: an update running at the same moment
    either lands before (and is deleted with the fact) or finds the fact gone; it never
    writes the fact back after it was forgotten.

    Only a fact is forgotten: the key of an earlier version (``id@1``, which a search of
    versions returns) or of another client's item without a text ``content`` (a profile, a
    file, LangMem's ``{"content": {...}}``) is not a fact id, and nothing is deleted
    (``False``).

    The answer is what the read under the lock found (the fact was there), not the
    engine's count of deleted rows: a write whose commit answer was lost is retried on a
    fresh connection (Postgres), and the retry, finding the rows gone, deletes none.

    A fact whose TTL has passed (not yet swept) is gone for the fact API: its rows are
    deleted all the same, and the answer is ``False``, as ``update_fact`` and ``history``
    find no such fact (it said ``True``, and the ``forget_fact`` tool "deleted").
    """
    namespace = ctx.user_namespace(user_id)
    check_id(fact_id)
    if not encodes_as_utf8(fact_id):  # a lone surrogate (a model's JSON): no stored key
        return False
    held = yield from ctx.locks.acquire(ctx.backend, namespace[-1])
    try:
        (item,) = yield call(ctx.backend, "get", [(namespace, fact_id)])
        if item is not None and not layout.is_fact(item):
            return False
        now = _clock.utcnow()
        found = yield from versions_by_fact(ctx, namespace, [fact_id])
        versions = [(namespace, v.key) for v in found[fact_id]]
        yield call(ctx.backend, "write", [], [(namespace, fact_id), *versions])
    finally:
        yield from ctx.locks.release(ctx.backend, held)
    return item is not None and is_alive(item, now)


def clear_user(ctx: FactContext, user_id: str) -> Logic[int]:
    """The logic of ``LongTermMemoryStore.clear_user`` (under the user's lock).

    Only the user's own namespace: a namespace below it may be another configuration's
    (tools with ``namespace=("memories", "acme")`` keep Bob's facts under
    ``("memories", "acme", "bob")``, below user ``acme``'s), as every read here assumes.

    Returns how many items it found to delete under the lock (see :func:`forget`).
    """
    namespace = ctx.user_namespace(user_id)
    held = yield from ctx.locks.acquire(ctx.backend, namespace[-1])
    try:
        (hits,) = yield call(ctx.backend, "search", SearchRequest(namespace, None, (), None, 0))
        keys = [(h.item.namespace, h.item.key) for h in hits if h.item.namespace == namespace]
        if keys:
            yield call(ctx.backend, "write", [], keys)
    finally:
        yield from ctx.locks.release(ctx.backend, held)
    return len(keys)


def check_id(fact_id: object) -> None:
    """Raise ValueError unless ``fact_id`` is a non-empty string."""
    if not isinstance(fact_id, str) or not fact_id:
        raise ValueError(f"fact_id must be a non-empty str, got {fact_id!r}.")
