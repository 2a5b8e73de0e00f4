"""What compacting a store reports, and the error when others hold it (every engine).

SQLite (:func:`langchain_ltm.backends.sqlite.compact`, ``VACUUM``) and Postgres
(:meth:`langchain_ltm.backends.postgres.PostgresBackend.compact`, ``CLUSTER``) both rewrite
the store and answer with a :class:`Compacted`; both refuse with :class:`StoreInUseError`
rather than wait behind other users of the store.
"""

from __future__ import annotations

from dataclasses import dataclass

from langchain_ltm.errors import StoreInUseError

__all__ = ["Compacted", "StoreInUseError"]


@dataclass(frozen=True, slots=True)
class Compacted:
    """What a compaction did: bytes on disk before and after, and seconds.

    ``path`` is what was compacted: the SQLite file, or the Postgres tables.
    """

    path: str
    before: int
    after: int
    seconds: float

    @property
    def freed(self) -> int:
        """Bytes given back to the disk (negative if the rewrite grew, as an index can)."""
        return self.before - self.after
