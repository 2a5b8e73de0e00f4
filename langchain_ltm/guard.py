"""The secret guard: spot payment cards, IBANs, keys, tokens and passwords before they are stored.

Memory outlives the conversation and is read back into prompts, so a secret stored by
mistake keeps leaking. ``find_secret`` returns a reason a model can act on, or ``None``.
Checks are precise rather than greedy, with no model and no network:

- cards: a card network's number range and length, a printed grouping (4-4-4-4, Amex
  4-6-5, ungrouped) and the Luhn check, so order, phone, ISBN and tracking numbers go
  through; IBANs: the country's length and the ISO 13616 mod-97 check;
- keys and tokens by their providers' prefixes (OpenAI, Anthropic, AWS, GitHub, GitLab,
  Slack, Google, Stripe, Hugging Face, npm, PyPI, SendGrid, Telegram, age, JWTs, PEM and
  PGP private keys), passwords in URLs, AWS secret keys and hex private keys by the words
  before them;
- a password, PIN, access code or token stated after its name ("My password for Netflix
  is ...", ``DB_PASSWORD=...``, "PIN 4821", in a dozen languages), when the value looks
  like one: a digit, a symbol or mixed case, not a placeholder, mask or reference;
- CVVs and US social security numbers after their names.

Example:
    >>> find_secret("my card is 4111 1111 1111 1111") is not None
    True
    >>> find_secret("my order number is 4111 1111 1111 1112") is None
    True
    >>> find_secret("My password for Netflix is BlueSky42") is not None
    True
    >>> find_secret("Their password is managed by Okta") is None
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
_MIXED = re.compile(r"[0-9A-Z]")


def _random_body(match: re.Match[str]) -> bool:
    """Whether a token's ``body`` looks generated, not a slug (``sk-refactor-login-flow``).

    Generated: a run of 12 letters and digits, and a digit or a capital somewhere.
    """
    body = match.group("body")
    return _MIXED.search(body) is not None and re.search(r"[A-Za-z0-9]{12}", body) is not None


def _has_digit(match: re.Match[str]) -> bool:
    return _DIGIT.search(match.group()) is not None


# (what it is, pattern, a check of the match or None). Prefixes are the providers' own.
_API_KEYS: tuple[tuple[str, re.Pattern[str], Callable[[re.Match[str]], bool] | None], ...] = (
    (
        "an OpenAI/Anthropic-style API key",
        re.compile(
            r"\bsk-(?:proj|svcacct|admin|ant(?:-(?:api|admin|sid)\d\d)?)-(?P<body>[A-Za-z0-9_-]{20,})"
        ),
        _random_body,
    ),
    (
        "an OpenAI-style API key",
        re.compile(r"\bsk-(?P<body>[A-Za-z0-9]{20,})(?![A-Za-z0-9-])"),
        _random_body,
    ),
    ("an AWS access key", re.compile(r"\b(?:AKIA|ABIA|ACCA)[A-Z2-7]{16}\b"), None),
    ("an AWS access key", re.compile(r"\bASIA[A-Z2-7]{16}\b"), _has_digit),
    (
        "a GitHub token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
        None,
    ),
    ("a GitLab token", re.compile(r"\bgl(?:pat|dt|rt|ptt)-[A-Za-z0-9_-]{20,}"), None),
    ("a Slack token", re.compile(r"\bxox[abprse]-[A-Za-z0-9-]{10,}"), None),
    ("a Slack token", re.compile(r"\bxapp-\d-[A-Za-z0-9-]{20,}"), None),
    (
        "a Slack or Discord webhook",
        re.compile(
            r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{20,}"
            r"|discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_-]{30,}"
        ),
        None,
    ),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), None),
    ("a Google OAuth client secret", re.compile(r"\bGOCSPX-[A-Za-z0-9_-]{20,}"), None),
    ("a Stripe key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"), None),
    ("a Stripe webhook secret", re.compile(r"\bwhsec_[A-Za-z0-9+/=]{24,}"), None),
    (
        "a Hugging Face token",
        re.compile(r"\bhf_(?P<body>[A-Za-z0-9]{30,})\b"),
        _random_body,
    ),
    ("an npm token", re.compile(r"\bnpm_(?P<body>[A-Za-z0-9]{36})\b"), _random_body),
    ("a PyPI token", re.compile(r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{20,}"), None),
    (
        "a SendGrid key",
        re.compile(r"\bSG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{40,50}(?![A-Za-z0-9_-])"),
        None,
    ),
    ("a Telegram bot token", re.compile(r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_-]{30,}"), None),
    ("an age secret key", re.compile(r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b"), None),
    (
        "a JSON Web Token",
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"),
        None,
    ),
    (
        "a private key",
        re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"),
        None,
    ),
)
# user:password@ in a URL (postgresql://, mongodb+srv://, redis://:pw@, https://).
_URL_CREDENTIALS = re.compile(
    r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@]{0,64}:(?P<value>[^\s@/]{1,128})@[A-Za-z0-9\[]"
)
# An AWS secret access key (40 base64 characters) and a raw 256-bit key (64 hex digits) have
# no prefix: they count only after words that name them.
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_HEX_KEY = re.compile(r"(?<![0-9A-Za-z])(?P<prefix>0x)?[0-9a-fA-F]{64}(?![0-9A-Za-z])")
_HEX_KEY_NAMES = re.compile(r"private[ _-]?key|privkey|secret")
# Statements of a password, PIN or token. A keyword, then what may stand between it and its
# value ("for Netflix", "(work)", "number"), then a connector (is, was, ':', '=', changed to,
# other languages' verbs), then the value, which must look like a secret (``_looks_secret``).
# Every part is bounded and its pieces cannot overlap, so a failed match costs little.
_LETTER_BEFORE = r"(?<![^\W\d_])"
_NO_LETTER_AFTER = r"(?![^\W\d_])"
_PASSWORD_KEYS = (
    r"passwords?|passwd|passcodes?|passphrases?|pwd|contraseñas?|contrasenas?|claves?"
    r"|mots? de passe|mdp|passw[oö]rt|kennwort|senhas?|wachtwoord|l[oö]senord(?:et)?"
    r"|passord(?:et)?|kodeord(?:et)?|adgangskode|salasana|şifre[mn]?|sifre[mn]?|hasło|haslo"
    r"|heslo|jelszó|пароль"
    r"|(?:wi-?fi|wlan|wpa2?|network)[ -]?(?:key|code)"
)
_PASSWORD_KEYS_CJK = r"パスワード|暗証番号|密码|密碼|비밀번호|암호"
_TOKEN_KEYS = (
    r"api[ _-]?keys?|access[ _-]?keys?|secret[ _-]?keys?|private[ _-]?keys?|access[ _-]?tokens?"
    r"|auth[ _-]?tokens?|bearer[ _-]?tokens?|refresh[ _-]?tokens?|tokens?"
    r"|(?:client|api|app|shared|webhook|signing)[ _-]?secrets?"
)
_PIN_KEYS = (
    r"pins?(?:[ -]?(?:code|number|no\.?))?|passcodes?|code pin|geheimzahl"
    r"|(?:unlock|door|gate|alarm|garage|lock|safe|entry|access|keypad|security)[ -]?codes?"
)
_BETWEEN = (  # "(work)", "number", "for the router", "to my laptop", "de Netflix"
    r"(?:\s*\([^()\n]{1,40}\)|\s+(?:number|code|no\.?|nr\.?))?"
    r"(?:\s+(?:for|to|on|at|of|in|into|with|from|de|du|des|del|di|da|do|für|fur|pour|para|per"
    r"|voor|van|von|zum|zur|zu)(?:\s+[\w.'\u2019@&+-]{1,30}){1,3}?)?"
)
_VERBS = (
    r"(?:(?:is|was|has\s+been|had\s+been|got|gets|will\s+be)\s+)?(?:changed|set|reset|updated)"
    r"\s+to|is(?:\s+now)?|was|are|were|to|es|est|ist|war|era|é|è|är|er|on|je|jest|это"
)
_CONNECTOR = (
    rf"(?:\s+(?:{_VERBS})(?:\s*:\s*|\s+)|\s*(?::|=>|->|=)\s*|['\u2019]s\s+|\s+[-\u2013\u2014]\s+"
    r"|\s*(?:は|是|为|為|는|은)\s*)"
)
_VALUE = r"[\"'`\u201c\u2018]?(?P<value>[^\s\"'`\u201d\u2019,;]{1,64})"
_PASSWORD_HINTS = (
    "pass", "pwd", "wifi", "wi-fi", "wlan", "wpa", "network", "contrase", "clave", "mdp",
    "kennwort", "senha", "wachtwoord", "senord", "kodeord", "adgangskode", "salasana", "ifre",
    "hasło", "haslo", "heslo", "jelsz", "пароль",
    "パスワード", "暗証番号", "密码", "密碼", "비밀번호", "암호",
)  # fmt: skip
_TOKEN_HINTS = ("key", "token", "secret")
_PIN_HINTS = ("pin", "code", "geheimzahl", "暗証番号")
# (kind of value, words one of which is in every match (lower case), pattern): the words let
# a text skip a pattern with one substring test.
_KEY_STATEMENTS: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = (
    (
        "password",
        _PASSWORD_HINTS,
        re.compile(
            rf"(?:{_LETTER_BEFORE}(?:{_PASSWORD_KEYS}){_NO_LETTER_AFTER}|{_PASSWORD_KEYS_CJK})"
            rf"{_BETWEEN}{_CONNECTOR}{_VALUE}",
            re.IGNORECASE,
        ),
    ),
    (
        "password",  # "pw: ...", "pass = ...": short words, only before ':' or '='
        ("pw", "pass", "pword"),
        re.compile(
            rf"{_LETTER_BEFORE}(?:pw|pass|pword|pwd){_NO_LETTER_AFTER}\s*[:=]\s*{_VALUE}",
            re.IGNORECASE,
        ),
    ),
    (
        "token",
        _TOKEN_HINTS,
        re.compile(
            rf"{_LETTER_BEFORE}(?:{_TOKEN_KEYS}){_NO_LETTER_AFTER}{_BETWEEN}{_CONNECTOR}{_VALUE}",
            re.IGNORECASE,
        ),
    ),
    (
        "token",
        ("bearer",),
        re.compile(r"\bbearer\s+(?P<value>[A-Za-z0-9._~+/-]{16,}=*)", re.IGNORECASE),
    ),
    (
        "pin",  # a PIN needs no connector: "Bank card PIN 4821", "iPhone passcode 482913"
        _PIN_HINTS,
        re.compile(
            rf"(?:{_LETTER_BEFORE}(?:{_PIN_KEYS}){_NO_LETTER_AFTER}|暗証番号){_BETWEEN}"
            rf"(?:{_CONNECTOR}|\s+|\s*#\s*)[\"'`\u201c\u2018]?(?P<value>[0-9]{{4,8}})"
            r"(?![0-9A-Za-z]|[.,/-][0-9])",
            re.IGNORECASE,
        ),
    ),
    (
        "password",  # "Uses Tr0ub4dor3 as their password"
        (" as ",),
        re.compile(
            rf"\b(?:uses?|using|used|chose|chosen|picked|set)\s+{_VALUE}[\"'`\u201d\u2019]?\s+as\s+"
            r"(?:(?:the|their|his|her|my|a|an|its|our|your)\s+)?(?:[\w-]{1,20}\s+)?"
            r"(?:password|passcode|passphrase|pin)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "password",  # "Netflix login: bob@example.com / Tr0ub4dor3"
        ("login", "log-in", "sign-in", "cred"),
        re.compile(
            r"\b(?:login|log-in|sign-in|credentials|creds)\s*[:=]?\s*[^\s/]{1,64}\s+/\s+" + _VALUE,
            re.IGNORECASE,
        ),
    ),
    (
        "code",  # "2FA backup codes: 8f3k-2m9q, ..."
        ("backup", "recovery"),
        re.compile(
            r"\b(?:backup|recovery)\s+codes?\s*(?:(?:are|were|is)\s*)?:?\s*"
            r"(?P<value>[A-Za-z0-9]{4,12}(?:-[A-Za-z0-9]{3,12})?)(?![\w-])",
            re.IGNORECASE,
        ),
    ),
)
_QUOTED_PASSWORD = re.compile(  # "uses the password 'hunter2' for everything"
    rf"{_LETTER_BEFORE}(?:{_PASSWORD_KEYS}|{_TOKEN_KEYS}|pin){_NO_LETTER_AFTER}"
    r"\s+[\"'`\u201c\u2018](?P<value>[^\s\"'`\u201d\u2019]{4,64})[\"'`\u201d\u2019]",
    re.IGNORECASE,
)
# A setting in code or a .env/YAML/INI file: DB_PASSWORD=..., clientSecret: ..., "api_key": ...
_SETTING = re.compile(
    r"(?<![\w.$-])[\"']?(?P<name>[A-Za-z][A-Za-z0-9_-]{1,60})[\"']?\s*[:=]\s*"
    r"[\"'`]?(?P<value>[^\s\"'`,;]{1,200})"
)
_NAME_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_PASSWORD_NAMES = frozenset({"password", "passwd", "pwd", "pass", "passphrase", "passcode"})
_TOKEN_NAMES = frozenset({"secret", "token", "apikey", "credential", "credentials"})
_KEY_OWNERS = frozenset(
    {"api", "access", "secret", "private", "client", "account", "master", "signing", "encryption"}
)
# Values that say where a secret is, or that there is none, rather than what it is.
_NOT_SECRETS = frozenset(
    {
        "none", "null", "nil", "undefined", "true", "false", "empty", "redacted", "hidden",
        "unknown", "unset", "n/a", "na", "tbd", "todo", "changeme", "xxx",
        "1password", "lastpass", "keepass", "keepassxc", "bitwarden", "dashlane", "keychain",
        "icloud",
    }
)  # fmt: skip
_REFERENCE = re.compile(
    r"^(?:[<{\[$%(]|os\.|process\.env|env\(|getenv|environ|secrets\.|vault:|ENV\[)|://"
    r"|[*•●]{3}|(?i:x{4})|^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$",
)
_CAMEL_HUMP = re.compile(r"[a-z][A-Z]")
_DIGIT = re.compile(r"[0-9]")
_LETTER = re.compile(r"[A-Za-z]")
_SYMBOL = re.compile(r"[^\w\s.'\u2019()\[\]-]")
_SSN = re.compile(
    r"\b(?:ssn|social security(?: number| no\.?)?)\b\D{0,20}"
    r"(?<!\d)\d{3}[- ]?\d{2}[- ]?\d{4}(?!\d)",
    re.IGNORECASE,
)
_CARD_CODE = re.compile(
    r"\b(?:cvv2?|cvc2?|cvn|card security code|(?:3|three|4|four)[- ]digits?(?: code)? on the back"
    r"(?: of [\w' ]{1,30}?)?)\b\s*(?:is|are|was|=|:)?\s*(?P<value>\d{3,4})\b",
    re.IGNORECASE,
)


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


def _looks_secret(value: str, kind: str, quoted: bool = False) -> bool:
    """Whether ``value``, stated as a ``kind`` ("password", "token", "pin", "code"), is one.

    A secret is not a common word: it has a digit, a symbol or a hump of mixed case
    (``BlueSky``), or it was quoted. Placeholders (``<key>``, ``${VAR}``), references
    (``os.environ[...]``), masks (``****``), URLs, e-mail addresses and ``None`` are not.
    """
    value = value.rstrip(".,:;!?)]}").lstrip("([") if not quoted else value
    if value.lower() in _NOT_SECRETS or _REFERENCE.search(value):
        return False
    digits = len(_DIGIT.findall(value))
    if kind == "pin":
        return 4 <= len(value) <= 8 and value.isdigit()
    if kind == "code":
        return digits > 0 and (digits >= 6 or _LETTER.search(value) is not None)
    if kind == "token":
        long_enough = len(value) >= 8
        return long_enough and (
            (digits > 0 and _LETTER.search(value) is not None)
            or (len(value) >= 16 and _CAMEL_HUMP.search(value) is not None)
        )
    if len(value) < 4 or (not _LETTER.search(value) and digits < 4):
        return False
    return quoted or digits > 0 or bool(_SYMBOL.search(value) or _CAMEL_HUMP.search(value))


def _setting_kind(name: str) -> str | None:
    """The kind of secret a setting's name says it holds (its last word decides)."""
    parts = [part.lower() for part in _NAME_PART.findall(name)]
    if not parts:
        return None
    last = parts[-1]
    if last in _PASSWORD_NAMES:
        return "password"
    if last == "pin":
        return "pin"
    if last in _TOKEN_NAMES or (last == "key" and len(parts) > 1 and parts[-2] in _KEY_OWNERS):
        return "token"
    return None


