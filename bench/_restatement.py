"""A candidate check for restatements in other words, by contextual token coverage (bench only).

The write decision lets a new text replace a stored one only when it carries every content
word of it (``langchain_ltm.facts.coverage.carries``), so a restatement in other words
("Joanna appreciates Nate's support and expresses her gratitude" / "Joanna is grateful for
Nate's support and encouragement") is kept as a second fact. :class:`TokenRestatements` is
one more way to merge, plugged into ``DecisionPolicy(restatements=...)`` and asked only when
the word check fails: each content word of the stored text that the new text lacks must be
*covered* by a token of the new text whose contextual embedding (all-MiniLM-L6-v2's last
layer) is close, while names, numbers, dates and polarity must still match exactly, the
subjects must agree (checked before) and the two texts must score at least
``min_similarity``.

It is measured here, not shipped: on LoCoMo's training pairs it merges 12 of 74
``same``/``update`` pairs instead of 7 with no ``different`` one, but on the held-out pairs
it merged one ``different`` pair for two right ones, and it runs the model on both texts of
a candidate (milliseconds, not microseconds). ``bench/locomo.py --restatements`` and
``bench/dedup_quality.py --restatements`` use it; the README has the figures.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt

from langchain_ltm._minilm import MiniLMEncoder
from langchain_ltm.facts.coverage.words import (
    _NEGATIONS,
    _TOKEN,
    DATE_WORDS,
    NUMBER_WORDS,
    STOP_WORDS,
    missing,
    read_words,
    stem,
)

__all__ = ["TokenRestatements"]

_States = tuple[npt.NDArray[np.float32], tuple[tuple[int, int], ...]]
_APOSTROPHES = re.compile("[\u2018\u2019]")


class TokenRestatements:
    """Whether a new text restates a stored one in other words (a ``restatements=`` check).

    Called as ``check(old, new, score)`` by the write decision, after the subject and word
    checks, for a candidate the word check would not let ``new`` replace.

    Args:
        encoder: The MiniLM encoder whose token states are compared; ``None`` (default)
            uses the packaged all-MiniLM-L6-v2 (the ``[local]`` extra).
        min_similarity: Sentence cosine from which a candidate is checked at all.
        min_token_similarity: How close (cosine) a token of the new text must be to each
            missing word of the old one (the mean over the word's word pieces).
        cache_size: Texts whose token states are kept in memory.

    Example (from ``bench/``):
        >>> from _restatement import TokenRestatements
        >>> check = TokenRestatements()
        >>> check("Audrey enjoys exploring nature with her dogs.",
        ...       "Audrey enjoys hiking and exploring nature with her pets.", 0.88)
        True
        >>> check("Melanie signed up for a pottery class.",
        ...       "Melanie made a plate in pottery class.", 0.86)
        False
    """

    def __init__(
        self,
        encoder: MiniLMEncoder | None = None,
        *,
        min_similarity: float = 0.85,
        min_token_similarity: float = 0.6,
        cache_size: int = 2048,
    ) -> None:
        for name, value in (
            ("min_similarity", min_similarity),
            ("min_token_similarity", min_token_similarity),
        ):
            if not isinstance(value, (int, float)) or not -1.0 <= value <= 1.0:
                raise ValueError(f"{name} is a cosine in [-1, 1], got {value!r}.")
        if not isinstance(cache_size, int) or cache_size < 0:
            raise ValueError(f"cache_size must be an int >= 0, got {cache_size!r}.")
        self.encoder = encoder if encoder is not None else MiniLMEncoder()
        self.min_similarity = float(min_similarity)
        self.min_token_similarity = float(min_token_similarity)
        self.cache_size = cache_size
        self._cache: OrderedDict[str, _States] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"TokenRestatements(min_similarity={self.min_similarity}, "
            f"min_token_similarity={self.min_token_similarity})"
        )

    def __call__(self, old: str, new: str, score: float) -> bool:
        """Whether ``new`` may replace ``old``: every missing word of it is covered."""
        if score < self.min_similarity:
            return False
        a, b = read_words(old), read_words(new)
        gaps = set(missing(old, new))
        if a.negated != b.negated or not a.values <= b.values or gaps & a.names:
            return False  # names, numbers, dates and polarity stay exact
        if not gaps:
            return True
        old_rows, old_offsets = self._states(old)
        new_rows, new_offsets = self._states(new)
        pool = new_rows[[i for i, (s, e) in enumerate(new_offsets) if e > s]]
        if not len(pool):
            return False
        spans = [w for w in word_spans(_APOSTROPHES.sub("'", old)) if w[0] in gaps]
        if {term for term, _, _ in spans} != gaps:
            return False  # a gap the spans do not show ("can't" read as "ca not")
        for _, start, end in spans:
            pieces = [i for i, (s, e) in enumerate(old_offsets) if e > s and s < end and e > start]
            if not pieces:
                return False
            covered = float((old_rows[pieces] @ pool.T).max(axis=1).mean())
            if covered < self.min_token_similarity:
                return False
        return True

    def _states(self, text: str) -> _States:
        with self._lock:
            found = self._cache.get(text)
            if found is not None:
                self._cache.move_to_end(text)
                return found
        states = token_states(self.encoder, [text])[0]
        if self.cache_size:
            with self._lock:
                self._cache[text] = states
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        return states


def word_spans(text: str) -> Iterator[tuple[str, int, int]]:
    """Each content word of ``text`` as its stem and its character span (names included).

    The words :func:`read_words` counts as terms, numbers aside, with where they are in
    ``text`` itself (not folded), for checks that look at the words in place.

    Example:
        >>> [w for w, _, _ in word_spans("Joanna expresses her gratitude")]
        ['joanna', 'express', 'gratitud']
    """
    for match in _TOKEN.finditer(text):
        raw = match.group()
        lower = raw.lower().removesuffix("'s")
        if any(c.isdigit() for c in raw) or lower in STOP_WORDS or lower in _NEGATIONS:
            continue
        if lower in NUMBER_WORDS or lower in DATE_WORDS:
            continue
        term = stem(lower)
        if term:
            yield term, match.start(), match.end()


def token_states(encoder: MiniLMEncoder, texts: Sequence[str]) -> list[_States]:
    """Each text's unit-length last-layer token vectors and their character offsets."""
    runtime = encoder._load()
    out: list[_States] = []
    for enc in runtime.tokenizer.encode_batch(list(texts)):
        ids = np.asarray([enc.ids], dtype=np.int64)
        arrays = {
            "input_ids": ids,
            "attention_mask": np.ones_like(ids),
            "token_type_ids": np.zeros_like(ids),
        }
        feeds = {name: arrays[name].astype(dtype, copy=False) for name, dtype in runtime.feeds}
        hidden = np.asarray(runtime.session.run([runtime.output], feeds)[0], dtype=np.float32)
        if hidden.ndim != 3:
            raise ValueError(
                "TokenRestatements needs an encoder whose ONNX output is per token "
                f"(last_hidden_state), this one gives shape {hidden.shape}."
            )
        rows = hidden[0]
        rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
        out.append((rows, tuple((int(s), int(e)) for s, e in enc.offsets)))
    return out
