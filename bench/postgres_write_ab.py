"""Two versions of the Postgres write statement on the same batches, interleaved.

Loads 20,000 facts with this checkout, then builds and runs (in a rolled-back
transaction, ``--reps`` times each, 12 by default, alternating) the write of one batch of
1,000 new keys and of one re-put of existing keys, with this checkout's ``_sql.write`` and
with another file's (``--before``, e.g. ``git show main:langchain_ltm/backends/postgres/
_sql.py > /tmp/old_sql.py``). Prints
the median build (Python) and execute (round trip, mostly server) milliseconds.

Usage:
    python bench/postgres_write_ab.py --before /tmp/old_sql.py
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
from langchain_ltm.backends.postgres import _sql as new_sql
from langchain_ltm.backends.postgres import postgres_backend
from langchain_ltm.backends.postgres._conn import _register_vector

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--before", required=True, help="path of the other _sql.py")
parser.add_argument("--reps", type=int, default=12)
args = parser.parse_args()
spec = importlib.util.spec_from_file_location("old_sql", args.before)
assert spec is not None
assert spec.loader is not None
old_sql = importlib.util.module_from_spec(spec)
sys.modules["old_sql"] = old_sql
spec.loader.exec_module(old_sql)
url, stop = start_server()
try:
    ci = with_database(url, "ab")
    emb = LookupEmbeddings()
    backend = postgres_backend(ci, table="facts", dims=DIMS)
    store = LongTermMemoryStore(backend, embeddings=emb, fields=["content"])
    data = batches(7, 22000, 2000)
    for texts, vecs, ops in data[:20]:
        emb.rows.clear()
        emb.add(texts, vecs)
        store.batch(ops)
    captured = []
    orig = backend.write
    backend.write = lambda ups, dels: captured.append((ups, dels)) or 0
    for texts, vecs, ops in data[20:22]:  # a fresh batch, and a re-put of an old one
        emb.rows.clear()
        emb.add(texts, vecs)
        store.batch(ops)
    texts, vecs, ops = data[3]
    emb.rows.clear()
    emb.add(texts, vecs)
    store.batch(ops)
    backend.write = orig
    conn = psycopg.connect(ci)
    _register_vector(conn, TypeInfo.fetch(conn, "vector"))
    t = new_sql.Tables("public", "facts")

    def run(mod, ups):
        g = mod.write(t, ups, [], None)
        st = next(g)
        with conn.cursor(binary=True) as cur:
            cur.execute(st.sql, st.params)
            c0 = time.perf_counter()
            st = g.send(cur.fetchall())
            c1 = time.perf_counter()
            cur.execute(st.sql, st.params)
            cur.fetchall()
            c2 = time.perf_counter()
        conn.rollback()
        return (c1 - c0) * 1e3, (c2 - c1) * 1e3

    for label, (ups, _) in (("new keys", captured[0]), ("re-put of existing keys", captured[2])):
        res = {"old": [], "new": []}
        for r in range(args.reps):
            for name, mod in (
                (("old", old_sql), ("new", new_sql))
                if r % 2 == 0
                else (("new", new_sql), ("old", old_sql))
            ):
                res[name].append(run(mod, ups))
        for name, v in res.items():
            build = statistics.median(x[0] for x in v)
            ex = statistics.median(x[1] for x in v)
            print(
                f"{label}: {name} build {build:.1f} ms, execute {ex:.1f} ms (median of {args.reps})"
            )
finally:
    stop()
