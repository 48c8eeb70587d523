"""LangChain: its in-memory exact scan and langchain-postgres' PGVector."""

from __future__ import annotations

import contextlib
from typing import Any

from peer_systems.base import (
    Dataset,
    K,
    Query,
    System,
    VectorCache,
)


class CachedLangChainEmbeddings:
    """A LangChain ``Embeddings`` serving the precomputed vectors (built lazily: langchain_core is optional)."""

    @staticmethod
    def build(cache: VectorCache) -> Any:
        from langchain_core.embeddings import Embeddings

        class _Cached(Embeddings):
            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                return [v.tolist() for v in cache.get(texts)]

            def embed_query(self, text: str) -> list[float]:
                return cache.one(text).tolist()  # type: ignore[no-any-return]

        return _Cached()


class LangChainStore(System):
    """LangChain ``PGVectorStore`` (langchain-postgres' current store; ``PGVector`` is deprecated since
    0.0.14): the quickstart's table, the unit's fields as metadata columns, vector search (exact: the
    quickstart adds no index), scoped by a metadata filter on the conversation column."""

    key = "langchain"
    rows = ("LangChain PGVectorStore",)

    def setup(self, ds: Dataset) -> None:
        from langchain_postgres import Column, PGEngine, PGVectorStore

        columns = sorted(ds.units[0].meta)
        self.engine = PGEngine.from_connection_string(url=self.url("psycopg"))
        self.engine.init_vectorstore_table(table_name="peers", vector_size=384,
                                           metadata_columns=[Column(name, "TEXT") for name in columns])
        self.store = PGVectorStore.create_sync(engine=self.engine, table_name="peers",
                                               embedding_service=CachedLangChainEmbeddings.build(self.cache),
                                               metadata_columns=columns)

    def load(self, ds: Dataset) -> None:
        self.store.add_texts([u.text for u in ds.units], metadatas=[dict(u.meta) for u in ds.units])

    def search(self, row: str, query: Query) -> list[frozenset[str]]:
        scoped = None if query.group == "scifact" else {"conversation": {"$eq": query.group}}
        docs = self.store.similarity_search_by_vector(self.cache.one(query.text).tolist(), k=K, filter=scoped)
        key = "dia_id" if query.group != "scifact" else "doc_id"
        return [frozenset({str(d.metadata.get(key))}) for d in docs]

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.engine._run_as_sync(self.engine.close())


class LangChainPGVector(System):
    """LangChain's legacy ``PGVector`` (what most tutorials still show): one collection per
    conversation, vector search (exact: it creates no index)."""

    key = "langchain-pgvector"
    rows = ("LangChain PGVector (deprecated)",)

    def setup(self, ds: Dataset) -> None:
        import warnings

        from langchain_postgres import PGVector
        from sqlalchemy import create_engine

        warnings.filterwarnings("ignore", module="langchain_postgres")
        self.engine = create_engine(self.url("psycopg"))
        embeddings = CachedLangChainEmbeddings.build(self.cache)
        self.stores = {group: PGVector(embeddings=embeddings, collection_name=group, connection=self.engine, use_jsonb=True)
                       for group in ds.groups()}

    def load(self, ds: Dataset) -> None:
        for group, units in ds.groups().items():
            self.stores[group].add_texts([u.text for u in units], metadatas=[dict(u.meta) for u in units])

    def search(self, row: str, query: Query) -> list[frozenset[str]]:
        docs = self.stores[query.group].similarity_search_by_vector(self.cache.one(query.text).tolist(), k=K)
        key = "dia_id" if query.group != "scifact" else "doc_id"
        return [frozenset({str(d.metadata.get(key))}) for d in docs]

    def close(self) -> None:
        self.engine.dispose()
