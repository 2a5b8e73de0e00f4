"""Store families: how one kind of LangChain vectorstore is written to, filtered and scored.

A :class:`StoreFamily` is the whole per-engine part of the generic backend: the filter
dialect (equalities on our metadata keys -> the engine's own filter object), the engine's
distance convention (converted to cosine), whether the engine filters after its ANN (then
the backend passes ``fetch_k`` and widens it), the add/search calls when the
vectorstore's standard methods do not take precomputed vectors, and their async twins
(:meth:`StoreFamily.async_calls`: the family's own, or the store's native coroutines).

A family whose engine can search among given document ids (FAISS's ``IDSelector``) sets
``search_ids``: the backend then reads the scope's current document ids from its catalog
(the value filter and expiry applied exactly there) and the engine ranks only those, so
a per-user search never filters a global top-k afterwards.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore

from langchain_ltm.backends.vectorstore._failures import engine_call
from langchain_ltm.errors import UnsupportedVectorStoreError

__all__ = [
    "DISTANCES",
    "Scored",
    "StoreFamily",
    "family_for",
    "register_vectorstore",
]

Scored = list[tuple[Document, float]]
FilterBuilder = Callable[[Mapping[str, str]], Any]
AddFn = Callable[[Any, list[str], list[str], list[list[float]], list[dict[str, Any]]], None]
SearchFn = Callable[[Any, list[float], int, Any], Scored]
SearchIdsFn = Callable[[Any, list[float], int, list[str]], Scored | None]
GetFn = Callable[[Any, list[str]], list[Document]]
DeleteFn = Callable[[Any, list[str]], None]
CheckFn = Callable[[list[str], list[dict[str, Any]]], None]
StoreCheckFn = Callable[[Any, list[str], list[dict[str, Any]]], None]
ProbeFn = Callable[[Any], str | None]

AAddFn = Callable[
    [Any, list[str], list[str], list[list[float]], list[dict[str, Any]]], Awaitable[None]
]
ASearchFn = Callable[[Any, list[float], int, Any], Awaitable[Scored]]


def _from_cosine_distance(d: float) -> float:
    return 1.0 - d


def _from_squared_l2(d: float) -> float:  # unit vectors: |a-b|^2 = 2 - 2 cos
    return 1.0 - d / 2.0


def _from_l2(d: float) -> float:
    return 1.0 - d * d / 2.0


def _from_similarity(d: float) -> float:
    return d


def _from_negative_ip(d: float) -> float:  # pgvector's <#>, Weaviate's "dot" distance
    return -d


def _from_shifted_cosine(s: float) -> float:  # (1 + cos) / 2: Elasticsearch, Atlas
    return 2.0 * s - 1.0


def _from_inverse_squared_l2(s: float) -> float:  # 1 / (1 + d^2): Elasticsearch l2_norm
    return 1.0 - (1.0 / s - 1.0) / 2.0 if s > 0 else -1.0


def _from_inverse_l2(s: float) -> float:  # 1 / (1 + d): Atlas euclidean
    return 1.0 - (1.0 / s - 1.0) ** 2 / 2.0 if s > 0 else -1.0


# what the engine returns -> cosine similarity, for unit-length vectors (ours always are)
DISTANCES: dict[str, Callable[[float], float]] = {
    "cosine": _from_cosine_distance,  # cosine distance, 1 - cos
    "l2": _from_squared_l2,  # squared Euclidean distance (hnswlib, FAISS IndexFlatL2)
    "euclidean": _from_l2,  # plain Euclidean distance
    "ip": _from_similarity,  # inner product (= cosine on unit vectors)
    "similarity": _from_similarity,  # already a cosine similarity
    "negative_ip": _from_negative_ip,  # minus the inner product
    "shifted_cosine": _from_shifted_cosine,  # (1 + cos) / 2, in [0, 1]
    "inverse_squared_l2": _from_inverse_squared_l2,  # 1 / (1 + squared Euclidean distance)
    "inverse_l2": _from_inverse_l2,  # 1 / (1 + Euclidean distance)
}


@dataclass(frozen=True)
class StoreFamily:
    """How the generic backend talks to one kind of vectorstore.

    Args:
        name: Shown in ``capabilities.name`` (``"vectorstore:<name>"``) and errors.
        filter_builder: ``{"metadata_key": "value", ...}`` (equalities, all to hold) ->
            the filter object the store's search takes as ``filter=``.
        distance: What the store's search returns as the score: a key of ``DISTANCES``
            (``"cosine"``, ``"l2"``, ``"euclidean"``, ``"ip"``, ``"similarity"``,
            ``"negative_ip"``, ``"shifted_cosine"``, ``"inverse_squared_l2"``,
            ``"inverse_l2"``), or a function of the vectorstore returning one (read from
            its configuration).
        post_filter: The store applies ``filter`` after its ANN over ``fetch_k``
            candidates (FAISS does): the backend passes ``fetch_k`` and widens it.
        add: ``add(vs, ids, texts, vectors, metadatas)``, an upsert with precomputed
            vectors; default: delete the ids already present, then ``add_embeddings``.
        search: ``search(vs, vector, k, filter) -> [(Document, score)]``; default:
            ``similarity_search_with_score_by_vector(vector, k=k, filter=filter)``.
        size: Number of documents in the store (bounds the widening for post-filtering
            stores); default: unknown.
        get: ``get(vs, ids) -> [Document]``, the documents among ``ids`` the store holds
            (each with its ``id`` and metadata); default: ``vs.get_by_ids(ids)``.
        delete: ``delete(vs, ids)``, raising when it fails; default: ``vs.delete(ids)``
            (for stores whose ``delete`` logs a failure instead of raising, as Milvus's).

        aadd: The async twin of ``add`` (a coroutine function, same arguments); default:
            the store's own ``aadd_embeddings`` when its class defines one and ``add`` is
            the default, else ``add`` on the backend's threads.
        asearch: The async twin of ``search``; default: the store's own
            ``asimilarity_search_with_score_by_vector`` when its class defines one and
            ``search`` is the default, else ``search`` on the backend's threads.
        native_async: ``False``: never use the store's coroutines (for stores whose async
            methods only wrap the sync ones in an executor, or are not thread-safe), the
            async calls then run the sync ones on the backend's threads.
        max_k: The largest ``k`` the store's search accepts (Pinecone's ``top_k``, Atlas's
            and Elasticsearch's candidate caps); the backend never widens past it and, when
            the store's answer is still short, takes the catalog's exact scoped search.
        value_filters: ``False``: documents carry no ``ltm_v_<field>`` metadata and value
            filters are checked on the catalog only (stores that must declare every filter
            field in an index, or count mapped fields against a limit).
        search_ids: ``search_ids(vs, vector, k, doc_ids) -> [(Document, score)]``, the
            ``k`` best documents among ``doc_ids`` only (the engine restricts its own
            search to them), scored as ``search`` scores; ``None`` from it means "not for
            this store" (an index type that cannot restrict by id) and the backend uses
            ``search`` with the scope filter. When set, a ranked search sends the ids of
            the scope's current documents, read from the catalog with the value filter
            and expiry applied, instead of a filter; every returned document is still
            checked against the catalog. Sync only (the async shell runs it on the
            backend's threads). FAISS's family has one.
        max_batch: The most documents the store's ``add`` takes in one call (Chroma's
            ``max_batch_size``), or a function of the vectorstore returning it (asked
            once, when the backend opens); the backend splits a larger add into calls of
            at most this many. ``None``: no limit.
        check: ``check(texts, metadatas)``, raising ``ValueError`` (naming the field) for
            documents the store cannot hold; run on a write's documents before anything
            of the write is journaled or added, sync and async. PGVectorStore's and the
            older PGVector's refuse a NUL character, which Postgres text cannot hold.
        check_store: ``check_store(vs, texts, metadatas)``, the same for limits the store
            itself sets (Milvus's text field ``max_length``); run right after ``check``,
            also before anything is journaled (the async shell runs it on the backend's
            threads: it may read the store).
        probe: ``probe(vs) -> str | None``, the ``ltm_store`` id of one langchain-ltm
            document the store holds (one bounded read: a get with ``limit=1`` on our
            metadata), ``None`` when it holds none. Asked only when a catalog file is
            about to be created: a new catalog over another catalog's documents is refused
            (:class:`~langchain_ltm.errors.CatalogMismatchError`) unless
            ``share_collection=True``. Without it that check is skipped. Chroma, FAISS
            and Redis have one.

    Example:
        >>> fam = StoreFamily("mine", filter_builder=lambda eq: dict(eq), distance="cosine")
        >>> fam.cosine(None, 0.25)
        0.75
    """

    name: str
    filter_builder: FilterBuilder
    distance: str | Callable[[Any], str] = "cosine"
    post_filter: bool = False
    add: AddFn | None = None
    search: SearchFn | None = None
    size: Callable[[Any], int | None] | None = None
    get: GetFn | None = None
    delete: DeleteFn | None = None

    aadd: AAddFn | None = None
    asearch: ASearchFn | None = None
    native_async: bool = True
    max_k: int | None = None
    value_filters: bool = True
    search_ids: SearchIdsFn | None = None
    check: CheckFn | None = None
    check_store: StoreCheckFn | None = None
    max_batch: int | Callable[[Any], int | None] | None = None
    probe: ProbeFn | None = None

    def __post_init__(self) -> None:
        if self.post_filter and self.size is None:
            raise ValueError(
                "post_filter=True needs size=: the backend widens fetch_k up to the number of "
                "documents in the store, so it must know that number."
            )
        if isinstance(self.distance, str) and self.distance not in DISTANCES:
            raise ValueError(
                f"distance={self.distance!r} is not one of {sorted(DISTANCES)}: say what the "
                "store's search returns as its score."
            )

    def converter(self, vectorstore: Any) -> Callable[[float], float]:
        """The score -> cosine function for ``vectorstore``."""
        kind = self.distance if isinstance(self.distance, str) else self.distance(vectorstore)
        if kind not in DISTANCES:
            raise UnsupportedVectorStoreError(
                f"{type(vectorstore).__name__} scores with {kind!r}, which langchain-ltm cannot "
                f"turn into a cosine similarity; supported: {sorted(DISTANCES)}."
            )
        return DISTANCES[kind]

    def batch_limit(self, vectorstore: Any) -> int | None:
        """The most documents one add on ``vectorstore`` may carry (``None``: no limit).

        Raises:
            ValueError: The limit is not a positive integer.
            BackendError: The store failed to answer (a server that is down).
        """
        limit = self.max_batch
        if callable(limit):
            with engine_call(vectorstore, "open"):  # a server's own limit: asked over HTTP
                limit = limit(vectorstore)
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            raise ValueError(
                f"max_batch gave {limit!r} for {type(vectorstore).__name__}: give a positive "
                "integer (the most documents its add takes in one call) or None."
            )
        return limit

    def cosine(self, vectorstore: Any, score: float) -> float:
        """One engine score as a cosine similarity."""
        return self.converter(vectorstore)(float(score))

    def documents(self, vectorstore: Any, ids: Sequence[str]) -> list[Document]:
        """The documents among ``ids`` that ``vectorstore`` holds."""
        if not ids:
            return []
        if self.get is not None:
            return list(self.get(vectorstore, list(ids)))
        return list(vectorstore.get_by_ids(list(ids)))

    def async_calls(self, vectorstore: Any) -> tuple[AAddFn | None, ASearchFn | None]:
        """The native coroutines for add and search on ``vectorstore`` (``None``: none).

        A family's own ``aadd``/``asearch`` win; otherwise the store's standard async
        methods are used where its class defines them itself (LangChain's ``VectorStore``
        has no ``aadd_embeddings`` nor ``asimilarity_search_with_score_by_vector``, so a
        class that has one wrote it) and the family keeps the standard sync call.
        """
        if not self.native_async:
            return None, None
        aadd = self.aadd
        if (
            aadd is None
            and self.add is None
            and self.get is None  # the default add deletes through aget_by_ids, adelete
            and self.delete is None
            and defines(vectorstore, "aadd_embeddings")
            and defines(vectorstore, "aget_by_ids")
            and defines(vectorstore, "adelete")
        ):
            aadd = default_aadd
        asearch = self.asearch
        if (
            asearch is None
            and self.search is None
            and defines(vectorstore, "asimilarity_search_with_score_by_vector")
        ):
            asearch = default_asearch
        return aadd, asearch

    def remove(self, vectorstore: Any, ids: Sequence[str | None]) -> None:
        """Delete ``ids`` from ``vectorstore`` (through ``family.delete`` if it has one)."""
        wanted = [i for i in ids if i is not None]
        if not wanted:
            return
        if self.delete is not None:
            self.delete(vectorstore, wanted)
        else:
            vectorstore.delete(wanted)

    def required(self) -> list[str]:
        """The vectorstore methods this family calls."""
        needed = [] if self.get is not None else ["get_by_ids"]
        if self.delete is None:
            needed.append("delete")
        if self.add is None:
            needed.append("add_embeddings")
        if self.search is None:
            needed.append("similarity_search_with_score_by_vector")
        return needed


_OPTION_FOR = {  # the register_vectorstore option that stands in for a missing method
    "get_by_ids": "get",
    "delete": "delete",
    "add_embeddings": "add",
    "similarity_search_with_score_by_vector": "search",
}

_REGISTRY: dict[str, StoreFamily] = {}


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def register_vectorstore(
    cls: type | str,
    filter_builder: FilterBuilder | StoreFamily,
    **options: Any,
) -> StoreFamily:
    """Teach langchain-ltm a vectorstore class: its filter dialect and distance convention.

    The class (or its dotted name, so the package need not be imported) and its subclasses
    then work in ``LongTermMemoryStore(vs)``. Every per-user search sends
    ``filter_builder({"ltm_store": ..., "ltm_n0": "memories", "ltm_n1": "<user>"})`` to
    the store's search, so the scope is decided inside the engine.

    Args:
        cls: The vectorstore class, or ``"module.QualName"``.
        filter_builder: Equalities on metadata keys -> the store's ``filter=`` object (or
            a ready :class:`StoreFamily`; the other arguments are then ignored).
        **options: The other fields of :class:`StoreFamily` (``distance=``, ``post_filter=``,
            ``add=``, ``search=``, ``size=``, ``get=``, ``delete=``, ``aadd=``, ``asearch=``,
            ``native_async=``, ``max_k=``, ``value_filters=``, ``search_ids=``,
            ``check=``, ``check_store=``, ``max_batch=``, ``probe=``), as keywords.

    Returns:
        The registered family.

    Example:
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> class MyStore(InMemoryVectorStore): ...
        >>> fam = register_vectorstore(MyStore, lambda eq: dict(eq), distance="similarity")
        >>> fam.name
        'MyStore'
    """
    if isinstance(filter_builder, StoreFamily):
        family = filter_builder
    else:
        name = cls.rsplit(".", 1)[-1] if isinstance(cls, str) else cls.__name__
        family = StoreFamily(name, filter_builder, **options)
    _REGISTRY[cls if isinstance(cls, str) else _qualname(cls)] = family
    return family


def registered(vectorstore: Any) -> StoreFamily | None:
    """The family registered for ``vectorstore``'s class or its nearest base class."""
    _load_builtins()
    for cls in type(vectorstore).__mro__:
        family = _REGISTRY.get(_qualname(cls))
        if family is not None:
            return family
    return None


