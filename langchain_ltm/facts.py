"""Facts: normalization, content hashes and the near-duplicate decision (all pure).

The decision for a batch of new facts is sequential, as if each were remembered alone, but
it needs no I/O between facts: the store fetches, for each new fact, its nearest stored facts
(one vectorized search) and compares the batch with itself (one matrix product).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import numpy as np

from langchain_ltm.backends.base import Hit, StoredItem, Vectors
from langchain_ltm.errors import InvalidFactError

__all__ = ["Fact", "RememberAction", "RememberResult", "content_hash", "normalize_fact"]

RememberAction = Literal["created", "duplicate", "updated", "rejected"]

_SPACE = re.compile(r"\s+")
_TRAILING = re.compile(r"[\s.!?;:,\u2026\u3002]+$")


@dataclass(frozen=True)
class Fact:
    """A fact remembered about one user.

    Attributes:
        id: Stable id (the BaseStore key); the same across semantic updates.
        user_id: The user the fact belongs to.
        content: The fact's current text.
        created_at: When the fact was first remembered.
        updated_at: When its text last changed.
        score: Similarity to the query, for facts returned by ``recall``.
        history: Earlier texts of this fact, oldest first (bounded).

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
    score: float | None = None
    history: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (timestamps in ISO 8601)."""
        return {
            "id": self.id,
            "user_id": self.user_id,
            "content": self.content,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "score": self.score,
            "history": list(self.history),
        }


@dataclass(frozen=True)
class RememberResult:
    """What ``remember`` did with one fact.

    Attributes:
        action: ``created`` (new fact), ``duplicate`` (the same fact was already stored),
            ``updated`` (a stored fact was similar enough and now has this text) or
            ``rejected`` (not stored; ``reason`` says why).
        fact: The stored fact after the action (``None`` when rejected).
        previous: The text the fact had before an update.
        similarity: Cosine similarity to the matched fact (duplicates: 1.0).
        reason: Why a fact was rejected, in words a model can act on.

    Example:
        >>> RememberResult(action="rejected", fact=None, reason="looks like a password").action
        'rejected'
    """

    action: RememberAction
    fact: Fact | None
    previous: str | None = None
    similarity: float | None = None
    reason: str | None = None


def normalize_fact(text: str) -> str:
    """The form exact dedup compares: NFKC, case-folded, single spaces, no trailing punctuation.

    Example:
        >>> normalize_fact("  I  prefer Spanish!! ")
        'i prefer spanish'
    """
    text = unicodedata.normalize("NFKC", text).casefold()
    return _TRAILING.sub("", _SPACE.sub(" ", text).strip())


def content_hash(text: str) -> str:
    """Hash of the normalized text (hex, 32 characters)."""
    return hashlib.sha256(normalize_fact(text).encode("utf-8")).hexdigest()[:32]


def validate_text(text: Any, what: str, max_chars: int) -> str:
    """Return ``text`` if it is storable, else raise InvalidFactError saying what to change."""
    if not isinstance(text, str):
        raise InvalidFactError(f"{what} must be a str, got {type(text).__name__}.")
    if not text.strip():
        raise InvalidFactError(f"{what} is empty: pass some text.")
    if len(text) > max_chars:
        raise InvalidFactError(
            f"{what} is {len(text):,} characters long; the limit is {max_chars:,}. "
            "Store one short fact per call (split long text into several facts)."
        )
    if "\x00" in text:
        raise InvalidFactError(f"{what} contains a NUL character; remove it.")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidFactError(f"{what} is not valid Unicode (it has a lone surrogate).") from exc
    if not normalize_fact(text):
        raise InvalidFactError(f"{what} has no content once punctuation is removed.")
    return text


def fact_from_item(item: StoredItem, user_id: str, score: float | None = None) -> Fact:
    value = item.value
    return Fact(
        id=item.key,
        user_id=user_id,
        content=str(value["content"]),
        created_at=item.created_at,
        updated_at=item.updated_at,
        score=score,
        history=tuple(value.get("history") or ()),
    )


def fact_value(
    content: str, history: Sequence[str], base: Mapping[str, Any] | None
) -> dict[str, Any]:
    value = dict(base or {})
    value.update(content=content, content_hash=content_hash(content), history=list(history))
    return value


@dataclass
class FactState:
    """A fact touched by this batch."""

    key: str
    content: str
    row: int  # batch row holding its current vector
    history: list[str]
    base: StoredItem | None  # the stored item it updates, if any


@dataclass
class Decision:
    action: RememberAction
    key: str
    row: int
    previous: str | None = None
    similarity: float | None = None


@dataclass
class BatchDecision:
    decisions: list[Decision]
    touched: dict[str, FactState] = field(default_factory=dict)


def decide_batch(
    texts: Sequence[str],
    hashes: Sequence[str],
    vectors: Vectors,
    exact: Mapping[str, StoredItem],
    neighbours: Sequence[Sequence[Hit]],
    taken_keys: set[str],
    new_key: Any,
    threshold: float,
    history_limit: int,
) -> BatchDecision:
    """Decide created / duplicate / updated for each text, in order.

    Args:
        texts: The new facts (already validated), one per row of ``vectors``.
        hashes: Their content hashes (:func:`content_hash`), aligned with ``texts``.
        vectors: Their unit-length embeddings.
        exact: Stored facts of the user by content hash.
        neighbours: For each row, the user's nearest stored facts, best first.
        taken_keys: Deterministic keys that already exist in the user's namespace.
        new_key: ``new_key(hash) -> str``, the deterministic key for a new fact.
        threshold: Cosine similarity from which a fact updates a stored one.
        history_limit: How many earlier texts a fact keeps.
    """
    batch_sims = vectors @ vectors.T if len(texts) > 1 else np.ones((1, 1), dtype=np.float32)
    out = BatchDecision(decisions=[])
    by_hash: dict[str, str] = {h: item.key for h, item in exact.items()}
    for i, (text, digest) in enumerate(zip(texts, hashes, strict=True)):
        if digest in by_hash:
            key = by_hash[digest]
            out.decisions.append(Decision("duplicate", key, i, similarity=1.0))
            continue
        best_key, best_score, best_item = None, -2.0, None
        for hit in neighbours[i]:
            if hit.item.key in out.touched or hit.score is None:
                continue
            if hit.score > best_score:
                best_key, best_score, best_item = hit.item.key, hit.score, hit.item
            break  # hits are sorted: the first untouched one is the best stored candidate
        for key, other in out.touched.items():
            score = float(batch_sims[i, other.row])
            if score > best_score:
                best_key, best_score, best_item = key, score, None
        if best_key is not None and best_score >= threshold:
            state: FactState | None = out.touched.get(best_key)
            if state is None:
                assert best_item is not None
                stored = best_item.value
                state = FactState(
                    key=best_key,
                    content=str(stored["content"]),
                    row=i,
                    history=list(stored.get("history") or ()),
                    base=best_item,
                )
                out.touched[best_key] = state
                by_hash.pop(str(stored.get("content_hash")), None)
            else:
                by_hash.pop(content_hash(state.content), None)
            previous = state.content
            state.history = [*state.history, previous][-history_limit:] if history_limit else []
            state.content, state.row = text, i
            by_hash[digest] = best_key
            out.decisions.append(
                Decision("updated", best_key, i, previous=previous, similarity=best_score)
            )
            continue
        key = new_key(digest)
        if key in taken_keys or key in out.touched:
            key = str(uuid.uuid4())
        out.touched[key] = FactState(key=key, content=text, row=i, history=[], base=None)
        by_hash[digest] = key
        out.decisions.append(Decision("created", key, i))
    return out


def merge_hits(per_query: Sequence[Sequence[Hit]], limit: int) -> list[Hit]:
    """Merge the answers to several phrasings: each item once, at its best score."""
    best: dict[tuple[tuple[str, ...], str], Hit] = {}
    for hits in per_query:
        for hit in hits:
            if hit.score is None:
                continue
            ident = (hit.item.namespace, hit.item.key)
            seen = best.get(ident)
            if seen is None or (seen.score is not None and hit.score > seen.score):
                best[ident] = hit
    ranked = sorted(best.values(), key=lambda h: h.score or 0.0, reverse=True)
    return ranked[:limit]
