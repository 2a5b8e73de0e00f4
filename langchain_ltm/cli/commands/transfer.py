"""``ltm export``, ``import`` and ``migrate``: facts in and out of a store, or between two."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from langgraph.store.base import SearchItem

from langchain_ltm._clock import utcnow
from langchain_ltm._codec import to_search_item
from langchain_ltm._copies import copy_items
from langchain_ltm._steps import run_sync
from langchain_ltm._vectorstore_urls import folder_catalog, is_vectorstore_url
from langchain_ltm.agents.erase import user_namespaces
from langchain_ltm.backends.base import SearchRequest
from langchain_ltm.cli.exits import (
    EXIT_ENGINE,
    EXIT_OK,
    EXIT_USAGE,
    Failure,
    bare_sqlite_path,
    is_sqlite_file,
)
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
from langchain_ltm.errors import InvalidFactError
from langchain_ltm.facts import content_hash, imports
from langchain_ltm.facts import versions as layout
from langchain_ltm.facts.import_records import check_records, record_secret
from langchain_ltm.store import LongTermMemoryStore


def cmd_export(session: Session) -> int:
    """``ltm export``: the user's facts as JSON Lines, to stdout or a file.

    The summary counts what of the user's namespace the file holds besides facts
    ``remember`` wrote (items another client put with a text ``content``: LangMem's
    memories) and what it leaves out (other items, without a text ``content``: a profile,
    a document), which ``ltm export-user-data`` includes.
    """
    store = session.store
    count = session.counter(store.user_namespace(session.user))  # facts and their versions
    with session.progress("export", "items", count).step():
        records = store.export_user(session.user)
    clients, others = _client_items(store, session.user)
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    left_out = (
        f"; left out {plural(others, 'other item')} without a text content (a profile or "
        "document another client put: `ltm export-user-data` includes them)"
        if others
        else ""
    )
    path = session.output_path()
    if path is None:
        session.out.write(lines)
        if others:  # stdout holds the file: the note goes to stderr
            print(f"ltm: {left_out[2:]}.", file=session.err)
        return EXIT_OK
    write_atomically(path, lines)
    of_clients = f" ({clients} of them items another client put with a text)" if clients else ""
    session.emit(
        {
            "user_id": session.user,
            "path": str(path),
            "exported": len(records),
            "client_items": clients,
            "other_items_left_out": others,
        },
        f"Exported {plural(len(records), 'fact')}{of_clients} of user {session.user!r} to "
        f"{path}{left_out}.",
    )
    return EXIT_OK


def _client_items(store: LongTermMemoryStore, user: str) -> tuple[int, int]:
    """How many of the user's items another client put with a text, and without one.

    With a text ``content`` (no ``content_hash``: not written by ``remember``) an export
    holds it as a fact; without one it is left out.
    """
    namespace = store.user_namespace(user)
    (hits,) = store.backend.search(SearchRequest(namespace, None, (), None, 0, utcnow()))
    mine = [h.item for h in hits if h.item.namespace == namespace]
    texts = sum(1 for i in mine if layout.is_fact(i) and "content_hash" not in i.value)
    others = sum(1 for i in mine if not layout.is_fact(i) and not layout.is_version(i))
    return texts, others


def cmd_import(session: Session) -> int:
    """``ltm import``: restore exported lines, remember the others; the file is checked first."""
    args = session.args
    raw = _read_lines(args.file)
    _not_user_data(raw, args.file)
    read_import_jsonl(raw, args.file)  # the whole file is checked before the store opens
    store = session.store_or_empty() if args.dry_run else session.store
    if args.threshold is not None:
        store = store.with_options(merge_threshold=args.threshold)
    lines = read_import_jsonl(raw, args.file, store.max_fact_chars)
    guard = store._guard  # the store's secret_guard, as remember and import_user use it
    report = ImportReport(session.user, len(lines), args.dry_run)
    restore, merge = [], []
    for line in lines:
        # what the line would store: its text, metadata and earlier versions still alive
        where = f"{args.file}, line {line.number}"
        reason = line.refused  # a text the store does not take (a client's long item)
        if reason is None and guard:
            reason = record_secret(line.record, where, store.max_fact_chars, guard)
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
            report.restored(batch, done)
            progress.advance(len(batch))
        # a dry run decides every merged line in one call, so lines see the ones before them
        # (a text said again is decided alike in one call or split into batches)
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
                "they were, merged lines are decided again and lose no text).",
                file=session.err,
            )
        raise
    progress.finish()
    session.emit(report.to_dict(), report.human())
    counts = report.counts()
    # lines, not rows: a merged line gets a row per text (its history's too)
    left = len({r.line for r in report.rows if r.action in ("rejected", "conflict")})
    if left:  # as remember: a line that was not stored is not "done"
        would = "would not be" if args.dry_run else "were not"
        if left < len(lines):
            others = "; the others would be" if args.dry_run else "; the others were"
        else:
            others = ""  # "the others were" with no others
        raise Failure(
            EXIT_USAGE,
            f"{left} of {len(lines)} lines {would} stored ({counts['rejected']} rejected, "
            f"{counts['conflict']} conflicts: see the report){others}.",
        )
    return EXIT_OK


def _not_user_data(raw: list[bytes], name: str) -> None:
    """Refuse an ``ltm export-user-data`` document by name (it read as "line 1: not JSON")."""
    first = next((line.strip() for line in raw if line.strip()), b"")
    if first not in (b"{", b"{}") and not first.startswith(b'{"user_id"'):
        return
    try:
        data = json.loads(b"\n".join(raw))
    except ValueError:
        return
    if isinstance(data, dict) and {"user_id", "facts"} <= data.keys():
        raise Failure(
            EXIT_USAGE,
            f"{name} is an `ltm export-user-data` document (all of a user's data, one JSON "
            "document), not an import file: `ltm import` reads the JSON Lines `ltm export` "
            "writes. Export the user's facts with `ltm export --user NAME -o FILE`.",
        )


def _read_lines(name: str) -> list[bytes]:
    try:
        if name == "-":
            return sys.stdin.buffer.read().splitlines()
        with open(Path(name).expanduser(), "rb") as handle:
            return handle.read().splitlines()
    except OSError as exc:
        raise Failure(EXIT_USAGE, f"cannot read {name}: {exc.strerror or exc}.") from exc


def _chunks(items: list[ImportLine], size: int) -> Iterator[list[ImportLine]]:
    for start in range(0, len(items), max(size, 1)):
        yield items[start : start + size]


# ---- migrate ---------------------------------------------------------------------------


def cmd_migrate(session: Session) -> int:
    """``ltm migrate``: copy a store into another, then check what arrived (exit 3 if short)."""
    args = session.args
    for url, flag in ((args.source, "--from"), (args.target, "--to")):
        if url.strip() == "memory://":
            raise Failure(
                EXIT_USAGE,
                f"{flag} memory:// is a store inside one process: it starts empty and is gone "
                "when ltm ends. Migrate between stores that persist (sqlite:///PATH, a "
                "folder, postgresql://..., http(s)://...).",
            )
    for url, flag in ((args.source, "--from"), (args.target, "--to")):
        if url.startswith("sqlite:") or is_vectorstore_url(url) or "://" in url:
            continue
        path = Path(url.removeprefix("qdrant:")).expanduser()  # a Qdrant folder's form
        if is_sqlite_file(path):
            raise Failure(EXIT_USAGE, bare_sqlite_path(path, flag))  # not "--store ..."
    if _same_store(args.source, args.target):
        raise Failure(EXIT_USAGE, "--from and --to are the same store; pass another --to.")
    missing = no_store_at(args.source)  # opening it would create an empty store
    if missing is not None:
        raise Failure(EXIT_USAGE, f"--from {args.source}: {missing}.")
    source, source_where = session.open(args.source, "source")
    one = args.user is not None
    # one user: their facts, session turns and threads (what forget_user erases), each
    # namespace exactly: not the ones below it (another configuration's users)
    scopes = user_namespaces(source, args.user) if one else ((),)
    if one and not _count(source, scopes):
        raise Failure(EXIT_USAGE, _no_such_user(source, source_where, args.user))
    target, target_where = session.open(args.target, "target")
    session.target = f"the source ({source_where}) or the target ({target_where})"
    held = _count(target, scopes)
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
    progress = Progress(_count(source, scopes), session.err, "migrate", "items")
    progress.update(0)
    # one moment for every page of the copy and of the check: items expiring meanwhile
    # shifted the pages read after them (by offset), so live items were never read
    now = utcnow()
    try:
        facts, conflicts = _copy_facts(session, source, source_where, target, users, progress)
        items = _copy_items(source, target, scopes, facts, now, args.batch_size, progress)
    finally:
        progress.finish()
    report = {"from": source_where, "to": target_where, "user_id": args.user}
    report.update(_verify(target, scopes, facts, items, conflicts, now))
    session.emit(report, migrate_summary(report))
    if not report["verified"]:
        raise Failure(
            EXIT_ENGINE,
            "the target does not have everything the source has (see the counts above); the "
            "source is unchanged: fix the cause and run the same migrate again with --yes.",
        )
    return EXIT_OK


def _count(store: LongTermMemoryStore, scopes: Sequence[tuple[str, ...]]) -> int:
    """How many items ``scopes`` hold: everything for ``((),)``, else each namespace exactly.

    A user's namespace can have namespaces below it, such as ``("memories", "acme", "bob")``
    under ``("memories", "acme")``: user ``bob`` of a configuration whose namespace is
    ``("memories", "acme")``, not user ``acme``'s (``forget_user`` leaves it alone).
    """
    if _everything(scopes):
        return store.backend.count(())
    total = 0
    for scope in scopes:
        below = {
            ns[: len(scope) + 1] for ns in _namespaces_under(store, scope) if len(ns) > len(scope)
        }
        total += store.backend.count(scope) - sum(store.backend.count(ns) for ns in below)
    return total


def _everything(scopes: Sequence[tuple[str, ...]]) -> bool:
    return tuple(scopes) == ((),)


def _in_scope(namespace: tuple[str, ...], scopes: Sequence[tuple[str, ...]]) -> bool:
    """Whether an item of ``namespace`` is one ``scopes`` name (see :func:`_count`)."""
    return _everything(scopes) or tuple(namespace) in scopes


def _namespaces_under(store: LongTermMemoryStore, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    page = 1000
    while True:
        namespaces = store.list_namespaces(prefix=prefix, limit=page, offset=len(found))
        found += namespaces
        if len(namespaces) < page:
            return found


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


def _same_store(source: str, target: str) -> bool:
    """Whether two URLs name one store: the same name, or one file or folder by two paths.

    A hard link (or a bind mount) is the same file under another path: two SQLite
    connections through it kept two WAL files for one database.
    """
    if _identity(source) == _identity(target):
        return True
    paths = _local_path(source), _local_path(target)
    if paths[0] is None or paths[1] is None:
        return False
    try:
        return os.path.samefile(paths[0], paths[1])
    except OSError:  # one of them does not exist (yet): not the same
        return False


def _identity(url: str) -> str:
    path = _local_path(url)
    if path is not None:
        return ("sqlite:" if _is_sqlite_url(url) else "") + str(path.resolve())
    return url if is_vectorstore_url(url) else url.rstrip("/")


def _local_path(url: str) -> Path | None:
    """The file or folder that holds the store ``url`` names, or None for a server."""
    if _is_sqlite_url(url):
        return sqlite_path(url)
    catalog = folder_catalog(url)
    if catalog is not None:  # chroma:PATH, faiss:PATH: one store per catalog file
        return catalog
    if is_vectorstore_url(url) or "://" in url:
        return None
    return Path(url.removeprefix("qdrant:")).expanduser()


def _is_sqlite_url(url: str) -> bool:
    return url.startswith("sqlite:///") and url != "sqlite:///"  # else open_store says why


Texts = tuple[tuple[str, "datetime | None"], ...]
"""A fact's texts, oldest first: each one's content hash and when it expires (or None)."""


def _texts(record: Mapping[str, Any]) -> Texts:
    """The texts of an exported fact: its earlier versions, then its current text."""
    lasts = _expiry(record.get("expires_at"))  # versions expire with it, or on their own
    out = [
        (content_hash(v["content"]), _expiry(v.get("expires_at")) or lasts)
        for v in record.get("history") or ()
    ]
    out.append((content_hash(record["content"]), lasts))
    return tuple(out)


def _expiry(value: Any) -> datetime | None:
    return layout.parse_time(value, datetime.max) if isinstance(value, str) else None


def _copy_facts(
    session: Session,
    source: LongTermMemoryStore,
    source_where: str,
    target: LongTermMemoryStore,
    users: list[str],
    progress: Progress,
) -> tuple[dict[str, dict[str, Texts]], dict[str, list[str]]]:
    """Restore every user's facts in the target; ``{user: {fact id: texts}}``, conflicts."""
    facts: dict[str, dict[str, Texts]] = {}
    conflicts: dict[str, list[str]] = {}
    for user in users:
        records = _own_facts(source, user, source.export_user(user))
        facts[user] = {str(r["id"]): _texts(r) for r in records}
        for start in range(0, len(records), session.args.batch_size):
            batch = records[start : start + session.args.batch_size]
            # a copy of what the source holds: the target's input policy (its
            # max_fact_chars, secret guard, refusal of future times) is for new input
            names = [f"user {user!r}, fact {r['id']!r}" for r in batch]
            try:
                done = run_sync(
                    imports.import_user(
                        target._facts, user, batch, "restore", as_stored=True, names=names
                    )
                )
            except InvalidFactError as exc:
                raise Failure(
                    EXIT_USAGE,
                    f"the source {source_where} holds a fact the target cannot take: {exc} "
                    f"The source is unchanged; the users before {user!r} are in the "
                    "target. Correct or forget that fact in the source (ltm forget --store "
                    f"{session.args.source} --user ... ID), then run the same migrate "
                    "again with --yes.",
                ) from exc
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
    scopes: Sequence[tuple[str, ...]],
    facts: Mapping[str, Mapping[str, Texts]],
    now: datetime,
    batch_size: int,
    progress: Progress,
) -> dict[tuple[tuple[str, ...], str], str]:
    """Write every item that is not a fact or a version in the target; their value digests.

    Each copy keeps the source item's timestamps, expiry and TTL, and embeds the fields the
    source embedded (:mod:`langchain_ltm._copies`). The items are those alive at ``now``.
    """
    copied: dict[tuple[tuple[str, ...], str], str] = {}
    for page in _other_items(source, scopes, facts, batch_size, now):
        keys = [(item.namespace, item.key) for item in page]
        found = source.backend.get(keys)
        try:
            paths = source.backend.indexed_paths(keys)
        except NotImplementedError:  # an engine that cannot tell: the default fields
            paths = [None] * len(keys)
        kept = [(s, p) for s, p in zip(found, paths, strict=True) if s is not None]
        written = run_sync(
            copy_items(
                target,
                [s for s, _ in kept],
                [p for _, p in kept],
                keep_ttl=target.supports_ttl,
            )
        )
        # checked as written: a Postgres target keeps no second copy of a fact's hash
        copied.update(
            ((s.namespace, s.key), _digest(written.get((s.namespace, s.key), s.value)))
            for s, _ in kept
        )
        progress.advance(len(page))
    return copied