def family_for(
    vectorstore: Any,
    filter_builder: FilterBuilder | None = None,
    family: StoreFamily | None = None,
) -> StoreFamily:
    """The family for ``vectorstore``, checked to have every method it needs.

    Args:
        vectorstore: The LangChain vectorstore.
        filter_builder: Overrides the registered family's filter dialect.
        family: A ready family (overrides registration and ``filter_builder``); it is
            checked against the store all the same.

    Raises:
        UnsupportedVectorStoreError: The store is not a LangChain ``VectorStore``, lacks a
            method (named in the message), or has no filter dialect.
    """
    if not isinstance(vectorstore, VectorStore):
        raise UnsupportedVectorStoreError(
            f"{type(vectorstore).__name__} is not a LangChain VectorStore (nor a "
            "langchain_ltm VectorBackend): pass a langchain_core.vectorstores.VectorStore."
        )
    if family is None:
        family = registered(vectorstore)
    elif filter_builder is not None:
        filter_builder = None  # a ready family wins
    if filter_builder is not None:
        base = family or StoreFamily(type(vectorstore).__name__, filter_builder)
        family = dataclasses.replace(base, filter_builder=filter_builder)
    name = type(vectorstore).__name__
    if family is None:
        # every refusal at once: the dialect and the methods the default calls need
        missing = [m for m in StoreFamily(name, dict).required() if not defines(vectorstore, m)]
        lacks = (
            f" {name} also lacks {', '.join(missing)}: register those calls too ("
            + ", ".join(f"{_OPTION_FOR[m]}=..." for m in missing)
            + ")."
            if missing
            else ""
        )
        raise UnsupportedVectorStoreError(
            f"langchain-ltm has no filter dialect for {name}, so it cannot scope a user's "
            f"search inside the store.{lacks} Register it in a few lines: "
            "register_vectorstore(MyStore, lambda eq: <the store's filter for the "
            'equalities eq>, distance="cosine" | "l2" | "ip"'
            + "".join(f", {_OPTION_FOR[m]}=..." for m in missing)
            + "), or pass vectorstore_backend(vs, filter_builder=...). See the README, "
            "'Your own vectorstore' (Adding a store)."
        )
    missing = [m for m in family.required() if not defines(vectorstore, m)]
    if missing:
        raise UnsupportedVectorStoreError(
            f"{name} lacks {', '.join(missing)}, which langchain-ltm needs to keep memories "
            "in it (add with ids and precomputed vectors, get_by_ids, delete(ids), a search "
            "by vector with a metadata filter). Register the missing calls with "
            "register_vectorstore(..., "
            + ", ".join(f"{_OPTION_FOR[m]}=..." for m in missing)
            + ") (each a function of the store: see register_vectorstore), or use another "
            "engine (LongTermMemoryStore.from_sqlite(path, embeddings))."
        )
    return family


