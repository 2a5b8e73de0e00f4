"""The per-user fact API on the in-memory engine, sync and async."""

from __future__ import annotations

import asyncio
import json
import threading

import numpy as np
import pytest
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_ltm import (
    EmbeddingDimensionError,
    FactNotFoundError,
    InvalidFactError,
    InvalidUserIdError,
    LongTermMemoryStore,
    content_hash,
    normalize_fact,
)
from langchain_ltm._steps import run_async
from tests.fakes import KeywordEmbeddings


@pytest.fixture
def emb():
    return KeywordEmbeddings(dims=64)


@pytest.fixture
def store(emb):
    return LongTermMemoryStore(InMemoryVectorStore(emb), upsert_threshold=0.8)


@pytest.fixture(params=["sync", "async"])
def mem(request, store):
    """The fact API as coroutines, through the sync methods or their async twins."""

    class API:
        def __getattr__(self, name):
            if request.param == "async":
                return getattr(store, "a" + name)

            async def run(*args, **kwargs):
                return getattr(store, name)(*args, **kwargs)

            return run

    return API()


def test_normalization_ignores_case_space_width_and_trailing_punctuation():
    assert normalize_fact("  I  prefer\tSpanish!! ") == "i prefer spanish"
    assert content_hash("I prefer Spanish") == content_hash("i prefer spanish.")
    assert content_hash("ＩＢＭ rocks") == content_hash("IBM rocks")  # NFKC
    assert content_hash("I prefer Spanish") != content_hash("I prefer French")


async def test_a_text_that_folds_to_a_stored_one_is_its_duplicate_and_nothing_is_refused():
    """NFKC reads "10²" as "102" and case folding "Maßen" as "massen": one hash, so the
    second is a duplicate (a known limit). A release that kept them apart wrote other
    hashes for the same texts, and Postgres (one current fact per hash) then refused
    every remember of the folded text; the hashes stay as every release wrote them."""
    assert content_hash("I scored 10² points") == content_hash("I scored 102 points")
    assert content_hash("Ich trinke Alkohol in Maßen") == content_hash(
        "Ich trinke Alkohol in Massen"
    )
    store = LongTermMemoryStore(InMemoryVectorStore(KeywordEmbeddings(dims=64)))
    await store.aremember("u", "I scored 10² points")
    assert (await store.aremember("u", "I scored 102 points")).action == "duplicate"
    assert [f.content for f in await store.alist_all("u")] == ["I scored 10² points"]


async def test_exact_duplicate_is_recognised(mem):
    first = await mem.remember("u1", "I prefer answers in Spanish")
    again = await mem.remember("u1", "  i prefer answers in SPANISH. ")
    assert (first.action, again.action) == ("created", "duplicate")
    assert again.fact.id == first.fact.id and again.similarity == 1.0
    assert [f.content for f in await mem.list_all("u1")] == ["I prefer answers in Spanish"]


async def test_similar_fact_updates_in_place(mem, store):
    created = await mem.remember("u1", "I like green tea")
    before = store.get(store.user_namespace("u1"), created.fact.id)
    updated = await mem.remember("u1", "I like green tea a lot")
    assert updated.action == "updated"
    assert updated.fact.id == created.fact.id
    assert updated.previous == "I like green tea"
    assert updated.similarity >= store.upsert_threshold
    after = store.get(store.user_namespace("u1"), created.fact.id)
    assert after.created_at == before.created_at and after.updated_at > before.updated_at
    assert after.value["content"] == "I like green tea a lot"
    (fact,) = await mem.list_all("u1")
    assert [v.content for v in fact.history] == ["I like green tea"]
    assert fact.history[0].valid_to == fact.valid_from == after.updated_at
    assert [v.content for v in await mem.history("u1", fact.id)] == [
        "I like green tea",
        "I like green tea a lot",
    ]


