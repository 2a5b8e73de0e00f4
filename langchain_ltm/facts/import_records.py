"""Reading an import's records: each exported fact (or plain text) parsed and checked.

What :func:`~langchain_ltm.facts.imports.import_user` reads of a record, written once for
the API and for ``ltm import`` (:func:`check_record`, :func:`record_secret`,
:func:`check_records`), so both take and refuse the same records: a malformed one raises
``InvalidFactError`` naming the record and the field. A restore also refuses secrets and
times in the future (beyond :data:`CLOCK_SKEW`): a current text valid from next year would
stay current over every later write. A merge counts them as now.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, NamedTuple

from langchain_ltm import _clock
from langchain_ltm._ids import fact_key
from langchain_ltm._labels import encode_label
from langchain_ltm._utf8 import encodes_as_utf8
from langchain_ltm.errors import InvalidFactError
from langchain_ltm.facts import versions as layout
from langchain_ltm.facts.context import FactContext
from langchain_ltm.facts.model import Fact, FactVersion
from langchain_ltm.facts.provenance import check_metadata, secret_in
from langchain_ltm.facts.text import content_hash, validate_text
from langchain_ltm.guard import SecretGuard

__all__ = [
    "CLOCK_SKEW",
    "ImportMode",
    "RefusedText",
    "as_record_list",
    "check_record",
    "check_records",
    "parse_record",
    "record_secret",
]

ImportMode = Literal["restore", "merge"]
"""``import_user``'s mode: put records back as exported, or merge them into current facts."""

CLOCK_SKEW = timedelta(minutes=5)
"""How far in the future a restored time may lie (another machine's clock running ahead)."""


class RefusedText(InvalidFactError):
    """An exported record, well formed, holding a text this store does not take.

    Longer than its ``max_fact_chars``, a NUL, a lone surrogate, no content: what another
    client (LangMem's ``{"content": ...}``) or a store with a higher limit wrote. The
    import refuses that record alone and reports it (``ImportResult.refused``); the
    message names the record and the text.
    """


def check_records(
    ctx: FactContext,
    user_id: str,
    records: Sequence[Mapping[str, Any] | str],
    mode: ImportMode,
    names: Sequence[str],
) -> None:
    """Check ``records`` as ``import_user`` would, writing and reading nothing.

    For a caller that imports in batches (``ltm import``): every record is checked before
    the first batch is written, and an error names the record as ``names`` do ("FILE,
    line 300"), not by its place in a batch.

    Raises:
        InvalidFactError: The first malformed record, named.
    """
    if mode not in ("restore", "merge"):
        raise ValueError(f'mode must be "restore" or "merge", got {mode!r}.')
    records = as_record_list(records)
    for name, record in zip(names, records, strict=True):
        parse_record(ctx, record, name, user_id, mode == "restore")


def as_record_list(records: Any) -> list[Any]:
    """``records`` as a list: any iterable of records, but not one record or one text.

    A generator reading a file is taken. A single exported record (a dict) was read as
    its field names, and a text as its letters: each became a fact.
    """
    if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Iterable):
        raise InvalidFactError(
            "records must be a list of exported facts (dicts, as export_user returns) or of "
            f"texts, got {type(records).__name__}; wrap a single record in a list."
        )
    return list(records)


def check_record(record: Any, where: str, max_chars: int) -> None:
    """Check one record as ``import_user`` reads it, before any store is opened.

    For ``ltm import``, which checks a whole file first: every field a restore and a merge
    both read (the id, times, ``ttl_minutes``, each earlier version with its own times,
    expiry and metadata), the way ``import_user`` does, so the file and the API take
    and refuse the same records. What only a restore refuses (secrets, times in the
    future) is checked by :func:`check_records` once the store is open.

    Raises:
        InvalidFactError: Naming ``where`` and the field.
    """
    _read(record, where, None, False, max_chars)


