"""Lanes: the statements of one search over as many pooled connections as can run at once.

Each lane holds one connection in one transaction (the search settings made once, :func:`prepare`)
and takes the next task until none is left; a task may add tasks as it ends (a source's candidate
read, once its lists are in). docs/retrieval.md has the measurements.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import psycopg

from memory_engine.adapters.postgres.database import Database

_T = TypeVar("_T")
_K = TypeVar("_K")


def prepare(conn: psycopg.Connection[Any], ef_search: int) -> None:
    # Iterative index scans (pgvector >= 0.8) keep walking the HNSW graph when filters drop rows,
    # so a filtered query still returns `depth` rows; transaction-local, so pooled connections stay clean.
    # Custom plans always: psycopg prepares a statement after a few executions, and PostgreSQL may
    # then switch to a generic plan that cannot see the anchors, lexemes or ids it is given (an
    # entity list measured 2 ms custom and 12-50 ms generic at 100k facts).
    conn.execute(
        "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', %s, true),"
        " set_config('plan_cache_mode', 'force_custom_plan', true)",
        (str(ef_search),),
    )


class Lanes:
    """Runs a search's tasks over ``database``'s pool, at most ``max_workers`` at once."""

    def __init__(self, database: Database, max_workers: int) -> None:
        self._database = database
        self._max_workers = max_workers
        self._executor: ThreadPoolExecutor | None = None

    def run(
        self, tasks: dict[_K, Callable[[psycopg.Connection[Any]], _T]], ef_search: int,
        then: Callable[[_K, _T, int], dict[_K, Callable[[psycopg.Connection[Any]], _T]]] | None = None,
    ) -> dict[_K, _T]:
        """Every task's result, the tasks taken in their order by as many lanes as the pool has
        connections (at most one per task): each lane holds one connection in one transaction and
        takes the next task until none is left. A task of its own per connection paid a checkout, a
        check, the settings and a commit each (0.2 ms of CPU; a hybrid search ranks with five).
        ``then(name, result, spare)``, called as each task ends, may return more tasks, queued
        behind the others; ``spare`` is how many lanes would have nothing to run next (this one
        included). A lane with nothing to take waits while tasks run that may still add some. The
        first failure stops every lane and is raised."""
        pending = deque(tasks)
        tasks = dict(tasks)
        state = {"outstanding": len(pending), "idle": 0, "failed": False}
        cond = threading.Condition()

        def lane(conn: psycopg.Connection[Any]) -> dict[_K, _T]:
            done: dict[_K, _T] = {}
            while True:
                with cond:
                    state["idle"] += 1
                    while not pending and state["outstanding"] and not state["failed"]:
                        cond.wait()
                    state["idle"] -= 1
                    if state["failed"] or not pending:
                        return done
                    name = pending.popleft()
                    task = tasks[name]
                try:
                    done[name] = task(conn)
                    if then is None:
                        more: dict[_K, Callable[[psycopg.Connection[Any]], _T]] = {}
                    else:
                        with cond:
                            spare = state["idle"] + 1 - len(pending)
                        more = then(name, done[name], spare)
                except BaseException:
                    with cond:
                        state["failed"] = True
                        cond.notify_all()
                    raise
                with cond:
                    tasks.update(more)
                    pending.extend(more)
                    state["outstanding"] += len(more) - 1
                    cond.notify_all()

        lanes = min(len(pending), self._database.max_size, self._max_workers)
        futures = [self._threads().submit(self.run_one, lane, ef_search) for _ in range(lanes)]
        results: dict[_K, _T] = {}
        for future in futures:
            results.update(future.result())
        return results

    def run_one(self, task: Callable[[psycopg.Connection[Any]], _T], ef_search: int) -> _T:
        """``task`` on one pooled connection, in one transaction with the search settings."""
        with self._database.connection() as conn:
            prepare(conn, ef_search)
            return task(conn)

    def _threads(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=self._max_workers, thread_name_prefix="search")
        return self._executor

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None