async def test_below_threshold_creates_a_new_fact(mem):
    await mem.remember("u1", "I like green tea")
    other = await mem.remember("u1", "my manager is called Dana")
    assert other.action == "created" and other.similarity is None
    assert len(await mem.list_all("u1")) == 2


async def test_history_keeps_every_version_by_default(emb):
    store = LongTermMemoryStore(InMemoryVectorStore(emb), upsert_threshold=0.5)
    texts = [f"I like green tea {'very ' * n}much" for n in range(8)]
    for text in texts:
        result = await store.aremember("u1", text)
    assert result.action == "updated"
    (fact,) = await store.alist_all("u1")
    assert [v.content for v in fact.history] == texts[:-1] and fact.content == texts[-1]
    assert [v.content for v in result.fact.history] == texts[:-1]
    starts = [v.valid_from for v in fact.versions]
    assert starts == sorted(starts)
    assert all(v.valid_to == nxt.valid_from for v, nxt in zip(fact.history, fact.versions[1:]))


async def test_history_limit_and_prune_are_explicit(emb):
    store = LongTermMemoryStore(InMemoryVectorStore(emb), upsert_threshold=0.5, history_limit=2)
    for n in range(5):
        await store.aremember("u1", f"I like green tea {'very ' * n}much")
    (fact,) = await store.alist_all("u1")
    assert [v.content for v in fact.history] == [
        "I like green tea very very much",
        "I like green tea very very very much",
    ]
    assert await store.aprune_history("u1", keep=1) == 1
    assert [v.content for v in (await store.alist_all("u1"))[0].history] == [
        "I like green tea very very very much"
    ]
    assert store.prune_history("u1", fact.id) == 1
    assert store.history("u1", fact.id) == [store.list_all("u1")[0].versions[-1]]


async def test_batch_is_one_embedding_call_and_decided_in_order(mem, emb):
    calls = emb.document_calls
    results = await mem.remember(
        "u1",
        [
            "I live in Paris",
            "I like green tea",
            "i live in paris!",  # exact duplicate of the first, in the same batch
            "I like green tea a lot",  # updates the second
            "my cat is called Tom",
        ],
    )
    assert emb.document_calls == calls + 1
    assert [r.action for r in results] == ["created", "created", "duplicate", "updated", "created"]
    assert results[2].fact.id == results[0].fact.id
    assert results[3].fact.id == results[1].fact.id and results[3].previous == "I like green tea"
    contents = sorted(f.content for f in await mem.list_all("u1"))
    assert contents == ["I like green tea a lot", "I live in Paris", "my cat is called Tom"]


def test_a_batch_is_decided_the_same_whatever_block_its_similarities_come_in(emb, monkeypatch):
    """A batch's cosines were one n x n matrix: 10 GB at 50,000 texts, and OpenBLAS
    crashed the process (SIGSEGV) past 46,341. They come a block of rows at a time now."""
    from langchain_ltm.facts.decision import BatchSimilarities

    texts = [
        "I live in Paris",
        "I like green tea",
        "i live in paris!",
        "I like green tea a lot",
        "my cat is called Tom",
        "I like green tea a lot with honey",
        "my cat is called Tom and is grey",
    ]
    outcomes = []
    for block in (1024, 1, 2, 3):
        monkeypatch.setattr(BatchSimilarities, "BLOCK", block)
        store = LongTermMemoryStore(InMemoryVectorStore(emb))
        results = store.remember("u1", texts)
        ids = [r.fact.id if r.fact else None for r in results]
        outcomes.append([(r.action, ids.index(i)) for r, i in zip(results, ids, strict=True)])
    assert outcomes[0][:4] == [("created", 0), ("created", 1), ("duplicate", 0), ("updated", 1)]
    assert outcomes[1:] == outcomes[:1] * 3, outcomes
    vectors = np.asarray(emb.embed_documents(texts), dtype=np.float32)
    sims, full = BatchSimilarities(vectors), vectors @ vectors.T
    assert all(np.allclose(sims.row(i), full[i], atol=1e-6) for i in (0, 6, 3, 1, 5))


