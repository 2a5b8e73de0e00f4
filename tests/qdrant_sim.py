"""A Qdrant "server" in this process, for the server code path without a server binary.

:class:`SimulatedQdrantServer` holds one qdrant-client local-mode engine (``:memory:``) and
hands out real ``QdrantClient(url=...)`` / ``AsyncQdrantClient(url=...)`` objects whose
transport (``client._client``, the object every client method forwards to) is that engine.
The backend then sees a server in every respect (``init_options`` name a URL, so the mode is
``"server"``, reads and writes use the server's plans, async calls go through the async
client, no client lock is held), and several clients of one URL share the data as clients of
one server do. Only the wire is missing: the engine is the one local mode runs, and its
requests take turns on one lock (local mode is not thread-safe; a server is).
"""

from __future__ import annotations

import asyncio
import copy
import functools
import threading
import warnings
from typing import Any

from qdrant_client import AsyncQdrantClient, QdrantClient

__all__ = ["SimulatedQdrantServer"]


class SimulatedQdrantServer:
    """One in-process engine behind as many server clients as asked for.

    Example:
        >>> server = SimulatedQdrantServer()
        >>> a, b = server.client(), server.client()
        >>> a.create_collection("c", vectors_config={}) and b.collection_exists("c")
        True
    """

    def __init__(self, url: str = "http://qdrant.test:6333") -> None:
        self.url = url
        self._local = QdrantClient(location=":memory:")  # closes the engine when collected
        self._engine = self._local._client
        self._lock = threading.RLock()
        self.requests: list[tuple[str, dict[str, Any]]] = []  # (method, kwargs), in order

    def client(self) -> QdrantClient:
        """A ``QdrantClient`` of this server."""
        client = copy.copy(_template(QdrantClient, self.url))
        client._client = _Transport(self, client._client.rest_uri, sync=True)
        return client

    def aclient(self) -> AsyncQdrantClient:
        """An ``AsyncQdrantClient`` of this server."""
        client = copy.copy(_template(AsyncQdrantClient, self.url))
        client._client = _Transport(self, client._client.rest_uri, sync=False)
        return client

    def call(self, method: str, kwargs: dict[str, Any]) -> Any:
        with self._lock, warnings.catch_warnings():
            # what local mode says of the server-only settings the server plans send
            warnings.filterwarnings("ignore", "Payload indexes have no effect", UserWarning)
            warnings.filterwarnings("ignore", "Local mode performs exact", UserWarning)
            self.requests.append((method, kwargs))
            return getattr(self._engine, method)(**kwargs)


@functools.cache
def _template(kind: type[Any], url: str) -> Any:
    """One client of ``url`` made the slow way (an SSL context, a schema parser: 50 ms),
    copied for each client handed out: the copy gets its own transport."""
    return kind(url=url, check_compatibility=False)


class _Transport:
    """What a client forwards its calls to: the server's engine, one request at a time."""

    def __init__(self, server: SimulatedQdrantServer, rest_uri: str, *, sync: bool) -> None:
        self._server, self.rest_uri, self._sync = server, rest_uri, sync
        self.closed = False

    def close(self, **_: Any) -> Any:  # the engine stays: other clients use it
        self.closed = True
        if not self._sync:
            return asyncio.sleep(0)
        return None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        server = self._server

        def call(**kwargs: Any) -> Any:
            return server.call(name, kwargs)

        async def acall(**kwargs: Any) -> Any:
            await asyncio.sleep(0)  # another task may run between requests, as on a server
            return server.call(name, kwargs)

        return call if self._sync else acall
