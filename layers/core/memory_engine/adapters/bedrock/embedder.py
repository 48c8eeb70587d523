"""Bedrock Titan Text Embeddings V2 (``amazon.titan-embed-text-v2:0``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from memory_engine.errors import ConfigurationError, EmbeddingError, EmbeddingThrottled
from memory_engine.ports.embedder import Embedder, EmbeddingKind

TITAN_V2 = "amazon.titan-embed-text-v2:0"
TITAN_V2_DIMENSIONS = (256, 512, 1024)
THROTTLING_CODES = {"ThrottlingException", "ServiceUnavailableException", "ModelNotReadyException"}
MAX_INPUT_CHARS = 50_000  # Titan V2 takes up to 8k tokens; stay well inside


class BedrockTitanEmbedder(Embedder):
    """One InvokeModel call per text (Titan V2 has no batch API); normalized vectors."""

    batch_size = 16

    def __init__(
        self,
        client: Any,
        *,
        model_id: str = TITAN_V2,
        dimensions: int = 1024,
        query_cache_size: int = 1024,
    ) -> None:
        super().__init__(query_cache_size=query_cache_size)
        if model_id == TITAN_V2 and dimensions not in TITAN_V2_DIMENSIONS:
            raise ConfigurationError(
                f"Titan Text Embeddings V2 supports dimensions {TITAN_V2_DIMENSIONS}, not {dimensions}"
            )
        self._client = client
        self.model_id = model_id
        self.dimensions = dimensions

    def _embed_one(self, text: str) -> list[float]:
        body = json.dumps(
            {"inputText": text[:MAX_INPUT_CHARS] or " ", "dimensions": self.dimensions, "normalize": True}
        )

        try:  # throttling and 5xx: retried by the client's botocore retry mode, not here
            response = self._client.invoke_model(
                modelId=self.model_id, body=body, contentType="application/json", accept="application/json"
            )
            payload = json.loads(response["body"].read())
            return list(payload["embedding"])
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            error = EmbeddingThrottled if code in THROTTLING_CODES else EmbeddingError
            raise error(f"Bedrock embedding failed: {code}: {exc}") from exc
        except (BotoCoreError, KeyError, ValueError) as exc:
            raise EmbeddingError(f"Bedrock embedding failed: {exc}") from exc

    def _embed_batch(self, texts: Sequence[str], kind: EmbeddingKind) -> Sequence[Sequence[float]]:
        return [self._embed_one(text) for text in texts]

