"""``ltm remember``, ``recall``, ``list``, ``forget`` and ``clear``: one user's facts."""

from __future__ import annotations

import re
import sys

from langchain_ltm.cli.exits import EXIT_NOT_FOUND, EXIT_OK, EXIT_USAGE, Failure
from langchain_ltm.cli.io import fact_rows, table
from langchain_ltm.cli.parser import BATCH_SIZE, meta_dict
from langchain_ltm.cli.session import Session
from langchain_ltm.facts import RememberResult, validate_text


def _metadata(session: Session) -> dict[str, str | int]:
    """The command's ``--meta`` pairs; a key given twice exits 2."""
    try:
        return meta_dict(session.args.meta)
    except ValueError as exc:
        raise Failure(EXIT_USAGE, str(exc)) from None


def _remember_batches(session: Session, texts: list[str]) -> list[RememberResult]:
    results: list[RememberResult] = []
    metadata = _metadata(session)
    progress = session.progress("remember", "facts", lambda: len(texts))
    progress.update(0)
    try:
        for start in range(0, len(texts), BATCH_SIZE):
            batch = texts[start : start + BATCH_SIZE]
            results += session.facts.remember(
                session.user, batch, metadata=metadata, observed_at=session.args.at
            )
            progress.advance(len(batch))
    except BaseException:  # Ctrl-C, an engine failure: say what is stored already
        progress.finish()
        if results:  # all of them again would store a text a later one updated once more
            done, rest = len(results), len(texts) - len(results)
            print(
                f"ltm: the first {done} of {len(texts)} facts were remembered before it "
                f"stopped; to finish, remember the other {rest} (from fact {done + 1} on). "
                "Remembering them all again would store each of the first ones that a later "
                "one updated as said again (a new version), not as a duplicate.",
                file=session.err,
            )
        raise
    progress.finish()
    return results


def cmd_remember(session: Session) -> int:
    """``ltm remember``: store each fact (``-``: one per stdin line); exit 2 if any was rejected."""
    facts: list[tuple[str, str]] = []  # (where it came from, text)
    for n, arg in enumerate(session.args.facts, start=1):
        if arg == "-":
            text = sys.stdin.read().removeprefix("\ufeff")  # a file saved with a BOM
            # "\n" only: splitlines() also splits at U+2028, U+0085 and form feeds in a fact
            lines = [line.strip() for line in text.split("\n")]
            facts += [(f"stdin line {i}", t) for i, t in enumerate(lines, start=1) if t]
        else:
            facts.append((f"fact {n}" if len(session.args.facts) > 1 else "fact", arg))
    if not facts:
        raise Failure(EXIT_USAGE, "no facts to remember: stdin was empty.")
    texts = _checked(session, facts)
    results = _remember_batches(session, texts)
    rows, records = [], []
    for i, (text, result) in enumerate(zip(texts, results, strict=True), start=1):
        # each row shows its own text: ``fact`` is the fact as the whole call left it, so a
        # later row's update of the same fact showed in this row (and this row's text not)
        fact = result.fact
        records.append(
            {
                "index": i,
                "action": result.action,
                "text": None if fact is None else text,  # a rejected secret is not echoed
                "fact": fact.to_dict() if fact else None,
                "previous": result.previous,
                "similarity": result.similarity,
                "similar": [s.to_dict() for s in result.similar],
                "reason": result.reason,
            }
        )
        if fact is None:
            rows.append([result.action, "-", str(result.reason)])
            continue
        now = f"  (the fact now: {fact.content})" if fact.content != text else ""
        if result.action == "updated":
            note = f"  (was: {result.previous}; similarity {result.similarity or 0:.2f})"
            rows.append([result.action, fact.id, text + note + now])
        else:
            rows.append([result.action, fact.id, text + _similar_note(result) + now])
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


_UNDECODED = re.compile("[\udc80-\udcff]")
"""What Python makes of bytes that are not UTF-8 in arguments and stdin (surrogateescape)."""


def _checked(session: Session, facts: list[tuple[str, str]]) -> list[str]:
    """The texts, each checked with its label (empty, NUL...) before and after the store opens.

    The store checks a batch as a whole; checking here names the argument or line at fault.
    """
    for label, text in facts:  # cheap checks first: no need to wait for the store
        if _UNDECODED.search(text):  # bytes Python could not decode, kept as surrogates
            raise Failure(
                EXIT_USAGE, f"{label} is not UTF-8 text: save or convert it as UTF-8 first."
            )
        validate_text(text, label, sys.maxsize)
    limit = session.facts.max_fact_chars
    return [validate_text(text, label, limit) for label, text in facts]


def cmd_recall(session: Session) -> int:
    """``ltm recall``: the user's facts closest to the queries, best first."""
    queries = [*(session.args.query or []), *session.args.queries]
    if not queries:
        raise Failure(EXIT_USAGE, 'recall needs a query: ltm recall --user U -q "what to find"')
    wanted = _metadata(session) or None
    facts = session.facts.recall(  # looking from the command line keeps expiries as they are
        session.user, queries, limit=session.args.limit, filter=wanted, refresh_ttl=False
    )
    headers, rows = fact_rows(facts, scored=True)
    having = " with " + ", ".join(f"{k}={v}" for k, v in wanted.items()) if wanted else ""
    human = table(headers, rows) if facts else f"No facts of user {session.user!r}{having} match."
    session.emit([f.to_dict() for f in facts], human)
    return EXIT_OK


def cmd_list(session: Session) -> int:
    """``ltm list``: every fact of the user, oldest first."""
    facts = session.facts.list_all(session.user, refresh_ttl=False)
    headers, rows = fact_rows(facts, scored=False)
    human = table(headers, rows) if facts else f"No facts stored for user {session.user!r}."
    session.emit([f.to_dict() for f in facts], human)
    return EXIT_OK


def cmd_forget(session: Session) -> int:
    """``ltm forget``: delete one fact and its versions (exit 1 if there is none).

    The id may be a unique prefix of one (the 8 characters the demo prints).
    """
    fact_id = session.fact_id(session.args.fact_id)
    forgotten = session.facts.forget(session.user, fact_id)
    data = {"user_id": session.user, "id": fact_id, "forgotten": forgotten}
    session.emit(data, f"Forgot fact {fact_id} of user {session.user!r}." if forgotten else "")
    if not forgotten:  # deleted by another process since fact_id found it
        raise Failure(
            EXIT_NOT_FOUND,
            f"user {session.user!r} has no fact with id {fact_id!r}; "
            f"see the ids with: {session.command_line('list')}",
        )
    return EXIT_OK


def cmd_clear(session: Session) -> int:
    """``ltm clear --yes``: delete everything under the user's namespace."""
    if not session.args.yes:
        raise Failure(
            EXIT_USAGE,
            f"clear deletes every memory of user {session.user!r} and cannot be undone; "
            "add --yes to confirm (ltm export first to keep a copy).",
        )
    store = session.facts
    count = session.counter(store.user_namespace(session.user))
    with session.progress("clear", "items", count).step():
        deleted = store.clear_user(session.user)
    session.emit(
        {"user_id": session.user, "deleted": deleted},
        f"Deleted {deleted} item{'s' * (deleted != 1)} of user {session.user!r}.",
    )
    return EXIT_OK
