"""``ltm encoder [status|start|stop]``: the warm encoder process (:mod:`langchain_ltm.cli.warm`)."""

from __future__ import annotations

from typing import Any

from langchain_ltm.cli.exits import EXIT_NOT_FOUND, EXIT_OK
from langchain_ltm.cli.session import Session, default_embeddings


def cmd_encoder(session: Session) -> int:
    """Print the running encoder (or none), start one and wait for it, or stop it.

    ``status`` and ``stop`` exit 1 when none is running.
    """
    encoder = default_embeddings()
    action = session.args.action
    if action == "start":
        found: dict[str, Any] | None = encoder.start()
    elif action == "stop":
        found = encoder.stop()
    else:
        found = encoder.status()
    if found is None:
        session.emit(
            {"running": False, "socket": str(encoder.address)},
            f"No warm encoder is running (it would listen on {encoder.address}).",
        )
        return EXIT_NOT_FOUND
    verb = {"start": "Running", "stop": "Stopping", "status": "Running"}[action]
    session.emit(
        {"running": action != "stop", **found},
        f"{verb}: pid {found['pid']}, {found['served']} requests served, idle "
        f"{found['idle_seconds']:.0f} s of {found['idle_limit_seconds']:.0f} s, "
        f"socket {found['socket']}",
    )
    return EXIT_OK
