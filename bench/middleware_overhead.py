"""What automatic recall by MemoryMiddleware adds to each model call of a create_agent graph.

Setup: the offline all-MiniLM-L6-v2 embeddings (``LocalMiniLMEmbeddings``, the real model on
this CPU), ``LongTermMemoryStore(InMemoryVectorStore(emb))`` holding ``--facts-per-user``
facts for each of ``--users`` users (texts generated from templates with many slots; a few
pinned per user; ingested with ``remember`` in batches of 256, timed but not part of the
figures). Then ``create_agent`` graphs with a scripted chat model that answers at once with
a fixed text (so a turn is one model call and nothing else costs time):

- one without middleware,
- one per configuration in ``CONFIGS`` with ``MemoryMiddleware(store, mode="recall", ...)``:
  before the model call it reads the user's pinned facts, recalls the facts relevant to the
  latest user message (one query embedding + one search) and appends them to the system
  prompt of that call.

Each turn sends a new user message (generated from templates, related to the facts) to
every graph, with the turns spread over the users; a turn is one ``invoke`` on a fresh state
(no checkpointer). Per turn every graph answers the same message, in an order that rotates,
so all of them see the same machine load. Also per turn, the recall itself is timed by
direct calls on the same message with the default options: ``store.pinned`` and
``store.recall`` with the message not cached (embedding + search; the embedding is timed
inside the embeddings object), then again with it cached (the search alone: what a later
model call of the same turn pays, as its latest user message is the same text). After each
call that embedded the message it is dropped from the store's query-embedding cache, so
every graph's recall embeds it too (the counts are printed).

With ``LTM_POSTGRES_URL`` set, the same runs on the Postgres engine (in a temporary schema,
dropped at the end; document vectors are reused from the first ingest).

Usage:
    python bench/middleware_overhead.py                      # 3 users x 1,000 facts, 200 turns
    python bench/middleware_overhead.py --turns 500 --facts-per-user 5000 --users 2
    LTM_POSTGRES_URL=postgresql://... python bench/middleware_overhead.py
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import cycle
from typing import Any

import numpy as np
from _common import clock
from langchain.agents import create_agent
from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.outputs import ChatResult
from langchain_core.vectorstores import InMemoryVectorStore
from pydantic import Field

from langchain_ltm import LongTermMemoryStore, MemoryMiddleware
from langchain_ltm.agents._recall import RecallOptions
from langchain_ltm.embeddings import LocalMiniLMEmbeddings

BATCH = 256
WARMUP = 10  # turns per phase, not measured (ONNX session, first search of a user)
SYSTEM_PROMPT = "You are a helpful assistant."
_D = RecallOptions()
CONFIGS: list[tuple[str, dict[str, Any]]] = [
    (
        f"defaults (recall_limit {_D.limit}, min_score {_D.min_score:g}, max_chars {_D.max_chars})",
        {},
    ),
    ("max_chars=800", {"max_chars": 800}),
    ("recall_limit=10", {"recall_limit": 10}),
    ("recall_limit=10, max_chars=800", {"recall_limit": 10, "max_chars": 800}),
    ("min_score=0.3", {"min_score": 0.3}),
    ("min_score=0.5", {"min_score": 0.5}),
]
CANDIDATES = 2  # candidate texts per wanted fact: a few are versions of earlier ones

# ---- fact and message texts ------------------------------------------------------------------

PEOPLE = [
    "My sister", "My brother", "My mother", "My father", "My wife", "My husband", "My son",
    "My daughter", "My manager", "My best friend", "My neighbour", "My grandmother",
    "My cousin", "My colleague Priya", "My roommate", "My older sister", "My younger brother",
    "My aunt", "My uncle", "My boss", "My partner", "My mentor", "My niece", "My nephew",
    "My grandfather", "My stepmother", "My sister-in-law", "My godson", "My friend Ana",
    "My colleague Ben", "My landlord", "My son's teacher", "My wife's brother",
    "My daughter's best friend", "My dentist", "My yoga teacher", "My old flatmate Sam",
    "My team lead", "My twin brother", "My childhood friend Lea",
]  # fmt: skip
CITIES = [
    "Paris", "Berlin", "Lisbon", "Madrid", "Toronto", "Chicago", "Osaka", "Seoul", "Nairobi",
    "Lima", "Oslo", "Dublin", "Krakow", "Austin", "Melbourne", "Porto", "Lyon", "Munich",
    "Valencia", "Denver", "Boston", "Vienna", "Prague", "Sapporo", "Cape Town", "Montreal",
]  # fmt: skip
JOBS = [
    "nurse", "software engineer", "teacher", "architect", "pharmacist", "pilot", "lawyer",
    "chef", "data analyst", "dentist", "carpenter", "journalist", "vet", "accountant",
    "physiotherapist", "graphic designer", "electrician", "librarian", "product manager",
]  # fmt: skip
ALLERGENS = [
    "peanuts", "shellfish", "gluten", "lactose", "eggs", "soy", "sesame", "tree nuts",
    "strawberries", "penicillin", "cat hair", "pollen", "kiwi", "mustard", "celery",
]  # fmt: skip
HOBBIES = [
    "rock climbing", "pottery", "salsa dancing", "chess", "birdwatching", "trail running",
    "baking sourdough", "woodworking", "knitting", "photography", "sailing", "tennis",
    "yoga", "swimming", "painting watercolours", "playing board games", "fishing", "cycling",
]  # fmt: skip
TEAMS = [
    "payments", "search", "mobile", "infrastructure", "data platform", "growth", "security",
    "billing", "identity", "checkout", "recommendations", "customer support tooling",
    "developer experience", "fraud detection", "logistics", "pricing",
]  # fmt: skip
COMPANIES = [
    "a fintech startup", "a large bank", "a hospital group", "an online retailer",
    "a game studio", "a logistics company", "an insurance firm", "a university",
    "a travel agency", "a telecom operator", "a car maker", "a media company",
]  # fmt: skip
DRINKS = [
    "green tea", "black coffee", "oat milk lattes", "espresso", "rooibos", "mint tea",
    "hot chocolate", "sparkling water", "matcha", "chai", "cold brew", "orange juice",
]  # fmt: skip
LANGUAGES = [
    "Spanish", "Japanese", "German", "Portuguese", "Italian", "Korean", "French", "Mandarin",
    "Dutch", "Swedish", "Arabic", "Polish", "Greek", "Turkish", "Hindi",
]  # fmt: skip
PETS = ["dog", "cat", "rabbit", "parrot", "tortoise", "hamster", "goldfish", "ferret"]
PET_NAMES = [
    "Tom", "Luna", "Max", "Milo", "Bella", "Pepper", "Nala", "Oscar", "Biscuit", "Mochi",
    "Rocky", "Ziggy", "Olive", "Toby", "Coco", "Maple",
]  # fmt: skip
CARS = [
    "Toyota Corolla", "Volkswagen Golf", "Honda Civic", "Tesla Model 3", "Ford Focus",
    "Subaru Outback", "Renault Clio", "Mazda 3", "Kia Niro", "Volvo XC40", "Fiat 500",
]  # fmt: skip
MONTHS = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
]  # fmt: skip
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
WAKE_TIMES = ["5:30", "6:00", "6:30", "7:00", "7:15", "7:45", "8:15", "9:00"]
TIMES = ["6:30", "7:00", "7:45", "8:15", "9:00", "9:30", "10:00", "14:00", "16:30", "18:00"]
TIMES_OF_DAY = ["morning", "afternoon", "evening", "late evening"]
TOOLS = [
    "Notion", "Jira", "Figma", "VS Code", "Excel", "Obsidian", "Linear", "Tableau",
    "Postman", "Airtable", "Miro", "Grafana", "PyCharm", "Google Sheets",
]  # fmt: skip
TASKS = [
    "planning sprints", "writing documentation", "tracking expenses", "reviewing designs",
    "taking notes", "debugging APIs", "building dashboards", "running retrospectives",
    "managing the roadmap", "analysing churn", "keeping a reading list",
]  # fmt: skip
GENRES = [
    "science fiction", "historical fiction", "crime novels", "poetry", "biographies",
    "fantasy", "popular science", "graphic novels", "travel writing", "philosophy",
]  # fmt: skip
AUTHORS = [
    "Ursula K. Le Guin", "Haruki Murakami", "Agatha Christie", "Mary Oliver", "Ted Chiang",
    "Hilary Mantel", "Carl Sagan", "Toni Morrison", "Jorge Luis Borges", "Kazuo Ishiguro",
]  # fmt: skip
FOODS = [
    "red meat", "pork", "fried food", "sugar", "dairy", "fish", "spicy food", "mushrooms",
    "olives", "coriander", "processed snacks", "white bread",
]  # fmt: skip
ROOMS = ["kitchen", "bathroom", "living room", "bedroom", "home office", "garage", "attic"]
APPLIANCES = [
    "dishwasher", "fridge", "boiler", "washing machine", "oven", "extractor fan", "radiator",
    "light fixture", "window blind", "desk lamp",
]  # fmt: skip
INSTRUMENTS = ["violin", "drums", "bass guitar", "piano", "saxophone", "cello", "trumpet"]
BANDS = ["jazz trio", "community orchestra", "punk band", "church choir", "folk duo"]
SEASONS = ["spring", "summer", "autumn", "winter"]
COUNTRIES = [
    "Japan", "Peru", "Iceland", "Morocco", "Vietnam", "New Zealand", "Norway", "Mexico",
    "Greece", "Kenya", "Chile", "Portugal", "Canada", "Thailand", "Scotland",
]  # fmt: skip
MEETINGS = ["one-on-one", "team standup", "design review", "planning meeting", "sync call"]
SUBJECTS = [
    "medicine", "law", "mechanical engineering", "art history", "biology", "economics",
    "computer science", "music", "psychology", "architecture",
]  # fmt: skip
PROGLANGS = ["Python", "Rust", "Go", "TypeScript", "Kotlin", "Java", "C++", "Elixir", "Swift"]
EDITORS = ["Neovim", "VS Code", "IntelliJ", "Emacs", "Sublime Text", "Helix", "Zed"]
THEMES = ["a dark", "a light", "a solarized", "a high-contrast", "a gruvbox"]
PLANTS = ["basil", "tomato", "succulent", "orchid", "fern", "chilli", "lavender", "bonsai"]
PLACES = ["balcony", "kitchen windowsill", "office desk", "patio", "bathroom shelf"]
SPORT_TEAMS = [
    "FC Barcelona", "the Chicago Cubs", "Liverpool", "the Toronto Raptors", "Benfica",
    "the All Blacks", "Bayern Munich", "the Boston Celtics", "Ajax", "the Seattle Sounders",
]  # fmt: skip
RACES = ["half marathon", "marathon", "10k", "triathlon", "100 km bike ride", "trail race"]
DISHES = [
    "lasagne", "ramen", "paella", "curry", "tacos", "risotto", "a stir-fry", "pancakes",
    "a Sunday roast", "dumplings", "a salad", "falafel",
]  # fmt: skip
SLOTS: dict[str, list[str]] = {
    "person": PEOPLE, "city": CITIES, "city2": CITIES, "job": JOBS, "allergen": ALLERGENS,
    "hobby": HOBBIES, "team": TEAMS, "company": COMPANIES, "drink": DRINKS, "drink2": DRINKS,
    "language": LANGUAGES, "pet": PETS, "pet_name": PET_NAMES, "car": CARS, "month": MONTHS,
    "weekday": WEEKDAYS, "time": TIMES, "wake": WAKE_TIMES, "timeofday": TIMES_OF_DAY,
    "tool": TOOLS,
    "task": TASKS, "genre": GENRES, "author": AUTHORS, "food": FOODS, "room": ROOMS,
    "appliance": APPLIANCES, "instrument": INSTRUMENTS, "band": BANDS, "season": SEASONS,
    "country": COUNTRIES, "meeting": MEETINGS, "subject": SUBJECTS, "proglang": PROGLANGS,
    "editor": EDITORS, "theme": THEMES, "plant": PLANTS, "place": PLACES,
    "sport_team": SPORT_TEAMS, "race": RACES, "dish": DISHES,
    "n": [str(n) for n in range(2, 16)], "year": [str(y) for y in range(2008, 2025)],
    "day": [str(d) for d in range(1, 29)], "hours": [str(h) for h in range(2, 9)],
}  # fmt: skip

# A fact is a subject and a predicate. Each (subject, predicate) pair is used once per user
# until all are used: real users state many things about many people once, and the store
# keeps facts about different subjects apart ("My sister ..." / "My son ..."), while two
# facts with one subject and one predicate would rightly be versions of one fact.
SUBJECTS = ["", *PEOPLE]  # "": the user ("Is allergic to ...")
PREDICATES = [
    "is allergic to {allergen}",
    "lives in {city}",
    "works as a {job} at {company}",
    "has a birthday on {month} {day}",
    "loves {hobby}",
    "plays the {instrument} in a {band}",
    "is studying {subject} in {city}",
    "has a {pet} named {pet_name}",
    "drinks {drink} every {timeofday}",
    "is visiting from {city} in {month}",
    "is a big fan of {sport_team}",
    "reads mostly {genre}, lately {author}",
    "has not eaten {food} since {year}",
    "is learning {language} on {weekday}s",
    "drives a {year} {car}",
    "is training for a {race} in {month}",
    "grows {plant} on the {place}",
    "cooks {dish} on {weekday}s",
    "is saving up for a trip to {country}",
    "wants to renovate the {room} before {season}",
    "writes {proglang} in {editor}",
    "uses {tool} for {task}",
    "gets up at {wake} on weekdays",
    "has a {meeting} every {weekday} at {time}",
    "moved to {city} in {year}",
    "sleeps badly in {season}",
    "prefers {drink} over {drink2}",
    "is afraid of flying to {country}",
    "goes {hobby} with friends every {weekday}",
    "once lived in {city2} for {n} years",
    "needs a new {appliance} for the {room}",
    "hates {food}",
    "speaks {language} at home",
    "is {n} years into a {subject} degree",
    "volunteers at a {band} concert series",
]
PINNED_TEMPLATES = [
    "My name is {pet_name}",  # pet names double as first names here
    "Prefers answers in {language}",
    "Likes short answers with bullet points",
    "Lives in {city}, {n} hours from the office",
]
MESSAGE_TEMPLATES = [
    "What should I get {person_l} for their birthday in {month}?",
    "Can you suggest a {dish} recipe without {allergen} for dinner on {weekday}?",
    "Plan a long weekend in {city} for me in {season}",
    "Which {language} podcast would help me practise on my commute?",
    "When is my {meeting} this week?",
    "Draft a short update for the {team} team about the {task} work",
    "Any tips for a first {race}? I have {n} weeks left",
    "Recommend a {genre} book like the ones by {author}",
    "How do I fix a noisy {appliance} in the {room}?",
    "What is a good {hobby} routine before work? I get up at {wake}",
    "Help me budget for a trip to {country} next {season}",
    "How often should I water {plant} on a sunny {place}?",
    "Give me a {proglang} snippet to parse dates, I use {editor}",
    "Is {drink} a good idea late in the {timeofday}?",
    "My {pet} {pet_name} seems tired, what could it be?",
    "Compare {tool} and a spreadsheet for {task}",
    "Suggest a gift for {person_l}, who works as a {job}",
    "What can I cook for {person_l} on {weekday} that has no {allergen}?",
    "How do I get from {city} to {city2} cheaply in {month}?",
    "Write a message to {person_l} about our plans for {season}",
]


def _fill(template: str, rng: random.Random) -> str:
    values = {k: rng.choice(v) for k, v in SLOTS.items() if "{" + k + "}" in template}
    if "{person_l}" in template:
        values["person_l"] = rng.choice(PEOPLE).lower()
    return template.format(**values)


def fact_texts(n: int, rng: random.Random) -> list[str]:
    """``n`` distinct facts: every (subject, predicate) pair once, in random order, then again."""
    pairs = [(s, p) for s in SUBJECTS for p in PREDICATES]
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        before = len(out)
        rng.shuffle(pairs)
        for subject, predicate in pairs[: n - len(out)]:
            text = _fill(f"{subject} {predicate}" if subject else predicate, rng)
            text = text[0].upper() + text[1:]
            if text.lower() not in seen:
                seen.add(text.lower())
                out.append(text)
        if len(out) == before:
            raise SystemExit(f"could not generate {n} distinct facts from the templates")
    return out


def unique_texts(templates: Sequence[str], n: int, rng: random.Random, seen: set[str]) -> list[str]:
    """``n`` texts from ``templates`` that are not in ``seen`` (which they are added to)."""
    out: list[str] = []
    for _ in range(n * 50):
        if len(out) == n:
            break
        text = _fill(rng.choice(templates), rng)
        if text.lower() not in seen:
            seen.add(text.lower())
            out.append(text)
    if len(out) < n:
        raise SystemExit(f"could not generate {n} distinct texts from the templates")
    return out


# ---- timed embeddings and the scripted model ---------------------------------------------


class TimedEmbeddings(Embeddings):
    """Wraps an embedding model, timing and counting query embeddings.

    Document vectors are kept (by text) so a second engine's ingest does not pay for them
    again; query vectors are never kept here (the store has its own cache, from which the
    benchmark drops each message after use).
    """

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.query_ns = 0
        self.queries = 0
        self.document_ns = 0
        self._docs: dict[str, list[float]] = {}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        t0 = clock()
        missing = [t for t in dict.fromkeys(texts) if t not in self._docs]
        if missing:
            self._docs.update(zip(missing, self.inner.embed_documents(missing), strict=True))
        self.document_ns += clock() - t0
        return [list(self._docs[t]) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        t0 = clock()
        out = self.inner.embed_query(text)
        self.query_ns += clock() - t0
        self.queries += 1
        return out


class InstantModel(GenericFakeChatModel):
    """Answers every call at once with the same text; records each call's system prompt."""

    messages: Any = Field(default_factory=lambda: cycle(["Sure, here you go."]))
    systems: list[str] = Field(default_factory=list)
    disable_streaming: bool = True

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        first = messages[0] if messages else None
        self.systems.append(str(first.content) if isinstance(first, SystemMessage) else "")
        return super()._generate(messages, stop, run_manager, **kw)


