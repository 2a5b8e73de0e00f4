"""Terminal and file plumbing for the ``ltm`` command: tables, JSON, a progress bar, files.

Nothing here touches a store; the commands do.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_ltm.cli.jsonl import ImportLine
    from langchain_ltm.facts import Fact, ImportResult, RememberResult


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


_UNSHOWN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""What a terminal would act on instead of showing: control characters (a lone carriage
return overwrites the row, ESC starts a sequence the terminal runs) and the bidirectional
overrides that reorder what is shown. Facts are other people's words: they are escaped."""


def _one_line(text: str) -> str:
    r"""``text`` as one row of a table: newlines as ``\n``, controls as ``\xNN``."""
    text = text.replace("\r\n", "\n").replace("\n", "\\n").replace("\t", " ")
    return _UNSHOWN.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


class Progress:
    """A plain progress bar on a terminal stream; silent when the stream is not a TTY.

    ``min_total``: draw only for that many items or more (a bar for three items is noise).
    """

    def __init__(
        self,
        total: int,
        stream: IO[str],
        label: str = "import",
        unit: str = "facts",
        *,
        min_total: int = 1,
    ) -> None:
        self.total = max(total, 1)
        self.stream = stream
        self.label = label
        self.unit = unit
        self.enabled = is_terminal(stream) and total >= min_total
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
            f"({100 * done // self.total}%) {rate:,.0f} {self.unit}/s   "
        )
        self.stream.flush()

    def advance(self, done: int) -> None:
        """Redraw the bar ``done`` items further."""
        self.update(self.done + done)

    def finish(self) -> None:
        """End the bar's line (nothing is written when disabled)."""
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()

    @contextlib.contextmanager
    def step(self) -> Iterator[Progress]:
        """Around one long call that reports nothing while it runs: 0 before, full after.

        The bar then says how much is being done, and at the end how fast it went.
        """
        self.update(0)
        try:
            yield self
            self.update(self.total)
        finally:
            self.finish()


class Output:
    """A command's stdout: a write that fails names stdout in the error, not the store.

    ``ltm list > /dev/full`` said "cannot use the store at ...: No space left on device";
    with stdout closed (``>&-``), ``ltm export`` died on ``None.write``.

    Example:
        >>> import io
        >>> out = Output(io.StringIO())
        >>> out.write("hello")
        5
        >>> Output(None).write("x")
        Traceback (most recent call last):
        OSError: [Errno 9] it is closed: 'stdout'
    """

    def __init__(self, stream: IO[str] | None) -> None:
        self._stream = stream
        self.written = False
        """Whether anything was written (a command that fails then leaves its output alone)."""

    def write(self, text: str) -> int:
        """Write ``text``; an ``OSError`` names stdout (a closed pipe is re-raised as is)."""
        with _naming("stdout"):
            count = self._open().write(text)
        self.written = self.written or bool(text)
        return count

    def flush(self) -> None:
        """Flush what was written (the write that fails may be this one)."""
        if self._stream is not None:
            with _naming("stdout"):
                self._stream.flush()

    def fileno(self) -> int:
        """The descriptor of stdout."""
        return self._open().fileno()

    def isatty(self) -> bool:
        """Whether stdout is a terminal."""
        return self._stream is not None and self._stream.isatty()

    def _open(self) -> IO[str]:
        if self._stream is None:
            raise OSError(errno.EBADF, "it is closed", "stdout")
        return self._stream


def is_terminal(stream: IO[str] | Output) -> bool:
    """Whether ``stream`` is a terminal (progress bars are drawn only there)."""
    return bool(getattr(stream, "isatty", lambda: False)())


def plural(count: int, word: str) -> str:
    """``1 fact``, ``2 facts``."""
    return f"{count:,} {word}{'s' * (count != 1)}"


# ---- import report -------------------------------------------------------------------------


