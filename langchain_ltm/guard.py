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
from collections.abc import Callable

__all__ = ["SecretGuard", "find_secret"]

SecretGuard = Callable[[str], "str | None"]
"""A secret check: ``guard(text)`` returns why the text must not be stored, or ``None``."""

_ADVICE = "Do not store secrets; store a harmless note instead (e.g. 'has a card ending in 4242')."

_CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_IBAN = re.compile(r"\b([A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30})\b")
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


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _iban_ok(candidate: str) -> bool:
    iban = candidate.replace(" ", "")
    if not 15 <= len(iban) <= 34:
        return False
    rearranged = iban[4:] + iban[:4]
    number = "".join(str(int(ch, 36)) for ch in rearranged)
    return int(number) % 97 == 1


def find_secret(text: str) -> str | None:
    """Why ``text`` must not be stored, or ``None`` when it looks safe.

    The stores' default ``secret_guard``: payment cards (Luhn-checked), IBANs, API keys,
    stated passwords, PINs or tokens, social security numbers and card security codes.

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
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and _luhn_ok(digits) and len(set(digits)) > 1:
            return f"Not stored: it contains what looks like a payment card number. {_ADVICE}"
    for match in _IBAN.finditer(text):
        if _iban_ok(match.group(1)):
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
