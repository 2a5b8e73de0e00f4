"""One ``ltm`` command's streams, options and store: what every subcommand is given.

Opening a store loads the store, numpy and the embeddings, so :mod:`langchain_ltm.cli`
imports this module only after the arguments are parsed. The fact commands (``remember``,
``recall``, ``list``, ``forget``, ``clear``) take :attr:`Session.facts`: on SQLite a
:class:`~langchain_ltm.facts.FactStore` with the bare MiniLM encoder, which imports neither
LangGraph nor LangChain (~0.3 s less start-up); the other commands take the full store.
"""

from __future__ import annotations

import argparse
import functools
import os
import shlex
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar, cast

from langchain_ltm.cli.exits import EXIT_NOT_FOUND, EXIT_USAGE, Failure
from langchain_ltm.cli.io import Output, Progress, descriptor_named, dumps, is_terminal, table
from langchain_ltm.defaults import (
    DefaultStoreWarning,
    _redact,
    check_sqlite_url,
    default_store_path,
    legacy_store_folder,
    open_facts,
    open_store,
    qdrant_folder,
    sqlite_path,
)

if TYPE_CHECKING:
    from langchain_ltm.cli.warm.client import WarmEncoder
    from langchain_ltm.facts.standalone import FactStore
    from langchain_ltm.store import LongTermMemoryStore

_Opened = TypeVar("_Opened")

__all__ = ["MANY", "MIN_PREFIX", "Session", "all_users", "default_embeddings", "no_store_at"]

MANY = 1000
"""From how many facts, items or users ``remember``, ``export``, ``export-user-data``,
``clear``, ``forget-user`` and ``stats`` draw a progress bar (``import`` and ``migrate``
always do)."""

_NEEDS_A_STORE = frozenset(
    {"list", "recall", "forget", "clear", "stats", "export", "export-user-data", "forget-user"}
)
"""Commands that only read or delete: given a store that is not there, they stop."""

MIN_PREFIX = 4
"""The fewest characters of an id taken as its prefix (a whole id of any length is taken)."""


@functools.lru_cache(maxsize=1)
def default_embeddings() -> WarmEncoder:
    """The offline embeddings, made once per process (``main`` may run many times).

    The packaged MiniLM, from the warm encoder process when one runs
    (:mod:`langchain_ltm.cli.warm`; ``LTM_ENCODER_SERVER=off`` embeds in this process), with
    LangChain's embedding methods but not its base class: every store takes it, and a fact
    command on SQLite imports no langchain-core at all.
    """
    if os.name != "posix":  # no Unix sockets or flock: each command loads the model
        from langchain_ltm._minilm import MiniLMEncoder

        return cast("WarmEncoder", MiniLMEncoder())  # the same methods
    from langchain_ltm.cli.warm.client import WarmEncoder

    return WarmEncoder()


