import json
from pathlib import Path

import pytest

from langchain_ltm.guard import find_secret

CORPUS = [
    json.loads(line)
    for line in (Path(__file__).parent.parent / "data" / "secret_corpus.jsonl")
    .read_text()
    .splitlines()
]


@pytest.mark.parametrize("row", CORPUS, ids=[r["text"][:40] for r in CORPUS])
def test_guard_on_corpus(row):
    reason = find_secret(row["text"])
    assert (reason is not None) is row["secret"], reason
    if reason:
        assert reason.startswith("Not stored:") and "Do not store secrets" in reason


def test_corpus_has_both_kinds():
    assert sum(r["secret"] for r in CORPUS) >= 20
    assert sum(not r["secret"] for r in CORPUS) >= 20


@pytest.mark.parametrize(
    "text",
    [
        "User's account password was changed to Summer2024!",
        "User's password has been reset to Winter2025",
        "User uses the password 'hunter2' for everything",
        "User's card CVV is 123",
        "The CVC: 4821",
        "User's SSN is 123-45-6789",
        "User's social security number is 078051120",
    ],
)
def test_forms_an_extractor_writes_are_secrets(text):
    """An extracting model wrote these; each was stored."""
    assert find_secret(text) is not None


@pytest.mark.parametrize(
    "text",
    [
        "User's password was changed yesterday",
        "User reset their password last week",
        "Takes the 123 bus to work",
        "Asked what a CVV is",
        "Works at the social security office since 2019",
    ],
)
def test_talk_about_secrets_is_not_a_secret(text):
    assert find_secret(text) is None


def _refused(texts):
    return [t for t in texts if find_secret(t) is not None]


def _stored(texts):
    return [t for t in texts if find_secret(t) is None]


# Cases marked "helper" were written by a helper of this project hunting for misses
# (bench/data/secret_cases_helper.jsonl); the guard missed or refused them before.
CARDS = [
    "Card 4111.1111.1111.1111",  # helper: '.' between groups
    "Card 4111 - 1111 - 1111 - 1111",  # helper
    "Visa 4111 1111 1111 1111 737",  # helper: the CVV after the card made 19 digits
    "card 4242424242424242 123",  # helper
    "Visa-4111111111111111",  # helper
    "4111111111111111-12/27",  # helper
    "4111/1111/1111/1111",  # helper
    "Card 4111\u00a01111\u00a01111\u00a01111",  # helper: NBSP from a web page
    "Card 4111\u202f1111\u202f1111\u202f1111",  # helper: narrow NBSP
    "Card 4111\t1111\t1111\t1111",  # helper: tab
    "Card 4111\u200b1111\u200b1111\u200b1111",  # helper: zero-width space
    "Card " + " ".join(["\uff14\uff11\uff11\uff11"] + ["\uff11" * 4] * 3),  # full-width digits
    "exp 12/27 4111 1111 1111 1111",
    "Order 1234. 4111 1111 1111 1111",
    "Amex 3782 822463 10005",
    "Diners 3056 930902 5904",
    "JCB 3530111333300000",
    "Mastercard 2223 0031 2200 3222",
]
NOT_CARDS = [
    "Reading ISBN 978-1-4028-9462-6",  # helper: Luhn-valid, no card starts with 9
    "Phone IMEI 490154203237518",  # helper: Luhn-valid, 15 digits but not Amex
    "Amazon order 526-0181590-8301661",  # Luhn-valid; 3-7-7 is no card's grouping
    "Office phone 0044 20 1549 4093",  # Luhn-valid; no card starts with 0
    "Deployed at epoch ms 1742173142007",  # Luhn-valid; no card starts with 1
    "Vacation 2024-11-01 2024-07-05",  # Luhn-valid digits
    "USPS tracking 9400 1407 6256 8922 4860 89",  # Luhn-valid at 16; a longer number
    "Order number 3757021172091105",  # Luhn-valid; 37 is Amex, which has 15 digits
    "my order number is 4111 1111 1111 1112",  # Luhn fails
    "has a Visa card ending in 4242",
]


def test_cards_in_any_print_are_refused():
    assert _stored(CARDS) == []
    assert _refused(NOT_CARDS) == []


IBANS = [
    "IBAN DE89 3704 0044 0532 0130 00 BIC COBADEFFXXX",  # helper: "BIC" read as part of it
    "Pay to GB82 WEST 1234 5698 7654 32 EUR",  # helper
    "my iban is de89370400440532013000",  # helper: lower case
    "NL91ABNA0417164300 ACME BV",  # helper
    "IBAN DE89\u00a03704\u00a00044\u00a00532\u00a00130\u00a000",  # helper: NBSP
    "IBAN DE89\t3704\t0044\t0532\t0130\t00",  # helper: tab
    "IBAN DE89\u200b3704\u200b0044\u200b0532\u200b0130\u200b00",  # helper: zero-width
    "Ref AB12 then NO9386011117947",  # Norway: 15 characters
]
NOT_IBANS = [
    "Bank branch code DE12 ABC is closed",  # helper
    "IBAN DE89 3704 0044 0532 0130 01",  # mod-97 fails
    "DE89370400440532013000123 is a longer reference",  # not cut inside a word
    "Flight LH401 to New York",
]


def test_ibans_are_cut_to_their_countrys_length():
    assert _stored(IBANS) == []
    assert _refused(NOT_IBANS) == []


