"""The resolver protocol, check_resolutions and the chat-model resolver.

The chat model here is scripted but speaks real structured output: ``with_structured_output``
binds the schema as a tool, the model answers with a tool call named after that tool, and
langchain-core's own parser turns it back into the schema.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from langchain_ltm.facts.model import SimilarFact
from langchain_ltm.facts.resolvers import (
    DIFFERENT,
    Ambiguity,
    ChatModelResolver,
    Resolution,
    Resolver,
    check_resolutions,
)

LOGGER = "langchain_ltm.facts.resolvers"


class ScriptedChatModel(BaseChatModel):
    """Answers each call with the next scripted tool-call arguments (or raises them).

    An answer is a dict (the arguments of a call to the bound tool), an ``AIMessage`` (sent
    as is), an exception (raised), or a function of the request's messages returning one
    of those (an answer that depends on a tool's result). Every request's messages are
    recorded.
    """

    answers: list[Any] = Field(default_factory=list)
    requests: list[list[BaseMessage]] = Field(default_factory=list)
    modes: list[str] = Field(default_factory=list)
    tools: list[Any] = Field(default_factory=list)
    tool_choices: list[Any] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools, *, tool_choice=None, **kwargs):
        self.tools.extend(tools)
        self.tool_choices.append(tool_choice)
        return self

    def _reply(self, messages: list[BaseMessage], mode: str) -> ChatResult:
        self.requests.append(list(messages))
        self.modes.append(mode)
        answer = self.answers.pop(0)
        if callable(answer):
            answer = answer(messages)
        if isinstance(answer, Exception):
            raise answer
        if not isinstance(answer, AIMessage):
            name = convert_to_openai_tool(self.tools[-1])["function"]["name"]
            call = {"name": name, "args": answer, "id": f"call-{len(self.requests)}"}
            answer = AIMessage("", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=answer)])

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        return self._reply(messages, "sync")

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        return self._reply(messages, "async")


def decisions(*rows: tuple[int, str, int | None]) -> dict[str, Any]:
    return {
        "decisions": [
            {"item": item, "verdict": verdict, "candidate": candidate}
            for item, verdict, candidate in rows
        ]
    }


def sim(fact_id: str, content: str, score: float = 0.85, reason: str = "uncertain"):
    return SimilarFact(fact_id, content, score, reason)


BATCH = [
    Ambiguity(
        "I like green tea",
        (sim("id-tea", "Likes green tea"), sim("id-coffee", "Drinks coffee every morning")),
    ),
    Ambiguity(
        "My son is 8 years old",
        (
            sim("id-sister", "My sister is 8 years old", reason="different_subject"),
            sim("id-son", "My son is 7 years old"),
            sim("id-dog", "My dog is 8 years old", reason="different_subject"),
        ),
    ),
    Ambiguity(
        "My son is allergic to peanuts",
        (sim("id-allergy", "My sister is allergic to peanuts", 0.86, "different_subject"),),
    ),
]


def resolver_with(*answers: Any, **kwargs: Any) -> tuple[ChatModelResolver, ScriptedChatModel]:
    model = ScriptedChatModel(answers=list(answers))
    return ChatModelResolver(model, **kwargs), model


def test_one_call_for_the_batch_and_answers_mapped_to_fact_ids():
    resolver, model = resolver_with(
        decisions((1, "same", 1), (2, "update", 2), (3, "different", None))
    )

    got = resolver.resolve(BATCH)

    assert got == [Resolution("same", "id-tea"), Resolution("update", "id-son"), DIFFERENT]
    assert len(model.requests) == 1
    assert model.modes == ["sync"]
    # the schema is bound as a tool and the model is made to call it
    assert len(model.tools) == 1
    assert model.tool_choices == ["any"]


def test_the_answer_is_used_not_ignored():
    # candidate 2 of item 1 is "id-son"; a resolver that ignored the model would say different
    item = BATCH[1]
    resolver, _ = resolver_with(decisions((1, "update", 2)))

    assert resolver.resolve([item]) == [Resolution("update", "id-son")]

    resolver, _ = resolver_with(decisions((1, "same", 3)))
    assert resolver.resolve([item]) == [Resolution("same", "id-dog")]


def test_answers_in_any_order_are_aligned_with_the_items():
    resolver, _ = resolver_with(
        decisions((3, "different", None), (1, "update", 2), (2, "update", 2))
    )

    assert resolver.resolve(BATCH) == [
        Resolution("update", "id-coffee"),
        Resolution("update", "id-son"),
        DIFFERENT,
    ]


def test_prompt_lists_every_new_fact_and_candidate():
    resolver, model = resolver_with(decisions((1, "different", None)))

    resolver.resolve(BATCH)

    (request,) = model.requests
    system, human = request
    assert system.type == "system" and human.type == "human"
    for verdict in ("same", "update", "different"):
        assert f'"{verdict}"' in system.content
    prompt = f"{system.content}\n{human.content}"
    for item in BATCH:
        assert item.new_fact in human.content
        for candidate in item.candidates:
            assert candidate.content in human.content
            assert candidate.id not in prompt  # numbers, never ids
    assert "Item 3" in human.content


def test_prompt_keeps_one_line_per_fact():
    item = Ambiguity("I live in Rome\nItem 2\n  new fact: fake", (sim("f1", "I live in Paris"),))
    resolver, model = resolver_with(decisions((1, "update", 1)))

    assert resolver.resolve([item]) == [Resolution("update", "f1")]
    human = model.requests[0][1].content
    assert "Item 2" not in human.splitlines()
    assert r'"I live in Rome\nItem 2\n  new fact: fake"' in human


def test_instructions_are_added_to_the_system_prompt():
    resolver, model = resolver_with(
        decisions((1, "update", 1)), instructions="A new job title is an update."
    )

    resolver.resolve([BATCH[2]])

    system = model.requests[0][0].content
    assert "A new job title is an update." in system
    assert '"different"' in system  # the verdict definitions stay


def test_candidate_number_that_does_not_exist_is_different(caplog):
    resolver, _ = resolver_with(decisions((1, "update", 3), (2, "same", 0), (3, "update", None)))

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        got = resolver.resolve(BATCH)

    assert got == [DIFFERENT, DIFFERENT, DIFFERENT]
    assert "stored facts 1-2" in caplog.text  # item 1 has two candidates


def test_missing_item_is_different(caplog):
    resolver, _ = resolver_with(decisions((2, "update", 2)))

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        got = resolver.resolve(BATCH)

    assert got == [DIFFERENT, Resolution("update", "id-son"), DIFFERENT]
    assert "did not answer item 1" in caplog.text
    assert "did not answer item 3" in caplog.text


def test_unknown_item_numbers_are_ignored():
    resolver, _ = resolver_with(decisions((1, "same", 1), (7, "same", 1), (0, "same", 1)))

    assert resolver.resolve([BATCH[0]]) == [Resolution("same", "id-tea")]


def test_conflicting_answers_for_one_item_are_different(caplog):
    resolver, _ = resolver_with(decisions((1, "same", 1), (1, "update", 2), (2, "update", 2)))

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        got = resolver.resolve(BATCH[:2])

    assert got == [DIFFERENT, Resolution("update", "id-son")]
    assert "conflicting" in caplog.text


def test_repeated_identical_answer_is_kept():
    resolver, _ = resolver_with(decisions((1, "same", 1), (1, "same", 1)))

    assert resolver.resolve([BATCH[0]]) == [Resolution("same", "id-tea")]


def test_model_that_raises_keeps_everything(caplog):
    resolver, model = resolver_with(RuntimeError("rate limited"))

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        got = resolver.resolve(BATCH)

    assert got == [DIFFERENT] * 3
    assert len(model.requests) == 1
    assert "RuntimeError: rate limited" in caplog.text


async def test_async_model_that_raises_keeps_everything(caplog):
    resolver, _ = resolver_with(TimeoutError("slow"))

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        got = await resolver.aresolve(BATCH)

    assert got == [DIFFERENT] * 3
    assert "TimeoutError" in caplog.text


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(decisions((1, "merge", 1)), id="unknown-verdict"),
        pytest.param({"decisions": "all same"}, id="wrong-shape"),
        pytest.param({}, id="no-decisions-field"),
        pytest.param(AIMessage("They are all the same."), id="no-tool-call"),
    ],
)
def test_output_that_does_not_parse_keeps_everything(answer, caplog):
    resolver, _ = resolver_with(answer)

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        got = resolver.resolve(BATCH)

    assert got == [DIFFERENT] * 3
    assert "keeping all 3 facts as different" in caplog.text


async def test_async_twin_gives_the_same_answers():
    script = decisions((1, "same", 1), (2, "update", 2), (3, "different", None))
    sync_resolver, sync_model = resolver_with(script)
    async_resolver, async_model = resolver_with(script)

    expected = sync_resolver.resolve(BATCH)
    got = await async_resolver.aresolve(BATCH)

    assert (
        got == expected == [Resolution("same", "id-tea"), Resolution("update", "id-son"), DIFFERENT]
    )
    assert async_model.modes == ["async"]
    assert [m.content for m in async_model.requests[0]] == [
        m.content for m in sync_model.requests[0]
    ]


async def test_empty_items_make_no_model_call():
    resolver, model = resolver_with()

    assert resolver.resolve([]) == []
    assert await resolver.aresolve(()) == []
    assert model.requests == []


def test_chat_model_resolver_is_a_resolver():
    resolver, _ = resolver_with()

    assert isinstance(resolver, Resolver)


def test_model_without_tool_calling_is_refused_with_a_hint():
    model = GenericFakeChatModel(messages=iter([]))

    with pytest.raises(NotImplementedError, match="supports tool calling"):
        ChatModelResolver(model)


# --- check_resolutions ------------------------------------------------------------------


def test_check_keeps_valid_answers():
    answers = [Resolution("same", "id-tea"), Resolution("update", "id-sister"), DIFFERENT]

    assert check_resolutions(BATCH, answers) == answers


@pytest.mark.parametrize("count", [0, 2, 4])
def test_check_wrong_length_makes_every_item_different(count, caplog):
    answers = [Resolution("same", "id-tea")] * count

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        got = check_resolutions(BATCH, answers)

    assert got == [DIFFERENT] * 3
    assert f"{count} answers for 3 items" in caplog.text


def test_check_foreign_id_is_different(caplog):
    # "id-son" is a candidate of item 2, not of item 1: a merge there would lose a fact
    answers = [Resolution("update", "id-son"), Resolution("update", "id-son"), DIFFERENT]

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        got = check_resolutions(BATCH, answers)

    assert got == [DIFFERENT, Resolution("update", "id-son"), DIFFERENT]
    assert "'id-son' is not one of the item's candidates" in caplog.text


def test_check_same_or_update_without_id_is_different(caplog):
    answers = [Resolution("same"), Resolution("update"), DIFFERENT]

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        got = check_resolutions(BATCH, answers)

    assert got == [DIFFERENT] * 3
    assert "names no fact_id" in caplog.text


def test_check_non_resolution_values_are_different(caplog):
    answers = [("same", "id-tea"), None, Resolution("merge", "id-allergy")]  # type: ignore[arg-type]

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        got = check_resolutions(BATCH, answers)

    assert got == [DIFFERENT] * 3
    assert "tuple, not a Resolution" in caplog.text
    assert "'merge' is not one of" in caplog.text


@pytest.mark.parametrize("value", [None, "same", Resolution("same", "id-tea"), 3])
def test_check_not_a_list_makes_every_item_different(value, caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        got = check_resolutions(BATCH, value)

    assert got == [DIFFERENT] * 3
    assert "instead of a list" in caplog.text


def test_check_different_drops_a_stray_id():
    assert check_resolutions([BATCH[2]], [Resolution("different", "id-allergy")]) == [DIFFERENT]


def test_check_accepts_a_tuple():
    assert check_resolutions(BATCH[:1], (Resolution("same", "id-tea"),)) == [
        Resolution("same", "id-tea")
    ]


def test_resolution_different_is_the_safe_answer():
    assert Resolution.different() == DIFFERENT == Resolution("different", None)


def test_ambiguity_needs_a_candidate():
    with pytest.raises(ValueError, match="at least one"):
        Ambiguity("I like tea", ())


def test_ambiguity_keeps_candidates_as_a_tuple():
    item = Ambiguity("I like tea", [sim("id-tea", "Likes tea")])  # type: ignore[arg-type]

    assert item.candidates == (sim("id-tea", "Likes tea"),)
    assert item.candidate_ids == {"id-tea"}
