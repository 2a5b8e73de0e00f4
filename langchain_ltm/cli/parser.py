"""The ``ltm`` argument parser: subcommands, their options and help texts.

The global options (``--store``, ``--user``, ``--json``) are taken before or after the
subcommand; ``$LTM_STORE`` and ``$LTM_USER`` fill in the ones not given. A bare ``ltm``
prints the help, a mistyped command gets a "did you mean". Imports nothing heavy (no store,
numpy or embeddings): ``ltm --help`` loads only this.
"""

from __future__ import annotations

import argparse
import difflib
import math
import os
import re
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from langchain_ltm._store_forms import STORE_URLS

__all__ = [
    "BATCH_SIZE",
    "DEFAULT_STORE_FILE",
    "STORE_ENV",
    "USER_ENV",
    "Parser",
    "build_parser",
    "data_dir",
    "meta_dict",
    "meta_pair",
    "moment",
    "parse",
]

STORE_ENV = "LTM_STORE"
DEFAULT_STORE_FILE = "memories.db"
"""``langchain_ltm.defaults.DEFAULT_STORE_FILE``, for the help (a test checks)."""
USER_ENV = "LTM_USER"
BATCH_SIZE = 256
MERGE_THRESHOLD = 0.80
"""``LongTermMemoryStore``'s default, for the help of ``import --threshold`` (a test checks)."""


def data_dir() -> Path:
    """``langchain_ltm.defaults.data_dir`` without its import of the store (a test checks)."""
    if home := os.environ.get("LTM_HOME"):
        return Path(home).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "langchain-ltm"


_EPILOG = """\
--store, --user and --json go before or after the command:
  ltm --store postgresql://app@db/app --user alice recall "which language?"

environment:
  LTM_STORE  the store when there is no --store
  LTM_USER   the user when there is no --user (not for stats and migrate, where no --user
             means every user)
  LTM_HOME   the folder of the default store (default: {home})
  LTM_ENCODER_SERVER  auto (default): embed in a warm background process, started on
             first use; off: every command loads the model itself (see: ltm encoder -h)
  LTM_MODEL_CACHE  the folder of the model's optimised copy (~90 MB, made once, so that
             later commands load sooner); default: the user's cache folder
             ($XDG_CACHE_HOME or ~/.cache, then langchain-ltm); off: no copy

stores (--store, or $LTM_STORE):
  (default)                      the SQLite file {default}
  sqlite:///PATH                 a SQLite file (many processes on one machine; no extra
                                 needed): sqlite:///memories.db is relative to the current
                                 folder, sqlite:////home/me/memories.db absolute
  memory://                      in-process, forgotten when the command ends
  postgresql://user:pw@host/db   Postgres with pgvector (pip install "langchain-ltm[postgres]")
  http(s)://host:6333            a Qdrant server (pip install "langchain-ltm[qdrant]")
  PATH                           embedded Qdrant in a folder (one process at a time;
                                 pip install "langchain-ltm[qdrant]")
  chroma://HOST:PORT/COLLECTION  a Chroma server (pip install "langchain-ltm[chroma]");
                                 the catalog of items stays on this machine, in
                                 {home}/chroma/ (or ?catalog=PATH)
  chroma:PATH                    a Chroma folder, collection langchain_ltm, the catalog
                                 PATH/ltm-catalog.sqlite (?collection=NAME: that collection,
                                 the catalog PATH/ltm-catalog-NAME.sqlite)
  faiss:PATH                     a FAISS folder (save_local's; created if missing, saved
                                 after each write; pip install "langchain-ltm[faiss]");
                                 the catalog is PATH/ltm-catalog.sqlite
  redis://HOST:PORT/INDEX        a Redis 8 / Redis Stack search index (pip install
                                 "langchain-ltm[redis]"; ?depth=N namespace levels, default
                                 4); the catalog stays on this machine, in
                                 {home}/redis/ (or ?catalog=PATH)
  module:factory                 factory(embeddings) (or factory()) from an importable
                                 module (or module.py in the current folder), returning a
                                 LongTermMemoryStore or a LangChain VectorStore, whose catalog
                                 is then {home}/catalogs/module.factory.sqlite
                                 (a Qdrant folder named like a:b: write qdrant:a:b)

exit codes: 0 done (also a recall that finds nothing), 1 not found (forget of an unknown id),
  2 bad usage or input (or a fact the secret guard rejected), 3 storage engine failure
  (or a migration whose target does not have everything afterwards, or a full disk)

examples:
  ltm remember --user alice@example.com "Prefers answers in Spanish" "Works on payments"
  ltm remember --user alice@example.com --at 2023-05-08T13:56Z --meta session=1 "Adopted a cat"
  ltm recall --user alice@example.com -q "language preference" -q "which language?"
  ltm recall --user alice@example.com --meta session=1 "pets"
  ltm list --user alice@example.com --json
  ltm export --user alice@example.com -o alice.jsonl
  ltm import --user bob alice.jsonl
  ltm stats
  ltm export-user-data --user alice@example.com -o alice.json
  ltm forget-user --user alice@example.com --checkpointer postgresql://app@db/app --yes
  ltm migrate --from sqlite:///memories.db --to postgresql://app@db/app"""