async def test_a_fact_updated_away_can_come_back_as_new(emb):
    store = LongTermMemoryStore(InMemoryVectorStore(emb), upsert_threshold=0.7)
    paris = store.remember("u1", "I live in Paris")
    moved = store.remember("u1", "I live in Berlin")  # shares 3 of 4 words: ~0.75
    assert moved.action == "updated" and moved.fact.id == paris.fact.id
    strict = LongTermMemoryStore(  # "lives in" is an attribute: strict on both thresholds
        store.backend, embeddings=emb, upsert_threshold=0.99, review_threshold=0.99
    )
    back = strict.remember("u1", "I live in Paris")
    assert back.action == "created" and back.fact.id != paris.fact.id  # key was taken
    assert len(strict.list_all("u1")) == 2


async def test_users_are_isolated(mem):
    await mem.remember("alice@example.com", "I like green tea")
    bob = await mem.remember("bob", "I like green tea")
    assert bob.action == "created"  # not a duplicate of alice's fact
    assert await mem.recall("carol", ["green tea", "tea"]) == []
    assert [f.user_id for f in await mem.recall("bob", "tea")] == ["bob"]
    alice_fact = (await mem.list_all("alice@example.com"))[0]
    assert await mem.forget("bob", alice_fact.id) is False  # bob cannot delete alice's fact
    assert await mem.list_all("alice@example.com") == [alice_fact]


async def test_prefix_label_users_do_not_see_each_other(mem):
    for uid in ["u1", "u10", "u_1", "u%1", "a.b", "a%2Eb", "U1"]:
        await mem.remember(uid, f"secret of {uid}")
    for uid in ["u1", "u10", "u_1", "u%1", "a.b", "a%2Eb", "U1"]:
        facts = await mem.recall(uid, ["secret of", "secret"], limit=10)
        assert [f.content for f in facts] == [f"secret of {uid}"]


async def test_recall_merges_phrasings_without_duplicates(mem, emb):
    await mem.remember(
        "u1", ["I prefer answers in Spanish", "I work on the payments team", "my cat is Tom"]
    )
    calls = emb.document_calls
    facts = await mem.recall("u1", ["answers in Spanish", "which language", "Spanish"], limit=5)
    assert emb.document_calls == calls + 1  # three phrasings, one call
    ids = [f.id for f in facts]
    assert len(ids) == len(set(ids))
    assert facts[0].content == "I prefer answers in Spanish"
    assert all(a.score >= b.score for a, b in zip(facts, facts[1:]))
    assert len(await mem.recall("u1", ["Spanish", "payments", "cat"], limit=2)) == 2


async def test_forget_list_clear_export(mem):
    results = await mem.remember("u1", ["fact one", "another thing", "third item here"])
    assert await mem.forget("u1", results[0].fact.id) is True
    assert await mem.forget("u1", results[0].fact.id) is False
    assert await mem.forget("u1", "no-such-id") is False
    assert len(await mem.list_all("u1")) == 2
    exported = await mem.export_user("u1")
    assert json.loads(json.dumps(exported)) == exported
    assert {e["content"] for e in exported} == {"another thing", "third item here"}
    assert await mem.clear_user("u1") == 2
    assert await mem.list_all("u1") == []
    assert await mem.clear_user("u1") == 0


def write_twice(monkeypatch, backend):
    """Each write of ``backend`` runs twice, answering with the second run's count.

    What the Postgres connector does when the answer to a COMMIT is lost: the batch runs
    again on a fresh connection, and deletes find their rows already gone.
    """
    write, awrite = backend.write, backend.awrite

    def twice(upserts, deletes):
        write(upserts, deletes)
        return write(upserts, deletes)

    async def atwice(upserts, deletes):
        await awrite(upserts, deletes)
        return await awrite(upserts, deletes)

    monkeypatch.setattr(backend, "write", twice)
    monkeypatch.setattr(backend, "awrite", atwice)


