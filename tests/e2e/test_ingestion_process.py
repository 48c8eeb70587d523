"""The local engine runs ingestion in a process of its own (local/ingestion_process.py): documents
created through any worker are ingested there, and if that process dies it is started again and
finishes what it was running."""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_engine.local.engine import LocalEngine
from memory_engine.settings import Settings


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[LocalEngine]:
    settings = Settings(MEMORY_ENGINE_HOME=str(tmp_path / "home"))
    engine = LocalEngine(settings, port=0, workers=2)
    engine.start()
    yield engine
    engine.stop()


def _call(engine: LocalEngine, method: str, path: str, body: Any = None) -> Any:
    assert engine.gateway is not None
    request = urllib.request.Request(
        engine.gateway.base_url + path, method=method, data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {engine.admin_key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def _statuses(engine: LocalEngine, ids: list[str], timeout: float = 120.0) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while True:
        statuses = {i: _call(engine, "GET", f"/v1/documents/{i}")["status"] for i in ids}
        if all(s in ("ready", "failed") for s in statuses.values()) or time.monotonic() > deadline:
            return statuses
        time.sleep(0.2)


def test_documents_are_ingested_in_the_ingestion_process(engine: LocalEngine) -> None:
    assert engine.ingestion is not None and engine.ingestion.pid not in (None, os.getpid())
    assert engine.pool is not None and engine.ingestion.pid not in engine.pool.pids
    created = _call(engine, "POST", "/v1/documents/batch", {"documents": [
        {"path": f"/notes/{i}.md", "content": f"Note {i}: the heron nests by the weir."} for i in range(5)]})
    ids = [r["document"]["id"] for r in created["results"]]
    assert set(_statuses(engine, ids).values()) == {"ready"}
    found = _call(engine, "POST", "/v1/knowledge/search", {"query": "heron weir", "limit": 10})
    assert {r["document_id"] for r in found["results"]} == set(ids)


def test_a_killed_ingestion_process_is_restarted_and_finishes_its_documents(engine: LocalEngine) -> None:
    """Given documents being ingested, When the ingestion process is killed, Then a new one starts,
    resumes the interrupted runs and runs the queued ones: every document ends ready."""
    assert engine.ingestion is not None
    first = engine.ingestion.pid
    assert first is not None
    text = " ".join(f"Sentence {n} about tides, harbours and the lighthouse keeper's log." for n in range(400))
    created = _call(engine, "POST", "/v1/documents/batch", {"documents": [
        {"path": f"/long/{i}.md", "content": text} for i in range(12)]})
    ids = [r["document"]["id"] for r in created["results"]]
    os.kill(first, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while engine.ingestion.pid in (None, first) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert engine.ingestion.pid not in (None, first)
    assert set(_statuses(engine, ids).values()) == {"ready"}
