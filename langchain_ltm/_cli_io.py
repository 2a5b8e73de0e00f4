"""Terminal and file plumbing for the ``ltm`` command: tables, a progress bar, JSONL input.

Nothing here touches a store; :mod:`langchain_ltm.cli` does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any

from langchain_ltm.facts import Fact


class InputError(ValueError):
    """Bad input the user must fix (exit code 2); the message says where and what."""


# ---- human output ------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Left-aligned columns separated by two spaces; the last column is never padded."""
    cells = [[_one_line(c) for c in row] for row in rows]
    widths = [len(h) for h in headers] or [0] * max((len(row) for row in cells), default=0)
    for row in cells:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = [headers, *cells] if headers else cells
    return "\n".join(
        "  ".join(
            cell if i == len(row) - 1 else cell.ljust(widths[i]) for i, cell in enumerate(row)
        ).rstrip()
        for row in lines
    )


def when(fact_time: Any) -> str:
    """A timestamp to the minute, in the zone it was stored with (UTC)."""
    return str(fact_time.strftime("%Y-%m-%d %H:%M"))


def fact_rows(facts: Sequence[Fact], scored: bool) -> tuple[list[str], list[list[str]]]:
    """Headers and rows for a list of facts (``scored``: recall results, best first)."""
    headers = ["SCORE"] if scored else []
    headers += ["ID", "CREATED", "UPDATED", "FACT"]
    rows = []
    for fact in facts:
        score = getattr(fact, "score", None)
        row = [f"{score:.3f}" if score is not None else "-"] if scored else []
        row += [fact.id, when(fact.created_at), when(fact.updated_at), fact.content]
        rows.append(row)
    return headers, rows


def dumps(data: Any) -> str:
    """Indented JSON for ``--json`` output (non-ASCII kept as is)."""
    return json.dumps(data, ensure_ascii=False, indent=2)


def _one_line(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\\n").replace("\t", " ")


class Progress:
    """A plain progress bar on a terminal stream; silent when the stream is not a TTY."""

    def __init__(self, total: int, stream: IO[str], label: str = "import") -> None:
        self.total = max(total, 1)
        self.stream = stream
        self.label = label
        self.enabled = bool(getattr(stream, "isatty", lambda: False)())
        self.started = time.perf_counter()
        self.done = 0

    def update(self, done: int) -> None:
        """Redraw the bar for ``done`` items out of ``total``."""
        self.done = done
        if not self.enabled:
            return
        width = 30
        filled = int(width * done / self.total)
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        rate = done / elapsed
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(
            f"\r{self.label} [{bar}] {done:,}/{self.total:,} "
            f"({100 * done // self.total}%) {rate:,.0f} facts/s   "
        )
        self.stream.flush()

    def finish(self) -> None:
        """End the bar's line (nothing is written when disabled)."""
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


# ---- JSONL input -------------------------------------------------------------------------

_LINE_HINT = (
    'each line must be one JSON object with a "content" string, as written by `ltm export` '
    '(or {"fact": "..."})'
)


def read_facts_jsonl(lines: Iterable[bytes], name: str) -> Iterator[tuple[int, str]]:
    """``(line number, fact text)`` for each non-blank line of a JSONL file.

    Accepts the objects ``ltm export`` writes (their ``content``; other keys are ignored) and
    ``{"fact": ...}`` objects. Raises :class:`InputError` naming the line of the first bad one.
    """
    for number, raw in enumerate(lines, start=1):
        where = f"{name}, line {number}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{where}: not UTF-8 text (byte {exc.start + 1}); save the file as UTF-8."
            ) from exc
        line = line.lstrip("\ufeff").strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{where}: not valid JSON ({exc.msg} at column {exc.colno}); {_LINE_HINT}."
            ) from exc
        text = None
        if isinstance(obj, dict):
            text = obj["content"] if "content" in obj else obj.get("fact")
        if not isinstance(text, str):
            shown = line if len(line) <= 60 else line[:57] + "..."
            raise InputError(f"{where}: {_LINE_HINT}; got {shown}")
        yield number, text
