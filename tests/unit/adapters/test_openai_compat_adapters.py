"""OpenAI-compatible adapters against a real local HTTP server speaking the OpenAI wire format."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer
from typing import Any

import httpx
import numpy as np
import pytest

from memory_engine.adapters.openai_compat.chat import OpenAICompatChat
from memory_engine.adapters.openai_compat.embedder import OpenAICompatEmbedder
from memory_engine.errors import ChatModelError, EmbeddingError, EmbeddingThrottled
from memory_engine.ports.chat import ChatMessage


class FakeOpenAI:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any], str | None]] = []
        self.fail_next: list[int] = []
        self.chat_reply = "hello"


@pytest.fixture
def server() -> Iterator[tuple[str, FakeOpenAI]]:
    state = FakeOpenAI()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            state.requests.append((self.path, body, self.headers.get("authorization")))
            if state.fail_next:
                status = state.fail_next.pop(0)
                self.send_response(status)
                self.end_headers()
                self.wfile.write(b'{"error": {"message": "nope"}}')
                return
            if self.path.endswith("/embeddings"):
                data = [{"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, 0.0]}
                        for i, t in enumerate(body["input"])]
                reply: dict[str, Any] = {"object": "list", "data": list(reversed(data)), "model": body["model"]}
            else:
                reply = {"id": "c1", "object": "chat.completion", "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": state.chat_reply}, "finish_reason": "stop"}]}
            payload = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", state
    httpd.shutdown()


def test_embeddings_are_ordered_by_index_normalized_and_authenticated(server: tuple[str, FakeOpenAI]) -> None:
    url, state = server
    embedder = OpenAICompatEmbedder(url, model_id="nomic-embed-text", dimensions=3, api_key="sk-test")
    vectors = embedder.embed_documents(["a", "bbb"])
    assert np.allclose(vectors[0], np.array([1, 1, 0]) / np.sqrt(2))
    assert np.allclose(vectors[1], np.array([3, 1, 0]) / np.sqrt(10))
    path, body, auth = state.requests[0]
    assert path == "/v1/embeddings" and body == {"model": "nomic-embed-text", "input": ["a", "bbb"]}
    assert auth == "Bearer sk-test"


def test_embeddings_retry_on_429_and_raise_throttled_when_it_persists(server: tuple[str, FakeOpenAI]) -> None:
    url, state = server
    embedder = OpenAICompatEmbedder(url, model_id="m", dimensions=3)
    state.fail_next = [429]
    assert embedder.embed_query("q").shape == (3,)
    state.fail_next = [429] * 5
    with pytest.raises(EmbeddingThrottled):
        embedder.embed_documents(["x"])


def test_chat_sends_temperature_zero_and_system_first(server: tuple[str, FakeOpenAI]) -> None:
    url, state = server
    chat = OpenAICompatChat(url, model_id="llama3.1")
    assert chat.complete([ChatMessage("user", "hi")], system="be terse", model="qwen2.5") == "hello"
    _, body, _ = state.requests[-1]
    assert body["temperature"] == 0 and body["model"] == "qwen2.5" and body["stream"] is False
    assert body["messages"] == [{"role": "system", "content": "be terse"}, {"role": "user", "content": "hi"}]
    assert "tools" not in body


def test_chat_empty_reply_and_http_errors_raise(server: tuple[str, FakeOpenAI]) -> None:
    url, state = server
    chat = OpenAICompatChat(url, model_id="m", attempts=1)
    state.chat_reply = ""
    with pytest.raises(ChatModelError, match="empty"):
        chat.complete([ChatMessage("user", "hi")])
    state.fail_next = [500]
    with pytest.raises(ChatModelError, match="HTTP 500"):
        chat.complete([ChatMessage("user", "hi")])


@pytest.fixture
def dripping() -> Iterator[str]:
    """An endpoint that answers 200 and then one byte of its body every 0.3 s (each read is quick)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            payload = json.dumps({"object": "list", "data": [{"index": 0, "embedding": [1.0, 0.0, 0.0]}]}).encode()
            self.send_response(200)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            try:
                for byte in payload:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(0.3)
            except OSError:
                pass  # the client gave up

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


def test_the_timeout_bounds_the_whole_answer_not_each_read(dripping: str) -> None:
    # Given an endpoint that would take ~20 s to send its answer, each byte well within the timeout
    embedder = OpenAICompatEmbedder(dripping, model_id="m", dimensions=3, timeout=1.0)
    # Then the call fails at the deadline, saying so
    with pytest.raises(EmbeddingError, match="no complete answer within 1 s"):
        embedder.embed_documents(["a"])


def test_an_injected_client_carries_every_call() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path.endswith("/embeddings"):
            return httpx.Response(200, json={"data": [{"index": 0, "embedding": [0.0, 1.0, 0.0]}]})
        return httpx.Response(200, json={"choices": [{"message": {"content": "ok"}}]})

    client = httpx.Client(transport=httpx.MockTransport(answer))
    embedder = OpenAICompatEmbedder("https://models.example/v1", model_id="m", dimensions=3, api_key="k", client=client)
    chat = OpenAICompatChat("https://models.example/v1", model_id="c", client=client)
    assert np.allclose(embedder.embed_documents(["a"])[0], [0.0, 1.0, 0.0])
    assert chat.complete([ChatMessage("user", "hi")]) == "ok"
    assert [r.url.path for r in seen] == ["/v1/embeddings", "/v1/chat/completions"]
    assert seen[0].headers["authorization"] == "Bearer k" and "authorization" not in seen[1].headers
