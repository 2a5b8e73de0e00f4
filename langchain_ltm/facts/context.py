"""What the fact logic runs against: the engine, the embedder and the store's options."""

from __future__ import annotations

from dataclasses import dataclass

from langchain_ltm._embedder import Embedder
from langchain_ltm._labels import encode_label
from langchain_ltm.backends.base import VectorBackend
from langchain_ltm.facts._locks import UserLocks
from langchain_ltm.facts.decision import DecisionPolicy
from langchain_ltm.facts.resolution import Resolver
from langchain_ltm.guard import SecretGuard

__all__ = ["FactContext", "is_user_namespace"]


@dataclass(frozen=True)
class FactContext:
    """Everything the fact logic needs; built by the store, shared by sync and async."""

    backend: VectorBackend
    embedder: Embedder
    namespace: tuple[str, ...]
    policy: DecisionPolicy
    resolver: Resolver | None
    guard: SecretGuard | None
    locks: UserLocks
    max_fact_chars: int
    max_queries: int
    history_limit: int | None
    refresh_on_read: bool = True
    """Whether the fact API's reads (recall, list_all, history, pinned) refresh TTLs by
    default, as ``store.get``/``search`` do (``TTLConfig.refresh_on_read``)."""

    def user_namespace(self, user_id: str) -> tuple[str, ...]:
        """The namespace of ``user_id``'s facts."""
        return (*self.namespace, encode_label(user_id))

    def is_user_namespace(self, namespace: tuple[str, ...]) -> bool:
        """Whether ``namespace`` is where one user's facts live (by shape: one label below).

        Any label counts, one a client wrote from a raw id too (``("memories", "50%")``):
        its items get the fact layout (versions kept, current texts searched), though
        :meth:`~langchain_ltm.facts.api.FactAPI.user_id_of` names no user for it.
        """
        return is_user_namespace(self.namespace, namespace)


def is_user_namespace(root: tuple[str, ...], namespace: tuple[str, ...]) -> bool:
    """Whether ``namespace`` is one label below ``root``: where one user's facts live."""
    n = len(root)
    return len(namespace) == n + 1 and tuple(namespace[:n]) == root
