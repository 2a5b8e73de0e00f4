"""The fact options every store checks the same way: thresholds, resolver, guard, limits.

``LongTermMemoryStore`` and :class:`~langchain_ltm.facts.standalone.FactStore` take the same
keyword options; both pass them through these functions, so a value one refuses the other
refuses with the same message.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from langchain_ltm.facts.decision import DecisionPolicy
from langchain_ltm.facts.resolution import Resolver
from langchain_ltm.guard import SecretGuard, find_secret

__all__ = [
    "DEFAULT_MERGE_THRESHOLD",
    "DEFAULT_REVIEW_THRESHOLD",
    "check_history_limit",
    "check_limit",
    "check_resolver",
    "decision_policy",
    "guard_for",
    "refuse_unknown",
    "replace_policy",
]

DEFAULT_MERGE_THRESHOLD = 0.80
"""Cosine similarity from which a fact about the same subject becomes a new version."""

DEFAULT_REVIEW_THRESHOLD = 0.50
"""Cosine similarity from which a fact is close enough to be ambiguous (see the README)."""


def decision_policy(
    merge: float | None,
    review: float | None,
    legacy_merge: float | None = None,
    restatements: Callable[[str, str, float], bool] | None = None,
) -> DecisionPolicy:
    """The policy of ``merge_threshold``, ``review_threshold`` and the 0.1 ``upsert_threshold``."""
    if merge is not None and legacy_merge is not None and merge != legacy_merge:
        raise ValueError("Pass merge_threshold or its old name upsert_threshold, not both.")
    merge = merge if merge is not None else legacy_merge
    merge = DEFAULT_MERGE_THRESHOLD if merge is None else merge
    if review is None:
        review = min(DEFAULT_REVIEW_THRESHOLD, merge) if isinstance(merge, (int, float)) else 0.0
    return DecisionPolicy(merge_threshold=merge, review_threshold=review, restatements=restatements)


def replace_policy(
    policy: DecisionPolicy,
    merge: float | None,
    review: float | None,
    legacy_merge: float | None = None,
) -> DecisionPolicy:
    """``policy`` with the thresholds given replaced (``with_options``); the rest kept.

    A new ``merge_threshold`` below the current review threshold lowers that too, unless
    ``review_threshold`` is given.
    """
    merge = merge if merge is not None else legacy_merge
    if merge is None and review is None:
        return policy
    return decision_policy(
        merge if merge is not None else policy.merge_threshold,
        review
        if review is not None
        else min(policy.review_threshold, merge if merge is not None else 1.0),
        restatements=policy.restatements,
    )


def check_resolver(resolver: Any) -> Resolver | None:
    """``resolver`` if it is ``None`` or has the :class:`Resolver` methods; else TypeError."""
    if resolver is not None and not isinstance(resolver, Resolver):
        raise TypeError(
            "resolver must have resolve(items) and aresolve(items) methods (the Resolver "
            f"protocol), e.g. ChatModelResolver(model); got {type(resolver).__name__}."
        )
    return resolver


def guard_for(secret_guard: bool | SecretGuard | None) -> SecretGuard | None:
    """The secret check of ``secret_guard`` (``True``, ``None``: built-in; ``False``: none).

    ``None`` is the default guard, as in ``LongTermMemoryConfig`` and ``with_options``
    (where it means the store's): it never turns the guard off silently. Anything else but
    a function is a TypeError now, not at the first ``remember``.
    """
    if secret_guard is True or secret_guard is None:
        return find_secret
    if secret_guard is False:
        return None
    if isinstance(secret_guard, (bool, int, float, str, bytes)) or not callable(secret_guard):
        raise TypeError(
            "secret_guard must be True or None (the built-in check), False (none) or a function "
            f"text -> reason (str) or None, got {secret_guard!r}."
        )
    return secret_guard


_LIMITS = {
    "max_fact_chars": "the most characters of a fact or a recall query; default 2000",
    "max_queries": "the most phrasings one recall takes; default 32",
}


def check_limit(name: str, value: Any) -> int:
    """``value`` of the option ``name`` if it is an int >= 1; else ValueError saying what it is.

    At construction: a 0 would blame every fact's length, a ``"2000"`` fail every call.
    """
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be an int >= 1 ({_LIMITS[name]}), got {value!r}.")
    return value


def check_history_limit(history_limit: Any) -> int | None:
    """``None`` (keep every version) or an int >= 0; else ValueError."""
    if history_limit is not None and (
        not isinstance(history_limit, int) or isinstance(history_limit, bool) or history_limit < 0
    ):
        raise ValueError(f"history_limit must be None or an int >= 0, got {history_limit!r}.")
    return history_limit


def refuse_unknown(
    factory: str,
    init: Callable[..., Any],
    kwargs: dict[str, Any],
    engine_options: Iterable[str],
    *,
    not_options: Iterable[str] = ("self",),
) -> None:
    """Raise TypeError for an option of a ``from_*`` factory that neither side takes.

    A factory passes its engine's options on and the rest to the store's ``__init__``
    (``init``), whose own TypeError named neither the factory nor what it does take.
    ``not_options`` are ``init``'s parameters the factory fills itself.

    Example:
        >>> def init(self, backend, *, merge_threshold=None): ...
        >>> refuse_unknown("from_x", init, {"merge_threshold": 0.9}, ["dims"],
        ...                not_options=("self", "backend"))
        >>> refuse_unknown("from_x", init, {"min_sise": 2}, ["dims"],
        ...                not_options=("self", "backend"))
        Traceback (most recent call last):
        ...
        TypeError: from_x() got unexpected option(s) 'min_sise': it takes the store's \
(merge_threshold) and the engine's (dims).
    """
    skipped = set(not_options)
    store_options = [name for name in inspect.signature(init).parameters if name not in skipped]
    unknown = [name for name in kwargs if name not in store_options]
    if unknown:
        raise TypeError(
            f"{factory}() got unexpected option(s) {', '.join(map(repr, unknown))}: it takes "
            f"the store's ({', '.join(store_options)}) and the engine's "
            f"({', '.join(engine_options)})."
        )
