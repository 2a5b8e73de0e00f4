"""Open a store from a URL, with the offline embeddings by default (CLI and demo use this).

URLs:
- ``memory://``: in-process, gone when the process exits.
- ``sqlite:///PATH``: one SQLite file, many processes (``sqlite:///memory.db`` is relative
  to the current folder, ``sqlite:////abs/memory.db`` absolute, ``~`` expanded); no extra.
- ``postgresql://user:pass@host/db``: Postgres with pgvector (extra ``[postgres]``).
- ``http(s)://host:6333``: a Qdrant server (extra ``[qdrant]``).
- ``qdrant:PATH`` or a plain path: Qdrant's embedded engine persisting under PATH (one
  process at a time; extra ``[qdrant]``).
- ``chroma://HOST:PORT/COLLECTION``, ``chroma:PATH``, ``faiss:PATH``,
  ``redis://HOST:PORT/INDEX``, ``module:factory``: the generic vectorstore engine on a
  Chroma server, a Chroma or FAISS folder, a Redis search index, or the LangChain
  vectorstore a function of yours returns (extras ``[chroma]``, ``[faiss]``, ``[redis]``); see
  :mod:`langchain_ltm._vectorstore_urls` for where each keeps its catalog.
- nothing: the default store, the SQLite file :func:`default_store_path`
  (``memories.db`` in the user's data directory: ``LTM_HOME``, else
  ``$XDG_DATA_HOME/langchain-ltm``, default ``~/.local/share/langchain-ltm``).

The default used to be an embedded Qdrant folder, ``qdrant/`` in the same directory. When
that folder is there and the SQLite file is not, the default stays on the folder (the
memories in it are not left behind) and :func:`open_store` warns with
:class:`DefaultStoreWarning`, whose one line says how to move them:
``ltm migrate --from <folder> --to sqlite:///<file>``. Once the file exists, it is the
default; the folder is left as it was.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_ltm._store_forms import QDRANT_SERVER, STORE_URLS
from langchain_ltm.errors import MissingDependencyError

if TYPE_CHECKING:  # both load on use: open_facts on SQLite needs neither
    from langchain_ltm._embedder import EmbeddingsLike
    from langchain_ltm.facts.standalone import FactStore
    from langchain_ltm.store import LongTermMemoryStore

__all__ = [
    "DEFAULT_STORE_FILE",
    "LEGACY_STORE_FOLDER",
    "DefaultStoreWarning",
    "data_dir",
    "default_store_notice",
    "default_store_path",
    "legacy_store_folder",
    "open_facts",
    "open_store",
]

_POSTGRES_SCHEMES = ("postgresql://", "postgres://", "postgresql+psycopg://")

DEFAULT_STORE_FILE = "memories.db"
"""The default store's SQLite file, in :func:`data_dir`."""
LEGACY_STORE_FOLDER = "qdrant"
"""The embedded Qdrant folder in :func:`data_dir` that was the default before SQLite."""


class DefaultStoreWarning(UserWarning):
    """The default store is still the old embedded Qdrant folder: migrate it to SQLite."""


def data_dir() -> Path:
    """Where the default persistent store lives."""
    if home := os.environ.get("LTM_HOME"):
        return Path(home).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "langchain-ltm"


def default_store_path() -> Path:
    """The default store's SQLite file: ``memories.db`` in :func:`data_dir`."""
    return data_dir() / DEFAULT_STORE_FILE


def legacy_store_folder() -> Path | None:
    """The old default (an embedded Qdrant folder) when it is still the default store.

    That is when ``qdrant/`` in :func:`data_dir` holds a store and ``memories.db`` does not
    exist yet; ``None`` otherwise (a new user, or one who migrated).
    """
    folder = data_dir() / LEGACY_STORE_FOLDER
    if default_store_path().exists() or not (folder / "meta.json").is_file():
        return None
    return folder


def default_store_notice() -> str | None:
    """One line for users whose default store is still the old Qdrant folder, else ``None``."""
    folder = legacy_store_folder()
    if folder is None:
        return None
    return (
        f"your memories are in {folder} (embedded Qdrant, the default store before SQLite), "
        f"so that folder is used; move them to the new default with: ltm migrate --from "
        f"{folder} --to sqlite:///{default_store_path()}"
    )


