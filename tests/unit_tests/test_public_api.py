"""The top-level API: every exported name resolves, and the agent side loads lazily."""

from __future__ import annotations

import subprocess
import sys

import langchain_ltm


def test_every_exported_name_resolves():
    for name in langchain_ltm.__all__:
        assert getattr(langchain_ltm, name) is not None, name


def test_importing_the_store_does_not_import_the_agent_side():
    code = (
        "import sys, langchain_ltm; "
        "print(any(m.startswith(('langchain.agents', 'langgraph.prebuilt')) for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_fact_store_with_the_light_encoder_imports_no_langchain_core_nor_langgraph():
    code = (
        "import sys; from langchain_ltm import FactStore; "
        "from langchain_ltm.encoder import MiniLMEncoder; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'langchain_core', 'langgraph'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_readme_scripts_with_the_light_encoder_run(tmp_path):
    # mypy --strict checks the same file (make lint): MiniLMEncoder is typed for every store
    from langchain_core.embeddings import Embeddings

    from langchain_ltm.defaults import open_store
    from langchain_ltm.encoder import MiniLMEncoder
    from tests.typed_examples import (
        facts_with_the_light_encoder,
        store_with_the_light_encoder,
        when_and_where_a_fact_came_from,
    )

    assert facts_with_the_light_encoder(tmp_path) == ["Prefers answers in Spanish"]
    assert store_with_the_light_encoder(tmp_path) == ["Prefers answers in Spanish"] * 2
    assert when_and_where_a_fact_came_from() == [
        "2023-05-08 Went to an LGBTQ support group {'session': 1}",
        "2023-05-08T13:56:00+00:00",
    ]
    # what LangGraph reads (index_config) and a vectorstore built for it need the class
    store, _ = open_store("memory://", embeddings=MiniLMEncoder())
    with store:
        assert isinstance(store.index_config["embed"], Embeddings)
        assert store.remember("u1", "likes tea").action == "created"


def test_every_error_the_readme_names_is_in_the_error_tree_at_its_old_paths_too():
    # they lived in engine modules only; SQLite and Postgres had two SchemaVersionErrors
    from langchain_ltm import backends, embeddings, errors
    from langchain_ltm.backends import postgres, sqlite
    from langchain_ltm.backends.postgres import _calibrate, _writes

    names = ["StoreInUseError", "SchemaVersionError", "LockLostError", "ModelFileError"]
    for name in [*names, "IncompatibleCollectionError"]:
        error = getattr(errors, name)
        assert name in errors.__all__ and name in langchain_ltm.__all__, name
        assert getattr(langchain_ltm, name) is error and issubclass(error, errors.LTMError)
    assert sqlite.SchemaVersionError is postgres.SchemaVersionError is errors.SchemaVersionError
    assert sqlite.StoreInUseError is postgres.StoreInUseError is errors.StoreInUseError
    assert backends._compaction.StoreInUseError is errors.StoreInUseError
    assert _writes.LockLostError is postgres.LockLostError is errors.LockLostError
    assert issubclass(errors.LockLostError, errors.BackendError)
    assert embeddings.ModelFileError is errors.ModelFileError
    from langchain_ltm.backends import qdrant

    assert qdrant.IncompatibleCollectionError is errors.IncompatibleCollectionError
    assert issubclass(errors.IncompatibleCollectionError, ValueError)
    assert issubclass(embeddings.ModelChecksumError, errors.ModelFileError)
    # calibrate_broad_search's return type, public where PostgresBackend is
    assert postgres.BroadCalibration is _calibrate.BroadCalibration
    assert "BroadCalibration" in postgres.__all__


def test_every_public_class_and_function_has_a_runnable_example_and_its_args():
    """The house standard (Google docstrings, a short runnable example on each public
    class): the error classes had a one-line docstring, and six functions no ``Args``.
    The examples run as doctests (``--doctest-modules``)."""
    import inspect

    missing = []
    for name in langchain_ltm.__all__:
        obj = getattr(langchain_ltm, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        doc = inspect.getdoc(obj) or ""
        if "Example" not in doc or ">>>" not in doc:
            missing.append(f"{name}: example")
        if inspect.isfunction(obj) and inspect.signature(obj).parameters and "Args:" not in doc:
            missing.append(f"{name}: Args")
    assert missing == []
