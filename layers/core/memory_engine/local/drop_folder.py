"""The local S3 stand-in: watches ``$MEMORY_ENGINE_HOME/drop/<project name>/<path>``.

A file is taken once its size and mtime have not changed for ``stable_seconds`` (so a file
still being written is left alone). It is then copied into the local blob store under
``projects/<project_id>/<path>`` (streamed; the copy is checked against the file's stat, so a
file changed mid-copy is simply taken again later), and an S3 "Object Created" event for that
key is handed to the pipeline starter: the same register -> ... -> finalize steps as on AWS.
The pipeline only reads the copy, so moving or deleting the dropped file during ingestion
cannot corrupt anything. Hidden files and folders (``.name``) and ``*.part`` files are ignored.

What is refused, each said once in the log (and again only if the file changes):
- symbolic links (files or folders): the watcher never follows them, so a link cannot pull a file
  from elsewhere on the machine into a project;
- files directly in ``drop/`` (they belong to no project);
- folders that do not name an existing project: projects are created explicitly
  (``memory-engine keys create --project NAME``), never by a folder appearing;
- paths the document path rule rejects (``domain.documents.normalize_path``).

A file whose content (sha256) is already the document's at that path, ``ready`` or ``failed``, is
not ingested again, so a restart does not redo (or re-fail) every unchanged file. Every
``EXPIRY_SWEEP_SECONDS`` the watcher also fails documents whose upload URLs expired unused.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memory_engine.domain.documents import DocumentStatus, normalize_path
from memory_engine.domain.validation import project_name
from memory_engine.local.periodic import PeriodicThread
from memory_engine.local.s3_events import object_created_event

if TYPE_CHECKING:
    from memory_engine.bootstrap import Container
    from memory_engine.ports.projects import Project

logger = logging.getLogger(__name__)

#: How often the watcher fails ``pending`` documents whose upload URLs expired unused.
EXPIRY_SWEEP_SECONDS = 60.0


@dataclass(frozen=True)
class _Signature:
    size: int
    mtime_ns: int


class DropFolderWatcher(PeriodicThread):
    name = "drop-folder"

    def __init__(self, container: Container, root: Path, *, poll_seconds: float = 0.5,
                 stable_seconds: float = 1.0) -> None:
        super().__init__()
        self._container = container
        self.root = root
        self.poll_seconds = poll_seconds
        self.stable_seconds = stable_seconds
        self._pending: dict[Path, tuple[_Signature, float]] = {}
        self._taken: dict[Path, _Signature] = {}
        #: Files refused (and said so) in this state; a change makes them looked at again.
        self._refused: dict[Path, _Signature | None] = {}
        self._warned_folders: set[str] = set()
        self._last_sweep: float | None = None

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        super().start()

    def interval(self) -> float:
        return self.poll_seconds

    def tick(self) -> None:
        self.scan()
        self._sweep_expired_uploads()

    def _sweep_expired_uploads(self) -> None:
        from memory_engine.services.ingestion.documents import expire_unused_uploads

        now = time.monotonic()
        if self._last_sweep is None or now - self._last_sweep >= EXPIRY_SWEEP_SECONDS:
            self._last_sweep = now
            expire_unused_uploads(self._container.ingestion_ports)

    def _files(self) -> list[tuple[Path, os.stat_result]]:
        """Regular files under the root, never through a symbolic link (links are refused once)."""
        found: list[tuple[Path, os.stat_result]] = []
        for folder, dirs, files in os.walk(self.root, followlinks=False):
            base = Path(folder)
            for name in list(dirs):
                if name.startswith("."):
                    dirs.remove(name)
                elif (base / name).is_symlink():
                    dirs.remove(name)
                    self._refuse(base / name, None, "is a symbolic link; the drop folder never follows links")
            for name in files:
                if name.startswith(".") or name.endswith(".part"):
                    continue
                path = base / name
                try:
                    st = path.lstat()
                except OSError:
                    continue
                if stat.S_ISLNK(st.st_mode):
                    self._refuse(path, _Signature(st.st_size, st.st_mtime_ns),
                                 "is a symbolic link; the drop folder never follows links")
                elif stat.S_ISREG(st.st_mode):
                    found.append((path, st))
        return sorted(found)

    def _refuse(self, path: Path, sig: _Signature | None, reason: str) -> None:
        if path in self._refused and self._refused[path] == sig:
            return
        self._refused[path] = sig
        logger.warning("drop folder: ignoring %s: %s", path, reason)

    def scan(self, now: float | None = None) -> list[str]:
        """One pass; returns the run ids started. Public so tests can drive it deterministically."""
        now = time.monotonic() if now is None else now
        started = []
        seen: set[Path] = set()
        projects: dict[str, Project | None] = {}  # one lookup per folder per pass
        for path, st in self._files():
            seen.add(path)
            sig = _Signature(st.st_size, st.st_mtime_ns)
            if self._taken.get(path) == sig or (path in self._refused and self._refused[path] == sig):
                continue
            previous = self._pending.get(path)
            if previous is None or previous[0] != sig:
                self._pending[path] = (sig, now)
                continue
            if now - previous[1] < self.stable_seconds:
                continue
            del self._pending[path]
            run_id = self._take(path, path.relative_to(self.root), sig, projects)
            if run_id is not None:
                self._taken[path] = sig
                started.append(run_id)
        for gone in set(self._pending) - seen:
            del self._pending[gone]
        for gone in set(self._taken) - seen:
            del self._taken[gone]  # dropped again later: taken again (register dedupes unchanged bytes)
        for gone in [p for p in self._refused if p not in seen and not os.path.lexists(p)]:
            del self._refused[gone]
        return started

    def _project(self, folder: str, projects: dict[str, Project | None]) -> Project | None:
        if folder not in projects:
            found = self._container.projects.get_project(folder)
            projects[folder] = found if found is not None and found.name == folder else None
            if projects[folder] is not None:
                self._warned_folders.discard(folder)
        return projects[folder]

    def _take(self, path: Path, rel: Path, sig: _Signature, projects: dict[str, Project | None]) -> str | None:
        if len(rel.parts) < 2:
            self._refuse(path, sig, "files directly in drop/ belong to no project; put them in drop/<project name>/")
            return None
        folder = rel.parts[0]
        try:
            project_name(folder)
        except ValueError as exc:
            self._refuse(path, sig, str(exc))
            return None
        project = self._project(folder, projects)
        if project is None:
            if folder not in self._warned_folders:
                self._warned_folders.add(folder)
                logger.warning("drop folder: ignoring drop/%s/: no project is named %r; create it with "
                               "`memory-engine keys create --project %s`", folder, folder, folder)
            return None  # not refused for good: the files are taken once the project exists
        try:
            doc_path = normalize_path("/".join(rel.parts[1:]))
        except ValueError as exc:
            self._refuse(path, sig, str(exc))
            return None
        if self._unchanged(path, project.id, doc_path, sig):
            return None
        key = f"projects/{project.id}{doc_path}"
        blobs = self._container.blob_store
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

    def _unchanged(self, path: Path, project_id: str, doc_path: str, sig: _Signature) -> bool:
        """True (and the file is remembered as taken) when the document at ``doc_path`` already holds
        these bytes and is ``ready`` or ``failed``: ingesting them again would change nothing."""
        doc = self._container.documents.find_by_path(project_id, doc_path)
        if doc is None or doc.sha256 is None or doc.status not in (DocumentStatus.READY, DocumentStatus.FAILED):
            return False
        digest = hashlib.sha256()
        try:
            with path.open("rb") as src:
                for block in iter(lambda: src.read(1024 * 1024), b""):
                    digest.update(block)
        except OSError:
            return False
        if digest.hexdigest() != doc.sha256:
            return False
        self._taken[path] = sig
        if doc.status is DocumentStatus.FAILED:
            logger.warning("drop folder: not ingesting %s again: unchanged since its ingestion failed (%s); change "
                           "the file or POST /v1/documents/%s/ingest to retry", path, doc.error, doc.id)
        return True
