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
- *moods*: "will", "would" ("I'd"), "should", "could", "might", ...: a plan or a wish is
  not the state it names ("I'm a nurse" / "I'll be a nurse"), so both must say the same;
- *past*: whether it reports something that happened ("went", "signed up", "was given");
  :func:`reports_past` also reads the irregular pasts that are not stems ("spoke", "had")
  and marks of the past with any verb ("two days ago", "last Monday", "has been to Rome").

Limits, stated plainly: the checks see words, not meaning. A synonym with another stem
("kids" / "children", "pottery class" / "ceramics course") reads as missing, so a true
restatement is kept as a second fact (listed as ``similar``), never merged wrongly. A word
that is present with another role ("Y thanks X" after "X thanks Y") reads as carried; the
subject check of :mod:`~langchain_ltm.facts.conflicts` catches the people, things and names
named in another order.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from langchain_ltm.facts.text import compatible

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

# letters of the Latin script, accented ones included ("Müller", "café", "Łódź")
_LATIN = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff"
# a word keeps a trailing "++" or "#": "C", "C++" and "C#" are three languages
_TOKEN = re.compile(
    rf"#?[0-9]+(?:[.,:/][0-9]+)*[a-z]*|[{_LATIN}][{_LATIN}0-9'\u0300-\u036f-]*(?:\+\+|#)?"
)
_LATIN_CHAR = re.compile(f"[{_LATIN}\u0300-\u036f]")  # a letter or an accent on one
# marks inside an emoji sequence or after a letter that change no content: variation
# selectors, joiners
_JOINERS = frozenset("\ufe0e\ufe0f\u200d\u200c")
# "I'm", "we're", "they've", "you'll", "I'd": the verb as a word ("am" is a copula: "I'm
# married" is a state, as "I am married"; "'d" is read as "would", a mood, though it may be
# "had"); "'s" (is or has) is left off
_CONTRACTED = re.compile(r"(?<=[A-Za-z])'(m|re|ve|ll|d)\b", re.IGNORECASE)
_CONTRACTED_VERBS = {"m": "am", "re": "are", "ve": "have", "ll": "will", "d": "would"}
# words that say a fact is a plan, a wish, a duty or a possibility, not a state: "I'll be a
# nurse", "I'd save for a house", "I should call my mum" say something else than "I'm a
# nurse", "I'm saving ...", "I call my mum"; both texts must say the same ones, as with a
# negation ("may" is a month too, "can" says what is so)
_MOODS = frozenset("will would shall should could might must".split())
_CONTRACTION = re.compile(r"'[sd]$")
# "won't" is "will not" ("wo" is no word), "can't" "can not"
_IRREGULAR_NOT = re.compile(r"\b(wo|sha|ca)n't\b", re.IGNORECASE)
_NOT_VERBS = {"wo": "will", "sha": "shall", "ca": "can"}
_SENTENCE_END = re.compile(r"[.!?;]\s")
_DIGIT = re.compile(r"\d")

