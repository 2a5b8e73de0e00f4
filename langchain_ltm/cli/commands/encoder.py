"""``ltm encoder [status|start|stop]``: the warm encoder process (:mod:`langchain_ltm.cli.warm`)."""

from __future__ import annotations

from typing import Any

from langchain_ltm.cli.exits import EXIT_ENGINE, EXIT_NOT_FOUND, EXIT_OK, EXIT_USAGE, Failure
from langchain_ltm.cli.session import Session, default_embeddings
from langchain_ltm.cli.warm.client import MODE_ENV, EncoderUnavailable, WarmEncoder


def cmd_encoder(session: Session) -> int:
    """Print the running encoder (or none), start one and wait for it, or stop it.

    ``status`` and ``stop`` exit 1 when none is running; ``status`` exits 3 for one that
    holds its lock but does not answer (still starting, or stuck), which ``stop`` ends.
    """
    encoder = default_embeddings()
    if not isinstance(encoder, WarmEncoder):
        raise Failure(EXIT_USAGE, "the warm encoder needs a POSIX system (Linux, macOS)")
    action = session.args.action
    if action == "start" and encoder.mode == "off":
        print(f"ltm: note: {MODE_ENV}=off, so commands will not use it", file=session.err)
    if action == "start":
        try:
            found: dict[str, Any] | None = encoder.start()
        except EncoderUnavailable as exc:
            raise Failure(EXIT_ENGINE, str(exc)) from exc
    elif action == "stop":
        try:
            found = encoder.stop()
        except EncoderUnavailable as exc:
            raise Failure(EXIT_ENGINE, str(exc)) from exc
    else:
        found = encoder.status()
        pid = encoder.holder() if found is None else None
        if pid is not None:
            session.emit(
                {"running": True, "answering": False, "pid": pid, "socket": str(encoder.address)},
                f"Not answering: pid {pid} holds the warm encoder's lock but does not answer "
                f"(still starting, or stuck); `ltm encoder stop` ends it",
            )
            return EXIT_ENGINE
    if found is None:
        why = encoder.unusable()
        session.emit(
            {"running": False, "socket": str(encoder.address), "unusable": why},
            f"No warm encoder is running (it would listen on {encoder.address})."
            if why is None
            else f"No warm encoder can run: {why}.",
        )
        return EXIT_NOT_FOUND
    if found.get("answering") is False:  # stop ended one that did not answer, by signal
        session.emit(
            {"running": False, **found},
            f"Stopped: pid {found['pid']} held the warm encoder's lock but did not answer "
            f"(still starting, or stuck); ended with {found['signal']}",
        )
        return EXIT_OK
    verb = {"start": "Running", "stop": "Stopping", "status": "Running"}[action]
    session.emit(
        {"running": action != "stop", **{k: v for k, v in found.items() if k != "ok"}},
        f"{verb}: pid {found['pid']}, {found['embedded']} embedding requests served, idle "
        f"{found['idle_seconds']:.0f} s of {found['idle_limit_seconds']:.0f} s, "
        f"socket {found['socket']}",
    )
    return EXIT_OK
