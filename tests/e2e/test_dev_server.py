"""`memory-engine dev` as a user runs it: a real process, a real socket, SIGTERM at the end."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil

from memory_engine.local.children import FILE_NAME


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _postgres_processes(pgdata: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["name", "cmdline", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if "postgres" in (proc.info["name"] or "") and str(pgdata) in " ".join(proc.info["cmdline"] or []):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def test_dev_starts_serves_health_and_stops_cleanly(tmp_path: Path) -> None:
    # Given a fresh MEMORY_ENGINE_HOME and a free port
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["MEMORY_ENGINE_HOME"] = str(tmp_path / "home")
    proc = subprocess.Popen(
        [sys.executable, "-m", "memory_engine.cli", "dev", "--port", str(port)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    lines: list[str] = []
    try:
        # When it starts, it prints the admin key once and a line with `ready` and the base URL within 60 s
        deadline = time.monotonic() + 60
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "ready" in line:
                break
        ready = [line for line in lines if "ready" in line]
        assert ready and f"http://127.0.0.1:{port}" in ready[0], "".join(lines)
        admin_key = next(line.strip() for line in lines if line.strip().startswith("me_"))
        # Then GET /v1/health answers 200 and the admin key authenticates
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/health", timeout=10) as response:
            assert response.status == 200 and json.loads(response.read())["database"] is True
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/embeddings", data=b'{"input": "hi"}', method="POST",
            headers={"Authorization": f"Bearer {admin_key}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200
        assert _postgres_processes(tmp_path / "home" / "pgdata")
    finally:
        # And SIGTERM stops everything it started: no postgres process is left behind
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert proc.returncode == 0
    time.sleep(0.5)
    assert not _postgres_processes(tmp_path / "home" / "pgdata")


def _start_dev(home: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    """`memory-engine dev` on a free port over ``home``; (the process, its base URL)."""
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["MEMORY_ENGINE_HOME"] = str(home)
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "memory_engine.cli", "dev", "--port", str(port), *extra],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    lines: list[str] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "ready" in line:
            return proc, f"http://127.0.0.1:{port}"
    proc.kill()
    proc.wait(30)
    raise AssertionError("`memory-engine dev` did not start:\n" + "".join(lines))


def _engine_children(proc: subprocess.Popen[str], pgdata: Path) -> list[psutil.Process]:
    """Every process ``proc`` started, except the database server (which outlives it by design and
    is adopted or stopped by the next start)."""
    postgres = {p.pid for p in _postgres_processes(pgdata)}
    return [p for p in psutil.Process(proc.pid).children(recursive=True) if p.pid not in postgres]


def _running(process: psutil.Process) -> bool:
    try:
        return bool(process.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def test_sigkill_of_dev_leaves_no_child_running(tmp_path: Path) -> None:
    # Given `memory-engine dev` with two workers and its ingestion process
    home = tmp_path / "home"
    proc, _ = _start_dev(home, "--workers", "2")
    leftover: subprocess.Popen[bytes] | None = None
    again: subprocess.Popen[str] | None = None
    try:
        killed_created = psutil.Process(proc.pid).create_time()
        children = _engine_children(proc, home / "pgdata")
        assert len(children) >= 3  # two workers, the ingestion process (and multiprocessing's resource tracker)
        # When it is killed outright
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        # Then none of its processes is left running (workers, ingestion, multiprocessing's helpers)
        deadline = time.monotonic() + 60
        while (alive := [p for p in children if _running(p)]) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert alive == []
        # And a child the killed engine recorded that did outlive it (a platform without the
        # parent-death signal) is ended by the next start on the same home
        leftover = subprocess.Popen(["sleep", "300"])
        (home / FILE_NAME).write_text(json.dumps({
            "parent": proc.pid, "parent_created": killed_created,
            "children": [{"pid": leftover.pid, "created": psutil.Process(leftover.pid).create_time()}]}))
        again, base_url = _start_dev(home, "--workers", "1")
        assert leftover.wait(timeout=30) == -signal.SIGKILL
        # And that start serves, and a SIGTERM leaves no database server behind
        with urllib.request.urlopen(f"{base_url}/v1/health", timeout=10) as response:
            assert json.loads(response.read())["workers"] == {"alive": 1, "configured": 1}
        again.send_signal(signal.SIGTERM)
        again.wait(timeout=60)
        assert again.returncode == 0
    finally:
        for started in (proc, leftover, again):
            if started is not None and started.poll() is None:
                started.kill()
    time.sleep(0.5)
    assert not _postgres_processes(home / "pgdata")
