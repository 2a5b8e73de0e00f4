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
    "Moje hasło to Tr0ub4dor3",
    "Changed their password to Summer2024!",
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
    "Moved the password to 1Password",  # a password manager is no password
    "Their password is in LastPass",
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


KEYS_AND_TOKENS = [
    "GitLab token glpat-xY3kP9qR2sT5vW8zA1bC",  # helper
    "Slack app token xapp-1-A0123BCDEFG-1234567890123-0a1b2c3d4e5f60718293a4b5c6d7e8f9",  # helper
    "Posts alerts to https://hooks.slack.com/services/T01ABCDEF/B02GHIJKL/aBcDeFgHiJkLmNoPqRsTuVwX",
    "Stripe webhook secret whsec_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345",  # helper
    "Google client secret GOCSPX-aBcDeFgHiJkLmNoPqRsTuVwX",  # helper
    "Hugging Face token hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567",  # helper
    "npm token npm_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",  # helper
    "PyPI upload token pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoLWlqa2wtbW5vcC1xcnN0",  # helper
    "SG.aBcDeFgHiJkLmNoPqRsTuV.wXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ01",  # helper
    "Telegram bot token 123456789:AAH-aBcDeFgHiJkLmNoPqRsTuVwXyZ01234",  # helper
    "age key AGE-SECRET-KEY-1" + "Q" * 58,  # helper
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF0AAAAB\n-----END PGP PRIVATE KEY BLOCK-----",
    "-----BEGIN EC PRIVATE KEY-----",
    "sk-aBcDeFgHiJkLmNoPqRsT3BlbkFJuVwXyZ0123456789ab",  # legacy OpenAI key
    "Their AWS secret access key is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",  # helper
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",  # helper
    "ETH private key 0x4c0883a69102937d6231471b5dbb6204fe512961708279f3d3d4b0d6e1d3c1f1",  # helper
]
NOT_KEYS = [
    "Branch sk-refactor-login-flow-for-mobile",  # helper: a slug, not a key
    "Deploys to host sk-prod-database-cluster-01",  # helper
    "Stripe publishable key pk_live_51HxYzAbCdEfGhIjKlMn (public)",  # helper: public by design
    "Their Discord server is ASIAPACIFICFORUM2024",  # helper: AWS keys are base32, no 0 or 1
    "Tx hash 0x4c0883a69102937d6231471b5dbb6204fe512961708279f3d3d4b0d6e1d3c1f1",  # no key word
    "hf_hub_download_and_cache_everything_today",
    "Fixed it in commit 9f8e7d6c5b4a39281706f5e4d3c2b1a0e9f8d7c6",  # helper
]


def test_keys_and_tokens_by_their_providers_prefixes():
    assert _stored(KEYS_AND_TOKENS) == []
    assert _refused(NOT_KEYS) == []


def test_urls_with_a_password_in_them():
    assert (
        _stored(
            [
                "DB is postgresql://admin:S3cr3tPass!@db.example.com:5432/app",  # helper
                "mongodb+srv://appuser:Xk9vQ2mLp@cluster0.ab1cd.mongodb.net/prod",  # helper
                "redis://:Zx8Qm2Lp9Vr@cache.internal:6379/0",  # helper
                "Jenkins at https://deploy:Tr0ub4dor3@ci.example.com",  # helper
            ]
        )
        == []
    )
    assert (
        _refused(
            [
                "postgresql://user:password@localhost/db",  # the documentation's placeholder
                "postgresql://${DB_USER}:${DB_PASS}@db/app",
                "git clone ssh://git@github.com/org/repo",
                "https://example.com:8080/path",
            ]
        )
        == []
    )
