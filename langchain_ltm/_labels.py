"""Reversible encoding of any user id into one LangGraph namespace label.

LangGraph forbids '.' and NUL in labels and gives '*' a wildcard meaning in
``list_namespaces``. We percent-encode those characters and '%' itself, so the encoding is
injective: ``a.b`` -> ``a%2Eb`` while ``a%2Eb`` -> ``a%252Eb``. Case and Unicode are kept as
they are: user ids that differ in any code point get different labels.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_ltm.errors import InvalidUserIdError

MAX_USER_ID_LENGTH = 512

_ESCAPES = {"%": "%25", ".": "%2E", "\x00": "%00", "*": "%2A"}
_TO_ESCAPE = re.compile(r"[%.\x00*]")
_ESCAPED = re.compile(r"%(25|2E|00|2A)")
_UNESCAPES = {v[1:]: k for k, v in _ESCAPES.items()}


def validate_user_id(user_id: Any) -> str:
    if user_id is None:
        raise InvalidUserIdError(
            "user_id is missing: pass the id of the user whose memories these are "
            '(for tools: config={"configurable": {"user_id": "..."}}).'
        )
    if not isinstance(user_id, str):
        raise InvalidUserIdError(
            f"user_id must be a str, got {type(user_id).__name__} ({user_id!r}); "
            "convert it explicitly, e.g. str(user_id)."
        )
    if not user_id.strip():
        raise InvalidUserIdError("user_id is empty: pass a non-blank user id.")
    if len(user_id) > MAX_USER_ID_LENGTH:
        raise InvalidUserIdError(
            f"user_id is {len(user_id)} characters long; the limit is {MAX_USER_ID_LENGTH}. "
            "Use a shorter stable id (e.g. a database key or a hash of the long one)."
        )
    try:
        user_id.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidUserIdError(
            "user_id is not valid Unicode text (it contains a lone surrogate)."
        ) from exc
    return user_id


def encode_label(user_id: Any) -> str:
    """Encode a user id as a namespace label (validates it first)."""
    uid = validate_user_id(user_id)
    return _TO_ESCAPE.sub(lambda m: _ESCAPES[m.group()], uid)


def decode_label(label: str) -> str:
    """Invert :func:`encode_label`."""
    return _ESCAPED.sub(lambda m: _UNESCAPES[m.group(1)], label)
