"""Opening a Qdrant backend: :func:`qdrant_backend` over a client, a URL, a folder or memory.

It checks what it was given, opens the client (a folder through ``_folder``'s wait for its
lock), learns ``dims`` from the embeddings when the collection does not exist yet, and
closes a client it opened when the backend cannot be set up; a server that cannot be reached
raises a ``BackendError`` that says what to check.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from qdrant_client import AsyncQdrantClient, QdrantClient

from langchain_ltm._store_forms import QDRANT_SERVER, is_host_port, local_form, url_scheme
from langchain_ltm.backends.qdrant._domains import is_local
from langchain_ltm.backends.qdrant._folder import DEFAULT_LOCK_TIMEOUT, open_folder
from langchain_ltm.backends.qdrant.backend import QdrantBackend
from langchain_ltm.errors import BackendError, LTMError

if TYPE_CHECKING:
    from langchain_ltm._embedder import EmbeddingsLike

__all__ = ["qdrant_backend"]


def qdrant_backend(
    client_or_url_or_path: QdrantClient | AsyncQdrantClient | str | os.PathLike[str],
    *,
    collection: str = "ltm_items",
    dims: int | None = None,
    embeddings: EmbeddingsLike | None = None,
    vector_name: str = "",
    tenant_depth: int = 2,
    api_key: str | None = None,
    prefer_grpc: bool = False,
    mirror: bool | None = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    **client_options: Any,
) -> QdrantBackend:
    """Open a :class:`QdrantBackend` from a client, a server URL, a folder or ``":memory:"``.

    Args:
        client_or_url_or_path: ``":memory:"`` (embedded, this process only), a folder path
            (embedded, persistent, one process at a time), an ``http(s)://`` URL (server),
            or a ``QdrantClient`` / remote ``AsyncQdrantClient``. Another URL
            (``qdrant://``, ``grpc://``...) or a bare ``HOST:PORT`` naming no folder that
            exists is refused with a ``ValueError``: it was taken for a folder of that name
            (``"./backup:2024"`` or a ``Path`` is always a folder).
        collection: Collection name; created (cosine distance) if missing.
        dims: Vector size, checked against an existing collection.
        embeddings: Used once, only to learn ``dims`` when the collection does not exist
            and ``dims`` is not given.
        vector_name: Dense vector name in the collection (``""``: the unnamed vector).
        tenant_depth: Namespace depth of the user label (the tenant index): 2 for the fact
            API's default namespace ``("memories",)``.
        api_key: Server API key (URL form only).
        prefer_grpc: Talk gRPC to the server (URL form only).
        mirror: See :class:`QdrantBackend`.
        lock_timeout: Folder form only: seconds to wait while another client (another
            process, or another store in this one) has the folder open, before raising a
            ``BackendError`` that says what to do (see ``_folder``).
        **client_options: More ``QdrantClient`` options for the URL form (``timeout``...).

    Example:
        >>> backend = qdrant_backend(":memory:", collection="facts", dims=8)
        >>> backend.capabilities.name, backend.capabilities.persistent
        ('qdrant', False)
    """
    aclient: AsyncQdrantClient | None = None
    owned = False
    target = client_or_url_or_path
    if isinstance(target, QdrantClient):
        client = target
    elif isinstance(target, AsyncQdrantClient):
        options = target.init_options
        if options.get("path") or options.get("location") == ":memory:":
            raise ValueError(
                "An embedded AsyncQdrantClient cannot be shared with a sync client: pass a "
                "QdrantClient (or the path / ':memory:') for embedded mode."
            )
        client, aclient, owned = QdrantClient(**options), target, True
    elif isinstance(target, (str, os.PathLike)):
        where = os.fspath(target)
        if where == ":memory:":
            client = QdrantClient(location=":memory:")
        elif where.startswith(("http://", "https://")):
            client = QdrantClient(
                url=where, api_key=api_key, prefer_grpc=prefer_grpc, **client_options
            )
        else:
            _check_folder(target)
            client = open_folder(where, lock_timeout)
        owned = True
    else:
        raise TypeError(
            "qdrant_backend() takes a QdrantClient, an AsyncQdrantClient, a URL, a folder path "
            f"or ':memory:', got {type(target).__name__}."
        )
    try:
        if dims is None and embeddings is not None and not client.collection_exists(collection):
            dims = len(embeddings.embed_query("dimension probe"))
        backend = QdrantBackend(
            client,
            collection=collection,
            dims=dims,
            vector_name=vector_name,
            tenant_depth=tenant_depth,
            mirror=mirror,
            aclient=aclient,
        )
    except Exception as exc:
        if owned:
            client.close()
        if isinstance(exc, (LTMError, ValueError, TypeError)) or is_local(client):
            raise
        url = client.init_options.get("url") or client.init_options.get("host") or "the server"
        raise BackendError(
            f"Could not set up Qdrant collection {collection!r} at {url}: "
            f"{type(exc).__name__}: {exc}. Check that the server is up and reachable at that "
            "URL, and the API key if it needs one."
        ) from exc
    if owned:
        backend._owned.append(client)
    return backend


def _check_folder(target: str | os.PathLike[str]) -> None:
    """Refuse a URL or a ``HOST:PORT`` given as a folder: it made a folder of that name.

    ``"qdrant://my-server:6333"``, ``"localhost:6333"`` or ``"postgresql://..."`` opened a
    new embedded store in a folder named after them, and the writes went there, unseen by
    the server. A ``Path`` is taken as the path it is, and so is a ``NAME:DIGITS`` string
    naming a folder that exists (``"backup:2024"``), or one written ``./NAME:DIGITS``.
    """
    if not isinstance(target, str):
        return
    form = local_form(target)
    if form and not os.path.isdir(target):  # `ltm --store qdrant:PATH`'s form, not a path
        kind, path = form
        other = "" if kind == "qdrant" else f"; a {kind}: store is not a Qdrant one"
        raise ValueError(
            f"{target!r} is how `ltm --store` names a store, not a folder path: pass the "
            f"path alone ({path!r}){other}."
        )
    scheme = url_scheme(target)
    if scheme is None and (not is_host_port(target) or os.path.isdir(target)):
        return
    named = f" (a folder of that name: pass './{target}')" if scheme is None else ""
    raise ValueError(
        f"{target!r} is not a Qdrant folder nor a server URL: {QDRANT_SERVER}, an embedded "
        f"Qdrant store a folder path such as 'qdrant_data'{named}."
    )