_STOP = frozenset(
    """
    a an the this that these those some any each every all both either neither such own
    other another same certain
    i me my mine we us our ours you your yours he him his she her hers they them their theirs
    it its one's oneself himself herself themselves itself myself ourselves yourself
    user user's
    is are was were be been being am has have had having do does did doing done
    will would can could shall should may might must ought
    to of in on at for with from by about into onto over under after before during since
    until while as than via per upon within without through throughout across along around
    among between toward towards against beside besides near off out up down away
    and or but so yet if because though although whereas whether then also too
    who whom whose which what when where why how that there here
    just really very quite rather pretty fairly still even ever again already
    currently recently now lately nowadays today yesterday tonight
    always often usually sometimes frequently occasionally sometime
    lot lots much many more most less least few several plenty bit
    thing things something anything everything nothing stuff way
    well also actually especially particularly mainly mostly generally
    s t d ll m re ve
    """.split()
)
_NEGATIONS = frozenset("not no never nor none nobody nothing neither anymore longer".split())
_NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
    "thirteen": "13", "fourteen": "14", "fifteen": "15", "sixteen": "16", "seventeen": "17",
    "eighteen": "18", "nineteen": "19", "twenty": "20", "thirty": "30", "forty": "40",
    "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90",
    "hundred": "100", "thousand": "1000", "once": "1x", "twice": "2x", "single": "1",
    "couple": "2", "dozen": "12", "half": "0.5",
}  # fmt: skip
_DATE_WORDS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday "
    "friday saturday sunday weekday weekend morning afternoon evening night week month year "
    "spring summer autumn fall winter".split()
)
# a number right after one of these names a thing ("room 104"), it is not a quantity
_ID_NOUNS = frozenset(
    "number no nr room flight order project ticket case issue bus route line gate seat "
    "table suite building platform version chapter lot account invoice item model unit "
    "apartment apt id exit highway station channel box locker level team group batch "
    "episode season part phase step stage release sprint task ward bed car train client "
    "customer patient store shop branch request pr school class floor user employee".split()
)
_IRREGULAR = {
    "went": "go", "gone": "go", "goes": "go", "made": "make", "took": "take", "taken": "take",
    "got": "get", "gotten": "get", "gave": "give", "given": "give", "saw": "see", "seen": "see",
    "found": "find", "felt": "feel", "met": "meet", "ran": "run", "wrote": "write",
    "written": "write", "bought": "buy", "brought": "bring", "thought": "think", "told": "tell",
    "said": "say", "began": "begin", "begun": "begin", "won": "win", "lost": "lose",
    "left": "leave", "kept": "keep", "taught": "teach", "held": "hold", "built": "build",
    "sang": "sing", "sung": "sing", "drew": "draw", "drawn": "draw", "ate": "eat",
    "eaten": "eat", "drove": "drive", "driven": "drive", "flew": "fly", "flown": "fly",
    "became": "become", "came": "come", "knew": "know", "known": "know", "grew": "grow",
    "grown": "grow", "spent": "spend", "sent": "send", "led": "lead", "chose": "choose",
    "chosen": "choose", "fell": "fall", "fallen": "fall", "children": "child",
    "people": "person", "men": "man", "women": "woman", "feet": "foot", "teeth": "tooth",
    "mice": "mouse", "geese": "goose", "paid": "pay", "sold": "sell", "heard": "hear",
    "understood": "understand", "wore": "wear", "worn": "wear", "swam": "swim", "hung": "hang",
    "caught": "catch", "fought": "fight", "sat": "sit", "stood": "stand", "threw": "throw",
    "thrown": "throw", "broke": "break", "broken": "break", "woke": "wake", "rode": "ride",
    "ridden": "ride", "dug": "dig", "lent": "lend", "meant": "mean", "slept": "sleep",
}  # fmt: skip
PAST_FORMS = frozenset(
    w for w in _IRREGULAR if w not in {"goes", "children", "people", "men", "women", "feet",
                                        "teeth", "mice", "geese"}
)  # fmt: skip
"""Irregular past forms ("went", "made"): a leading name before one is a subject."""
LEADING_VERBS = frozenset(
    "is was are were has had have likes loves hates prefers works lives plays speaks wants "
    "needs goes drinks eats studies uses owns drives takes runs enjoys can will does did "
    "doesn't isn't wasn't moved started stopped visits teaches reads writes cooks "
    "runs hurts turned turns gets got became becomes keeps kept lost joined "
    "adores dislikes attends supports follows calls called named".split()
)
"""Verbs a fact often starts with ("Lives in Paris", "Works at Google"): capitalized at the
start of a sentence, such a word is not a name, as "Caroline" in "Caroline moved ..." is."""
_COPULAS = frozenset("is are am be been being was were become becomes seems feels".split())
_VOWELS = frozenset("aeiouy")


@dataclass(frozen=True)
class Words:
    """What :func:`read_words` finds in a fact (see the module docstring)."""

    terms: frozenset[str]
    names: frozenset[str]
    values: frozenset[str]
    negated: bool
    past: bool
    unread: frozenset[str] = frozenset()
    moods: frozenset[str] = frozenset()