def open_store(
    url: str | None = None, *, embeddings: EmbeddingsLike | None = None
) -> tuple[LongTermMemoryStore, str]:
    """A store for ``url`` and a one-line description of where it keeps its data.

    ``url=None`` opens the default store: the SQLite file :func:`default_store_path`
    (created with its folder, which only its owner may enter when new), or the old Qdrant
    folder with a :class:`DefaultStoreWarning`
    while that is where the user's memories are (see the module notes).

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> store, where = open_store("memory://", embeddings=DeterministicFakeEmbedding(size=8))
        >>> where
        'memory:// (in-process, not persisted)'
    """
    from langchain_ltm.store import LongTermMemoryStore

    if embeddings is None:
        from langchain_ltm.embeddings import LocalMiniLMEmbeddings

        embeddings = LocalMiniLMEmbeddings()
    if url is None:
        return _open_default(embeddings)
    if url == "memory://":
        from langchain_core.vectorstores import InMemoryVectorStore

        from langchain_ltm._embedder import as_langchain

        return LongTermMemoryStore(
            InMemoryVectorStore(as_langchain(embeddings))
        ), "memory:// (in-process, not persisted)"
    if url.startswith("sqlite:"):
        return _open_sqlite(sqlite_path(check_sqlite_url(url)), embeddings)
    if url.startswith(_POSTGRES_SCHEMES):
        return LongTermMemoryStore.from_postgres(url, embeddings), _redact(url)
    from langchain_ltm._vectorstore_urls import is_vectorstore_url, open_vectorstore_url

    if is_vectorstore_url(url):  # chromadb, faiss and the module load only now
        return open_vectorstore_url(url, embeddings)
    if url.startswith(("http://", "https://")):
        return LongTermMemoryStore.from_qdrant(url, embeddings), f"Qdrant server at {url}"
    path = qdrant_folder(url)
    try:  # before the folder is made: no empty folder left behind by a missing extra
        import qdrant_client  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(
            f"{url!r} is an embedded Qdrant folder, which needs qdrant-client: pip install "
            '"langchain-ltm[qdrant]" (or use a SQLite file: sqlite:///memories.db)'
        ) from exc
    path.mkdir(parents=True, exist_ok=True)  # a Path: from_qdrant takes it as the folder it is
    return LongTermMemoryStore.from_qdrant(path, embeddings), f"embedded Qdrant at {path}"


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")  # two letters at least: not "C:\\..."


def qdrant_folder(url: str) -> Path:
    """The embedded Qdrant folder ``url`` names (``qdrant:PATH`` or a plain path), checked.

    A URL of an unknown scheme ("sqllite:///x.db", "mysql://...") or a folder holding files
    but no Qdrant store (a Chroma folder given without ``chroma:``) is refused: it was
    opened as a new, empty Qdrant store, and a read reported nothing stored. So is
    ``qdrant://...``: ``qdrant://localhost:6333`` made a folder named ``localhost:6333``.
    ``qdrant:PATH``, and a plain path naming a folder that exists, is always that folder
    (``qdrant:backup:2024``, ``./backup:2024``).

    Raises:
        ValueError: ``url`` is not an embedded Qdrant folder.

    Example:
        >>> qdrant_folder("qdrant:/tmp/memories").name
        'memories'
    """
    if url.startswith("qdrant://"):  # "//localhost:6333" was taken as a folder, and made
        raise ValueError(
            f"{url!r}: {QDRANT_SERVER}, an embedded Qdrant folder qdrant:PATH "
            "(qdrant:/abs/path for an absolute one)."
        )
    rest = url.removeprefix("qdrant:")
    if not rest.strip():
        raise ValueError(f"{url!r} names no folder: use {STORE_URLS}.")
    if rest is url and _SCHEME.match(url) and not Path(url).expanduser().is_dir():
        scheme = url.split(":", 1)[0]
        raise ValueError(
            f"{url!r}: unknown store scheme {scheme!r}; use {STORE_URLS} (a folder whose "
            f"name starts with {scheme + ':'!r} is qdrant:{url})."
        )
    path = Path(rest).expanduser()
    if path.is_dir() and not (path / "meta.json").exists() and any(path.iterdir()):
        raise ValueError(
            f"{path} holds files but no embedded Qdrant store: give chroma:{rest} or "
            f"faiss:{rest} for a folder of those, or an empty or new folder."
        )
    return path


def is_qdrant_store(url: str) -> bool:
    """Whether ``url`` names an embedded Qdrant folder that holds a store already."""
    try:
        return (qdrant_folder(url) / "meta.json").is_file()
    except ValueError:
        return False