PASSWORDS = [
    "My password for Netflix is BlueSky42",  # helper: words between keyword and verb
    "The password to my laptop is sunshine99",  # helper
    "Password for the router: admin1234",  # helper
    "My password is: hunter22",  # helper
    "User's password (Netflix) is BlueSky42",  # helper
    "My password's hunter22",  # helper
    "Password - hunter22",  # helper
    "My passwords are hunter22 and BlueSky42",  # helper
    "pw: Tr0ub4dor&3",  # helper
    "gmail login bob@example.com pass: Tr0ub4dor3",  # helper
    "Netflix login: bob@example.com / Tr0ub4dor3",  # helper
    "Uses Tr0ub4dor3 as their password everywhere",  # helper
    "WiFi key: BlueSky42",  # helper
    "Password: CorrectHorseBatteryStaple",  # mixed case, no digit
    "Mi contraseña es Tr0ub4dor3",  # helper: other languages
    "Mon mot de passe est Tr0ub4dor3",  # helper
    "Mein Passwort ist Tr0ub4dor3",  # helper
    "Passwort: Tr0ub4dor3",  # helper
    "Minha senha é Tr0ub4dor3",  # helper
    "La mia password è Tr0ub4dor3",  # helper
    "Mijn wachtwoord is Tr0ub4dor3",  # helper
    "パスワードは Tr0ub4dor3 です",  # helper
    "Пароль: Tr0ub4dor3",
]
NOT_PASSWORDS = [
    "Their password was updated yesterday",  # helper: the value test
    "Password is stored in 1Password",  # helper
    "Their password is managed by Okta",  # helper
    "Password is optional for guest checkout",  # helper
    "Wifi password is written on the fridge",  # helper
    "Password: forgotten, needs a reset link",  # helper
    "Password: ******** (they did not share it)",  # helper: masked
    "Sets password = None in their test fixtures",  # helper
    "Password: Secret",  # a capitalised word is a word
    "Their password manager is 1Password",  # 'manager' is not 'for ...'
    "The password reset link is https://example.com/reset",
    "Password is 8-16 characters",
    "Password: ${DB_PASSWORD}",
    "Bus pass is valid until 2025",
    "Uses Python 3.12 as their main language",
]


def test_password_statements_need_a_value_that_looks_like_one():
    assert _stored(PASSWORDS) == []
    assert _refused(NOT_PASSWORDS) == []


PINS = [
    "PIN 4821",  # helper: no verb
    "Bank card PIN 4821",  # helper
    "iPhone passcode 482913",  # helper
    "User's PIN for their debit card is 4821",  # helper
    "My PIN number is 4821",  # helper
    "Meine PIN ist 4821",  # helper
    "The door code is 4821",  # helper
    "Alarm code: 4821#",  # helper
    "garage code 482193",  # helper
    "Phone unlock code is 4821",  # helper
    "2FA backup codes: 8f3k-2m9q, 7x1p-4r6t, 9c2v-5b8n",  # helper
    "GitHub recovery codes 1a2b3-c4d5e 6f7g8-h9i0j",  # helper
]
NOT_PINS = [
    "Their PIN is locked after three wrong tries",  # helper
    "Pin: grocery list for Saturday",  # helper
    "PIN was set to expire after 90 days",  # helper
    "Uses a PIN-code lock on the phone",  # helper
    "PIN is 4 digits",
    "Pinned 2024 goals",
    "Saved their recovery codes in a safe",
]


def test_pins_and_access_codes_are_4_to_8_digits_after_their_name():
    assert _stored(PINS) == []
    assert _refused(NOT_PINS) == []


TOKEN_STATEMENTS_AND_SETTINGS = [
    "OPENAI_API_KEY=9f8e7d6c5b4a39281706f5e4d3c2b1a0",  # helper: '_' before the keyword
    "DB_PASSWORD=Tr0ub4dor3",  # helper
    "DATABASE_PASSWORD=hunter22",  # helper
    "SECRET_KEY=django-insecure-8f#x!k2@q9",  # helper
    "CLIENT_SECRET=9f8e7d6c5b4a39281706f5e4d3c2b1a0",  # helper
    "AUTH_TOKEN=9f8e7d6c5b4a39281706f5e4d3c2b1a0",  # helper
    "client_secret: 9f8e7d6c5b4a39281706f5e4d3c2b1a0",  # helper
    "AccountName=acme;AccountKey=aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789==",  # helper: Azure
    "Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0",  # helper
    '{"password": "Tr0ub4dor3"}',
    "dbPassword: Tr0ub4dor3",
]
NOT_TOKENS = [
    "The API key is stored in Vault",  # helper
    "The API key is passed via the X-Api-Key header",  # helper
    "Their access token was revoked after the incident",  # helper
    "The token is invalid after logout",  # helper
    "api_key: <your-key-here> is the placeholder in their docs",  # helper
    "Loads the key with api_key=os.environ['OPENAI_API_KEY']",  # helper
    "Max token is 4096 for their fine-tune",  # helper
    "The end-of-sequence token is </s>",  # helper
    "tokenizer: cl100k_base",
    "secret_name: prod-db-2",  # the name's last word decides
    "max_tokens: 4096",
    "PASSWORD_FILE=/run/secrets/db",
]


def test_token_statements_and_settings_named_like_secrets():
    assert _stored(TOKEN_STATEMENTS_AND_SETTINGS) == []
    assert _refused(NOT_TOKENS) == []


def test_cvv_and_ssn_forms():
    assert (
        _stored(
            [
                "The 3 digits on the back of my Visa are 737",  # helper
                "My social security number is 123 45 6789",  # helper: spaces
                "Social Security No. 123-45-6789",
            ]
        )
        == []
    )
    assert _refused(["Call 415 555 0132", "Asked what the digits on the back mean"]) == []
