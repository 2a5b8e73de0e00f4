"""Reading LoCoMo (snap-research/locomo, data/locomo10.zip) for the benchmarks.

The data is CC BY-NC 4.0: it is never committed and never read by tests or CI. Pass the
zip, the folder it unpacks to, or one conversation's JSON file; every benchmark that reads it
takes ``--data PATH``.

Each conversation is between two people over up to 35 sessions; most sessions carry
"observations": short LLM-written facts, each tagged with the dialog turns it came from
("D3:5" is turn 5 of session 3), and the conversation has questions whose evidence names
dialog turns. Conversations 26, 30, 41, 42, 43 and 44 are the training part (labels are
built and rules tuned on them only); 47, 48, 49 and 50 are held out.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

TRAINING = ("26", "30", "41", "42", "43", "44")
HELD_OUT = ("47", "48", "49", "50")


@dataclass(frozen=True)
class Observation:
    """One observation: its text, the speaker it is about, and its dialog turns."""

    text: str
    speaker: str
    dialog_ids: tuple[str, ...]


@dataclass(frozen=True)
class Session:
    number: int
    observed_at: datetime
    observations: tuple[Observation, ...]


@dataclass(frozen=True)
class Question:
    question: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]

    def observations(self) -> Iterator[tuple[Session, Observation]]:
        for session in self.sessions:
            for obs in session.observations:
                yield session, obs


def _date(text: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023" as an aware datetime (UTC: the data has no zone)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def _conversation(sample_id: str, raw: dict[str, object]) -> Conversation:
    sessions: list[Session] = []
    number = 1
    while f"session_{number}_date_time" in raw:
        observed = raw.get(f"session_{number}_observation")
        if isinstance(observed, dict):
            items: list[Observation] = []
            for speaker, rows in observed.items():
                for text, ids in rows:
                    dialog_ids = tuple(ids) if isinstance(ids, list) else (ids,)
                    items.append(Observation(str(text), speaker, tuple(map(str, dialog_ids))))
            sessions.append(
                Session(number, _date(str(raw[f"session_{number}_date_time"])), tuple(items))
            )
        number += 1
    questions = tuple(
        Question(str(q["question"]), tuple(map(str, q.get("evidence", []))), int(q["category"]))
        for q in raw.get("qa", [])  # type: ignore[attr-defined]
    )
    return Conversation(sample_id, tuple(sessions), questions)


def load(path: Path) -> dict[str, Conversation]:
    """Every conversation under ``path`` (the zip, its folder, or one JSON file) by id."""
    found: dict[str, Conversation] = {}
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as archive:
            for name in archive.namelist():
                if name.endswith(".json"):
                    sample_id = Path(name).stem
                    found[sample_id] = _conversation(sample_id, json.loads(archive.read(name)))
    elif path.is_dir():
        for file in sorted(path.rglob("*.json")):
            found[file.stem] = _conversation(file.stem, json.loads(file.read_text("utf-8")))
    else:
        found[path.stem] = _conversation(path.stem, json.loads(path.read_text("utf-8")))
    if not found:
        raise SystemExit(f"{path}: no LoCoMo conversation found (pass data/locomo10.zip)")
    return dict(sorted(found.items()))