@lru_cache(maxsize=16384)
def stem(word: str) -> str:
    """A light English stem: "inspired", "inspiring", "inspire" -> "inspir".

    Example:
        >>> [stem(w) for w in ("adoption", "adopting", "kids", "went", "studies")]
        ['adopt', 'adopt', 'kid', 'go', 'study']
    """
    word = word.lower().removesuffix("'s").strip("'-")
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    for suffix, repl, keep in (
        ("ies", "y", 3), ("ied", "y", 3), ("ations", "", 4), ("ation", "", 4), ("ions", "", 4),
        ("ion", "", 4), ("ments", "", 4), ("ment", "", 4), ("ness", "", 4), ("ingly", "", 4),
        ("ing", "", 3), ("edly", "", 4), ("ed", "", 3), ("ly", "", 4), ("es", "", 4),
        ("s", "", 3),
    ):  # fmt: skip
        if word.endswith(suffix) and len(word) - len(suffix) >= keep:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                continue
            if suffix == "es" and not word.endswith(("sses", "xes", "ches", "shes", "zes")):
                continue
            word = word[: len(word) - len(suffix)] + repl
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in _VOWELS | {"l", "s"}:
        word = word[:-1]  # planned -> plann -> plan
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


@lru_cache(maxsize=8192)
def fold(text: str) -> str:
    """NFKC, straight apostrophes, "n't" as " not", "I'm" as "I am": what both checks read.

    Superscripts, subscripts and fractions are kept ("10²" is not "102"): the checks read
    them as symbols (see :func:`unread_runs`).

    Example:
        >>> fold("I\u2019m sure they\u2019re right, aren't they?")
        'I am sure they are right, are not they?'
    """
    text = compatible(text).replace("\u2019", "'").replace("\u2018", "'")
    text = _CONTRACTED.sub(lambda m: " " + _CONTRACTED_VERBS[m.group(1).lower()], text)
    text = _IRREGULAR_NOT.sub(lambda m: _NOT_VERBS[m.group(1).lower()] + " not", text)
    return re.sub(r"n't\b", " not", text)


def _is_number(token: str) -> bool:
    return token.lstrip("#")[:1].isdigit()


@lru_cache(maxsize=8192)
def read_words(text: str) -> Words:
    """Read a fact into terms, names, values, polarity and tense.

    Example:
        >>> w = read_words("Project 12 has two members since May 2023")
        >>> sorted(w.terms), sorted(w.values)
        (['member', 'project', 'project#12'], ['2', '2023', 'may'])
        >>> read_words("Caroline doesn't eat meat anymore").negated
        True
    """
    folded = fold(text)
    starts = {0} | {m.end() for m in _SENTENCE_END.finditer(folded)}
    terms: set[str] = set()
    names: set[str] = set()
    values: set[str] = set()
    negated = past = False
    moods: set[str] = set()
    tokens = list(_TOKEN.finditer(folded))
    for i, match in enumerate(tokens):
        raw = match.group()
        lower = _CONTRACTION.sub("", raw.lower())
        previous_raw = tokens[i - 1].group() if i else ""
        previous = _CONTRACTION.sub("", previous_raw.lower())
        following = tokens[i + 1].group().lower() if i + 1 < len(tokens) else ""
        if _DIGIT.search(raw):
            digits = lower.lstrip("#")
            said = previous_raw.lower().endswith("'s") and _says_is(
                folded[: tokens[i - 1].end()], folded[match.start() :]
            )
            if _is_identifier(raw, digits, previous, previous_raw, following, said):
                # keyed by its noun: "project 12" is not "team 12"
                noun = stem(previous) if previous.isalpha() and previous not in _STOP else ""
                terms.add(f"{noun}#{digits}")
            else:
                values.add(digits.rstrip("stndrh") or digits)
        elif lower in _NEGATIONS:
            negated = True
        elif lower in _MOODS:
            moods.add(lower)
        elif lower in _NUMBER_WORDS:
            values.add(_NUMBER_WORDS[lower])
        elif lower in _DATE_WORDS:
            values.add(lower)
        elif lower not in _STOP or (raw == "A" and (match.start() not in starts or not following)):
            # a capital "A" inside a sentence or alone names a letter: "hepatitis A", "A"
            term = stem(lower)
            if term:
                terms.add(term)
                if raw[:1].isupper() and (match.start() not in starts or not _leads(lower)):
                    names.add(term)
            if lower in PAST_FORMS or (
                lower.endswith("ed") and len(lower) > 4 and previous not in _COPULAS
            ):
                past = True
    unread = unread_runs(folded)
    # a run is carried only as itself, as a name is: "我喜欢咖啡" does not carry "我喜欢茶"
    terms |= unread
    names |= unread
    return Words(
        frozenset(terms), frozenset(names), frozenset(values), negated, past, unread,
        frozenset(moods),
    )  # fmt: skip


