"""Package data: the all-MiniLM-L6-v2 ``tokenizer.json`` (Apache-2.0); see ``NOTICE.md``.

Read with :func:`importlib.resources.files` (``files("langchain_ltm.data") / "tokenizer.json"``);
:mod:`langchain_ltm.embeddings` verifies its sha256 before it uses it.
"""