def eq_and(eq: Mapping[str, str]) -> Any:
    """The MongoDB-style filter most stores share: ``{"k": {"$eq": v}}``, joined with ``$and``.

    Chroma, PGVectorStore, Pinecone and Atlas's ``$vectorSearch`` all take it.

    Example:
        >>> eq_and({"ltm_store": "s1", "ltm_n1": "alice"})
        {'$and': [{'ltm_store': {'$eq': 's1'}}, {'ltm_n1': {'$eq': 'alice'}}]}
    """
    clauses = [{k: {"$eq": v}} for k, v in eq.items()]
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def defines(vectorstore: Any, method: str) -> bool:
    """The store's class defines ``method`` itself (not as LangChain's base default)."""
    fn = getattr(type(vectorstore), method, None)
    return fn is not None and fn is not getattr(VectorStore, method, None)


def in_process_only(vectorstore: Any) -> bool:
    """Whether the store's documents live in this process only (FAISS, an in-memory Chroma).

    Any other store (a server, a file; one this cannot tell) may keep them after the
    process: a temporary catalog over it leaves texts no later store can see or delete.
    """
    if any(
        c.__name__ in ("FAISS", "InMemoryVectorStore")
        and c.__module__.startswith(("langchain_community.", "langchain_core."))
        for c in type(vectorstore).__mro__
    ):
        return True  # (a saved FAISS index is the caller's own save_local)
    if type(vectorstore).__module__.startswith("langchain_chroma"):
        try:
            settings = vectorstore._client.get_settings()
        except Exception:  # a client this cannot read: assume it persists
            return False
        api = str(settings.chroma_api_impl).lower()
        return not settings.is_persistent and "fastapi" not in api and "http" not in api
    return False