class Session:
    """One command's streams, options and (lazily opened, always closed) store."""

    def __init__(self, args: argparse.Namespace, out: Output | IO[str], err: IO[str]) -> None:
        self.args = args
        self.out = out
        self.err = err
        self.url: str | None = args.store  # --store, else $LTM_STORE, else None: the default
        # for error messages (before and after opening); ``where`` describes the open store
        self.target = (
            f"the store at {_redact(self.url)}"
            if self.url
            else f"the default store {default_store_path()}"
        )
        self.where = self.target
        self._store: LongTermMemoryStore | None = None
        self._facts: FactStore | LongTermMemoryStore | None = None
        self._opened: list[Any] = []

    @property
    def user(self) -> str:
        """The ``--user`` (or ``$LTM_USER``) of the command."""
        return str(self.args.user)

    @property
    def store(self) -> LongTermMemoryStore:
        """The store of ``--store``, opened on first use."""
        if self._store is None:
            self._store = self._open(open_store)
        return self._store

    @property
    def facts(self) -> FactStore | LongTermMemoryStore:
        """The fact API of ``--store``, opened on first use: the light one where there is one.

        The full :attr:`store` when that is open already (one handle per command).
        """
        if self._store is not None:
            return self._store
        if self._facts is None:
            self._facts = self._open(open_facts)
        return self._facts

    def _open(self, opener: Callable[..., tuple[_Opened, str]]) -> _Opened:
        self._exists_to_read()
        caught: list[warnings.WarningMessage] = []
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", DefaultStoreWarning)
                opened, self.where = opener(self.url, embeddings=default_embeddings())
        finally:  # outside catch_warnings: re-shown there, a warning was recorded again, and
            self._show(caught)  # _show looped over its own growing list until memory ran out
        if self.url is None:
            self.target = f"the default store ({self.where})"
        elif self.url != "memory://" and not cast("Any", opened).backend.capabilities.persistent:
            # a module:factory returning an InMemoryVectorStore (or an in-memory Qdrant):
            # "created" and then nothing at the next command, with no word of it
            print(
                f"ltm: note: {self.where} keeps nothing on disk: what this command writes "
                "is gone when it ends",
                file=self.err,
            )
        return opened

    def _exists_to_read(self) -> None:
        """A command that only reads or deletes never creates the store it is given.

        Raises:
            Failure: ``EXIT_NOT_FOUND``: ``--store`` names a SQLite file or a folder store
                that is not there (a typo would otherwise open a new, empty store and report
                nothing stored).
        """
        if self.args.command not in _NEEDS_A_STORE or not self.url:
            return
        missing = no_store_at(self.url)
        if missing is not None:
            raise Failure(
                EXIT_NOT_FOUND,
                f"{missing}: nothing to read or delete; `ltm remember` or `ltm import` "
                "creates a store",
            )

    def _show(self, caught: list[warnings.WarningMessage]) -> None:
        """The warnings of opening a store: the old-default notice as one ``ltm: note:`` line."""
        for warning in caught:
            if issubclass(warning.category, DefaultStoreWarning):
                print(f"ltm: note: {warning.message}", file=self.err)
            else:
                warnings.showwarning(
                    warning.message, warning.category, warning.filename, warning.lineno
                )

    def fact_id(self, given: str) -> str:
        """The id of the user's fact that ``given`` is, or is the unique beginning of.

        A whole id wins over a prefix. A prefix needs :data:`MIN_PREFIX` characters and
        must name exactly one of the user's current facts.

        Raises:
            Failure: ``EXIT_NOT_FOUND`` when no fact has that id or prefix, ``EXIT_USAGE``
                (the candidates listed) when several have it or it is too short.
        """
        facts = self.facts.list_all(self.user, refresh_ttl=False)
        if any(fact.id == given for fact in facts):
            return given
        found = [fact for fact in facts if given and fact.id.startswith(given)]
        if len(found) == 1 and len(given) >= MIN_PREFIX:
            return found[0].id
        whose = f"user {self.user!r}"
        if not found:
            raise Failure(
                EXIT_NOT_FOUND,
                f"{whose} has no fact with id {given!r} (nor one starting with it); "
                f"see the ids with: {self.command_line('list')}",
            )
        shown = table(["ID", "FACT"], [[fact.id, fact.content] for fact in found[:20]])
        more = f"\n... and {len(found) - 20} more" if len(found) > 20 else ""
        if len(found) == 1:
            head = f"{given!r} is too short for an id prefix (give {MIN_PREFIX} characters or more)"
        else:
            head = f"{given!r} begins {len(found)} facts of {whose}; give more of the id"
        raise Failure(EXIT_USAGE, f"{head}:\n{_indent(shown)}{more}")

    def command_line(self, command: str) -> str:
        """``ltm COMMAND`` for this command's user and ``--store``, to print in a hint.

        The ``--store`` given on the command line goes with it (without it, the hint read
        the default store); one from ``$LTM_STORE`` is left to the environment.
        """
        words = ["ltm", command, "--user", self.user]
        if self.url is not None and self.url != os.environ.get("LTM_STORE"):
            words += ["--store", _redact(self.url)]
        return shlex.join(words)

    def progress(self, label: str, unit: str, count: Callable[[], int]) -> Progress:
        """A progress bar on stderr for ``count()`` things, drawn on a terminal from MANY.

        ``count`` runs only when stderr is a terminal: counting can be a query.
        """
        if not is_terminal(self.err):
            return Progress(0, self.err, label, unit, min_total=MANY)
        return Progress(count(), self.err, label, unit, min_total=MANY)

    def counter(self, *namespaces: tuple[str, ...]) -> Callable[[], int]:
        """Count the items under ``namespaces`` in the store (for :meth:`progress`)."""
        return lambda: sum(self.facts.backend.count(ns) for ns in namespaces)

    def store_or_empty(self) -> LongTermMemoryStore:
        """:attr:`store`, or an empty in-memory one where there is no store yet.

        What ``import --dry-run`` decides against: a dry run writes nothing, not even the
        store a real run would create (a mistyped path then looked like a store that exists).
        """
        if self.url is None:
            exists = default_store_path().exists() or legacy_store_folder() is not None
        else:
            exists = no_store_at(self.url) is None
        if exists:
            return self.store
        empty, _ = open_store("memory://", embeddings=default_embeddings())
        self._opened.append(empty)
        return empty

    def open(self, url: str, role: str) -> tuple[LongTermMemoryStore, str]:
        """Open one more store (``migrate``'s source and target); closed with the session."""
        self.target = f"the {role} store at {_redact(url)}"
        store, where = open_store(url, embeddings=default_embeddings())
        self._opened.append(store)
        return store, where

    def close(self) -> None:
        """Close every store the command opened (each one, even if another fails)."""
        stores, self._opened = self._opened, []
        stores += [opened for opened in (self._store, self._facts) if opened is not None]
        self._store = self._facts = None
        failure: Exception | None = None
        for store in stores:  # close each, even when one of them fails
            try:
                store.close()
            except Exception as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

    def output_path(self) -> Path | None:
        """The file ``-o`` names, or None for stdout: no ``-o``, ``-``, or ``/dev/stdout``.

        Written through stdout as the shell opened it, ``-o /dev/stdout >> log`` appends
        (reopened by name, the file was replaced) and the summary stays off the output.
        """
        target = self.args.output
        if target is None or target == "-":
            return None
        path = Path(target).expanduser()
        fd = descriptor_named(path)
        ours = self.out_fd()  # None: stdout closed (>&-) or not a file
        if fd is not None and fd == (1 if ours is None else ours):
            return None
        store = _store_location(self.url)
        if store is not None and _overwrites(path, store):
            raise Failure(
                EXIT_USAGE,
                f"-o {target} is {'inside ' if store.is_dir() else ''}the store's own "
                f"{'folder' if store.is_dir() else 'file'} {store}: writing there would "
                "replace the memories of every user with this export. Give another file "
                "name; nothing was written.",
            )
        return path

    def out_fd(self) -> int | None:
        """The file descriptor of :attr:`out`, if it has one."""
        try:
            return self.out.fileno()
        except (AttributeError, OSError, ValueError):
            return None

    def emit(self, data: Any, human: str) -> None:
        """Print ``data`` as JSON with ``--json``, else the human text (if any)."""
        text = dumps(data) if self.args.json else human
        if text:
            print(text, file=self.out)


