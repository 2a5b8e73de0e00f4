"""A client's BaseStore ``put`` over a fact: the text it replaces is kept as a version.

LangMem's update action, or any client that rewrites an item of a user's namespace by its
key, puts a new ``content`` over a fact. Written as it came, the fact's earlier text was
gone; ``update_fact`` would have kept it. Here such a put writes the replaced text as the
fact's newest earlier version (``{fact_id}@{n}``) in the same write, under the user's lock
(as every write of facts), so ``history``, ``recall(include_history=True)`` and exports
still have it.

A batch reads the items its puts into user namespaces overwrite (one ``get``); when none of
them replaces a text, it is written as before, with no lock. Otherwise each user whose
facts are replaced is written on its own, under that user's lock, after reading the
items again: a batch replacing facts of several users is several writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from langchain_ltm._steps import Logic, call
from langchain_ltm.backends.base import ItemKey, Record, StoredItem, is_alive
from langchain_ltm.facts import versions as layout
from langchain_ltm.facts.context import FactContext
from langchain_ltm.facts.reads import versions_of
from langchain_ltm.facts.text import content_hash

__all__ = ["write_puts"]


def write_puts(
    ctx: FactContext, upserts: list[Record], deletes: list[ItemKey], now: datetime
) -> Logic[None]:
    """Write a batch's puts and deletes, keeping every fact text a put replaces."""
    candidates = [r for r in upserts if _may_replace(ctx, r)]
    found = (yield call(ctx.backend, "get", _keys(candidates))) if candidates else []
    users = sorted(
        {
            r.namespace[-1]
            for item, r in zip(found, candidates, strict=True)
            if _replaces(item, r, now)
        }
    )
    if not users:
        yield call(ctx.backend, "write", upserts, deletes)
        return
    mine = {label: [r for r in candidates if r.namespace[-1] == label] for label in users}
    locked = {id(r) for records in mine.values() for r in records}
    rest = [r for r in upserts if id(r) not in locked]
    if rest or deletes:
        yield call(ctx.backend, "write", rest, deletes)
    for label, records in mine.items():
        held = yield from ctx.locks.acquire(ctx.backend, label)
        try:
            items = yield call(ctx.backend, "get", _keys(records))  # again, under the lock
            replaced = [(i, r) for i, r in zip(items, records, strict=True) if _replaces(i, r, now)]
            kept = (yield from _kept_texts(ctx, replaced, now)) if replaced else []
            yield call(ctx.backend, "write", [*records, *kept], [])
        finally:
            yield from ctx.locks.release(ctx.backend, held)


def _may_replace(ctx: FactContext, record: Record) -> bool:
    """A put into a user's namespace whose value is a fact (a text ``content``)."""
    namespace = record.namespace
    return (
        len(namespace) == len(ctx.namespace) + 1
        and tuple(namespace[:-1]) == ctx.namespace
        and isinstance(record.value.get("content"), str)
        and "version_of" not in record.value
    )


def _replaces(item: StoredItem | None, record: Record, now: datetime) -> bool:
    """Whether writing ``record`` over ``item`` replaces a live fact's text with another."""
    if item is None or not is_alive(item, now) or layout.is_version(item):
        return False
    old = item.value.get("content")
    return isinstance(old, str) and content_hash(old) != content_hash(record.value["content"])


def _kept_texts(
    ctx: FactContext, replaced: Sequence[tuple[StoredItem | None, Record]], now: datetime
) -> Logic[list[Record]]:
    """The replaced texts as the facts' newest versions (numbered after every stored one)."""
    facts = [item for item, _ in replaced if item is not None]
    stored = yield from versions_of(ctx, facts[0].namespace, facts)
    texts = [str(item.value["content"]) for item in facts]
    vectors = yield call(ctx.embedder, "embed", texts, False)
    out = []
    for row, (item, record) in enumerate(replaced):
        assert item is not None
        numbers = [int(v.value["version"]) for v in stored.get(item.key, ())]
        number = max([*numbers, layout.version_count(item), 0]) + 1
        out.append(
            Record(
                namespace=item.namespace,
                key=layout.version_key(item.key, number),
                value=layout.version_value(
                    item.key,
                    number,
                    texts[row],
                    layout.valid_from(item),
                    now,
                    layout.metadata_of(item.value),
                ),
                texts=(texts[row],),
                paths=("content",),
                vectors=vectors[row : row + 1],
                now=now,
                ttl_minutes=record.ttl_minutes,  # versions expire with their fact
            )
        )
    return out


def _keys(records: Sequence[Record]) -> list[ItemKey]:
    return [(r.namespace, r.key) for r in records]
