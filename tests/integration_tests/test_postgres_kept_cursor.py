"""review1: the kept read cursor after a failed or cancelled read (sync, async)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import numpy as np
import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from langchain_ltm.backends.base import Record, SearchRequest
from langchain_ltm.backends.postgres._sql import Statement
from langchain_ltm.errors import BackendError


def _backend(make_backend, **kwargs):
    backend = make_backend(dims=4, **(kwargs or {"max_size": 1}))
    vec = np.eye(4, dtype=np.float32)
    now = datetime.now(timezone.utc)
    backend.write(
        [Record(("m", f"u{n % 2}"), f"k{n}", {"n": n}, ("t",), ("t",), vec[n][None, :], now)
         for n in range(4)],
        [],
    )  # fmt: skip
    return backend, vec


def _failing():
    yield Statement("SELECT 1/0")
    return None


def _slow():
    yield Statement("SELECT pg_sleep(3)")
    return None


@pytest.mark.parametrize("transaction", [False, True])
def test_a_failed_read_leaves_the_kept_cursor_usable(make_backend, transaction):
    backend, vec = _backend(make_backend)
    backend.search(SearchRequest(("m", "u0"), vec[0][None, :], limit=2))  # cursor kept
    with pytest.raises(BackendError, match="division by zero"):
        backend.connector.run(_failing, "get", transaction=transaction, keep_cursor=True)
    (hits,) = backend.search(SearchRequest(("m", "u1"), vec[1][None, :], limit=2))
    assert [h.item.key for h in hits] == ["k1", "k3"]
    (item,) = backend.get([(("m", "u0"), "k2")])
    assert item is not None and item.value == {"n": 2}


@pytest.mark.parametrize("pool", ["own", "handed in"])
async def test_a_cancelled_async_read_leaves_the_next_reads_right(make_backend, pg_url, pool):
    """On the pools a backend opens the reads go through ``_direct``; on a handed-in async
    pool without autocommit, through the kept cursor: both recover from a cancelled read."""
    apool = None
    if pool == "handed in":
        apool = AsyncConnectionPool(pg_url, min_size=1, max_size=1, open=False)
        await apool.open()
        backend, vec = _backend(make_backend, conn=apool)
    else:
        backend, vec = _backend(make_backend)
    try:
        await _cancel_then_read(backend, vec, handed_in=apool is not None)
    finally:
        if apool is not None:
            await apool.close()


async def _cancel_then_read(backend, vec, handed_in: bool):
    from langchain_ltm.backends.postgres._drive import _KEPT_CURSOR

    await backend.asearch(SearchRequest(("m", "u0"), vec[0][None, :], limit=2))
    async with backend.connector.async_pool().connection() as conn:
        assert (getattr(conn, _KEPT_CURSOR, None) is not None) is handed_in
    task = asyncio.ensure_future(backend.connector.arun(_slow, "get", keep_cursor=True))
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises((asyncio.CancelledError, psycopg.Error)):
        await task
    for user in (1, 0, 1):
        (hits,) = await backend.asearch(
            SearchRequest(("m", f"u{user}"), vec[user][None, :], limit=2)
        )
        assert [h.item.key for h in hits] == [f"k{user}", f"k{user + 2}"]