# The store's query-embedding cache is private; a benchmark of cache misses has to reach it.
# Documents and queries share one LRU keyed by (is_query, hash): only query entries go.


def clear_query_cache(store: LongTermMemoryStore) -> None:
    embedder = store._embedder
    with embedder._lock:
        for key in [k for k in embedder._cache if k[0]]:
            del embedder._cache[key]


def forget_query(store: LongTermMemoryStore, text: str) -> None:
    embedder = store._embedder
    with embedder._lock:
        embedder._cache.pop(embedder._key(text, True), None)


# ---- measurements ------------------------------------------------------------------------


def ms(values: Sequence[int] | np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.float64) / 1e6


def pct(values: np.ndarray) -> tuple[float, float]:
    p50, p95 = np.percentile(values, [50, 95])
    return float(p50), float(p95)


@dataclass
class Engine:
    name: str
    store: LongTermMemoryStore
    users: list[str]
    ingest_s: float = 0.0
    ingest_embed_s: float = 0.0
    actions: Counter[str] = field(default_factory=Counter)
    turn_rows: list[str] = field(default_factory=list)
    recall_rows: list[str] = field(default_factory=list)
    size_rows: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    p50: dict[str, float] = field(default_factory=dict)  # ms, for the closing notes
    facts_per_user: int = 0