def all_users(store: LongTermMemoryStore) -> list[tuple[str, tuple[str, ...]]]:
    """Every user with something stored, with the namespace holding it.

    Only namespaces that hold items themselves: ``("memories", "acme", "bob")`` (user
    ``bob`` of a configuration whose namespace is ``("memories", "acme")``) does not make
    ``acme`` a user (cut to a depth, it did: a cleared user came back in ``ltm stats``).
    """
    found: list[tuple[str, tuple[str, ...]]] = []
    page, offset = 1000, 0
    while True:
        # no max_depth: user_id_of names no user for a namespace below a user's
        namespaces = store.list_namespaces(prefix=store.namespace, limit=page, offset=offset)
        for ns in namespaces:
            user = store.user_id_of(ns)
            if user is not None:
                found.append((user, ns))
        if len(namespaces) < page:
            return found
        offset += page


def no_store_at(url: str) -> str | None:
    """Why there is no store at ``url`` yet, or None where there is one (or may be).

    Looks at the stores that live in a file or folder, which opening would create: a SQLite
    file (``sqlite:///PATH``), an embedded Qdrant folder (``qdrant:PATH`` or a plain path)
    and a ``chroma:PATH`` or ``faiss:PATH`` folder (its catalog file). Servers, factories and
    malformed URLs are not looked at (opening them says what is wrong).

    Example:
        >>> no_store_at("sqlite:////no/such/folder/memories.db")
        'there is no SQLite file at /no/such/folder/memories.db (sqlite:///name.db is relative to the current folder, sqlite:////abs/name.db absolute)'
    """  # noqa: E501
    from langchain_ltm._vectorstore_urls import (  # at need
        checked_folder,
        folder_catalog,
        is_vectorstore_url,
    )

    if url.startswith("sqlite:"):
        try:
            path = sqlite_path(check_sqlite_url(url))
        except ValueError:
            return None  # open_store says how to write one
        if path.is_file() or path.is_dir():  # a folder: opening says it is one
            return None
        return (
            f"there is no SQLite file at {path} (sqlite:///name.db is relative to the current "
            "folder, sqlite:////abs/name.db absolute)"
        )
    if is_vectorstore_url(url):
        try:
            folder = checked_folder(url)  # chroma:PATH or faiss:PATH
        except ValueError:
            return None  # a factory (module:function), or a URL open_store refuses
        catalog = folder_catalog(url)
        if not folder.exists():
            return f"there is no folder {folder}"
        if not folder.is_dir() or catalog is None or catalog.is_file():
            return None
        return f"{folder} holds no langchain-ltm store of that URL (no {catalog.name})"
    if "://" in url:  # a server (qdrant://... : open_store refuses it)
        return None
    try:
        folder = qdrant_folder(url)
    except ValueError:
        return None  # open_store says what is wrong with the URL
    if not folder.exists():
        return f"there is no folder {folder}"
    if not folder.is_dir() or (folder / "meta.json").is_file():
        return None
    return f"{folder} holds no embedded Qdrant store"


