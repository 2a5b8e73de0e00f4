"""Facts about users: the data model, the write decision, versions and resolvers.

Pure modules (no I/O): :mod:`.text` (validation, normalized form, hash), :mod:`.model`
(what the API returns), :mod:`.conflicts` (offline subject and value checks),
:mod:`.decision` (duplicate / updated / created), :mod:`.versions` (the item layout),
:mod:`.resolution` and :mod:`.resolvers` (deciding the ambiguous cases), :mod:`.options`,
:mod:`.import_records` (an import's records, read and checked).
The generators that drive them against an engine: :mod:`.writes` (remember),
:mod:`.updates` (update_fact, pin), :mod:`.records` (what both write), :mod:`.imports` and
:mod:`.reads`; :mod:`.api` holds the fact methods ``LongTermMemoryStore`` and
:mod:`.standalone`'s ``FactStore`` have (one-liners over them).
"""

from typing import TYPE_CHECKING

from langchain_ltm.facts.decision import DecisionPolicy
from langchain_ltm.facts.import_records import ImportMode
from langchain_ltm.facts.imports import ImportResult
from langchain_ltm.facts.model import (
    Fact,
    FactVersion,
    RecalledFact,
    RememberAction,
    RememberResult,
    SimilarFact,
)
from langchain_ltm.facts.resolution import Ambiguity, Resolution, Resolver, Verdict
from langchain_ltm.facts.text import content_hash, normalize_fact, validate_text

if TYPE_CHECKING:
    from langchain_ltm.facts.resolvers import ChatModelResolver
    from langchain_ltm.facts.standalone import FactStore

__all__ = [
    "Ambiguity",
    "ChatModelResolver",
    "DecisionPolicy",
    "Fact",
    "FactStore",
    "FactVersion",
    "ImportMode",
    "ImportResult",
    "RecalledFact",
    "RememberAction",
    "RememberResult",
    "Resolution",
    "Resolver",
    "SimilarFact",
    "Verdict",
    "content_hash",
    "normalize_fact",
    "validate_text",
]


def __getattr__(name: str) -> object:
    # ChatModelResolver brings langchain-core's messages and pydantic (~0.1 s): loaded on use,
    # so the fact logic (and ``ltm``) runs without them.
    if name == "ChatModelResolver":
        from langchain_ltm.facts.resolvers import ChatModelResolver

        return ChatModelResolver
    if name == "FactStore":  # the engines' modules import this package: load it on use
        from langchain_ltm.facts.standalone import FactStore

        return FactStore
    raise AttributeError(f"module 'langchain_ltm.facts' has no attribute {name!r}")
