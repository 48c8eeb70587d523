"""Requests waiting for a worker of the local pool: each worker back from a request wakes one waiting
request, the longest waiting, instead of every waiting request racing for it (under 128 clients that
race doubled the p99 latency of bench/load.py: 3.8 s -> 8.6 s)."""

from __future__ import annotations

import threading
import time
from collections import deque
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from memory_engine.local.workers import WorkerPool
from memory_engine.settings import Settings


class _CountingDeque(deque[Any]):
    """Counts how often a waiting request looked at the idle workers."""

    looks = 0

    def __bool__(self) -> bool:
        type(self).looks += 1
        return len(self) > 0


def test_a_returned_worker_wakes_the_longest_waiting_request_only(tmp_path: Path) -> None:
    pool = WorkerPool(Settings(MEMORY_ENGINE_HOME=str(tmp_path)), size=1)  # type: ignore[call-arg]
    pool._idle = _CountingDeque()
    worker = SimpleNamespace(process=SimpleNamespace(is_alive=lambda: True, pid=1))
    served: list[int] = []
    waiting = 12

    def request(number: int) -> None:
        taken = pool._take(time.monotonic() + 30)
        assert taken is worker
        served.append(number)
        pool._release(worker)  # done: the worker goes back, as after a request

    # Given requests that came one after the other while no worker was idle
    threads = []
    for number in range(waiting):
        threads.append(threading.Thread(target=request, args=(number,)))
        threads[-1].start()
        deadline = time.monotonic() + 5
        while len(pool._idle_cond._waiters) < number + 1 and time.monotonic() < deadline:  # type: ignore[attr-defined]
            time.sleep(0.001)
    _CountingDeque.looks = 0
    # When a worker becomes idle, then each request hands it on
    pool._release(worker)
    for thread in threads:
        thread.join(10)
    # Then they were served in the order they came, each woken once (a wake-all makes ~n^2/2 looks)
    assert served == list(range(waiting))
    assert _CountingDeque.looks <= 3 * waiting
