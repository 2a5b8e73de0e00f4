"""Store URLs of the generic vectorstore engine (``ltm --store`` and :func:`open_store`).

- ``chroma://HOST:PORT/COLLECTION``: a Chroma server (``chroma run``) over HTTP. The
  catalog (the SQLite file holding the items; the vectors are in Chroma) is kept on this
  machine, in ``chroma/HOST_PORT_COLLECTION.sqlite`` under the data directory, or where
  ``?catalog=PATH`` says: every process using the memories must use that same file. A new
  catalog over a collection that holds another catalog's memories (one server reached as
  ``localhost`` and as ``127.0.0.1`` names two catalogs) is refused, naming the catalog
  that wrote them; ``?share_collection=1`` opens a second, separate store there on purpose.
- ``chroma:PATH``: a persistent Chroma folder (``chromadb.PersistentClient``), collection
  ``langchain_ltm``; the catalog is ``PATH/ltm-catalog.sqlite``. ``?collection=NAME`` uses
  another collection, with its own catalog ``PATH/ltm-catalog-NAME.sqlite``.
- ``faiss:PATH``: a FAISS folder as ``FAISS.save_local`` writes it (``index.faiss``,
  ``index.pkl``), created when missing; the catalog is ``PATH/ltm-catalog.sqlite``. The
  index is saved back after every write. Loading ``index.pkl`` unpickles it: only open
  folders you wrote yourself.
- A ``chroma:PATH`` or ``faiss:PATH`` folder whose catalog file is gone (deleted or moved
  away) while its memories stay is refused, as for ``chroma://``; ``?share_collection=1``
  opens a new, separate store in it (the old memories stay in the folder, out of its reach).
- ``redis://[USER:PASSWORD@]HOST:PORT/INDEX`` (``rediss://`` for TLS): a Redis with
  search (Redis 8, Redis Stack), the vectors in the RediSearch index ``INDEX`` of a
  ``langchain-redis`` ``RedisVectorStore`` (created with our ``metadata_schema`` when
  missing; RediSearch indexes live in database 0). Options: ``?depth=N`` (how many
  namespace levels a search may be scoped to, default 4), ``?catalog=PATH``,
  ``?share_collection=1`` (as for ``chroma://``); the catalog is
  ``redis/HOST_PORT_INDEX.sqlite`` under the data directory by default: every process
  using the memories must use that same file.
- ``module:factory``: ``factory`` in the importable ``module`` (the current folder is
  searched too), called with the embeddings when it takes an argument, else without. It
  returns a LangChain ``VectorStore`` (its catalog is ``catalogs/module.factory.sqlite``
  under the data directory) or a ready :class:`~langchain_ltm.LongTermMemoryStore`.

chromadb, langchain-chroma, faiss and langchain-redis are imported only when such a URL is
opened.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from langchain_ltm._embedder import as_langchain
from langchain_ltm.errors import (
    BackendError,
    CatalogMismatchError,
    MissingDependencyError,
    UnsupportedVectorStoreError,
)

if TYPE_CHECKING:
    from langchain_ltm._embedder import EmbeddingsLike
    from langchain_ltm.store import LongTermMemoryStore

__all__ = [
    "CATALOG_FILE",
    "folder_catalog",
    "is_vectorstore_url",
    "open_vectorstore_url",
    "store_folder",
]

CATALOG_FILE = "ltm-catalog.sqlite"
"""The catalog's file name inside a ``chroma:PATH`` or ``faiss:PATH`` folder."""
CHROMA_COLLECTION = "langchain_ltm"
"""The collection ``chroma:PATH`` uses when the URL names none."""

_FACTORY = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")
_OTHER_SCHEMES = ("sqlite", "qdrant", "memory", "postgresql", "postgres", "http", "https")
REDIS_DEPTH = 4
"""The namespace levels a ``redis://`` index can scope by default (``("memories", user)``: 2)."""