_IMPORT = (
    "Load a JSONL file into the user's facts: lines written by `ltm export` are restored "
    "exactly (same ids, timestamps and versions; importing twice changes nothing); "
    '{"content": ...} lines, {"fact": ...} lines and JSON strings are remembered as new '
    "facts. The whole file is checked first: a malformed line stops it before anything is "
    "written."
)

_FORGET_USER = """\
Erase a user everywhere: their facts with every earlier version, the session turns
SessionMemoryMiddleware indexed, the threads MemoryMiddleware recorded and, with
--checkpointer, the checkpoints of those threads (every message of them). Other users are
untouched. The checkpoints go first and the thread records last, so if it stops half way,
run it again: it finds the same threads and finishes (a finished erase reports zeros).

Without --checkpointer the checkpoints are kept and the thread ids are printed. A thread
used by two users (a misuse) is deleted for both.

examples:
  ltm export-user-data --user alice@example.com -o alice.json   # keep a copy first
  ltm forget-user --user alice@example.com --checkpointer postgresql://app@db/app --yes"""

_MIGRATE = """\
Copy a store into another one (another engine, or another place), then check the copy.

Every user's facts are copied with all their versions, exactly as `ltm export` and
`ltm import` would (same ids, texts, created_at/updated_at, valid_from/valid_to of every
version, metadata). Every other BaseStore item (anything not a fact, e.g. what an agent
stored with store.put) is copied byte for byte: the same namespace, key, value,
created_at and updated_at, embedded at the same fields (an item stored with index=False
stays unembedded); an item with a TTL expires in the copy when it does in the source.
The source is only read (no TTL is refreshed).

Afterwards the target is checked: each fact by id, holding the same texts (current and
earlier) as in the source, and every other item by value. The exit code is 0 when the
target has all of them, 3 (with the counts and the facts not restored, and why) when it
does not: also when the target held a fact of the same id with other texts, or one of the
texts as another fact (nothing of the target is overwritten).

URLs are what --store takes: sqlite:///PATH (a SQLite file; the source must exist),
a folder (embedded Qdrant), postgresql://..., http(s)://host:6333 (a Qdrant server),
chroma://HOST:PORT/COLLECTION, chroma:PATH, faiss:PATH (a source folder must hold a store),
redis://HOST:PORT/INDEX or module:factory (see ltm --help); memory:// holds nothing across commands.

examples:
  ltm migrate --from ~/.local/share/langchain-ltm/qdrant \\
      --to sqlite:///$HOME/.local/share/langchain-ltm/memories.db   # the old default to the new
  ltm migrate --from sqlite:///memories.db --to postgresql://app@db/app
  ltm migrate --from postgresql://app@db/app --to http://qdrant:6333 --user alice --yes
  ltm migrate --from sqlite:///memories.db --to chroma://localhost:8000/memories"""


