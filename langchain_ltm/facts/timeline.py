"""Where new texts of a fact go among its versions, by when they were said (pure).

A write gives a fact one or more new texts (``remember`` merging into it, ``update_fact``),
each said at a moment: ``observed_at``, else the time of the write. The fact's texts form a
timeline ordered by ``valid_from``; each new text is placed after every text said at or
before its moment:

- Said after the current text (the usual case): it becomes current, and the old current
  text becomes a version valid until that moment.
- Said earlier (an out-of-order backfill): it becomes an earlier version, valid until the
  next text's ``valid_from``; the text before it (if any) now ends at its moment. The
  current text stays current. Versions after it are renumbered so numbers follow time.
- The same text said at the same moment as a *stored* text, or at a moment it held, is
  already recorded: nothing changes (re-running a backfill is idempotent). A text this
  write adds at the same moment never counts: in one batch "one kid", "two kids", "one
  kid" (said at one moment) ends on "one kid", the last word.
- Said just before the same text began (no other text between), that text has held since
  then: its start moves back. Said while another text held, it is an earlier version
  there, even if it is the current text too ("one kid" 2022, "two kids" 2021, "one kid"
  2020 are three versions): :func:`holds` is the rule, the same in every split of a batch.

A new text stores only the metadata its caller gave (nothing is inherited from the text it
follows, which keeps its own). Nothing gets a negative interval: a text ends at the next
one's start, never before its own. ``history_limit`` prunes the oldest stored versions,
never a text this write adds: a backfill older than everything kept stays (the history is
then longer than the limit until the next write prunes it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from langchain_ltm.backends.base import StoredItem
from langchain_ltm.facts import versions as layout
from langchain_ltm.facts.model import FactVersion
from langchain_ltm.facts.text import content_hash

__all__ = ["Entry", "Said", "Timeline", "holds", "place"]


@dataclass(frozen=True)
class Said:
    """A new text of the fact: its batch row, when it was said, the metadata given."""

    content: str
    row: int
    at: datetime
    metadata: Mapping[str, Any]


@dataclass
class Entry:
    """One text on the timeline; ``number`` is its stored version number (``None``: none)."""

    content: str
    valid_from: datetime
    valid_to: datetime | None
    metadata: dict[str, Any]
    number: int | None = None
    row: int = -1  # the batch row of a new text (-1: stored)
    changed: bool = False  # valid_to moved, or not stored as a version yet
    expires_at: datetime | None = None  # a stored version's own expiry, kept when rewritten
    ttl_minutes: float | None = None

    def version(self) -> FactVersion:
        """This text as a :class:`FactVersion`."""
        return FactVersion(
            self.content,
            self.valid_from,
            self.valid_to,
            dict(self.metadata),
            self.expires_at,
            self.ttl_minutes,
        )


@dataclass
class Timeline:
    """The fact after the write: its versions (oldest first) and its current text."""

    versions: list[Entry]
    current: Entry
    created_at: datetime
    writes: list[Entry] = field(default_factory=list)  # versions to (re)write, numbered
    deletes: list[int] = field(default_factory=list)  # version numbers to delete
    recorded: set[int] = field(default_factory=set)  # rows already on the timeline
    changed: bool = False  # anything to write at all

    @property
    def count(self) -> int:
        """The fact's ``versions`` field: the highest version number."""
        return max((e.number or 0 for e in self.versions), default=0)

    def history(self) -> tuple[FactVersion, ...]:
        """The earlier versions, oldest first."""
        return tuple(e.version() for e in self.versions)


