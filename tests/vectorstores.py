"""Chroma and FAISS vectorstores for the generic engine's tests, each fresh per call.

Chroma runs in process (an ephemeral client, telemetry off: nothing leaves the machine);
FAISS is created, saved to disk and loaded back before use. Neither ever embeds: the
store hands every vector over.
"""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path
from typing import Any

import chromadb
from chromadb.config import Settings
from langchain_chroma import Chroma
from langchain_community.vectorstores import FAISS

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.vectorstore import vectorstore_backend

_names = itertools.count()
SETTINGS = Settings(anonymized_telemetry=False, allow_reset=True)


def chroma(embeddings: Any, space: str | None = None, client: Any = None) -> Chroma:
    """A fresh collection; ``space`` sets the HNSW distance (Chroma's default: l2)."""
    config = None if space is None else {"hnsw": {"space": space}}
    return Chroma(
        f"ltm-{uuid.uuid4().hex[:12]}",
        embeddings,
        client=client or chromadb.EphemeralClient(settings=SETTINGS),
        collection_configuration=config,  # type: ignore[arg-type]
    )


def faiss(embeddings: Any, folder: Path, *, inner_product: bool = False) -> FAISS:
    """A FAISS index saved to ``folder`` and loaded back (one unrelated document in it)."""
    from langchain_community.vectorstores.utils import DistanceStrategy

    strategy = (
        DistanceStrategy.MAX_INNER_PRODUCT if inner_product else DistanceStrategy.EUCLIDEAN_DISTANCE
    )
    # someone else's document, its vector given (the test embeddings count every call)
    unrelated = [1.0] + [0.0] * (embeddings.dims - 1)
    vs = FAISS.from_embeddings(
        [("an unrelated document", unrelated)], embeddings, distance_strategy=strategy
    )
    vs.save_local(str(folder))
    return FAISS.load_local(
        str(folder), embeddings, allow_dangerous_deserialization=True, distance_strategy=strategy
    )


def make_vectorstore(kind: str, embeddings: Any, tmp_path: Path) -> Any:
    if kind == "chroma":
        return chroma(embeddings)
    folder = tmp_path / f"faiss{next(_names)}"
    return faiss(embeddings, folder)


def open_store(kind: str, embeddings: Any, tmp_path: Path, **kwargs: Any) -> LongTermMemoryStore:
    """A store on ``kind`` ("chroma" or "faiss") with its catalog in ``tmp_path``."""
    vs = make_vectorstore(kind, embeddings, tmp_path)
    backend = vectorstore_backend(vs, catalog=tmp_path / f"catalog{next(_names)}.sqlite")
    return LongTermMemoryStore(backend, embeddings=embeddings, **kwargs)


KINDS = ["chroma", "faiss"]