def ingest(
    engine: Engine,
    emb: TimedEmbeddings,
    facts: dict[str, tuple[list[str], list[str]]],
    per_user: int,
) -> None:
    """Pinned facts, then candidates in batches of up to 256 until ``per_user`` facts exist.

    Some candidates are not new facts (``updated``: "Drives a 2012 Kia Niro" after "Drives
    a 2015 Kia Niro" is a new version of it), so each batch asks for what is still missing;
    a batch of n texts creates at most n facts, so the count is never overshot.
    """
    gc.collect()
    d0, t0 = emb.document_ns, clock()
    for user in engine.users:
        pinned, candidates = facts[user]
        have = 0
        for r in engine.store.remember(user, pinned, pinned=True):
            engine.actions[r.action] += 1
            have += r.action == "created"
        used = 0
        while have < per_user:
            if used >= len(candidates):
                raise SystemExit(f"{user}: candidates ran out at {have} facts")
            batch = candidates[used : used + min(BATCH, per_user - have)]
            used += len(batch)
            for r in engine.store.remember(user, batch):
                engine.actions[r.action] += 1
                have += r.action == "created"
    engine.ingest_s = (clock() - t0) / 1e9
    engine.ingest_embed_s = (emb.document_ns - d0) / 1e9


@dataclass
class Variant:
    """One graph under test: without middleware, or with one middleware configuration."""

    label: str
    agent: Any
    model: InstantModel
    memory: bool
    lat_ns: list[int] = field(default_factory=list)
    queries: int = 0  # query embeddings computed during its turns


