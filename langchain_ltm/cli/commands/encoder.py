"""``ltm encoder [status|start|stop]``: the warm encoder process (:mod:`langchain_ltm.cli.warm`)."""

from __future__ import annotations

from typing import Any

from langchain_ltm.cli.exits import EXIT_ENGINE, EXIT_NOT_FOUND, EXIT_OK, EXIT_USAGE, Failure
from langchain_ltm.cli.session import Session, default_embeddings
from langchain_ltm.cli.warm.client import MODE_ENV, EncoderUnavailable, WarmEncoder


def cmd_encoder(session: Session) -> int:
    """Print the running encoder (or none), start one and wait for it, or stop it.

    ``status`` and ``stop`` exit 1 when none is running (``status`` also for one that is
    stopping); ``status`` exits 3 for one that holds its lock but does not answer (still
    starting, or stuck), which ``stop`` ends.
    """
    encoder = default_embeddings()
    if not isinstance(encoder, WarmEncoder):
        raise Failure(EXIT_USAGE, "the warm encoder needs a POSIX system (Linux, macOS)")
    action = session.args.action
    if action == "start" and encoder.mode == "off":
        print(f"ltm: note: {MODE_ENV}=off, so commands will not use it", file=session.err)
    try:
        if action == "start":
            found: dict[str, Any] | None = encoder.start()
        elif action == "stop":
            found = encoder.stop()
        else:
            found = encoder.status() or _silent(encoder)
    except EncoderUnavailable as exc:
        raise Failure(EXIT_ENGINE, str(exc)) from exc
    if found is None:
        why = encoder.unusable()
        session.emit(
            {"running": False, "socket": str(encoder.address), "unusable": why},
            f"No warm encoder is running (it would listen on {encoder.address})."
            if why is None
            else f"No warm encoder can run: {why}.",
        )
        return EXIT_NOT_FOUND
    if found.get("answering") is False:
        return _report_silent(session, action, found)
    stopping = action == "stop" or found.get("stopping") is True
    session.emit(
        {**{k: v for k, v in found.items() if k != "ok"}, "running": not stopping},
        f"{'Stopping' if stopping else 'Running'}: pid {found['pid']}, {found['embedded']} "
        f"embedding requests served, idle {found['idle_seconds']:.0f} s of "
        f"{found['idle_limit_seconds']:.0f} s, socket {found['socket']}"
        + ("; it answers the requests it holds, then exits" if stopping else ""),
    )
    # a stopping one serves no new command: status says none is running (exit 1)
    return EXIT_NOT_FOUND if action == "status" and stopping else EXIT_OK


def _silent(encoder: WarmEncoder) -> dict[str, Any] | None:
    """The encoder holding the lock when none answers (stopping, starting or stuck)."""
    held = encoder.holder()
    if held is None:
        return None
    return {"pid": held[0], "answering": False, "stopping": held[1], "socket": str(encoder.address)}


def _report_silent(session: Session, action: str, found: dict[str, Any]) -> int:
    """Print an encoder that holds the lock but does not answer; the exit code."""
    pid = found["pid"]
    if found.get("stopping"):  # asked to stop, its socket gone: it drains, then exits
        line = f"Stopping: pid {pid} answers the requests it holds, then exits"
        code = EXIT_NOT_FOUND if action == "status" else EXIT_OK
    elif "signal" in found:  # stop ended it
        line = (
            f"Stopped: pid {pid} held the warm encoder's lock but did not answer (still "
            f"starting, or stuck); "
            + (f"ended with {found['signal']}" if found["signal"] else "it exited meanwhile")
        )
        code = EXIT_OK
    else:
        line = (
            f"Not answering: pid {pid} holds the warm encoder's lock but does not answer "
            f"(still starting, or stuck); `ltm encoder stop` ends it"
        )
        code = EXIT_ENGINE
    session.emit({"running": "signal" not in found and not found.get("stopping"), **found}, line)
    return code
