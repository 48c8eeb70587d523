"""The local engine under concurrency (issue 11, defects 5 and 6, and the bounded load proof).

`memory-engine dev`'s engine with two worker processes on the module's database, driven over
127.0.0.1 by bench/load.py's own code: mixed load at 1, 8 and 32 clients and a burst of 200 fresh
connections give 0 errors, 0 resets and 0 lost writes; a large request occupies one worker while
health and other requests are answered; a worker's memory returns to its baseline afterwards."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from memory_engine.domain.requests import MAX_TOTAL_CHARS
from memory_engine.local.engine import LocalEngine
from memory_engine.settings import Settings
from tests.support.bench import bench_module


@pytest.fixture(scope="module")
def load() -> ModuleType:
    return bench_module("load")


@pytest.fixture(scope="module")
def engine(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEngine]:
    home = tmp_path_factory.mktemp("home")
    settings = Settings(DATABASE_URL=database_url, MEMORY_ENGINE_HOME=str(home))  # type: ignore[call-arg]
    engine = LocalEngine(settings, port=0, workers=2)
    engine.start()
    assert engine.admin_key and engine.pool is not None
    yield engine
    engine.stop()


def _url(engine: LocalEngine) -> str:
    assert engine.gateway is not None
    return engine.gateway.base_url


def _call(engine: LocalEngine, method: str, path: str, body: Any = None, timeout: float = 60) -> tuple[int, Any, float]:
    request = urllib.request.Request(
        _url(engine) + path, method=method, data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {engine.admin_key}", "Content-Type": "application/json"},
    )
    began = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read()), time.perf_counter() - began
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), time.perf_counter() - began


def _largest_embedding_request() -> dict[str, Any]:
    words = "river stone cloud amber harbor meadow falcon glacier lantern quartz".split()
    text = " ".join(words[i % len(words)] for i in range(400))[:1000]
    return {"inputs": [text] * (MAX_TOTAL_CHARS // 1000)}  # 32 full-length passages: the costliest allowed


def test_a_large_request_occupies_one_worker_while_others_answer(engine: LocalEngine) -> None:
    assert engine.pool is not None and engine.pool.wait_idle()
    # Given the costliest /v1/embeddings request the bound allows, running on one worker
    big: dict[str, Any] = {}
    started = threading.Event()

    def send_big() -> None:
        started.set()
        big.update(zip(("status", "body", "seconds"), _call(engine, "POST", "/v1/embeddings", _largest_embedding_request())))

    thread = threading.Thread(target=send_big)
    thread.start()
    started.wait(10)
    time.sleep(0.3)  # lets the large request reach a worker
    # When health and a small request are sent meanwhile
    health_status, _, _ = _call(engine, "GET", "/v1/health")
    small_status, _, _ = _call(engine, "POST", "/v1/embeddings", {"input": "hi"})
    # Then both are answered while the large one is still running (one request does not stall every
    # client); the memory a worker keeps afterwards is measured by bench/worker_pool.py
    assert thread.is_alive(), "the large request ended before the small ones were answered"
    thread.join()
    assert big["status"] == 200 and health_status == 200 and small_status == 200


def test_a_document_created_on_a_worker_is_ingested_by_the_engine(engine: LocalEngine) -> None:
    # Given a document created through a worker, waiting for its ingestion (run by the parent process)
    status, body, _ = _call(engine, "POST", "/v1/documents",
                            {"path": "/load/relay.md", "content": "A relayed document.", "wait": True})
    # Then it is ready
    assert status in (200, 201) and body["status"] == "ready", body


def test_mixed_load_and_a_burst_of_200_connections_give_no_errors_and_lose_no_write(
    engine: LocalEngine, load: ModuleType
) -> None:
    # Given a memory with some facts
    url, key = _url(engine), str(engine.admin_key)
    memory_id = load.prepare(url, key, seed_entries=10)
    acked = load.Acknowledged()
    # When 1, 8 and 32 clients send the mixed workload, then 200 fresh connections write at once
    results = [load.run_level(url, key, memory_id, clients, 1.5, acked, seed=clients) for clients in (1, 8, 32)]
    results.append(load.burst(url, key, memory_id, 200, acked))
    # Then no request failed and no connection was reset (a listen backlog of 5 reset up to 19 of 50)
    for result in results:
        assert result.requests > 0 and result.errors == 0 and result.resets == 0, result.summary()
    # And every acknowledged write reads back unchanged
    assert len(acked.entries) >= 200
    assert load.read_back(url, key, acked) == []
