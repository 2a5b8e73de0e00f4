"""A new value of the same attribute: :func:`value_change` and :func:`slot_change`.

Another number, date or polarity of the same words, or another value of a named attribute
("my favourite colour is ...", "lives in ..."; :func:`single_valued` says which hold one
value at a time).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from langchain_ltm.facts.coverage.language import reads_english
from langchain_ltm.facts.coverage.occasions import (
    _occasions,
    _same_occasion,
    change_marks,
    conditional,
    moved_in_time,
    reports_past,
)
from langchain_ltm.facts.coverage.words import _TOKEN, _says_is, fold, read_words, stem

__all__ = ["single_valued", "slot_change", "value_change"]


def _frame(text: str, marks: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The words of ``text`` in order, each run of digits as "#", the ``marks`` left out.

    Example:
        >>> _frame("I'm 5'10 now", frozenset({"now"}))
        ('i', 'am', '#', '#')
    """
    return tuple(
        re.sub(r"\d+", "#", word)
        for word in (m.group().lower() for m in _TOKEN.finditer(fold(text)))
        if stem(word) not in marks
    )


# a mark after a number that says what it measures, which the words do not read: feet and
# inches (5'10"), minutes and seconds, a percentage, degrees
_MEASURE = re.compile("[0-9]\\s*(['\"%\u00b0\u2032\u2033\u201d])")


def _measures(text: str) -> tuple[str, ...]:
    """The marks after the numbers of ``text`` that say what they measure, in order."""
    return tuple(_MEASURE.findall(fold(text)))


def _close_numbers(old: str, new: str) -> bool:
    """Whether each number of ``new`` is within half again of the one in its place in ``old``.

    In a text with no content word (:func:`value_change`) the number alone says what is
    measured: an age, a weight, a count of people are each "I'm N" or "we're N". A value
    that changes over time moves by a part of itself ("I'm 34" / "I'm 35", "we're 4" /
    "we're 5"); a number of another size is likely another measure ("I'm 34" / "I'm 340",
    "I'm 3", "I'm 70"; "he's 7" / "he's 120"; "we're 4" / "we're 40").

    Example:
        >>> _close_numbers("I'm 34", "I'm 35"), _close_numbers("I'm 34", "I'm 70")
        (True, False)
    """
    for a, b in zip(re.findall("[0-9]+", fold(old)), re.findall("[0-9]+", fold(new)), strict=False):
        x, y = int(a), int(b)
        if x != y and (min(x, y) == 0 or max(x, y) > 1.5 * min(x, y)):
            return False
    return True


