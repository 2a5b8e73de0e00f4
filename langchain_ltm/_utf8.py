"""Whether a string can be stored as UTF-8 text: the one check every layer shares."""

from __future__ import annotations

__all__ = ["encodes_as_utf8", "storable"]


def encodes_as_utf8(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8, i.e. holds no lone surrogate (ASCII: at once).

    Example:
        >>> encodes_as_utf8("café"), encodes_as_utf8("a\\ud800")
        (True, False)
    """
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def storable(text: str) -> str:
    """``text`` with what no engine stores replaced: NUL by a space, a lone surrogate by "?".

    For text the agent side keeps from a conversation (a session turn, a recall query),
    where a message must never fail the run over memory.

    Example:
        >>> storable("a\\x00b\\ud800c")
        'a b?c'
    """
    if text.isascii() and "\x00" not in text:
        return text
    return text.replace("\x00", " ").encode("utf-8", "replace").decode("utf-8")
