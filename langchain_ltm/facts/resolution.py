"""What a resolver is given and answers, and the check every answer goes through.

``remember`` settles exact duplicates and confident matches offline. What is left, a new fact
that is close to stored facts but not close enough to be sure (or likely about another
subject), goes to a :class:`Resolver` when one is configured. The store calls it at most once
per ``remember`` batch, with every ambiguous item of the batch, and passes the answers through
:func:`check_resolutions` so a buggy resolver can never merge a fact into the wrong one.

No LangChain imports here: the fact logic needs these types without a chat model around.
:class:`~langchain_ltm.facts.resolvers.ChatModelResolver` is the resolver that asks one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, get_args, runtime_checkable

from langchain_ltm.facts.model import SimilarFact

__all__ = [
    "DIFFERENT",
    "Ambiguity",
    "Resolution",
    "Resolver",
    "Verdict",
    "check_resolutions",
]

_LOGGER = "langchain_ltm.facts.resolvers"  # one logger for resolver notes


def _warn(message: str, *args: object) -> None:
    """A warning on the resolvers' logger (logging imported only when there is one)."""
    import logging

    logging.getLogger(_LOGGER).warning(message, *args)


Verdict = Literal["same", "update", "different"]
"""A resolver's answer for one pair: the same fact, a new version of it, or another fact."""
_VERDICTS: frozenset[str] = frozenset(get_args(Verdict))


@dataclass(frozen=True)
class Ambiguity:
    """A new fact the store could not settle on its own, with the stored facts close to it.

    Attributes:
        new_fact: The text being remembered.
        candidates: The stored facts it might match, best first (at least one). Any sequence
            is accepted and kept as a tuple.

    Raises:
        ValueError: If ``candidates`` is empty (an item with nothing to compare is not
            ambiguous: store it as a new fact without asking a resolver).

    Example:
        >>> item = Ambiguity(
        ...     "My son is allergic to peanuts",
        ...     (SimilarFact("f1", "My sister is allergic to peanuts", 0.86, "different_subject"),),
        ... )
        >>> item.candidates[0].id
        'f1'
    """

    new_fact: str
    candidates: tuple[SimilarFact, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.candidates, tuple):
            object.__setattr__(self, "candidates", tuple(self.candidates))
        if not self.candidates:
            msg = (
                f"Ambiguity for {self.new_fact!r} has no candidates; pass at least one "
                "SimilarFact, or store the fact as new without asking a resolver."
            )
            raise ValueError(msg)

    @property
    def candidate_ids(self) -> frozenset[str]:
        """The ids a resolution for this item may name."""
        return frozenset(candidate.id for candidate in self.candidates)


@dataclass(frozen=True)
class Resolution:
    """A resolver's answer for one :class:`Ambiguity`.

    Attributes:
        verdict: ``"same"`` (the new fact says what the stored fact ``fact_id`` already says,
            reworded), ``"update"`` (it says more, or a new value of the same attribute):
            both make the new text the newest version of ``fact_id``, the old text kept in
            its history (a rewording is never dropped on a model's word); or
            ``"different"`` (a separate fact: both are kept).
        fact_id: For ``same`` and ``update``, the id of the candidate it matches; ``None``
            for ``different``.

    Example:
        >>> Resolution("update", "f2")
        Resolution(verdict='update', fact_id='f2')
        >>> Resolution.different() == DIFFERENT
        True
    """

    verdict: Verdict
    fact_id: str | None = None

    @classmethod
    def different(cls) -> Resolution:
        """The safe answer: keep the new fact as a separate fact."""
        return DIFFERENT


DIFFERENT = Resolution("different")
"""The answer that keeps both facts; what every doubtful answer becomes."""


@runtime_checkable
class Resolver(Protocol):
    """Decides the ambiguous items of one ``remember`` batch.

    Both methods return one :class:`Resolution` per item, in the order of ``items``. The
    store calls one of them at most once per batch and checks the answers with
    :func:`check_resolutions`; a resolver should still not raise (answer ``DIFFERENT`` for
    what it cannot decide).

    Example:
        >>> class KeepBoth:
        ...     def resolve(self, items):
        ...         return [DIFFERENT for _ in items]
        ...
        ...     async def aresolve(self, items):
        ...         return self.resolve(items)
        >>> isinstance(KeepBoth(), Resolver)
        True
    """

    def resolve(self, items: Sequence[Ambiguity]) -> list[Resolution]:
        """Decide every item; one answer per item, aligned with ``items``."""
        ...

    async def aresolve(self, items: Sequence[Ambiguity]) -> list[Resolution]:
        """Async twin of :meth:`resolve`."""
        ...


def check_resolutions(items: Sequence[Ambiguity], resolutions: object) -> list[Resolution]:
    """Make a resolver's answers safe to apply: every doubtful answer becomes ``DIFFERENT``.

    Keeping both facts is the safe choice: memory must never lose a fact through a bad merge.
    Each problem is logged as a warning naming the item and what was wrong:

    * ``resolutions`` is not a list of the same length as ``items``: the answers cannot be
      aligned, so every item becomes ``DIFFERENT``;
    * an answer is not a :class:`Resolution`, or its verdict is not a :data:`Verdict`;
    * a ``same``/``update`` answer without ``fact_id``, or naming an id that is not one of
      that item's candidates.

    A ``different`` answer that names a ``fact_id`` is kept, without the id.

    Args:
        items: The items the resolver was asked about.
        resolutions: What it returned (any value: this function is the gate).

    Returns:
        One valid :class:`Resolution` per item, aligned with ``items``.

    Example:
        >>> item = Ambiguity("I am 31", (SimilarFact("f1", "I am 30", 0.9),))
        >>> check_resolutions([item], [Resolution("update", "f1")])
        [Resolution(verdict='update', fact_id='f1')]
        >>> check_resolutions([item], [Resolution("update", "f9")])
        [Resolution(verdict='different', fact_id=None)]
    """
    if isinstance(resolutions, (str, bytes)) or not isinstance(resolutions, Sequence):
        _warn(
            "resolver returned %s instead of a list of Resolution; keeping all %d facts "
            "as different",
            type(resolutions).__name__,
            len(items),
        )
        return [DIFFERENT] * len(items)
    if len(resolutions) != len(items):
        _warn(
            "resolver returned %d answers for %d items; the answers cannot be aligned, so "
            "every item is kept as a different fact",
            len(resolutions),
            len(items),
        )
        return [DIFFERENT] * len(items)
    return [
        _check_one(n, item, answer)
        for n, (item, answer) in enumerate(zip(items, resolutions, strict=True))
    ]


def _check_one(index: int, item: Ambiguity, answer: object) -> Resolution:
    problem: str | None = None
    if not isinstance(answer, Resolution):
        problem = f"the answer is a {type(answer).__name__}, not a Resolution"
    elif answer.verdict not in _VERDICTS:
        problem = f"verdict {answer.verdict!r} is not one of {sorted(_VERDICTS)}"
    elif answer.verdict == "different":
        return DIFFERENT
    elif answer.fact_id is None:
        problem = f"verdict {answer.verdict!r} names no fact_id"
    elif answer.fact_id not in item.candidate_ids:
        problem = (
            f"fact_id {answer.fact_id!r} is not one of the item's candidates "
            f"{sorted(item.candidate_ids)}"
        )
    else:
        return answer
    _warn(
        "resolver answer for item %d (%r) ignored: %s; keeping it as a different fact",
        index,
        item.new_fact,
        problem,
    )
    return DIFFERENT