def run_turns(engine: Engine, emb: TimedEmbeddings, messages: list[str], warmup: list[str]) -> None:
    """Every graph and the direct recall calls on each message, in a rotating order.

    Per turn: the graph without middleware, one graph per configuration, and the direct
    calls (``store.pinned``, ``store.recall`` not cached, then cached), each on the same
    message; after each call that embedded the message, it is dropped from the query cache,
    so every graph's recall embeds it too. The order rotates per turn, so every variant
    sees the same machine load and no variant always runs right after another.
    """
    store, users = engine.store, engine.users
    variants = [Variant("no middleware", None, InstantModel(), False)]
    for label, options in CONFIGS:
        model = InstantModel()
        middleware = MemoryMiddleware(store, mode="recall", **options)
        agent = create_agent(
            model, system_prompt=SYSTEM_PROMPT, middleware=[middleware], store=store
        )
        variants.append(Variant(label, agent, model, True))
    variants[0].agent = create_agent(variants[0].model, system_prompt=SYSTEM_PROMPT)
    limit, min_score = _D.limit, _D.min_score
    session = uuid.uuid4().hex[:6]

    def config(j: int) -> dict[str, Any]:
        user = users[j % len(users)]
        # a thread per user per 10 turns: the middleware records each thread once
        return {"configurable": {"user_id": user, "thread_id": f"{session}-{user}-{j // 10}"}}

    pinned_ns: list[int] = []
    miss_ns: list[int] = []
    embed_ns: list[int] = []
    hit_ns: list[int] = []
    direct_queries = 0

    def direct(j: int, text: str) -> None:
        nonlocal direct_queries
        user = users[j % len(users)]
        q0, t0 = emb.queries, clock()
        store.pinned(user)
        t1 = clock()
        e0 = emb.query_ns
        store.recall(user, text, limit, min_score=min_score)
        t2 = clock()
        embed_ns.append(emb.query_ns - e0)
        store.recall(user, text, limit, min_score=min_score)  # same text: a cache hit
        hit_ns.append(clock() - t2)
        pinned_ns.append(t1 - t0)
        miss_ns.append(t2 - t1)
        direct_queries += emb.queries - q0
        forget_query(store, text)

    def turn(v: Variant, j: int, text: str) -> None:
        q0, t0 = emb.queries, clock()
        v.agent.invoke({"messages": [("user", text)]}, config(j))
        v.lat_ns.append(clock() - t0)
        v.queries += emb.queries - q0
        forget_query(store, text)

    steps: list[Callable[[int, str], None]] = [
        *(lambda j, text, v=v: turn(v, j, text) for v in variants),
        direct,
    ]
    for j, text in enumerate(warmup):
        for step in steps:
            step(-1 - j, text)
    for v in variants:
        v.lat_ns.clear()
        v.model.systems.clear()
        v.queries = 0
    for values in (pinned_ns, miss_ns, embed_ns, hit_ns):
        values.clear()
    direct_queries = 0
    clear_query_cache(store)
    gc.collect()
    gc.freeze()  # the store and the data set are not this phase's garbage
    for j, text in enumerate(messages):
        k = j % len(steps)
        for step in steps[k:] + steps[:k]:
            step(j, text)
    gc.unfreeze()

    n = len(messages)
    plain = ms(variants[0].lat_ns)
    a50, a95 = pct(plain)
    engine.turn_rows.append(
        f"| {engine.name} | {variants[0].label} | {n:,} | {a50:.2f} | {a95:.2f} | | | |"
    )
    base = SYSTEM_PROMPT + "\n\n"
    for v in variants[1:]:
        assert len(v.model.systems) == n, "one model call per turn"
        wi = ms(v.lat_ns)
        (b50, b95), (d50, d95) = pct(wi), pct(wi - plain)
        engine.turn_rows.append(
            f"| {engine.name} | {v.label} | {n:,} | {b50:.2f} | {b95:.2f} "
            f"| **{b50 - a50:.2f}** | {d50:.2f} | {d95:.2f} |"
        )
        engine.p50.setdefault("turn_overhead", b50 - a50)  # the first: the defaults
        engine.p50.setdefault("paired", d50)
        blocks = [s.removeprefix(base) if s.startswith(base) else "" for s in v.model.systems]
        chars = np.asarray([len(b) for b in blocks], dtype=np.float64)
        pinned = np.asarray([_count(b, "Profile:") for b in blocks])
        relevant = np.asarray([_count(b, "Relevant to this message:") for b in blocks])
        c50, c95 = pct(chars)
        engine.size_rows.append(
            f"| {engine.name} | {v.label} | {c50:,.0f} | {c95:,.0f} | ~{c50 / 4:,.0f} "
            f"| ~{c95 / 4:,.0f} | {np.median(pinned):.0f} | {np.median(relevant):.0f} "
            f"| {int((relevant == 0).sum())} of {n} | {int(chars.max()):,} |"
        )
    embedded = [v.queries for v in variants[1:]]
    engine.notes.append(
        f"{engine.name}: query embeddings computed per configuration over {n} turns: "
        f"{embedded} (embedder cache hits: {[n - q for q in embedded]}); the graph without "
        f"middleware computed {variants[0].queries}; the direct recall pairs {direct_queries} "
        f"(the first call of each pair; the second is a cache hit)"
    )

    p, m, e, h = ms(pinned_ns), ms(miss_ns), ms(embed_ns), ms(hit_ns)
    args = f"{limit}, min_score={min_score:g}"
    rows = [
        ("`store.pinned(user)` (no embedding)", p),
        (f"`store.recall(user, msg, {args})`, not cached", m),
        ("&nbsp;&nbsp;of which embedding the query (`embed_query`)", e),
        ("&nbsp;&nbsp;of which search and the rest (the two rows above subtracted)", m - e),
        ("`store.recall`, cached query (the search alone)", h),
        ("pinned + recall, not cached (a turn's first model call)", p + m),
        ("pinned + recall, cached (a later model call of the same turn)", p + h),
    ]
    for name, values in rows:
        p50, p95 = pct(values)
        engine.recall_rows.append(
            f"| {engine.name} | {name} | {n:,} | {p50:.2f} | {p95:.2f} | {values.mean():.2f} |"
        )
    engine.p50.update(
        embed=pct(e)[0], recall=pct(p + m)[0], later_call=pct(p + h)[0],
        share=float(np.median(e / np.maximum(p + m, 1e-9))),
    )  # fmt: skip


