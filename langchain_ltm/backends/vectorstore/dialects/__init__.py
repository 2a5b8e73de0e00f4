"""The built-in store families, one module per vectorstore family.

Each module holds one family's filter dialect, distance convention and, where the store's
standard methods do not take precomputed vectors, its add and search calls.
:func:`builtin_families` maps dotted class names to them; no store package is imported.
"""

from __future__ import annotations

from langchain_ltm.backends.vectorstore.family import StoreFamily

__all__ = ["builtin_families"]


def builtin_families() -> dict[str, StoreFamily]:
    """``{"module.QualName": family}`` for every vectorstore supported out of the box."""
    from langchain_ltm.backends.vectorstore.dialects import (
        chroma,
        elasticsearch,
        faiss,
        milvus,
        mongodb,
        pgvector,
        pinecone,
        redis,
        weaviate,
    )

    return {
        "langchain_chroma.vectorstores.Chroma": chroma.FAMILY,
        "langchain_community.vectorstores.faiss.FAISS": faiss.FAMILY,
        "langchain_postgres.v2.vectorstores.PGVectorStore": pgvector.FAMILY,
        "langchain_postgres.vectorstores.PGVector": pgvector.LEGACY_FAMILY,
        "langchain_milvus.vectorstores.milvus.Milvus": milvus.FAMILY,
        "langchain_redis.vectorstores.RedisVectorStore": redis.FAMILY,
        # filter dialects only: no server for these runs in the tests
        "langchain_pinecone.vectorstores.PineconeVectorStore": pinecone.FAMILY,
        "langchain_weaviate.vectorstores.WeaviateVectorStore": weaviate.FAMILY,
        "langchain_elasticsearch.vectorstores.ElasticsearchStore": elasticsearch.FAMILY,
        "langchain_mongodb.vectorstores.MongoDBAtlasVectorSearch": mongodb.FAMILY,
    }
