"""LlamaIndex: PGVectorStore, vector and hybrid retrieval."""

from __future__ import annotations

from typing import Any

from peer_systems.base import (
    Dataset,
    K,
    Query,
    System,
)

LLAMA_HNSW = {"hnsw_m": 16, "hnsw_ef_construction": 64, "hnsw_ef_search": 40, "hnsw_dist_method": "vector_cosine_ops"}
#: Identifiers are not content: kept out of the text LlamaIndex embeds (its default prepends every
#: metadata "key: value"); speaker and session date stay in, as LlamaIndex's default intends.
LLAMA_EXCLUDED = ["conversation", "dia_id", "doc_id"]


def llama_nodes(ds: Dataset) -> list[Any]:
    from llama_index.core.schema import TextNode

    return [TextNode(text=u.text, metadata=dict(u.meta), excluded_embed_metadata_keys=LLAMA_EXCLUDED,
                     excluded_llm_metadata_keys=LLAMA_EXCLUDED) for u in ds.units]


class LlamaIndex(System):
    """LlamaIndex ``PGVectorStore`` with ``hybrid_search=True`` (vector + PostgreSQL full text), the
    HNSW settings of its Postgres guide, fused the way that guide recommends: ``QueryFusionRetriever``
    over a dense and a sparse retriever, ``relative_score``, ``num_queries=1`` (no LLM query rewriting)."""

    key = "llamaindex"
    rows = ("LlamaIndex PGVectorStore hybrid",)

    @staticmethod
    def extra_texts(ds: Dataset) -> list[str]:
        try:
            from llama_index.core.schema import MetadataMode
        except ImportError:
            return []
        return [n.get_content(metadata_mode=MetadataMode.EMBED) for n in llama_nodes(ds)]

    def setup(self, ds: Dataset) -> None:
        from llama_index.core import VectorStoreIndex
        from llama_index.core.embeddings import BaseEmbedding
        from llama_index.vector_stores.postgres import PGVectorStore

        cache = self.cache

        class CachedEmbedding(BaseEmbedding):
            def _get_query_embedding(self, query: str) -> list[float]:
                return cache.one(query).tolist()  # type: ignore[no-any-return]

            async def _aget_query_embedding(self, query: str) -> list[float]:
                return self._get_query_embedding(query)

            def _get_text_embedding(self, text: str) -> list[float]:
                return cache.one(text).tolist()  # type: ignore[no-any-return]

            def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
                return [v.tolist() for v in cache.get(texts)]

        self.store = PGVectorStore(
            connection_string=self.url("psycopg2"), async_connection_string=self.url("asyncpg"), table_name="peers",
            embed_dim=384, hybrid_search=True, text_search_config="english", hnsw_kwargs=dict(LLAMA_HNSW),
        )
        embed_model = CachedEmbedding(model_name="all-MiniLM-L6-v2-int8")
        self.index = VectorStoreIndex.from_vector_store(self.store, embed_model=embed_model)
        self.retrievers: dict[str, Any] = {}

    def load(self, ds: Dataset) -> None:
        self.index.insert_nodes(llama_nodes(ds))

    def retriever(self, group: str) -> Any:
        if group not in self.retrievers:
            from llama_index.core.llms import MockLLM
            from llama_index.core.retrievers import QueryFusionRetriever
            from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
            from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters

            filters = None if group == "scifact" else MetadataFilters(filters=[MetadataFilter(key="conversation", value=group)])
            dense = self.index.as_retriever(vector_store_query_mode="default", similarity_top_k=K, filters=filters)
            sparse = self.index.as_retriever(vector_store_query_mode="sparse", similarity_top_k=K, filters=filters)
            self.retrievers[group] = QueryFusionRetriever(
                [dense, sparse], similarity_top_k=K, num_queries=1, mode=FUSION_MODES.RELATIVE_SCORE, use_async=False,
                llm=MockLLM(),
            )
        return self.retrievers[group]

    def search(self, row: str, query: Query) -> list[frozenset[str]]:
        from llama_index.core.schema import QueryBundle

        bundle = QueryBundle(query_str=query.text, embedding=self.cache.one(query.text).tolist())
        key = "dia_id" if query.group != "scifact" else "doc_id"
        return [frozenset({str(n.node.metadata.get(key))}) for n in self.retriever(query.group).retrieve(bundle)]
