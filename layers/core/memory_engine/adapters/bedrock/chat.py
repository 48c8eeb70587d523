"""Bedrock Converse chat model (temperature 0, no tools)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from memory_engine.adapters.retry import with_backoff
from memory_engine.errors import ChatModelError
from memory_engine.ports.chat import ChatModel, ChatRequest

THROTTLING_CODES = {"ThrottlingException", "ServiceUnavailableException", "ModelNotReadyException"}


class BedrockConverseChat(ChatModel):
    def __init__(self, client: Any, *, model_id: str, attempts: int = 3) -> None:
        self._client = client
        self.model_id = model_id
        self._attempts = attempts

    def _complete(self, chat: ChatRequest) -> str:
        request: dict[str, Any] = {
            "modelId": chat.model or self.model_id,
            "messages": [{"role": m.role, "content": [{"text": m.content}]} for m in chat.messages],
            "inferenceConfig": {"temperature": 0.0, "maxTokens": chat.max_tokens},
        }
        if chat.system:
            request["system"] = [{"text": chat.system}]

        def call() -> Any:
            return self._client.converse(**request)

        try:
            response = with_backoff(
                call,
                retry_on=lambda e: isinstance(e, ClientError)
                and e.response.get("Error", {}).get("Code") in THROTTLING_CODES,
                attempts=self._attempts,
            )
        except (ClientError, BotoCoreError) as exc:
            raise ChatModelError(f"Bedrock Converse failed: {exc}") from exc
        blocks = response.get("output", {}).get("message", {}).get("content", [])
        text = "".join(block.get("text", "") for block in blocks if isinstance(block, dict))
        if not text.strip():
            raise ChatModelError(f"Bedrock Converse returned no text (stopReason={response.get('stopReason')})")
        return text