@dataclass
class ImportRow:
    """What happened (or, in a dry run, would happen) to one text of one line."""

    line: int
    action: str  # restored, conflict, or a remember action
    id: str | None
    content: str
    previous: str | None = None
    similarity: float | None = None
    reason: str | None = None
    """Why: a rejected line's reason, a conflict's (``ImportResult.conflict_reasons``)."""
    similar: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    not_held: list[str] = dataclasses.field(default_factory=list)
    """A conflict's texts the user holds nowhere (in the file only; --merge folds them in)."""

    def to_dict(self) -> dict[str, Any]:
        """The row as a JSON-ready dict."""
        return dataclasses.asdict(self)


@dataclass
class ImportReport:
    """What an import did (or, in a dry run, would do), line by line, for people and JSON."""

    user: str
    read: int
    dry_run: bool
    rows: list[ImportRow] = dataclasses.field(default_factory=list)

    def restored(self, batch: list[ImportLine], done: ImportResult) -> None:
        """Record a restored batch: each conflict with why it was left alone.

        ``done``: what ``import_user`` did with the batch (its conflicts with their
        reasons and the texts the user holds nowhere, its expired ids).
        """
        why, not_held = dict(done.conflict_reasons), dict(done.conflict_texts)
        for line in batch:
            fact_id = str(line.record["id"])
            action = (
                "expired"
                if fact_id in done.expired
                else "conflict"
                if fact_id in why
                else "restored"
            )
            row = ImportRow(line.number, action, fact_id, line.record["content"])
            if action == "conflict":
                row.reason = why[fact_id]
                row.not_held = list(not_held.get(fact_id, ()))
            self.rows.append(row)

    def merged(
        self,
        batch: list[ImportLine],
        results: Sequence[RememberResult],
        sources: Sequence[tuple[int, str]],
    ) -> None:
        """Record a merged batch: one row per text decided (earlier versions first).

        ``sources`` (``ImportResult.sources``) names the line (its place in ``batch``) and
        the text of each result. A line with no result had expired (its ``expires_at`` had
        passed): it gets one ``expired`` row. An earlier text whose own expiry had passed
        was left out, and gets no row.
        """
        decided = {n for n, _ in sources}
        rows: list[tuple[int, ImportRow]] = []
        for n, line in enumerate(batch):
            if n not in decided:
                fact_id = line.record.get("id")
                row = ImportRow(
                    line.number,
                    "expired",
                    None if fact_id is None else str(fact_id),
                    line.record["content"],
                )
                rows.append((n, row))
        for (n, text), r in zip(sources, results, strict=True):
            fact_id = r.fact.id if r.fact else None
            close = [s.to_dict() for s in r.similar]
            row = ImportRow(
                batch[n].number,
                r.action,
                fact_id,
                text,
                r.previous,
                r.similarity,
                r.reason,
                close,
            )
            rows.append((n, row))
        self.rows.extend(row for _, row in sorted(rows, key=lambda pair: pair[0]))

    def counts(self) -> Counter[str]:
        """How many rows of each action."""
        return Counter(row.action for row in self.rows)

    def in_order(self) -> list[ImportRow]:
        """The rows by line number (a line's own rows as decided: earlier versions first).

        Rows are recorded as they are decided: rejected lines first, then the restored
        ones, then the merged ones; the report listed them in that order.
        """
        return sorted(self.rows, key=lambda row: row.line)

    def to_dict(self) -> dict[str, Any]:
        """The report for ``--json`` (every line only in a dry run)."""
        counts, in_order = self.counts(), self.in_order()
        data: dict[str, Any] = {"user_id": self.user, "read": self.read, "dry_run": self.dry_run}
        data.update(
            restored=counts["restored"],
            conflicts=counts["conflict"],
            expired=counts["expired"],
            **{a: counts[a] for a in ("created", "duplicate", "updated", "rejected")},
        )
        data["rejected_lines"] = [
            {"line": r.line, "reason": r.reason} for r in in_order if r.action == "rejected"
        ]
        # a conflict bringing texts the user holds nowhere names them (they are in the file only)
        data["conflict_lines"] = [
            {
                "line": r.line,
                "id": r.id,
                "reason": r.reason,
                **({"not_held": r.not_held} if r.not_held else {}),
            }
            for r in in_order
            if r.action == "conflict"
        ]
        if self.dry_run:
            data["lines"] = [row.to_dict() for row in in_order]
        return data

    def human(self) -> str:
        """The report for people: counts, then the lines that need a look."""
        counts, in_order = self.counts(), self.in_order()
        parts = []
        if counts["restored"] or counts["conflict"]:
            parts.append(f"{counts['restored']} restored, {counts['conflict']} conflicts")
        if counts["expired"]:
            parts.append(f"{counts['expired']} left out: expired (their expires_at had passed)")
        if any(counts[a] for a in ("created", "duplicate", "updated", "rejected")) or not parts:
            parts.append(
                f"{counts['created']} created, {counts['duplicate']} duplicate, "
                f"{counts['updated']} updated, {counts['rejected']} rejected"
            )
        if self.dry_run:
            head = (
                f"Dry run, nothing written: importing {plural(self.read, 'fact')} into user "
                f"{self.user!r} would give " + "; ".join(parts) + "."
            )
            rows = [
                [str(r.line), r.action, r.id or "-", r.content + _row_note(r)] for r in in_order
            ]
            return head + "\n\n" + table(["LINE", "WOULD BE", "ID", "FACT"], rows)
        text = f"Read {plural(self.read, 'fact')} for user {self.user!r}: " + "; ".join(parts) + "."
        rejected = [[str(r.line), str(r.reason)] for r in in_order if r.action == "rejected"]
        if rejected:
            text += "\n\n" + table(["LINE", "REJECTED BECAUSE"], rejected)
        conflicts = [
            [str(r.line), f"{r.id} ({_CONFLICT[str(r.reason)]})" + _not_held_note(r)]
            for r in in_order
            if r.action == "conflict"
        ]
        if conflicts:
            text += (
                "\n\n"
                + table(["LINE", "NOT RESTORED (WHY)"], conflicts)
                + "\n(import with --merge to fold them into the stored facts)"
            )
        return text