def record_secret(
    record: Any, where: str, max_chars: int, guard: SecretGuard, now: datetime | None = None
) -> str | None:
    """Why ``guard`` refuses what importing ``record`` would store (``None``: nothing).

    For ``ltm import``, which lists such a line as rejected and imports the others. Only
    what would be stored is read, as a restore reads it: the text and its metadata, and
    each earlier version whose ``expires_at`` has not passed (``history[n]: ...``, ``n``
    its place in the record); nothing of a record whose own ``expires_at`` has passed.

    Raises:
        InvalidFactError: The record is malformed (as :func:`check_record`).
    """
    return _secret(_read(record, where, None, False, max_chars), guard, now)


class _Read(NamedTuple):
    fact: Fact
    has_id: bool
    dated: bool
    places: tuple[int, ...]
    """The place in the record's ``history`` of each of ``fact.history`` (the live ones)."""


def _secret(read: _Read, guard: SecretGuard, now: datetime | None = None) -> str | None:
    """Why ``guard`` refuses what a record stores (see :func:`record_secret`)."""
    fact = read.fact
    if fact.expires_at is not None and fact.expires_at <= (now or _clock.utcnow()):
        return None  # left out whole: nothing of it is stored
    reason = secret_in(guard, fact.content, fact.metadata)
    if reason:
        return reason
    for place, version in zip(read.places, fact.history, strict=True):
        reason = secret_in(guard, version.content, version.metadata)
        if reason:
            return f"history[{place}]: {reason}"
    return None


def parse_record(
    ctx: FactContext,
    record: Any,
    where: str,
    user_id: str,
    restore: bool,
    as_stored: bool = False,
) -> tuple[Fact, bool, bool]:
    """One exported fact, checked; whether it has an id; whether it says when it was said.

    Raises InvalidFactError naming the record and the field. Secrets and times later than
    now (plus :data:`CLOCK_SKEW`) fail a restore; a merge rejects secrets per text and
    counts future times as now. ``as_stored`` (a restore copying another store's facts,
    ``ltm migrate``): no length limit, secret check or future-time check, which are this
    store's policy for new input; the record's shape is checked all the same.
    """
    if as_stored:
        return _parse(record, where, user_id, False, sys.maxsize, None)
    return _parse(record, where, user_id, restore, ctx.max_fact_chars, ctx.guard)


def _parse(
    record: Any,
    where: str,
    user_id: str | None,
    restore: bool,
    max_chars: int,
    guard: SecretGuard | None,
) -> tuple[Fact, bool, bool]:
    """:func:`parse_record` without a store (``user_id`` None: the fact id stays empty)."""
    read = _read(record, where, user_id, restore, max_chars)
    # a restore stores the texts as they are: it refuses a secret in what it would store
    if restore and guard is not None and (reason := _secret(read, guard)):
        raise InvalidFactError(f"{where}: {reason}")
    return read.fact, read.has_id, read.dated


