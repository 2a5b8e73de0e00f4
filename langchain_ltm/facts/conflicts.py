"""Cheap offline checks that catch what cosine similarity cannot (pure, no model).

Two facts can score as near-paraphrases and still be two facts: "My sister is allergic to
peanuts" / "My son is allergic to peanuts" differ only in whom they are about. And a changed
number, date or negation ("has one kid" / "has two kids now") is the same fact with a new
value even when its similarity is modest. These checks look at the words:

- :func:`subjects` finds whom or what a fact is about: a possessive followed by a person,
  pet or thing ("my sister", "the user's manager", "her dog": whose is part of it), a
  leading relation word ("Son allergic to penicillin"), a leading name ("Tom likes sushi")
  or "he", "she", "they" (leading, or anywhere when no one else is named and no "I" or
  "we" does something: "At work he ..."); and the user when named beside them ("My wife
  and I ..."). Other pronouns ("I call him") are someone the fact names: another one is
  another fact ("I owe him" / "I owe her"). A part of a group is not the group ("some of
  my kids" / "all my kids", "a friend of my sister" / "my sister").
  A fact without one is about the user.
- :func:`different_subject` is true when two facts are about different subjects: those
  :func:`subjects` finds, "we" / "I" (the user with others, the user alone) and a year
  that says which thing ("my 2024 goal" / "my 2025 goal", as "project 12" names a project).
- :func:`value_change` is true when two facts say the same words except for numbers, dates
  or a negation.

They err on the side of keeping both facts: a false "different subject" only leaves a
near-duplicate (listed as ``similar``), a false merge would hide a fact in the history.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from functools import lru_cache

from langchain_ltm.facts.coverage import value_change
from langchain_ltm.facts.coverage.words import (
    DATE_WORDS,
    NUMBER_WORDS,
    PAST_FORMS,
    STOP_WORDS,
    VERB_BASES,
    fold,
    known_verb,
    regular_past,
)
from langchain_ltm.facts.coverage.words import LEADING_VERBS as _VERBS

__all__ = ["ENTITY_WORDS", "different_subject", "subjects", "value_change"]

_RELATIONS = {
    # people
    "mother": "mother", "mom": "mother", "mum": "mother", "mama": "mother", "mommy": "mother",
    "father": "father", "dad": "father", "papa": "father", "daddy": "father",
    "parent": "parent", "sister": "sister", "brother": "brother", "sibling": "sibling",
    "son": "son", "daughter": "daughter", "kid": "child", "child": "child", "children": "child",
    "baby": "baby", "wife": "wife", "husband": "husband", "partner": "partner",
    "spouse": "spouse", "girlfriend": "girlfriend", "boyfriend": "boyfriend",
    "fiance": "fiance", "fiancee": "fiancee", "grandmother": "grandmother",
    "grandma": "grandmother", "granny": "grandmother", "grandfather": "grandfather",
    "grandpa": "grandfather", "grandson": "grandson", "granddaughter": "granddaughter",
    "aunt": "aunt", "uncle": "uncle", "cousin": "cousin", "niece": "niece",
    "nephew": "nephew", "friend": "friend", "roommate": "roommate", "flatmate": "roommate",
    "neighbor": "neighbour", "neighbour": "neighbour", "boss": "boss", "manager": "manager",
    "mentor": "mentor", "colleague": "colleague", "coworker": "colleague",
    "teammate": "teammate", "assistant": "assistant", "doctor": "doctor",
    "dentist": "dentist", "therapist": "therapist", "teacher": "teacher", "coach": "coach",
    "landlord": "landlord", "client": "client", "team": "team", "family": "family",
    "stepson": "stepson", "stepdaughter": "stepdaughter", "in-law": "in-law",
    "twin": "twin", "toddler": "toddler", "teenager": "teenager",
    "mother-in-law": "mother-in-law", "father-in-law": "father-in-law",
    "sister-in-law": "sister-in-law", "brother-in-law": "brother-in-law",
    "son-in-law": "son-in-law", "daughter-in-law": "daughter-in-law",
    # animals
    "dog": "dog", "puppy": "dog", "cat": "cat", "kitten": "cat", "pet": "pet",
    "horse": "horse", "rabbit": "rabbit", "bunny": "rabbit", "hamster": "hamster",
    "parrot": "parrot", "bird": "bird", "fish": "fish", "turtle": "turtle",
    "snake": "snake", "lizard": "lizard", "guinea": "guinea pig",
    # things a fact is often about
    "car": "car", "bike": "bike", "bicycle": "bike", "motorbike": "motorbike",
    "motorcycle": "motorbike", "phone": "phone", "laptop": "laptop", "computer": "computer",
    "tablet": "tablet", "watch": "watch", "house": "house", "apartment": "apartment",
    "flat": "apartment", "office": "office", "company": "company", "startup": "company",
    "garden": "garden", "boat": "boat", "van": "van", "truck": "truck",
    "school": "school", "university": "university",
}  # fmt: skip

_ENTITIES = frozenset(_RELATIONS.values())
ENTITY_WORDS = frozenset(_RELATIONS) | _ENTITIES
"""Words that name a person, pet or thing a fact can be about ("sister", "dog", "laptop")."""

_POSSESSIVE = re.compile(
    r"\b(my|his|her|their|our|your|the user's|user's|the customer's)\s+", re.IGNORECASE
)
# whose a possessive names: the user's own ("my", "our") or another person's ("her dog")
_OWNERS = {"his": "he", "her": "she", "their": "they", "your": "you"}
# a fact leading with one of these is about that person ("She is allergic to ...")
_PRONOUNS = frozenset({"he", "she", "they"})
# a person named by a pronoun, in any of its forms ("he", "him")
_THIRD = {"he": "he", "him": "he", "she": "she", "her": "she", "they": "they", "them": "they"}
# the user named beside someone else ("My wife and I ...", "me and my son")
_FIRST_PERSON = frozenset({"i", "me", "myself", "we", "us", "ourselves"})
# the user as the one who does something ("I volunteer ...", "we're ...")
_FIRST_SUBJECTS = frozenset({"i", "we"})
_PHRASE_STOP = (
    _VERBS
    | PAST_FORMS
    | frozenset(
        "to in on at for with from of the a an and or but now also still just always never "
        "not no who which that".split()
    )
)
_UPPER, _LOWER = "A-Z\u00c0-\u00d6\u00d8-\u00de", "a-z\u00df-\u00f6\u00f8-\u00ff"
_LEADING_NAME = re.compile(rf"^\s*([{_UPPER}][{_LOWER}]+(?:\s[{_UPPER}][{_LOWER}]+)?)\b")
_NOT_NAMES = frozenset(
    "i i'm i've i'd the user a an my his her their our your we he she they it this that "
    "always never usually often sometimes every each no not".split()
)
_TOKEN = re.compile(r"[^\W\d_](?:[^\W\d_]|['-])*")  # a word, in any script
# capitalized words before "'s" that own nothing ("It's", "There's": "is")
_NOT_OWNERS = _NOT_NAMES | frozenset("there here what who where how let everyone user".split())


def _canonical(word: str) -> str:
    word = word.lower().strip("'-")
    for form in (word, word.removesuffix("s"), word[:-3] + "y" if word.endswith("ies") else ""):
        if form in _RELATIONS:
            return _RELATIONS[form]
    return word.removesuffix("s") if len(word) > 3 and not word.endswith("ss") else word


# compounds of a prefix and a person name a person too: stepmother, godfather, housemate
_PERSON_COMPOUND = re.compile(
    r"^(?:step|god|grand|great-?grand|great|ex|house|flat|room|class|team|work|play|best|"
    r"boy|girl|half|foster|school)-?"
    r"(?:mother|father|sister|brother|son|daughter|wife|husband|friend|mate|parent|child|"
    r"kid|partner|boss|nephew|niece|aunt|uncle|cousin)$"
)


def _is_entity(base: str) -> bool:
    return base in _ENTITIES or _PERSON_COMPOUND.match(base) is not None


def _chain(words: list[str]) -> tuple[str, bool]:
    """A possessive chain ("son's friend's") as a key, and whether it names an entity."""
    parts: list[str] = []
    entity = False
    current: list[str] = []
    for word in words:
        owner = word.endswith("'s")
        base = _canonical(word.removesuffix("'s"))
        entity = entity or _is_entity(base)
        current.append(base)
        if owner:
            parts.append(" ".join(current))
            current = []
    if current:
        parts.append(" ".join(current))
    return ">".join(parts), entity


def _phrase(tokens: list[str], start: int) -> list[str]:
    """Words of the noun phrase starting at ``start``, up to a verb or a function word."""
    words: list[str] = []
    for token in tokens[start : start + 5]:
        if token.lower() in _PHRASE_STOP:
            break
        words.append(token)
        if not token.endswith("'s") and len(words) >= 3:
            break
    return words


@lru_cache(maxsize=4096)
def subjects(text: str) -> frozenset[str]:
    """Whom or what ``text`` is about, besides the user; empty when it is about the user.

    Each subject is a possessive phrase ("my older sister", "the user's work laptop",
    "my son's friend", "her dog"), a leading relation word as in a note ("Son allergic to
    penicillin", read as "my son"), a leading name ("Tom likes sushi", "Ana's husband") or
    a leading "he", "she" or "they" (anywhere when the text names no one else and has no
    "I" or "we": "At work he uses Python" is not "At work I use Python"), as a key; any
    other pronoun ("I call him", "... and help them find homes") is a ``"pronoun:"`` key,
    someone the fact names beside its subject; a name's
    person or thing anywhere ("I work with Anna's husband") is a key too, so it is not
    Anna. Keys naming a person, pet or thing start with ``"*"``; another person's
    possessive is part of the key ("her dog" is not "my dog", "their son" is not "our
    son"), and so is how much of it the text is about (:func:`_scope`: "some of my kids",
    "one of my kids" and "a friend of my sister" are not "my kids" or "my sister"; "all",
    "each", "every", "both", "none" of them are the whole group, as the phrase alone).
    When the user is named beside them ("My wife and I ...", "... with me"),
    ``"*user"`` is a subject too.

    Example:
        >>> sorted(subjects("My older sister is allergic to peanuts"))
        ['*older sister']
        >>> sorted(subjects("Prefers answers in Spanish"))
        []
        >>> sorted(subjects("Tom likes sushi"))
        ['*name:tom']
        >>> sorted(subjects("My son's friend's birthday is October 2"))
        ['*son>friend>birthday']
        >>> sorted(subjects("My wife and I are vegetarian")), sorted(subjects("Her dog is 3"))
        (['*user', '*wife'], ['*she>dog'])
    """
    folded = fold(text)
    found: set[str] = set()
    # the words are read once; each possessive reads the few after it
    spans = [(m.start(), m.group()) for m in _TOKEN.finditer(folded)]
    starts = [start for start, _ in spans]
    words_after = [word.lower() for _, word in spans]
    for match in _POSSESSIVE.finditer(folded):
        words = _phrase(words_after, bisect_left(starts, match.end()))
        if words:
            key, entity = _chain(words)
            owner = _OWNERS.get(match.group(1).lower())
            key = f"{owner}>{key}" if owner else key
            found.add(("*" if entity else "") + key + _scope(folded[: match.start()]))
    # a name's person or thing anywhere in the text ("I work with Anna's husband", "the
    # Millers' neighbours"): not Anna, not the Millers
    for i, (_, word) in enumerate(spans):
        name = word[:-1] if word.endswith("s'") else word.removesuffix("'s")
        if name != word and name[:1].isupper() and name.lower() not in _NOT_OWNERS:
            words = _phrase(words_after, i + 1)
            if words:
                found.add(f"*name:{name.lower()}>{_chain(words)[0]}")
    tokens = words_after
    found |= _leading(folded, tokens)
    bases = [t.split("'")[0] for t in tokens]
    if not found and _FIRST_SUBJECTS.isdisjoint(bases):
        # naming no one else, "he" anywhere is the subject ("At work he ...")
        pronoun = next((b for b in bases if b in _PRONOUNS), None)
        found |= {"*" + pronoun} if pronoun else set()
    # any other pronoun ("I call him", "I volunteer ... and help them") is someone the
    # fact names, not whom it is about: another one is another fact ("I owe him" / "her")
    owners = {s.lstrip("*").split(">")[0] for s in found}  # "she" of "*she>dog" too
    found |= {"pronoun:" + _THIRD[b] for b in bases if b in _THIRD and _THIRD[b] not in owners}
    if any(s.startswith("*") for s in found) and any(
        t.split("'")[0] in _FIRST_PERSON for t in tokens
    ):
        found.add("*user")
    return frozenset(found)


# how much of a group a phrase is about: the whole of it, as the phrase alone says ("all my
# kids", "each of my kids", "none of my kids": each one, denied), or a part of it ("some of
# my kids", "one of my kids", "half my team"), which is another subject
_WHOLE = frozenset("all every each both none neither whole".split())
_PART = frozenset("some most many few several any either half".split())
_ARTICLES = frozenset("a an the".split())
_TAIL = re.compile(r"[\w'-]+")


def _scope(before: str) -> str:
    """How much of the possessive phrase after ``before`` a text is about, as a key suffix.

    ``""`` for the whole of it ("my kids", "all my kids", "each of my kids", "both my
    parents"); ``"@some"``, ``"@#"`` (a number: "two of my kids", "one of my parents"),
    ``"@friend"`` (a word after an article: "a friend of my sister", "the rest of my
    family") for a part of it or someone else.

    Example:
        >>> _scope("All "), _scope("Some of "), _scope("One of "), _scope("I met a friend of ")
        ('', '@some', '@#', '@friend')
    """
    words: list[str] = _TAIL.findall(before[-40:].lower())
    of = bool(words) and words[-1] == "of"
    words = words[:-1] if of else words
    if not words:
        return ""
    word = words[-1]
    if word in _WHOLE or (of and word == "one" and words[-2:-1] in (["every"], ["each"])):
        return ""  # "all my kids", "every one of my kids": the whole group
    if word in _PART:
        return "@" + word  # "some of my kids", "half my team"
    if word in NUMBER_WORDS or word.isdigit():
        return "@#" if of else ""  # "two of my kids"
    if of and words[-2:-1] and words[-2] in _ARTICLES:
        return "@" + _canonical(word)  # "a friend of my sister", "the rest of my family"
    return ""  # "proud of my son", "I think of my mom": the phrase itself


def _leading(folded: str, tokens: list[str]) -> set[str]:
    """The subject the text starts with: a relation word, a pronoun or a name, if any."""
    first = _TOKEN.match(folded.lstrip().lower())
    word = first.group() if first else ""
    base = word.split("'")[0]
    if base in _PRONOUNS:
        return {"*" + base}  # "She is allergic to peanuts", "They have two dogs"
    if _is_entity(_canonical(word.removesuffix("'s"))):
        # "Son allergic to penicillin", "Mom is allergic ...": as "my son", "my mom"
        key, _ = _chain(_phrase(tokens, 0))
        return {"*" + key}
    lead = _LEADING_NAME.match(folded)
    if lead:
        name = lead.group(1)
        rest = folded.lstrip()[len(name) :]
        after = _TOKEN.findall(rest.lower())
        possessive = rest.startswith("'s")
        follower = after[0] if after else ""
        if name.lower() not in _NOT_NAMES and (possessive or _verb_like(follower, name)):
            key = "name:" + name.lower()
            if possessive:
                chain, _ = _chain(_phrase(_TOKEN.findall(rest[2:].lower()), 0))
                key = f"{key}>{chain}" if chain else key
            return {"*" + key}
    return set()


def _verb_like(follower: str, name: str) -> bool:
    """Whether the word after a leading capitalized word reads as its verb ("Tom enjoys")."""
    if known_verb(follower) or regular_past(follower):
        return True  # "Tom likes", "Joanna finished ..."
    # "Nate supports ...", but not "Prefers answers ..." (a verb leading, its object after)
    return len(follower) > 3 and follower.endswith("s") and not name.lower().endswith("s")


@lru_cache(maxsize=16384)
def _entity(word: str) -> str:
    """The person, pet or thing ``word`` names ("moms" -> "mother"), or ``""``."""
    base = _canonical(word)
    return base if _is_entity(base) else ""


# the words of a text in order, numbers and list commas included (what :func:`_roles` and
# :func:`_swapped` read); words that join the items of one list
_WORDS = re.compile(r"[^\W\d_](?:[^\W\d_]|['-])*|\d+(?:[.,:/]\d+)*|[,&/]")
_LISTING = frozenset(", & / and or nor".split())


@lru_cache(maxsize=4096)
def _tokens(text: str) -> tuple[str, ...]:
    """The words of ``text`` as written (``_WORDS``), read once for each check."""
    return tuple(_WORDS.findall(fold(text)))


@lru_cache(maxsize=4096)
def _words(text: str) -> tuple[str, ...]:
    """The words of ``text`` in lower case."""
    return tuple(word.lower() for word in _tokens(text))


@lru_cache(maxsize=4096)
def _bag(text: str) -> tuple[str, ...]:
    """The words of ``text`` in any order: two texts with other bags swapped no words."""
    return tuple(sorted(_words(text)))


# words between two named ones that put them in one role ("My wife and I", "Anna or Ben");
# a name guessed in a text with no case shares a role only through a conjunction ("anna and
# tom", "jazz, blues and rock"): "i drive my dad" is three roles, not "i", "drive" and
# "dad" in one
_JOINING = frozenset("and or nor both my our your his their the a an".split())


def _cased(text: str) -> bool:
    """Whether the case of ``text`` can mark a name: it writes capitals and lower case.

    "ANNA LIKES TOM" and "anna likes tom" cannot tell "Anna" from "likes".
    """
    return text != text.lower() and text != text.upper()


def _may_name(base: str) -> bool:
    """Whether a word of a text with no case may name someone or something (not a verb).

    A verb's base form is a verb too ("i drive my dad": "drive" as "drives").
    """
    return not (
        base in STOP_WORDS
        or known_verb(base)
        or base in VERB_BASES
        or base in NUMBER_WORDS
        or base in DATE_WORDS
        or regular_past(base)
        or (len(base) > 4 and base.endswith("ing"))
    )


@lru_cache(maxsize=4096)
def _roles(text: str, caseless: bool = False) -> tuple[frozenset[str], ...]:
    """The user, people, pets, things and names ``text`` names, in the order it names them.

    Each role is a set: those joined by "and" or "or" share one ("My wife and I"). "I" and
    "me" are the user, "he" and "him" one person; a possessive ("my") names no one. A name
    is a capitalized word; ``caseless`` (a text whose case cannot tell one) reads every word
    but a function word or a known verb as one ("anna likes tom"), a guessed name sharing a
    role only through "and", "or", "nor" or a list's comma.
    """
    roles: list[set[str]] = []
    seen: set[str] = set()
    joined = False  # only joining words since the last one named
    linked = False  # and a conjunction among them
    along = False  # after "with": the next one named joins the subject
    guessed = last_guessed = False  # a name read from no capital (``caseless``)
    leading = True  # the first word
    for word, lower in zip(_tokens(text), _words(text), strict=True):
        base = lower.split("'")[0]
        if not base[0].isalpha():
            # numbers join nothing; a list's marks ("jazz, blues and rock") link as "and"
            linked = joined and (linked or base in _LISTING)
            continue
        first, leading = leading, False
        if base == "with":
            along, joined = bool(roles), False
            continue
        guessed = False
        if base in _FIRST_PERSON:
            named = "user"
        elif base in _THIRD:
            named = _THIRD[base]
        elif entity := _entity(base):
            named = entity
        elif base not in _NOT_OWNERS and (
            _may_name(base)
            if caseless
            # a leading verb is no name ("Lives with Anna", "Visited Rome")
            else word[:1].isupper()
            and not (first and (known_verb(base) or base.endswith(("ing", "ed"))))
        ):
            named = "name:" + base
            guessed = caseless
        else:
            joined = joined and base in _JOINING
            linked = joined and (linked or base in _LISTING)
            along = along and base in _JOINING
            continue
        if named not in seen:
            seen.add(named)
            if along:
                roles[0].add(named)  # "I went hiking with Melanie": "Melanie and I"
            elif joined and (linked or not (guessed or last_guessed)):
                roles[-1].add(named)
            else:
                roles.append({named})
        joined, linked, along = not along, False, False
        last_guessed = guessed
    return tuple(frozenset(role) for role in roles)


def _lists(words: tuple[str, ...]) -> list[int]:
    """For each word, the list it is an item of: content words joined by "and", "or", ","."""
    group, last, listed = [], -1, False
    number = 0
    for word in words:
        content = word not in STOP_WORDS and word not in _LISTING
        if content:
            if last < 0 or not listed:
                number += 1
            last, listed = number, False
        elif word in _LISTING:
            listed = last >= 0
        elif word not in _JOINING:
            last = -1
        group.append(number if content else 0)
    return group


def _swapped(a: str, b: str) -> bool:
    """Whether two texts say the same words with content words trading places.

    The words around them are the same, so each word has another role: "Anna likes Tom" /
    "Tom likes Anna", "I use vim for python and emacs for java" / "... vim for java and
    emacs for python", "I run 5 km on Monday and 10 km on Friday" / "... 10 km on Monday
    and 5 km on Friday". The items of one list may come in any order ("jazz, blues and
    rock" / "rock, blues and jazz").

    Example:
        >>> _swapped("I prefer tea to coffee", "I prefer coffee to tea")
        True
        >>> _swapped("I like jazz and blues", "I like blues and jazz")
        False
    """
    wa, wb = _words(a), _words(b)
    if len(wa) != len(wb) or wa == wb or _bag(a) != _bag(b):
        return False  # most pairs: other words
    moved = [i for i, (x, y) in enumerate(zip(wa, wb, strict=True)) if x != y]
    if any(wa[i] in STOP_WORDS or wa[i] in _LISTING for i in moved):
        return False  # another frame: "to Rome from Paris" / "from Paris to Rome"
    lists = _lists(wa)
    items: dict[int, Counter[str]] = {}
    for i in moved:
        items.setdefault(lists[i], Counter())
        items[lists[i]][wa[i]] += 1
        items[lists[i]][wb[i]] -= 1
    return any(+counts or -counts for counts in items.values())


_DOERS = _FIRST_SUBJECTS | _PRONOUNS


@lru_cache(maxsize=4096)
def _doers(text: str) -> frozenset[tuple[str, int]]:
    """Each "I", "we", "he", "she" or "they" ``text`` says (its subjects), with its count.

    Each is ``(word, n)`` for its n-th time, so one text says all another says when its set
    holds the other's ("I think I'm allergic" holds "I think ...", not "I think he's ...").
    """
    said: list[tuple[str, int]] = []
    counts: dict[str, int] = {}
    for word in _words(text):
        base = word.split("'")[0]
        if base in _DOERS:
            counts[base] = counts.get(base, 0) + 1
            said.append((base, counts[base]))
    return frozenset(said)


_YEAR = r"(?:19|20)[0-9]{2}"
# a year that names which thing, as "project 12" names a project: after an owner or "the"
# and before its noun ("my 2024 goal", "the 2024 Olympics", "Anna's 2023 trip"), after the
# noun and "for" ("my goal for 2024"), or in a label before its colon ("Goals 2024: ...",
# "2024 goals: ..."); a year after any other word ("born in 1990", "since 2019", "May
# 2024: ...", a label's known verb: "Moved 2019: ...") or alone is a date, a value
_NAMING_YEAR = re.compile(
    rf"\b(?:my|our|your|his|her|their|its|the|this|that|[^\W\d_]+'s)\s+"
    rf"(?:({_YEAR})\s+(?=[^\W\d_])|(?:[^\W\d_]+\s+){{1,2}}for\s+({_YEAR})\b)"
    rf"|^[^\S\n]*(?:({_YEAR})\s+[^\W\d_][^:\n]{{0,40}}|([^\W\d_][^:\n]{{0,40}}?)\s({_YEAR}))"
    r"\s*:(?![0-9])",
    re.IGNORECASE | re.MULTILINE,
)
_A_YEAR = re.compile(_YEAR)
# words before a label's year that make it a date or a value ("May 2024:", "In 2024:", "The
# deadline is 2024: ...")
_DATING = DATE_WORDS | STOP_WORDS | frozenset({"till", "circa"})


@lru_cache(maxsize=4096)
def _named_years(text: str) -> frozenset[str]:
    """The years of ``text`` that say which thing it is about (see ``_NAMING_YEAR``).

    Example:
        >>> sorted(_named_years("My 2024 goal is to run a marathon"))
        ['2024']
        >>> sorted(_named_years("Vacation 2023: Japan")), sorted(_named_years("Born in 1990"))
        (['2023'], [])
        >>> sorted(_named_years("Moved 2019: Berlin"))
        []
    """
    found: set[str] = set()
    if _A_YEAR.search(text) is None:
        return frozenset()  # most texts name no year: the pattern is not tried
    for match in _NAMING_YEAR.finditer(fold(text)):
        owned, intended, leading, label, labelled = match.groups()
        last = label.split()[-1].lower() if label is not None else ""
        if last in _DATING or known_verb(last) or regular_past(last):
            continue  # "May 2024: moved to Berlin", "In 2024: ...", "Moved 2019: ...": a date
        found.add(owned or intended or leading or labelled)
    return frozenset(found)


def _inverted(roles_a: tuple[frozenset[str], ...], roles_b: tuple[frozenset[str], ...]) -> bool:
    """Whether two texts name the same ones in other roles (both name several)."""
    return (
        len(roles_a) > 1
        and len(roles_b) > 1
        and roles_a != roles_b
        and set().union(*roles_a) == set().union(*roles_b)
    )


def different_subject(a: str, b: str) -> bool:
    """Whether the two facts are about different people, pets or things.

    They are when the people, pets or things they name differ ("my sister" / "my son",
    "my husband" / "my husband's mother", "my sister" / the user), when both name
    something of the user's and nothing in common ("my left knee" / "my right knee"), or
    when both name several roles and the same ones in another order ("I called my mom" /
    "My mom called me", "from Paris to Rome" / "from Rome to Paris"; those joined by "and"
    or "or" share a role, and one "with" the first: "My wife and I went" is "I and my wife
    went", "I went hiking with Melanie" is "Melanie and I went hiking"). They are too when
    one says "I", "we", "he", "she" or "they" where the other says another ("I think I'm
    allergic" / "I think he's allergic", "We live in Paris" / "I live in Paris": "we" is
    the user with others), or each names someone by another pronoun ("I lent him my
    car" / "I lent her my car"); a pronoun added to the same subject is no other subject
    ("I volunteer at a shelter" / "... and help them find homes", "We live in Paris" /
    "We live in Paris and I work in Lyon"). In a text with no case ("ANNA LIKES TOM", "i
    flew from paris to rome") any word but a function word or a known verb (its base form
    too: "i drive my dad") may be a name, so when one has none both texts are read so as
    well, a reading that can only add other roles; and the same words with content words
    trading places are other roles in any case ("I use vim for python and emacs for java" /
    "... vim for java and emacs for python"), the items of one list aside. A year that says
    which thing is part of the subject ("my 2024 goal" / "my 2025 goal", "Goals 2024: ..." /
    "Goals 2025: ..."; ``_NAMING_YEAR``), as "project 12" is; a year after a preposition, a
    month or a verb is a value ("born in 1990", "my birth year is 1990", "Moved 2019: ...";
    in a label, only a verb the rules know: "Expires 2027: ..." names which).

    Example:
        >>> different_subject("My sister is allergic to peanuts", "My son is allergic to peanuts")
        True
        >>> different_subject("My son plays the piano", "my son has piano lessons")
        False
        >>> different_subject("My favourite colour is blue", "Favourite colour is green now")
        False
    """
    if _inverted(_roles(a), _roles(b)):
        return True  # the same ones in other roles: "I called my mom" / "My mom called me"
    # in a text with no case ("ANNA LIKES TOM", "i flew from paris to rome") any word may
    # be a name: both are read so too, a reading that can only add other roles
    if not (_cased(a) and _cased(b)) and _inverted(_roles(a, True), _roles(b, True)):
        return True
    if _swapped(a, b):
        return True  # "I use vim for python and emacs for java" / "... vim for java ..."
    doers_a, doers_b = _doers(a), _doers(b)
    if not (doers_a <= doers_b or doers_b <= doers_a):
        # a subject replaced: "I think I'm allergic" / "I think he's allergic", and "we"
        # (the user with others) / "I" (the user alone): "We live in Paris" / "I live ..."
        return True
    if _named_years(a) != _named_years(b):
        return True  # "my 2024 goal" / "my 2025 goal": a year that says which one
    sa, sb = subjects(a), subjects(b)
    if sa == sb:
        return False
    pronouns_a = {s for s in sa if s.startswith("pronoun:")}
    pronouns_b = {s for s in sb if s.startswith("pronoun:")}
    if pronouns_a and pronouns_b and pronouns_a != pronouns_b:
        return True  # "I lent him my car" / "I lent her my car"
    sa, sb = sa - pronouns_a, sb - pronouns_b
    entities_a = {s for s in sa if s.startswith("*")}
    entities_b = {s for s in sb if s.startswith("*")}
    if entities_a != entities_b:
        return True
    others_a, others_b = sa - entities_a, sb - entities_b
    return bool(others_a and others_b and not others_a & others_b)
