"""What the fact API hands out: facts, their versions, recall hits, remember results."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast

__all__ = [
    "Fact",
    "FactVersion",
    "RecalledFact",
    "RememberAction",
    "RememberResult",
    "SimilarFact",
]

RememberAction = Literal["created", "duplicate", "updated", "rejected"]
"""What ``remember`` did with a fact: stored it new, found it stored, versioned one, refused it."""


@dataclass(frozen=True)
class FactVersion:
    """One text a fact had, and when it was its text.

    Attributes:
        content: The text of this version.
        valid_from: When it became the fact's text: when it was said
            (``remember(..., observed_at=)``), else when it was remembered.
        valid_to: When a newer version replaced it (``None`` for the current version).
        metadata: The metadata this text was remembered with (``remember(..., metadata=)``).
        expires_at: When this text expires (``None``: it lasts). The current text expires
            with its fact (``Fact.expires_at``); an earlier one with its fact, or on its own:
            a fact said again for good keeps the expiry its earlier texts had.
        ttl_minutes: How far each read pushes ``expires_at`` (``None`` without a TTL).

    Example:
        >>> from datetime import datetime, timezone
        >>> v = FactVersion("lives in Paris", datetime(2024, 1, 1, tzinfo=timezone.utc), None)
        >>> v.is_current
        True
    """

    content: str
    valid_from: datetime
    valid_to: datetime | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    expires_at: datetime | None = None
    ttl_minutes: float | None = None

    @property
    def is_current(self) -> bool:
        """Whether this is the fact's current text."""
        return self.valid_to is None

    def valid_at(self, moment: datetime) -> bool:
        """Whether this was the fact's text at ``moment``."""
        return self.valid_from <= moment and (self.valid_to is None or moment < self.valid_to)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (timestamps in ISO 8601); the expiry only when it has one."""
        out: dict[str, Any] = {
            "content": self.content,
            "valid_from": self.valid_from.isoformat(),
            "valid_to": self.valid_to.isoformat() if self.valid_to else None,
            "metadata": dict(self.metadata),
        }
        if self.expires_at is not None:
            out["expires_at"] = self.expires_at.isoformat()
            out["ttl_minutes"] = self.ttl_minutes
        return out


@dataclass(frozen=True)
class Fact:
    """A fact remembered about one user.

    Attributes:
        id: Stable id (the BaseStore key); the same across versions.
        user_id: The user the fact belongs to.
        content: The fact's current text.
        created_at: When the fact was first said (``remember(..., observed_at=)``), else
            first remembered.
        updated_at: When it was last written.
        history: Every earlier version, oldest first (nothing is dropped unless pruned).
        valid_from: When the current text became the fact's text; always a datetime
            (left out when building a ``Fact`` by hand: ``created_at``).
        metadata: Any other fields stored in the item's value: the current text's
            ``remember(..., metadata=)`` (kept by export and import; each earlier version
            keeps its own).
        pinned: Always shown to the model by ``MemoryMiddleware`` (a profile fact).
        expires_at: When the fact (with its versions) expires (``remember(..., ttl=)``);
            ``None``: never.
        ttl_minutes: The fact's TTL: how far each read (with refresh on read: ``recall``,
            ``pinned``, ``list_all``, ``history``, ``store.get``/``search``; not
            ``export_user``) or write pushes ``expires_at``; ``None``: no TTL.

    Example:
        >>> from datetime import datetime, timezone
        >>> now = datetime.now(timezone.utc)
        >>> Fact(id="f1", user_id="u1", content="likes tea", created_at=now, updated_at=now).content
        'likes tea'
    """

    id: str
    user_id: str
    content: str
    created_at: datetime
    updated_at: datetime
    history: tuple[FactVersion, ...] = ()
    # typed datetime, as every fact the store returns has one; a Fact built without it
    # gets created_at (__post_init__): a datetime default cannot follow from another field
    valid_from: datetime = field(default=cast("datetime", None))
    metadata: Mapping[str, Any] = field(default_factory=dict)
    pinned: bool = False
    expires_at: datetime | None = None
    ttl_minutes: float | None = None

    def __post_init__(self) -> None:
        if self.valid_from is None:
            object.__setattr__(self, "valid_from", self.created_at)  # frozen

    @property
    def versions(self) -> tuple[FactVersion, ...]:
        """Every version including the current one, oldest first."""
        current = FactVersion(
            self.content, self.valid_from, None, self.metadata, self.expires_at, self.ttl_minutes
        )
        return (*self.history, current)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form with every field (timestamps in ISO 8601): what export writes."""
        return {
            "id": self.id,
            "user_id": self.user_id,
            "content": self.content,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "valid_from": self.valid_from.isoformat(),
            "history": [version.to_dict() for version in self.history],
            "metadata": dict(self.metadata),
            "pinned": self.pinned,
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
            "ttl_minutes": self.ttl_minutes,
        }