def is_vectorstore_url(url: str) -> bool:
    """Whether ``url`` is one of this module's URLs (``chroma``, ``faiss``, ``redis``, ...)."""
    if url.startswith(("chroma:", "faiss:", "redis://", "rediss://")):
        return True
    return bool(_FACTORY.match(url)) and url.partition(":")[0] not in _OTHER_SCHEMES


def store_folder(url: str) -> Path | None:
    """The folder of a ``chroma:PATH`` or ``faiss:PATH`` URL (``~`` expanded), else None."""
    if url.startswith("chroma://") or not url.startswith(("chroma:", "faiss:")):
        return None
    path = url.partition(":")[2].partition("?")[0]
    return Path(path).expanduser() if path else None


def checked_folder(url: str) -> Path:
    """The folder of a ``chroma:PATH`` or ``faiss:PATH`` URL, its form checked.

    Raises:
        ValueError: ``url`` is not written as one (the message shows how).
    """
    folder = store_folder(url)
    query = parse_qs(url.partition("?")[2], keep_blank_values=True)
    if url.startswith("faiss:"):
        usage = (
            f"{url!r} is not a FAISS folder URL: write faiss:PATH (a folder that "
            "FAISS.save_local wrote, or a new one), optionally faiss:PATH?share_collection=1"
        )
        options = {"share_collection"}
    else:
        usage = (
            f"{url!r} is not a Chroma folder URL: write chroma:PATH (a folder, created if "
            "missing), optionally chroma:PATH?collection=NAME and ?share_collection=1"
        )
        options = {"collection", "share_collection"}
    if folder is None or set(query) - options:
        raise ValueError(usage)
    _flag(query, "share_collection", usage)
    return folder


def folder_catalog(url: str) -> Path | None:
    """The catalog file of a ``chroma:PATH`` or ``faiss:PATH`` URL, else None.

    ``PATH/ltm-catalog.sqlite``; a Chroma folder's other collections each have their own
    (``PATH/ltm-catalog-NAME.sqlite``), so two collections never share one catalog.
    ``?share_collection=1`` names no other catalog: the folder's is the one it creates.
    """
    folder = store_folder(url)
    if folder is None:
        return None
    collection = parse_qs(url.partition("?")[2]).get("collection", [CHROMA_COLLECTION])[0]
    if url.startswith("faiss:") or collection == CHROMA_COLLECTION:
        return folder / CATALOG_FILE
    return folder / f"ltm-catalog-{collection}.sqlite"


def open_vectorstore_url(url: str, embeddings: EmbeddingsLike) -> tuple[LongTermMemoryStore, str]:
    """The store of a ``chroma://``, ``chroma:``, ``faiss:`` or ``module:factory`` URL.

    Raises:
        ValueError: The URL is malformed (the message shows how to write it).
        MissingDependencyError: The engine's extra is not installed.
        UnsupportedVectorStoreError: A factory returned something else than a LangChain
            ``VectorStore`` or a ``LongTermMemoryStore``.
    """
    if url.startswith("chroma://"):
        return _chroma_server(url, embeddings)
    if url.startswith("chroma:"):
        return _chroma_folder(url, embeddings)
    if url.startswith("faiss:"):
        return _faiss_folder(url, embeddings)
    if url.startswith(("redis://", "rediss://")):
        return _redis_server(url, embeddings)
    if is_vectorstore_url(url):
        return _factory(url, embeddings)
    raise ValueError(f"{url!r} is not a chroma://, chroma:, faiss:, redis:// or module:factory URL")


# ---- Chroma -------------------------------------------------------------------------------


def _chromadb(url: str) -> Any:
    try:
        import chromadb
        import langchain_chroma  # noqa: F401
    except ModuleNotFoundError as exc:  # another ImportError is chromadb's own: shown as is
        raise MissingDependencyError(
            f"{url!r} is a Chroma store, which needs chromadb and langchain-chroma: "
            'pip install "langchain-ltm[chroma]"'
        ) from exc
    return chromadb


