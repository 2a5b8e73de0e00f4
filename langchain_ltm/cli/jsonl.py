"""JSON Lines input of ``ltm import``: every line checked before anything is written."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from langchain_ltm.facts import validate_text
from langchain_ltm.facts.import_records import RefusedText, check_record

__all__ = ["ImportLine", "InputError", "read_import_jsonl"]


class InputError(ValueError):
    """Bad input the user must fix (exit code 2); the message says where and what."""


_LINE_HINT = (
    'each line must be one JSON object with a "content" string, as written by `ltm export` '
    '(or {"fact": "..."}, or a JSON string)'
)


@dataclass(frozen=True)
class ImportLine:
    """One line of an import file, checked.

    ``record`` is the line as ``import_user`` takes it (``{"fact": ...}`` and a JSON string
    become ``{"content": ...}``): with an ``id`` an exported fact, restored as it was;
    without one, texts decided by ``remember``.
    """

    number: int
    record: dict[str, Any]
    refused: str | None = None
    """Why the store does not take a text of this exported line (it is not imported)."""

    @property
    def exported(self) -> bool:
        """Whether the line is a fact written by ``ltm export`` (it has an id)."""
        return self.record.get("id") is not None


def read_import_jsonl(
    lines: Iterable[bytes], name: str, max_chars: int = sys.maxsize
) -> list[ImportLine]:
    """Every non-blank line of a JSONL import file, each checked the way ``import_user`` will.

    Accepts what ``ltm export`` writes (every field; also the 0.1 form whose ``history`` is a
    list of texts), ``{"content": ...}`` and ``{"fact": ...}`` objects, and JSON strings.
    Raises :class:`InputError` (or ``InvalidFactError``) naming the first bad line, so a file
    is refused before anything of it is written.
    """
    out: list[ImportLine] = []
    ids: dict[str, int] = {}
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
        except RecursionError as exc:  # Python's parser gives up near 1,000 levels
            raise InputError(
                f"{where}: its JSON nests too deeply to read (arrays or objects inside each "
                f"other about a thousand times); {_LINE_HINT}."
            ) from exc
        except ValueError as exc:  # Python reads no integer of more than 4,300 digits
            raise InputError(
                f"{where}: it holds a number of more than 4,300 digits, which is not read; "
                "write such a value as a string"
            ) from exc
        record, refused = _import_record(obj, line, where, max_chars)
        # two lines with one text are a conflict of the second (an export holds them when a
        # client put a text twice); two with one id would keep only one of their texts
        if record.get("id") is not None:
            if record["id"] in ids:
                raise InputError(
                    f"{where}: the same id as line {ids[record['id']]}; a user has one current "
                    "fact per id: remove one of them, or import with --merge."
                )
            ids[record["id"]] = number
        out.append(ImportLine(number, record, refused))
    return out


def _import_record(
    obj: Any, line: str, where: str, max_chars: int
) -> tuple[dict[str, Any], str | None]:
    """The record ``import_user`` is given for one line, checked by its own parser.

    With why the store does not take a text of an exported line (with an ``id``: another
    client's item, a text longer than ``max_chars``), which ``ltm import`` then lists as
    rejected while importing the others (:class:`RefusedText`).

    Every field passes on as the line has it (a null is a missing field), so the command
    and the API read a line the same way: each earlier version keeps its own times,
    metadata, ``expires_at`` and ``ttl_minutes``, and a line without an ``id`` keeps its
    ``history`` (a merge re-decides every text of it).
    """
    text = obj
    if isinstance(obj, dict):
        text = obj["content"] if "content" in obj else obj.get("fact")
    if not isinstance(text, str):
        shown = line if len(line) <= 60 else line[:57] + "..."
        raise InputError(f"{where}: {_LINE_HINT}; got {shown}")
    fields = obj if isinstance(obj, dict) else {}
    record = {k: v for k, v in fields.items() if v is not None and k != "fact"}
    if record.get("id") is None:
        text = validate_text(text, f"{where}: fact", max_chars)
    record["content"] = text
    try:
        check_record(record, where, max_chars)
    except RefusedText as exc:
        return record, str(exc)
    return record, None
