"""A fact read into words: terms, names, values, polarity, moods, tense (:class:`Words`).

The shared word lists and patterns of the checks, the light stemmer (:func:`stem`), the
folding both texts go through (:func:`fold`), identifying numbers, the runs of other
scripts and symbols the rules cannot read (:func:`unread_runs`) and the terms of one text
another lacks (:func:`missing`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from langchain_ltm.facts.text import INVISIBLE, compatible

__all__ = [
    "DATE_WORDS",
    "LEADING_VERBS",
    "NUMBER_WORDS",
    "PAST_FORMS",
    "STOP_WORDS",
    "VERB_BASES",
    "Words",
    "fold",
    "known_verb",
    "missing",
    "read_words",
    "regular_past",
    "stem",
    "unread_runs",
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
# negation ("may" is a month too, "can" says what is so); "have to" is one too (see _HAVE)
_MOODS = frozenset("will would shall should could might must".split())
_CONTRACTION = re.compile(r"'[sd]$")
# "won't" is "will not" ("wo" is no word), "can't" "can not"; typed without the apostrophe
# too ("wont", "cant": the other readings, "accustomed" and "hypocritical talk", are rare)
_IRREGULAR_NOT = re.compile(r"\b(wo|sha|ca)n'?t\b", re.IGNORECASE)
_NOT_VERBS = {"wo": "will", "sha": "shall", "ca": "can"}
# "n't" in any case ("DON'T"), and the auxiliaries typed without the apostrophe ("dont",
# "doesnt", "isnt", "wouldnt"), in lower case or capitals only: names are spelled so
# ("Arent", "Shant", "Mr Cant"), so a Capitalized one is read as written (see _negation)
_NOT = re.compile(
    r"n't\b|\b(do|does|did|is|are|was|were|has|have|had|would|could|should|must|need|might|"
    r"ai)nt\b",
    re.IGNORECASE,
)
# apostrophes typed otherwise: curly ones, the modifier letter (U+02BC); a backtick or an
# acute accent between two letters ("don`t", "don\u00b4t"); and the hyphens of Unicode
# (U+2010, U+2011 "full\u2011time"): NFKC keeps them, so a word would split in two. The
# invisible marks normalize_fact leaves out (zero-width spaces, soft hyphens) are left out.
_TYPED = (
    str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u2010": "-", "\u2011": "-"})
    | INVISIBLE
)
_QUOTE_IN_WORD = re.compile(r"(?<=[^\W\d_])[`\u00b4](?=[^\W\d_])")
# "have to" + a verb is a duty ("I have to work on Saturdays" is not "I work on Saturdays"),
# read as a mood of its own; before a determiner, a pronoun or a number "to" is a preposition
_HAVE = frozenset("have has had having".split())
_NOT_A_VERB = frozenset(
    "a an the this that these those my your his her its our their me him us them you it "
    "some any every each all no".split()
)
_SENTENCE_END = re.compile(r"[.!?;]\s")
_DIGIT = re.compile(r"\d")

STOP_WORDS = frozenset(
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
"""Function words, pronouns, auxiliaries and fillers: no content of a fact."""
_NEGATIONS = frozenset("not no never nor none nobody nothing neither anymore longer".split())
NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
    "thirteen": "13", "fourteen": "14", "fifteen": "15", "sixteen": "16", "seventeen": "17",
    "eighteen": "18", "nineteen": "19", "twenty": "20", "thirty": "30", "forty": "40",
    "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90",
    "hundred": "100", "thousand": "1000", "once": "1x", "twice": "2x", "single": "1",
    "couple": "2", "dozen": "12", "half": "0.5",
}  # fmt: skip
"""Number words and the digits they are read as ("five" = "5")."""
DATE_WORDS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday "
    "friday saturday sunday weekday weekend morning afternoon evening night week month year "
    "spring summer autumn fall winter".split()
)
"""Months, weekdays, times of day and seasons: dates, read as values."""
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


def known_verb(word: str) -> bool:
    """Whether the lower-case ``word`` is a verb the rules know: "likes", "moved", "went"."""
    return word in LEADING_VERBS or word in PAST_FORMS


def regular_past(word: str) -> bool:
    """Whether the lower-case ``word`` reads as a regular past: "finished" ("-ed", 5+ letters)."""
    return len(word) > 4 and word.endswith("ed")


def _base_form(verb: str) -> str:
    """The base form of a third person ("drives" -> "drive", "studies", "teaches", "goes")."""
    if verb.endswith("ies"):
        return verb[:-3] + "y"
    if verb.endswith(("ches", "shes", "sses", "xes", "oes")):
        return verb[:-2]
    return verb.removesuffix("s")


VERB_BASES = frozenset(
    {_base_form(w) for w in LEADING_VERBS if w.endswith("s") and w not in STOP_WORDS}
    | {_IRREGULAR[w] for w in PAST_FORMS}
)
"""The base forms of those verbs and of the irregular pasts ("drive", "visit", "go")."""
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
    them as symbols (see :func:`unread_runs`). A negation is read however it is typed: in
    capitals, with another apostrophe or none ("DON'T", "don`t", "dont", "CANT"; without
    one a Capitalized word is a name: "Arent", "Shant"); a Unicode hyphen is "-"
    ("full\u2011time"), and invisible marks are left out.

    Example:
        >>> fold("I\u2019m sure they\u2019re right, aren't they?")
        'I am sure they are right, are not they?'
        >>> fold("I DON'T eat fish, she doesnt eat meat")
        'I DO not eat fish, she does not eat meat'
    """
    if "`" in text or not text.isascii():
        text = compatible(_QUOTE_IN_WORD.sub("'", text.translate(_TYPED)))
    text = _CONTRACTED.sub(lambda m: " " + _CONTRACTED_VERBS[m.group(1).lower()], text)
    text = _IRREGULAR_NOT.sub(lambda m: _negation(m, _NOT_VERBS[m.group(1).lower()]), text)
    return _NOT.sub(lambda m: _negation(m, m.group(1) or ""), text)


