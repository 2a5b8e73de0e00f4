"""``ltm export``, ``import`` and ``migrate``: facts in and out of a store, or between two."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from langgraph.store.base import SearchItem

from langchain_ltm._clock import utcnow
from langchain_ltm._codec import to_search_item
from langchain_ltm._copies import copy_items
from langchain_ltm._steps import run_sync
from langchain_ltm._vectorstore_urls import folder_catalog, is_vectorstore_url
from langchain_ltm.backends.base import SearchRequest
from langchain_ltm.cli.exits import EXIT_ENGINE, EXIT_OK, EXIT_USAGE, Failure
from langchain_ltm.cli.io import (
    ImportReport,
    ImportRow,
    Progress,
    migrate_summary,
    plural,
    write_atomically,
)
from langchain_ltm.cli.jsonl import ImportLine, read_import_jsonl
from langchain_ltm.cli.session import Session, all_users, no_store_at
from langchain_ltm.defaults import sqlite_path
from langchain_ltm.facts import versions as layout
from langchain_ltm.facts.imports import check_records
from langchain_ltm.guard import find_secret
from langchain_ltm.store import LongTermMemoryStore


def cmd_export(session: Session) -> int:
    """``ltm export``: the user's facts as JSON Lines, to stdout or a file."""
    store = session.store
    count = session.counter(store.user_namespace(session.user))  # facts and their versions
    with session.progress("export", "items", count).step():
        records = store.export_user(session.user)
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    path = session.output_path()
    if path is None:
        session.out.write(lines)
        return EXIT_OK
    write_atomically(path, lines)
    session.emit(
        {"user_id": session.user, "path": str(path), "exported": len(records)},
        f"Exported {plural(len(records), 'fact')} of user {session.user!r} to {path}.",
    )
    return EXIT_OK


def cmd_import(session: Session) -> int:
    """``ltm import``: restore exported lines, remember the others; the file is checked first."""
    args = session.args
    raw = _read_lines(args.file)
    read_import_jsonl(raw, args.file)  # the whole file is checked before the store opens
    store = session.store_or_empty() if args.dry_run else session.store
    if args.threshold is not None:
        store = store.with_options(merge_threshold=args.threshold)
    lines = read_import_jsonl(raw, args.file, store.max_fact_chars)
    guard = _guard_of(store)
    report = ImportReport(session.user, len(lines), args.dry_run)
    restore, merge = [], []
    for line in lines:
        reason = _refused(guard, line.record) if guard else None
        if reason:  # not stored, like a secret given to remember; the other lines are
            report.rows.append(ImportRow(line.number, "rejected", None, "-", reason=reason))
        elif line.exported and not args.merge:
            restore.append(line)
        else:
            merge.append(line)
    # every line checked as the store reads it before the first batch is written
    for lines_of, mode in ((restore, "restore"), (merge, "merge")):
        check_records(
            store._facts,
            session.user,
            [x.record for x in lines_of],
            mode,  # type: ignore[arg-type]
            [f"{args.file}, line {x.number}" for x in lines_of],
        )
    progress = Progress(len(restore) + len(merge), session.err)
    progress.update(0)
    try:
        for batch in _chunks(restore, args.batch_size):
            done = store.import_user(
                session.user, [x.record for x in batch], "restore", dry_run=args.dry_run
            )
            report.restored(batch, done.conflicts, done.expired)
            progress.advance(len(batch))
        # a dry run decides every merged line in one call, so lines see the ones before them
        size = len(merge) if args.dry_run else args.batch_size
        for batch in _chunks(merge, size):
            done = store.import_user(
                session.user, [x.record for x in batch], "merge", dry_run=args.dry_run
            )
            report.merged(batch, done.results, done.sources)
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
    counts = report.counts()
    left = counts["rejected"] + counts["conflict"]
    if left:  # as remember: a line that was not stored is not "done"
        would = "would not be" if args.dry_run else "were not"
        others = "the others would be" if args.dry_run else "the others were"
        raise Failure(
            EXIT_USAGE,
            f"{left} of {len(lines)} lines {would} stored ({counts['rejected']} rejected, "
            f"{counts['conflict']} conflicts: see the report); {others}.",
        )
    return EXIT_OK


def _refused(guard: Callable[[str], str | None], record: dict[str, Any]) -> str | None:
    """Why the guard refuses a line: its text, or any earlier text in its ``history``."""
    texts = [record["content"]]
    for entry in record.get("history") or ():
        text = entry.get("content") if isinstance(entry, dict) else entry
        if isinstance(text, str):
            texts.append(text)
    for n, text in enumerate(texts):
        reason = guard(text)
        if reason:
            return reason if n == 0 else f"history[{n - 1}]: {reason}"
    return None


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


# ---- migrate ---------------------------------------------------------------------------


