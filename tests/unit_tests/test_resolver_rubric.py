"""The chat-model resolver is told the rule the write decision follows, and the rule decides.

The model here answers from the prompt it is sent, as an instruction-following model would:
it knows what kind of case each pair is (two events, another person, a dropped name, ...),
looks that case up in the system prompt and answers the verdict whose definition names it.
A case the prompt does not name gets the naive answer for two similar texts: ``update``.
So a prompt that loses a rule turns its pairs into merges that hide the stored text, and
these tests fail. The pairs are LoCoMo-style observations written for these tests.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_core.vectorstores import InMemoryVectorStore
from pydantic import Field

from langchain_ltm import ChatModelResolver, LongTermMemoryStore
from langchain_ltm.facts.model import SimilarFact
from langchain_ltm.facts.resolvers import Ambiguity
from tests.fakes import KeywordEmbeddings
from tests.unit_tests.test_resolvers import ScriptedChatModel

_BULLET = re.compile(r'^- "(same|update|different)":', re.MULTILINE)
_STORED = re.compile(r"^\s+\d+\. (.*)$")


def _flat(text: str) -> str:
    return " ".join(text.split()).lower()


def verdict_sections(system: str) -> dict[str, str]:
    """Each verdict's definition in the system prompt: its bullet up to the next one."""
    marks = list(_BULLET.finditer(system))
    sections: dict[str, str] = {}
    for mark, following in zip(marks, [*marks[1:], None], strict=True):
        end = following.start() if following else system.find("\n\n", mark.end())
        sections[mark.group(1)] = _flat(system[mark.start() : end if end >= 0 else None])
    return sections


def read_items(human: str) -> list[tuple[str, list[str]]]:
    """The new fact and the stored facts of each item, as quoted in the prompt."""
    decoder = json.JSONDecoder()
    items: list[tuple[str, list[str]]] = []
    for line in human.splitlines():
        if line.startswith("  new fact: "):
            items.append((decoder.raw_decode(line.removeprefix("  new fact: "))[0], []))
        elif (stored := _STORED.match(line)) and items:
            items[-1][1].append(decoder.raw_decode(stored.group(1))[0])
    return items