# ---- the default calls --------------------------------------------------------------


def present(vectorstore: Any, ids: Sequence[str], family: StoreFamily | None = None) -> list[str]:
    """The ids among ``ids`` the store holds (read through ``family.get`` if it has one)."""
    if not ids:
        return []
    wanted = set(ids)
    docs = family.documents(vectorstore, ids) if family else vectorstore.get_by_ids(list(ids))
    return [d.id for d in docs if d.id in wanted]


def delete_present(vectorstore: Any, ids: Sequence[str], family: StoreFamily | None = None) -> None:
    """Delete the ids the store holds (some stores refuse unknown ids: FAISS does)."""
    found = present(vectorstore, ids, family)
    if found and family is not None:
        family.remove(vectorstore, found)
    elif found:
        vectorstore.delete(found)


def default_add(
    vectorstore: Any,
    ids: list[str],
    texts: list[str],
    vectors: list[list[float]],
    metadatas: list[dict[str, Any]],
    family: StoreFamily | None = None,
) -> None:
    """Upsert through ``add_embeddings``: the vectors are handed over, never re-embedded."""
    delete_present(vectorstore, ids, family)
    vectorstore.add_embeddings(list(zip(texts, vectors, strict=True)), metadatas=metadatas, ids=ids)


def default_search(vectorstore: Any, vector: list[float], k: int, where: Any) -> Scored:
    """``similarity_search_with_score_by_vector`` with the scope filter."""
    return list(vectorstore.similarity_search_with_score_by_vector(vector, k=k, filter=where))