_CONFLICT = {
    "same_text": "the user has this text as another fact",
    "earlier_record": "an earlier line of the file has this text",
    "other_texts": "the user's fact with this id holds a text this line lacks",
    "newer": "the user's fact with this id was written after this line's updated_at",
}
"""Why an import left an exported line alone (``ImportResult.conflict_reasons``)."""


def _not_held_note(row: ImportRow) -> str:
    """A conflict's texts the user holds nowhere: they are only in the file."""
    if not row.not_held:
        return ""
    texts = "; ".join(repr(t if len(t) <= 60 else t[:57] + "...") for t in row.not_held)
    return f" (texts the user holds nowhere, only in this file: {texts})"


def _row_note(row: ImportRow) -> str:
    if row.action == "updated":
        return f"  (new version of: {row.previous}; similarity {row.similarity or 0:.2f})"
    if row.action == "rejected":
        return f"  ({row.reason})"
    if row.action == "conflict":
        return f"  ({_CONFLICT[str(row.reason)]})" + _not_held_note(row)
    if row.similar:
        close = "; ".join(f"{s['id']} {s['content']!r} {s['score']:.2f}" for s in row.similar)
        return f"  (kept apart from similar: {close})"
    return ""


_NOT_RESTORED = {
    "other_texts": "the target's fact with this id holds other texts",
    "same_text": "the target has its text as another fact",
    "missing": "not in the target",
}
"""Why a source fact is not in the target as it was (``ltm migrate``'s ``not_restored``)."""