def _unread(char: str) -> bool:
    """Whether ``char`` is content the word rules cannot read (not Latin, not punctuation)."""
    if char.isascii() or _LATIN_CHAR.match(char):
        return False
    return unicodedata.category(char)[0] not in "PZC"


def unread_runs(text: str) -> frozenset[str]:
    """The runs of ``text`` the word rules cannot read: other scripts, symbols, emoji.

    A run is what stands between spaces, punctuation and Latin-script words, case-folded: a
    word of a script with spaces ("Дмитрий"), a whole clause of one without ("我喜欢咖啡"),
    a symbol or emoji ("🥜", "€"). The rules know no words of those scripts (which word is
    a subject, a negation, a name), so a text holding them is carried only by a text with the
    same runs.

    Example:
        >>> sorted(unread_runs("My colleague 李伟 is on leave 🏖️"))
        ['李伟', '🏖']
        >>> unread_runs("Ich treffe Herrn Müller am Montag")
        frozenset()
    """
    if text.isascii():
        return frozenset()
    runs: set[str] = set()
    run: list[str] = []
    for char in text:
        if char in _JOINERS:
            continue
        if _unread(char):
            run.append(char)
        else:
            if run:
                runs.add("".join(run).casefold())
            run = []
    if run:
        runs.add("".join(run).casefold())
    return frozenset(runs)


def _leads(word: str) -> bool:
    """Whether ``word``, capitalized at the start of a sentence, is a verb, not a name."""
    return word.endswith("ing") or word in LEADING_VERBS or word in PAST_FORMS


_ORDINALS = frozenset({"st", "nd", "rd", "th"})
_UNITS = frozenset(
    "mg g kg lb lbs oz km m cm mm mi ft ml l h hr hrs min s am pm k x st nd rd th".split()
)


def _is_identifier(
    raw: str, digits: str, previous: str, previous_raw: str, nxt: str, said: bool = False
) -> bool:
    """Whether a number names a thing ("room 104", "#5003", "LH401", "client 4411").

    A number is a quantity or a date when it counts something ("5 members", "80 kg"), comes
    after a function word ("is 34", "in 2023"), a month ("May 5") or an "'s" that says "is"
    (``said``, :func:`_says_is`: "my son's 7" is "my son is 7"); it names a thing when it is
    glued to letters that are not a unit, follows "#" or an identifying noun, or follows a
    capitalized or any other word with no counted word after it ("I love Ocean's 11").
    """
    if raw.startswith("#") or not _is_number(raw):
        return True  # "#5003", "LH401", "A4"
    suffix = digits.lstrip("0123456789.,:/")
    if suffix:
        return suffix not in _UNITS  # "3b" names, "20mg" and "6am" measure
    if previous in _ID_NOUNS:
        return True
    if said:
        return False  # "my son's 7": "'s" is "is", as "is 34"
    counted = bool(nxt) and nxt not in _STOP and nxt not in _NEGATIONS and not nxt[0].isdigit()
    if previous_raw[:1].isupper() and previous not in _DATE_WORDS and not counted:
        return True  # "Project 12 has ...", but not "Has 2 kids"
    plural = nxt.endswith("s") and not nxt.endswith(("ss", "us", "is"))
    if previous == "the" and counted and not plural:
        return True  # "the 42 bus", but not "the 3 kids"
    return (
        bool(previous)
        and previous.isalpha()
        and previous not in _STOP
        and previous not in _DATE_WORDS
        and previous not in _NUMBER_WORDS
        and not counted
    )