def _chroma_settings() -> Any:
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False)  # nothing leaves the machine


def _chroma_server(url: str, embeddings: EmbeddingsLike) -> tuple[LongTermMemoryStore, str]:
    usage = (
        f"{url!r} is not a Chroma server URL: write chroma://HOST:PORT/COLLECTION, e.g. "
        "chroma://localhost:8000/memories (optionally ?catalog=/path/to/catalog.sqlite, "
        "?share_collection=1)"
    )
    parts = urlsplit(url)
    collection = parts.path.strip("/")
    try:
        port = parts.port or 8000
    except ValueError:
        raise ValueError(usage) from None
    if not parts.hostname or not collection or "/" in collection:
        raise ValueError(usage)
    query = parse_qs(parts.query)
    unknown = set(query) - {"catalog", "share_collection"}
    if unknown:
        raise ValueError(f"{usage}; unknown option {sorted(unknown)[0]!r}")
    share = _flag(query, "share_collection", usage)
    from langchain_ltm.defaults import data_dir

    # named from the URL's text: kept so (catalogs made by earlier releases still open)
    default = data_dir() / "chroma" / f"{parts.hostname}_{port}_{collection}.sqlite"
    catalog = Path(query["catalog"][0]).expanduser() if "catalog" in query else default
    chromadb = _chromadb(url)
    try:  # the client connects at once; chromadb says ValueError when nobody answers
        client = chromadb.HttpClient(host=parts.hostname, port=port, settings=_chroma_settings())
    except Exception as exc:
        raise BackendError(
            f"the Chroma server at {parts.hostname}:{port} did not answer ({exc}); start it "
            f"(chroma run --port {port}) or check the host and port of --store {url}"
        ) from exc
    where = f"Chroma server at {parts.hostname}:{port}, collection {collection} (catalog {catalog})"
    vs = _chroma(collection, embeddings, client)
    return _generic(vs, catalog, embeddings, url=url, share=share), where


def _chroma_folder(url: str, embeddings: EmbeddingsLike) -> tuple[LongTermMemoryStore, str]:
    folder = checked_folder(url)
    query = parse_qs(url.partition("?")[2])
    collection = query.get("collection", [CHROMA_COLLECTION])[0]
    share = _flag(query, "share_collection", "")  # checked_folder checked its value
    chromadb = _chromadb(url)
    _make_folder(folder)
    client = chromadb.PersistentClient(str(folder), settings=_chroma_settings())
    catalog = folder_catalog(url)
    assert catalog is not None
    where = f"Chroma folder {folder}, collection {collection} (catalog {catalog})"
    vs = _chroma(collection, embeddings, client)
    return _generic(vs, catalog, embeddings, url=url, share=share), where


def _chroma(collection: str, embeddings: EmbeddingsLike, client: Any) -> Any:
    from langchain_chroma import Chroma

    return Chroma(collection, as_langchain(embeddings), client=client)


# ---- FAISS --------------------------------------------------------------------------------


