"""When: dates and occasions, reports of the past, conditions, a time moved.

:func:`reports_past`, :func:`conditional`, :func:`change_marks` (the words that say a time
changed) and :func:`moved_in_time` (another time alone is another occasion).
"""

from __future__ import annotations

import re
from functools import lru_cache

from langchain_ltm.facts.coverage.words import _TOKEN, DATE_WORDS, fold, read_words, stem

__all__ = ["change_marks", "conditional", "moved_in_time", "reports_past"]


def _dates(values: frozenset[str]) -> frozenset[str]:
    return frozenset(v for v in values if v in DATE_WORDS or (len(v) == 4 and v.isdigit()))


# a weekday comes every week: "ran 5 km on Sunday" / "ran 10 km on Sunday" may be two runs
_WEEKLY = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday weekday weekend".split()
)


def _same_occasion(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two reports of something that happened name the same dated occasion.

    A weekday alone names no one occasion; a date, a year or a part of the day ("this
    morning") does.
    """
    return bool(_dates(a) - _WEEKLY) and _dates(a) == _dates(b)


# past forms that are tense only (not stems: "spoke" is not read as "speak"), so that their
# reports are events; spellings shared with the present ("read", "put", "cut") are left out
_PAST_ONLY = frozenset(
    """
    had did arose awoke bent bit bitten bled blew blown bred burnt clung crept dealt dove
    dreamt drank drunk dwelt fed fled flung forbade forgave forgiven forgot forgotten froze
    hid knelt leapt learnt lit mistook overslept overtook rang risen rose rung sank sunk shook
    shaken shone shot shown shrank slid smelt sped spelt spilt spoke spoken spun spat sprang
    stole stolen stuck stung stank struck strove swore sworn swept swung tore torn trod
    underwent undertook undertaken withdrew withdrawn wove woven wept
    """.split()
)
# what marks a report of the past whatever its verb: "ago", "yesterday", "last Monday",
# "have been to Rome"
_PAST_MARKS = re.compile(
    r"\b(?:ago|yesterday|last\s+(?:night|week|month|year|time|weekend|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day|spring|summer|autumn|fall|winter)|"
    r"been\s+to)\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=8192)
def reports_past(text: str) -> bool:
    """Whether ``text`` reports something that happened.

    A regular past ("signed up"), an irregular one ("went", "spoke", "drank", "had", "did"),
    or a mark of the past with any verb ("two days ago", "last Monday", "has been to Rome").

    Example:
        >>> reports_past("I spoke to my boss about a raise"), reports_past("I have a meeting")
        (True, False)
    """
    if read_words(text).past:
        return True
    folded = fold(text)
    return bool(_PAST_MARKS.search(folded)) or any(
        m.group().lower() in _PAST_ONLY for m in _TOKEN.finditer(folded)
    )


_CONDITION = re.compile(r"\b(?:if|unless|when|whenever|in\s+case)\b", re.IGNORECASE)


def conditional(text: str) -> bool:
    """Whether ``text`` holds a condition ("if it rains ...", "... unless I'm late").

    A negation or a number may sit in the condition or in what follows it, and the word
    checks cannot tell which: "If it rains I take the bus" / "If it doesn't rain I take the
    bus" are two rules, not a new polarity of one.

    Example:
        >>> conditional("If it rains I take the bus"), conditional("I take the bus")
        (True, False)
    """
    return bool(_CONDITION.search(fold(text)))


_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_YEAR = r"(?:1[89]|20)\d\d"
# when something happens: a date, a year after a preposition, a clock time, a weekday, a
# part of the day or a season ("twice a week", "20 days a year" are rates, not occasions)
_OCCASION = re.compile(
    rf"\b(?:{_MONTH}(?:\s+{_DAY}\b)?(?:,?\s+{_YEAR})?"
    rf"|{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?"
    rf"|(?:in|on|since|from|until|till|by|before|after|of|during|around|circa)\s+{_YEAR}"
    r"|\d{4}-\d\d-\d\d|\d{1,2}/\d{1,2}(?:/\d{2,4})?"
    r"|\d{1,2}(?:[:.]\d\d)?\s*(?:am|pm|a\.m\.|p\.m\.|o'clock)|\d{1,2}:\d\d"
    r"|\d{1,2}(?:st|nd|rd|th)"
    r"|(?:mon|tues|wednes|thurs|fri|satur|sun)day|weekends?|weekdays?"
    r"|morning|afternoon|evening|night|spring|summer|autumn|fall|winter)\b",
    re.IGNORECASE,
)
# words by which a new text says that the time of a plan changed ("now", "moved to")
_CHANGED = frozenset(
    stem(w)
    for w in "now actually instead moved rescheduled postponed changed switched shifted "
    "pushed delayed".split()
)


@lru_cache(maxsize=8192)
def _occasions(text: str) -> frozenset[str]:
    """The values of ``text`` that say when ("May 5" -> may, 5; "at 3pm" -> 3pm)."""
    found: set[str] = set()
    for match in _OCCASION.finditer(fold(text)):
        found |= read_words(match.group()).values
    return frozenset(found)


# words by which a new text adds an occasion beside the old one ("on Thursday too")
_ADDED = re.compile(r"\b(?:too|also|as\s+well)\b", re.IGNORECASE)


@lru_cache(maxsize=8192)
def _stems(text: str) -> frozenset[str]:
    return frozenset(stem(m.group()) for m in _TOKEN.finditer(fold(text)))


def change_marks(old: str, new: str) -> frozenset[str]:
    """The words by which ``new`` says that the time of ``old`` changed (stems).

    A change word counts only where the old text lacks it ("I change my contact lenses
    every Monday" / "... every Thursday" says no change), and none counts when the new text
    adds an occasion ("Actually I also have yoga on Thursday", "... now too").

    Example:
        >>> sorted(change_marks("I have yoga on Monday", "I have yoga on Thursday instead"))
        ['instead']
        >>> change_marks("I have yoga on Monday", "Actually I also have yoga on Thursday")
        frozenset()
    """
    if _ADDED.search(fold(new)):
        return frozenset()
    return (_stems(new) & _CHANGED) - _stems(old)


def moved_in_time(old: str, new: str) -> bool:
    """Whether the two differ only in when, and ``new`` does not say that the time changed.

    The same words with another day, date, time, part of the day, season or year: "I have a
    meeting on Monday" / "... on Tuesday", "I have yoga every Monday" / "... every
    Thursday", "I go to the gym in the morning" / "... in the evening" are two occasions
    that can both hold (or two events: "had a fever on Monday" / "... on Thursday"), not a
    new value of one. When the new text says so ("now", "actually", "instead", "moved",
    "rescheduled", "postponed", "changed", ...), it is a change.

    Example:
        >>> moved_in_time("I have a meeting on Monday", "I have a meeting on Tuesday")
        True
        >>> moved_in_time("I have a meeting on Monday", "I have a meeting on Tuesday now")
        False
        >>> moved_in_time("I have 2 cats", "I have 3 cats")
        False
    """
    a, b = read_words(old), read_words(new)
    changed = a.values ^ b.values
    return (
        bool(changed)
        and a.terms == b.terms
        and changed <= _occasions(old) | _occasions(new)
        and not change_marks(old, new)
    )
