"""LongTermMemoryConfig: what the memory tools expose and how they behave."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["LongTermMemoryConfig", "ToolName"]

ToolName = Literal["remember_fact", "recall_facts", "forget_fact"]


class LongTermMemoryConfig(BaseModel):
    """Options of :func:`~langchain_ltm.create_memory_tools`.

    Attributes:
        tools: Which tools to expose, in this order.
        namespace: Namespace prefix of the facts (default: the store's).
        upsert_threshold: Cosine similarity from which a fact updates a stored one
            (default: the store's).
        recall_limit: Default and maximum number of facts ``recall_facts`` returns.
        secret_guard: Refuse facts that look like card numbers, IBANs, keys or passwords.
        user_id_key: Name of the user id in ``config["configurable"]`` and in the runtime
            context.

    Example:
        >>> LongTermMemoryConfig(tools=["recall_facts"], recall_limit=3).recall_limit
        3
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    tools: tuple[ToolName, ...] = ("remember_fact", "recall_facts", "forget_fact")
    namespace: tuple[str, ...] | None = None
    upsert_threshold: float | None = Field(default=None, ge=-1.0, le=1.0)
    recall_limit: int = Field(default=5, ge=1, le=100)
    secret_guard: bool = True
    user_id_key: str = Field(default="user_id", min_length=1)

    @field_validator("tools")
    @classmethod
    def _unique_tools(cls, tools: tuple[ToolName, ...]) -> tuple[ToolName, ...]:
        if not tools:
            raise ValueError("expose at least one tool")
        if len(set(tools)) != len(tools):
            raise ValueError(f"tools are listed twice: {tools}")
        return tools
