"""Restoring timestamps: ``Record.created_at`` is stored exactly, on every engine, sync and async.

:class:`RestoreContract` is written once against a ``backend`` fixture (a fresh, empty
``VectorBackend`` for 8-dimensional vectors); persistent engines also call
:func:`check_reopened` with a function that opens the same data through a new backend. This
module runs it on the memory engine, on embedded Qdrant (in memory with and without the
mirror, and in a folder) and on SQLite; ``tests/integration_tests/test_postgres_restore.py``
on Postgres.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_ltm.backends import VectorBackend, backend_for
from langchain_ltm.backends.base import Record, SearchRequest, StoredItem
from langchain_ltm.backends.qdrant import qdrant_backend
from langchain_ltm.backends.sqlite import sqlite_backend

NS = ("memories", "u1")
DIMS = 8
CREATED = datetime(2020, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)
UPDATED = datetime(2020, 1, 2, 3, 4, 6, 654321, tzinfo=timezone.utc)
LATER = datetime(2021, 7, 8, 9, 10, 11, 1, tzinfo=timezone.utc)
LATEST = datetime(2022, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc)


def unit(seed: int, n: int = 1) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, DIMS)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def record(
    key: str,
    now: datetime,
    created_at: datetime | None = None,
    *,
    vectors: np.ndarray | None = None,
    value: dict | None = None,
) -> Record:
    texts = tuple(f"text {i}" for i in range(0 if vectors is None else len(vectors)))
    paths = tuple(f"p{i}" for i in range(len(texts)))
    return Record(NS, key, value or {"key": key}, texts, paths, vectors, now, created_at)


def stamps(item: StoredItem | None) -> tuple[datetime, datetime]:
    assert item is not None
    return item.created_at, item.updated_at


def assert_exact(item: StoredItem | None, created: datetime, updated: datetime) -> None:
    """Equal instants, to the microsecond, as timezone-aware datetimes."""
    assert item is not None
    assert item.created_at.utcoffset() is not None and item.updated_at.utcoffset() is not None
    assert (item.created_at, item.updated_at) == (created, updated)
    assert item.created_at.isoformat() == created.astimezone(item.created_at.tzinfo).isoformat()


class Ops:
    """The backend's read/write methods as coroutines: sync ones called directly, or async."""

    def __init__(self, backend: VectorBackend, mode: str) -> None:
        self.backend, self.mode = backend, mode

    async def write(self, upserts: list[Record], deletes=()) -> int:
        if self.mode == "async":
            return await self.backend.awrite(upserts, list(deletes))
        return self.backend.write(upserts, list(deletes))

    async def get(self, *keys: str) -> list[StoredItem | None]:
        wanted = [(NS, key) for key in keys]
        if self.mode == "async":
            return await self.backend.aget(wanted)
        return self.backend.get(wanted)

    async def search(self, vectors: np.ndarray | None = None) -> dict[str, StoredItem]:
        request = SearchRequest(NS, vectors=vectors, limit=None)
        if self.mode == "async":
            (hits,) = await self.backend.asearch(request)
        else:
            (hits,) = self.backend.search(request)
        return {hit.item.key: hit.item for hit in hits}


