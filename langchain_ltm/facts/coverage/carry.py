"""Whether a new text says everything an old one says (:func:`carries`)."""

from __future__ import annotations

from langchain_ltm.facts.coverage.language import reads_english
from langchain_ltm.facts.coverage.negation import negated_terms
from langchain_ltm.facts.coverage.words import missing, read_words

__all__ = ["carries"]


def carries(old: str, new: str) -> bool:
    """Whether ``new`` says everything ``old`` says: every term, value and the polarity.

    The polarity of each claim: the terms a negation denies (:func:`negated_terms`) are
    the same in both ("I don't like jazz but I like blues" / "I like jazz but I don't like
    blues", "If it rains I don't take the bus" / "If it doesn't rain I take the bus" say the
    same words and differ).

    Example:
        >>> carries("I prefer answers in Spanish", "I prefer my answers in Spanish, please")
        True
        >>> carries("Caroline attended an LGBTQ support group", "Caroline gave a school talk")
        False
        >>> carries("Has two kids", "Has three kids")
        False
    """
    a, b = read_words(old), read_words(new)
    return (
        a.negated == b.negated
        and a.moods == b.moods
        and a.values <= b.values
        # what the rules cannot read may hide a new subject or a negation: only the same
        and a.unread == b.unread
        and not missing(old, new)
        and (not a.negated or negated_terms(old) == negated_terms(new) & a.terms)
        # in a text the rules cannot read as English, an added word may be another subject
        and (a.terms == b.terms or (reads_english(old) and reads_english(new)))
    )
