"""The per-user fact API on the generic engine, over Chroma, FAISS and Milvus Lite."""

from __future__ import annotations

import pytest

from tests.engine_facts import *  # noqa: F403  (every engine runs these)
from tests.vectorstores import KINDS, open_store


@pytest.fixture(params=KINDS)
def store(request, emb, tmp_path):
    store = open_store(request.param, emb, tmp_path, upsert_threshold=0.8)
    yield store
    store.close()


@pytest.fixture(autouse=True)
def _milvus_lite_scores_one_vector_apart(request):
    """Milvus Lite (FLAT, COSINE) gives two stored copies of one vector scores 16 float32
    steps apart itself (-0.10119021 and -0.10119033; the exact cosine is -0.10119027), so
    its exact ties follow its own noise: a known limit of that engine, kept visible."""
    callspec = getattr(request.node, "callspec", None)
    if (
        callspec is not None
        and callspec.params.get("store") == "milvus"
        and "_ties_by_fact_id" in request.node.name
    ):
        reason = "Milvus Lite scores identical stored vectors apart"
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))
