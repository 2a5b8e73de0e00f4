"""Several processes remembering paraphrases of one fact at once end with one fact.

Exact dedup alone (the UNIQUE content hash) cannot do this: the paraphrases have different
hashes, so without the per-user advisory lock around the whole decide-and-write every
process reads "nothing similar yet" and creates its own fact. Each worker is a real Python
process with its own store on the same table; they start together on a signal.
"""

from __future__ import annotations

from langchain_ltm import LongTermMemoryStore
from tests.fakes import KeywordEmbeddings
from tests.processes import run_together

WORKER = """
import sys
from langchain_ltm import LongTermMemoryStore
from tests.fakes import KeywordEmbeddings

url, table, text = sys.argv[1], sys.argv[2], sys.argv[3]
store = LongTermMemoryStore.from_postgres(url, KeywordEmbeddings(dims=64), table=table,
                                          merge_threshold=0.6)
store.list_all("warm-up")  # connect before the start signal
print("ready", flush=True)
sys.stdin.readline()
result = store.remember("alice", text)
print(result.action, result.fact.id, flush=True)
store.close()
"""

# every pair shares 5 of 6 words: cosine about 0.83 with KeywordEmbeddings, above 0.8
# each one changes the value of the others (an update in any order)
PARAPHRASES = [f"I have {n} cats at home" for n in range(1, 7)]


def test_processes_remembering_paraphrases_end_with_one_fact(make_backend, pg_url):
    backend = make_backend(dims=64)
    table = backend.tables.table
    outputs = run_together([[WORKER, pg_url, table, text] for text in PARAPHRASES], timeout=120)
    actions = sorted(out.split()[0] for out in outputs)
    assert actions == ["created"] + ["updated"] * (len(PARAPHRASES) - 1)
    assert len({out.split()[1] for out in outputs}) == 1  # every process hit one fact
    store = LongTermMemoryStore(backend, embeddings=KeywordEmbeddings(dims=64))
    (fact,) = store.list_all("alice")
    # nothing a process said is lost: the other five texts are its earlier versions
    assert sorted([fact.content, *(v.content for v in fact.history)]) == sorted(PARAPHRASES)