def value_change(old: str, new: str) -> bool:
    """Whether ``new`` restates ``old`` with another number, date or polarity (an update).

    Both say the same terms (identifying numbers included: "room 104" is not "room 105";
    a new term would be a new claim: "I like jazz" / "I don't like jazz festivals"; texts
    with no term say the same words in the same order, numbers aside, each number within
    half again of the old one: "I'm 34" / "I'm 35", not "I'm 34" / "I'm 340"), the same
    marks of measure after the numbers (an age, then a height in feet and inches, is no new
    value), no question ("I'm 35?"), and either the polarity changes with the same values,
    or a value is replaced: the old text has a value the new one lacks and the new one has
    one the old lacks, as many new values as old ones gone. A value dropped is not a new
    value ("takes 20mg of lisinopril daily" / "takes lisinopril daily"), nor is one cut
    from several ("May 5 at 3pm" / "May 6").

    Not a value change: another time alone, unless the new text says it changed
    (:func:`moved_in_time`: "a meeting on Monday" / "... on Tuesday" are two meetings),
    another time and another value at once ("read 2 books in May" / "read 3 books in
    June"), a text with a condition (:func:`conditional`), and a report of something that happened
    (:func:`reports_past`) after another ("ran 5 km" / "ran 10 km" may be two runs), unless
    both name the same date ("lost one card this morning" / "lost two cards this morning").

    Example:
        >>> value_change("Has one kid", "Has two kids now")
        True
        >>> value_change("Is vegetarian", "Is not vegetarian anymore")
        True
        >>> value_change("Project 12 has 5 members", "Project 13 has 6 members")
        False
        >>> value_change("Ran 5 km on Sunday", "Ran 10 km on Monday")
        False
        >>> value_change("Lost one card this morning", "Lost two cards this morning")
        True
        >>> value_change("I take 20mg of lisinopril daily", "I take lisinopril daily")
        False
    """
    a, b = read_words(old), read_words(new)
    # the words that say the time changed are no claim ("rescheduled to May 12", "instead")
    marks = change_marks(old, new)
    if "?" in old or "?" in new:
        return False  # a question states no value ("I'm 34" / "I'm 35?")
    if _measures(old) != _measures(new):
        return False  # another measure ("My son is 7" / "My son is 4'2\"")
    if (
        # no content word: only the same words in the same order name the attribute, and
        # only a number of the same size ("I'm 34" / "I'm 35", not "I'm 5'10\"" or "I'm 340")
        (not a.terms and (_frame(old) != _frame(new, marks) or not _close_numbers(old, new)))
        or a.terms - marks != b.terms - marks
        or a.names - marks != b.names - marks
        or a.moods != b.moods
    ):
        return False
    if a.negated != b.negated:
        if a.values != b.values:
            return False  # two things at once ("don't ... in the evening")
    else:
        old_only, new_only = a.values - b.values, b.values - a.values
        if not old_only or not new_only or len(old_only) > len(new_only):
            return False  # nothing changed, or a value dropped
        changed = old_only | new_only
        when = changed & (_occasions(old) | _occasions(new))
        if when and (when != changed or not marks):
            return False  # another time (moved_in_time), or a time and a value at once
    if conditional(old) or conditional(new):
        return False
    past = reports_past(old) or reports_past(new)
    return not past or _same_occasion(a.values, b.values)


# "<attribute> is <value>" (present tense: "my trip was ..." tells of a past event) and a
# few single-valued frames ("lives in <place>"), their preposition part of the frame
_SLOTS = (
    re.compile(r"^(?P<attr>.+?)\s+(?P<frame>is|are|am)\s+(?P<value>.+)$", re.IGNORECASE),
    re.compile(
        r"^(?P<attr>.*?\b(?:live|lives|living|work|works|working))\s+(?P<frame>in|at|for|as)\s+"
        r"(?P<value>.+)$",
        re.IGNORECASE,
    ),
)


# attributes that hold one value at a time: a new value replaces the old one
_SINGLE_VALUED = frozenset(
    stem(w)
    for w in "favourite favorite preferred name age birthday address email phone job title "
    "role rent salary hometown timezone nationality height weight size budget deadline "
    "language".split()
)


def single_valued(old: str, new: str) -> bool:
    """Whether the two name an attribute that holds one value at a time.

    Such as "my rent is ...", "my favourite colour is ...", "lives in ...", "works at ...".

    Example:
        >>> single_valued("My favourite colour is blue", "My favourite colour is green")
        True
        >>> single_valued("My hobby is painting", "My hobby is hiking")
        False
    """
    for pattern, a, _ in _slot_matches(old, new):
        return pattern is _SLOTS[1] or bool(read_words(a.group("attr")).terms & _SINGLE_VALUED)
    return False


def _one_line(text: str) -> str:
    """``text`` folded, each run of whitespace (line breaks too) as one space.

    The slot patterns then read in one pass: on a run of spaces or a line break before the
    end they backtracked over the rest of the text for each frame word (seconds on a
    2,000-character note).
    """
    return " ".join(fold(text).split())


_APOSTROPHE_S = re.compile(r"(?<=[^\W\d_])'s\s+")


