"""README-style scripts that `make lint` type-checks with mypy --strict (see [tool.mypy]).

The README shows these uses; a user running mypy on them must get no error. Each function is
also run by tests/unit_tests/test_public_api.py, so the examples work as well as type-check.
"""

from __future__ import annotations

from pathlib import Path

from langchain_ltm import FactStore, LongTermMemoryStore
from langchain_ltm.defaults import open_facts
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
