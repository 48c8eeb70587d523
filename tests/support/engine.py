"""A real local engine (the one `memory-engine dev` runs) on a free port, for tests that talk HTTP."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_engine.domain.auth import parse_scopes
from memory_engine.local.engine import LocalEngine
from memory_engine.services.keys import create_api_key
from memory_engine.settings import Settings


@dataclass
class RunningEngine:
    engine: LocalEngine
    base_url: str

    def key(self, project: str, scopes: str = "read,write") -> str:
        assert self.engine.container is not None
        return create_api_key(self.engine.container.projects, project_name=project, scopes=parse_scopes(scopes)).raw_key

    def call(self, method: str, path: str, key: str | None, body: Any = None) -> tuple[int, Any]:
        """One HTTP request; (status, parsed JSON body or None)."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(self.base_url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        return status, (json.loads(raw) if raw else None)


@contextmanager
def running_engine(database_url: str, home: Path, **env: str) -> Iterator[RunningEngine]:
    """Starts the engine (gateway, drop-folder watcher, event consumer) on 127.0.0.1:<free port>
    over ``database_url`` (``env``: more settings by their variable names); stops it (and un-installs
    its container) on exit."""
    settings = Settings(DATABASE_URL=database_url, MEMORY_ENGINE_HOME=str(home), **env)  # type: ignore[call-arg]
    engine = LocalEngine(settings, host="127.0.0.1", port=0)
    base_url = engine.start()
    try:
        yield RunningEngine(engine, base_url)
    finally:
        engine.stop()
