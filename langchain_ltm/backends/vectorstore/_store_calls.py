"""What the generic engine sends the user's vectorstore: its filters and every call into it.

:class:`StoreCalls`, the base of :class:`~.backend.VectorStoreBackend`, holds the
vectorstore's part of each step the sans-I/O search, write and repair yield: sync under
the backend's lock (stores like FAISS are not thread-safe), async through the store's own
coroutines where it has them (else the sync call on the backend's threads). Each runs in
:func:`~._failures.engine_call`, so the store's client failures raise as ``BackendError``.
Drops (a presence check, then a delete) go in parts of at most :data:`DROP_PART` ids. The
filters a search sends (:meth:`~StoreCalls.scope_filter`, :meth:`~StoreCalls.search_filter`)
are in the store's own dialect (its :class:`~.family.StoreFamily`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from langchain_ltm.backends._threaded import ThreadedAsync
from langchain_ltm.backends.base import SearchRequest
from langchain_ltm.backends.vectorstore._catalog import Catalog
from langchain_ltm.backends.vectorstore._failures import engine_call
from langchain_ltm.backends.vectorstore._layout import scope_equalities, search_equalities
from langchain_ltm.backends.vectorstore.family import (
    AAddFn,
    AddFn,
    ASearchFn,
    Scored,
    SearchFn,
    StoreFamily,
    adelete_present,
    delete_present,
)

DROP_PART = 10_000
"""The most document ids one delete (and its presence check) names. Both pgvector
families bind one value per id, and Postgres takes at most 65,535 a statement: deleting
66,000 items failed there and left every document journaled for ``repair()``, whose own
delete failed the same way."""


class StoreCalls(ThreadedAsync):
    """The vectorstore's part of :class:`~.backend.VectorStoreBackend` (its base)."""

    # set by VectorStoreBackend.__init__
    vectorstore: Any
    family: StoreFamily
    catalog: Catalog
    _value_fields: bool
    _vs_lock: threading.RLock
    _max_batch: int | None
    _add: AddFn
    _search: SearchFn
    _aadd: AAddFn | None
    _asearch: ASearchFn | None
    _native_drop: bool

    def scope_filter(self, prefix: tuple[str, ...]) -> Any:
        """The engine filter a search under ``prefix`` sends (the store's own dialect)."""
        return self.family.filter_builder(scope_equalities(self.catalog.store_id, prefix))

    def search_filter(self, request: SearchRequest) -> Any:
        """The engine filter a ranked search sends: the scope and the pushable value filter.

        Conditions ``{field: "a short string"}`` on top-level fields are added as
        equalities on ``ltm_v_<field>`` when the catalog's documents carry those fields
        (see :func:`~._catalog.value_metadata`); every other condition, and these too, is
        checked again on the catalog's items. Families with ``value_filters=False``
        (Pinecone, Weaviate, Elasticsearch, Atlas, Redis) get the scope only.

        Example:
            >>> from langchain_community.vectorstores import FAISS
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> from langchain_ltm._filters import compile_filter
            >>> from langchain_ltm.backends.vectorstore import vectorstore_backend
            >>> emb = DeterministicFakeEmbedding(size=8)
            >>> backend = vectorstore_backend(FAISS.from_texts(["unrelated"], emb))
            >>> wanted = compile_filter({"kind": "pref", "n": 3})  # n: a number, not pushed
            >>> where = backend.search_filter(SearchRequest(("memories", "bob"), filter=wanted))
            >>> where == {**backend.scope_filter(("memories", "bob")), "ltm_v_kind": "pref"}
            True
            >>> sorted(where)  # FAISS's dialect: a dict of equalities on metadata keys
            ['ltm_n0', 'ltm_n1', 'ltm_store', 'ltm_v_kind']
            >>> backend.close()
        """
        eq = search_equalities(self.catalog.store_id, request, self._value_fields)
        return self.family.filter_builder(eq)

    def _engine(self, operation: str) -> Any:
        """Calls into the vectorstore: its client's failures raise as ``BackendError``."""
        return engine_call(self.vectorstore, operation)

    def _vs_search(self, vector: list[float], k: int, where: Any) -> tuple[Scored, int | None]:
        with self._vs_lock, self._engine("search"):
            results = self._search(self.vectorstore, vector, k, where)
            return results, self._size()

    async def _avs_search(
        self, vector: list[float], k: int, where: Any
    ) -> tuple[Scored, int | None]:
        if self._asearch is None:
            return await self._off_loop(self._vs_search, vector, k, where)
        with self._engine("search"):
            results = await self._asearch(self.vectorstore, vector, k, where)
            size = await self._off_loop(self._size) if self.family.post_filter else None
        return results, size

    def _vs_search_ids(self, vector: list[float], k: int, ids: list[str]) -> Scored | None:
        assert self.family.search_ids is not None
        with self._vs_lock, self._engine("search"):
            return self.family.search_ids(self.vectorstore, vector, k, ids)

    async def _avs_search_ids(self, vector: list[float], k: int, ids: list[str]) -> Scored | None:
        return await self._off_loop(self._vs_search_ids, vector, k, ids)

    def _size(self) -> int | None:
        if self.family.post_filter and self.family.size:
            return self.family.size(self.vectorstore)
        return None

    def _vs_add(
        self, ids: list[str], texts: list[str], vectors: list[list[float]], metas: list[Any]
    ) -> None:
        with self._vs_lock, self._engine("add"):
            self._add(self.vectorstore, ids, texts, vectors, metas)

    async def _avs_add(
        self, ids: list[str], texts: list[str], vectors: list[list[float]], metas: list[Any]
    ) -> None:
        if self._aadd is None:
            await self._off_loop(self._vs_add, ids, texts, vectors, metas)
        else:
            with self._engine("add"):
                await self._aadd(self.vectorstore, ids, texts, vectors, metas)

    def _drop_parts(self, ids: Sequence[str]) -> list[Sequence[str]]:
        """``ids`` in parts a store's presence check and delete take (:data:`DROP_PART`)."""
        size = min(self._max_batch or DROP_PART, DROP_PART)
        return [ids[start : start + size] for start in range(0, len(ids), size)]

    def _vs_drop(self, ids: Sequence[str]) -> None:
        with self._vs_lock, self._engine("delete"):
            for part in self._drop_parts(ids):
                delete_present(self.vectorstore, part, self.family)

    async def _avs_drop(self, ids: Sequence[str]) -> None:
        if self._native_drop:
            with self._engine("delete"):
                for part in self._drop_parts(ids):
                    await adelete_present(self.vectorstore, part)
        else:
            await self._off_loop(self._vs_drop, ids)
