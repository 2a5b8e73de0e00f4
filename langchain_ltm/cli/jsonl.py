"""JSON Lines input of ``ltm import``: every line checked before anything is written."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from langchain_ltm.facts import content_hash, validate_text

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

    ``record`` is an exported fact (it has an ``id``: restored as it was) or
    ``{"content": text}`` (a new fact, decided by ``remember``).
    """

    number: int
    record: dict[str, Any]

    @property
    def exported(self) -> bool:
        """Whether the line is a fact written by ``ltm export`` (it has an id)."""
        return "id" in self.record

    @property
    def texts(self) -> int:
        """How many texts a merge re-decides for this line (earlier versions, then current)."""
        return len(self.record.get("history") or ()) + 1


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
    texts: dict[str, int] = {}
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
        record = _import_record(obj, line, where, max_chars)
        if "id" in record:
            for seen, key, what in (
                (ids, record["id"], "id"),
                (texts, content_hash(record["content"]), "text"),
            ):
                if key in seen:
                    raise InputError(
                        f"{where}: the same {what} as line {seen[key]}; a user has one current "
                        "fact per id and per text: remove one of them, or import with --merge."
                    )
                seen[key] = number
        out.append(ImportLine(number, record))
    return out


def _import_record(obj: Any, line: str, where: str, max_chars: int) -> dict[str, Any]:
    text = obj
    if isinstance(obj, dict):
        text = obj["content"] if "content" in obj else obj.get("fact")
    if not isinstance(text, str):
        shown = line if len(line) <= 60 else line[:57] + "..."
        raise InputError(f"{where}: {_LINE_HINT}; got {shown}")
    content = validate_text(text, f"{where}: fact", max_chars)
    if not isinstance(obj, dict) or "id" not in obj:
        plain: dict[str, Any] = {"content": content}
        if isinstance(obj, dict):
            # expires_at: left out once past; valid_from / created_at: when it was said (as
            # the API's merge reads them); metadata and pinned: kept
            for field in ("expires_at", "valid_from", "created_at"):
                if obj.get(field) is not None:
                    plain[field] = obj[field]
                    _check_time(plain, field, where)
            if obj.get("metadata") is not None:
                plain["metadata"] = _metadata(obj["metadata"], where)
            if obj.get("pinned") is not None:  # checked by the store (true or false)
                plain["pinned"] = obj["pinned"]
        return plain
    fact_id = obj["id"]
    if not isinstance(fact_id, str) or not fact_id.strip() or "@" in fact_id:
        raise InputError(f"{where}: id must be a non-empty string without '@', got {fact_id!r}.")
    record = {k: v for k, v in obj.items() if v is not None}  # fields we do not know pass on
    for field in ("created_at", "updated_at", "valid_from", "expires_at"):
        _check_time(record, field, where)
    history = obj.get("history") or []
    if not isinstance(history, list):
        raise InputError(f"{where}: history must be a list, got {history!r}.")
    if any(isinstance(v, str) for v in history):  # 0.1 export: earlier texts, no dates
        record.setdefault("valid_from", record.get("updated_at"))
        history = [
            {
                "content": v,
                "valid_from": record.get("created_at"),
                "valid_to": record.get("updated_at"),
            }
            if isinstance(v, str)
            else v
            for v in history
        ]
    for n, version in enumerate(history, start=1):
        what = f"{where}: history[{n}]"
        if not isinstance(version, dict):
            raise InputError(f"{what} must be an object with a content, got {version!r}.")
        validate_text(version.get("content"), f"{what} content", max_chars)
        for field in ("valid_from", "valid_to"):
            _check_time(version, field, what)
    record["history"] = [
        {
            **{k: v.get(k) for k in ("content", "valid_from", "valid_to")},
            "metadata": _metadata(v.get("metadata") or {}, f"{where}: history[{n}]"),
        }
        for n, v in enumerate(history, start=1)
    ]
    record["metadata"] = _metadata(obj.get("metadata") or {}, where)
    record["content"] = content
    return record


def _metadata(metadata: Any, where: str) -> dict[str, Any]:
    if not isinstance(metadata, dict):
        raise InputError(f"{where}: metadata must be an object, got {metadata!r}.")
    return metadata


def _check_time(record: dict[str, Any], field: str, where: str) -> None:
    value = record.get(field)
    if value is None:
        return
    try:
        if not isinstance(value, str):
            raise TypeError(f"got {value!r}")
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        if parsed.tzinfo is not None:
            parsed.astimezone(timezone.utc)  # year 1 at +01:00 is year 0 in UTC
    except (TypeError, ValueError, OverflowError) as exc:
        raise InputError(
            f"{where}: {field} must be an ISO 8601 time like 2026-01-31T12:00:00+00:00 ({exc})."
        ) from exc
