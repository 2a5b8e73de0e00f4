"""Per-user search through the generic engine beside the bare vectorstore, same filter and k.

Chroma (in process, ephemeral client), FAISS (in memory), Milvus Lite (a ``.db`` file) and a
real Chroma server (``chroma run`` on localhost, started here): ``users`` users with
``per_user`` items each, one vector per item (KeywordEmbeddings, no model download).
"bare" is the store's own search by vector with our scope filter and k=10: what a caller
would pay without us; "ours" is ``store.search(ns, query=..., limit=10)`` minus the query
embedding (the query vectors are embedded once up front and cached by the store's
embedder). Also the ingest rate (``put`` of one item at a time).

    python bench/vectorstore_search.py [--users 50] [--per-user 100] [--queries 300]
        [--stores chroma,faiss,milvus,chroma-server]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.backends.vectorstore import vectorstore_backend
from tests import vectorstores
from tests.chroma_server import ChromaServer
from tests.fakes import KeywordEmbeddings
from tests.vectorstores import make_vectorstore

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


def ms(samples: list[float]) -> str:
    samples = sorted(samples)
    p95 = samples[int(len(samples) * 0.95)]
    return f"{statistics.median(samples) * 1000:.2f} / {p95 * 1000:.2f}"


def run(kind: str, users: int, per_user: int, queries: int) -> None:
    emb = KeywordEmbeddings(64)
    tmp = Path(tempfile.mkdtemp())
    vs = make_vectorstore(kind, emb, tmp)
    backend = vectorstore_backend(vs, catalog=tmp / "catalog.sqlite")
    store = LongTermMemoryStore(backend, embeddings=emb, fields=["text"])
    start = time.perf_counter()
    n = 0
    for u in range(users):
        for i in range(per_user):
            words = " ".join(WORDS[(u + i * j) % len(WORDS)] for j in range(1, 4))
            store.put(("docs", f"u{u}"), str(i), {"text": f"{words} {i}"})
            n += 1
    ingest = n / (time.perf_counter() - start)
    texts = [f"{WORDS[q % len(WORDS)]} {WORDS[(q * 7) % len(WORDS)]}" for q in range(queries)]
    vectors = emb.embed_documents(texts)
    search = backend.family.search or (lambda *a: None)
    bare, ours, filled = [], [], []
    for q, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
        ns = ("docs", f"u{q % users}")
        where = backend.scope_filter(ns)
        t = time.perf_counter()
        filled.append(len(search(vs, vector, 10, where) or []))
        bare.append(time.perf_counter() - t)
        store.search(ns, query=text, limit=1)  # warms the embedder's cache for this text
        t = time.perf_counter()
        hits = store.search(ns, query=text, limit=10)
        ours.append(time.perf_counter() - t)
        assert len(hits) == 10
    print(
        f"| {kind} | {users} x {per_user} | {ms(bare)} | {statistics.mean(filled):.1f} | "
        f"{ms(ours)} | 10 | {ingest:,.0f} puts/s |"
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
        "| store | users x items | bare search p50 / p95 ms | bare hits of 10 | "
        "ours p50 / p95 ms | ours hits of 10 | ingest |"
    )
    print("|---|---|---|---|---|---|---|")
    server = None
    if "chroma-server" in stores:
        server = ChromaServer(tempfile.mkdtemp(prefix="ltm-bench-chroma-")).start()
        vectorstores.CHROMA_SERVER.update(host=server.host, port=server.port)
    try:
        for kind in stores:
            run(kind, args.users, args.per_user, args.queries)
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
