"""MemPalace (PyPI ``mempalace``): a local-first memory on ChromaDB, its own hybrid search, the shared embedder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from peer_systems.base import (
    Dataset,
    K,
    Query,
    System,
    VectorCache,
)

#: One room per wing: the bench has nothing to route turns or abstracts by.
ROOM = "memories"
#: ``mempalace_search``'s default distance bound (MCP tool and light server): what an agent gets.
MCP_MAX_DISTANCE = 1.5
#: row -> ``search_memories(candidate_strategy=...)``: its default (vector candidates, BM25 re-rank) and
#: "union" (BM25 candidates from the backend's lexical index join the vector ones before the re-rank).
STRATEGIES = {"MemPalace hybrid (union)": "union", "MemPalace hybrid (vector candidates)": "vector"}


def isolate(home: Path) -> None:
    """MemPalace reads its config from ``~/.mempalace`` or ``~/.config/mempalace``: point it at the
    run's home instead, pin the ONNX device the embedder cache is keyed by, and keep ChromaDB's
    telemetry off (MemPalace turns it off too; the machine cannot reach PostHog)."""
    os.environ.update(MEMPALACE_CONFIG_DIR=str(home / "config"), MEMPALACE_EMBEDDING_DEVICE="cpu",
                      MEMPALACE_BACKEND="chroma", ANONYMIZED_TELEMETRY="False")
    for name in ("MEMPALACE_EMBEDDING_MODEL", "MEMPALACE_LANG", "MEMPAL_LANG", "MEMPALACE_HYBRID_VECTOR_WEIGHT",
                 "MEMPALACE_HYBRID_BM25_WEIGHT", "MEMPALACE_PALACE_PATH"):
        os.environ.pop(name, None)


def install_cached_embedder(cache: VectorCache) -> Any:
    """MemPalace's default embedder is ChromaDB's ONNX all-MiniLM-L6-v2 (``embedding_model`` "minilm"),
    which downloads its model from S3 on first use: not possible here. The shared vectors (the same
    model, int8) go in through MemPalace's own embedder cache instead: a subclass of the class
    ``get_embedding_function`` builds for "minilm" (ChromaDB name "default", so the palace records the
    identity it always does), whose forward pass serves the cache. Every path that embeds
    (``configured_embedding_function``, the backend's explicit vectors, the dimension probe) then gets it."""
    import numpy as np
    from mempalace import embedding

    base = embedding._build_ef_class()  # type: ignore[no-untyped-call]

    class CachedMiniLM(base):  # type: ignore[misc, valid-type]
        def _forward(self, documents: list[str], batch_size: int = 32) -> Any:
            return np.stack(cache.get(list(documents))) if documents else np.zeros((0, 384), dtype=np.float32)

        def _download_model_if_not_exists(self) -> None:  # the vectors are local; nothing to fetch
            return None

    providers, _ = embedding._resolve_providers("cpu", "minilm")
    function = CachedMiniLM(preferred_providers=providers)
    embedding._EF_CACHE[("minilm", tuple(providers))] = function
    assert embedding.get_embedding_function() is function, "MemPalace did not pick up the cached embedder"
    return function


class MemPalace(System):
    """MemPalace 3.x, its default local backend (ChromaDB, a persistent palace in the run's directory).
    Each unit is one drawer (``miner.add_drawer``: wing = the conversation, or "scifact"; the
    conversation as its source file and the unit's position as its chunk index, as its miner files
    chunks); ``searcher.search_memories`` scoped by ``wing`` (SciFact: the whole palace), top 10, with
    ``mempalace_search``'s default ``max_distance``; one row per candidate strategy."""

    key = "mempalace"
    rows = tuple(STRATEGIES)
    uses_postgres = False

    def setup(self, ds: Dataset) -> None:
        isolate(self.home)
        install_cached_embedder(self.cache)
        from mempalace.palace import get_collection  # type: ignore[attr-defined]  # re-exported, untyped

        self.palace = str(self.home / "palace")
        self.collection = get_collection(self.palace, create=True)
        self.labels: dict[str, str] = {}

    def load(self, ds: Dataset) -> None:
        from mempalace.ids import make_drawer_id_from_chunk
        from mempalace.miner import add_drawer

        for group, units in ds.groups().items():
            wing = wing_name(group)
            for index, unit in enumerate(units):
                add_drawer(self.collection, wing, ROOM, unit.text, group, index, "peers-bench")
                self.labels[make_drawer_id_from_chunk(wing, ROOM, group, index)] = unit.label

    def search(self, row: str, query: Query) -> list[frozenset[str]]:
        from mempalace.searcher import search_memories  # type: ignore[attr-defined]  # defined by exec'd fragments

        wing = None if query.group == "scifact" else wing_name(query.group)  # the whole corpus, like the other peers
        found = search_memories(query.text, self.palace, wing=wing, n_results=K,
                                max_distance=MCP_MAX_DISTANCE, candidate_strategy=STRATEGIES[row])
        if "error" in found:
            raise RuntimeError(f"MemPalace search failed: {found['error']} {found.get('details', '')}")
        return [frozenset({self.labels[hit["drawer_id"]]}) for hit in found["results"]]


def wing_name(group: str) -> str:
    """A wing name MemPalace accepts (letters, digits, ``_ - .``; LoCoMo's ids already are)."""
    return "".join(c if c.isalnum() or c in "_-." else "_" for c in group)