class Parser(argparse.ArgumentParser):
    """argparse with a "did you mean" for a mistyped command, and its subcommands by name."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands: dict[str, argparse.ArgumentParser] = {}

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if action.dest == "command" and choices is not None and value not in choices:
            names = list(choices)
            close = [name for name in names if value and name.startswith(value)]
            close += difflib.get_close_matches(value, names, n=3, cutoff=0.6)
            if close:
                hint = " or ".join(repr(name) for name in list(dict.fromkeys(close))[:3])
                message = f"invalid choice: {value!r} (did you mean {hint}?)"
            else:
                message = f"invalid choice: {value!r} (choose from {', '.join(names)})"
            raise argparse.ArgumentError(action, message)
        super()._check_value(action, value)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def _lock_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (0 < value <= 2_147_483):
        raise argparse.ArgumentTypeError(
            f"expected seconds > 0 and at most 2147483 (Postgres's limit), got {text!r}"
        )
    return value


def _cosine(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not -1.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a cosine similarity in [-1, 1], got {text!r}")
    return value


_WHOLE_NUMBER = re.compile(r"0|-?[1-9][0-9]{0,17}")  # "-0" stays a string: 0 read back "0"


def meta_pair(text: str) -> tuple[str, str | int]:
    """``KEY=VALUE`` of ``--meta``: a whole number (``session=1``) is a number, else a string.

    The value may contain ``=``. Whole numbers in their plain form only (``007``, ``1.0``
    and ``-0`` stay strings), so what is stored reads back as it was typed, and ``--meta session=1``
    finds what ``remember(..., metadata={"session": 1})`` stored.
    """
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, e.g. source=chat, got {text!r}")
    return key.strip(), int(value) if _WHOLE_NUMBER.fullmatch(value) else value


def meta_dict(pairs: list[tuple[str, str | int]] | None) -> dict[str, str | int]:
    """The ``--meta`` pairs as one mapping; a key given twice is a usage error.

    Raises:
        ValueError: A key is given twice (a fact holds one value per key).
    """
    out: dict[str, str | int] = {}
    for key, value in pairs or ():
        if key in out:
            raise ValueError(
                f"--meta {key} is given twice ({out[key]!r} and {value!r}): a fact holds one "
                f"value per key; give {key} once"
            )
        out[key] = value
    return out


def moment(text: str) -> datetime:
    """An ISO 8601 time for ``--at``; without a zone it is UTC (as in import files)."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        example = "2023-05-08T13:56:00+00:00 or 2023-05-08"
        raise argparse.ArgumentTypeError(
            f"expected an ISO 8601 time like {example}, got {text!r}"
        ) from None
    value = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    try:
        value.astimezone(timezone.utc)  # year 1 at +01:00 is year 0 in UTC
    except OverflowError:
        raise argparse.ArgumentTypeError(f"{text!r} is out of range in UTC") from None
    return value


def _global_options(p: argparse.ArgumentParser, user_help: str, store_help: str | None) -> None:
    """``--store``, ``--user``, ``--json`` on the main parser or a subcommand.

    ``SUPPRESS`` keeps an option not given out of the namespace, so one given before the
    subcommand is not reset by the subcommand's parser (one given after wins).
    """
    if store_help is not None:
        p.add_argument("--store", metavar="URL", default=argparse.SUPPRESS, help=store_help)
    p.add_argument("--user", metavar="ID", default=argparse.SUPPRESS, help=user_help)
    p.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print JSON for scripts"
    )


