"""The ``ltm`` subcommands: each takes a :class:`Session` and returns an exit code.

Failures the user must act on raise :class:`Failure`; :mod:`langchain_ltm.cli` turns other
exceptions into exit codes and messages.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import json
import os
import shlex
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp, SearchItem

from langchain_ltm._cli_io import (
    ImportLine,
    ImportReport,
    ImportRow,
    Progress,
    dumps,
    fact_rows,
    migrate_summary,
    plural,
    read_import_jsonl,
    table,
)
from langchain_ltm.agents.erase import export_user_data, forget_user
from langchain_ltm.defaults import _redact, data_dir, open_store
from langchain_ltm.errors import MissingDependencyError
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
        self._opened: list[LongTermMemoryStore] = []

    @property
    def user(self) -> str:
        return str(self.args.user)

    @property
    def store(self) -> LongTermMemoryStore:
        if self._store is None:
            self._store, self.where = open_store(self.url, embeddings=default_embeddings())
        return self._store

    def open(self, url: str, role: str) -> tuple[LongTermMemoryStore, str]:
        """Open one more store (``migrate``'s source and target); closed with the session."""
        self.target = f"the {role} store at {_redact(url)}"
        store, where = open_store(url, embeddings=default_embeddings())
        self._opened.append(store)
        return store, where

    def close(self) -> None:
        stores, self._opened = self._opened, []
        if self._store is not None:
            stores.append(self._store)
            self._store = None
        failure: Exception | None = None
        for store in stores:  # close each, even when one of them fails
            try:
                store.close()
            except Exception as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

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
        f"Exported {plural(len(records), 'fact')} of user {session.user!r} to {path}.",
    )
    return EXIT_OK


def cmd_forget_user(session: Session) -> int:
    args = session.args
    if not args.yes:
        what = "and the checkpoints of their threads" if args.checkpointer else "thread records"
        raise Failure(
            EXIT_USAGE,
            f"forget-user erases everything of user {session.user!r} (facts with every "
            f"version, session turns, {what}) and cannot be undone; add --yes to confirm "
            "(ltm export-user-data first to keep a copy).",
        )
    opener = _checkpointer_opener(args.checkpointer)  # a bad URL fails before the store opens
    store = session.store
    if args.checkpointer:
        session.target = f"{session.where} or the checkpointer at {_redact(args.checkpointer)}"
    try:
        with opener() as checkpointer:
            report = forget_user(store, session.user, checkpointer=checkpointer)
    except Exception as exc:  # checkpoints go first: nothing was deleted
        if type(exc).__name__ == "UndefinedTable" or "no such table" in str(exc):
            raise Failure(
                EXIT_USAGE,
                f"--checkpointer {_redact(args.checkpointer)} has no LangGraph checkpoint "
                "tables; pass the checkpointer the agent used. Nothing was deleted.",
            ) from exc
        raise
    data = {"user_id": session.user, **report.to_dict()}
    data["checkpointer"] = _redact(args.checkpointer) if args.checkpointer else None
    rows = [
        ["facts", str(report.facts)],
        ["earlier versions", str(report.versions)],
        ["session turns", str(report.session_turns)],
        ["threads", str(report.threads)],
    ]
    human = f"Erased user {session.user!r} from {session.where}:\n" + table([], rows)
    if report.thread_ids and not args.checkpointer:
        human += (
            f"\nThe checkpoints of {plural(len(report.thread_ids), 'thread')} were kept (no "
            "--checkpointer): " + ", ".join(report.thread_ids)
        )
    session.emit(data, human)
    return EXIT_OK


def _checkpointer_opener(url: str | None) -> Callable[[], contextlib.AbstractContextManager[Any]]:
    """Open the LangGraph checkpointer at ``url`` (checked now, connected when entered)."""
    if not url:
        return contextlib.nullcontext
    if url.startswith(("postgresql://", "postgres://")):
        saver = _checkpoint_module("postgres").PostgresSaver
        return lambda: saver.from_conn_string(url)
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///")).expanduser()
        saver = _checkpoint_module("sqlite").SqliteSaver
        if not path.is_file():  # connecting would create an empty database
            raise Failure(EXIT_USAGE, f"--checkpointer {url}: there is no SQLite file at {path}.")
        return lambda: saver.from_conn_string(str(path))
    raise Failure(
        EXIT_USAGE,
        f"--checkpointer {_redact(url)}: pass the agent's LangGraph checkpointer as "
        "postgresql://user:pw@host/db (PostgresSaver) or sqlite:///PATH (SqliteSaver).",
    )


