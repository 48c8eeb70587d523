"""An Embedder wrapper that keeps document vectors on disk, so evaluation reruns skip the model."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memory_engine.ports.embedder import Embedder, EmbeddingKind, Vector


class DiskCachedEmbedder(Embedder):
    """Delegates to ``inner``; document vectors are stored as ``<dir>/<model id>/<sha256>.npy``
    (keyed by model id and text), query vectors use the port's in-memory LRU."""

    def __init__(self, inner: Embedder, cache_dir: Path) -> None:
        super().__init__()
        self.inner = inner
        self.dimensions = inner.dimensions
        self.model_id = inner.model_id
        self.batch_size = inner.batch_size
        self.dir = cache_dir / re.sub(r"[^A-Za-z0-9._-]", "_", inner.model_id)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.disk_hits = 0

    def _path(self, text: str) -> Path:
        return self.dir / (hashlib.sha256(text.encode("utf-8")).hexdigest()[:40] + ".npy")

    def _embed_batch(self, texts: Sequence[str], kind: EmbeddingKind) -> Sequence[Sequence[float]]:
        return self.inner._embed_batch(texts, kind)

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        out: list[Vector | None] = [None] * len(texts)
        missing: list[int] = []
        for i, text in enumerate(texts):
            path = self._path(text)
            if path.exists():
                out[i] = np.load(path)
                self.disk_hits += 1
            else:
                missing.append(i)
        for start in range(0, len(missing), 256):  # saved as it goes: an interrupted run keeps its work
            part = missing[start : start + 256]
            vectors = self.inner.embed_documents([texts[i] for i in part])
            for i, vector in zip(part, vectors, strict=True):
                np.save(self._path(texts[i]), vector.astype(np.float32))
                out[i] = vector
        return [v for v in out if v is not None]

    def embed_query(self, text: str) -> Vector:
        path = self._path("query\x00" + text)
        if path.exists():
            self.disk_hits += 1
            return np.load(path)  # type: ignore[no-any-return]
        vector = super().embed_query(text)
        np.save(path, vector.astype(np.float32))
        return vector
