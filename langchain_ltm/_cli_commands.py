"""The ``ltm`` subcommands: each takes a :class:`Session` and returns an exit code.

Failures the user must act on raise :class:`Failure`; :mod:`langchain_ltm.cli` turns other
exceptions into exit codes and messages.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shlex
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from langchain_core.embeddings import Embeddings

from langchain_ltm._cli_io import (
    ImportLine,
    ImportReport,
    ImportRow,
    Progress,
    dumps,
    fact_rows,
    read_import_jsonl,
    table,
)
from langchain_ltm.defaults import _redact, data_dir, open_store
from langchain_ltm.facts import RememberResult, validate_text
from langchain_ltm.guard import find_secret
from langchain_ltm.store import LongTermMemoryStore

EXIT_OK = 0
"""The command did what was asked (including a recall that found nothing)."""
EXIT_NOT_FOUND = 1
"""The thing asked for is not there (``forget`` of an unknown fact id)."""
EXIT_USAGE = 2
"""Bad usage or bad input; also a fact the secret guard rejected (the others are stored)."""
EXIT_ENGINE = 3
"""The storage engine failed or cannot be reached; the same command may work later."""

STORE_ENV = "LTM_STORE"
BATCH_SIZE = 256


class Failure(Exception):
    """Stop the command with an exit code and a message for stderr."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@functools.lru_cache(maxsize=1)
def default_embeddings() -> Embeddings:
    """The offline embeddings, loaded once per process (``main`` may run many times)."""
    from langchain_ltm.embeddings import LocalMiniLMEmbeddings

    return LocalMiniLMEmbeddings()


class Session:
    """One command's streams, options and (lazily opened, always closed) store."""

    def __init__(self, args: argparse.Namespace, out: IO[str], err: IO[str]) -> None:
        self.args = args
        self.out = out
        self.err = err
        self.url: str | None = args.store or os.environ.get(STORE_ENV) or None
        # for error messages (before and after opening); ``where`` describes the open store
        self.target = (
            f"the store at {_redact(self.url)}"
            if self.url
            else f"the default store in {data_dir()}"
        )
        self.where = self.target
        self._store: LongTermMemoryStore | None = None

    @property
    def user(self) -> str:
        return str(self.args.user)

    @property
    def store(self) -> LongTermMemoryStore:
        if self._store is None:
            self._store, self.where = open_store(self.url, embeddings=default_embeddings())
        return self._store

    def close(self) -> None:
        if self._store is not None:
            store, self._store = self._store, None
            store.close()

    def emit(self, data: Any, human: str) -> None:
        """Print ``data`` as JSON with ``--json``, else the human text (if any)."""
        text = dumps(data) if self.args.json else human
        if text:
            print(text, file=self.out)


# ---- commands --------------------------------------------------------------------------


def _remember_batches(session: Session, texts: list[str]) -> list[RememberResult]:
    results: list[RememberResult] = []
    for start in range(0, len(texts), BATCH_SIZE):
        results += session.store.remember(session.user, texts[start : start + BATCH_SIZE])
    return results


def cmd_remember(session: Session) -> int:
    facts: list[tuple[str, str]] = []  # (where it came from, text)
    for n, arg in enumerate(session.args.facts, start=1):
        if arg == "-":
            lines = [line.strip() for line in sys.stdin.read().splitlines()]
            facts += [(f"stdin line {i}", t) for i, t in enumerate(lines, start=1) if t]
        else:
            facts.append((f"fact {n}" if len(session.args.facts) > 1 else "fact", arg))
    if not facts:
        raise Failure(EXIT_USAGE, "no facts to remember: stdin was empty.")
    texts = _checked(session, facts)
    results = _remember_batches(session, texts)
    rows, records = [], []
    for i, result in enumerate(results, start=1):
        fact = result.fact
        records.append(
            {
                "index": i,
                "action": result.action,
                "fact": fact.to_dict() if fact else None,
                "previous": result.previous,
                "similarity": result.similarity,
                "similar": [s.to_dict() for s in result.similar],
                "reason": result.reason,
            }
        )
        if fact is None:
            rows.append([result.action, "-", str(result.reason)])
        elif result.action == "updated":
            note = f"  (was: {result.previous}; similarity {result.similarity or 0:.2f})"
            rows.append([result.action, fact.id, fact.content + note])
        else:
            rows.append([result.action, fact.id, fact.content + _similar_note(result)])
    session.emit(records, table(["ACTION", "ID", "FACT"], rows))
    rejected = sum(r.action == "rejected" for r in results)
    if rejected == len(results) == 1:
        raise Failure(EXIT_USAGE, "the fact was rejected and not stored (reason in the output).")
    if rejected:
        stored = len(results) - rejected
        raise Failure(
            EXIT_USAGE,
            f"{rejected} of {len(results)} facts were rejected and not stored (reasons in the "
            f"output); {stored} {'was' if stored == 1 else 'were'} stored.",
        )
    return EXIT_OK


