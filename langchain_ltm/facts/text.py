"""The text of a fact: validation, the normalized form exact dedup compares, its hash."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Any

from langchain_ltm._utf8 import encodes_as_utf8
from langchain_ltm.errors import InvalidFactError

__all__ = ["INVISIBLE", "compatible", "content_hash", "normalize_fact", "validate_text"]

_SPACE = re.compile(r"\s+")
_TRAILING = re.compile(r"[\s.!?;:,\u2026\u3002]+$")
INVISIBLE: dict[int, None] = dict.fromkeys(map(ord, "\ufeff\u200b\u200c\u200d\u2060\u00ad"))
"""Invisible marks that change no word, as a ``str.translate`` table that drops them: a
byte-order mark (a file or pipe's first line), zero-width spaces and joiners, the word
joiner, the soft hyphen."""
# characters whose compatibility form says something else: superscripts, subscripts and
# fractions ("10²" is not "102")
_KEPT = re.compile(
    "(["
    + "".join(
        chr(c)
        for c in range(0x80, 0x2200)
        if unicodedata.decomposition(chr(c)).startswith(("<super>", "<sub>", "<fraction>"))
    )
    + "]+)"
)


def compatible(text: str) -> str:
    """NFKC, except where it changes what a text says: superscripts, subscripts, fractions.

    Full-width letters, ligatures and the like fold (full-width "tea" is "tea"), but
    "10²" stays "10²", not "102", and "H₂O", "½" keep their marks.

    Example:
        >>> compatible("\uff54\uff45\uff41 at 10²")
        'tea at 10²'
    """
    if text.isascii():
        return text
    parts = _KEPT.split(text)
    parts[::2] = [unicodedata.normalize("NFKC", part) for part in parts[::2]]
    return unicodedata.normalize("NFC", "".join(parts))


def normalize_fact(text: str) -> str:
    """The form exact dedup compares: NFKC, case-folded, single spaces, no trailing punctuation.

    Invisible marks (a byte-order mark, zero-width spaces and joiners, soft hyphens) are
    left out, so a text pasted with one is the text without it, and a text of nothing but
    those has no content. NFKC and case folding read "10²" as "102" and "Maßen" as
    "massen": such texts share a hash (stored facts keep the hashes every release wrote,
    and Postgres keeps one current fact per hash), so one is the other's ``duplicate``.

    Args:
        text: A fact (or any text).

    Returns:
        Its normalized form.

    Example:
        >>> normalize_fact("  I  prefer Spanish!! ")
        'i prefer spanish'
        >>> normalize_fact("\ufeffI prefer\u200b Spanish") == normalize_fact("I prefer Spanish")
        True
    """
    text = unicodedata.normalize("NFKC", text.translate(INVISIBLE)).casefold()
    return _TRAILING.sub("", _SPACE.sub(" ", text).strip())


def content_hash(text: str) -> str:
    """Hash of the normalized text (hex, 32 characters).

    Two texts with one :func:`normalize_fact` form have one hash: a fact's
    ``content_hash``, which exact dedup compares.

    Args:
        text: A fact (or any text).

    Returns:
        The first 32 hex digits of the SHA-256 of ``normalize_fact(text)``.

    Example:
        >>> content_hash("Likes tea.") == content_hash("likes tea")
        True
    """
    return hashlib.sha256(normalize_fact(text).encode("utf-8")).hexdigest()[:32]


def validate_text(text: Any, what: str, max_chars: int) -> str:
    """Return ``text`` if it is storable, else raise InvalidFactError saying what to change.

    The check ``remember`` and ``recall`` run on each fact and query: a non-empty ``str``
    of at most ``max_chars`` characters, without NUL bytes or lone surrogates, with some
    content once punctuation is removed.

    Args:
        text: The fact or query.
        what: Its name in the message (``"fact"``, ``"query"``).
        max_chars: The store's ``max_fact_chars``.

    Example:
        >>> validate_text("likes tea", "fact", 2000)
        'likes tea'
        >>> validate_text("", "fact", 2000)
        Traceback (most recent call last):
        ...
        langchain_ltm.errors.InvalidFactError: fact is empty: pass some text.
    """
    if not isinstance(text, str):
        raise InvalidFactError(f"{what} must be a str, got {type(text).__name__}.")
    if not text.strip():
        raise InvalidFactError(f"{what} is empty: pass some text.")
    if len(text) > max_chars:
        advice = (
            "Ask a shorter question (a query is compared with short facts)."
            if what.startswith("query")
            else "Store one short fact per call (split long text into several facts)."
        )
        raise InvalidFactError(
            f"{what} is {len(text):,} characters long; the limit is {max_chars:,}. {advice}"
        )
    if "\x00" in text:
        raise InvalidFactError(f"{what} contains a NUL character; remove it.")
    if not encodes_as_utf8(text):
        raise InvalidFactError(f"{what} is not valid Unicode (it has a lone surrogate).")
    if not normalize_fact(text):
        raise InvalidFactError(f"{what} has no content once punctuation is removed.")
    return text