def _read(record: Any, where: str, user_id: str | None, restore: bool, max_chars: int) -> _Read:
    """One record, checked (no secret check; a restore checks times too)."""
    if isinstance(record, str):
        record = {"content": record}
    if not isinstance(record, Mapping):
        raise InvalidFactError(f"{where} must be an object with a 'content', got {record!r}.")
    fact_id = record.get("id")
    # an exported record (with an id) whose text this store does not take is refused alone
    # once the rest of it reads well; a text without an id is new input, checked as remember's
    refused: dict[int, str] = {} if fact_id is not None else _RAISE
    content = _text(record.get("content"), f"{where}: content", max_chars, refused, -1)
    if fact_id is not None:
        _check_id(fact_id, where)
    now = _clock.utcnow()
    try:
        earlier = record.get("history") or ()
        if not isinstance(earlier, (list, tuple)):  # an object or a text was read key by key
            raise InvalidFactError(
                f"{where}: history must be a list of earlier versions, got {earlier!r}."
            )
        created = _time(record, "created_at", now, where)
        updated = _time(record, "updated_at", created, where)
        # a 0.1 export (earlier texts as strings, no valid_from): its earlier texts held
        # until updated_at, so the current text holds from then, not from created_at
        old = any(isinstance(v, str) for v in earlier)
        since = _time(record, "valid_from", updated if old else created, where)
        expires = _time(record, "expires_at", now, where) if record.get("expires_at") else None
        if expires is not None and record.get("updated_at") and expires <= updated:
            raise InvalidFactError(
                f"{where}: expires_at {expires.isoformat()} is not after updated_at "
                f"{updated.isoformat()}."
            )
        ttl = _ttl_minutes(record.get("ttl_minutes"), expires, where)
        every = [
            _version(v, f"{where}: history[{n}]", created, updated, since, max_chars, refused, n)
            for n, v in enumerate(earlier)
        ]
        places = tuple(n for n, v in enumerate(every) if not _expired(v, now))
        history = tuple(every[n] for n in places)
        if restore:
            _not_future(where, now, created_at=created, updated_at=updated, valid_from=since)
            for n, v in zip(places, history, strict=True):
                _not_future(
                    f"{where}: history[{n}]", now, valid_from=v.valid_from, valid_to=v.valid_to
                )
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:
        if isinstance(exc, InvalidFactError):
            raise
        raise InvalidFactError(f"{where}: {exc}") from exc
    metadata = _metadata(record.get("metadata"), where)
    pinned = False if record.get("pinned") is None else record["pinned"]
    if not isinstance(pinned, bool):  # "true" or 1 was read as not pinned
        raise InvalidFactError(f"{where}: pinned must be true or false, got {pinned!r}.")
    # what is stored: the text and its earlier texts still alive (an expired record is
    # left out whole, and reported as expired)
    why = [refused[n] for n in (-1, *places) if n in refused]
    if why and not (expires is not None and expires <= now):
        raise RefusedText(why[0])
    if fact_id is None and user_id is not None:
        fact_id = fact_key(encode_label(user_id), content_hash(content))
    fact = Fact(
        id=fact_id or "",
        user_id=user_id or "",
        content=content,
        created_at=created,
        updated_at=updated,
        history=history,
        valid_from=since,
        metadata=metadata,
        pinned=pinned,
        expires_at=expires,
        ttl_minutes=ttl,
    )
    dated = record.get("valid_from") is not None or record.get("created_at") is not None
    return _Read(fact, record.get("id") is not None, dated, places)


def _check_id(fact_id: Any, where: str) -> None:
    """Raise InvalidFactError unless ``fact_id`` is an id every engine stores as a key.

    A NUL or a lone surrogate passed every check and then failed the write on Postgres,
    part way through a file; they are refused here, on every engine, naming the record.
    """
    if not isinstance(fact_id, str) or not fact_id.strip():
        raise InvalidFactError(f"{where}: id must be a non-empty string, got {fact_id!r}.")
    if "@" in fact_id:
        raise InvalidFactError(f"{where}: id {fact_id!r} may not contain '@'.")
    if "\x00" in fact_id:
        raise InvalidFactError(f"{where}: id {fact_id!r} contains a NUL character; remove it.")
    if not encodes_as_utf8(fact_id):
        raise InvalidFactError(
            f"{where}: id {fact_id!r} is not valid Unicode (it has a lone surrogate)."
        )


def _ttl_minutes(raw: Any, expires: datetime | None, where: str) -> float | None:
    """The record's ``ttl_minutes``: a positive number, or ``None``.

    Within the limit ``put`` and ``remember`` set (:func:`_clock.check_ttl`): a restored
    ``1e12`` made every refreshing read of the user overflow. Older exports have none: a
    restore then counts the TTL from ``updated_at``. Without ``expires_at`` (a line edited
    to last) the fact has no TTL, whatever it says.
    """
    try:
        ttl = _clock.check_ttl(raw, "ttl_minutes")
    except ValueError:
        raise InvalidFactError(
            f"{where}: ttl_minutes must be a positive number of minutes below "
            f"{_clock.MAX_TTL_MINUTES:,.0f} (about 1,900 years), got {raw!r}."
        ) from None
    return None if expires is None else ttl