async def test_deletes_answer_what_they_found_not_what_a_retried_write_counted(
    mem, store, monkeypatch
):
    """forget said False, clear_user and prune_history 0, when their write ran again after a
    lost COMMIT answer (the second run deletes nothing): they answered with the engine's
    count, not with what they had found and deleted under the user's lock."""
    paris = (await mem.remember("u1", "I live in Paris")).fact
    await mem.update_fact("u1", paris.id, "I live in Berlin")
    await mem.update_fact("u1", paris.id, "I live in Rome")
    await mem.remember("u1", ["I listen to jazz", "My sister is allergic to peanuts"])
    write_twice(monkeypatch, store.backend)
    assert await mem.prune_history("u1", keep=0) == 2  # Paris and Berlin
    assert [f.history for f in await mem.list_all("u1")] == [(), (), ()]
    assert await mem.prune_history("u1") == 0
    assert await mem.forget("u1", paris.id) is True
    assert await mem.forget("u1", paris.id) is False
    assert len(await mem.list_all("u1")) == 2
    assert await mem.clear_user("u1") == 2
    assert await mem.list_all("u1") == []
    assert await mem.clear_user("u1") == 0


async def test_forget_takes_only_a_fact_id(mem, store):
    """The key of an earlier version (``id@1``, from a search of versions) deleted that one
    text and said True; the key of another client's item without a text deleted it too."""
    fact = (await mem.remember("u1", "I have one kid")).fact
    await mem.update_fact("u1", fact.id, "I have two kids now")
    namespace = store.user_namespace("u1")
    client = hasattr(store, "put")  # a LongTermMemoryStore; FactStore has no BaseStore API
    if client:
        store.put(namespace, "profile", {"name": "Ann"})
    for key in (f"{fact.id}@1", "profile"):
        assert await mem.forget("u1", key) is False
    assert [v.content for v in (await mem.history("u1", fact.id))] == [
        "I have one kid",
        "I have two kids now",
    ]
    if client:
        assert store.get(namespace, "profile").value == {"name": "Ann"}
    assert await mem.forget("u1", fact.id) is True
    assert store.backend.count(namespace) == (1 if client else 0)  # its versions went too


@pytest.mark.parametrize("fact_id", ["\ud800", "f\udfffact"])
async def test_an_id_with_a_lone_surrogate_is_no_fact(mem, store, fact_id):
    """A model's JSON can carry a lone surrogate into a fact id: SQLite and Postgres raised
    ``UnicodeEncodeError`` reading it (memory and Qdrant answered "no fact")."""
    fact = (await mem.remember("u1", "I have one kid")).fact
    with pytest.raises(FactNotFoundError):
        await mem.update_fact("u1", fact_id, "I have two kids")
    assert await mem.forget("u1", fact_id) is False
    assert await mem.history("u1", fact_id) == []
    assert await mem.prune_history("u1", fact_id) == 0
    assert [f.content for f in await mem.list_all("u1")] == [fact.content]


def test_a_label_the_fact_api_never_makes_is_no_users(store):
    """A client that fills ("memories", "{user_id}") with a raw id (LangMem) writes user
    "50%" under the label "50%", where the fact API keeps the facts of nobody ("50%"'s are
    under "50%25"): it was taken for user "50%" (listed as a user, searched as one)."""
    store.put(("memories", "50%"), "m1", {"content": "Raw label memory"})
    store.remember("50%", "Likes tea")
    assert store.user_id_of(("memories", "50%")) is None
    assert store.user_id_of(store.user_namespace("50%")) == "50%"
    assert store.user_id_of(("memories", "a%2Eb")) == "a.b"
    assert store.user_id_of(("memories", "")) is None
    assert store.user_id_of(("memories", "   ")) is None
    assert [f.content for f in store.list_all("50%")] == ["Likes tea"]
    assert [i.key for i in store.search(("memories", "50%"))] == ["m1"]
    # still a namespace of facts by its shape: a put over m1 keeps the text it replaces,
    # and a search shows the current text only (as under any user's label)
    store.put(("memories", "50%"), "m1", {"content": "Raw label memory, changed"})
    found = store.search(("memories", "50%"), query="raw label memory")
    assert [(i.key, i.value["content"]) for i in found] == [("m1", "Raw label memory, changed")]
    assert store.get(("memories", "50%"), "m1@1").value["content"] == "Raw label memory"