def _states_secret(text: str) -> bool:
    lowered = text.lower()
    for kind, hints, pattern in _KEY_STATEMENTS:
        if any(hint in lowered for hint in hints):
            for match in pattern.finditer(text):
                if _looks_secret(match.group("value"), kind):
                    return True
    if any(hint in lowered for hint in (*_PASSWORD_HINTS, *_TOKEN_HINTS, "pin")):
        for match in _QUOTED_PASSWORD.finditer(text):
            if _looks_secret(match.group("value"), "password", quoted=True):
                return True
    for match in _SETTING.finditer(text) if ("=" in text or ":" in text) else ():
        setting = _setting_kind(match.group("name"))
        if setting and _looks_secret(match.group("value"), setting):
            return True
    return False


def _api_key(text: str) -> str | None:
    """What kind of key or token ``text`` holds, or ``None``."""
    for name, pattern, check in _API_KEYS:
        if any(check is None or check(match) for match in pattern.finditer(text)):
            return name
    if "://" in text and any(
        _looks_secret(match.group("value"), "password") for match in _URL_CREDENTIALS.finditer(text)
    ):
        return "a URL with a password in it"
    lowered = text.lower()
    if "aws" in lowered and "secret" in lowered:
        for match in _AWS_SECRET.finditer(text):
            before = lowered[max(0, match.start() - 80) : match.start()]
            token = match.group()
            if (
                "aws" in before
                and "secret" in before
                and _DIGIT.search(token)
                and re.search("[a-z]", token)
                and re.search("[A-Z]", token)
            ):
                return "an AWS secret access key"
    for match in _HEX_KEY.finditer(text):
        before = lowered[max(0, match.start() - 60) : match.start()]
        names = _HEX_KEY_NAMES.findall(before)
        if any(n != "secret" or match.group("prefix") for n in names):
            return "a private key"
    return None


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
    name = _api_key(text)
    if name:
        return f"Not stored: it contains what looks like {name}. {_ADVICE}"
    if _states_secret(text):
        return f"Not stored: it states a password, PIN or token. {_ADVICE}"
    if _SSN.search(text):
        return f"Not stored: it contains what looks like a social security number. {_ADVICE}"
    if _CARD_CODE.search(text):
        return f"Not stored: it contains what looks like a card's security code. {_ADVICE}"
    return None
