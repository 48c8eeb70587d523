"""Children of a local engine do not outlive it (issue 34, defect 8): a spawned child ends when its
parent is killed outright (local/worker_process.die_with_parent), and a start ends what a killed
engine left (local/children.ChildRecord), never a process that merely reuses a recorded pid.

Real processes: a parent script is started, then killed with SIGKILL; the timeouts only guard
against a hang."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from memory_engine.local.children import FILE_NAME, ChildRecord

GUARD_S = 60.0

#: A parent that records a `sleep` child of its own (no parent-death signal: it would outlive it).
RECORDING_PARENT = textwrap.dedent("""
    import subprocess, sys, time
    from pathlib import Path
    from memory_engine.local.children import ChildRecord
    record = ChildRecord(Path(sys.argv[1]))
    child = subprocess.Popen(["sleep", "300"])
    record.add(child.pid)
    print(child.pid, flush=True)
    time.sleep(300)
""")

#: A parent that spawns a child the way the engine does (multiprocessing's spawn context), the
#: child calling die_with_parent; argv[1] == "watchdog" leaves the kernel's signal out.
SPAWNING_PARENT = textwrap.dedent("""
    import multiprocessing, os, sys, time

    def child(parent_pid, kernel_signal):
        from memory_engine.local.worker_process import die_with_parent
        die_with_parent(parent_pid, interval=0.1, kernel_signal=kernel_signal)
        time.sleep(300)

    if __name__ == "__main__":
        process = multiprocessing.get_context("spawn").Process(
            target=child, args=(os.getpid(), sys.argv[1] != "watchdog"))
        process.start()
        print(process.pid, flush=True)
        time.sleep(300)
""")


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def _parent(processes: list[subprocess.Popen[str]], script: str, argument: str) -> tuple[subprocess.Popen[str], int]:
    """Start ``script`` with ``argument``; (the parent, the pid of the child it reports)."""
    proc = subprocess.Popen([sys.executable, "-c", script, argument], stdout=subprocess.PIPE, text=True)
    processes.append(proc)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip().isdigit(), f"the parent did not report its child: {line!r}"
    return proc, int(line)


def _kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _gone(pid: int) -> bool:
    """True once ``pid`` no longer runs (an unreaped zombie counts as gone)."""
    deadline = time.monotonic() + GUARD_S
    while _running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.mark.parametrize("mode", ["kernel-signal", "watchdog"])
def test_a_spawned_child_ends_when_its_parent_is_killed(processes: list[subprocess.Popen[str]], mode: str) -> None:
    # Given a parent with a child that asked to die with it (on Linux by prctl, or by the watchdog alone)
    parent, child = _parent(processes, SPAWNING_PARENT, mode)
    assert _running(child)
    # When the parent is killed outright
    _kill(parent)
    # Then the child ends too
    assert _gone(child)


def test_a_start_ends_the_children_a_killed_engine_left(processes: list[subprocess.Popen[str]], tmp_path: Path) -> None:
    # Given an engine that recorded a child, then was killed outright (the child lives on)
    parent, child = _parent(processes, RECORDING_PARENT, str(tmp_path))
    _kill(parent)
    assert _running(child)
    # When the next engine starts on the same home
    ended = ChildRecord(tmp_path).reap_leftovers()
    # Then the leftover child is ended, and the record is gone
    assert ended == [child] and _gone(child)
    assert not (tmp_path / FILE_NAME).exists()


def test_the_children_of_a_running_engine_are_left_alone(processes: list[subprocess.Popen[str]], tmp_path: Path) -> None:
    # Given an engine still running with a recorded child
    parent, child = _parent(processes, RECORDING_PARENT, str(tmp_path))
    # When another start looks at the same home
    ended = ChildRecord(tmp_path).reap_leftovers()
    # Then nothing is ended
    assert ended == [] and _running(child) and parent.poll() is None


def test_a_recorded_pid_now_used_by_another_process_is_not_ended(processes: list[subprocess.Popen[str]],
                                                                 tmp_path: Path) -> None:
    # Given a record of a gone engine whose child's pid now belongs to another process
    bystander = subprocess.Popen(["sleep", "300"], text=True)
    processes.append(bystander)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(10)
    created = psutil.Process(bystander.pid).create_time()
    (tmp_path / FILE_NAME).write_text(json.dumps({
        "parent": gone.pid, "parent_created": 0.0,
        "children": [{"pid": bystander.pid, "created": created - 3600}]}))
    # When a start reaps leftovers
    ended = ChildRecord(tmp_path).reap_leftovers()
    # Then the process that reuses the pid lives on
    assert ended == [] and _running(bystander.pid)


def test_an_unreadable_record_ends_nothing(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).write_text("{not json")
    assert ChildRecord(tmp_path).reap_leftovers() == []
