"""Any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, Ollama, vLLM, LiteLLM...)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx

from memory_engine.adapters.openai_compat.http import HttpStatusError, JsonEndpoint, is_retryable
from memory_engine.adapters.retry import with_backoff
from memory_engine.errors import EmbeddingError, EmbeddingThrottled
from memory_engine.ports.embedder import Embedder, EmbeddingKind


class OpenAICompatEmbedder(Embedder):
    batch_size = 64

    def __init__(
        self,
        base_url: str,
        *,
        model_id: str,
        dimensions: int,
        api_key: str | None = None,
        timeout: float = 30.0,
        send_dimensions: bool = False,
        query_cache_size: int = 1024,
        client: httpx.Client | None = None,
    ) -> None:
        super().__init__(query_cache_size=query_cache_size)
        self._endpoint = JsonEndpoint(base_url.rstrip("/") + "/embeddings", api_key=api_key, client=client)
        self._url = self._endpoint.url
        self.model_id = model_id
        self.dimensions = dimensions
        self._timeout = timeout
        self._send_dimensions = send_dimensions

    def _embed_batch(self, texts: Sequence[str], kind: EmbeddingKind) -> Sequence[Sequence[float]]:
        payload: dict[str, Any] = {"model": self.model_id, "input": list(texts)}
        if self._send_dimensions:
            payload["dimensions"] = self.dimensions
        try:
            body = with_backoff(
                lambda: self._endpoint.post(payload, timeout=self._timeout),
                retry_on=is_retryable,
            )
            rows = sorted(body["data"], key=lambda item: item.get("index", 0))
            return [row["embedding"] for row in rows]
        except HttpStatusError as exc:
            error = EmbeddingThrottled if exc.status == 429 else EmbeddingError
            raise error(f"embedding endpoint {self._url} failed: {exc}") from exc
        except (OSError, httpx.HTTPError, KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError(f"embedding endpoint {self._url} failed: {exc}") from exc
