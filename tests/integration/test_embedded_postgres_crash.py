"""The embedded PostgreSQL after its owner was killed outright (issue 11, defect 7).

pgserver lists the processes holding a server in pgdata/.handle_pids.json and stops it when the
last one lets go; a SIGKILLed owner never let go, so every later start -> stop left `postgres -D
.../pgdata` running. A start after a crash adopts the running server, and a normal stop stops it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import psycopg

from memory_engine.local.adapters.embedded_postgres import EmbeddedPostgres

OWNER = """
import sys, time
from pathlib import Path
from memory_engine.local.adapters.embedded_postgres import EmbeddedPostgres
EmbeddedPostgres(Path(sys.argv[1])).start()
print("started", flush=True)
time.sleep(600)
"""


def _postmasters(pgdata: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["name", "cmdline", "status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and "postgres" in (proc.info["name"] or "") \
                    and "-D" in (proc.info["cmdline"] or []) and str(pgdata) in " ".join(proc.info["cmdline"] or []):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _wait_gone(pgdata: Path, seconds: float = 15) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _postmasters(pgdata):
            return True
        time.sleep(0.2)
    return False


def test_a_start_after_the_owner_was_killed_adopts_the_server_and_a_normal_stop_stops_it(tmp_path: Path) -> None:
    pgdata = (tmp_path / "pgdata").resolve()
    # Given a process that started the embedded server and was then SIGKILLed
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(pgdata)], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "started"
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=10)
        assert _postmasters(pgdata), "the server outlives its killed owner (the crash being simulated)"
        assert owner.pid in json.loads((pgdata / ".handle_pids.json").read_text())
        # When the engine starts again on that pgdata
        server = EmbeddedPostgres(pgdata)
        uri = server.start()
        try:
            # Then it uses the running server and the dead owner is no longer counted as a holder
            with psycopg.connect(uri, autocommit=True) as conn:
                assert conn.execute("SELECT 1").fetchone() == (1,)
            assert json.loads((pgdata / ".handle_pids.json").read_text()) == [os.getpid()]
        finally:
            # And a normal stop stops the server: nothing is left running
            server.stop()
        assert _wait_gone(pgdata), [p.info["cmdline"] for p in _postmasters(pgdata)]
    finally:
        if owner.poll() is None:
            owner.kill()
        for proc in _postmasters(pgdata):  # never leave a server behind, even when the test fails
            proc.kill()
