"""Any OpenAI-compatible ``/v1/chat/completions`` endpoint (e.g. a local Ollama)."""

from __future__ import annotations

from typing import Any

import httpx

from memory_engine.adapters.openai_compat.http import JsonEndpoint, is_retryable
from memory_engine.adapters.retry import with_backoff
from memory_engine.errors import ChatModelError
from memory_engine.ports.chat import ChatModel, ChatRequest


class OpenAICompatChat(ChatModel):
    def __init__(self, base_url: str, *, model_id: str, api_key: str | None = None, attempts: int = 3,
                 client: httpx.Client | None = None) -> None:
        self._endpoint = JsonEndpoint(base_url.rstrip("/") + "/chat/completions", api_key=api_key, client=client)
        self._url = self._endpoint.url
        self.model_id = model_id
        self._attempts = attempts

    def _complete(self, request: ChatRequest) -> str:
        wire: list[dict[str, str]] = [{"role": "system", "content": request.system}] if request.system else []
        wire += [{"role": m.role, "content": m.content} for m in request.messages]
        payload: dict[str, Any] = {
            "model": request.model or self.model_id,
            "messages": wire,
            "temperature": 0,
            "max_tokens": request.max_tokens,
            "stream": False,
        }
        try:
            body = with_backoff(
                lambda: self._endpoint.post(payload, timeout=request.timeout),
                retry_on=is_retryable,
                attempts=self._attempts,
            )
            text = body["choices"][0]["message"]["content"] or ""
        except Exception as exc:
            raise ChatModelError(f"chat endpoint {self._url} failed: {exc}") from exc
        if not str(text).strip():
            raise ChatModelError(f"chat endpoint {self._url} returned an empty reply")
        return str(text)
