"""The generic backend over an in-process index kept in a folder (FAISS), saved after writes.

FAISS holds its index in memory; ``FAISS.save_local`` writes it to a folder. The catalog
(SQLite, beside the index) is durable at once, so the index is saved after every write,
sweep and repair that changed it: a process that ends, or crashes between two commands,
leaves the folder and the catalog in agreement. A crash inside a write leaves what
:meth:`VectorStoreBackend.repair` handles (documents that no search shows) or, in the
window between the catalog's commit and the save, items whose vectors the saved index
lacks: opening the folder runs the full repair, which puts them back from the vectors the
catalog keeps (nothing is embedded again).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain_ltm.backends.base import ItemKey, Record
from langchain_ltm.backends.vectorstore._repair import DEFAULT_GRACE_SECONDS
from langchain_ltm.backends.vectorstore.backend import VectorStoreBackend

__all__ = ["SavedFaissBackend"]


class SavedFaissBackend(VectorStoreBackend):
    """:class:`VectorStoreBackend` that calls ``save(vectorstore, folder)`` after each change.

    Args:
        vectorstore: The FAISS vectorstore (loaded from ``folder``, or new).
        folder: Where the index is saved.
        catalog: The catalog's SQLite file.
        save: Writes the vectorstore to the folder (e.g. ``FAISS.save_local`` done
            atomically per file).
        grace_seconds: As for :class:`VectorStoreBackend` (how old an unfinished write's
            documents must be before a repair deletes them).
        share_collection: As for :class:`VectorStoreBackend` (a new catalog over an index
            holding another catalog's memories: a second, separate store, not a refusal).

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from langchain_community.vectorstores import FAISS
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_ltm import LongTermMemoryStore
        >>> emb, folder = DeterministicFakeEmbedding(size=8), Path(tempfile.mkdtemp())
        >>> vs = FAISS.from_texts(["unrelated"], emb)
        >>> save = lambda vs, folder: vs.save_local(str(folder))
        >>> backend = SavedFaissBackend(vs, folder, catalog=folder / "c.db", save=save)
        >>> LongTermMemoryStore(backend, embeddings=emb).remember("bob", "Lives in Lisbon").action
        'created'
        >>> (folder / "index.faiss").is_file(); backend.close()
        True
    """

    def __init__(
        self,
        vectorstore: Any,
        folder: str | os.PathLike[str],
        *,
        catalog: str | os.PathLike[str],
        save: Callable[[Any, Path], None],
        grace_seconds: float = DEFAULT_GRACE_SECONDS,
        share_collection: bool = False,
    ) -> None:
        self.folder = Path(folder)  # before super().__init__: its repair() may save
        self._save_to = save
        super().__init__(
            vectorstore,
            catalog=catalog,
            grace_seconds=grace_seconds,
            share_collection=share_collection,
        )
        # the saved index may be older than the catalog (a crash between a commit and its
        # save): put back what it lacks from the vectors the catalog keeps
        self.repair()

    def write(self, upserts: Sequence[Record], deletes: Sequence[ItemKey]) -> int:  # noqa: D102
        try:
            return super().write(upserts, deletes)
        finally:
            self.save()

    def sweep(self, now: datetime) -> int:  # noqa: D102
        count = super().sweep(now)
        if count:
            self.save()
        return count

    def repair(self, grace_seconds: float | None = None, *, full: bool = True) -> int:  # noqa: D102
        count = super().repair(grace_seconds, full=full)
        if count:
            self.save()
        return count

    def save(self) -> None:
        """Write the index to :attr:`folder` now."""
        with self._vs_lock:
            self._save_to(self.vectorstore, self.folder)