def _negation(match: re.Match[str], verb: str) -> str:
    """``verb`` + " not" for a negation, or the word as written when it is a name.

    Without its apostrophe a Capitalized word is a name ("Arent", "Shant", "Mr Cant"): only
    one in lower case or in capitals is read as a negation ("dont", "CANT").
    """
    word = match.group()
    if "'" not in word and not (word.islower() or word.isupper()):
        return word
    return verb + " not"


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
                noun = stem(previous) if previous.isalpha() and previous not in STOP_WORDS else ""
                terms.add(f"{noun}#{digits}")
            else:
                values.add(digits.rstrip("stndrh") or digits)
        elif lower in _NEGATIONS:
            negated = True
        elif lower in _MOODS:
            moods.add(lower)
        elif lower in _HAVE and following == "to" and _verb_follows(tokens, i + 2):
            moods.add("have to")  # a duty: "I have to work", "he had to leave"
        elif lower in NUMBER_WORDS:
            values.add(NUMBER_WORDS[lower])
        elif lower in DATE_WORDS:
            values.add(lower)
        elif lower not in STOP_WORDS or (
            raw == "A" and (match.start() not in starts or not following)
        ):
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


def _verb_follows(tokens: list[re.Match[str]], i: int) -> bool:
    """Whether the word at ``i`` reads as a verb after "have to" ("work", not "the", "5")."""
    if i >= len(tokens):
        return False
    word = tokens[i].group().lower()
    return word[:1].isalpha() and word not in _NOT_A_VERB


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
    return word.endswith("ing") or known_verb(word)


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
    counted = bool(nxt) and nxt not in STOP_WORDS and nxt not in _NEGATIONS and not nxt[0].isdigit()
    if previous_raw[:1].isupper() and previous not in DATE_WORDS and not counted:
        return True  # "Project 12 has ...", but not "Has 2 kids"
    plural = nxt.endswith("s") and not nxt.endswith(("ss", "us", "is"))
    if previous == "the" and counted and not plural:
        return True  # "the 42 bus", but not "the 3 kids"
    return (
        bool(previous)
        and previous.isalpha()
        and previous not in STOP_WORDS
        and previous not in DATE_WORDS
        and previous not in NUMBER_WORDS
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
    if not all(word in STOP_WORDS or word.endswith("'s") for word in words[:-1]):
        return False
    rest = read_words(_VALUE_END.split(after, maxsplit=1)[0])
    return bool(rest.values) and not rest.terms and not rest.negated and not rest.moods
