"""Pools handed in to ``postgres_backend``, as an application makes them (sync or async)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any


@contextlib.asynccontextmanager
async def handed_in_pool(pg_url: str, mode: str, **kwargs: Any) -> AsyncIterator[Any]:
    """A psycopg pool of ``mode`` ("sync" or "async") with connection ``kwargs``, closed after."""
    from psycopg_pool import AsyncConnectionPool, ConnectionPool

    if mode == "sync":
        pool: Any = ConnectionPool(pg_url, kwargs=kwargs, min_size=1, max_size=4, open=True)
    else:
        pool = AsyncConnectionPool(pg_url, kwargs=kwargs, min_size=1, max_size=4, open=False)
        await pool.open()
    try:
        yield pool
    finally:
        if mode == "sync":
            pool.close()
        else:
            await pool.close()