def _checkpoint_module(engine: str) -> Any:
    package = f"langgraph-checkpoint-{engine}"
    try:
        return importlib.import_module(f"langgraph.checkpoint.{engine}")
    except ImportError as exc:
        raise MissingDependencyError(
            f"--checkpointer {engine} needs the {package} package ({exc.name} is missing): "
            f"pip install {package}"
        ) from exc


def cmd_export_user_data(session: Session) -> int:
    data = export_user_data(session.store, session.user)
    text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    target = session.args.output
    if target is None or target == "-":
        session.out.write(text)
        return EXIT_OK
    path = Path(target).expanduser()
    _write_atomically(path, text)
    counts = {k: len(data[k]) for k in ("facts", "session_turns", "threads")}
    session.emit(
        {"user_id": session.user, "path": str(path), **counts},
        f"Exported user {session.user!r} to {path}: {plural(counts['facts'], 'fact')}, "
        f"{plural(counts['session_turns'], 'session turn')}, "
        f"{plural(counts['threads'], 'thread')}.",
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
            "versions": sum(len(f.history) for f in facts),
            "first_created": min((f.created_at for f in facts), default=None),
            "last_updated": max((f.updated_at for f in facts), default=None),
        }
        data = {k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in data.items()}
        pairs = [[k, "-" if v is None else str(v)] for k, v in data.items()]
        session.emit(data, table([], pairs))
        return EXIT_OK
    counts = []  # (facts, earlier versions, user): a version is not a fact of its own
    for user, _ in _users(store):
        facts = store.list_all(user)
        counts.append((len(facts), sum(len(f.history) for f in facts), user))
    counts.sort(key=lambda c: (-c[0], c[2]))
    total, versions = sum(c[0] for c in counts), sum(c[1] for c in counts)
    data = {
        "store": session.where,
        "users": len(counts),
        "facts": total,
        "versions": versions,
        "per_user": [{"user_id": user, "facts": n, "versions": v} for n, v, user in counts],
    }
    human = table(
        [],
        [
            ["store", session.where],
            ["users", str(len(counts))],
            ["facts", str(total)],
            ["versions", str(versions)],
        ],
    )
    if counts:
        shown = counts[:20]
        human += "\n\n" + table(
            ["USER", "FACTS", "VERSIONS"], [[user, str(n), str(v)] for n, v, user in shown]
        )
        if len(counts) > len(shown):
            human += f"\n... and {len(counts) - len(shown)} more users (--json lists all)"
    session.emit(data, human)
    return EXIT_OK


# ---- migrate ---------------------------------------------------------------------------


def cmd_migrate(session: Session) -> int:
    args = session.args
    for url, flag in ((args.source, "--from"), (args.target, "--to")):
        if url.strip() == "memory://":
            raise Failure(
                EXIT_USAGE,
                f"{flag} memory:// is a store inside one process: it starts empty and is gone "
                "when ltm ends. Migrate between stores that persist (a folder, "
                "postgresql://..., http(s)://...).",
            )
    if _identity(args.source) == _identity(args.target):
        raise Failure(EXIT_USAGE, "--from and --to are the same store; pass another --to.")
    if "://" not in args.source and not Path(_identity(args.source)).is_dir():
        raise Failure(EXIT_USAGE, f"--from {args.source}: there is no store folder there.")
    source, source_where = session.open(args.source, "source")
    target, target_where = session.open(args.target, "target")
    session.target = f"the source ({source_where}) or the target ({target_where})"
    one = args.user is not None
    scope = source.user_namespace(args.user) if one else ()
    held = target.backend.count(scope)
    if held and not args.yes:
        whose = f"for user {args.user!r}" if one else "already"
        raise Failure(
            EXIT_USAGE,
            f"the target {target_where} holds {plural(held, 'item')} {whose}; migrate writes "
            "facts by id and other items by key over what is there (everything else is kept). "
            "Add --yes to migrate into it anyway (also to finish an interrupted migration: "
            "repeating one is safe).",
        )
    users = [args.user] if one else [user for user, _ in _users(source)]
    progress = Progress(source.backend.count(scope), session.err, "migrate", "items")
    progress.update(0)
    try:
        facts, conflicts = _copy_facts(session, source, target, users, progress)
        items = _copy_items(source, target, scope, facts, args.batch_size, progress)
    finally:
        progress.finish()
    report = {"from": source_where, "to": target_where, "user_id": args.user}
    report.update(_verify(target, scope, facts, items, conflicts))
    session.emit(report, migrate_summary(report))
    if not report["verified"]:
        raise Failure(
            EXIT_ENGINE,
            "the target does not have everything the source has (see the counts above); the "
            "source is unchanged: fix the cause and run the same migrate again with --yes.",
        )
    return EXIT_OK