class RestoreContract:
    """Subclass as ``Test...`` with a ``backend`` fixture."""

    @pytest.fixture(params=["sync", "async"])
    def ops(self, backend, request) -> Ops:
        return Ops(backend, request.param)

    async def test_a_new_item_gets_the_given_created_at(self, ops):
        await ops.write(
            [
                record("plain", UPDATED, CREATED),
                record("embedded", UPDATED, CREATED, vectors=unit(1)),
                record("two_texts", UPDATED, CREATED, vectors=unit(2, 2)),
            ]
        )
        for item in await ops.get("plain", "embedded", "two_texts"):
            assert_exact(item, CREATED, UPDATED)
        for found in (await ops.search(), await ops.search(unit(1))):
            assert sorted(found) == ["embedded", "plain", "two_texts"]
            for item in found.values():
                assert_exact(item, CREATED, UPDATED)

    async def test_an_existing_item_is_overwritten_with_the_given_created_at(self, ops):
        await ops.write([record("k", LATER, vectors=unit(3), value={"v": 1})])
        assert stamps((await ops.get("k"))[0]) == (LATER, LATER)
        # restoring an older backup over it: its created_at wins, even though it is earlier
        await ops.write([record("k", UPDATED, CREATED, vectors=unit(4), value={"v": 2})])
        (item,) = await ops.get("k")
        assert_exact(item, CREATED, UPDATED)
        assert item.value == {"v": 2}
        assert_exact((await ops.search(unit(4)))["k"], CREATED, UPDATED)
        # a later restore may also move created_at forward
        await ops.write([record("k", LATEST, LATER, vectors=unit(4))])
        assert_exact((await ops.get("k"))[0], LATER, LATEST)

    async def test_without_created_at_the_stored_one_is_kept(self, ops):
        await ops.write([record("k", UPDATED, CREATED, vectors=unit(5))])
        await ops.write([record("k", LATEST, vectors=unit(6))])
        assert_exact((await ops.get("k"))[0], CREATED, LATEST)
        assert_exact((await ops.search(unit(6)))["k"], CREATED, LATEST)
        await ops.write([record("fresh", LATER)])
        assert_exact((await ops.get("fresh"))[0], LATER, LATER)

    async def test_one_batch_mixes_restored_kept_new_and_deleted_items(self, ops):
        await ops.write(
            [
                record("old", LATER, vectors=unit(7)),
                record("restored", LATER),
                record("gone", LATER),
            ]
        )
        deleted = await ops.write(
            [
                record("old", LATEST, vectors=unit(8)),  # keeps LATER
                record("restored", UPDATED, CREATED, vectors=unit(9)),  # existing, restored
                record("new", LATEST),  # new, now
                record("new_restored", UPDATED, CREATED),  # new, restored
            ],
            [(NS, "gone")],
        )
        assert deleted == 1
        old, restored, new, new_restored, gone = await ops.get(
            "old", "restored", "new", "new_restored", "gone"
        )
        assert_exact(old, LATER, LATEST)
        assert_exact(restored, CREATED, UPDATED)
        assert_exact(new, LATEST, LATEST)
        assert_exact(new_restored, CREATED, UPDATED)
        assert gone is None
        found = await ops.search(unit(9))
        assert {key: stamps(item) for key, item in found.items()} == {
            "old": (LATER, LATEST),
            "restored": (CREATED, UPDATED),
            "new": (LATEST, LATEST),
            "new_restored": (CREATED, UPDATED),
        }

    async def test_the_unranked_order_follows_the_restored_updated_at(self, ops):
        await ops.write(
            [
                record("b", UPDATED, CREATED),
                record("a", LATEST, CREATED),
                record("c", UPDATED + timedelta(microseconds=1), CREATED),
            ]
        )
        request = SearchRequest(NS, limit=None)
        if ops.mode == "async":
            (hits,) = await ops.backend.asearch(request)
        else:
            (hits,) = ops.backend.search(request)
        assert [hit.item.key for hit in hits] == ["a", "c", "b"]

    async def test_other_timezones_are_the_same_instant(self, ops):
        paris = timezone(timedelta(hours=2))
        created = CREATED.astimezone(paris)
        await ops.write([record("k", UPDATED.astimezone(paris), created)])
        (item,) = await ops.get("k")
        assert stamps(item) == (CREATED, UPDATED)
        assert item.created_at.astimezone(timezone.utc).isoformat() == CREATED.isoformat()


def check_reopened(backend: VectorBackend, reopen: Callable[[], VectorBackend]) -> None:
    """What a persistent engine stored with restored timestamps reads back exactly."""
    backend.write(
        [record("k", UPDATED, CREATED, vectors=unit(10)), record("plain", UPDATED, CREATED)], []
    )
    again = reopen()
    for item in again.get([(NS, "k"), (NS, "plain")]):
        assert_exact(item, CREATED, UPDATED)
    (hits,) = again.search(SearchRequest(NS, vectors=unit(10), limit=None))
    assert [hit.item.key for hit in hits] == ["k", "plain"]
    for hit in hits:
        assert_exact(hit.item, CREATED, UPDATED)


def test_created_at_must_be_timezone_aware():
    with pytest.raises(ValueError, match="timezone-aware"):
        record("k", UPDATED, datetime(2020, 1, 2, 3, 4, 5))
    # the seven-field form that existed before created_at still works
    assert Record(NS, "k", {}, (), (), None, UPDATED).created_at is None


# ---- engines ----------------------------------------------------------------------------


class TestMemoryRestore(RestoreContract):
    @pytest.fixture
    def backend(self) -> VectorBackend:
        return backend_for(InMemoryVectorStore(DeterministicFakeEmbedding(size=DIMS)))


class TestQdrantMemoryRestore(RestoreContract):
    @pytest.fixture(params=[True, False], ids=["mirror", "no_mirror"])
    def backend(self, request) -> Iterator[VectorBackend]:
        backend = qdrant_backend(":memory:", dims=DIMS, mirror=request.param)
        yield backend
        backend.close()


class TestQdrantFolderRestore(RestoreContract):
    @pytest.fixture
    def backend(self, tmp_path) -> Iterator[VectorBackend]:
        backend = qdrant_backend(tmp_path / "qdrant", dims=DIMS)
        yield backend
        backend.close()

    def test_restored_timestamps_survive_reopening(self, backend, tmp_path):
        opened: list[VectorBackend] = []

        def reopen() -> VectorBackend:
            backend.close()  # qdrant-client locks the folder to one client at a time
            opened.append(qdrant_backend(tmp_path / "qdrant", dims=DIMS))
            return opened[-1]

        try:
            check_reopened(backend, reopen)
        finally:
            for again in opened:
                again.close()


class TestSqliteRestore(RestoreContract):
    @pytest.fixture
    def backend(self, tmp_path) -> Iterator[VectorBackend]:
        backend = sqlite_backend(tmp_path / "restore.sqlite", dims=DIMS)
        yield backend
        backend.close()

    def test_restored_timestamps_survive_reopening(self, backend, tmp_path):
        opened: list[VectorBackend] = []

        def reopen() -> VectorBackend:  # a second backend on the file, the first still open
            opened.append(sqlite_backend(tmp_path / "restore.sqlite"))
            return opened[-1]

        try:
            check_reopened(backend, reopen)
        finally:
            for again in opened:
                again.close()