class RubricReader(ScriptedChatModel):
    """Decides every item from the prompt it receives.

    ``cases`` maps a new fact to the stored fact it is compared with and a phrase naming
    its case. The answer is the verdict whose definition contains that phrase (with the
    stored fact's number), or ``update`` of it when no definition does.
    """

    cases: dict[str, tuple[str, str]] = Field(default_factory=dict)

    def _reply(self, messages: list[BaseMessage], mode: str) -> ChatResult:
        self.requests.append(list(messages))
        self.modes.append(mode)
        system, human = (str(m.content) for m in messages)
        sections = verdict_sections(system)
        rows = []
        for n, (new, stored) in enumerate(read_items(human), start=1):
            old, case = self.cases.get(new, ("", "\0"))
            verdict = next((v for v, text in sections.items() if _flat(case) in text), "update")
            number = stored.index(old) + 1 if old in stored else 1
            rows.append(
                {
                    "item": n,
                    "verdict": verdict,
                    "candidate": None if verdict == "different" else number,
                }
            )
        name = convert_to_openai_tool(self.tools[-1])["function"]["name"]
        call = {"name": name, "args": {"decisions": rows}, "id": f"call-{len(self.requests)}"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


# (old, new, the phrase naming the case in the rubric, the action remember must take)
PAIRS = [
    pytest.param(
        "Lena took her kids to the beach in July",
        "Lena took her kids camping in the forest in August",
        "two events are never an update",
        "created",
        id="two-events-of-one-person",
    ),
    pytest.param(
        "Priya signed up for a woodworking course at the library",
        "Priya built a birdhouse in her woodworking course",
        "a different event or occasion",
        "created",
        id="signed-up-then-made-something-there",
    ),
    pytest.param(
        "Omar is planning to run a half marathon in October",
        "Omar ran the half marathon in October",
        "a plan now done",
        "updated",
        id="plan-now-done",
    ),
    pytest.param(
        "Keiko adopted a kitten named Miso",
        "Ravi adopted a kitten named Miso",
        "a different person",
        "created",
        id="another-speaker",
    ),
    pytest.param(
        "Dana thanked Felix for the book recommendations",
        "Felix thanked Dana for the book recommendations",
        "the same names in other roles",
        "created",
        id="same-names-other-roles",
    ),
    pytest.param(
        "Tomas opened a bike repair shop",
        "Tomas opened a bike repair shop that also rents out e-bikes",
        "with more detail",
        "updated",
        id="restated-with-more-detail",
    ),
    pytest.param(
        "Ravi has two cats",
        "Ravi has three cats now",
        "a changed count",
        "updated",
        id="changed-count",
    ),
    pytest.param(
        "Keiko is reading a detective novel by Agatha Christie",
        "Keiko is reading a detective novel",
        'information loss means "different"',
        "created",
        id="drops-a-name",
    ),
]
DIFFERENT_PAIRS = [p for p in PAIRS if p.values[3] == "created"]


@pytest.fixture
def store():
    return LongTermMemoryStore(
        InMemoryVectorStore(KeywordEmbeddings(dims=64)), upsert_threshold=0.8
    )


async def remember_pair(store, resolver_for, old, new, case, *, sync=True):
    """Store ``old``, then remember ``new`` with the ambiguous band wide open."""
    first = store.remember("u1", old)
    model = RubricReader(cases={new: (old, case)})
    resolving = store.with_options(
        merge_threshold=0.95, review_threshold=0.3, resolver=resolver_for(model)
    )
    result = resolving.remember("u1", new) if sync else await resolving.aremember("u1", new)
    return first, result, resolving.list_all("u1"), model


@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
@pytest.mark.parametrize(("old", "new", "case", "action"), PAIRS)
async def test_locomo_style_pairs_follow_the_rubric_and_lose_nothing(
    store, old, new, case, action, sync
):
    first, result, facts, model = await remember_pair(
        store, ChatModelResolver, old, new, case, sync=sync
    )

    assert result.action == action
    current = {f.content for f in facts}
    assert new in current
    if action == "updated":  # the stored text is history of the same fact
        assert result.fact is not None and result.fact.id == first.fact.id
        assert [v.content for v in result.fact.history] == [old]
    else:  # both stay current
        assert current == {old, new}
    assert model.modes in ([], ["sync" if sync else "async"])


class WithoutRule(ChatModelResolver):
    """The real prompt with every line naming ``rule`` taken out."""

    def __init__(self, model: Any, rule: str) -> None:
        super().__init__(model)
        self.rule = rule

    def messages(self, items):
        system, human = super().messages(items)
        lines = str(system.content).splitlines()
        kept = [line for line in lines if _flat(self.rule) not in _flat(line)]
        return [SystemMessage("\n".join(kept)), human]


@pytest.mark.parametrize(("old", "new", "case", "action"), DIFFERENT_PAIRS)
async def test_without_its_rule_the_pair_is_merged_and_the_stored_text_hidden(
    store, old, new, case, action
):
    # the control: the answers above come from the prompt, not from the model's script
    item = Ambiguity(new, (SimilarFact("f1", old, 0.8),))
    assert _flat(case) in _flat(
        str(ChatModelResolver(ScriptedChatModel()).messages([item])[0].content)
    )
    _, result, facts, model = await remember_pair(
        store, lambda m: WithoutRule(m, case), old, new, case
    )

    assert len(model.requests) == 1
    assert result.action == "updated"
    assert [f.content for f in facts] == [new]  # old is only in history now


def test_the_prompt_states_the_rubric():
    resolver = ChatModelResolver(ScriptedChatModel())
    item = Ambiguity("Ravi has three cats", (SimilarFact("f1", "Ravi has two cats", 0.8),))

    system = str(resolver.messages([item])[0].content)

    sections = verdict_sections(system)
    assert set(sections) == {"same", "update", "different"}
    assert "says everything the stored fact says and nothing more" in sections["same"]
    for rule in (
        "loses nothing of it",
        "everything the stored fact says with more detail",
        "same attribute of the same subject and the new value replaces the old one",
        "a moved city, a changed count",
        "a plan now done",
    ):
        assert rule in sections["update"], rule
    for rule in (
        "anything else",
        "a different person",
        "the same names in other roles",
        "a different event or occasion",
        "two events are never an update",
        "a differently numbered or named thing",
        "a name, item, number, place, plan, event or claim that the new fact does not carry",
        'information loss means "different"',
    ):
        assert rule in sections["different"], rule
    assert 'when unsure, answer "different"' in _flat(system)


def test_the_word_check_is_shown_as_a_hint():
    resolver = ChatModelResolver(ScriptedChatModel())
    item = Ambiguity(
        "Keiko is reading a detective novel",
        (
            SimilarFact(
                "f1",
                "Keiko is reading a detective novel by Agatha Christie",
                0.87,
                "loses_information",
            ),
            SimilarFact("f2", "Ravi is reading a detective novel", 0.8, "different_subject"),
            SimilarFact("f3", "Keiko reads detective novels", 0.7, "uncertain"),
        ),
    )

    system, human = (str(m.content) for m in resolver.messages([item]))

    stored = [line for line in human.splitlines() if _STORED.match(line)]
    assert stored == [
        '    1. "Keiko is reading a detective novel by Agatha Christie"'
        "  (word check: the new fact does not carry all of it)",
        '    2. "Ravi is reading a detective novel"  (word check: about another subject)',
        '    3. "Keiko reads detective novels"',
    ]
    assert "hint" in system and "not the answer" in system
    assert read_items(human) == [(item.new_fact, [c.content for c in item.candidates])]
