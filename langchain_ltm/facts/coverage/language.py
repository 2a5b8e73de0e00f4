"""Whether the word rules can read a text: it reads as English (:func:`reads_english`)."""

from __future__ import annotations

from functools import lru_cache

from langchain_ltm.facts.coverage.words import (
    _SENTENCE_END,
    _TOKEN,
    STOP_WORDS,
    fold,
    known_verb,
    regular_past,
)

__all__ = ["reads_english"]


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


# words of STOP_WORDS that other languages write as function words too ("am", "is", "me", "a",
# "in", "on", "so", "was"): no sign of English; the others ("the", "my", "with") are
_SHARED = frozenset("a am an in is me on so was also will to do no i per".split())


def _verb_after(word: str) -> bool:
    """Whether ``word`` reads as an English verb after a name ("Mia loves", "Del works")."""
    return (
        known_verb(word)
        or regular_past(word)
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
        elif (word in STOP_WORDS and word not in _SHARED) or raw == "I" or raw.startswith("I'"):
            english += 1
        if raw == word:
            lower += 1
            accented += not word.isascii()
    if foreign >= 2 or (foreign and not english):
        return False
    return not accented or 2 * accented < lower or (accented < 2 and english > 0)
