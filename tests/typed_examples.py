"""README-style scripts that `make lint` type-checks with mypy --strict (see [tool.mypy]).

The README shows these uses; a user running mypy on them must get no error. Each function is
also run by tests/unit_tests/test_public_api.py, so the examples work as well as type-check.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from langchain_core.vectorstores import InMemoryVectorStore

from langchain_ltm import Fact, FactStore, LongTermMemoryStore
from langchain_ltm.defaults import open_facts
from langchain_ltm.embeddings import LocalMiniLMEmbeddings
from langchain_ltm.encoder import EmbeddingsLike, MiniLMEncoder


def facts_with_the_light_encoder(folder: Path) -> list[str]:
    """README "Only the facts, quickly": MiniLMEncoder with FactStore."""
    with FactStore.from_sqlite(folder / "facts.db", MiniLMEncoder()) as facts:
        facts.remember("alice@example.com", "Prefers answers in Spanish")
        return [fact.content for fact in facts.recall("alice@example.com", "which language?")]


def store_with_the_light_encoder(folder: Path) -> list[str]:
    """The encoder's docstring: every store takes it (LongTermMemoryStore included)."""
    encoder: EmbeddingsLike = MiniLMEncoder()
    with LongTermMemoryStore.from_sqlite(folder / "store.db", encoder) as store:
        store.remember("alice", "Prefers answers in Spanish")
        found = [fact.content for fact in store.recall("alice", "which language?")]
    facts, _ = open_facts(f"sqlite:///{folder / 'store.db'}", embeddings=encoder)
    with facts:
        found += [fact.content for fact in facts.list_all("alice")]
    return found


def when_and_where_a_fact_came_from() -> list[str]:
    """README "When and where a fact came from": ``Fact.valid_from`` is a datetime."""
    store = LongTermMemoryStore(InMemoryVectorStore(LocalMiniLMEmbeddings()))
    may_8 = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)  # backfilling a conversation
    store.remember(
        "caroline", "Went to an LGBTQ support group", metadata={"session": 1}, observed_at=may_8
    )
    store.remember("caroline", "Is researching adoption agencies", metadata={"session": 2})
    lines = [
        f"{fact.valid_from.date()} {fact.content} {dict(fact.metadata)}"
        for fact in store.recall("caroline", "support group", filter={"session": 1})
    ]
    # a Fact built by hand without valid_from: it holds since created_at
    built = Fact("f1", "u1", "Likes tea", may_8, may_8)
    return [*lines, built.valid_from.isoformat()]
