from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from memory_engine.errors import EmbeddingError
from memory_engine.ports.embedder import Embedder, EmbeddingKind


class CountingEmbedder(Embedder):
    dimensions = 3
    model_id = "counting"
    batch_size = 2

    def __init__(self) -> None:
        super().__init__(query_cache_size=2)
        self.calls: list[tuple[list[str], EmbeddingKind]] = []

    def _embed_batch(self, texts: Sequence[str], kind: EmbeddingKind) -> Sequence[Sequence[float]]:
        self.calls.append((list(texts), kind))
        return [[float(len(t)), 1.0, 0.0] for t in texts]


def test_documents_are_batched_and_normalized() -> None:
    embedder = CountingEmbedder()
    vectors = embedder.embed_documents(["a", "bb", "ccc", "dddd", "e"])
    assert [len(batch) for batch, _ in embedder.calls] == [2, 2, 1]
    assert all(kind is EmbeddingKind.DOCUMENT for _, kind in embedder.calls)
    assert all(abs(float(np.linalg.norm(v)) - 1.0) < 1e-6 for v in vectors)


def test_repeated_queries_hit_the_lru_cache_and_old_ones_are_evicted() -> None:
    embedder = CountingEmbedder()
    first = embedder.embed_query("hello")
    again = embedder.embed_query("hello")
    assert np.array_equal(first, again) and embedder.cache_hits == 1 and len(embedder.calls) == 1
    assert embedder.calls[0][1] is EmbeddingKind.QUERY
    embedder.embed_query("two")
    embedder.embed_query("three")  # evicts "hello" (cache size 2)
    embedder.embed_query("hello")
    assert len(embedder.calls) == 4


def test_wrong_dimension_from_backend_is_an_embedding_error() -> None:
    class Broken(CountingEmbedder):
        def _embed_batch(self, texts: Sequence[str], kind: EmbeddingKind) -> Sequence[Sequence[float]]:
            return [[1.0, 2.0] for _ in texts]

    with pytest.raises(EmbeddingError, match="expected"):
        Broken().embed_documents(["x"])


def test_length_sorted_batches_still_return_vectors_in_input_order() -> None:
    embedder = CountingEmbedder()
    texts = ["ccccc", "a", "dddddddd", "bb", "e"]
    vectors = embedder.embed_documents(texts)
    assert [sorted(batch, key=len) == batch for batch, _ in embedder.calls] == [True, True, True]
    for text, vector in zip(texts, vectors, strict=True):
        expected = np.array([len(text), 1.0, 0.0]) / np.linalg.norm([len(text), 1.0, 0.0])
        assert np.allclose(vector, expected)