def _said_is(flat: str) -> str:
    """``flat`` with an "'s" that says "is" (:func:`_says_is`) read as "is".

    Example:
        >>> _said_is("My birthday's May 5"), _said_is("My son's school")
        ('My birthday is May 5', "My son's school")
    """
    matches = list(_APOSTROPHE_S.finditer(flat))
    if not matches:
        return flat
    last = matches[-1]  # an earlier one has the word before the last "'s" in its value
    if _says_is(flat[: last.end()], flat[last.end() :]):
        return f"{flat[: last.start()]} is {flat[last.end() :]}"
    return flat


def _slot_matches(
    old: str, new: str
) -> Iterator[tuple[re.Pattern[str], re.Match[str], re.Match[str]]]:
    """Each slot pattern both texts match, with both matches."""
    flat_old, flat_new = _said_is(_one_line(old)), _said_is(_one_line(new))
    for pattern in _SLOTS:
        a, b = pattern.match(flat_old), pattern.match(flat_new)
        if a is not None and b is not None:
            yield pattern, a, b


def slot_change(old: str, new: str, entities: frozenset[str] = frozenset()) -> bool:
    """Whether both give a value to the same named attribute, and the values differ.

    The attribute is what comes before "is" ("my favourite colour", "the office wifi
    password"; or "'s" before a number or date alone: "my birthday's May 5"), or a
    single-valued frame ("lives in", "works at"). It must name something besides its
    subject: "my sister is a nurse" / "my sister is allergic to cats" say two
    things about one person, not one thing twice. Each value must say something the other
    does not: a value cut short or made more precise is not a change, nor is a number or
    date dropped, nor (:func:`moved_in_time`) another time alone unless the attribute holds
    one value at a time ("my birthday is May 5" / "... May 6"), nor a text with a condition
    (:func:`conditional`) or a question mark, nor one the rules do not read as English
    (:func:`reads_english`: German "am Montag", Dutch "is" are no copulas). Many attributes
    hold several values ("my hobby is ..."), so the store asks ``merge_threshold`` for a slot
    change unless the attribute holds one value at a time (:func:`single_valued`).
    ``entities`` are the words that only name a subject (people, pets, things: see
    :mod:`~langchain_ltm.facts.conflicts`).

    Example:
        >>> slot_change("My favourite colour is blue", "My favourite colour is green now")
        True
        >>> slot_change("I live in Paris", "I live in Berlin")
        True
        >>> slot_change("Caroline is a counselor", "Caroline is an artist")
        False
    """
    if conditional(old) or conditional(new):
        return False
    if "?" in old or "?" in new:
        return False  # a question gives no value ("My favourite colour is green?")
    if read_words(old).moods != read_words(new).moods:
        return False  # "I'm a nurse" / "I'll be a nurse": a plan is not a new value
    if not (reads_english(old) and reads_english(new)):
        return False  # the frames are English: "Ich arbeite am Montag", "Mijn zoon is ..."
    for _, a, b in _slot_matches(old, new):
        attr_a, attr_b = read_words(a.group("attr")), read_words(b.group("attr"))
        if a.group("frame").lower() != b.group("frame").lower():
            continue  # "works as a nurse" / "works at a hospital": two attributes
        if a.group("frame").lower() == "am":
            continue  # English says "am" after "I" only: no attribute ("Training am Abend")
        if attr_a.terms != attr_b.terms or attr_a.negated != attr_b.negated:
            continue
        if not attr_a.terms - attr_a.names - entities:
            continue  # "Caroline is ...", "my sister is ...": no attribute named
        value_a, value_b = read_words(a.group("value")), read_words(b.group("value"))
        if value_a.terms != value_b.terms:
            # a value replaced: neither made more precise ("Paris, France") nor cut short
            # ("works at Google" after "works at Google on the search team")
            return bool(value_a.terms - value_b.terms and value_b.terms - value_a.terms)
        old_only, new_only = value_a.values - value_b.values, value_b.values - value_a.values
        if not old_only or not new_only or len(old_only) > len(new_only):
            return False  # nothing replaced, or a number or date dropped ("May 5 at 3pm")
        # another time alone is another occasion, unless one time is all the attribute holds
        return not moved_in_time(old, new) or single_valued(old, new)
    return False