def _count(block: str, section: str) -> int:
    """Facts listed under ``section`` in a memory block."""
    lines = block.splitlines()
    if section not in lines:
        return 0
    n = 0
    for line in lines[lines.index(section) + 1 :]:
        if not line.startswith("- "):
            break
        n += 1
    return n


def closing_notes(engine: Engine) -> list[str]:
    v = engine.p50
    verdict = "dominates" if v["share"] > 0.5 else "does not dominate"
    return [
        f"{engine.name}: embedding the user's message {verdict} the recall: "
        f"{v['embed']:.2f} ms of {v['recall']:.2f} ms for pinned + recall at p50 "
        f"({v['share']:.0%} per call at the median); the pinned read and the search over "
        f"the user's {engine.facts_per_user:,} facts are the rest. A hosted embedding API would "
        f"put a network round trip in that place.",
        f"{engine.name}: a turn with the middleware costs {v['turn_overhead']:.2f} ms more at "
        f"p50 (defaults; paired per turn {v['paired']:.2f} ms), about "
        f"{v['turn_overhead'] - v['recall']:.2f} ms of it beyond the pinned + recall calls "
        f"(the middleware hook, the thread record, the request override).",
        f"{engine.name}: the recall runs before every model call; a later call of the same "
        f"turn (after tool calls) has the same latest user message, so its query embedding is "
        f"a cache hit: pinned + search, {v['later_call']:.2f} ms at p50.",
    ]


