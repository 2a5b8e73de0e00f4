"""The ``ltm`` subcommands by topic, each ``cmd_<name>(session) -> exit code``.

- :mod:`~langchain_ltm.cli.commands.facts`: remember, recall, list, forget, clear.
- :mod:`~langchain_ltm.cli.commands.transfer`: export, import, migrate.
- :mod:`~langchain_ltm.cli.commands.users`: forget-user, export-user-data, stats.
- :mod:`~langchain_ltm.cli.commands.maintenance`: compact (a SQLite file's free space).
- :mod:`~langchain_ltm.cli.commands.encoder`: encoder (the warm encoder process).

A topic module is imported only when one of its commands runs: parsing (and ``ltm
--help``) loads none of them, nor the store.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_ltm.cli.session import Session

TOPICS: dict[str, str] = {
    "remember": "facts",
    "recall": "facts",
    "list": "facts",
    "forget": "facts",
    "clear": "facts",
    "export": "transfer",
    "import": "transfer",
    "migrate": "transfer",
    "forget-user": "users",
    "export-user-data": "users",
    "stats": "users",
    "compact": "maintenance",
    "encoder": "encoder",
}
"""Each command, in the order of ``ltm --help``, with the module that runs it."""


def load(command: str) -> Callable[[Session], int]:
    """The function running ``command`` (its topic module is imported now)."""
    module = importlib.import_module(f"{__name__}.{TOPICS[command]}")
    run: Callable[[Session], int] = getattr(module, "cmd_" + command.replace("-", "_"))
    return run