def _faiss_folder(url: str, embeddings: EmbeddingsLike) -> tuple[LongTermMemoryStore, str]:
    folder = checked_folder(url)
    share = _flag(parse_qs(url.partition("?")[2]), "share_collection", "")  # checked there
    try:
        import faiss
        from langchain_community.docstore.in_memory import InMemoryDocstore
        from langchain_community.vectorstores import FAISS
    except ImportError as exc:
        raise MissingDependencyError(
            f"{url!r} is a FAISS folder, which needs faiss-cpu and langchain-community: "
            'pip install "langchain-ltm[faiss]"'
        ) from exc
    langchain_embeddings = as_langchain(embeddings)  # FAISS logs a warning for others
    if (folder / "index.faiss").is_file():
        vs = FAISS.load_local(
            str(folder), langchain_embeddings, allow_dangerous_deserialization=True
        )
    else:
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"{url!r}: {folder} is a file; faiss:PATH takes a folder")
        dims = len(embeddings.embed_query("dimensions"))  # a new index: its size, once
        vs = FAISS(langchain_embeddings, faiss.IndexFlatL2(dims), InMemoryDocstore(), {})
        _make_folder(folder)
        _save_faiss(vs, folder)
    from langchain_ltm.backends.vectorstore.saved import SavedFaissBackend
    from langchain_ltm.store import LongTermMemoryStore

    with _said_for_store(url):  # --store's words, not the API's
        backend = SavedFaissBackend(
            vs, folder, catalog=folder / CATALOG_FILE, save=_save_faiss, share_collection=share
        )
    where = f"FAISS folder {folder} (catalog {folder / CATALOG_FILE})"
    return LongTermMemoryStore(backend, embeddings=embeddings), where


def _save_faiss(vs: Any, folder: Path) -> None:
    """``save_local`` into a temporary folder, then each file moved over the old one."""
    with tempfile.TemporaryDirectory(dir=folder, prefix=".saving-") as tmp:
        vs.save_local(tmp)
        for name in ("index.faiss", "index.pkl"):
            os.replace(Path(tmp) / name, folder / name)


# ---- Redis --------------------------------------------------------------------------------


def _redis_server(url: str, embeddings: EmbeddingsLike) -> tuple[LongTermMemoryStore, str]:
    parts = urlsplit(url)
    from langchain_ltm.defaults import _redact

    shown = _redact(url)  # never print a password (one holding / ? or # too)
    usage = (
        f"{shown!r} is not a Redis store URL: write redis://HOST:PORT/INDEX, e.g. "
        "redis://localhost:6379/memories (optionally ?depth=N, "
        "?catalog=/path/to/catalog.sqlite, ?share_collection=1)"
    )
    index = parts.path.strip("/")
    try:
        port = parts.port or 6379
    except ValueError:
        raise ValueError(usage) from None
    if not parts.hostname or not re.fullmatch(r"[A-Za-z0-9_]+", index):
        raise ValueError(f"{usage}; INDEX is letters, digits and _")
    query = parse_qs(parts.query)
    unknown = set(query) - {"catalog", "depth", "share_collection"}
    if unknown:
        raise ValueError(f"{usage}; unknown option {sorted(unknown)[0]!r}")
    share = _flag(query, "share_collection", usage)
    try:
        depth = int(query.get("depth", [str(REDIS_DEPTH)])[0])
    except ValueError:
        raise ValueError(f"{usage}; depth is a whole number") from None
    if depth < 1:
        raise ValueError(f"{usage}; depth is 1 or more")
    try:
        from langchain_redis import RedisConfig, RedisVectorStore
        from redis.exceptions import RedisError
        from redisvl.exceptions import RedisVLError  # type: ignore[import-untyped]
    except ModuleNotFoundError as exc:
        raise MissingDependencyError(
            f"{shown!r} is a Redis store, which needs langchain-redis: "
            'pip install "langchain-ltm[redis]"'
        ) from exc
    from langchain_ltm.backends.vectorstore.dialects.redis import metadata_schema
    from langchain_ltm.defaults import data_dir

    name = f"{parts.hostname}_{port}_{index}.sqlite"
    default = data_dir() / "redis" / name
    catalog = Path(query["catalog"][0]).expanduser() if "catalog" in query else default
    # the server's URL without our path and options (a password in it stays there)
    server = f"{parts.scheme}://{parts.netloc}/0"
    try:
        dims = _redis_index_dims(index, server)
        if dims is None:  # a new index: its size, once (a command that never embeds
            dims = len(embeddings.embed_query("dimensions"))  # pays this only here)
        vs = RedisVectorStore(
            as_langchain(embeddings),
            config=RedisConfig(
                index_name=index,
                redis_url=server,
                embedding_dimensions=dims,
                metadata_schema=metadata_schema(depth),
            ),
        )
    except (RedisError, RedisVLError) as exc:  # the index is made (or found) at once
        raise BackendError(
            f"the Redis server at {parts.hostname}:{port} did not answer or has no search "
            f"module ({type(exc).__name__}: {exc}); start Redis 8 or Redis Stack there, or "
            f"check the host and port of --store {shown}"
        ) from exc
    where = f"Redis at {parts.hostname}:{port}, index {index} (catalog {catalog})"
    return _generic(vs, catalog, embeddings, url=shown, share=share), where


