"""The write decision for a batch of new facts: duplicate, updated, or created (pure).

For each new fact, in order, as if each were remembered alone:

1. Its normalized text is already a current fact: ``duplicate``, unless it was said before
   that text began (``moments``): then it is an ``updated`` of that fact, which its timeline
   places (an earlier version then, the text's start moved back, or a ``duplicate`` of a
   text holding then), so a split of the same texts into calls ends alike.
2. Its nearest fact that it may replace scores at least ``merge_threshold``, or at least
   ``review_threshold`` when the two say the same words with another number, date or
   polarity (and a content word names what changed: "I'm 34" / "I'm 35" needs
   ``merge_threshold``): ``updated`` (a new version; the old text is kept). A fact may
   replace another only when both are about the same subject
   (:mod:`~langchain_ltm.facts.conflicts`) and the new text carries everything the old one
   said, or states the same attribute with a new value
   (:mod:`~langchain_ltm.facts.coverage`): an update never hides information.
   A text said *before* the fact's current text (a backfill: ``moments``) becomes an
   earlier version while the stored text stays current, so the direction flips: it may
   join only if the stored text carries everything it says, or it states the same
   attribute with another (older) value; otherwise it is a fact of its own.
3. Some fact scores at least ``review_threshold`` but (1) and (2) do not hold: the case is
   *ambiguous*. A resolver, if one is configured, is asked once for every ambiguous fact
   of the batch; its answer is applied by deciding the batch again. Without one the fact
   is ``created`` and the close facts are listed as ``similar``: both are kept.
4. Otherwise: ``created``.

No I/O happens between facts: the store fetches each new fact's nearest stored facts in
one vectorized search, and the batch is compared with itself with one matrix product.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from langchain_ltm.backends.base import Hit, StoredItem, Vectors
from langchain_ltm.facts.conflicts import ENTITY_WORDS, different_subject
from langchain_ltm.facts.coverage import (
    carries,
    read_words,
    single_valued,
    slot_change,
    value_change,
)
from langchain_ltm.facts.model import RememberAction, SimilarFact
from langchain_ltm.facts.resolution import Ambiguity, Resolution
from langchain_ltm.facts.text import content_hash
from langchain_ltm.facts.versions import valid_from

__all__ = ["DecisionPolicy", "decide_batch"]

_BATCH_CANDIDATES = 16  # earlier facts of the same batch a new one is compared with


@dataclass(frozen=True)
class DecisionPolicy:
    """Thresholds of the write decision (cosine similarities).

    Attributes:
        merge_threshold: From here a fact about the same subject is a new version.
        review_threshold: From here a fact is close enough to be ambiguous (or, differing
            only by a number, date or negation of an attribute a content word names, a new
            version).
        max_similar: Most close facts listed in ``similar`` or shown to a resolver.
        restatements: An extra check, ``restatements(old, new, score) -> bool``, asked
            only when the word check would not let ``new`` replace ``old`` (the subjects
            already agree): whether ``new`` restates ``old`` in other words. ``None``
            (default, and what the stores use): the word check alone. A seam for
            measuring candidate checks (``bench/locomo.py --restatements``); none ships,
            since none measured so far merges restatements without merging some
            different facts too (see the README).

    Example:
        >>> DecisionPolicy(merge_threshold=0.8, review_threshold=0.5).max_similar
        3
    """

    merge_threshold: float
    review_threshold: float
    max_similar: int = 3
    restatements: Callable[[str, str, float], bool] | None = None

    def __post_init__(self) -> None:
        for name in ("merge_threshold", "review_threshold"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not -1.0 <= value <= 1.0:
                raise ValueError(f"{name} is a cosine in [-1, 1], got {value!r}.")
        if self.restatements is not None and not callable(self.restatements):
            raise TypeError(
                "restatements must be None or a callable (old, new, score) -> bool, "
                f"got {type(self.restatements).__name__}."
            )
        if self.review_threshold > self.merge_threshold:
            raise ValueError(
                f"review_threshold ({self.review_threshold}) must not exceed merge_threshold "
                f"({self.merge_threshold}): the ambiguous band lies below the merge threshold."
            )


@dataclass
class FactState:
    """A fact this batch touches: its texts in decision order, and the one that leads.

    ``content``/``row``/``superseded`` follow the order the batch decided its rows in
    (what the writer's chains are built from). ``current``/``current_row``/``current_at``
    are the text its timeline will show as current, the latest said: a row said before it
    (a backfill) becomes an earlier version and leaves it leading, so later rows of the
    batch are compared with it, not with the backfilled text.
    """

    key: str
    content: str
    row: int  # batch row of the last text decided for it (-1: unchanged stored fact)
    base: StoredItem | None  # the stored item it updates, if any
    superseded: list[str] = field(default_factory=list)  # texts replaced by this batch
    current: str = ""  # the leading text ("": ``content``, as made)
    current_row: int = -1  # its batch row (-1: the stored text leads)
    current_at: datetime | None = None  # when it was said (None: now, after every date)

    def __post_init__(self) -> None:
        if not self.current:  # a fact as made leads with its own text
            self.current, self.current_row = self.content, self.row

    def leads_after(self, moment: datetime | None) -> bool:
        """Whether a text said at ``moment`` comes before the leading one (a backfill)."""
        return moment is not None and (self.current_at is None or moment < self.current_at)


@dataclass
class Decision:
    """What happens to one new fact."""

    action: RememberAction
    key: str
    row: int
    previous: str | None = None
    similarity: float | None = None
    similar: tuple[SimilarFact, ...] = ()


@dataclass
class BatchDecision:
    """The decisions of a batch, the facts it writes and the cases left open."""

    decisions: list[Decision]
    touched: dict[str, FactState] = field(default_factory=dict)
    ambiguous: dict[int, Ambiguity] = field(default_factory=dict)
    rows: dict[int, str] = field(default_factory=dict)  # batch row -> the fact it is now


@dataclass
class _Candidate:
    key: str
    content: str
    score: float
    item: StoredItem | None
    said: datetime | None = None  # when its current text was said (None: now)
    # a stored fact with a TTL while the batch has none, or the reverse: never replaced
    # (its texts share one lifetime; a merge would make a lasting text expire, or keep one
    # the user wanted gone)
    other_lifetime: bool = False


def decide_batch(
    texts: Sequence[str],
    hashes: Sequence[str],
    vectors: Vectors,
    exact: Mapping[str, StoredItem],
    neighbours: Sequence[Sequence[Hit]],
    taken_keys: set[str],
    new_key: Callable[[str], str],
    policy: DecisionPolicy,
    resolutions: Mapping[int, Resolution] | None = None,
    moments: Sequence[datetime | None] | None = None,
    ttl: float | None = None,
) -> BatchDecision:
    """Decide created / duplicate / updated for each text, in order.

    Args:
        texts: The new facts (already validated), one per row of ``vectors``.
        hashes: Their content hashes, aligned with ``texts``.
        vectors: Their unit-length embeddings.
        exact: The user's current facts by content hash.
        neighbours: For each row, the user's nearest current facts, best first.
        taken_keys: Deterministic keys that already exist in the user's namespace.
        new_key: ``new_key(hash) -> str``, the deterministic key for a new fact.
        policy: The thresholds.
        resolutions: A resolver's answers by row, from an earlier pass of this batch.
        moments: When each row was said (``observed_at``; ``None``: now). A row said
            before a candidate's current text may only join it as an earlier version
            the current text carries, or as an older value.
        ttl: The TTL the batch is remembered with (``None``: lasting). A stored fact
            whose lifetime is of the other kind (lasting against expiring) is never
            replaced: it is listed in ``similar`` instead.

    Returns:
        The decisions; ``ambiguous`` holds the open cases (rows not in ``resolutions``).
    """
    batch_sims = BatchSimilarities(vectors)
    out = BatchDecision(decisions=[])
    by_hash: dict[str, str] = {h: item.key for h, item in exact.items()}
    backfilled: dict[str, str] = {}  # texts this batch made earlier versions: their facts
    said = list(moments) if moments is not None else [None] * len(texts)
    for i, (text, digest) in enumerate(zip(texts, hashes, strict=True)):
        if digest in by_hash:
            repeat = _repeated_earlier(out, exact.get(digest), by_hash[digest], said[i], ttl)
            if repeat is None:
                out.decisions.append(Decision("duplicate", by_hash[digest], i, similarity=1.0))
                continue
            # its own text said before it began: the timeline places it (an earlier version,
            # or the current text's start moved back, or already recorded then)
            state = _touch(out, repeat.key, [repeat])
            out.decisions.append(Decision("updated", state.key, i, state.current, 1.0))
            state.superseded.append(state.content)
            state.content, state.row = text, i
            continue
        earlier = backfilled.get(digest)
        if earlier is not None and out.touched[earlier].leads_after(said[i]):
            # said again, still before the fact's leading text: that version holds it
            out.decisions.append(Decision("duplicate", earlier, i, similarity=1.0))
            continue
        candidates = _candidates(i, neighbours[i], out, batch_sims, policy, said, ttl)
        resolution = (resolutions or {}).get(i)
        decision = (
            _apply(resolution, text, i, candidates, policy, said[i])
            if resolution is not None
            else _decide(text, i, candidates, policy, said[i])
        )
        if decision is None:  # ambiguous, and no resolver answer for it
            similar = _similar(text, candidates, policy)
            out.ambiguous[i] = Ambiguity(text, similar)
            decision = Decision("created", "", i, similar=similar)
        if decision.action == "created":
            key = new_key(digest)
            if key in taken_keys or key in out.touched:
                import uuid  # here: a read-only command never imports it

                key = str(uuid.uuid4())
            decision.key = key
            out.touched[key] = FactState(key, text, i, None, current_at=said[i])
            out.rows[i] = key
        elif decision.action == "updated":
            state = _touch(out, decision.key, candidates)
            decision.previous = state.current  # the text leading when this one came
            state.superseded.append(state.content)
            state.content, state.row = text, i
            if state.leads_after(said[i]):  # an earlier version: the leading text stays
                backfilled.setdefault(digest, state.key)
                out.decisions.append(decision)
                continue
            by_hash.pop(content_hash(state.current), None)
            out.rows.pop(state.current_row, None)
            state.current, state.current_row, state.current_at = text, i, said[i]
            out.rows[i] = state.key
        by_hash.setdefault(digest, decision.key)
        out.decisions.append(decision)
    return out


class BatchSimilarities:
    """The cosines between a batch's rows, computed a block of rows at a time.

    Rows are decided in order, so row ``i`` needs its cosines with the rows before it: the
    block holding ``i`` is one matrix product, kept until a later row needs the next. A
    whole ``n x n`` matrix was 10 GB at 50,000 texts (and OpenBLAS crashed past 46,341).

    Example:
        >>> v = np.eye(3, dtype=np.float32)
        >>> BatchSimilarities(v).row(1).tolist()
        [0.0, 1.0, 0.0]
    """

    BLOCK = 1024
    """Rows per block: at most ``BLOCK x n`` floats are held (200 MB at 50,000 texts)."""

    def __init__(self, vectors: Vectors) -> None:
        self._vectors = vectors
        self._start = -1
        self._block: np.ndarray[Any, Any] = np.empty((0, len(vectors)), dtype=np.float32)

    def row(self, i: int) -> np.ndarray[Any, Any]:
        """Row ``i``'s cosines with every row of the batch."""
        if not self._start <= i < self._start + len(self._block):
            self._start = i - i % self.BLOCK
            self._block = self._vectors[self._start : self._start + self.BLOCK] @ self._vectors.T
        return self._block[i - self._start]  # type: ignore[no-any-return]


def _candidates(
    row: int,
    hits: Sequence[Hit],
    out: BatchDecision,
    batch_sims: BatchSimilarities,
    policy: DecisionPolicy,
    said: Sequence[datetime | None],
    ttl: float | None = None,
) -> list[_Candidate]:
    """Stored and earlier-in-batch facts scoring at least the review threshold, best first.

    Earlier rows of the batch are scored in one vectorized step and the closest
    ``_BATCH_CANDIDATES`` kept, so a large batch of similar facts stays linear in Python.
    """
    found = [
        _Candidate(
            hit.item.key,
            str(hit.item.value["content"]),
            hit.score,
            hit.item,
            valid_from(hit.item),
            (hit.item.ttl_minutes is None) != (ttl is None),
        )
        for hit in hits
        if hit.score is not None
        and hit.score >= policy.review_threshold
        # a fact whose leading text changed in this batch is compared below, with that text
        and (hit.item.key not in out.touched or out.touched[hit.item.key].current_row < 0)
    ]
    if out.rows:
        earlier = np.fromiter(out.rows, dtype=np.int64, count=len(out.rows))
        scores = batch_sims.row(row)[earlier]
        close = np.flatnonzero(scores >= policy.review_threshold)
        if len(close) > _BATCH_CANDIDATES:
            close = close[np.argpartition(-scores[close], _BATCH_CANDIDATES)[:_BATCH_CANDIDATES]]
        for j in close:
            at = int(earlier[j])
            key = out.rows[at]
            found.append(
                _Candidate(key, out.touched[key].current, float(scores[j]), None, said[at])
            )
    found.sort(key=lambda c: c.score, reverse=True)
    return found


def _decide(
    text: str,
    row: int,
    candidates: list[_Candidate],
    policy: DecisionPolicy,
    moment: datetime | None = None,
) -> Decision | None:
    """The offline decision; ``None`` when the case is ambiguous."""
    if not candidates:
        return Decision("created", "", row)
    for c in candidates:
        if not c.other_lifetime and _replaces(c, text, policy, _before(moment, c.said)):
            return Decision("updated", c.key, row, similarity=c.score)
    return None


def _before(moment: datetime | None, said: datetime | None) -> bool:
    """Whether a row said at ``moment`` lands before a text said at ``said`` (a backfill)."""
    if moment is None:  # said now: after every stored text (writes place it so)
        return False
    return said is None or moment < said


def _replaces(
    candidate: _Candidate, text: str, policy: DecisionPolicy, backfill: bool = False
) -> bool:
    """Whether ``text`` may join the candidate as a version (nothing it said is lost).

    ``text`` normally becomes the current text, so it must carry the stored one; a
    ``backfill`` becomes an earlier version and the stored text stays current, so the
    stored text must carry it. A value change is a version either way.
    """
    stored = candidate.content
    if different_subject(stored, text):
        return False
    if value_change(stored, text) and (
        # with no content word only the word order names the attribute ("I'm 34"): a
        # weaker sign, so such a change needs the merge threshold ("I'm 34" / "I'm 44")
        candidate.score >= policy.merge_threshold or read_words(stored).terms
    ):
        return True
    if slot_change(stored, text, ENTITY_WORDS) and (
        candidate.score >= policy.merge_threshold or single_valued(stored, text)
    ):
        return True
    # a backfill lands in the history, so the stored (current) text must carry it
    old, new = (text, stored) if backfill else (stored, text)
    if candidate.score >= policy.merge_threshold and carries(old, new):
        return True
    return policy.restatements is not None and bool(policy.restatements(old, new, candidate.score))


def _changes_value(stored: str, text: str) -> bool:
    return value_change(stored, text) or slot_change(stored, text, ENTITY_WORDS)


def _similar(
    text: str, candidates: list[_Candidate], policy: DecisionPolicy
) -> tuple[SimilarFact, ...]:
    return tuple(
        SimilarFact(
            c.key,
            c.content,
            c.score,
            _reason(c.content, text),
        )
        for c in candidates[: policy.max_similar]
    )


def _reason(stored: str, text: str) -> str:
    if different_subject(stored, text):
        return "different_subject"
    if not carries(stored, text) and not _changes_value(stored, text):
        return "loses_information"
    return "uncertain"


def _apply(
    resolution: Resolution,
    text: str,
    row: int,
    candidates: list[_Candidate],
    policy: DecisionPolicy,
    moment: datetime | None = None,
) -> Decision:
    """A resolver's answer; a candidate it names that is gone now means a new fact.

    ``same`` and ``update`` both write the new text as a version of the fact (the newest; a
    backfill said before the stored text lands in its history): a resolver saying "same"
    never drops the user's wording.

    An ``update`` of a backfill the stored text does not carry is a new fact too: the
    resolver judged the new text as the current one, but it would land in the history.
    """
    match = next((c for c in candidates if c.key == resolution.fact_id), None)
    if resolution.verdict == "different" or match is None or match.other_lifetime:
        return Decision("created", "", row)
    if (
        resolution.verdict == "update"
        and _before(moment, match.said)
        and not _replaces(match, text, policy, backfill=True)
    ):
        return Decision("created", "", row)
    # "same" is a rewording: kept as the newest version, so no wording the user gave is
    # dropped on a model's word (an exact repeat never reaches a resolver: it is a duplicate)
    return Decision("updated", match.key, row, similarity=match.score)


def _repeated_earlier(
    out: BatchDecision,
    item: StoredItem | None,
    key: str,
    moment: datetime | None,
    ttl: float | None,
) -> _Candidate | None:
    """The stored fact whose current text a row repeats, if the row was said before it began.

    Such a row is not a duplicate: where it goes on the fact's timeline (an earlier version
    while another text held, or the text's own start moved back) is the timeline's rule
    (:func:`~langchain_ltm.facts.timeline.holds`), whichever call brought the later text.
    A fact of the other lifetime (lasting against expiring) stays as it is.
    """
    if item is None or item.key != key or (item.ttl_minutes is None) != (ttl is None):
        return None
    state = out.touched.get(key)
    if state is not None and (state.base is None or state.current_row >= 0):
        return None  # its leading text is one this batch gave
    if not _before(moment, valid_from(item)):
        return None
    return _Candidate(key, str(item.value["content"]), 1.0, item, valid_from(item))


def _touch(out: BatchDecision, key: str, candidates: list[_Candidate]) -> FactState:
    state = out.touched.get(key)
    if state is None:
        item = next(c.item for c in candidates if c.key == key)
        assert item is not None
        text = str(item.value["content"])
        state = FactState(key, text, -1, item, current_at=valid_from(item))
        out.touched[key] = state
    return state
