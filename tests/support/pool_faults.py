"""A worker main that fails on demand, for the pool-healing tests. The folder named by
``MEMORY_ENGINE_TEST_POOL_FAULTS`` (inherited by spawned workers) holds markers; each is used once
(the worker that removes it acts on it):

* ``starts/<any>``: a starting worker exits at once, as a worker whose start crashes would;
* ``takes/<any>``: a worker exits as it takes its next request from the pipe, before it begins
  it, as a worker killed between two requests would."""

from __future__ import annotations

import os
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from memory_engine.local.worker_process import worker_main

ENV_POOL_FAULTS = "MEMORY_ENGINE_TEST_POOL_FAULTS"


def faults_folder(root: Path) -> Path:
    """Create the marker folders under ``root``; returns ``root`` (set it as ENV_POOL_FAULTS)."""
    for kind in ("starts", "takes"):
        (root / kind).mkdir(parents=True, exist_ok=True)
    return root


def _use_marker(kind: str) -> bool:
    folder = os.environ.get(ENV_POOL_FAULTS)
    for marker in sorted((Path(folder) / kind).iterdir()) if folder else []:
        try:
            marker.unlink()
        except FileNotFoundError:
            continue  # another worker took it
        return True
    return False


class _DyingOnTake:
    """The worker's pipe, except that receiving a request while a ``takes`` marker is left exits."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def recv(self) -> Any:
        event = self._conn.recv()
        if event is not None and _use_marker("takes"):
            os._exit(3)
        return event

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def worker_failing_while_marked(conn: Connection, *args: Any) -> None:
    if _use_marker("starts"):
        os._exit(3)
    worker_main(_DyingOnTake(conn), *args)  # type: ignore[arg-type]