def _similar_note(result: RememberResult) -> str:
    """For a created fact kept next to close ones: which, so the user can merge them."""
    if not result.similar:
        return ""
    close = "; ".join(f"{s.id} {s.content!r} {s.score:.2f}" for s in result.similar)
    return f"  (kept apart from similar: {close})"


def _checked(session: Session, facts: list[tuple[str, str]]) -> list[str]:
    """The texts, each checked with its label (empty, NUL...) before and after the store opens.

    The store checks a batch as a whole; checking here names the argument or line at fault.
    """
    for label, text in facts:  # cheap checks first: no need to wait for the store
        validate_text(text, label, sys.maxsize)
    limit = session.store.max_fact_chars
    return [validate_text(text, label, limit) for label, text in facts]


def cmd_recall(session: Session) -> int:
    queries = [*(session.args.query or []), *session.args.queries]
    if not queries:
        raise Failure(EXIT_USAGE, 'recall needs a query: ltm recall --user U -q "what to find"')
    facts = session.store.recall(session.user, queries, limit=session.args.limit)
    headers, rows = fact_rows(facts, scored=True)
    human = table(headers, rows) if facts else f"No facts of user {session.user!r} match."
    session.emit([f.to_dict() for f in facts], human)
    return EXIT_OK


def cmd_list(session: Session) -> int:
    facts = session.store.list_all(session.user)
    headers, rows = fact_rows(facts, scored=False)
    human = table(headers, rows) if facts else f"No facts stored for user {session.user!r}."
    session.emit([f.to_dict() for f in facts], human)
    return EXIT_OK


def cmd_forget(session: Session) -> int:
    fact_id = session.args.fact_id
    forgotten = session.store.forget(session.user, fact_id)
    data = {"user_id": session.user, "id": fact_id, "forgotten": forgotten}
    session.emit(data, f"Forgot fact {fact_id} of user {session.user!r}." if forgotten else "")
    if not forgotten:
        raise Failure(
            EXIT_NOT_FOUND,
            f"user {session.user!r} has no fact with id {fact_id!r}; "
            f"see the ids with: ltm list --user {shlex.quote(session.user)}",
        )
    return EXIT_OK


def cmd_clear(session: Session) -> int:
    if not session.args.yes:
        raise Failure(
            EXIT_USAGE,
            f"clear deletes every memory of user {session.user!r} and cannot be undone; "
            "add --yes to confirm (ltm export first to keep a copy).",
        )
    deleted = session.store.clear_user(session.user)
    session.emit(
        {"user_id": session.user, "deleted": deleted},
        f"Deleted {deleted} item{'s' * (deleted != 1)} of user {session.user!r}.",
    )
    return EXIT_OK


def cmd_export(session: Session) -> int:
    records = session.store.export_user(session.user)
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    target = session.args.output
    if target is None or target == "-":
        session.out.write(lines)
        return EXIT_OK
    path = Path(target).expanduser()
    _write_atomically(path, lines)
    session.emit(
        {"user_id": session.user, "path": str(path), "exported": len(records)},
        f"Exported {len(records)} facts of user {session.user!r} to {path}.",
    )
    return EXIT_OK


