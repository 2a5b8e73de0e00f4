"""LongTermMemoryConfig: what the memory tools expose and how they behave."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["LongTermMemoryConfig", "ToolName"]

ToolName = Literal["remember_fact", "recall_facts", "update_fact", "forget_fact"]


class LongTermMemoryConfig(BaseModel):
    """Options of :func:`~langchain_ltm.create_memory_tools`.

    Attributes:
        tools: Which tools to expose, in this order.
        namespace: Namespace prefix of the facts (default: the store's).
        merge_threshold: Cosine similarity from which a fact about the same subject that
            carries everything a stored one says is its new version (default: the store's).
        review_threshold: Cosine similarity from which a fact is ambiguous: resolved, or
            returned to the model as ``similar`` (default: the store's).
        resolver: Decides ambiguous facts (e.g. ``ChatModelResolver(model)``; default: the
            store's).
        upsert_threshold: The 0.1 name of ``merge_threshold``.
        recall_limit: Default and maximum number of facts ``recall_facts`` returns.
        min_score: ``recall_facts`` leaves out facts scoring below this similarity.
        secret_guard: Refuse facts that look like card numbers, IBANs, keys or passwords.
        user_id_key: Name of the user id in ``config["configurable"]`` and in the runtime
            context.

    Example:
        >>> LongTermMemoryConfig(tools=["recall_facts"], recall_limit=3).recall_limit
        3
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    tools: tuple[ToolName, ...] = ("remember_fact", "recall_facts", "update_fact", "forget_fact")
    namespace: tuple[str, ...] | None = None
    merge_threshold: float | None = Field(default=None, ge=-1.0, le=1.0)
    review_threshold: float | None = Field(default=None, ge=-1.0, le=1.0)
    resolver: Any = None
    upsert_threshold: float | None = Field(default=None, ge=-1.0, le=1.0)
    recall_limit: int = Field(default=5, ge=1, le=100)
    min_score: float | None = Field(default=None, ge=-1.0, le=1.0)
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
