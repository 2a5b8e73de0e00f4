"""Facts about users: the data model, the write decision, versions and resolvers.

Pure modules (no I/O): :mod:`.text` (validation, normalized form, hash), :mod:`.model`
(what the API returns), :mod:`.conflicts` (offline subject and value checks),
:mod:`.decision` (duplicate / updated / created), :mod:`.versions` (the item layout),
:mod:`.resolvers` (deciding the ambiguous cases). The generators that drive them against
an engine: :mod:`.writes` and :mod:`.reads`; :mod:`.api` holds the fact methods
``LongTermMemoryStore`` mixes in (one-liners over them).
"""

from langchain_ltm.facts.decision import DecisionPolicy
from langchain_ltm.facts.model import (
    Fact,
    FactVersion,
    RecalledFact,
    RememberAction,
    RememberResult,
    SimilarFact,
)
from langchain_ltm.facts.resolvers import (
    Ambiguity,
    ChatModelResolver,
    Resolution,
    Resolver,
    Verdict,
)
from langchain_ltm.facts.text import content_hash, normalize_fact, validate_text
from langchain_ltm.facts.writes import ImportMode, ImportResult

__all__ = [
    "Ambiguity",
    "ChatModelResolver",
    "DecisionPolicy",
    "Fact",
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
