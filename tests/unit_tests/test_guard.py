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