def _identity(url: str) -> str:
    if "://" in url:
        return url.rstrip("/")
    return str(Path(url.removeprefix("qdrant:")).expanduser().resolve())


def _copy_facts(
    session: Session,
    source: LongTermMemoryStore,
    target: LongTermMemoryStore,
    users: list[str],
    progress: Progress,
) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
    """Restore every user's facts in the target; ``{user: {fact id: versions}}``, conflicts."""
    facts: dict[str, dict[str, int]] = {}
    conflicts: dict[str, list[str]] = {}
    for user in users:
        records = source.export_user(user)
        facts[user] = {str(r["id"]): len(r["history"]) for r in records}
        for start in range(0, len(records), session.args.batch_size):
            batch = records[start : start + session.args.batch_size]
            done = target.import_user(user, batch, "restore")
            conflicts.setdefault(user, []).extend(done.conflicts)
            progress.advance(sum(1 + len(r["history"]) for r in batch))
    return facts, {user: ids for user, ids in conflicts.items() if ids}


def _copy_items(
    source: LongTermMemoryStore,
    target: LongTermMemoryStore,
    scope: tuple[str, ...],
    facts: dict[str, dict[str, int]],
    batch_size: int,
    progress: Progress,
) -> dict[tuple[tuple[str, ...], str], str]:
    """Put every item that is not a fact or a version in the target; their value digests."""
    copied: dict[tuple[tuple[str, ...], str], str] = {}
    for page in _other_items(source, scope, facts, batch_size):
        target.batch([PutOp(item.namespace, item.key, item.value) for item in page])
        copied.update(((item.namespace, item.key), _digest(item.value)) for item in page)
        progress.advance(len(page))
    return copied


def _other_items(
    store: LongTermMemoryStore,
    scope: tuple[str, ...],
    facts: dict[str, dict[str, int]],
    size: int,
) -> Iterator[list[SearchItem]]:
    """Pages of the items under ``scope`` that ``export_user`` does not carry."""
    offset = 0
    while True:
        page = store.search(scope, limit=size, offset=offset)
        offset += len(page)
        kept = [item for item in page if not _is_fact(store, item, facts)]
        if kept:
            yield kept
        if len(page) < size:
            return


def _is_fact(
    store: LongTermMemoryStore, item: SearchItem, facts: dict[str, dict[str, int]]
) -> bool:
    user = store.user_id_of(item.namespace)
    if user is None or "content" not in item.value:
        return False
    of = item.value.get("version_of")
    return of is None or of in facts.get(user, {})


def _digest(value: dict[str, Any]) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _verify(
    target: LongTermMemoryStore,
    scope: tuple[str, ...],
    facts: dict[str, dict[str, int]],
    items: dict[tuple[tuple[str, ...], str], str],
    conflicts: dict[str, list[str]],
) -> dict[str, Any]:
    """Count what arrived: the source's facts (by id) with their versions, and its items."""
    others = [user for user, _ in _users(target)] if not scope else []
    in_target = {
        user: {str(r["id"]): len(r["history"]) for r in target.export_user(user)}
        for user in dict.fromkeys([*facts, *others])
    }
    users: list[dict[str, Any]] = []
    for user, wanted in facts.items():
        got = in_target[user]
        found = [fact_id for fact_id in wanted if fact_id in got]
        users.append(
            {
                "user_id": user,
                "facts": len(wanted),
                "versions": sum(wanted.values()),
                "target_facts": len(found),
                "target_versions": sum(got[fact_id] for fact_id in found),
                "conflicts": conflicts.get(user, []),
            }
        )
    extra = sum(len(got) for got in in_target.values()) - sum(u["target_facts"] for u in users)
    held = {
        (item.namespace, item.key): _digest(item.value)
        for page in _other_items(target, scope, in_target, 1000)
        for item in page
    }
    arrived = sum(held.get(key) == digest for key, digest in items.items())
    totals = {k: sum(u[k] for u in users) for k in ("facts", "versions")}
    found_totals = {k: sum(u[f"target_{k}"] for u in users) for k in ("facts", "versions")}
    return {
        "users": users,
        "source": {"users": len(users), **totals, "items": len(items)},
        "target": {"users": len(users), **found_totals, "items": arrived},
        "extra_in_target": {"facts": extra, "items": len(held) - arrived},
        "verified": totals == found_totals
        and arrived == len(items)
        and all(
            (u["facts"], u["versions"]) == (u["target_facts"], u["target_versions"]) for u in users
        ),
    }


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