def cmd_migrate(session: Session) -> int:
    """``ltm migrate``: copy a store into another, then count what arrived (exit 3 if short)."""
    args = session.args
    for url, flag in ((args.source, "--from"), (args.target, "--to")):
        if url.strip() == "memory://":
            raise Failure(
                EXIT_USAGE,
                f"{flag} memory:// is a store inside one process: it starts empty and is gone "
                "when ltm ends. Migrate between stores that persist (sqlite:///PATH, a "
                "folder, postgresql://..., http(s)://...).",
            )
    if _identity(args.source) == _identity(args.target):
        raise Failure(EXIT_USAGE, "--from and --to are the same store; pass another --to.")
    missing = no_store_at(args.source)  # opening it would create an empty store
    if missing is not None:
        raise Failure(EXIT_USAGE, f"--from {args.source}: {missing}.")
    source, source_where = session.open(args.source, "source")
    one = args.user is not None
    scope = source.user_namespace(args.user) if one else ()
    if one and not source.backend.count(scope):
        raise Failure(EXIT_USAGE, _no_such_user(source, source_where, args.user))
    target, target_where = session.open(args.target, "target")
    session.target = f"the source ({source_where}) or the target ({target_where})"
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
    users = [args.user] if one else [user for user, _ in all_users(source)]
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


def _no_such_user(source: LongTermMemoryStore, where: str, user: str) -> str:
    """Why ``--user USER`` copies nothing: the users the source does hold, a few of them."""
    users = [name for name, _ in all_users(source)]
    if not users:
        return f"--user {user!r}: the source {where} holds no user's memories at all."
    shown = ", ".join(repr(name) for name in users[:10])
    more = f" and {len(users) - 10} more" if len(users) > 10 else ""
    return (
        f"--user {user!r}: the source {where} holds nothing for that user. Its users: "
        f"{shown}{more}."
    )


def _identity(url: str) -> str:
    if _is_sqlite_url(url):
        return "sqlite:" + str(sqlite_path(url).resolve())
    catalog = folder_catalog(url)
    if catalog is not None:  # chroma:PATH, faiss:PATH: one store per catalog file
        return str(catalog.resolve())
    if is_vectorstore_url(url):
        return url
    if "://" in url:
        return url.rstrip("/")
    return str(Path(url.removeprefix("qdrant:")).expanduser().resolve())


def _is_sqlite_url(url: str) -> bool:
    return url.startswith("sqlite:///") and url != "sqlite:///"  # else open_store says why


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
        records = _own_facts(source, user, source.export_user(user))
        facts[user] = {str(r["id"]): len(r["history"]) for r in records}
        for start in range(0, len(records), session.args.batch_size):
            batch = records[start : start + session.args.batch_size]
            done = target.import_user(user, batch, "restore")
            conflicts.setdefault(user, []).extend(done.conflicts)
            for fact_id in done.expired:  # expired since the export: not expected there
                facts[user].pop(fact_id, None)
            progress.advance(sum(1 + len(r["history"]) for r in batch))
    return facts, {user: ids for user, ids in conflicts.items() if ids}


def _own_facts(
    source: LongTermMemoryStore, user: str, records: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The records of facts this layout wrote; other clients' items are copied as they are.

    An item another client put in the user's namespace (a LangMem memory, a deepagents
    file: ``content`` but no ``content_hash``) is exported like a fact, but restoring it
    would check it as a new fact (length, secrets, a non-text ``content``) and rewrite its
    value: it is copied byte for byte with the other items instead.
    """
    namespace = source.user_namespace(user)
    stored = source.backend.get([(namespace, str(r["id"])) for r in records])
    return [
        r
        for r, item in zip(records, stored, strict=True)
        if item is not None and _is_own_fact(item.value)
    ]


def _is_own_fact(value: Mapping[str, Any]) -> bool:
    return "content_hash" in value and isinstance(value.get("content"), str)


def _copy_items(
    source: LongTermMemoryStore,
    target: LongTermMemoryStore,
    scope: tuple[str, ...],
    facts: dict[str, dict[str, int]],
    batch_size: int,
    progress: Progress,
) -> dict[tuple[tuple[str, ...], str], str]:
    """Write every item that is not a fact or a version in the target; their value digests.

    Each copy keeps the source item's timestamps, expiry and TTL, and embeds the fields the
    source embedded (:mod:`langchain_ltm._copies`).
    """
    copied: dict[tuple[tuple[str, ...], str], str] = {}
    for page in _other_items(source, scope, facts, batch_size):
        keys = [(item.namespace, item.key) for item in page]
        found = source.backend.get(keys)
        try:
            paths = source.backend.indexed_paths(keys)
        except NotImplementedError:  # an engine that cannot tell: the default fields
            paths = [None] * len(keys)
        kept = [(s, p) for s, p in zip(found, paths, strict=True) if s is not None]
        run_sync(
            copy_items(
                target,
                [s for s, _ in kept],
                [p for _, p in kept],
                keep_ttl=target.supports_ttl,
            )
        )
        copied.update(((s.namespace, s.key), _digest(s.value)) for s, _ in kept)
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
        # refresh_ttl=False: reading must not move any TTL (the source is only read)
        # the engine's own search: a user's earlier versions included (BaseStore.search of
        # a user's namespace leaves them out)
        alive_at = utcnow() if store.omit_expired else None
        (hits,) = store.backend.search(SearchRequest(scope, None, (), size, offset, alive_at))
        page = [to_search_item(hit) for hit in hits]
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
    if not layout.is_version(item):  # a fact, or a client's item (its version_of its own)
        return item.key in facts.get(user, {})
    return str(item.value["version_of"]) in facts.get(user, {})


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
    others = [user for user, _ in all_users(target)] if not scope else []
    in_target = {
        user: {
            str(r["id"]): len(r["history"])
            for r in _own_facts(target, user, target.export_user(user))
        }
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