def _not_future(where: str, now: datetime, **times: datetime | None) -> None:
    """Raise InvalidFactError naming the first time later than ``now`` + :data:`CLOCK_SKEW`."""
    for name, moment in times.items():
        if moment is not None and moment > now + CLOCK_SKEW:
            raise InvalidFactError(
                f"{where}: {name} {moment.isoformat()} is in the future (now is "
                f"{now.isoformat()}); a restored text would stay current over every later "
                "write. Correct the time, or import it as a merge, where future times count "
                'as now (mode="merge"; on the command line, ltm import --merge).'
            )


def _metadata(raw: Any, where: str) -> dict[str, Any]:
    """A record's (or a version's) metadata, checked like ``remember``'s."""
    if raw is not None and not isinstance(raw, Mapping):
        raise InvalidFactError(f"{where}: metadata must be an object, got {raw!r}.")
    try:
        return check_metadata(raw)
    except InvalidFactError as exc:
        raise InvalidFactError(f"{where}: {exc}") from exc


def _version(
    raw: Any,
    where: str,
    created: datetime,
    updated: datetime,
    since: datetime,
    max_chars: int,
    refused: dict[int, str],
    place: int,
) -> FactVersion:
    """One exported version; a plain string is a 0.1 export's history entry (no dates).

    ``where`` names the entry (``record 3: history[0]``). Its times must be ISO 8601
    strings (missing: the record's), and it may not end before it begins.
    """
    if isinstance(raw, str):
        return FactVersion(
            _text(raw, f"{where}: content", max_chars, refused, place), created, updated
        )
    if not isinstance(raw, Mapping):
        raise InvalidFactError(f"{where}: a history entry must be an object, got {raw!r}.")
    valid_from = _time(raw, "valid_from", created, where)
    valid_to = _time(raw, "valid_to", since, where)
    if valid_to < valid_from:
        raise InvalidFactError(
            f"{where}: valid_to {valid_to.isoformat()} is before valid_from "
            f"{valid_from.isoformat()}; a version ends after it begins."
        )
    expires = _time(raw, "expires_at", valid_to, where) if raw.get("expires_at") else None
    return FactVersion(
        _text(raw.get("content"), f"{where}: content", max_chars, refused, place),
        valid_from,
        valid_to,
        _metadata(raw.get("metadata"), where),
        expires,
        _ttl_minutes(raw.get("ttl_minutes"), expires, where),
    )


_RAISE: dict[int, str] = {}
"""``refused`` of a record without an id: its text is checked as ``remember`` checks it."""


def _text(raw: Any, where: str, max_chars: int, refused: dict[int, str], place: int) -> str:
    """A record's text (``place``: -1 its current one, else its place in ``history``).

    Not a string: a malformed record (raises). A string the store does not take (see
    :class:`RefusedText`): noted in ``refused`` under ``place``, unless ``refused`` is
    :data:`_RAISE`, and returned as it is.
    """
    if refused is _RAISE or not isinstance(raw, str):
        return validate_text(raw, where, max_chars)
    try:
        return validate_text(raw, where, max_chars)
    except InvalidFactError as exc:
        refused.setdefault(place, str(exc))
        return raw


def _time(record: Mapping[str, Any], name: str, default: datetime, where: str) -> datetime:
    """The record's time ``name`` (``default`` when missing); InvalidFactError naming it."""
    text = record.get(name)
    if text is None:
        return default
    if not isinstance(text, str):
        raise InvalidFactError(
            f"{where}: {name} must be an ISO 8601 string like 2026-01-31T12:00:00+00:00, "
            f"got {text!r}."
        )
    try:
        moment = layout.parse_time(text, default)
    except ValueError as exc:
        raise InvalidFactError(
            f"{where}: {name} must be an ISO 8601 time like 2026-01-31T12:00:00+00:00, "
            f"got {text!r}."
        ) from exc
    try:
        moment.astimezone(timezone.utc)  # year 1 at +01:00 is year 0 in UTC
    except OverflowError:
        raise InvalidFactError(f"{where}: {name} {text!r} is out of range in UTC.") from None
    return moment


def _expired(version: FactVersion, now: datetime) -> bool:
    """An earlier text whose own expiry has passed: gone, so never restored or merged."""
    return version.expires_at is not None and version.expires_at <= now