def run_engine(
    engine: Engine,
    emb: TimedEmbeddings,
    facts: dict[str, tuple[list[str], list[str]]],
    messages: list[str],
    warmup: list[str],
    per_user: int,
) -> None:
    print(f"\n## {engine.name}: ingest", flush=True)
    ingest(engine, emb, facts, per_user)
    stored = sum(len(engine.store.list_all(u)) for u in engine.users)
    assert stored == per_user * len(engine.users), stored
    engine.facts_per_user = per_user
    print(
        f"ingest: {stored:,} facts over {len(engine.users)} users in {engine.ingest_s:.1f}s "
        f"(document embedding {engine.ingest_embed_s:.1f}s; not part of the figures); "
        f"remember actions {dict(engine.actions)}",
        flush=True,
    )
    t0 = time.perf_counter()
    run_turns(engine, emb, messages, warmup)
    print(f"turns: {time.perf_counter() - t0:.1f}s", flush=True)


def postgres_engine(
    url: str, emb: TimedEmbeddings, users: list[str]
) -> tuple[Engine, Callable[[], None]]:
    schema = f"ltm_bench_{uuid.uuid4().hex[:8]}"
    store = LongTermMemoryStore.from_postgres(url, emb, schema=schema, dims=384)

    def drop() -> None:
        store.close()
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')

    print(f"\npostgres: {url.split('@')[-1]}, temporary schema {schema}", flush=True)
    return Engine("postgres", store, users), drop


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="measured turns per config")
    parser.add_argument("--facts-per-user", type=int, default=1_000, help="facts of each user")
    parser.add_argument("--users", type=int, default=3, help="users with facts")
    parser.add_argument("--pinned", type=int, default=3, help="pinned facts per user (<= 4)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.turns < 20 or args.users < 1 or args.facts_per_user < 10:
        parser.error("need --turns >= 20, --users >= 1, --facts-per-user >= 10")
    args.pinned = max(0, min(args.pinned, len(PINNED_TEMPLATES)))

    wall = time.perf_counter()
    import onnxruntime

    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"# middleware_overhead: {args.users} users x {args.facts_per_user:,} facts "
        f"({args.pinned} pinned each), {args.turns} turns per config\n"
        f"machine: {os.cpu_count()} CPUs ({platform.machine()}, {platform.processor() or '?'}), "
        f"python {sys.version.split()[0]}, onnxruntime {onnxruntime.__version__}, "
        f"numpy {np.__version__}, load avg {load}",
        flush=True,
    )

    rng = random.Random(args.seed)
    users = [f"user-{u}@example.com" for u in range(args.users)]
    seen: set[str] = set()
    facts: dict[str, tuple[list[str], list[str]]] = {}
    for user in users:
        pinned = [_fill(t, rng) for t in PINNED_TEMPLATES[: args.pinned]]
        facts[user] = (pinned, fact_texts(args.facts_per_user * CANDIDATES, rng))
    messages = unique_texts(MESSAGE_TEMPLATES, args.turns, rng, seen)
    warmup = unique_texts(MESSAGE_TEMPLATES, WARMUP, rng, seen)
    print("e.g. facts:", "; ".join(facts[users[0]][1][:4]))
    print("e.g. pinned:", "; ".join(facts[users[0]][0]))
    print("e.g. messages:", "; ".join(messages[:3]))

    emb = TimedEmbeddings(LocalMiniLMEmbeddings())
    engines = [Engine("memory", LongTermMemoryStore(InMemoryVectorStore(emb)), users)]
    run_engine(engines[0], emb, facts, messages, warmup, args.facts_per_user)

    url = os.environ.get("LTM_POSTGRES_URL")
    if url:
        pg, drop = postgres_engine(url, emb, users)
        try:
            run_engine(pg, emb, facts, messages, warmup, args.facts_per_user)
        finally:
            drop()
        engines.append(pg)

    print(
        "\n### Per agent turn (create_agent, scripted model answering at once: one model call "
        "per turn, no checkpointer), ms\n"
    )
    print(
        '| engine | graph: MemoryMiddleware(mode="recall", ...) | turns | p50 | p95 '
        "| overhead: p50 - p50 without | overhead per turn, p50 | overhead per turn, p95 |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    print("\n".join(r for e in engines for r in e.turn_rows))
    print(
        "\n### The recall itself: direct calls on the same messages, between the graphs, with "
        "the default recall options, ms\n"
    )
    print("| engine | call | calls | p50 | p95 | mean |")
    print("|---|---|---:|---:|---:|---:|")
    print("\n".join(r for e in engines for r in e.recall_rows))
    print("\n### Prompt size the memory block adds to the system prompt\n")
    print(
        "| engine | config | chars p50 | chars p95 | tokens p50 (est.) | tokens p95 (est.) "
        "| pinned facts p50 | relevant facts p50 | turns with no relevant fact | max chars |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(r for e in engines for r in e.size_rows))
    print(
        "\nTokens are an estimate (characters / 4), not a tokenizer count. The block is in the "
        "system prompt of that model call only, never in the thread's state."
    )
    print("\nNotes:")
    for e in engines:
        for note in e.notes:
            print(f"- {note}")
    if not url:
        print("- postgres: skipped (set LTM_POSTGRES_URL=postgresql://... to run it too)")
    for e in engines:
        for note in closing_notes(e):
            print(f"- {note}")
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\nwall time {time.perf_counter() - wall:.1f}s, load avg {load}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