@dataclass(frozen=True)
class RecalledFact(Fact):
    """A fact returned by ``recall``, with its similarity to the query.

    Attributes:
        score: Best cosine similarity between the fact and any of the phrasings.
        superseded: ``True`` when the hit is an earlier version (``include_history=True`` or
            ``as_of``): ``content`` is then that version's text, valid until ``valid_to``.
        valid_to: When the returned text stopped being the fact's text (``None``: current).

    Example:
        >>> from datetime import datetime, timezone
        >>> now = datetime.now(timezone.utc)
        >>> RecalledFact("f1", "u1", "likes tea", now, now, score=0.9).score
        0.9
    """

    score: float = 0.0
    superseded: bool = False
    valid_to: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, with the score and whether the hit is an earlier version."""
        out = super().to_dict()
        out.update(
            score=self.score,
            superseded=self.superseded,
            valid_to=self.valid_to.isoformat() if self.valid_to else None,
        )
        return out


@dataclass(frozen=True)
class SimilarFact:
    """A stored fact close to a new one that ``remember`` did not merge on its own.

    Attributes:
        id: The stored fact's id (pass it to ``update_fact`` to replace it).
        content: Its current text.
        score: Cosine similarity to the new fact.
        reason: Why it was not merged: ``"different_subject"`` (about another person or
            thing), ``"loses_information"`` (the new text does not carry everything the
            stored one says: a name, object, number, plan or event would be hidden), or
            ``"uncertain"`` (it does, but the two are not similar enough to be sure).

    Example:
        >>> SimilarFact("f1", "My sister is allergic to peanuts", 0.86, "different_subject").id
        'f1'
    """

    id: str
    content: str
    score: float
    reason: str = "uncertain"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "id": self.id,
            "content": self.content,
            "score": round(self.score, 3),
            "reason": self.reason,
        }


@dataclass(frozen=True)
class RememberResult:
    """What ``remember`` did with one fact.

    Attributes:
        action: ``created`` (new fact), ``duplicate`` (the same fact was already stored),
            ``updated`` (a stored fact got this text as its new version; the old text stays
            in its history) or ``rejected`` (not stored; ``reason`` says why).
        fact: The stored fact after the action (``None`` when rejected). For several texts
            in one call, it is the fact as the whole call left it: rows that name one fact
            get the same fact, so a row's own text (the one at its index) may be an
            earlier version by then ("I have one kid", "I have two kids": both rows show
            "I have two kids", the first row ``created``).
        previous: The text the fact had before an update.
        similarity: Cosine similarity to the matched fact (exact duplicates: 1.0).
        similar: Stored facts close to a ``created`` one that were not merged because the
            decision was uncertain: both are kept, and the caller (or the agent, through the
            ``update_fact`` tool) can decide.
        reason: Why a fact was rejected, in words a model can act on; for an
            ``update_fact`` answered ``duplicate`` because another fact holds the text,
            why that fact was not merged (it has earlier versions, or it lasts longer than
            the updated fact would from now).
        merged: ``update_fact`` only: the id of another fact that held the new text (with
            no earlier versions). It was merged into this one, its text now this fact's
            current version, and deleted in the same write.

    Example:
        >>> RememberResult(action="rejected", fact=None, reason="looks like a password").action
        'rejected'
    """

    action: RememberAction
    fact: Fact | None
    previous: str | None = None
    similarity: float | None = None
    similar: tuple[SimilarFact, ...] = ()
    reason: str | None = None
    merged: str | None = None
