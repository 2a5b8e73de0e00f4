"""Does a new fact carry what an old one said? Offline word checks (pure, no model).

An update may only replace a text that the new text *carries*: every name, object, place,
number and claim of the old one is still there, reworded or with more detail
(:func:`carries`), or both state the same attribute of the same thing with a new value:
another number or polarity, or another time the new text says changed (:func:`value_change`;
another time alone is another occasion: :func:`moved_in_time`), or another value of a named
attribute ("my favourite colour is blue" / "... is green", "lives in Paris" / "lives in
Berlin": :func:`slot_change`). Cosine similarity cannot tell: "Melanie signed up for a pottery
class" and "Melanie made a plate in pottery class" score 0.86 and are two events.

Each fact is read into :class:`Words`:

- *terms*: the words that carry content, stemmed ("inspired", "inspiring" -> "inspir"), with
  names ("Caroline", "LGBTQ") and identifying numbers ("project 12", "room 104", "#5003",
  "LH401") among them; function words, pronouns, auxiliaries and fillers are left out;
- *values*: numbers that are a quantity or a date ("two kids", "rent 1200", "May 5", "2023"),
  number words read as digits ("five" = "5");
- *negated*: whether the fact says "not", "never", "no longer", ...;
- *moods*: "will", "would" ("I'd"), "should", "could", "might", "must", "have to" + a verb,
  ...: a plan, a wish or a duty is not the state it names ("I'm a nurse" / "I'll be a
  nurse", "I have to work on Saturdays" / "I work on Saturdays"), so both must say the same;
- *past*: whether it reports something that happened ("went", "signed up", "was given");
  :func:`reports_past` also reads the irregular pasts that are not stems ("spoke", "had")
  and marks of the past with any verb ("two days ago", "last Monday", "has been to Rome").

Limits, stated plainly: the checks see words, not meaning. A synonym with another stem
("kids" / "children", "pottery class" / "ceramics course") reads as missing, so a true
restatement is kept as a second fact (listed as ``similar``), never merged wrongly. A word
that is present with another role ("Y thanks X" after "X thanks Y") reads as carried; the
subject check of :mod:`~langchain_ltm.facts.conflicts` catches the people, things and names
named in another order (any word in a text with no case, "anna likes tom"), and the same
words with two content words trading places ("I prefer tea to coffee" / "... coffee to
tea").

The checks, one module each: :mod:`.words` (a text read into :class:`Words`: the stemmer,
the folding, the shared word lists, :func:`missing`), :mod:`.negation` (what a negation
denies), :mod:`.language` (whether a text reads as English), :mod:`.occasions` (dates,
reports of the past, conditions, :func:`moved_in_time`), :mod:`.values`
(:func:`value_change`, :func:`slot_change`) and :mod:`.carry` (:func:`carries`). Each
imports only those before it in that order; all are re-exported here.
"""

from langchain_ltm.facts.coverage.carry import carries
from langchain_ltm.facts.coverage.language import reads_english
from langchain_ltm.facts.coverage.negation import negated_terms
from langchain_ltm.facts.coverage.occasions import (
    change_marks,
    conditional,
    moved_in_time,
    reports_past,
)
from langchain_ltm.facts.coverage.values import single_valued, slot_change, value_change
from langchain_ltm.facts.coverage.words import Words, fold, missing, read_words
from langchain_ltm.facts.coverage.words import stem as stem
from langchain_ltm.facts.coverage.words import unread_runs as unread_runs

__all__ = [
    "Words",
    "carries",
    "change_marks",
    "conditional",
    "fold",
    "missing",
    "moved_in_time",
    "negated_terms",
    "read_words",
    "reads_english",
    "reports_past",
    "single_valued",
    "slot_change",
    "value_change",
]