async def test_facts_are_base_store_items(store):
    store.remember("a.b@example.com", "likes tea")
    namespace = store.user_namespace("a.b@example.com")
    assert store.user_id_of(namespace) == "a.b@example.com"
    assert [i.value["content"] for i in store.search(namespace)] == ["likes tea"]
    store.put(namespace, "manual", {"content": "written through BaseStore"}, index=["content"])
    assert {f.content for f in store.list_all("a.b@example.com")} == {
        "likes tea",
        "written through BaseStore",
    }
    assert namespace in store.list_namespaces(prefix=("memories",))


@pytest.mark.parametrize(
    "fact",
    ["", "   \n", 42, None, "x" * 2001, "nul\x00byte", "lone \ud800 surrogate", "?!...", b"bytes"],
)
async def test_bad_facts_raise_and_store_nothing(mem, fact):
    with pytest.raises(InvalidFactError):
        await mem.remember("u1", ["a good fact", fact])
    assert await mem.list_all("u1") == []


@pytest.mark.parametrize("user_id", [None, "", 7])
async def test_bad_user_id_raises_before_any_io(mem, emb, user_id):
    with pytest.raises(InvalidUserIdError):
        await mem.remember(user_id, "a fact")
    assert emb.texts_embedded == 0


async def test_recall_input_limits(mem):
    with pytest.raises(InvalidFactError, match="limit is 32"):
        await mem.recall("u1", ["q"] * 10_000)
    with pytest.raises(InvalidFactError):
        await mem.recall("u1", [])
    with pytest.raises(ValueError, match="limit"):
        await mem.recall("u1", "q", limit=-1)
    with pytest.raises(ValueError, match="limit"):
        await mem.recall("u1", "q", limit=10**9)


