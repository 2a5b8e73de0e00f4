"""langchain-tests' standard suites for each memory tool (bound to one user)."""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_tests.integration_tests import ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests

from langchain_ltm import LongTermMemoryStore, memory_tools_for
from tests.fakes import KeywordEmbeddings

EXAMPLES: dict[str, dict[str, Any]] = {
    "remember_fact": {"fact": "prefers answers in Spanish"},
    "recall_facts": {"queries": ["preferred language", "which language"], "limit": 3},
    "forget_fact": {"fact_id": "00000000-0000-0000-0000-000000000000"},
}


def _tool(name: str) -> BaseTool:
    store = LongTermMemoryStore(InMemoryVectorStore(KeywordEmbeddings(dims=64)))
    tools = memory_tools_for(store, {"configurable": {"user_id": "standard-tests"}})
    return next(t for t in tools if t.name == name)


class _Standard:
    name: str

    @property
    def tool_constructor(self) -> BaseTool:
        return _tool(self.name)

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return EXAMPLES[self.name]


class TestRememberFactUnit(_Standard, ToolsUnitTests):
    name = "remember_fact"


class TestRecallFactsUnit(_Standard, ToolsUnitTests):
    name = "recall_facts"


class TestForgetFactUnit(_Standard, ToolsUnitTests):
    name = "forget_fact"


class TestRememberFactInvoke(_Standard, ToolsIntegrationTests):
    name = "remember_fact"


class TestRecallFactsInvoke(_Standard, ToolsIntegrationTests):
    name = "recall_facts"


class TestForgetFactInvoke(_Standard, ToolsIntegrationTests):
    name = "forget_fact"
