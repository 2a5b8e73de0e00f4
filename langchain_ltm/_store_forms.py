"""How the place of a store is written: the words the ``from_*`` factories and ``ltm`` share.

``ltm --help``, its message for a URL of no known form, and the factories' refusals of a
URL they do not take quote these, so that they all say the same thing. Imports nothing of
the package (``ltm --help`` loads it).
"""

from __future__ import annotations

import re

__all__ = ["QDRANT_SERVER", "STORE_URLS", "is_host_port", "local_form", "url_scheme"]

STORE_URLS = (
    "sqlite:///PATH, memory://, postgresql://..., http(s)://HOST:6333 (a Qdrant server), "
    "a folder or qdrant:PATH (embedded Qdrant), chroma://HOST:PORT/COLLECTION, chroma:PATH, "
    "faiss:PATH, redis://HOST:PORT/INDEX or module:factory"
)
"""Every ``--store`` form: ``ltm --help`` lists them, and so does the error of another one."""

QDRANT_SERVER = "a Qdrant server is http://HOST:6333 (https:// with TLS)"
"""How to write a Qdrant server, for the refusal of ``qdrant://``, ``grpc://`` or ``HOST:PORT``."""

_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+)://")  # two letters at least: "C://data" is a path
_HOST_PORT = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]*:[0-9]{1,5}")
_LOCAL_FORM = re.compile(r"(qdrant|chroma|faiss|sqlite):(?!//)")


def url_scheme(text: str) -> str | None:
    """The scheme of ``text`` when it is written as a URL (``scheme://...``), else ``None``.

    A one-letter scheme is a Windows drive (``C://data/m.db``): a path, as in ``open_store``.

    Example:
        >>> url_scheme("qdrant://localhost:6333"), url_scheme("data/qdrant")
        ('qdrant', None)
        >>> url_scheme("C://data/memories.db") is None
        True
    """
    found = _URL.match(text)
    return found.group(1).lower() if found else None


def is_host_port(text: str) -> bool:
    """Whether ``text`` is a bare ``HOST:PORT`` (``localhost:6333``): a server, not a path.

    Example:
        >>> is_host_port("localhost:6333"), is_host_port("./localhost:6333")
        (True, False)
    """
    return _HOST_PORT.fullmatch(text) is not None


def local_form(text: str) -> tuple[str, str] | None:
    """``(form, path)`` when ``text`` is one of ``--store``'s forms of a local path, else ``None``.

    ``qdrant:PATH``, ``chroma:PATH``, ``faiss:PATH``, ``sqlite:PATH``: given to a factory
    that takes a path, such a form is not that path.

    Example:
        >>> local_form("qdrant:data/mem"), local_form("sqlite:///m.db"), local_form("data")
        (('qdrant', 'data/mem'), None, None)
    """
    found = _LOCAL_FORM.match(text)
    return (found.group(1), text[found.end() :]) if found else None