def _redis_index_dims(index: str, server: str) -> int | None:
    """The vector size of an existing RediSearch index, ``None`` when there is no such index.

    Raises:
        RedisError: The server did not answer (the caller says so).
    """
    from redisvl.exceptions import RedisSearchError
    from redisvl.index import SearchIndex  # type: ignore[import-untyped]

    try:
        existing = SearchIndex.from_existing(index, redis_url=server)
    except RedisSearchError as exc:
        if "unknown index" in str(exc).lower():
            return None
        raise
    for field in existing.schema.fields.values():
        dims = getattr(getattr(field, "attrs", None), "dims", None)
        if isinstance(dims, int):
            return dims
    return None


# ---- module:factory -----------------------------------------------------------------------


def _factory(url: str, embeddings: EmbeddingsLike) -> tuple[LongTermMemoryStore, str]:
    module_name, _, name = url.partition(":")
    added = os.getcwd() not in sys.path
    if added:  # the console script does not search the current folder; python -m does
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(
            f"--store {url}: cannot import module {module_name!r} ({exc}); module:factory "
            "names an importable module (a file module.py in the current folder, or an "
            f"installed package) and a function in it (a Qdrant folder: qdrant:{url})"
        ) from exc
    finally:
        if added:
            with contextlib.suppress(ValueError):
                sys.path.remove(os.getcwd())
    factory = getattr(module, name, None)
    if not callable(factory):
        raise ValueError(
            f"--store {url}: module {module_name!r} has no function {name!r} "
            f"({'it is not callable' if hasattr(module, name) else 'no such name'}); "
            "module:factory calls it to get the vectorstore"
        )
    try:
        made = factory(embeddings) if _takes_argument(factory) else factory()
    except Exception as exc:
        raise BackendError(f"--store {url}: {name}() raised {type(exc).__name__}: {exc}") from exc
    from langchain_core.vectorstores import VectorStore

    from langchain_ltm.store import LongTermMemoryStore

    if isinstance(made, LongTermMemoryStore):
        return made, f"{url} (a LongTermMemoryStore on {made.backend.capabilities.name})"
    if not isinstance(made, VectorStore):
        raise UnsupportedVectorStoreError(
            f"--store {url}: {module_name}.{name}() returned {type(made).__name__}, not a "
            "LangChain VectorStore nor a LongTermMemoryStore; return one of those (e.g. "
            "Chroma(...), FAISS.load_local(...), or LongTermMemoryStore.from_sqlite(...))"
        )
    if _fast_path(made):  # InMemoryVectorStore, Qdrant: the dedicated engines, no catalog
        return LongTermMemoryStore(made, embeddings=embeddings), f"{url} ({type(made).__name__})"
    from langchain_ltm.defaults import data_dir

    catalog = data_dir() / "catalogs" / f"{module_name}.{name}.sqlite"
    where = f"{url} ({type(made).__name__}, catalog {catalog})"
    return _generic(made, catalog, embeddings, url=url), where


def _takes_argument(fn: Any) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params
    )


def _fast_path(vs: Any) -> bool:
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_ltm.backends.vectorstore.family import registered

    if registered(vs) is not None:
        return False
    return isinstance(vs, InMemoryVectorStore) or type(vs).__module__.startswith("langchain_qdrant")


