"""Background work of the local engine runs at a lower CPU priority: the ingestion threads and the
PostgreSQL backends of the engine's own pool (worker processes serve the API at normal priority)."""

from __future__ import annotations

import os
import threading

import psycopg
import pytest
from psycopg.rows import dict_row

from memory_engine.adapters.postgres.database import Database
from memory_engine.local.priority import BACKGROUND_NICENESS, lower_backend_priority, lower_thread_priority

pytestmark = pytest.mark.skipif(not hasattr(os, "setpriority"), reason="per-thread priority needs Linux")


def test_a_background_thread_runs_only_on_idle_cycles() -> None:
    seen: dict[str, int] = {}

    def work() -> None:
        tid = threading.get_native_id()
        lower_thread_priority()
        seen["policy"] = os.sched_getscheduler(tid)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert seen["policy"] == os.SCHED_IDLE
    assert os.sched_getscheduler(threading.get_native_id()) == os.SCHED_OTHER  # the caller is untouched


def test_the_engines_own_pool_runs_its_backends_nicer(database_url: str) -> None:
    # Given a pool configured as the local engine configures its own when workers serve the API
    database = Database(database_url, on_connect=lower_backend_priority)
    with psycopg.connect(database_url, row_factory=dict_row) as other:
        normal_pid = other.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"]  # type: ignore[index]
        with database.connection() as conn:
            pid = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"]  # type: ignore[index]
            # Then its backend is nicer than an ordinary connection's backend
            assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, os.getpriority(os.PRIO_PROCESS, normal_pid)
                                                               + BACKGROUND_NICENESS)
    database.close()
