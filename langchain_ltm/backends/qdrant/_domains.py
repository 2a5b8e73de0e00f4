"""What the Qdrant backends of one process share, per client or per collection.

- :class:`_Domain` (:func:`domain_for`): the per-user locks and the per-item key stripes of
  the stores over one collection: per client embedded, per server address otherwise (two
  clients of one address hold the same data).
- :class:`Shared` (:func:`shared_for`, :data:`MIRRORS`): an embedded collection's in-process
  mirror, shared by every backend over the same client.
- :func:`local_lock_for`: one lock per embedded client, which its requests take in turn
  (local mode is not thread-safe).
- :func:`is_local`: whether a client is embedded (local mode).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from qdrant_client import QdrantClient

from langchain_ltm._loop_locks import StripedLocks
from langchain_ltm.backends._index import NamespaceIndex
from langchain_ltm.backends.base import ItemKey


@dataclass
class Shared:
    """One embedded collection's mirror, shared by every backend over the same client."""

    lock: threading.RLock = field(default_factory=threading.RLock)
    mirror: NamespaceIndex = field(default_factory=NamespaceIndex)
    loaded: bool = False


MIRRORS: weakref.WeakKeyDictionary[QdrantClient, dict[str, Shared]] = weakref.WeakKeyDictionary()
_LOCAL_LOCKS: weakref.WeakKeyDictionary[QdrantClient, threading.RLock] = weakref.WeakKeyDictionary()
_LOCAL_LOCKS_GUARD = threading.Lock()


def is_local(client: QdrantClient) -> bool:
    options = client.init_options
    return bool(options.get("path")) or options.get("location") == ":memory:"


def local_lock_for(client: QdrantClient) -> threading.RLock:
    with _LOCAL_LOCKS_GUARD:
        return _LOCAL_LOCKS.setdefault(client, threading.RLock())


class _Domain(StripedLocks):
    """What two backends over the same collection share: their users' locks, key stripes.

    A server write of an item reads its head, upserts, then deletes the item's points it
    did not write: two writes of one item interleaving there left the later one without
    some of its texts' points. The stripes serialize, in this process, the server writes
    that touch one item (a server has no lock, so other processes are not excluded).
    """

    def stripes_of(self, keys: Sequence[ItemKey]) -> list[threading.Lock]:
        """The stripes of ``keys``, each once, in one global order (no deadlock)."""
        return self.of_all(repr((namespace, key)) for namespace, key in keys)


_DOMAINS: weakref.WeakKeyDictionary[Any, dict[str, _Domain]] = weakref.WeakKeyDictionary()
_SERVER_DOMAINS: weakref.WeakValueDictionary[tuple[str, str], _Domain] = (
    weakref.WeakValueDictionary()
)


def domain_for(client: QdrantClient, collection: str) -> _Domain:
    """The lock domain of ``collection``: per client embedded, per server address otherwise.

    Embedded, one client owns the folder (or the ``:memory:`` data). On a server, two clients
    of one address (``from_qdrant(url)`` twice, one ``AsyncQdrantClient`` passed twice) hold
    the same data: keyed by client, their stores each took their own user lock and one
    ``update_fact`` overwrote the other's text.
    """
    address = None if is_local(client) else _server_address(client)
    with _LOCAL_LOCKS_GUARD:
        if address is None:
            return _DOMAINS.setdefault(client, {}).setdefault(collection, _Domain())
        domain = _SERVER_DOMAINS.get((address, collection))
        if domain is None:
            domain = _SERVER_DOMAINS[(address, collection)] = _Domain()
        return domain


def _server_address(client: QdrantClient) -> str | None:
    """The server's REST address (scheme, host, port, prefix) as qdrant-client resolved it."""
    address = getattr(getattr(client, "_client", None), "rest_uri", None)
    return address.rstrip("/") if isinstance(address, str) else None


def shared_for(client: QdrantClient, collection: str) -> Shared:
    per_client = MIRRORS.setdefault(client, {})
    return per_client.setdefault(collection, Shared())
