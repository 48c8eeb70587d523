"""Any OpenAI-compatible ``/v1/chat/completions`` endpoint (e.g. a local Ollama)."""

from __future__ import annotations

from typing import Any

from memory_engine.adapters.openai_compat.http import is_retryable, post_json
from memory_engine.adapters.retry import with_backoff
from memory_engine.errors import ChatModelError
from memory_engine.ports.chat import ChatMessage, ChatModel


class OpenAICompatChat(ChatModel):
    def __init__(self, base_url: str, *, model_id: str, api_key: str | None = None, attempts: int = 3) -> None:
        self._url = base_url.rstrip("/") + "/chat/completions"
        self.model_id = model_id
        self._api_key = api_key
        self._attempts = attempts

    def complete(
        self,
        messages: list[ChatMessage],
        *,
        system: str | None = None,
        model: str | None = None,
        max_tokens: int = 1024,
        timeout: float = 30.0,
    ) -> str:
        wire: list[dict[str, str]] = [{"role": "system", "content": system}] if system else []
        wire += [{"role": m.role, "content": m.content} for m in messages]
        payload: dict[str, Any] = {
            "model": model or self.model_id,
            "messages": wire,
            "temperature": 0,
            "max_tokens": max_tokens,
            "stream": False,
        }
        try:
            body = with_backoff(
                lambda: post_json(self._url, payload, api_key=self._api_key, timeout=timeout),
                retry_on=is_retryable,
                attempts=self._attempts,
            )
            text = body["choices"][0]["message"]["content"] or ""
        except Exception as exc:
            raise ChatModelError(f"chat endpoint {self._url} failed: {exc}") from exc
        if not str(text).strip():
            raise ChatModelError(f"chat endpoint {self._url} returned an empty reply")
        return str(text)