async def adelete_present(vectorstore: Any, ids: Sequence[str]) -> None:
    """Async twin of :func:`delete_present` (the store's ``aget_by_ids`` and ``adelete``)."""
    if not ids:
        return
    wanted = set(ids)
    found = [d.id for d in await vectorstore.aget_by_ids(list(ids)) if d.id in wanted]
    if found:
        await vectorstore.adelete(found)


async def default_aadd(
    vectorstore: Any,
    ids: list[str],
    texts: list[str],
    vectors: list[list[float]],
    metadatas: list[dict[str, Any]],
) -> None:
    """Async twin of :func:`default_add`, through the store's own ``aadd_embeddings``."""
    await adelete_present(vectorstore, ids)
    await vectorstore.aadd_embeddings(
        list(zip(texts, vectors, strict=True)), metadatas=metadatas, ids=ids
    )


async def default_asearch(vectorstore: Any, vector: list[float], k: int, where: Any) -> Scored:
    """The store's own ``asimilarity_search_with_score_by_vector`` with the scope filter."""
    return list(
        await vectorstore.asimilarity_search_with_score_by_vector(vector, k=k, filter=where)
    )


_BUILTINS_LOADED = False


def _load_builtins() -> None:
    """Register the families under ``dialects/`` by dotted class name (nothing imported)."""
    global _BUILTINS_LOADED
    if _BUILTINS_LOADED:
        return
    _BUILTINS_LOADED = True
    from langchain_ltm.backends.vectorstore.dialects import builtin_families

    for qualname, family in builtin_families().items():
        _REGISTRY.setdefault(qualname, family)
