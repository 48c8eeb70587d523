"""The processes a local engine spawned (worker processes, the ingestion process), written down in
``$MEMORY_ENGINE_HOME/engine-children.json`` so that the next start ends any an engine killed
outright left behind, as :class:`~memory_engine.local.adapters.embedded_postgres.EmbeddedPostgres`
does for the database server. Children normally die with their parent on their own
(``local/worker_process.die_with_parent``); this is the backstop for a platform or a moment where
that did not happen. A pid counts as the recorded process only with the same creation time, so a
reused pid is never killed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from pathlib import Path

import psutil

logger = logging.getLogger(__name__)

FILE_NAME = "engine-children.json"


def _created(pid: int) -> float | None:
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


def _same(pid: int, created: float) -> bool:
    now = _created(pid)
    return now is not None and abs(now - created) < 0.5


class ChildRecord:
    """``add(pid)`` records a child of this process; :meth:`reap_leftovers` (at start) ends the
    children of a previous engine on the same home whose parent is gone."""

    def __init__(self, home: Path) -> None:
        self.path = home / FILE_NAME
        self._lock = threading.Lock()
        self._children: dict[int, float] = {}

    def reap_leftovers(self, timeout: float = 5.0) -> list[int]:
        """End the recorded children of a previous engine that is no longer running; their pids."""
        try:
            recorded = json.loads(self.path.read_text())
            parent, parent_created = int(recorded["parent"]), float(recorded["parent_created"])
            children = [(int(c["pid"]), float(c["created"])) for c in recorded["children"]]
        except (OSError, ValueError, KeyError, TypeError):
            return []
        if parent != os.getpid() and _same(parent, parent_created):
            return []  # that engine still runs: its children are its own
        ended: list[psutil.Process] = []
        for pid, created in children:
            if pid != os.getpid() and _same(pid, created):
                with contextlib.suppress(psutil.Error):
                    process = psutil.Process(pid)
                    process.kill()
                    ended.append(process)
        psutil.wait_procs(ended, timeout=timeout)
        for process in ended:
            logger.warning("ended process %s, left running by an engine that was killed", process.pid)
        with contextlib.suppress(OSError):
            self.path.unlink()
        return [p.pid for p in ended]

    def add(self, pid: int) -> None:
        created = _created(pid)
        if created is None:
            return
        with self._lock:
            self._children = {p: c for p, c in self._children.items() if _same(p, c)}
            self._children[pid] = created
            body = {"parent": os.getpid(), "parent_created": _created(os.getpid()),
                    "children": [{"pid": p, "created": c} for p, c in self._children.items()]}
            temporary = self.path.with_suffix(".tmp")
            try:
                temporary.write_text(json.dumps(body))
                temporary.replace(self.path)
            except OSError:
                logger.warning("could not record child process %s in %s", pid, self.path, exc_info=True)

    def clear(self) -> None:
        """Forget every child (the engine stopped them)."""
        with self._lock:
            self._children.clear()
            with contextlib.suppress(OSError):
                self.path.unlink()
