import pytest
from langgraph.store.base import InvalidNamespaceError

from langchain_ltm import InvalidUserIdError
from langchain_ltm._labels import MAX_USER_ID_LENGTH, decode_label, encode_label
from langchain_ltm._ops import check_namespace

TRICKY = [
    "u1",
    "u10",
    "u_1",
    "u%1",
    "a.b",
    "a%2Eb",
    "a%252Eb",
    "A.B",
    "alice@example.com",
    "*",
    "%",
    "%2A",
    "x\x00y",
    "Alice",
    "alice",
    "\u0430lice",  # Cyrillic a
    "ｕ1",  # fullwidth u: NFKC would fold it into "u1", we must not
    "z" * MAX_USER_ID_LENGTH,
    "emoji 🙂",
]


@pytest.mark.parametrize("user_id", TRICKY)
def test_label_round_trips_and_is_a_valid_label(user_id):
    label = encode_label(user_id)
    assert decode_label(label) == user_id
    check_namespace(("memories", label))  # LangGraph would accept it
    assert label != "*"


def test_labels_never_collide():
    labels = [encode_label(u) for u in TRICKY]
    assert len(set(labels)) == len(TRICKY)


@pytest.mark.parametrize(
    ("user_id", "message"),
    [
        (None, "missing"),
        ("", "empty"),
        ("   ", "empty"),
        (42, "must be a str"),
        (b"u1", "must be a str"),
        ("x" * (MAX_USER_ID_LENGTH + 1), "limit"),
        ("\ud800", "surrogate"),
    ],
)
def test_bad_user_ids_raise_a_clear_value_error(user_id, message):
    with pytest.raises(InvalidUserIdError, match=message) as info:
        encode_label(user_id)
    assert isinstance(info.value, ValueError)


def test_dotted_raw_label_is_still_rejected_by_namespace_checks():
    with pytest.raises(InvalidNamespaceError):
        check_namespace(("memories", "a.b"))
