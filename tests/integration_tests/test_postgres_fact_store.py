"""FactStore on Postgres: what ``ltm`` opens for a ``postgresql://`` URL.

The fact logic is the one ``LongTermMemoryStore`` runs (``test_postgres_facts.py`` runs the
whole engine suite on it); here: the same table through both classes, ``open_facts`` on a
URL, and a fact command that imports neither LangGraph nor LangChain.
"""

from __future__ import annotations

import uuid

import pytest

from langchain_ltm import LongTermMemoryStore
from langchain_ltm.defaults import _redact, open_facts
from langchain_ltm.facts import FactStore
from tests.unit_tests.test_fact_store import commands_stay_light
from tests.unit_tests.test_facts import emb  # noqa: F401  (fixture)


def test_one_table_two_classes_and_open_facts(pg_url, emb):
    table = f"t_{uuid.uuid4().hex[:12]}"
    light = FactStore.from_postgres(pg_url, emb, table=table)
    full = LongTermMemoryStore.from_postgres(pg_url, emb, table=table)
    try:
        made = light.remember("alice", "My daughter is 7 years old")
        moved = full.remember("alice", "My daughter is 8 years old")
        assert (made.action, moved.action) == ("created", "updated")
        assert made.fact and moved.fact and moved.fact.id == made.fact.id
        assert light.list_all("alice") == full.list_all("alice")
        assert [v.content for v in light.history("alice", made.fact.id)] == [
            "My daughter is 7 years old",
            "My daughter is 8 years old",
        ]
        opened, where = open_facts(pg_url, embeddings=emb)
        assert isinstance(opened, FactStore) and where == _redact(pg_url)
        opened.close()
    finally:
        full.backend.drop()
        full.close()
        light.close()


def test_a_fact_command_on_postgres_imports_neither_langgraph_nor_langchain(pg_url, pg_conn):
    database = f"fs_{uuid.uuid4().hex[:12]}"  # its own ltm_items table, 384-d
    pg_conn.execute(f"CREATE DATABASE {database}")
    url = pg_url.replace("/postgres?", f"/{database}?", 1)
    assert url != pg_url
    try:
        commands_stay_light(url)
    finally:
        pg_conn.execute(f"DROP DATABASE {database} WITH (FORCE)")


def test_from_postgres_takes_the_vector_type_and_the_pool_options(pg_url, emb):
    table = f"t_{uuid.uuid4().hex[:12]}"
    facts = FactStore.from_postgres(
        pg_url, emb, table=table, vector_type="halfvec", max_size=2, timeout=5.0
    )
    try:
        assert facts.backend.vector_type == "halfvec"
        made = facts.remember("alice", "My daughter is 7 years old")
        assert made.action == "created"
        assert [hit.content for hit in facts.recall("alice", "daughter age")] == [
            "My daughter is 7 years old"
        ]
        reopened = FactStore.from_postgres(pg_url, emb, table=table)
        assert reopened.backend.vector_type == "halfvec"  # None: the table's own type
        reopened.close()
        with pytest.raises(
            TypeError, match=r"from_postgres\(\) got unexpected option\(s\) 'max_sise'"
        ):
            FactStore.from_postgres(pg_url, emb, table=table, max_sise=2)
    finally:
        facts.backend.drop()
        facts.close()
