"""What a negation denies: the terms after it in its clause (:func:`negated_terms`)."""

from __future__ import annotations

import re
from functools import lru_cache

from langchain_ltm.facts.coverage.words import _NEGATIONS, _TOKEN, fold, read_words

__all__ = ["negated_terms"]


# where what a negation denies ends: punctuation, or a conjunction that starts a clause
_CLAUSE_END = re.compile(
    r"[,;:.!?]|\b(?:but|whereas|although|though|while|because|yet|if|unless|when|whenever)\b",
    re.IGNORECASE,
)
_NEGATION = re.compile(r"\b(?:" + "|".join(sorted(_NEGATIONS)) + r")\b", re.IGNORECASE)


# a part after a comma with one of these starts a clause ("..., I eat fish", "..., fish is
# fine"); without one it is an item of a list ("not allergic to peanuts, shellfish or eggs")
_CLAUSE_WORDS = frozenset(
    "i you he she it we they is are am was were be been do does did have has had will would "
    "can could shall should may might must".split()
)
# a part after a comma starting with one of these is the exception, not an item denied
# ("I don't drink coffee, just tea", "I'm not vegan, only vegetarian")
_EXCEPTION = re.compile(r"\s*(?:just|only|except|apart\s+from|but)\b", re.IGNORECASE)


@lru_cache(maxsize=8192)
def negated_terms(text: str) -> frozenset[str]:
    """The terms a negation denies: those after it in its clause.

    A list after a comma is part of the clause ("I don't drink coffee, tea, or soda"
    denies all three); a comma before a subject or a verb such as "is" ends it.

    Example:
        >>> sorted(negated_terms("I don't eat meat, but I eat fish"))
        ['eat', 'meat']
        >>> sorted(negated_terms("I'm not allergic to peanuts, shellfish or eggs"))
        ['allergic', 'egg', 'peanut', 'shellfish']
    """
    folded = fold(text)
    clauses: list[str] = []
    start, comma = 0, False
    for end in [*_CLAUSE_END.finditer(folded), None]:
        clause = folded[start : end.start() if end else len(folded)]
        words = {m.group().lower() for m in _TOKEN.finditer(clause)}
        if (
            comma
            and clauses
            and words
            and words.isdisjoint(_CLAUSE_WORDS)
            and not _EXCEPTION.match(clause)
        ):
            clauses[-1] += " " + clause  # an item of the list the clause names
        else:
            clauses.append(clause)
        if end is not None:
            start, comma = end.end(), end.group() == ","
    found: set[str] = set()
    for clause in clauses:
        negation = _NEGATION.search(clause)
        if negation is not None:
            found |= read_words(clause[negation.end() :]).terms
    return frozenset(found)