def open_facts(
    url: str | None = None, *, embeddings: EmbeddingsLike | None = None
) -> tuple[FactStore | LongTermMemoryStore, str]:
    """The fact API of the store at ``url`` (as :func:`open_store` reads it), opened lightly.

    On SQLite (a ``sqlite:///`` URL, or the default store) and Postgres this is a
    :class:`~langchain_ltm.facts.FactStore` with the offline encoder: no LangGraph or
    LangChain import, so a process that only remembers or recalls starts sooner (what the
    ``ltm`` fact commands use). Elsewhere (memory, Qdrant) it is :func:`open_store`'s
    ``LongTermMemoryStore``, which has the same fact methods. ``embeddings``: any object
    with LangChain's embedding methods (default: the offline MiniLM encoder).

    Example:
        >>> import os, tempfile
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> url = "sqlite:///" + os.path.join(tempfile.mkdtemp(), "memory.db")
        >>> facts, where = open_facts(url, embeddings=DeterministicFakeEmbedding(size=8))
        >>> type(facts).__name__, facts.remember("u1", "likes tea").action
        ('FactStore', 'created')
        >>> facts.close()
    """
    path = None
    if url is None and legacy_store_folder() is None:
        _make_data_dir()
        path = default_store_path()
    elif url is not None and url.startswith("sqlite:"):
        path = sqlite_path(check_sqlite_url(url))
    postgres = url is not None and url.startswith(_POSTGRES_SCHEMES)
    if path is None and not postgres:
        return open_store(url, embeddings=embeddings)
    from langchain_ltm.facts.standalone import FactStore

    if embeddings is None:
        from langchain_ltm._minilm import MiniLMEncoder

        embeddings = MiniLMEncoder()
    if path is None:
        assert url is not None
        return FactStore.from_postgres(url, embeddings), _redact(url)
    path.parent.mkdir(parents=True, exist_ok=True)
    return FactStore.from_sqlite(path, embeddings), f"SQLite at {path}"


def check_sqlite_url(url: str) -> str:
    """``url`` if it is a usable ``sqlite:///PATH`` URL, else ValueError saying how to write one."""
    if not url.startswith("sqlite:///") or url == "sqlite:///":
        raise ValueError(
            f"{url!r} is not a SQLite URL: use sqlite:///memory.db (relative to the current "
            "folder) or sqlite:////home/me/memory.db (absolute)."
        )
    return url


def sqlite_path(url: str) -> Path:
    """The file of a ``sqlite:///PATH`` URL (``~`` expanded; relative to the current folder)."""
    return Path(url.removeprefix("sqlite:///")).expanduser()


def _open_sqlite(path: Path, embeddings: EmbeddingsLike) -> tuple[LongTermMemoryStore, str]:
    from langchain_ltm.store import LongTermMemoryStore

    path.parent.mkdir(parents=True, exist_ok=True)
    return LongTermMemoryStore.from_sqlite(path, embeddings), f"SQLite at {path}"


def _open_default(embeddings: EmbeddingsLike) -> tuple[LongTermMemoryStore, str]:
    from langchain_ltm.store import LongTermMemoryStore

    folder = legacy_store_folder()
    if folder is None:
        _make_data_dir()
        return _open_sqlite(default_store_path(), embeddings)
    warnings.warn(str(default_store_notice()), DefaultStoreWarning, stacklevel=3)
    try:
        store = LongTermMemoryStore.from_qdrant(folder, embeddings)
    except MissingDependencyError as exc:
        raise MissingDependencyError(
            f"Your memories are in {folder}, an embedded Qdrant folder (the default store "
            'before SQLite), and reading it needs qdrant-client: pip install "langchain-ltm'
            '[qdrant]", then move them to the new default with: ltm migrate --from '
            f"{folder} --to sqlite:///{default_store_path()} (or move the folder away to start "
            "an empty SQLite store)."
        ) from exc
    return store, f"embedded Qdrant at {folder} (the old default store)"


def _make_data_dir() -> None:
    home = data_dir()
    if not home.exists():  # memories are personal: a new data folder is the user's only
        home.parent.mkdir(parents=True, exist_ok=True)
        home.mkdir(mode=0o700, exist_ok=True)


def _redact(url: str) -> str:
    head, sep, tail = url.rpartition("@")
    if not sep:
        return url
    scheme, _, _ = head.partition("://")
    return f"{scheme}://***@{tail}"