def build_parser() -> Parser:
    """The ``ltm`` argument parser (``args.command`` names the subcommand).

    :func:`parse` runs it and fills in the defaults (environment included).
    """
    from langchain_ltm import __version__

    home = data_dir()
    default = home / DEFAULT_STORE_FILE
    parser = Parser(
        prog="ltm",
        description="Remember, recall and manage users' long-term memories.",
        epilog=_EPILOG.format(home=home, default=default),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"ltm {__version__}")
    store_help = (
        f"{STORE_URLS} (see stores below); default: ${STORE_ENV}, else the SQLite file {default}"
    )
    _global_options(
        parser,
        f"whose memories (any string, e.g. an email address; default: ${USER_ENV})",
        store_help,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def command(
        name: str,
        summary: str,
        user: str = "required",
        description: str | None = None,
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=summary, description=description or summary)
        parser.commands[name] = p
        if user == "required":
            user_help = f"whose memories (any string, e.g. an email address; default: ${USER_ENV})"
        else:
            user_help = f"one user's counts (default: the whole store; ${USER_ENV} is not used)"
        _global_options(p, user_help, store_help)
        return p

    p = command(
        "remember",
        "Store facts (one embedding call per 256); prints created/duplicate/updated/rejected.",
    )
    p.add_argument(
        "facts", nargs="+", metavar="FACT", help="a fact, or - to read one fact per stdin line"
    )
    p.add_argument(
        "--meta",
        action="append",
        type=meta_pair,
        metavar="KEY=VALUE",
        help="metadata stored with the facts, e.g. --meta source=chat (repeatable, one value "
        "per key; a whole number such as session=1 is stored as a number, anything else as a "
        "string); recall --meta finds them",
    )
    p.add_argument(
        "--at",
        type=moment,
        metavar="TIME",
        help="when the facts were said (ISO 8601, e.g. 2023-05-08T13:56:00+00:00; no zone: "
        "UTC), for a backfill of old conversations: their versions and recall as of a time "
        "follow it (default: now)",
    )
    p = command("recall", "The user's facts most similar to the queries.")
    p.add_argument("-q", "--query", action="append", metavar="TEXT", help="a phrasing (repeatable)")
    p.add_argument("queries", nargs="*", metavar="QUERY", help="more phrasings")
    p.add_argument("--limit", type=_positive_int, default=5, help="most facts (default 5)")
    p.add_argument(
        "--meta",
        action="append",
        type=meta_pair,
        metavar="KEY=VALUE",
        help="only facts remembered with this metadata (repeatable, one value per key: all "
        "must match; session=1 matches the number 1, source=chat the string)",
    )
    command("list", "All of the user's facts, oldest first.")
    p = command("forget", "Delete one fact by id or id prefix (exit code 1 if there is none).")
    p.add_argument(
        "fact_id",
        metavar="FACT_ID",
        help="the id shown by list or recall, or its first characters (4 or more) when they "
        "begin no other fact of the user (several: exit code 2, the candidates listed)",
    )
    p = command("clear", "Delete every memory of the user.")
    p.add_argument("--yes", action="store_true", help="confirm: this cannot be undone")
    p = command("export", "The user's facts as JSON Lines, one fact per line.")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (default: stdout)")
    p = command(
        "import",
        "Restore a file from `ltm export`, or remember new facts from a JSONL file.",
        description=_IMPORT,
    )
    p.add_argument("file", metavar="FILE", help="the JSONL file, or - for stdin")
    p.add_argument(
        "--merge",
        action="store_true",
        help="re-decide every line (each version, oldest first) like remember: duplicates are "
        "skipped and close facts become new versions, instead of restoring exported facts as "
        "they were",
    )
    p.add_argument(
        "--threshold",
        type=_cosine,
        metavar="X",
        help="merge threshold for the lines that are remembered: cosine similarity from which "
        "a fact about the same subject becomes a new version of a stored one "
        f"(default {MERGE_THRESHOLD})",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print what each line would give (restored, created, duplicate, updated, "
        "rejected) and write nothing",
    )
    p.add_argument(
        "--batch-size",
        type=_positive_int,
        default=BATCH_SIZE,
        help=f"lines per write, and per embedding call (default {BATCH_SIZE})",
    )
    command("stats", "Counts of facts, for one user or for the whole store.", "")
    p = command(
        "forget-user",
        "Erase a user everywhere: facts, versions, session turns, threads (--checkpointer).",
        description=_FORGET_USER,
    )
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument(
        "--checkpointer",
        metavar="URL",
        help="the agent's LangGraph checkpointer, whose threads of the user are deleted: "
        "postgresql://... (pip install langgraph-checkpoint-postgres) or sqlite:///PATH "
        "(pip install langgraph-checkpoint-sqlite); without it checkpoints are kept",
    )
    p.add_argument("--yes", action="store_true", help="confirm: this cannot be undone")
    p = command(
        "export-user-data",
        "Everything kept about the user as one JSON document: facts with every version, "
        "session turns, threads.",
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (default: stdout)")
    p = sub.add_parser(
        "migrate",
        help="Copy every memory from one store to another and check that all arrived.",
        description=_MIGRATE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.commands["migrate"] = p
    p.add_argument("--from", dest="source", metavar="URL", required=True, help="the store to copy")
    p.add_argument("--to", dest="target", metavar="URL", required=True, help="the store to fill")
    _global_options(
        p,
        "copy only this user's facts (with the items beside them), session turns and threads "
        f"(default: all; ${USER_ENV} is not used)",
        None,
    )
    p.add_argument(
        "--yes",
        action="store_true",
        help="write into a target that already holds data (also to finish a migration that "
        "was interrupted: repeating one is safe)",
    )
    p.add_argument(
        "--batch-size",
        type=_positive_int,
        default=BATCH_SIZE,
        help=f"facts or items per write (default {BATCH_SIZE})",
    )
    p = sub.add_parser(
        "compact",
        help="Rewrite a store compactly: a SQLite file's free space, Postgres tables by user.",
        description=_COMPACT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.commands["compact"] = p
    _global_options(p, "not used (the whole store is compacted)", store_help)
    p.add_argument(
        "--lock-timeout",
        type=_lock_seconds,
        default=None,
        metavar="SECONDS",
        help="Postgres only: seconds to wait for other sessions to let go of each table "
        "(default 10; at most 2147483)",
    )
    p = sub.add_parser(
        "encoder",
        help="The warm encoder process that embeds for ltm: status, start or stop.",
        description=_ENCODER,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.commands["encoder"] = p
    p.add_argument(
        "action",
        nargs="?",
        default="status",
        choices=("status", "start", "stop"),
        help="status (default): is one running; start: start one and wait until it answers "
        "(after one that is stopping has exited); stop: ask it to exit (one that does not "
        "answer, still starting or stuck, is ended by signal)",
    )
    _global_options(p, "not used", None)
    return parser


_ENCODER = """\
The commands that embed (remember, recall, import, migrate) load the MiniLM model, which
takes most of their time. The first one starts a background process that keeps it loaded
and answers the next ones on a socket only you can reach (in $XDG_RUNTIME_DIR/langchain-ltm, else
/tmp/langchain-ltm-<uid>); it exits after LTM_ENCODER_IDLE_MINUTES (default 10) without a
request. The vectors are the same either way. LTM_ENCODER_SERVER=off: no background process.

status exits 0 when one answers, 1 when none runs (or the one there is stopping), 3 when one
holds its lock but does not answer (still starting, or stuck: stop ends it).
"""

_COMPACT = """\
Rewrite a store compactly and print its size before and after.

A SQLite file: deleted facts (clear, forget-user, expired ones) leave free pages that
SQLite reuses but never gives back; this rewrites the file without them (VACUUM). It needs
the file to itself: if another process has it open (an agent, another ltm command), it
changes nothing and exits 3; stop that, then run it again.

Postgres tables (--store postgresql://...): each table is rewritten in user order (CLUSTER),
so a user's facts sit on a few pages and per-user searches read fewer of them; the indexes
are rebuilt and deleted rows' space is given back. Reads and writes of the store wait while
it runs (13-37 s a million facts here); if other sessions keep a table busy for 10 s
(--lock-timeout), it changes nothing and exits 3. An HNSW index is rebuilt too: calibrate
it again afterwards.

Either way it needs free disk space about the size of the store.

examples:
  ltm compact
  ltm compact --store sqlite:///memories.db --json
  ltm compact --store postgresql://app@db/app --lock-timeout 60
"""

# no --user: every user / none
_OPTIONAL_USER = frozenset({"stats", "migrate", "encoder", "compact"})


def _misplaced_option(parser: Parser, argv: Sequence[str]) -> str | None:
    """What to say of a command's option written before the command, else ``None``.

    ``ltm --at 2023-05-08 remember ...`` got "invalid choice: '2023-05-08'": argparse took
    the option's value for the command.
    """
    own = parser._option_string_actions
    command, misplaced = None, None
    tokens = iter(argv)
    for token in tokens:
        if token == "--":
            break
        if token in parser.commands:
            command = token
            break
        if not token.startswith("-"):
            continue
        name = token.split("=", 1)[0]
        action = own.get(name)
        if action is None:
            misplaced = misplaced or name
        elif action.nargs != 0 and "=" not in token:
            next(tokens, None)  # its value: --user remember is a user named "remember"
    if misplaced is None:
        return None
    commands = parser.commands.items()
    takers = [name for name, sub in commands if misplaced in sub._option_string_actions]
    if not takers:
        return None
    if command is not None and command not in takers:
        return f"{misplaced} is an option of {', '.join(takers)}, not of {command}"
    return (
        f"{misplaced} is an option of {command or ' and '.join(takers)}: put it after the "
        "command (only --store, --user and --json go before it)"
    )


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The arguments of one ``ltm`` command, every global option filled in.

    ``store`` is ``--store``, else ``$LTM_STORE``, else ``None`` (the default store);
    ``user`` is ``--user``, else ``$LTM_USER`` for the commands that need a user, else
    ``None``; ``json`` is a bool.

    Raises:
        SystemExit: ``--help`` or ``--version`` (0), or bad usage (2), after argparse printed
            what to do; a bare ``ltm`` prints the help and exits 2.
    """
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if misplaced := _misplaced_option(parser, argv):
        parser.error(misplaced)
    args = parser.parse_args(argv)
    if args.command is None:  # like a missing required argument: help, then exit code 2
        parser.print_help(sys.stderr)
        parser.exit(
            2, "\nltm: error: the following arguments are required: COMMAND (listed above)\n"
        )
    sub = parser.commands[args.command]
    args.json = bool(getattr(args, "json", False))
    store = getattr(args, "store", None)
    if args.command == "migrate" and store is not None:
        sub.error("migrate takes no --store: it reads --from URL and writes --to URL")
    args.store = store or os.environ.get(STORE_ENV) or None
    user = getattr(args, "user", None)
    if user is None and args.command not in _OPTIONAL_USER:
        user = os.environ.get(USER_ENV) or None
        if user is None:
            sub.error(f"the following arguments are required: --user (or set ${USER_ENV})")
    args.user = user
    return args
