"""The foreground gate: ingestion's model calls step aside while API requests are served."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from memory_engine.local.priority import CoreYield, ForegroundGate, GatedEmbedder
from memory_engine.ports.embedder import Embedder, EmbeddingKind


class _Recording(Embedder):
    dimensions = 2
    model_id = "recording"
    batch_size = 2

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[float, list[str]]] = []

    def _embed_batch(self, texts: Sequence[str], kind: EmbeddingKind) -> Sequence[Sequence[float]]:
        self.calls.append((time.monotonic(), list(texts)))
        return [[float(len(t)), 1.0] for t in texts]


def test_a_model_call_waits_for_the_request_in_flight_to_end() -> None:
    gate = ForegroundGate(max_wait_s=5.0)
    inner = _Recording()
    gated = GatedEmbedder(inner, gate)
    ended = threading.Event()
    finished_at: list[float] = []

    def search() -> None:
        with gate.request("POST", "/v1/knowledge/search"):
            ended.wait(5)
            finished_at.append(time.monotonic())

    request = threading.Thread(target=search)
    request.start()
    time.sleep(0.05)
    embedding = threading.Thread(target=gated.embed_documents, args=(["a", "bb", "ccc"],))
    embedding.start()
    time.sleep(0.1)
    # while the search is served, no model call has started
    assert inner.calls == []
    ended.set()
    request.join(5)
    embedding.join(5)
    # then every call ran after it, in the inner model's groups, with the inner model's vectors
    assert [texts for _, texts in inner.calls] == [["a", "bb"], ["ccc"]]
    assert all(at >= finished_at[0] for at, _ in inner.calls)
    assert np.allclose(gated.embed_documents(["bb"])[0], inner.embed_documents(["bb"])[0])


def _runs_to_the_end(call: Callable[[], object], within_s: float = 10.0) -> bool:
    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(within_s)
    return not thread.is_alive()


def test_ingestion_is_never_starved_under_a_request_that_never_ends() -> None:
    inner = _Recording()
    gated = GatedEmbedder(inner, ForegroundGate(max_wait_s=0.05))
    with gated.gate.request("GET", "/v1/health"):
        # the call goes ahead after max_wait_s although the request is still in flight
        assert _runs_to_the_end(lambda: gated.embed_documents(["x"]))
        assert [texts for _, texts in inner.calls] == [["x"]]


def test_document_creates_and_uploads_do_not_hold_ingestion_back() -> None:
    # a gate that would hold a model call for a minute: a counted request would keep it waiting
    gate = ForegroundGate(max_wait_s=60.0)
    inner = _Recording()
    gated = GatedEmbedder(inner, gate)
    for method, path in [("POST", "/v1/documents"), ("POST", "/v1/documents/batch"), ("PUT", "/v1/local-uploads/t")]:
        assert not gate.counts(method, path)
        with gate.request(method, path):
            assert _runs_to_the_end(lambda: gated.embed_documents(["y"]))
    assert len(inner.calls) == 3
    assert gate.counts("GET", "/v1/documents") and gate.counts("POST", "/v1/memory-entries")
    with gate.request("POST", "/v1/memory-entries"):  # and a counted one does hold it back
        assert not _runs_to_the_end(lambda: gated.embed_documents(["z"]), within_s=0.3)
        assert len(inner.calls) == 3


def test_the_gate_calls_busy_on_the_first_request_and_quiet_after_the_last() -> None:
    calls: list[str] = []
    gate = ForegroundGate(0.0, on_busy=lambda: calls.append("busy"), on_quiet=lambda: calls.append("quiet"))
    with gate.request("POST", "/v1/knowledge/search"):
        with gate.request("GET", "/v1/health"):
            assert calls == ["busy"]
        assert calls == ["busy"]
    assert calls == ["busy", "quiet"]
    with gate.request("POST", "/v1/documents"):  # feeds ingestion: not foreground
        pass
    assert calls == ["busy", "quiet"]


@pytest.mark.skipif(not CoreYield.supported(), reason="needs Linux thread affinity and at least two cores")
def test_core_yield_moves_every_thread_of_the_process_and_back() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import threading, time\n"
                              "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
                              "time.sleep(30)"])
    try:
        deadline = time.monotonic() + 10
        while len(os.listdir(f"/proc/{child.pid}/task")) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        cores = CoreYield(lambda: child.pid)
        tids = [int(t) for t in os.listdir(f"/proc/{child.pid}/task")]
        assert len(tids) >= 2 and cores.background < cores.all
        cores.narrow()
        assert all(os.sched_getaffinity(tid) == cores.background for tid in tids)
        cores.widen()
        assert all(os.sched_getaffinity(tid) == cores.all for tid in tids)
    finally:
        child.kill()
        child.wait()
    CoreYield(lambda: child.pid).narrow()  # an exited process: nothing to move, no error
