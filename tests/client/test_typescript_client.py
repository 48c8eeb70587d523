"""The TypeScript client (clients/typescript): its Node tests (``node --test``: the contract and drift
checks against docs/openapi.json, retries, the live engine, the Vercel AI SDK tools, the example of
docs/integrations.md), run against a `memory-engine dev` they start on this session's PostgreSQL; and
its operation table, which must be the Python client's (same operations, idempotency and media types)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from memory_engine_client._core import OPERATIONS
from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "clients" / "typescript"


def _run(*command: str, env: dict[str, str] | None = None, timeout: float = 900) -> str:
    done = subprocess.run(command, cwd=PACKAGE, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(command)} failed ({done.returncode}):\n{output[-12000:]}"
    return output


@pytest.fixture(scope="module")
def npm() -> str:
    """npm, with the locked dependencies installed (``npm ci`` when node_modules is older than the
    lockfile) and the package and its tests compiled."""
    found = shutil.which("npm")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("npm is not installed: CI needs Node 20+ and npm for the TypeScript client")
        pytest.skip("npm not found: the TypeScript client's tests need Node 20+ and npm")
    installed = PACKAGE / "node_modules" / ".package-lock.json"
    lock = PACKAGE / "package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        _run(found, "ci", "--no-audit", "--no-fund")
    _run(found, "run", "pretest")
    return found


def test_the_typescript_client_passes_its_node_tests(npm: str, database_url: str) -> None:
    env = {**os.environ, "MEMORY_ENGINE_PYTHON": sys.executable, "MEMORY_ENGINE_TEST_DATABASE_URL": database_url}
    env.pop("MEMORY_ENGINE_TEST_URL", None)
    env.pop("MEMORY_ENGINE_TEST_KEY", None)
    output = _run("node", "build/test/run.js", env=env)
    assert "# fail 0" in output and "# pass " in output, output[-4000:]


def test_the_typescript_operations_are_the_python_clients(npm: str) -> None:
    script = "import('memory-engine-client').then((m) => console.log(JSON.stringify(m.OPERATIONS)))"
    table = json.loads(_run("node", "--input-type=module", "-e", script))
    python = {name: {"method": o.method, "path": o.path, "idempotent": o.idempotent,
                     "requestMedia": o.request_media, "responseMedia": o.response_media}
              for name, o in OPERATIONS.items()}
    typescript = {name: {"requestMedia": None, "responseMedia": None, **o} for name, o in table.items()}
    assert typescript == python
