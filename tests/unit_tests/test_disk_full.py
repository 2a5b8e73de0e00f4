"""A full disk gives a clear error, keeps what was acknowledged, and reopens cleanly."""

from __future__ import annotations

import os
import subprocess

import pytest

from langchain_ltm import BackendError, LongTermMemoryStore
from tests.fakes import KeywordEmbeddings


@pytest.fixture
def tiny_disk(tmp_path):
    """A 2 MB tmpfs (needs root, as on our CI machines)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "--lazy", str(mount)], check=True)


def test_full_disk_on_an_embedded_qdrant_folder(tiny_disk):
    folder = str(tiny_disk / "store")
    # threshold 1.0: every fact is new (no semantic merge), so the folder keeps growing
    store = LongTermMemoryStore.from_qdrant(folder, KeywordEmbeddings(64), upsert_threshold=1.0)
    acknowledged: list[str] = []
    error = None
    for batch in range(500):
        texts = [f"fact{batch}x{i} w{batch * 100 + i} " + "pad " * 200 for i in range(20)]
        try:
            store.remember("u1", texts)
        except BackendError as exc:
            error = exc
            break
        acknowledged += texts
    assert error is not None, "the 2 MB disk never filled"
    assert "is full" in str(error) and "retry" in str(error)
    assert acknowledged, "the disk filled before anything was stored"
    assert set(acknowledged) <= {f.content for f in store.list_all("u1")}
    store.close()
    reopened = LongTermMemoryStore.from_qdrant(folder, KeywordEmbeddings(64))
    assert set(acknowledged) <= {f.content for f in reopened.list_all("u1")}
    reopened.close()


def test_full_disk_on_a_sqlite_file(tiny_disk):
    path = str(tiny_disk / "ltm.sqlite")
    store = LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(64), upsert_threshold=1.0)
    acknowledged: list[str] = []
    error = None
    for batch in range(500):
        texts = [f"fact{batch}x{i} w{batch * 100 + i} " + "pad " * 200 for i in range(20)]
        try:
            store.remember("u1", texts)
        except BackendError as exc:
            error = exc
            break
        acknowledged += texts
    assert error is not None, "the 2 MB disk never filled"
    assert "is full" in str(error) and "retry" in str(error)
    assert acknowledged, "the disk filled before anything was stored"
    # the failed batch left nothing behind, and what was acknowledged is all there
    assert {f.content for f in store.list_all("u1")} == set(acknowledged)
    store.close()
    reopened = LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(64))
    assert {f.content for f in reopened.list_all("u1")} == set(acknowledged)
    reopened.close()