def cmd_import(session: Session) -> int:
    args = session.args
    raw = _read_lines(args.file)
    read_import_jsonl(raw, args.file)  # the whole file is checked before the store opens
    store = session.store
    if args.threshold is not None:
        store = store.with_options(merge_threshold=args.threshold)
    lines = read_import_jsonl(raw, args.file, store.max_fact_chars)
    guard = _guard_of(store)
    report = ImportReport(session.user, len(lines), args.dry_run)
    restore, merge = [], []
    for line in lines:
        reason = guard(line.record["content"]) if guard else None
        if reason:  # not stored, like a secret given to remember; the other lines are
            report.rows.append(ImportRow(line.number, "rejected", None, "-", reason=reason))
        elif line.exported and not args.merge:
            restore.append(line)
        else:
            merge.append(line)
    progress = Progress(len(restore) + len(merge), session.err)
    progress.update(0)
    try:
        for batch in _chunks(restore, args.batch_size):
            done = store.import_user(
                session.user, [x.record for x in batch], "restore", dry_run=args.dry_run
            )
            report.restored(batch, done.conflicts)
            progress.advance(len(batch))
        # a dry run decides every merged line in one call, so lines see the ones before them
        size = len(merge) if args.dry_run else args.batch_size
        for batch in _chunks(merge, size):
            done = store.import_user(
                session.user, [x.record for x in batch], "merge", dry_run=args.dry_run
            )
            report.merged(batch, done.results)
            progress.advance(len(batch))
    except BaseException:
        progress.finish()
        if progress.done and not args.dry_run:
            print(
                f"ltm: {progress.done} of {progress.total} facts were stored before the "
                "failure; importing the file again is safe (restored facts are written as "
                "they were, merged ones come back duplicate).",
                file=session.err,
            )
        raise
    progress.finish()
    session.emit(report.to_dict(), report.human())
    return EXIT_OK


def _read_lines(name: str) -> list[bytes]:
    try:
        if name == "-":
            return sys.stdin.buffer.read().splitlines()
        with open(Path(name).expanduser(), "rb") as handle:
            return handle.read().splitlines()
    except OSError as exc:
        raise Failure(EXIT_USAGE, f"cannot read {name}: {exc.strerror or exc}.") from exc


def _guard_of(store: LongTermMemoryStore) -> Callable[[str], str | None] | None:
    guard = store.secret_guard
    if callable(guard):
        return guard
    return find_secret if guard else None


def _chunks(items: list[ImportLine], size: int) -> Iterator[list[ImportLine]]:
    for start in range(0, len(items), max(size, 1)):
        yield items[start : start + size]


def cmd_stats(session: Session) -> int:
    store = session.store
    if session.args.user is not None:
        facts = store.list_all(session.user)
        data: dict[str, Any] = {
            "store": session.where,
            "user_id": session.user,
            "facts": len(facts),
            "first_created": min((f.created_at for f in facts), default=None),
            "last_updated": max((f.updated_at for f in facts), default=None),
        }
        data = {k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in data.items()}
        pairs = [[k, "-" if v is None else str(v)] for k, v in data.items()]
        session.emit(data, table([], pairs))
        return EXIT_OK
    counts = sorted(
        ((store.backend.count(ns), user) for user, ns in _users(store)),
        key=lambda c: (-c[0], c[1]),
    )
    total = sum(n for n, _ in counts)
    data = {
        "store": session.where,
        "users": len(counts),
        "facts": total,
        "per_user": [{"user_id": user, "facts": n} for n, user in counts],
    }
    human = table(
        [], [["store", session.where], ["users", str(len(counts))], ["facts", str(total)]]
    )
    if counts:
        shown = counts[:20]
        human += "\n\n" + table(["USER", "FACTS"], [[user, str(n)] for n, user in shown])
        if len(counts) > len(shown):
            human += f"\n... and {len(counts) - len(shown)} more users (--json lists all)"
    session.emit(data, human)
    return EXIT_OK


def _users(store: LongTermMemoryStore) -> list[tuple[str, tuple[str, ...]]]:
    """Every user with something stored, with the namespace holding it."""
    found: list[tuple[str, tuple[str, ...]]] = []
    depth, page, offset = len(store.namespace) + 1, 1000, 0
    while True:
        namespaces = store.list_namespaces(
            prefix=store.namespace, max_depth=depth, limit=page, offset=offset
        )
        for ns in namespaces:
            user = store.user_id_of(ns)
            if user is not None:
                found.append((user, ns))
        if len(namespaces) < page:
            return found
        offset += page


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so a reader never sees half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
