"""Whether a string can be stored as UTF-8 text: the one check every layer shares."""

from __future__ import annotations

__all__ = ["encodes_as_utf8"]


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
