"""The local worker pool under its costliest request: what the others wait, what memory stays behind.

Usage (from the repository root)::

    .venv/bin/python bench/worker_pool.py              # a temporary embedded PostgreSQL and home
    .venv/bin/python bench/worker_pool.py --rounds 5

Starts a :class:`LocalEngine` with two workers, sends the costliest ``POST /v1/embeddings`` the
request bound allows, and meanwhile ``GET /v1/health`` and a one-word embedding; prints each one's
latency, then each worker's RSS growth over its RSS at start once the pool is idle (a worker above
``max_rss_bytes`` is replaced; the arena trim keeps growth small). Numbers, not pass/fail: the test
suite checks the ordering (tests/e2e/test_local_load.py), this prints the figures.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from memory_engine.domain.requests import MAX_TOTAL_CHARS
from memory_engine.local.engine import LocalEngine
from memory_engine.settings import Settings


def _call(base: str, key: str, method: str, path: str, body: Any = None) -> tuple[int, float]:
    request = urllib.request.Request(
        base + path, method=method, data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    began = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            response.read()
            return response.status, time.perf_counter() - began
    except urllib.error.HTTPError as error:
        return error.code, time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    words = "river stone cloud amber harbor meadow falcon glacier lantern quartz".split()
    text = " ".join(words[i % len(words)] for i in range(400))[:1000]
    largest = {"inputs": [text] * (MAX_TOTAL_CHARS // 1000)}
    with tempfile.TemporaryDirectory() as home:
        settings = Settings(MEMORY_ENGINE_HOME=home)  # type: ignore[call-arg]
        engine = LocalEngine(settings, port=0, workers=2)
        engine.start()
        try:
            assert engine.gateway is not None and engine.pool is not None and engine.admin_key
            base, key = engine.gateway.base_url, engine.admin_key
            print(f"{'round':>5} {'large s':>8} {'health ms':>10} {'small ms':>9}")
            for round_ in range(1, args.rounds + 1):
                engine.pool.wait_idle()
                big: list[tuple[int, float]] = []
                thread = threading.Thread(target=lambda out=big: out.append(_call(base, key, "POST", "/v1/embeddings", largest)))
                thread.start()
                time.sleep(0.3)
                _, health = _call(base, key, "GET", "/v1/health")
                _, small = _call(base, key, "POST", "/v1/embeddings", {"input": "hi"})
                thread.join()
                print(f"{round_:>5} {big[0][1]:>8.2f} {health * 1000:>10.1f} {small * 1000:>9.1f}")
            engine.pool.wait_idle()
            for pid, baseline, rss in engine.pool.memory():
                print(f"worker {pid}: RSS at start {baseline / 2**20:.0f} MB, now {rss / 2**20:.0f} MB "
                      f"(growth {(rss - baseline) / 2**20:+.0f} MB)")
        finally:
            engine.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
