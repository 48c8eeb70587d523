"""The local S3 stand-in: watches ``$MEMORY_ENGINE_HOME/drop/<project name>/<path>``.

A file is taken once its size and mtime have not changed for ``stable_seconds`` (so a file
still being written is left alone). It is then copied into the local blob store under
``projects/<project_id>/<path>`` (streamed; the copy is checked against the file's stat, so a
file changed mid-copy is simply taken again later), and an S3 "Object Created" event for that
key is handed to the pipeline starter: the same register -> ... -> finalize steps as on AWS.
The pipeline only reads the copy, so moving or deleting the dropped file during ingestion
cannot corrupt anything. Hidden files and folders (``.name``) and ``*.part`` files are ignored.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_engine.adapters.local.s3_events import object_created_event

if TYPE_CHECKING:
    from memory_engine.bootstrap import Container

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Signature:
    size: int
    mtime_ns: int


class DropFolderWatcher:
    name = "drop-folder"

    def __init__(self, container: Container, root: Path, *, poll_seconds: float = 0.5,
                 stable_seconds: float = 1.0) -> None:
        self._container = container
        self.root = root
        self.poll_seconds = poll_seconds
        self.stable_seconds = stable_seconds
        self._pending: dict[Path, tuple[_Signature, float]] = {}
        self._taken: dict[Path, _Signature] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self._thread = threading.Thread(target=self._loop, name="drop-folder", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.scan()
            except Exception:
                logger.exception("drop folder scan failed")
            self._stop.wait(self.poll_seconds)

    def scan(self, now: float | None = None) -> list[str]:
        """One pass; returns the run ids started. Public so tests can drive it deterministically."""
        now = time.monotonic() if now is None else now
        started = []
        seen: set[Path] = set()
        for path in sorted(self.root.rglob("*")):
            rel = path.relative_to(self.root)
            if any(part.startswith(".") for part in rel.parts) or path.name.endswith(".part"):
                continue
            try:
                if not path.is_file():
                    continue
                st = path.stat()
            except OSError:
                continue
            seen.add(path)
            sig = _Signature(st.st_size, st.st_mtime_ns)
            if self._taken.get(path) == sig:
                continue
            previous = self._pending.get(path)
            if previous is None or previous[0] != sig:
                self._pending[path] = (sig, now)
                continue
            if now - previous[1] < self.stable_seconds:
                continue
            del self._pending[path]
            run_id = self._take(path, rel, sig)
            if run_id is not None:
                self._taken[path] = sig
                started.append(run_id)
        for gone in set(self._pending) - seen:
            del self._pending[gone]
        for gone in set(self._taken) - seen:
            del self._taken[gone]  # dropped again later: taken again (register dedupes unchanged bytes)
        return started

    def _take(self, path: Path, rel: Path, sig: _Signature) -> str | None:
        if len(rel.parts) < 2:
            logger.warning("ignoring %s: put files in drop/<project name>/<path>", path)
            return None
        project = self._container.projects.get_or_create_project(rel.parts[0])
        key = f"projects/{project.id}/{'/'.join(rel.parts[1:])}"
        blobs: Any = self._container.blob_store
        try:
            blobs.put_file(key, path)
            after = path.stat()
        except FileNotFoundError:
            logger.info("%s disappeared before it could be copied; skipped", path)
            return None
        if _Signature(after.st_size, after.st_mtime_ns) != sig:
            logger.info("%s changed while it was copied; will take it again when stable", path)
            return None
        event = object_created_event(blobs.bucket, key, sig.size)
        run_id: str = self._container.pipeline_starter.start(event)
        logger.info("ingesting %s as %s (%s)", path, key, run_id)
        return run_id


def build(container: Container) -> Any:
    return DropFolderWatcher(container, container.settings.drop_dir)
