"""Whose memories a vectorstore holds: the check made when a new catalog opens over it.

Every document the generic engine writes carries ``ltm_store``, the id of the catalog that
wrote it, and a catalog sees only its own. A new catalog opened over a collection another
catalog wrote to (the same Chroma server reached as ``localhost`` and as ``127.0.0.1``, a
relative catalog path run from another folder, a catalog file moved away) would see none
of those memories: listings would say there are none, and an erase would report success
while the texts stay in the store. So when the catalog file does not exist yet and the
store's family has a ``probe`` (one bounded read: Chroma, FAISS, Redis), the open asks
the store for one of our documents and refuses with :class:`CatalogMismatchError` when it
finds one, unless ``share_collection=True`` says a second catalog is meant (a second
machine on one server collection). The files beside the new catalog that hold the id
found are named in the error (read only then, never on a normal open).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from langchain_ltm.backends.sqlite._sql import Tables
from langchain_ltm.backends.vectorstore._failures import engine_call
from langchain_ltm.backends.vectorstore.family import StoreFamily
from langchain_ltm.errors import CatalogMismatchError

__all__ = ["catalogs_with_id", "check_new_catalog"]

_MOST_FILES = 200  # files looked at beside the new catalog when naming the one that wrote
_SQLITE = b"SQLite format 3\x00"


def check_new_catalog(
    vectorstore: Any, family: StoreFamily, path: str, table: str, share_collection: bool
) -> None:
    """Refuse a catalog about to be created over a store holding another catalog's documents.

    Raises:
        CatalogMismatchError: ``path`` does not exist, ``share_collection`` is false and
            the store holds a document of langchain-ltm's (its message says what to do).
        BackendError: The store did not answer the probe.
    """
    if share_collection or family.probe is None or Path(path).exists():
        return
    with engine_call(vectorstore, "open"):
        found = family.probe(vectorstore)
    if found is None:
        return
    catalogs = catalogs_with_id(Path(path).parent, table, found)
    where = (
        f"the catalog that wrote them is {' or '.join(catalogs)}"
        if catalogs
        else (
            f"the catalog that wrote them is the SQLite file whose {table}_meta table has "
            f"vectorstore_id = {found!r}"
        )
    )
    raise CatalogMismatchError(
        f"{path} is a new catalog, but the {type(vectorstore).__name__} store already holds "
        f"langchain-ltm memories written through another catalog (their documents carry "
        f"ltm_store={found!r}). A new catalog would see none of them: listings would be "
        "empty and forgetting a user would erase nothing of theirs. Nothing was created. "
        f"Open the store with the catalog that wrote them ({where}): "
        "vectorstore_backend(vs, catalog=that_file). To keep a second, separate set of "
        "memories in this collection on purpose (a second machine on one server), pass "
        "vectorstore_backend(vs, catalog=..., share_collection=True).",
        catalog=path,
        store_id=found,
        catalogs=catalogs,
    )


def catalogs_with_id(folder: Path, table: str, store_id: str) -> list[str]:
    """The SQLite files in ``folder`` whose catalog (``table``) has the id ``store_id``."""
    meta = Tables(table).meta
    found: list[str] = []
    try:
        files = sorted(p for p in folder.iterdir() if p.is_file())[:_MOST_FILES]
    except OSError:
        return found
    for file in files:
        try:
            with open(file, "rb") as head:
                if head.read(16) != _SQLITE:
                    continue
            conn = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)
            try:
                row = conn.execute(
                    f"SELECT value FROM {meta} WHERE name = 'vectorstore_id'"
                ).fetchone()
            finally:
                conn.close()
        except (OSError, sqlite3.Error):
            continue
        if row is not None and str(row[0]) == store_id:
            found.append(str(file))
    return found
