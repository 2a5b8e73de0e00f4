"""Everyday synonyms the word checks read as one word ("kids" / "children").

Each group lists words that can stand for one another in a remembered fact without
losing what it said: a fact that says "Caroline's children" carries "Caroline's kids", and
"is grateful for Nate's support" carries "appreciates Nate's support". The first word of a
group is the form both sides are read as (a person or pet keeps the name the subject check
of :mod:`~langchain_ltm.facts.conflicts` uses: "child", "dog", "mother").

Kept out on purpose: words with a second, common sense that is not a synonym ("present"
is a gift and a time, "hard" is difficult and solid, "store" a shop and a verb, "fast"
quick and fasting, "smart" clever and connected, "journey" a trip and a life story),
and words of different strength or kind ("like" / "love", "walk" / "hike"): reading them
as one would let a new text replace an old one that said something else.
"""

from __future__ import annotations

__all__ = ["SYNONYM_GROUPS"]

SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = tuple(
    tuple(line.split())
    for line in """
    child kid kids children
    dog dogs puppy puppies pup pups
    cat cats kitten kittens
    mother mom mum mommy
    father dad daddy
    doctor physician
    appreciate appreciative appreciation grateful gratitude thankful
    rewarding fulfilling fulfilled satisfying gratifying
    excited excitement eager keen enthusiastic enthusiasm thrilled
    encourage encouragement encouraging motivate motivated motivation
    career profession occupation
    calm calming peaceful relaxing soothing tranquil
    happy happiness joy joyful glad cheerful
    movie movies film films
    photo photos photograph picture pictures pic pics
    sofa couch
    buy purchase
    begin start
    finish complete
    big large huge
    small little tiny
    help assist assistance
    try attempt
    difficult tough challenging
    afraid scared frightened fearful
    sad unhappy sorrowful
    important crucial vital essential
    beautiful gorgeous lovely
    """.strip().splitlines()
)
"""Groups of interchangeable words, each led by the form the checks read them as."""