def missing(old: str, new: str) -> tuple[str, ...]:
    """The terms of ``old`` that ``new`` does not carry (stems, names, ``#``identifiers).

    Example:
        >>> missing("Melanie signed up for a pottery class", "Melanie made a pottery plate")
        ('class', 'sign')
    """
    # a term is carried only as itself, its stem: a word that starts with it is another
    # word ("Julian" / "Julia", Polish "mieszkam" / "mieszka", I live / he lives, Dutch
    # "vriend" / "vriendin"); the stemmer reads the English inflections
    return tuple(sorted(read_words(old).terms - read_words(new).terms))


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


# the common function words of the languages most written in Latin script besides English
# (German, Dutch, French, Spanish, Italian, Portuguese, Polish, Scandinavian); those that
# are English words or spellings too are left out ("die", "am", "is", "me", "on", "son",
# "van", "pour", "soy", "hay", "en" route, "au" pair, "im" for "I'm", "5 mi", "est")
_FOREIGN = frozenset(
    """
    ich du sie wir ihr und oder aber nicht kein keine keinen der das dem des ein eine
    einen einem einer ist sind mit zu zum zur vom beim auf für aus bei nach mein meine
    meinen meinem meiner dein deine sein seine ihre unser unsere habe haben auch sehr noch
    jetzt schon wie
    ik jij hij zij wij mijn jouw zijn haar een het voor niet geen naar bij ook dat heb
    heeft wordt nog maar uit ons onze
    je tu il elle nous vous ils elles le la les une des du mes ses avec dans sur ne que
    qui aux cette sont suis avons ont très aussi mais ou nos vos leur leurs
    mis tus su el los las una es está estoy eres por pero muy se lo mí tengo tiene del
    también
    io gli di della dello che sono mio mia miei ci anche
    eu os uma meu minha não da das na é sou tenho muito
    nie się że od mój moja moje jestem ze dla jak czy jego jej
    jag och är inte jeg ikke det
    """.split()
)


# words of _STOP that other languages write as function words too ("am", "is", "me", "a",
# "in", "on", "so", "was"): no sign of English; the others ("the", "my", "with") are
_SHARED = frozenset("a am an in is me on so was also will to do no i per".split())


def _verb_after(word: str) -> bool:
    """Whether ``word`` reads as an English verb after a name ("Mia loves", "Del works")."""
    return (
        word in LEADING_VERBS
        or word in PAST_FORMS
        or (len(word) > 4 and word.endswith("ed"))
        or (len(word) > 3 and word.endswith("s") and not word.endswith("ss"))
    )