async def test_tied_scores_give_one_answer_on_every_engine(mem, emb):
    """Facts scoring the same came back in the engine's order: insertion (memory, Qdrant:
    "zz" first) or namespace and key (SQLite, Postgres, a vectorstore: "aa"), so ``limit``
    kept other facts on each engine. Ties go by fact id everywhere, also after a rewrite."""
    question = "what do I drink?"
    emb.vectors[question] = [1.0] + [0.0] * 63
    texts = {"zz": "Drinks green tea", "mm": "Drinks black coffee", "aa": "Drinks mate"}
    for text in texts.values():
        emb.vectors[text] = [1.0, 1.0] + [0.0] * 62  # one cosine, 0.7071, to the question
    said = "2021-01-01T00:00:00+00:00"
    records = [
        {"id": key, "content": text, "created_at": said, "updated_at": said, "valid_from": said}
        for key, text in texts.items()  # written zz, mm, aa
    ]
    await mem.import_user("u1", records)
    ties = [f.score for f in await mem.recall("u1", question, limit=3)]
    assert len(set(ties)) == 1
    assert [f.id for f in await mem.recall("u1", question, limit=1)] == ["aa"]
    assert [f.id for f in await mem.recall("u1", question, limit=3)] == ["aa", "mm", "zz"]
    assert [f.id for f in await mem.recall("u1", [question, "Drinks"], limit=2)] == ["aa", "mm"]
    pinning = await mem.remember("u1", "Drinks green tea", pinned=True)  # rewrites zz
    assert pinning.fact.id == "zz" and pinning.fact.pinned
    assert [f.id for f in await mem.recall("u1", question, limit=1)] == ["aa"]
    assert [f.id for f in await mem.recall("u1", question, limit=2)] == ["aa", "mm"]
    # Several phrasings, the tied facts past the first window: the first search sent both
    # phrasings, the widened one only one, and a matrix product of two queries summed in
    # another order than one of a single query, so one vector scored a float32 step apart
    # in the two (0.6375983 and 0.6375982); recall kept the higher copy and ranked by it:
    # limit=1 named another tied fact than limit=12 put first (memory, Qdrant, SQLite).
    for seed in range(8):
        rng = np.random.default_rng(seed)
        user, asked = f"tied{seed}", [f"which drink {seed}?", f"what do I sip {seed}?"]
        stripes = [1.0 if i % 3 == 0 else (2.0 if i % 5 == 0 else 0.0) for i in range(64)]
        mixed = rng.integers(0, 3, 64).astype(float).tolist()
        records = []
        for k, fact_id in enumerate(f"{c}{c}" for c in "zyxwvutsrqpo"):  # against id order
            text = f"Sips drink number {k} of {seed}"
            emb.vectors[text] = stripes if k % 2 else mixed
            records.append({"id": fact_id, "content": text, "created_at": said, "valid_from": said})
        await mem.import_user(user, records)
        for question in asked:
            emb.vectors[question] = rng.integers(0, 2, 64).astype(float).tolist()
        every = [(f.id, f.score) for f in await mem.recall(user, asked, limit=12)]
        assert every == sorted(every, key=lambda hit: (-hit[1], hit[0]))
        for limit in range(1, 12):
            got = [(f.id, f.score) for f in await mem.recall(user, asked, limit=limit)]
            assert got == every[:limit], (seed, limit)


async def test_one_text_as_a_facts_version_and_anothers_current_text_ties_by_fact_id(mem, emb):
    """``remember(["Likes tea", "Likes green tea", "Likes tea"])`` leaves "Likes tea" as
    fact A's earlier version and as fact B's text: one vector twice. With
    ``include_history`` the in-memory engine scored the version's copy (its namespace's
    block, one row) 0.09945032 and B's (a block of several rows) 0.09945035: BLAS sums a
    row in another order depending on how many rows its matrix has, and where the row
    sits. The order then followed that noise, not the fact id, so ``limit`` named another
    fact than on other engines (SQLite's one matrix did the same, for other rows)."""
    drinks = "tea mate cocoa juice milk cider kefir soda lassi chai kvass mead sake cola port"
    drinks += " rum gin ale stout porter lager perry grog punch"  # a text per seed: no cache hit

    def cosine(a, b):
        return float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b))

    for seed, drink in enumerate(drinks.split()):
        rng = np.random.default_rng(seed)
        user = f"tea{seed}"
        plain, green = f"Likes {drink}", f"Likes green {drink}"
        base = rng.normal(size=64)
        emb.vectors[plain] = base.tolist()
        emb.vectors[green] = (base + 0.1 * rng.normal(size=64)).tolist()  # an update of it
        others = [f"Plays board game {w} on {d}" for w in "abcdefgh" for d in ("sunday",)]
        others = others[: 1 + seed % 8]
        for text in others:
            emb.vectors[text] = rng.normal(size=64).tolist()
        question, asked = f"which city {seed}?", rng.normal(size=64)
        if cosine(asked, emb.vectors[plain]) < cosine(asked, emb.vectors[green]):
            asked = -asked  # the version outscores its fact's text: recall shows it
        emb.vectors[question] = asked.tolist()
        await mem.remember(user, others)
        said = await mem.remember(user, [plain, green, plain])
        assert [r.action for r in said] == ["created", "updated", "created"], seed
        every = await mem.recall(user, question, limit=12, include_history=True)
        tied = [f for f in every if f.content == plain]
        assert len(tied) == 2 and {f.superseded for f in tied} == {True, False}
        assert tied[0].score == tied[1].score, seed
        assert tied[0].id < tied[1].id, seed
        first = every.index(tied[0])
        got = await mem.recall(user, question, limit=first + 1, include_history=True)
        assert [f.id for f in got] == [f.id for f in every[: first + 1]], seed