def migrate_summary(report: dict[str, Any]) -> str:
    """The human form of ``ltm migrate``'s report: counts in the source and the target."""
    src, dst = report["source"], report["target"]
    rows = [
        [what, str(src[what]), str(dst[what])] for what in ("users", "facts", "versions", "items")
    ]
    rows[-1][0] = "other items"
    text = f"Migrated {report['from']} -> {report['to']}\n\n" + table(
        ["", "SOURCE", "TARGET"], rows
    )
    wrong = [
        [
            u["user_id"],
            f"{u['target_facts']}/{u['facts']}",
            f"{u['target_versions']}/{u['versions']}",
            "; ".join(f"{x['id']} ({_NOT_RESTORED[x['reason']]})" for x in u["not_restored"])
            or "-",
        ]
        for u in report["users"]
        if u["not_restored"]
    ]
    if wrong:
        text += "\n\n" + table(["USER", "FACTS", "VERSIONS", "NOT RESTORED (WHY)"], wrong)
    extra = report["extra_in_target"]
    if extra["facts"] or extra["items"]:
        text += (
            f"\n\nThe target also holds {plural(extra['facts'], 'fact')} and "
            f"{plural(extra['items'], 'other item')} that are not in the source (kept)."
        )
    newer = [i for u in report["users"] for i in u.get("newer_in_target", ())]
    if newer:
        text += (
            f"\n\nThe target's {plural(len(newer), 'fact')} with the same texts "
            f"({', '.join(newer)}) {'was' if len(newer) == 1 else 'were'} written there after "
            "the source's (said again, pinned, a TTL changed): kept as they are."
        )
    if report["verified"]:
        text += "\n\nVerified: the target has every fact, version and item of the source."
    return text


_DESCRIPTOR_PATH = re.compile(r"/(?:dev|proc/self)/fd/(\d+)")
_STANDARD_STREAMS = {"/dev/stdout": 1, "/dev/stderr": 2}


@contextlib.contextmanager
def _naming(path: Path | str) -> Iterator[None]:
    """An ``OSError`` without a file name (a full device) names ``path``.

    A closed pipe is re-raised as it is (``ltm export | head``: the reader has what it
    wanted).
    """
    try:
        yield
    except OSError as exc:
        if exc.filename is not None or isinstance(exc, BrokenPipeError):
            raise
        raise OSError(exc.errno, exc.strerror, str(path)) from exc


def descriptor_named(path: Path) -> int | None:
    """The open file descriptor ``path`` names (``/dev/stdout``, ``/dev/fd/N``), or None.

    Symbolic links are followed one step at a time: the last step, ``/proc/self/fd/1``,
    points at the file behind the descriptor, or at ``pipe:[...]``, a name that is no file.
    """
    name = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on links followed
        match = _DESCRIPTOR_PATH.fullmatch(name)
        if match is not None:
            return int(match.group(1))
        if name in _STANDARD_STREAMS:
            return _STANDARD_STREAMS[name]
        if not os.path.islink(name):
            return None
        name = os.path.join(os.path.dirname(name), os.readlink(name))
        name = os.path.abspath(name)
    return None


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so a reader never sees half a file.

    A symbolic link is followed (the file it points to is replaced, the link stays). A
    name of an open file descriptor (``-o /dev/stdout``, ``/dev/fd/3``) is written to
    through that descriptor, as the shell opened it (``>> log`` appends, a pipe is fed);
    a pipe or a device (a FIFO, ``/dev/null``) is written to as it is, never replaced by a
    file.

    Raises:
        OSError: Naming ``path`` (not the temporary file beside it) when its folder is
            missing or not writable, or ``path`` is a folder.
    """
    fd = descriptor_named(path)
    if fd is not None:
        if sys.stdout is not None:  # what was printed comes first
            sys.stdout.flush()
        with _naming(path), open(fd, "w", encoding="utf-8", newline="\n", closefd=False) as out:
            out.write(text)
        return
    if path.is_symlink():
        path = path.resolve()
    if path.exists() and not path.is_file() and not path.is_dir():
        with _naming(path), open(path, "w", encoding="utf-8", newline="\n") as out:
            out.write(text)
        return
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "it is a folder; give a file name", str(path))
    if not path.parent.is_dir():
        raise FileNotFoundError(
            errno.ENOENT, f"there is no folder {path.parent} to write it in", str(path)
        )
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:  # a folder this user may not write in: name the file asked for
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
