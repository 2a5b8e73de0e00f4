"""The user's vectorstore failing, as langchain-ltm's errors: one place for every call into it.

Every call the generic engine makes into the user's ``VectorStore`` (search, add, read by
ids, delete, count; sync, async, and ``repair()``'s) runs inside :func:`engine_call`,
which re-raises what the store's client raised (``httpx.ConnectError`` from a stopped
Chroma server, a driver's ``OperationalError``, a timeout, the client's own error classes)
as :class:`~langchain_ltm.errors.BackendError`, the cause chained: callers catch one class
whatever the store (``MemoryMiddleware`` answers without memory when it is down instead of
failing the turn), and the message names the store, what it was doing, what that left
behind and when to retry.

Passed through unchanged: langchain-ltm's own errors (:class:`~langchain_ltm.errors.LTMError`),
anything that is not an ``Exception`` (``KeyboardInterrupt``, ``asyncio.CancelledError``),
and ``ValueError`` / ``TypeError``: a store raises those for what it was sent (a filter its
dialect does not take, metadata or vectors its collection refuses, a family function
called wrongly), which repeating the call cannot fix and the caller may already catch as
such; they get a note naming the store and the call instead (Python 3.11+).

Example:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_core.vectorstores import InMemoryVectorStore
    >>> vs = InMemoryVectorStore(DeterministicFakeEmbedding(size=4))
    >>> try:
    ...     with engine_call(vs, "search"):
    ...         raise ConnectionRefusedError(111, "Connection refused")
    ... except BackendError as exc:
    ...     print(str(exc).split(" (")[0], isinstance(exc.__cause__, ConnectionError))
    InMemoryVectorStore failed to search True
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langchain_ltm.errors import BackendError, LTMError

__all__ = ["engine_call", "engine_error"]

_RETRY = "Check that {name}'s database is up and reachable; retry once it answers."

# operation -> (what the store was doing, what the failure left behind)
OPERATIONS: dict[str, tuple[str, str]] = {
    "search": ("search", f"No memory was changed. {_RETRY}"),
    "add": (
        "add documents",
        "Nothing of this write was stored: the memories it would change are as they were "
        "(documents the store may have taken show in no search; repair() removes them). "
        f"{_RETRY}",
    ),
    "read": ("read documents by id", f"No memory was changed. {_RETRY}"),
    "delete": (
        "delete documents",
        "No memory is lost: the documents it kept are not current, no search shows them, "
        "and backend.repair() deletes them once {name} answers.",
    ),
    "count": ("count its documents", f"No memory was changed. {_RETRY}"),
    "open": (
        "answer while langchain-ltm opened it",
        "No memory was changed. Check that {name}'s database is up and reachable, then "
        "open the store again.",
    ),
}


# a search error that speaks of a limit on k: the store may cap the results one search
# returns (sqlite-vec's 4,096, Pinecone's top_k), which its registration's max_k= tells
_K_LIMIT = re.compile(r"\b(k|top_?k|n_results|limit|num_candidates)\b", re.IGNORECASE)
_MAX_K = (
    "No memory was changed. If {name}'s search takes at most some number of results (the "
    "error names a limit on k), register it with that number, register_vectorstore(..., "
    "max_k=N): the backend then never asks for more. Otherwise check that {name}'s "
    "database is up and reachable; retry once it answers."
)


def engine_error(vectorstore: Any, operation: str, exc: BaseException) -> BackendError:
    """The :class:`BackendError` for ``exc``, raised by ``vectorstore`` during ``operation``."""
    doing, outcome = OPERATIONS[operation]
    if operation == "search" and _K_LIMIT.search(str(exc)):
        outcome = _MAX_K
    name = type(vectorstore).__name__
    cls = type(exc)
    where = "" if cls.__module__ == "builtins" else f"{cls.__module__}."
    detail = f"{where}{cls.__qualname__}: {exc}".strip()
    return BackendError(f"{name} failed to {doing} ({detail}). {outcome.format(name=name)}")


@contextmanager
def engine_call(vectorstore: Any, operation: str) -> Iterator[None]:
    """Run the block's calls into ``vectorstore``; its failures raise as ``BackendError``.

    A plain ``with`` around an ``await`` works the same: sync and async calls share it.

    Raises:
        BackendError: The store's client raised (connection refused, timeout, a server
            error, ...); ``__cause__`` is what it raised.
    """
    try:
        yield
    except LTMError:
        raise
    except (ValueError, TypeError) as exc:  # refused what it was sent: not the engine down
        note = (
            f"langchain-ltm: raised by {type(vectorstore).__name__} asked to "
            f"{OPERATIONS[operation][0]}; repeating the call will not help."
        )
        add_note = getattr(exc, "add_note", None)  # Python 3.11+
        if add_note is not None and note not in getattr(exc, "__notes__", ()):
            add_note(note)
        raise
    except Exception as exc:
        raise engine_error(vectorstore, operation, exc) from exc