@lru_cache(maxsize=8192)
def reads_english(text: str) -> bool:
    """Whether the word rules can read ``text``: it reads as English, not another language.

    A text reads as another language with two function words of another Latin-script
    language ("la", "mijn", "voor"), or one and no English function word ("Ich arbeite am
    Montag": "am", "is", "me" are written in other languages too, "the", "my", "I" are
    not); such a word counts in lower case or leading a sentence before a lower-case word
    that is no English verb ("Le duele ...", not the name in "Mia loves painting", nor
    "Le Creuset" mid-sentence). Accents make it another language when at least half its
    lower-case words carry letters English does not write and they are two ("Tôi bị dị
    ứng", "mieszkają"), or one with no English function word ("Mieszkają tu";
    not "I love jalapeños"). English writes "da Vinci", "del Toro", "à la mode".
    The rules know which word is a subject, a negation or a copula in English only: in
    another language an added word may name another person ("Me encanta el jazz" / "A mi
    hermana le encanta el jazz") and "am", "is" are no English copulas ("Ich arbeite am
    Montag", Dutch "Mijn dochter is ...").

    Example:
        >>> reads_english("I love Le Creuset pans"), reads_english("Le duele la espalda")
        (True, False)
        >>> reads_english("Tôi bị dị ứng đậu phộng"), reads_english("I met Mr Müller")
        (False, True)
        >>> reads_english("Los Angeles is where I live"), reads_english("Mia loves painting")
        (True, True)
    """
    folded = fold(text).lstrip()
    if folded.isascii() and _FOREIGN.isdisjoint(_TOKEN.findall(folded.lower())):
        return True  # most texts: no word to weigh
    starts = {0} | {m.end() for m in _SENTENCE_END.finditer(folded)}
    lower = accented = foreign = english = 0
    tokens = list(_TOKEN.finditer(folded))
    for i, match in enumerate(tokens):
        raw = match.group()
        if raw[:1].isdigit() or raw[:1] == "#":
            continue
        word = raw.lower()
        # "Le duele ...", but not "UN reports", nor a name ("Los Angeles is ", "Mia loves")
        following = tokens[i + 1].group() if i + 1 < len(tokens) else ""
        leading = (
            match.start() in starts
            and raw[1:] == word[1:]
            and following.islower()
            and not _verb_after(following)
        )
        if word in _FOREIGN and (raw == word or leading):
            foreign += 1
        elif (word in _STOP and word not in _SHARED) or raw == "I" or raw.startswith("I'"):
            english += 1
        if raw == word:
            lower += 1
            accented += not word.isascii()
    if foreign >= 2 or (foreign and not english):
        return False
    return not accented or 2 * accented < lower or (accented < 2 and english > 0)


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


def _dates(values: frozenset[str]) -> frozenset[str]:
    return frozenset(v for v in values if v in _DATE_WORDS or (len(v) == 4 and v.isdigit()))


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


# where the value after an "'s" ends: a clause's end ("My son's 7, and he ...", "... 7 and
# loves Lego"); a comma or a point inside a number ("1,200", "5.5") ends nothing
_VALUE_END = re.compile(
    r"[,;:.!?](?:\s|$)|\b(?:and|but|whereas|although|though|while|because|yet|if|unless|"
    r"when|whenever)\b",
    re.IGNORECASE,
)


_OWNING = frozenset("my our your his her their".split())


def _says_is(before: str, after: str) -> bool:
    """Whether the "'s" ending ``before`` says "is", ``after`` being the rest of the text.

    It does where it ends the subject and a value alone follows: only function words and
    possessives before it in its clause ("my son's 7", "Anna's 7", "my son's birthday's
    May 5"), and after it a number or date that ends its clause, a unit at most ("our
    rent's 1200 a month", "my son's 7 and loves Lego"), as "I'm 34" says "I am 34". After
    a verb or a noun it owns what follows ("I love Ocean's 11", "I'm a fan of Beethoven's
    5"), and before a word it may own it ("my son's school"). :func:`read_words` (a number
    after such an "'s" is a value) and :func:`_said_is` (the slot check) read it with this
    one rule.

    Example:
        >>> _says_is("My son's", "7"), _says_is("I love Ocean's", "11")
        (True, False)
    """
    raw = [m.group() for m in _TOKEN.finditer(_VALUE_END.split(before)[-1])]
    words = [word.lower() for word in raw]
    if len(raw) > 2 and raw[-1][:1].isupper() and words[-3] in _OWNING:
        words[-2:-1] = []  # "my son Tom's 7": a noun between an owner and the name
    if not all(word in _STOP or word.endswith("'s") for word in words[:-1]):
        return False
    rest = read_words(_VALUE_END.split(after, maxsplit=1)[0])
    return bool(rest.values) and not rest.terms and not rest.negated and not rest.moods


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
    (:func:`conditional`), nor one the rules do not read as English (:func:`reads_english`:
    German "am Montag", Dutch "is" are no copulas). Many attributes hold
    several values ("my hobby is ..."), so the store asks ``merge_threshold`` for a slot
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
