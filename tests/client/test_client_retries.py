"""Retries, backoff and timeouts of the client, on httpx's mock transport (no network): idempotent
calls are retried on 429/5xx and connection errors, writes never are."""

from __future__ import annotations

import json

import httpx
import pytest

from memory_engine_client import (
    APIConnectionError,
    APITimeoutError,
    MemoryEngineClient,
    RateLimitError,
    ServerError,
)
from memory_engine_client._core import RetryPolicy

HEALTH = {"status": "ok", "version": "0.1.0", "database": True}


def _client(handler: object, max_retries: int = 2) -> MemoryEngineClient:
    transport = httpx.MockTransport(handler)  # type: ignore[arg-type]
    return MemoryEngineClient("http://engine", "me_k", max_retries=max_retries, backoff=0.0,
                              http_client=httpx.Client(base_url="http://engine", transport=transport))


def _error(status: int, code: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": code, "details": None}})


def test_an_idempotent_call_is_retried_on_503_then_succeeds() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return _error(503, "database_error") if len(calls) < 3 else httpx.Response(200, json=HEALTH)

    assert _client(handler).health().status == "ok"
    assert len(calls) == 3 and calls[0].headers["authorization"] == "Bearer me_k"


def test_retries_stop_after_max_retries_with_the_typed_error() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return _error(429, "rate_limited")

    with pytest.raises(RateLimitError) as caught:
        _client(handler, max_retries=1).list_memories()
    assert len(calls) == 2 and caught.value.code == "rate_limited"


def test_a_write_is_never_retried() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return _error(503, "dependency_unavailable")

    with pytest.raises(ServerError):
        _client(handler).write_entry("mem_1", "a fact")
    assert len(calls) == 1
    assert json.loads(calls[0].content) == {"memory_id": "mem_1", "content": "a fact"}  # unset fields are not sent


def test_connection_errors_and_timeouts_are_typed() -> None:
    attempts: list[int] = []

    def refused(request: httpx.Request) -> httpx.Response:
        attempts.append(1)
        raise httpx.ConnectError("refused")

    with pytest.raises(APIConnectionError):
        _client(refused).health()
    assert len(attempts) == 3

    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow")

    with pytest.raises(APITimeoutError):
        _client(slow, max_retries=0).health()


def test_backoff_grows_is_capped_and_honours_retry_after() -> None:
    policy = RetryPolicy(max_retries=5, backoff=1.0, max_backoff=4.0)
    assert 0.5 <= policy.delay(0) <= 1.0 and 2.0 <= policy.delay(2) <= 4.0 and policy.delay(10) <= 4.0
    assert policy.delay(0, httpx.Response(429, headers={"Retry-After": "3"})) == 3.0


def test_a_batch_write_and_forget_are_retried_an_import_never() -> None:
    calls: list[httpx.Request] = []
    batch = {"results": [], "created": 0, "skipped": 0, "rejected": 0}
    counts = {"deleted": {"entries": 0, "episodes": 0, "extraction_runs": 0, "entities": 0}}

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if len(calls) % 2:
            return _error(503, "database_error")
        return httpx.Response(200, json=batch if request.url.path.endswith("/batch") else counts)

    client = _client(handler)
    assert client.write_entries([{"memory_id": "mem_1", "content": "a fact"}]).created == 0
    assert len(calls) == 2  # a repeat of the batch skips what is stored: safe
    assert json.loads(calls[1].content) == {"entries": [{"memory_id": "mem_1", "content": "a fact"}]}
    assert client.forget(conversation_id="conv-1").deleted.entries == 0
    assert len(calls) == 4 and json.loads(calls[3].content) == {"conversation_id": "conv-1"}

    calls.clear()
    with pytest.raises(ServerError):
        client.import_memory([{"type": "header"}, {"type": "memory"}])
    assert len(calls) == 1  # every import creates a memory: never repeated
    assert calls[0].headers["content-type"] == "application/x-ndjson"
    assert calls[0].content == b'{"type":"header"}\n{"type":"memory"}\n'


def test_an_export_is_retried_before_it_streams_then_yields_parsed_lines() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if len(calls) == 1:
            return _error(429, "rate_limited")
        return httpx.Response(200, content=b'{"type":"header"}\n\n{"type":"memory","id":"mem_1"}\n',
                              headers={"Content-Type": "application/x-ndjson"})

    lines = list(_client(handler).export_memory("mem_1", vectors=False))
    assert lines == [{"type": "header"}, {"type": "memory", "id": "mem_1"}]
    assert len(calls) == 2 and calls[1].url.path == "/v1/memories/mem_1/export"
    assert calls[1].url.params["vectors"] == "false"


def test_delete_memory_is_none_on_204_and_the_counts_on_a_purge() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.params.get("purge") == "true":
            return httpx.Response(200, json={"deleted": {"entries": 3, "episodes": 1, "extraction_runs": 2,
                                                         "entities": 1}})
        return httpx.Response(204)

    client = _client(handler)
    assert client.delete_memory("mem_1") is None
    purged = client.delete_memory("mem_1", purge=True)
    assert purged is not None and (purged.deleted.entries, purged.deleted.extraction_runs) == (3, 2)