def _other_items(
    store: LongTermMemoryStore,
    scopes: Sequence[tuple[str, ...]],
    facts: Mapping[str, Mapping[str, Any]],
    size: int,
    now: datetime,
) -> Iterator[list[SearchItem]]:
    """Pages of the items ``scopes`` hold (:func:`_in_scope`) that ``export_user`` does not carry.

    Every page leaves out what had expired at ``now``, one moment for all of them: pages
    are read by offset, and an item expiring between two pages moved every later item one
    place up, so the item at the page boundary was never read.
    """
    # refresh_ttl=False: reading must not move any TTL (the source is only read)
    # the engine's own search: a user's earlier versions included (BaseStore.search of
    # a user's namespace leaves them out)
    alive_at = now if store.omit_expired else None
    for scope in scopes:
        offset = 0
        while True:
            request = SearchRequest(scope, None, (), size, offset, alive_at)
            (hits,) = store.backend.search(request)
            page = [to_search_item(hit) for hit in hits]
            offset += len(page)
            kept = [
                item
                for item in page
                if _in_scope(item.namespace, scopes) and not _is_fact(store, item, facts)
            ]
            if kept:
                yield kept
            if len(page) < size:
                break


def _is_fact(
    store: LongTermMemoryStore, item: SearchItem, facts: Mapping[str, Mapping[str, Any]]
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
    scopes: Sequence[tuple[str, ...]],
    facts: Mapping[str, Mapping[str, Texts]],
    items: Mapping[tuple[tuple[str, ...], str], str],
    conflicts: Mapping[str, list[str]],
    now: datetime,
) -> dict[str, Any]:
    """Check what arrived: each source fact by id with the same texts, and every item.

    A fact counts when the target's fact of that id holds the same texts (current and
    earlier, compared by content hash), not only as many. A text that expired since the
    copy counts on neither side; an item is looked for as the copy read it (at ``now``).
    """
    others = [user for user, _ in all_users(target)] if _everything(scopes) else []
    exported = {
        user: _own_facts(target, user, target.export_user(user))
        for user in dict.fromkeys([*facts, *others])
    }
    checked = utcnow()  # after the target was read: what expired by then is gone from both
    in_target = {
        user: {str(r["id"]): _live(_texts(r), checked) for r in records}
        for user, records in exported.items()
    }
    users: list[dict[str, Any]] = []
    for user, source_facts in facts.items():
        got = in_target[user]
        wanted = {  # a fact whose own expiry has passed is gone, with its versions
            i: _live(t, checked)
            for i, t in source_facts.items()
            if t[-1][1] is None or t[-1][1] > checked
        }
        found = [i for i, t in wanted.items() if got.get(i) == t]
        not_restored = [
            {"id": i, "reason": _why(i, t, got, conflicts.get(user, ()))}
            for i, t in wanted.items()
            if got.get(i) != t
        ]
        # a conflict whose fact the target holds with the same texts: written there after
        # the source's (said again for good, pinned), kept as it is, every text there
        newer = [i for i in conflicts.get(user, ()) if i in found]
        users.append(
            {
                "user_id": user,
                "facts": len(wanted),
                "versions": sum(len(t) - 1 for t in wanted.values()),
                "target_facts": len(found),
                "target_versions": sum(len(wanted[i]) - 1 for i in found),
                "conflicts": conflicts.get(user, []),
                "not_restored": not_restored,
                "newer_in_target": newer,
            }
        )
    extra = sum(len(set(got) - set(facts.get(user, {}))) for user, got in in_target.items())
    held = {
        (item.namespace, item.key): _digest(item.value)
        for page in _other_items(target, scopes, in_target, 1000, now)
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
        "verified": arrived == len(items)
        and not any(
            u["not_restored"] or set(u["conflicts"]) - set(u["newer_in_target"]) for u in users
        ),
    }


def _live(texts: Texts, at: datetime) -> tuple[str, ...]:
    """The content hashes of the texts that had not expired ``at``."""
    return tuple(digest for digest, expires in texts if expires is None or expires > at)


def _why(
    fact_id: str, texts: tuple[str, ...], got: Mapping[str, tuple[str, ...]], conflicts: Any
) -> str:
    """Why a source fact is not in the target as it is in the source (for the report)."""
    if fact_id in got:
        return "other_texts"  # the target's fact of this id holds other texts
    if fact_id in conflicts or any(texts[-1] in held for held in got.values()):
        return "same_text"  # the target holds its text as another fact
    return "missing"
