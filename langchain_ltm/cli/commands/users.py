"""``ltm forget-user``, ``export-user-data`` and ``stats``: a user as a whole, or everyone."""

from __future__ import annotations

import contextlib
import importlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_ltm.agents.erase import (
    SQLITE_CHECKPOINT_TABLES,
    export_user_data,
    forget_user,
    user_namespaces,
)
from langchain_ltm.cli.exits import EXIT_OK, EXIT_USAGE, Failure
from langchain_ltm.cli.io import Progress, plural, table, write_atomically
from langchain_ltm.cli.session import Session, all_users
from langchain_ltm.defaults import _redact
from langchain_ltm.errors import MissingDependencyError


def cmd_forget_user(session: Session) -> int:
    """``ltm forget-user --yes``: erase the user everywhere (checkpoints with --checkpointer)."""
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
        with opener() as checkpointer, _everything(session, "forget-user").step():
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
        from langchain_ltm.backends.postgres._urls import check_conninfo

        try:
            conninfo = check_conninfo(url)  # malformed: now, not as a connection failure
        except ValueError as exc:
            raise Failure(EXIT_USAGE, f"--checkpointer: {exc}") from exc
        return lambda: saver.from_conn_string(conninfo)
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///")).expanduser()
        saver = _checkpoint_module("sqlite").SqliteSaver
        if not path.is_file():  # connecting would create an empty database
            raise Failure(EXIT_USAGE, f"--checkpointer {url}: there is no SQLite file at {path}.")
        _check_sqlite_checkpoints(url, path)
        return lambda: saver.from_conn_string(str(path))
    raise Failure(
        EXIT_USAGE,
        f"--checkpointer {_redact(url)}: pass the agent's LangGraph checkpointer as "
        "postgresql://user:pw@host/db (PostgresSaver) or sqlite:///PATH (SqliteSaver).",
    )


def _check_sqlite_checkpoints(url: str, path: Path) -> None:
    """Refuse a SQLite file without LangGraph's checkpoint tables, before anything is deleted.

    ``SqliteSaver.delete_thread`` creates its tables first: on the wrong file it would delete
    no checkpoint and raise nothing, and the erase would then delete the thread records,
    the only index of the user's threads. The file is opened read-only, so nothing is
    created in it.
    """
    import sqlite3  # at need: only forget-user --checkpointer sqlite:///

    wanted = ", ".join(SQLITE_CHECKPOINT_TABLES)
    advice = (
        "Nothing was deleted. Pass the SQLite file the agent's SqliteSaver writes to, or leave "
        "out --checkpointer to keep the checkpoints (their thread ids are listed)."
    )
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise Failure(
            EXIT_USAGE, f"--checkpointer {url}: {path} is not a SQLite database ({exc}). {advice}"
        ) from exc
    if set(SQLITE_CHECKPOINT_TABLES) <= tables:
        return
    found = f"{path} has no LangGraph checkpoint tables ({wanted})"
    if "ltm_items" in tables:
        found += ": it is a langchain-ltm memory store (what --store names), not a checkpointer"
    raise Failure(EXIT_USAGE, f"--checkpointer {url}: {found}. {advice}")


def _checkpoint_module(engine: str) -> Any:
    package = f"langgraph-checkpoint-{engine}"
    try:
        return importlib.import_module(f"langgraph.checkpoint.{engine}")
    except ImportError as exc:
        raise MissingDependencyError(
            f"--checkpointer {engine} needs the {package} package ({exc.name} is missing): "
            f"pip install {package}"
        ) from exc


def _everything(session: Session, label: str) -> Progress:
    """A progress bar over the items kept about the user: facts, versions, turns, threads."""
    namespaces = user_namespaces(session.store, session.user)
    return session.progress(label, "items", session.counter(*namespaces))


def cmd_export_user_data(session: Session) -> int:
    """``ltm export-user-data``: everything kept about the user as one JSON document."""
    with _everything(session, "export-user-data").step():
        data = export_user_data(session.store, session.user)
    text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    path = session.output_path()
    if path is None:
        session.out.write(text)
        return EXIT_OK
    write_atomically(path, text)
    counts = {k: len(data[k]) for k in ("facts", "session_turns", "threads")}
    session.emit(
        {"user_id": session.user, "path": str(path), **counts},
        f"Exported user {session.user!r} to {path}: {plural(counts['facts'], 'fact')}, "
        f"{plural(counts['session_turns'], 'session turn')}, "
        f"{plural(counts['threads'], 'thread')}.",
    )
    return EXIT_OK


def cmd_stats(session: Session) -> int:
    """``ltm stats``: counts of facts and versions, for one user or per user."""
    store = session.store
    if session.args.user is not None:
        facts = store.list_all(session.user, refresh_ttl=False)
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
    users = all_users(store)
    progress = session.progress("stats", "users", lambda: len(users))
    progress.update(0)
    try:
        for user, _ in users:
            facts = store.list_all(user, refresh_ttl=False)
            counts.append((len(facts), sum(len(f.history) for f in facts), user))
            progress.advance(1)
    finally:
        progress.finish()
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
