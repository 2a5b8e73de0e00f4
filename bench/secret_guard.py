"""Precision and recall of the secret guard on the labelled corpus (tests/data)."""

import json
import time
from pathlib import Path

from langchain_ltm.guard import find_secret

rows = [
    json.loads(line)
    for line in (Path(__file__).parent.parent / "tests/data/secret_corpus.jsonl").open()
]
start = time.perf_counter()
flags = [find_secret(r["text"]) is not None for r in rows]
elapsed = time.perf_counter() - start
tp = sum(f and r["secret"] for f, r in zip(flags, rows, strict=True))
fp = sum(f and not r["secret"] for f, r in zip(flags, rows, strict=True))
fn = sum(not f and r["secret"] for f, r in zip(flags, rows, strict=True))
print(f"corpus: {len(rows)} texts ({sum(r['secret'] for r in rows)} secrets)")
print(f"precision: {tp / max(tp + fp, 1):.3f}  recall: {tp / max(tp + fn, 1):.3f}")
print(f"time per text: {elapsed / len(rows) * 1e6:.1f} us")
for f, r in zip(flags, rows, strict=True):
    if f != r["secret"]:
        print("MISS" if r["secret"] else "FALSE ALARM", r["text"])
