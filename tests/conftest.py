import sys

import pytest

pytest.register_assert_rewrite("tests.store_contract")


@pytest.fixture(autouse=True)
def _no_warm_encoder(monkeypatch):
    """``ltm`` in tests embeds in its own process, never leaving an encoder behind.

    tests/unit_tests/test_warm_encoder.py turns it on, with a runtime folder of its own.
    """
    monkeypatch.setenv("LTM_ENCODER_SERVER", "off")


@pytest.fixture(autouse=True)
def _release_milvus():
    """Milvus Lite runs a gRPC server per ``.db`` file in process: stop a test's own at its end."""
    yield
    vectorstores = sys.modules.get("tests.vectorstores")  # never imported just for this
    if vectorstores is not None and vectorstores._MILVUS_OPEN:
        vectorstores.release_milvus()
