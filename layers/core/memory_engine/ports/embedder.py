"""The Embedder port: text in, unit-length vectors out."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence
from enum import Enum

import numpy as np

from memory_engine.domain.vectors import Vector as Vector  # re-exported: the port speaks in it


class EmbeddingKind(str, Enum):
    """Asymmetric models (e5, nomic) embed queries and passages differently."""

    QUERY = "query"
    DOCUMENT = "document"


class Embedder(ABC):
    """Template method: subclasses implement :meth:`_embed_batch`; this class batches,
    normalizes and caches query embeddings (a small LRU, so repeated searches skip the model).

    Raises :class:`memory_engine.errors.EmbeddingError` (or its subclass
    ``EmbeddingThrottled``) when the backing model fails.
    """

    #: Vector length every call returns.
    dimensions: int
    #: Stable id of the model, recorded so a model change is detectable.
    model_id: str
    #: How many texts one call to the backend takes.
    batch_size: int = 32

    def __init__(self, *, query_cache_size: int = 1024) -> None:
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._cache_size = query_cache_size
        self._cache_lock = threading.Lock()
        self.cache_hits = 0

    @abstractmethod
    def _embed_batch(self, texts: Sequence[str], kind: EmbeddingKind) -> Sequence[Sequence[float]]:
        """Embed at most ``batch_size`` texts (not necessarily normalized)."""

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed passages/facts for storage, in batches of ``batch_size``; results in input order.

        Texts are batched by length so a batch pads to similar lengths (measured ~40% more
        throughput on the local model, docs/embeddings.md)."""
        out: list[Vector | None] = [None] * len(texts)
        for indexes in self._groups(texts):
            vectors = self._normalized(self._embed_batch([texts[i] for i in indexes], EmbeddingKind.DOCUMENT))
            for index, vector in zip(indexes, vectors, strict=True):
                out[index] = vector
        return [v for v in out if v is not None]

    def _groups(self, texts: Sequence[str]) -> list[list[int]]:
        """The model calls for ``texts``: lists of indexes, shortest texts first, ``batch_size`` a call.
        A local model may group by its own measure of work instead (tokens, not texts)."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        return [order[start : start + self.batch_size] for start in range(0, len(order), self.batch_size)]

    def embed_document(self, text: str) -> Vector:
        return self.embed_documents([text])[0]

    def embed_query(self, text: str) -> Vector:
        """Embed a search query; repeated queries are served from the LRU cache."""
        with self._cache_lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                self.cache_hits += 1
                return hit
        vector = self._normalized(self._embed_batch([text], EmbeddingKind.QUERY))[0]
        with self._cache_lock:
            self._cache[text] = vector
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return vector

    def _normalized(self, rows: Sequence[Sequence[float]]) -> list[Vector]:
        matrix = np.asarray(rows, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[1] != self.dimensions:
            from memory_engine.errors import EmbeddingError

            raise EmbeddingError(
                f"embedding model returned shape {matrix.shape}, expected (n, {self.dimensions})"
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return list(matrix / norms)