@pytest.mark.parametrize("numpy_major", [2, 1])
def test_a_vector_scores_the_same_whatever_matrix_it_sits_in(numpy_major, monkeypatch):
    """The in-memory engine and SQLite score a scope with ``cosines``. Through BLAS's matrix
    product one vector's score changed in its low bits with the number of rows of its
    matrix (13.953947 alone, 13.953951 of two rows, 13.953945 of four), with its row and
    with the other queries, so exact ties ranked by that noise. Before numpy 2 (no
    ``np.vecdot``) the engines use ``np.einsum``: checked here too."""
    from langchain_ltm.backends import _index

    if numpy_major == 1:
        monkeypatch.setattr(_index, "_row_dots", _index._einsum_dots)
    rng = np.random.default_rng(1)
    for dims in (64, 384):
        for _ in range(10):
            query, other = rng.normal(size=(2, dims)).astype(np.float32)
            vector = rng.normal(size=dims).astype(np.float32)
            seen = set()
            for rows in (1, 2, 3, 4, 5, 8, 9, 17, 100):
                for row in {0, rows // 2, rows - 1}:
                    matrix = rng.normal(size=(rows, dims)).astype(np.float32)
                    matrix[row] = vector
                    for shift in (0, 4, 8, 12):  # where the rows start: SQLite's bytes
                        raw = bytes(shift) + matrix.tobytes()
                        moved = np.frombuffer(raw, "<f4", offset=shift).reshape(rows, dims)
                        alone = _index.cosines(moved, query[None, :])
                        both = _index.cosines(moved, np.stack([other, query]))
                        seen |= {float(alone[row, 0]), float(both[row, 1])}
            assert len(seen) == 1, (dims, sorted(seen))


async def test_a_recall_without_ties_is_one_ranked_search(mem, store, emb, monkeypatch):
    """Ties at a window's edge widen it (see the test above); a window of exactly ``limit``
    ended on the limit-th fact itself, a tie with itself, so every recall searched twice."""
    emb.vectors["what do I drink?"] = [1.0] + [0.0] * 63
    drinks = [f"Drinks tea number {k}" for k in range(12)]
    for k, text in enumerate(drinks):
        emb.vectors[text] = [1.0 - k / 20, 0.0] + [1.0 if i == k else 0.0 for i in range(62)]
    await mem.remember("u1", drinks)
    backend = store.backend
    searches = []
    inside = []  # an engine's asearch may run its search: count the outer call
    search, asearch = backend.search, backend.asearch

    def counted(request):
        if not inside:
            searches.append(request.vectors is not None)
        return search(request)

    async def acounted(request):
        searches.append(request.vectors is not None)
        inside.append(True)
        try:
            return await asearch(request)
        finally:
            inside.pop()

    monkeypatch.setattr(backend, "search", counted)
    monkeypatch.setattr(backend, "asearch", acounted)
    for limit in (1, 5):
        searches.clear()
        got = await mem.recall("u1", "what do I drink?", limit=limit)
        assert [f.content for f in got] == drinks[:limit]
        assert searches == [True]


@pytest.mark.parametrize(
    ("query", "named"),
    [
        (b"green tea", "bytes"),
        (None, "NoneType"),
        (42, "int"),
        ({"green tea": 1}, "dict"),
        ({"tea"}, "set"),
    ],
)
async def test_recall_refuses_a_query_that_is_not_text_naming_its_type(mem, emb, query, named):
    """bytes read as ints ("got int"), None and 42 raised a bare TypeError, and a dict or
    a set was searched by its keys: recall takes a str or a list/tuple of str, as remember."""
    await mem.remember("u1", "Likes green tea")
    embedded = emb.texts_embedded
    with pytest.raises(InvalidFactError, match=rf"a str or a list of str, got {named}\."):
        await mem.recall("u1", query)
    assert emb.texts_embedded == embedded
    assert [f.content for f in await mem.recall("u1", ("green tea",))] == ["Likes green tea"]


def test_changed_embedding_model_is_a_clear_error(store):
    store.remember("u1", "I like green tea")
    other_model = LongTermMemoryStore(store.backend, embeddings=KeywordEmbeddings(dims=32))
    with pytest.raises(EmbeddingDimensionError, match="embedding model changed"):
        other_model.remember("u1", "I like coffee")
    with pytest.raises(EmbeddingDimensionError):
        other_model.recall("u1", "coffee")
    assert [f.content for f in store.list_all("u1")] == ["I like green tea"]


def test_concurrent_identical_remembers_leave_one_fact_threads(store):
    barrier = threading.Barrier(10)
    actions = []

    def worker():
        barrier.wait()
        actions.append(store.remember("u1", "I prefer answers in Spanish").action)

    threads = [threading.Thread(target=worker) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(actions) == ["created"] + ["duplicate"] * 9
    assert len(store.list_all("u1")) == 1


async def test_concurrent_identical_remembers_leave_one_fact_asyncio(store):
    results = await asyncio.gather(
        *(store.aremember("u1", "I prefer answers in Spanish") for _ in range(10))
    )
    assert sorted(r.action for r in results) == ["created"] + ["duplicate"] * 9
    assert len(await store.alist_all("u1")) == 1


async def test_cancelled_remember_leaves_the_store_usable(store):
    """A task cancelled while it waits for the user's lock must not leave the lock held."""
    label = store.user_namespace("u1")[-1]
    lock = store._locks.stripe(label)
    lock.acquire()  # another writer holds the user's lock
    task = asyncio.create_task(store.aremember("u1", "I like green tea"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    lock.release()
    result = await asyncio.wait_for(store.aremember("u1", "I like green tea"), timeout=5)
    assert result.action == "created"
    assert len(await store.alist_all("u1")) == 1


async def test_cancelled_recall_leaves_the_store_usable(store):
    await store.aremember("u1", ["I like green tea", "I live in Paris"])
    task = asyncio.create_task(store.arecall("u1", ["tea", "paris"]))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(await asyncio.wait_for(store.arecall("u1", "tea"), timeout=5)) == 2


async def sync_remember_while_held(store, holder: str, caller: str, match: str) -> list[str]:
    """A sync ``remember`` of ``caller`` on the loop's thread while an async write of
    ``holder`` holds its locks on that loop; [the holder's action, "refused"]."""
    label = store.user_namespace(holder)[-1]
    holding, done_checking = asyncio.Event(), asyncio.Event()

    async def writing() -> str:  # an async write of the holder, halfway (awaiting a model)
        held = await run_async(store._locks.acquire(store.backend, label))
        holding.set()
        await done_checking.wait()
        await run_async(store._locks.release(store.backend, held))
        return (await store.aremember(holder, "Likes green tea")).action

    async def sync_meanwhile() -> str:
        await holding.wait()
        try:
            with pytest.raises(RuntimeError, match=match):
                store.remember(caller, "Works on the payments team")
        finally:
            done_checking.set()
        return "refused"

    return await asyncio.wait_for(asyncio.gather(writing(), sync_meanwhile()), timeout=20)


async def test_a_sync_call_on_a_loop_whose_task_holds_the_users_lock_raises_not_hangs(emb):
    store = LongTermMemoryStore(InMemoryVectorStore(emb))
    done = await sync_remember_while_held(store, "alice", "alice", r"Call the a\.\.\. method")
    assert done == ["created", "refused"]
    assert [f.content for f in await store.alist_all("alice")] == ["Likes green tea"]
    assert store.remember("alice", "Works on the payments team").action == "created"  # free now
