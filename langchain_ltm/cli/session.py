"""One ``ltm`` command's streams, options and store: what every subcommand is given.

Opening a store loads the store, numpy and the embeddings, so :mod:`langchain_ltm.cli`
imports this module only after the arguments are parsed.
"""

from __future__ import annotations

import argparse
import functools
from typing import IO, Any

from langchain_core.embeddings import Embeddings

from langchain_ltm.cli.io import dumps
from langchain_ltm.defaults import _redact, data_dir, open_store
from langchain_ltm.store import LongTermMemoryStore

__all__ = ["Session", "all_users", "default_embeddings"]


@functools.lru_cache(maxsize=1)
def default_embeddings() -> Embeddings:
    """The offline embeddings, loaded once per process (``main`` may run many times)."""
    from langchain_ltm.embeddings import LocalMiniLMEmbeddings

    return LocalMiniLMEmbeddings()


class Session:
    """One command's streams, options and (lazily opened, always closed) store."""

    def __init__(self, args: argparse.Namespace, out: IO[str], err: IO[str]) -> None:
        self.args = args
        self.out = out
        self.err = err
        self.url: str | None = args.store  # --store, else $LTM_STORE, else None: the default
        # for error messages (before and after opening); ``where`` describes the open store
        self.target = (
            f"the store at {_redact(self.url)}"
            if self.url
            else f"the default store in {data_dir()}"
        )
        self.where = self.target
        self._store: LongTermMemoryStore | None = None
        self._opened: list[LongTermMemoryStore] = []

    @property
    def user(self) -> str:
        """The ``--user`` (or ``$LTM_USER``) of the command."""
        return str(self.args.user)

    @property
    def store(self) -> LongTermMemoryStore:
        """The store of ``--store``, opened on first use."""
        if self._store is None:
            self._store, self.where = open_store(self.url, embeddings=default_embeddings())
        return self._store

    def open(self, url: str, role: str) -> tuple[LongTermMemoryStore, str]:
        """Open one more store (``migrate``'s source and target); closed with the session."""
        self.target = f"the {role} store at {_redact(url)}"
        store, where = open_store(url, embeddings=default_embeddings())
        self._opened.append(store)
        return store, where

    def close(self) -> None:
        """Close every store the command opened (each one, even if another fails)."""
        stores, self._opened = self._opened, []
        if self._store is not None:
            stores.append(self._store)
            self._store = None
        failure: Exception | None = None
        for store in stores:  # close each, even when one of them fails
            try:
                store.close()
            except Exception as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

    def emit(self, data: Any, human: str) -> None:
        """Print ``data`` as JSON with ``--json``, else the human text (if any)."""
        text = dumps(data) if self.args.json else human
        if text:
            print(text, file=self.out)


def all_users(store: LongTermMemoryStore) -> list[tuple[str, tuple[str, ...]]]:
    """Every user with something stored, with the namespace holding it."""
    found: list[tuple[str, tuple[str, ...]]] = []
    depth, page, offset = len(store.namespace) + 1, 1000, 0
    while True:
        namespaces = store.list_namespaces(
            prefix=store.namespace, max_depth=depth, limit=page, offset=offset
        )
        for ns in namespaces:
            user = store.user_id_of(ns)
            if user is not None:
                found.append((user, ns))
        if len(namespaces) < page:
            return found
        offset += page