def _store_location(url: str | None) -> Path | None:
    """The file or folder holding the store ``url`` names; None for servers and memory://.

    A SQLite file (``sqlite:///PATH``, the default store), or the folder of an embedded
    Qdrant (``qdrant:PATH``, a plain path, the old default), ``chroma:PATH`` or
    ``faiss:PATH`` store.
    """
    from langchain_ltm._vectorstore_urls import is_vectorstore_url, store_folder  # at need

    if url is None:
        return legacy_store_folder() or default_store_path()
    if url.startswith("sqlite:"):
        try:
            return sqlite_path(check_sqlite_url(url))
        except ValueError:
            return None
    if is_vectorstore_url(url):
        return store_folder(url)  # None for a factory (module:function) or a server
    if "://" in url:
        return None
    try:
        return qdrant_folder(url)
    except ValueError:
        return None


def _overwrites(path: Path, store: Path) -> bool:
    """Whether writing ``path`` replaces ``store``'s file (or its journal) or writes in its folder.

    A hard link or another path to the same file counts.
    """
    if store.is_dir():
        places = [path, *path.absolute().parents]
        return any(_same(place, store) for place in places)
    journals = [store.with_name(store.name + end) for end in ("", "-wal", "-shm", "-journal")]
    return any(_same(path, journal) for journal in journals)


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist: writing a new file replaces nothing
        return False


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())
