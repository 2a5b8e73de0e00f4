"""Two versions of the Postgres write statement on the same batches, interleaved.

Loads 20,000 facts with this checkout, then builds and runs (in a rolled-back
transaction, ``--reps`` times each, 12 by default, alternating) the write of one batch of
1,000 new keys and of one re-put of existing keys, with this checkout's ``_writes.write`` and
with another file's (``--before``, e.g. ``git show main:langchain_ltm/backends/postgres/
_writes.py > /tmp/old_writes.py``; revisions before the split have ``write`` in
``_sql.py``). Prints
the median build (Python only: the exchange run on made-up rows) and execute (the whole
write driven on the connection, statements that do not wait pipelined as the backend does,
so Python building and the server overlap) milliseconds.

``--explain``: afterwards, ``EXPLAIN (ANALYZE, BUFFERS, WAL)`` of each data statement of this
checkout's write of the same batches (new keys, then the re-put), committed, with the time
of the commit: where the server's share goes.

Usage:
    python bench/postgres_write_ab.py --before /tmp/old_writes.py [--explain]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time

import psycopg
from _common import DIMS, LookupEmbeddings
from postgres_ingest import batches, start_server, with_database
from psycopg.types import TypeInfo

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.postgres import _sql, _writes, postgres_backend
from langchain_ltm.backends.postgres._connector import _register_vector
from langchain_ltm.backends.postgres._drive import _flush_sync

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument(
    "--before", required=True, help="path of the other _writes.py (or an older _sql.py)"
)
parser.add_argument("--reps", type=int, default=12)
parser.add_argument("--explain", action="store_true")
args = parser.parse_args()
spec = importlib.util.spec_from_file_location("old_writes", args.before)
assert spec is not None
assert spec.loader is not None
old_writes = importlib.util.module_from_spec(spec)
sys.modules["old_writes"] = old_writes
spec.loader.exec_module(old_writes)
url, stop = start_server()
try:
    ci = with_database(url, "ab")
    emb = LookupEmbeddings()
    backend = postgres_backend(ci, table="facts", dims=DIMS)
    # the fact API elsewhere: the batches' ("memories", user) items are plain BaseStore
    # items, so a re-put of 1,000 of them is one write (over facts, each user's puts go in
    # a write of their own, under the user's lock: client_puts)
    store = LongTermMemoryStore(
        backend, embeddings=emb, fields=["content"], namespace=("ab_facts",)
    )
    data = batches(7, 22000, 2000)
    for texts, vecs, ops in data[:20]:
        emb.rows.clear()
        emb.add(texts, vecs)
        store.batch(ops)
    captured = []
    orig = backend.write
    backend.write = lambda ups, dels: captured.append((ups, dels)) or 0
    for texts, vecs, ops in data[20:22]:  # two fresh batches, then a re-put of an old one
        emb.rows.clear()
        emb.add(texts, vecs)
        store.batch(ops)
    texts, vecs, ops = data[3]
    emb.rows.clear()
    emb.add(texts, vecs)
    store.batch(ops)
    backend.write = orig
    assert [len(ups) for ups, _ in captured] == [1000, 1000, 1000], "one write per batch"
    conn = psycopg.connect(ci)
    _register_vector(conn, TypeInfo.fetch(conn, "vector"))
    t = _sql.Tables("public", "facts")

    def build(mod, ups):
        """Python only: the exchange run to its end on made-up rows."""
        g = mod.write(t, ups, [], None)
        c0 = time.perf_counter()
        try:
            next(g)
            while True:
                g.send([(0, [])])  # the write's last statement: count, lost locks
        except StopIteration:
            pass
        return (time.perf_counter() - c0) * 1e3

    def execute(mod, ups):
        """The whole write on the server, statements pipelined where they do not wait
        (as the backend drives them), then rolled back."""
        g = mod.write(t, ups, [], None)
        c0 = time.perf_counter()
        with conn.pipeline() as pipe, conn.cursor(binary=True) as cur:
            try:
                st = next(g)
                while True:
                    if getattr(st, "wait", True):
                        cur.execute(st.sql, st.params)
                        _flush_sync(conn)
                        pipe.sync()
                        rows = cur.fetchall() if cur.description is not None else []
                    else:
                        conn.cursor(binary=True).execute(st.sql, st.params)
                        _flush_sync(conn)
                        rows = []
                    st = g.send(rows)
            except StopIteration:
                pass
        c1 = time.perf_counter()
        conn.rollback()
        return (c1 - c0) * 1e3

    def run(mod, ups):
        return build(mod, ups), execute(mod, ups)

    for label, (ups, _) in (("new keys", captured[0]), ("re-put of existing keys", captured[2])):
        res = {"old": [], "new": []}
        for r in range(args.reps):
            for name, mod in (
                (("old", old_writes), ("new", _writes))
                if r % 2 == 0
                else (("new", _writes), ("old", old_writes))
            ):
                res[name].append(run(mod, ups))
        for name, v in res.items():
            built = statistics.median(x[0] for x in v)
            ex = statistics.median(x[1] for x in v)
            print(
                f"{label}: {name} build {built:.1f} ms, execute {ex:.1f} ms (median of {args.reps})"
            )
    if args.explain:
        keep = ("Insert on", "Delete on", "Trigger for", "Execution Time", "Planning Time", "WAL:")
        for label, (ups, _) in (("new keys", captured[0]), ("re-put", captured[2])):
            g = _writes.write(t, ups, [], None)
            with conn.cursor(binary=True) as cur:
                try:
                    st = next(g)
                    while True:
                        head = st.sql.lstrip()[:6]
                        if head in ("WITH u", "WITH s", "INSERT", "DELETE") or head == "WITH r":
                            c0 = time.perf_counter()
                            cur.execute("EXPLAIN (ANALYZE, BUFFERS, WAL) " + st.sql, st.params)
                            plan = [row[0] for row in cur.fetchall()]
                            wall = (time.perf_counter() - c0) * 1e3
                            print(f"{label}: {st.sql.strip()[:48]}... round trip {wall:.1f} ms")
                            for line in plan:
                                if any(word in line for word in keep):
                                    print("    " + line.strip()[:110])
                            rows = [(0, [])]
                        else:
                            cur.execute(st.sql, st.params)
                            rows = cur.fetchall() if cur.description is not None else []
                        st = g.send(rows)
                except StopIteration:
                    pass
            c0 = time.perf_counter()
            conn.commit()
            print(f"{label}: commit {(time.perf_counter() - c0) * 1e3:.1f} ms")
finally:
    stop()
