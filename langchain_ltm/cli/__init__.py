"""The ``ltm`` command: look after users' long-term memories from a shell.

``ltm remember``, ``recall``, ``list``, ``forget``, ``clear``, ``export``, ``import``,
``stats``, ``forget-user`` (erase a user everywhere, their checkpoints included) and
``export-user-data``, each with ``--user`` (default ``$LTM_USER``) and ``--store URL``
(``sqlite:///PATH``, ``memory://``, ``postgresql://...``, ``http(s)://host:6333`` for a
Qdrant server, a folder for embedded Qdrant, ``chroma://HOST:PORT/COLLECTION`` (a Chroma
server), ``chroma:PATH`` and ``faiss:PATH`` (folders), ``redis://HOST:PORT/INDEX`` (a
Redis search index), or ``module:factory`` (a function
returning a LangChain vectorstore or a store); default: ``$LTM_STORE``, else the SQLite
file ``memories.db`` in the user's data directory), before or after the subcommand,
``ltm migrate --from URL --to URL`` to copy a store into another engine, and ``ltm compact``
to give a SQLite file's free pages back to the disk. A fact id can be
given by a unique prefix. Tables for people, ``--json`` for scripts, progress bars on a
terminal. Exit codes: 0 done, 1 the thing asked for is not there, 2 bad usage or input,
3 the storage engine failed (or a migration's copy is incomplete, or a disk is full).

Layout: :mod:`~langchain_ltm.cli.parser` (arguments, help; imports nothing heavy, so
``ltm --help`` is quick), :mod:`~langchain_ltm.cli.exits` (exit codes),
:mod:`~langchain_ltm.cli.session` (the store of one command), :mod:`~langchain_ltm.cli.io`
and :mod:`~langchain_ltm.cli.jsonl` (output, progress, import files), and
:mod:`~langchain_ltm.cli.commands` (one module per topic, imported after parsing).

Example:
    >>> main(["remember", "--user", "alice", "--store", "memory://", "--json", "Likes tea"])
    ... # doctest: +ELLIPSIS
    [
      {
        "index": 1,
        "action": "created",
    ...
    0
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from langchain_ltm.cli.exits import (
    EXIT_ENGINE,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
    Failure,
    classify,
    exit_status,
)
from langchain_ltm.cli.parser import build_parser, parse

if TYPE_CHECKING:
    from langchain_ltm.cli.io import Output

__all__ = ["EXIT_ENGINE", "EXIT_NOT_FOUND", "EXIT_OK", "EXIT_USAGE", "build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ltm`` with ``argv`` (default: the process arguments) and return the exit code.

    Args:
        argv: The arguments after the program name.

    Returns:
        0 done, 1 not found, 2 bad usage or input, 3 storage engine failure.
    """
    try:
        return _run(argv)
    except KeyboardInterrupt:  # also while parsing and importing, before a command runs
        print("ltm: interrupted", file=sys.stderr)
        return 130


def _run(argv: Sequence[str] | None) -> int:
    try:
        args = parse(argv)
    except SystemExit as exc:  # help, --version and usage errors (argparse printed them)
        return exit_status(exc.code)
    from langchain_ltm._labels import validate_user_id
    from langchain_ltm.cli.commands import load
    from langchain_ltm.cli.io import Output
    from langchain_ltm.cli.session import Session

    _quiet_postgres_logs(args)
    out = Output(sys.stdout)
    session = Session(args, out, sys.stderr)
    try:
        if args.user is not None:
            validate_user_id(args.user)  # before the (slower) store opens
        try:
            code = load(args.command)(session)
            session.out.flush()  # here, so a full disk is this command's error
            return code
        finally:
            session.close()
    except Failure as exc:
        code, message = exc.code, str(exc)
    except KeyboardInterrupt:
        print("ltm: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `ltm export | head`: the reader has what it wanted
        _silence_stdout()
        return EXIT_OK
    except Exception as exc:
        classified = classify(exc, session.target)
        if classified is None:
            raise
        code, message = classified
    print(f"ltm: error: {message}", file=sys.stderr)
    if getattr(args, "json", False) and not out.written:
        _json_error(out, code, message)
    return code


def _json_error(out: Output, code: int, message: str) -> None:
    """With ``--json``, a failed command's stdout is one JSON document too: the error.

    Only when the command wrote nothing there (a command that printed its result and then
    failed, or an export that stopped halfway, keeps what it wrote as it is).
    """
    import json

    try:
        out.write(json.dumps({"error": message, "exit_code": code}, ensure_ascii=False) + "\n")
        out.flush()
    except OSError:  # stdout itself is what failed: the message on stderr says so
        pass


def _quiet_postgres_logs(args: object) -> None:
    """Keep psycopg's log records (the pool's, one per failed attempt) off stderr.

    Unhandled, Python printed each "error connecting in 'langchain-ltm': ..." of the pool,
    up to eight before the command's own error said the same once. Only a command given a
    Postgres URL imports ``logging`` for it.
    """
    from langchain_ltm.defaults import _POSTGRES_SCHEMES

    if any(isinstance(v, str) and v.startswith(_POSTGRES_SCHEMES) for v in vars(args).values()):
        import logging

        logging.getLogger("psycopg").addHandler(logging.NullHandler())


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
