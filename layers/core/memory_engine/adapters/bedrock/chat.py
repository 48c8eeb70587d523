"""Bedrock Converse chat model (temperature 0, no tools). Throttling and 5xx are retried by the
client's botocore retry mode (the composition root builds it), not here."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from memory_engine.errors import ChatModelError
from memory_engine.ports.chat import ChatModel, ChatRequest


class BedrockConverseChat(ChatModel):
    def __init__(self, client: Any, *, model_id: str) -> None:
        self._client = client
        self.model_id = model_id

    def _complete(self, chat: ChatRequest) -> str:
        request: dict[str, Any] = {
            "modelId": chat.model or self.model_id,
            "messages": [{"role": m.role, "content": [{"text": m.content}]} for m in chat.messages],
            "inferenceConfig": {"temperature": 0.0, "maxTokens": chat.max_tokens},
        }
        if chat.system:
            request["system"] = [{"text": chat.system}]

        try:
            response = self._client.converse(**request)
        except (ClientError, BotoCoreError) as exc:
            raise ChatModelError(f"Bedrock Converse failed: {exc}") from exc
        blocks = response.get("output", {}).get("message", {}).get("content", [])
        text = "".join(block.get("text", "") for block in blocks if isinstance(block, dict))
        if not text.strip():
            raise ChatModelError(f"Bedrock Converse returned no text (stopReason={response.get('stopReason')})")
        return text
