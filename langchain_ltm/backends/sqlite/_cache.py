"""The vectors of recently searched scopes, kept while the file has not changed.

A ranked search reads every vector of the user's scope (one blob per item) before scoring:
at 100,000 vectors that read is nearly all of the search. :class:`ScopeCache` keeps those
reads, keyed by scope, for as long as SQLite's ``PRAGMA data_version`` on a connection that
never writes stays the same: it changes with every commit by any other connection, in this
process or another, so one commit anywhere in the file empties the cache. A search uses
the cache only when the version read just before its snapshot started equals the one read
just after (no commit in between: the snapshot is that version). Items are still read from
the search's own snapshot (by rowid, within the searched scope, and only if the row still
holds the vectors that were scored), so a cached vector of a deleted item finds nothing,
a reused rowid never gives another item, and expired items stay out.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, NamedTuple

import numpy as np

__all__ = ["ScopeCache", "ScopeVectors"]


class ScopeVectors(NamedTuple):
    """Rowids, blob sizes and the concatenated float32 blobs of one scope's vectors."""

    rowids: np.ndarray[Any, Any]
    sizes: np.ndarray[Any, Any]
    blob: bytes


class ScopeCache:
    """Scope -> its vectors, valid for one ``data_version`` of the file (thread-safe).

    At most ``max_bytes`` of blobs; the least recently searched scope goes first.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.hits = 0
        self._version: int | None = None
        self._entries: OrderedDict[tuple[str, ...], ScopeVectors] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def lookup(self, version: int, prefix: tuple[str, ...]) -> ScopeVectors | None:
        """The scope's vectors if read at ``version``; a new version empties the cache."""
        with self._lock:
            if version != self._version:
                self._entries.clear()
                self._bytes, self._version = 0, version
                return None
            found = self._entries.get(prefix)
            if found is not None:
                self._entries.move_to_end(prefix)
                self.hits += 1
            return found

    def store(self, version: int, prefix: tuple[str, ...], vectors: ScopeVectors) -> None:
        """Keep ``vectors`` read at ``version`` (not if the file has changed since)."""
        size = len(vectors.blob)
        with self._lock:
            if version != self._version or size > self.max_bytes:
                return
            old = self._entries.pop(prefix, None)
            if old is not None:
                self._bytes -= len(old.blob)
            self._entries[prefix] = vectors
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= len(dropped.blob)

    def clear(self) -> None:
        """Forget everything (the backend closed)."""
        with self._lock:
            self._entries.clear()
            self._bytes, self._version = 0, None
