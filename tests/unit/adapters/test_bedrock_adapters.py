"""Bedrock adapters against botocore's Stubber: real request validation, real response shapes."""

from __future__ import annotations

import io
import json
from typing import Any

import boto3
import numpy as np
import pytest
from botocore.awsrequest import AWSResponse
from botocore.response import StreamingBody
from botocore.stub import Stubber

from memory_engine.adapters.bedrock.chat import BedrockConverseChat
from memory_engine.adapters.bedrock.embedder import BedrockTitanEmbedder
from memory_engine.bootstrap import AWS_MAX_ATTEMPTS
from memory_engine.errors import ChatModelError, ConfigurationError, EmbeddingThrottled
from memory_engine.ports.chat import ChatMessage


def _client():  # type: ignore[no-untyped-def]
    return boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")


def _titan_body(vector: list[float]) -> StreamingBody:
    raw = json.dumps({"embedding": vector, "inputTextTokenCount": 3}).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


def test_titan_v2_request_shape_and_normalized_vectors() -> None:
    client = _client()
    embedder = BedrockTitanEmbedder(client, dimensions=256)
    with Stubber(client) as stub:
        stub.add_response(
            "invoke_model",
            {"body": _titan_body([3.0, 4.0] + [0.0] * 254), "contentType": "application/json"},
            {"modelId": "amazon.titan-embed-text-v2:0", "body": json.dumps(
                {"inputText": "hello world", "dimensions": 256, "normalize": True}),
             "contentType": "application/json", "accept": "application/json"},
        )
        (vector,) = embedder.embed_documents(["hello world"])
        stub.assert_no_pending_responses()
    assert vector.shape == (256,) and np.isclose(vector[0], 0.6) and np.isclose(np.linalg.norm(vector), 1.0)


def _answering(client: Any, statuses: list[int], ok_body: bytes) -> list[int]:
    """Answer the client's HTTP sends (under botocore's retry loop, unlike Stubber) with ``statuses``
    in turn, a throttling error for 429 and ``ok_body`` for 200; returns the statuses sent."""
    sent: list[int] = []

    def send(request: Any, **_: Any) -> AWSResponse:
        status = statuses[len(sent)] if len(sent) < len(statuses) else statuses[-1]
        sent.append(status)
        body = ok_body if status == 200 else b'{"message": "slow down"}'
        headers = {"x-amzn-ErrorType": "ThrottlingException"} if status == 429 else {}
        raw = _RawBody(body)
        return AWSResponse(request.url, status, {"content-type": "application/json", **headers}, raw)

    client.meta.events.register("before-send.bedrock-runtime.InvokeModel", send)
    return sent


class _RawBody(io.BytesIO):
    def stream(self, **_: Any) -> Any:
        yield self.getvalue()


def _production_client(monkeypatch: pytest.MonkeyPatch) -> Any:
    from memory_engine.bootstrap import Container
    from memory_engine.settings import Settings

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "x")
    monkeypatch.setattr("botocore.retries.standard.ExponentialBackoff.delay_amount", lambda *_: 0.0)
    return Container(Settings(AWS_REGION="us-east-1")).aws.client("bedrock-runtime")  # type: ignore[call-arg]


def test_throttling_is_retried_by_botocore_alone_then_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    ok = json.dumps({"embedding": [1.0] + [0.0] * 255, "inputTextTokenCount": 1}).encode()
    # Given the client the composition root builds, and Bedrock throttling once
    client = _production_client(monkeypatch)
    sent = _answering(client, [429, 200], ok)
    # Then one retry (botocore's) answers, and the adapter sends nothing more of its own
    assert BedrockTitanEmbedder(client, dimensions=256).embed_query("q").shape == (256,)
    assert sent == [429, 200]
    # And when it keeps throttling, 3 attempts in all (not botocore's times an adapter loop's), then a typed error
    client = _production_client(monkeypatch)
    sent = _answering(client, [429], ok)
    with pytest.raises(EmbeddingThrottled):
        BedrockTitanEmbedder(client, dimensions=256).embed_documents(["again"])
    assert sent == [429] * AWS_MAX_ATTEMPTS


def test_titan_rejects_unsupported_dimensions() -> None:
    with pytest.raises(ConfigurationError, match="256, 512, 1024"):
        BedrockTitanEmbedder(_client(), dimensions=384)


def test_converse_sends_temperature_zero_no_tools_and_returns_text() -> None:
    client = _client()
    chat = BedrockConverseChat(client, model_id="anthropic.claude-3-5-haiku-20241022-v1:0")
    with Stubber(client) as stub:
        stub.add_response(
            "converse",
            {
                "output": {"message": {"role": "assistant", "content": [{"text": '[{"content": "x"}]'}]}},
                "stopReason": "end_turn",
                "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
                "metrics": {"latencyMs": 12},
            },
            {
                "modelId": "anthropic.claude-3-5-haiku-20241022-v1:0",
                "messages": [{"role": "user", "content": [{"text": "extract"}]}],
                "system": [{"text": "you extract facts"}],
                "inferenceConfig": {"temperature": 0.0, "maxTokens": 1024},
            },
        )
        text = chat.complete([ChatMessage("user", "extract")], system="you extract facts")
    assert text == '[{"content": "x"}]'


def test_converse_blank_reply_and_errors_are_chat_model_errors() -> None:
    client = _client()
    chat = BedrockConverseChat(client, model_id="m")
    with Stubber(client) as stub:
        stub.add_response("converse", {
            "output": {"message": {"role": "assistant", "content": [{"text": "  "}]}}, "stopReason": "end_turn",
            "usage": {"inputTokens": 1, "outputTokens": 0, "totalTokens": 1}, "metrics": {"latencyMs": 1}})
        with pytest.raises(ChatModelError, match="no text"):
            chat.complete([ChatMessage("user", "x")])
        stub.add_client_error("converse", "ValidationException", "bad model", 400)
        with pytest.raises(ChatModelError, match="ValidationException"):
            chat.complete([ChatMessage("user", "x")])