# ---- shared -------------------------------------------------------------------------------


def _generic(
    vs: Any, catalog: Path, embeddings: EmbeddingsLike, *, url: str, share: bool = False
) -> LongTermMemoryStore:
    from langchain_ltm.backends.vectorstore import vectorstore_backend
    from langchain_ltm.store import LongTermMemoryStore

    _make_folder(catalog.parent)
    with _said_for_store(url):
        backend = vectorstore_backend(vs, catalog=catalog, share_collection=share)
    return LongTermMemoryStore(backend, embeddings=embeddings)


@contextlib.contextmanager
def _said_for_store(url: str) -> Iterator[None]:
    """A refused new catalog said again for ``--store url``: its options, not the API's."""
    try:
        yield
    except CatalogMismatchError as exc:
        raise CatalogMismatchError(
            _mismatch(exc, url), catalog=exc.catalog, store_id=exc.store_id, catalogs=exc.catalogs
        ) from None


def _with_option(url: str, name: str, value: str) -> str:
    """``url`` with ``?name=value`` (in place of its own ``name``), its other options kept."""
    base, _, query = url.partition("?")
    kept = [part for part in query.split("&") if part and part.partition("=")[0] != name]
    return f"{base}?{'&'.join([*kept, f'{name}={value}'])}"


def _mismatch(exc: CatalogMismatchError, url: str) -> str:
    """What a refused new catalog means for ``--store url``, and what to pass instead."""
    share = f"--store '{_with_option(url, 'share_collection', '1')}'"
    if exc.catalogs:
        wrote = f"the catalog that wrote them is {' or '.join(exc.catalogs)}"
    else:
        wrote = f"no catalog beside it has that id (ltm_store={exc.store_id!r})"
    said = (
        f"--store {url}: the catalog {exc.catalog} is new, but the store already holds "
        f"langchain-ltm memories written through another catalog ({wrote}). Through a new "
        "catalog they would look absent: list would show none and forget-user would erase "
        "nothing of them. Nothing was created."
    )
    if url.startswith(("chroma://", "redis://", "rediss://")):
        use = (
            f"--store '{_with_option(url, 'catalog', exc.catalogs[0])}'"
            if exc.catalogs
            else "its file"
        )
        return (
            f"{said} Use the catalog that wrote them ({use}; the same server under another "
            "host name, e.g. localhost and 127.0.0.1, names another default catalog). To keep "
            f"a second, separate set of memories there on purpose (another machine), pass "
            f"{share}."
        )
    if url.startswith(("chroma:", "faiss:")):
        if exc.catalogs:
            return f"{said} Move {exc.catalogs[0]} back to {exc.catalog} to open them."
        return (
            f"{said} If the catalog file was moved away, put it back as {exc.catalog}. "
            f"Else, to start over, move the folder away (its memories stay in it) and run "
            f"the command again; or, to keep a second, separate set of memories in this "
            f"folder, pass {share} (the earlier memories stay in it, out of that store's "
            "reach)."
        )
    return (
        f"{said} Have the factory return LongTermMemoryStore(vectorstore_backend(vs, "
        "catalog=<the catalog that wrote them>), embeddings=...)."
    )


def _flag(query: dict[str, list[str]], name: str, usage: str) -> bool:
    """A ``?name=1`` URL option (``1``, ``true``, ``0``, ``false``; default false)."""
    value = query.get(name, ["0"])[-1].lower()
    if value not in ("1", "true", "0", "false"):
        raise ValueError(f"{usage}; {name} is 1 or 0")
    return value in ("1", "true")


def _make_folder(folder: Path) -> None:
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} is a file; the store needs a folder there")
    if not folder.exists():  # memories are personal: a new folder is its owner's only
        folder.parent.mkdir(parents=True, exist_ok=True)
        folder.mkdir(mode=0o700, exist_ok=True)
