"""The secret guard: spot payment cards, IBANs, API keys and passwords before they are stored.

Memory outlives the conversation and is read back into prompts, so a secret stored by
mistake keeps leaking. ``find_secret`` returns a reason a model can act on, or ``None``.
Checks are precise rather than greedy: card numbers must pass the Luhn check and IBANs the
ISO 13616 mod-97 check, so order numbers, phone numbers and dates go through.

Example:
    >>> find_secret("my card is 4111 1111 1111 1111") is not None
    True
    >>> find_secret("my order number is 4111 1111 1111 1112") is None
    True
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from itertools import pairwise

__all__ = ["SecretGuard", "find_secret"]

SecretGuard = Callable[[str], "str | None"]
"""A secret check: ``guard(text)`` returns why the text must not be stored, or ``None``."""

_ADVICE = "Do not store secrets; store a harmless note instead (e.g. 'has a card ending in 4242')."

# A run of digit groups: any whitespace, '.', '/' or '-' between groups (zero-width characters
# are removed and NBSPs become spaces first). Groups and separators never overlap, so the
# match is linear.
_DIGIT_RUN = re.compile(r"(?<![0-9A-Za-z])[0-9]+(?:[\s./-]{1,3}[0-9]+)*")
_GROUP = re.compile(r"[0-9]+")
# How card numbers are printed: 4-4-4-4 (19 digits: one more group of 3), Amex 4-6-5,
# Diners 4-6-4, or ungrouped. A run may go on (CVV, expiry) after the card.
_CARD_GROUPINGS = ((4, 4, 4, 4, 3), (4, 4, 4, 4), (4, 6, 5), (4, 6, 4))
# Issuer ranges (first digits, from..to) and lengths of the major card networks (ISO/IEC 7812
# IINs): a number outside them is not a card, whatever its Luhn check says.
_ANY = (16, 17, 18, 19)
_CARD_BRANDS: tuple[tuple[str, str, tuple[int, ...]], ...] = (
    ("4", "4", (13, 16, 19)),  # Visa
    ("51", "55", (16,)),  # Mastercard
    ("2221", "2720", (16,)),  # Mastercard 2-series
    ("34", "34", (15,)),  # American Express
    ("37", "37", (15,)),
    ("6011", "6011", _ANY),  # Discover
    ("644", "649", _ANY),
    ("65", "65", _ANY),
    ("62", "62", _ANY),  # UnionPay
    ("3528", "3589", _ANY),  # JCB
    ("300", "305", (14, 16)),  # Diners Club
    ("36", "36", (14, 16)),
    ("38", "39", (16,)),
    ("2200", "2204", _ANY),  # Mir
    ("5018", "5018", (13, *_ANY)),  # Maestro
    ("5020", "5020", (13, *_ANY)),
    ("5038", "5038", (13, *_ANY)),
    ("5893", "5893", (13, *_ANY)),
    ("6304", "6304", (13, *_ANY)),
    ("6759", "6759", (13, *_ANY)),
    ("6761", "6763", (13, *_ANY)),
)
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"))
_IBAN_START = re.compile(r"(?<![0-9A-Za-z])[A-Za-z]{2}[0-9]{2}")
# IBAN length by country (ISO 13616 registry): an IBAN is cut there, so what follows it
# ("BIC ...", "EUR", a name in capitals) is not read as part of it.
_IBAN_LENGTHS = {
    **dict.fromkeys(("NO",), 15),
    **dict.fromkeys(("BE",), 16),
    **dict.fromkeys(("DK", "FI", "FK", "FO", "GL", "NL", "SD"), 18),
    **dict.fromkeys(("MK", "SI"), 19),
    **dict.fromkeys(("AT", "BA", "EE", "KZ", "LT", "LU", "MN", "XK"), 20),
    **dict.fromkeys(("CH", "HR", "LI", "LV"), 21),
    **dict.fromkeys(("BG", "BH", "CR", "DE", "GB", "GE", "IE", "ME", "RS", "VA"), 22),
    **dict.fromkeys(("AE", "GI", "IL", "IQ", "OM", "SO", "TL"), 23),
    **dict.fromkeys(("AD", "CZ", "ES", "MD", "PK", "RO", "SA", "SE", "SK", "TN", "VG"), 24),
    **dict.fromkeys(("LY", "PT", "ST"), 25),
    **dict.fromkeys(("IS", "TR"), 26),
    **dict.fromkeys(("BI", "DJ", "FR", "GR", "IT", "MC", "MR", "SM"), 27),
    **dict.fromkeys(("AL", "AZ", "BY", "CY", "DO", "GT", "HN", "HU", "LB", "NI", "PL", "SV"), 28),
    **dict.fromkeys(("BR", "EG", "PS", "QA", "UA"), 29),
    **dict.fromkeys(("JO", "KW", "MU", "YE"), 30),
    **dict.fromkeys(("MT", "SC"), 31),
    **dict.fromkeys(("LC",), 32),
    **dict.fromkeys(("RU",), 33),
}
_API_KEYS: list[tuple[str, re.Pattern[str]]] = [
    ("an OpenAI/Anthropic-style API key", re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}")),
    ("an AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    (
        "a GitHub token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
    ),
    ("a Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("a Stripe key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    (
        "a JSON Web Token",
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"),
    ),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
]
_PASSWORD_WORDS = (
    r"\b(?:password|passwd|passcode|passphrase|pwd|pin(?: code)?|secret key|api[ _-]?key|"
    r"access token|auth token|token)\b"
)
_PASSWORD = re.compile(
    _PASSWORD_WORDS + r"\s*(?:(?:is|was|has been)\s+(?:changed|set|reset|updated)\s+to|"
    r"(?:changed|set|reset|updated)\s+to|is|was|=|:)\s*[\"'`]?(?P<value>[^\s\"'`,;]{4,})",
    re.IGNORECASE,
)
_QUOTED_PASSWORD = re.compile(  # "uses the password 'hunter2' for everything"
    _PASSWORD_WORDS + r"\s+[\"'`](?P<value>[^\s\"'`]{4,})[\"'`]", re.IGNORECASE
)
_SSN = re.compile(
    r"\b(?:ssn|social security(?: number)?)\b\D{0,20}(?<!\d)\d{3}-?\d{2}-?\d{4}(?!\d)",
    re.IGNORECASE,
)
_CARD_CODE = re.compile(
    r"\b(?:cvv2?|cvc2?|card security code)\b\s*(?:is|was|=|:)?\s*(?P<value>\d{3,4})\b",
    re.IGNORECASE,
)
_NOT_A_VALUE = frozenset({"reset", "expired", "changed", "required", "needed", "wrong", "secret"})


def _normalized(text: str) -> str:
    """``text`` as the rules read it: NFKC-folded, zero-width characters removed.

    NFKC turns NBSPs into spaces and full-width digits into ASCII digits.
    """
    return unicodedata.normalize("NFKC", text).translate(_INVISIBLE)


def _is_card(digits: str) -> bool:
    if len(set(digits)) == 1 or not _luhn_ok(digits):
        return False
    return any(
        len(digits) in lengths and low <= digits[: len(low)] <= high
        for low, high, lengths in _CARD_BRANDS
    )


def _has_card(run: str) -> bool:
    """Whether a run of digit groups holds a card number, printed as cards are.

    A card starts the run or follows a group that cannot be its neighbour in one printed
    number (another length, or another separator: ``exp 12/27 4111 1111 1111 1111``); its
    groups are one of ``_CARD_GROUPINGS`` with one separator between them, or it is one
    ungrouped group. What follows it (a CVV, an expiry date) is not part of it.
    """
    spans = [m.span() for m in _GROUP.finditer(run)]
    groups = [run[start:end] for start, end in spans]
    seps = [run[left[1] : right[0]] for left, right in pairwise(spans)]
    for i, first in enumerate(groups):
        if i and len(groups[i - 1]) == len(first) and seps[i - 1] in seps[i : i + 1]:
            continue  # the middle of a longer number printed in groups of one size
        if 13 <= len(first) <= 19 and _is_card(first):
            return True
        for grouping in _CARD_GROUPINGS:
            end = i + len(grouping)
            if (
                end <= len(groups)
                and all(len(g) == n for g, n in zip(groups[i:end], grouping, strict=True))
                and len(set(seps[i : end - 1])) == 1
                and _is_card("".join(groups[i:end]))
            ):
                return True
    return False


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _iban_at(text: str, start: int) -> bool:
    """Whether a valid IBAN starts at ``start`` (passing the mod-97 check).

    That is its country's number of letters and digits, in any case, with single whitespace
    characters between them, ending where a word ends.
    """
    length = _IBAN_LENGTHS.get(text[start : start + 2].upper())
    if length is None:
        return False
    chars: list[str] = []
    i = start
    while len(chars) < length and i < len(text):
        if text[i].isascii() and text[i].isalnum():
            chars.append(text[i])
        elif not (text[i].isspace() and chars and i + 1 < len(text) and not text[i + 1].isspace()):
            return False
        i += 1
    if len(chars) < length or (i < len(text) and text[i].isascii() and text[i].isalnum()):
        return False
    iban = "".join(chars).upper()
    return int("".join(str(int(ch, 36)) for ch in iban[4:] + iban[:4])) % 97 == 1


def find_secret(text: str) -> str | None:
    """Why ``text`` must not be stored, or ``None`` when it looks safe.

    The stores' default ``secret_guard``: payment cards (a network's number range and a
    printed grouping, Luhn-checked), IBANs, API keys, stated passwords, PINs or tokens,
    social security numbers and card security codes.

    Args:
        text: A fact about to be stored.

    Returns:
        A reason the model or the user can read (what it looks like, and what to store
        instead), or ``None``.

    Example:
        >>> find_secret("My card is 4111 1111 1111 1111").split(":")[0]
        'Not stored'
        >>> find_secret("Has a card ending in 4242") is None
        True
    """
    text = _normalized(text)
    if any(_has_card(match.group()) for match in _DIGIT_RUN.finditer(text)):
        return f"Not stored: it contains what looks like a payment card number. {_ADVICE}"
    if any(_iban_at(text, match.start()) for match in _IBAN_START.finditer(text)):
        return f"Not stored: it contains what looks like an IBAN (bank account). {_ADVICE}"
    for name, pattern in _API_KEYS:
        if pattern.search(text):
            return f"Not stored: it contains what looks like {name}. {_ADVICE}"
    for pattern in (_PASSWORD, _QUOTED_PASSWORD):
        for match in pattern.finditer(text):
            if match.group("value").lower() not in _NOT_A_VALUE:
                return f"Not stored: it states a password, PIN or token. {_ADVICE}"
    if _SSN.search(text):
        return f"Not stored: it contains what looks like a social security number. {_ADVICE}"
    if _CARD_CODE.search(text):
        return f"Not stored: it contains what looks like a card's security code. {_ADVICE}"
    return None
