"""Deterministic, offline embeddings for tests about store logic (never the product default)."""

from __future__ import annotations

import hashlib
import json as _json
import re
import uuid as _uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

_WORD = re.compile(r"[a-z0-9]+")


class KeywordEmbeddings(Embeddings):
    """Bag-of-words embeddings: texts sharing words are similar, disjoint texts are orthogonal-ish.

    Every word is hashed to a fixed random unit vector; a text is the normalized sum of its
    words' vectors. Same text, same vector; cosine grows with word overlap. Counts calls so
    tests can assert batching. ``vectors`` maps a text to a crafted vector (normalized when
    read) for tests that need exact scores.
    """

    def __init__(self, dims: int = 64) -> None:
        self.dims = dims
        self.vectors: dict[str, list[float]] = {}
        self.document_calls = 0
        self.query_calls = 0
        self.texts_embedded = 0

    def _word_vector(self, word: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dims)
        return v / np.linalg.norm(v)

    def _embed(self, text: str) -> list[float]:
        if text in self.vectors:
            crafted = np.asarray(self.vectors[text], dtype=float)
            return (crafted / np.linalg.norm(crafted)).tolist()
        words = _WORD.findall(text.lower()) or ["<empty>"]
        v = np.sum([self._word_vector(w) for w in words], axis=0)
        return (v / np.linalg.norm(v)).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.document_calls += 1
        self.texts_embedded += len(texts)
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.query_calls += 1
        self.texts_embedded += 1
        return self._embed(text)


class ScriptedToolModel(GenericFakeChatModel):
    """A chat model that emits the tool calls a real model would, decided by the conversation.

    The last human message drives it: ``remember: A; B`` calls ``remember_fact`` once per
    fact, ``recall: q1 | q2`` calls ``recall_facts`` with both phrasings, ``forget: ID``
    calls ``forget_fact``, ``update: ID => text`` calls ``update_fact``. After the tool
    results it answers with them, one per line.
    Being a pure function of the messages, one instance serves concurrent runs safely.
    ``smuggle_user_id`` adds a ``user_id`` argument to every call, as a prompt-injected
    model might.
    """

    messages: Iterator[Any] = iter(())
    smuggle_user_id: str | None = None
    disable_streaming: bool = True

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedToolModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        if isinstance(messages[-1], ToolMessage):
            outputs = []
            for message in reversed(messages):
                if not isinstance(message, ToolMessage):
                    break
                outputs.append(str(message.content))
            reply = AIMessage(content="\n".join(reversed(outputs)))
            return ChatResult(generations=[ChatGeneration(message=reply)])
        human = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
        command, _, rest = str(human.content).partition(":")
        calls = []
        if command == "remember":
            calls = [("remember_fact", {"fact": f.strip()}) for f in rest.split(";") if f.strip()]
        elif command == "recall":
            calls = [
                ("recall_facts", {"queries": [q.strip() for q in rest.split("|")], "limit": 5})
            ]
        elif command == "forget":
            calls = [("forget_fact", {"fact_id": rest.strip()})]
        elif command == "update":
            fact_id, _, text = rest.partition("=>")
            calls = [("update_fact", {"fact_id": fact_id.strip(), "fact": text.strip()})]
        if not calls:
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="ok"))])
        tool_calls = []
        for name, args in calls:
            if self.smuggle_user_id is not None:
                args = {**args, "user_id": self.smuggle_user_id}
            tool_calls.append(
                {
                    "name": name,
                    "args": args,
                    "id": f"call_{_uuid.uuid4().hex[:12]}",
                    "type": "tool_call",
                }
            )
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(content="", tool_calls=tool_calls))]
        )


def tool_outputs(result: dict[str, Any]) -> list[Any]:
    """The JSON payloads of the tool messages of the last turn."""
    out = []
    for message in reversed(result["messages"]):
        if isinstance(message, HumanMessage):
            break
        if isinstance(message, ToolMessage):
            out.append(_json.loads(message.content))
    return list(reversed(out))
