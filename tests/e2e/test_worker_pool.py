"""The local worker pool heals itself (local/workers.py): a worker killed while idle is found
without a request and replaced, the requests sent meanwhile all succeed, a replacement that dies
while starting is tried again until the pool is whole, and `GET /v1/health` reports the pool."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_engine.local.apigw_events import http_api_event
from memory_engine.local.container import LocalContainer
from memory_engine.local.workers import WorkerPool
from memory_engine.settings import Settings
from tests.support.api_client import ApiClient
from tests.support.pool_faults import ENV_POOL_FAULTS, faults_folder, worker_failing_while_marked

#: Only guards against a hang; nothing asserts how long healing took.
GUARD_S = 180.0


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + GUARD_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def faults(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = faults_folder(tmp_path_factory.mktemp("faults"))
    saved = os.environ.get(ENV_POOL_FAULTS)
    os.environ[ENV_POOL_FAULTS] = str(folder)  # the pool's spawned workers inherit it
    yield folder
    if saved is None:
        os.environ.pop(ENV_POOL_FAULTS, None)
    else:
        os.environ[ENV_POOL_FAULTS] = saved


@pytest.fixture(scope="module")
def module_pool(database_url: str, faults: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerPool]:
    home = tmp_path_factory.mktemp("home")
    settings = Settings(DATABASE_URL=database_url, MEMORY_ENGINE_HOME=str(home))  # type: ignore[call-arg]
    built = WorkerPool(settings, 2, target=worker_failing_while_marked)
    built.start()
    yield built
    built.stop()


@pytest.fixture
def pool(module_pool: WorkerPool) -> WorkerPool:
    """The module's pool, whole and idle (each test leaves it healed)."""
    _until(lambda: module_pool.counts() == (2, 2) and module_pool.wait_idle(1.0), "a whole, idle pool")
    return module_pool


def _get(pool: WorkerPool, path: str) -> int:
    return int(pool.invoke(http_api_event("GET", path))["statusCode"])


def test_a_worker_killed_while_idle_is_replaced_and_no_request_fails(pool: WorkerPool) -> None:
    # Given a whole pool, idle
    assert pool.counts() == (2, 2) and pool.wait_idle()
    victim = pool.pids[0]
    # When one idle worker is killed outright, and requests follow at once
    os.kill(victim, signal.SIGKILL)
    statuses = [_get(pool, "/v1/openapi.json") for _ in range(6)]
    # Then every request succeeds (none reached the dead worker's pipe and answered 502)
    assert statuses == [200] * 6
    # And the pool is whole again, without the dead worker
    _until(lambda: pool.counts() == (2, 2) and victim not in pool.pids, "the pool to be whole")


def test_a_request_sent_to_a_worker_that_died_before_taking_it_is_sent_to_another(
        pool: WorkerPool, faults: Path) -> None:
    # Given a whole, idle pool, and a worker that will exit as it takes the next request
    assert pool.counts() == (2, 2) and pool.wait_idle()
    (faults / "takes" / "die").touch()
    # When a request is sent
    status = _get(pool, "/v1/openapi.json")
    # Then the worker that took it died without beginning it, and another worker answered it
    assert not any((faults / "takes").iterdir())
    assert status == 200
    # And the pool is whole again
    _until(lambda: pool.counts() == (2, 2), "the pool to be whole")


def test_a_replacement_that_dies_while_starting_is_tried_again(pool: WorkerPool, faults: Path) -> None:
    # Given that the next two worker starts will crash
    for n in range(2):
        (faults / "starts" / f"crash-{n}").touch()
    victim = pool.pids[0]
    # When an idle worker is killed
    os.kill(victim, signal.SIGKILL)
    # Then both crashing replacements are used up and a third start makes the pool whole again
    _until(lambda: not any((faults / "starts").iterdir()), "the crashing starts")
    _until(lambda: pool.counts() == (2, 2) and victim not in pool.pids, "the pool to be whole")
    assert _get(pool, "/v1/openapi.json") == 200


def test_a_spawn_that_raises_is_tried_again(pool: WorkerPool, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given that spawning the next worker process fails in this process (e.g. out of descriptors)
    spawn, attempts = pool._spawn, []

    def failing_once() -> Any:
        attempts.append(1)
        if len(attempts) == 1:
            raise OSError(24, "Too many open files")
        return spawn()

    monkeypatch.setattr(pool, "_spawn", failing_once)
    victim = pool.pids[0]
    # When an idle worker is killed
    os.kill(victim, signal.SIGKILL)
    # Then the failed spawn is tried again and the pool is whole (its supervisor survived the error)
    _until(lambda: pool.counts() == (2, 2) and victim not in pool.pids, "the pool to be whole")
    assert len(attempts) >= 2 and _get(pool, "/v1/openapi.json") == 200


def test_health_reports_the_pool(pool: WorkerPool, container: LocalContainer) -> None:
    # Given the engine's container knows its pool
    container.worker_counts = pool.counts
    try:
        # When a worker is killed, health says so; once it is replaced, health says the pool is whole
        body = ApiClient(None).get("/v1/health").json
        assert body["workers"] == {"alive": 2, "configured": 2} and body["status"] == "ok"
        os.kill(pool.pids[0], signal.SIGKILL)
        _until(lambda: ApiClient(None).get("/v1/health").json["workers"]["alive"] == 1, "health to see 1 of 2")
        _until(lambda: ApiClient(None).get("/v1/health").json["workers"] == {"alive": 2, "configured": 2},
               "health to see the pool whole")
        # And with no worker alive the engine is degraded: 503
        container.worker_counts = lambda: (0, 2)
        r = ApiClient(None).get("/v1/health")
        assert r.status == 503 and r.json["status"] == "degraded" and r.json["database"] is True
    finally:
        container.worker_counts = None
