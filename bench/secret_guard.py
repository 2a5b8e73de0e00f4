"""Precision and recall of the secret guard, its false alarms on numbers, and its worst case.

Three measures, all offline and deterministic:

1. The labelled corpus ``tests/data/secret_corpus.jsonl`` (written with the first rules: a
   regression check) and ``bench/data/secret_cases_helper.jsonl`` (104 secrets and 54
   harmless facts written by a helper of this project to find what the rules miss; not
   public data). Each: precision, recall and what is wrong.
2. How often harmless, realistically shaped numbers (order, phone, ISBN, IMEI numbers, epoch
   milliseconds, ids, tracking numbers, dates) are refused as payment cards: 2,000 random
   ones of each shape, seed 7.
3. The slowest of a few adversarial 2,000-character inputs (``max_fact_chars``), so a rule
   that backtracks badly shows up here rather than in production.

Run: ``python bench/secret_guard.py``.
"""

import json
import random
import time
from pathlib import Path

from langchain_ltm.guard import find_secret

ROOT = Path(__file__).parent.parent
SETS = {
    "regression corpus (tests/data/secret_corpus.jsonl)": ROOT / "tests/data/secret_corpus.jsonl",
    "helper's cases (bench/data/secret_cases_helper.jsonl)": (
        ROOT / "bench/data/secret_cases_helper.jsonl"
    ),
}


def labelled(name: str, path: Path) -> None:
    rows = [json.loads(line) for line in path.open(encoding="utf-8")]
    start = time.perf_counter()
    flags = [find_secret(r["text"]) is not None for r in rows]
    elapsed = time.perf_counter() - start
    tp = sum(f and r["secret"] for f, r in zip(flags, rows, strict=True))
    fp = sum(f and not r["secret"] for f, r in zip(flags, rows, strict=True))
    fn = sum(not f and r["secret"] for f, r in zip(flags, rows, strict=True))
    print(f"{name}: {len(rows)} texts ({sum(r['secret'] for r in rows)} secrets)")
    print(f"  precision: {tp / max(tp + fp, 1):.3f}  recall: {tp / max(tp + fn, 1):.3f}")
    print(f"  missed: {fn}  false alarms: {fp}  time per text: {elapsed / len(rows) * 1e6:.1f} us")
    for f, r in zip(flags, rows, strict=True):
        if f != r["secret"]:
            print("   ", "MISS" if r["secret"] else "FALSE ALARM", repr(r["text"]))


def number_shapes() -> None:
    rng = random.Random(7)

    def d(n: int) -> str:
        return "".join(rng.choice("0123456789") for _ in range(n))

    def isbn13() -> str:
        body = "978" + d(9)
        s = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(body))
        b = body + str((10 - s % 10) % 10)
        return f"{b[:3]}-{b[3]}-{b[4:8]}-{b[8:12]}-{b[12]}"

    def imei() -> str:  # 14 digits and a Luhn check digit
        body = d(14)
        return next(body + c for c in "0123456789" if _luhn(body + c))

    def date() -> str:
        return f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"

    shapes = {
        "Amazon order ddd-ddddddd-ddddddd": lambda: f"Amazon order #{d(3)}-{d(7)}-{d(7)}",
        "phone 0044 20 dddd dddd": lambda: f"Office phone 0044 20 {d(4)} {d(4)}",
        "phone 0049 15d dddd dddd": lambda: f"Mobile 0049 15{d(1)} {d(4)} {d(4)}",
        "ISBN-13 with dashes": lambda: f"Reading ISBN {isbn13()}",
        "IMEI (15 digits, Luhn-valid)": lambda: f"Phone IMEI {imei()}",
        "snowflake id (18 digits)": lambda: f"Discord user id 3{d(17)}",
        "epoch ms (13 digits)": lambda: f"Deployed at epoch ms 17{d(11)}",
        "16-digit order number": lambda: f"Order number {d(16)}",
        "16 digits grouped 4-4-4-4": lambda: f"Reference {d(4)} {d(4)} {d(4)} {d(4)}",
        "USPS tracking 22 digits grouped": lambda: (
            f"USPS tracking 9400 {d(4)} {d(4)} {d(4)} {d(4)} {d(2)}"
        ),
        "two ISO dates": lambda: f"Vacation {date()} {date()}",
    }
    print("harmless numbers refused as cards (2,000 of each shape):")
    for name, make in shapes.items():
        texts = [make() for _ in range(2000)]
        refused = [t for t in texts if find_secret(t)]
        example = f"  e.g. {refused[0]!r}" if refused else ""
        print(f"  {len(refused) / len(texts):6.2%}  {name}{example}")


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


def worst_case() -> None:
    inputs = {
        "digits and spaces": "1 " * 1000,
        "one digit run": "4" * 2000,
        "4-digit groups": "4111 " * 400,
        "dotted digits": "4.1" * 667,
        "upper case run": "AB12" + "C" * 1996,
        "IBAN-like run": "DE89 " * 400,
        "password words": "password " * 222,
        "password for the": "password for the " * 117,
        "PIN words": "PIN " * 500,
        "identifier chars": "a_" * 1000,
        "env names": "DB_PASSWORD_" * 166,
        "URL-like": "a://b:" * 333,
        "AWS secret words": "aws secret " * 181,
        "ssn words": ("ssn " + "x" * 19) * 80,
        "hex run": "0x" + "a" * 1998,
        "private key words": "private key " * 166,
        "sk- run": "sk-" + "a-" * 998,
        "dashes": "-" * 2000,
        "every keyword": "password for pin code token key: secret aws login / pass= " * 35,
        "AWS secret and base64": "aws secret " + "aB3/" * 497,
        "URL credentials": "a://" + "b:" * 998,
        "quoted values": "password 'ab12' " * 125,
    }
    worst = []
    for name, text in inputs.items():
        text = text[:2000]
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            find_secret(text)
            best = min(best, time.perf_counter() - start)
        worst.append((best, name))
    worst.sort(reverse=True)
    print("slowest adversarial 2,000-character inputs (best of 3):")
    for seconds, name in worst[:5]:
        print(f"  {seconds * 1e3:7.2f} ms  {name}")


if __name__ == "__main__":
    for set_name, set_path in SETS.items():
        labelled(set_name, set_path)
    number_shapes()
    worst_case()