def place(
    base: StoredItem | None,
    stored: Sequence[StoredItem],
    said: Sequence[Said],
    history_limit: int | None,
) -> Timeline:
    """The timeline of a fact after ``said`` (in order) joins its stored texts.

    Args:
        base: The stored fact (``None``: a new fact made of ``said``).
        stored: Its version items.
        said: The new texts, in the order they were decided.
        history_limit: Most versions kept (the oldest go); ``None``: all.
    """
    line: list[Entry] = []
    created = said[0].at if said else None
    if base is not None:
        line += [  # 0.1.0 inline history: written as version items now
            Entry(v.content, v.valid_from, v.valid_to, {}, changed=True)
            for v in layout.legacy_history(base)
        ]
        for item in sorted(stored, key=lambda v: int(v.value.get("version") or 0)):
            v = layout.to_version(item)
            number = int(item.value.get("version") or 0)
            line.append(
                Entry(
                    v.content,
                    v.valid_from,
                    v.valid_to,
                    dict(v.metadata),
                    number,
                    expires_at=v.expires_at,
                    ttl_minutes=v.ttl_minutes,
                )
            )
        line.append(
            Entry(
                str(base.value["content"]),
                layout.valid_from(base),
                None,
                layout.metadata_of(base.value),
            )
        )
        created = base.created_at
    out = Timeline([], line[-1] if line else _entry(said[0]), created or said[0].at)
    for new in said:
        digest = content_hash(new.content)
        if holds(line, new.content, new.at) or any(
            e.row < 0 and e.valid_from == new.at and content_hash(e.content) == digest for e in line
        ):
            out.recorded.add(new.row)
            continue
        at = len(line)
        while at > 0 and line[at - 1].valid_from > new.at:
            at -= 1
        before = line[at - 1] if at else None
        if at < len(line) and content_hash(line[at].content) == digest:
            # said before the text it is: that text has held since (its start moves back),
            # unless another text began at that very moment (it would hold for no time)
            out.recorded.add(new.row)
            if before is not None and before.valid_from >= new.at:
                continue
            line[at].valid_from, line[at].changed = new.at, True
            if before is not None and (before.valid_to is None or before.valid_to > new.at):
                before.valid_to, before.changed = new.at, True
            out.changed = True
            out.created_at = min(out.created_at, new.at)
            continue
        entry = _entry(new)
        if at < len(line):
            entry.valid_to = line[at].valid_from
        if before is not None and (before.valid_to is None or before.valid_to > new.at):
            before.valid_to, before.changed = new.at, True
        line.insert(at, entry)
        out.changed = True
        out.created_at = min(out.created_at, new.at)
    out.current = line[-1]
    versions = line[:-1]
    if history_limit is not None and len(versions) > history_limit:
        # the oldest stored versions go; a text this write adds is never pruned by it
        oldest = {id(e) for e in versions[: len(versions) - history_limit] if e.row < 0}
        out.deletes += [e.number for e in versions if id(e) in oldest and e.number is not None]
        versions = [e for e in versions if id(e) not in oldest]
    last = 0
    for entry in versions:
        if entry.number is None or entry.number <= last or entry.changed:
            if entry.number is None or entry.number <= last:
                if entry.number is not None:
                    out.deletes.append(entry.number)
                entry.number = last + 1
            entry.changed = True
            out.writes.append(entry)
        last = entry.number
    kept = {e.number for e in versions}
    out.deletes = sorted({n for n in out.deletes if n not in kept})
    out.versions = versions
    out.changed = out.changed or bool(out.writes)
    return out


def holds(texts: Sequence[Entry | FactVersion], text: str, at: datetime) -> bool:
    """Whether ``text`` is the text of ``texts`` (a fact's timeline) holding at ``at``.

    Said then, it is already recorded (a duplicate). Said at a moment another text of the
    timeline held (or before every one), it is not: it is placed there, an earlier version.
    """
    digest = content_hash(text)
    return any(
        e.valid_from <= at
        and (e.valid_to is None or at < e.valid_to)
        and content_hash(e.content) == digest
        for e in texts
    )


def _entry(new: Said) -> Entry:
    return Entry(new.content, new.at, None, dict(new.metadata), row=new.row, changed=True)
