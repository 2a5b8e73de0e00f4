"""LongTermMemoryConfig: what the memory tools expose and how they behave."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from langchain_ltm.guard import SecretGuard

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
        secret_guard: ``True``: refuse facts that look like card numbers, IBANs, keys or
            passwords; ``False``: store anything; or your own ``guard(text) -> reason |
            None`` (default: the store's, as given to ``LongTermMemoryStore``).
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
    secret_guard: bool | SecretGuard | None = None
    user_id_key: str = Field(default="user_id", min_length=1)

    @field_validator("tools")
    @classmethod
    def _unique_tools(cls, tools: tuple[ToolName, ...]) -> tuple[ToolName, ...]:
        if not tools:
            raise ValueError("expose at least one tool")
        if len(set(tools)) != len(tools):
            raise ValueError(f"tools are listed twice: {tools}")
        return tools

    @field_validator("secret_guard", mode="before")
    @classmethod
    def _guard_or_flag(cls, guard: Any) -> Any:
        if guard is None or isinstance(guard, bool) or callable(guard):
            return guard
        raise ValueError(
            f"secret_guard must be True, False, a guard(text) -> reason | None, or None "
            f"(the store's), got {type(guard).__name__}"
        )
