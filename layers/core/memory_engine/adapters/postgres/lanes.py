"""Lanes: the statements of one search over as many pooled connections as can run at once.

Each lane holds one connection in one transaction (the search settings made once, :func:`searching`)
and takes the next task until none is left; a task may add tasks as it ends (a source's candidate
read, once its lists are in), and the lane that ends the last task may start the next phase on the
connections the lanes hold (a search's page read, once its ranking is fused). docs/retrieval.md has
the measurements.
"""

from __future__ import annotations

import re
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final, TypeVar

import psycopg
from psycopg import sql

from memory_engine.adapters.postgres.database import Database

_T = TypeVar("_T")
_K = TypeVar("_K")


@dataclass(frozen=True, slots=True)
class PlanValue:
    """A statement parameter that decides how PostgreSQL should run the statement: the scope (which
    project, memories, documents, tags, point in time, confidence floor) and the row counts of its
    ``LIMIT`` s. Wrapped where the parameters are made (``{"depth": PlanValue(q.depth)}``), it is
    written into the statement's text as a literal in a search transaction (:class:`PlannedCursor`)
    and bound like any other value on a connection outside one (:func:`bound`); every value not
    wrapped (the query's text and vector, ids, statistics) is always a bound parameter."""

    value: Any


#: A named placeholder of a statement (``%(name)s``, ``%(name)b``); ``%%`` is a literal ``%``.
PLACEHOLDER: Final = re.compile(r"(?<!%)%\((\w+)\)([sb])")


def with_plan_values(query: str, params: Mapping[str, Any], conn: psycopg.Connection[Any]) -> str:
    """``query`` with the placeholders of its :class:`PlanValue` parameters replaced by their values
    as literals, quoted by psycopg for ``conn`` (a ``%`` in one, as in a LIKE pattern, written
    ``%%``); the others stay placeholders. A search writes some 100 of them (the scope recurs in
    subqueries): the pieces of a query and the literal of a value are each worked out once."""
    texts, names, formats = _pieces(query)
    if not names:
        return query
    out = [texts[0]]
    for name, fmt, text in zip(names, formats, texts[1:], strict=True):
        value = params[name]
        out.append(_literal(value.value, conn) if isinstance(value, PlanValue) else f"%({name}){fmt}")
        out.append(text)
    return "".join(out)


def bound_values(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with each :class:`PlanValue` unwrapped, to be bound like the others."""
    return {name: value.value if isinstance(value, PlanValue) else value for name, value in params.items()}


@lru_cache(maxsize=1024)
def _pieces(query: str) -> tuple[list[str], list[str], list[str]]:
    """``query`` split at its placeholders: the texts around them, their names and formats."""
    parts = PLACEHOLDER.split(query)
    return parts[0::3], parts[1::3], parts[2::3]


_LITERALS: dict[Any, str] = {}
_MAX_LITERALS: Final = 4096


def _typed_key(value: Any) -> Any:
    """A cache key that tells equal values of different types apart: ``[1, 2]`` and ``[1.0, 2.0]``,
    ``[True]`` and ``[1]`` compare (and hash) equal but quote as ``int2[]``, ``float8[]``, ``bool[]``."""
    if isinstance(value, list | tuple):
        return (type(value), tuple(_typed_key(item) for item in value))
    return (type(value), value)


def _literal(value: Any, conn: psycopg.Connection[Any]) -> str:
    """``value`` as a literal, remembered (every connection of the engine quotes alike: UTF-8,
    standard-conforming strings)."""
    key: Any = _typed_key(value)
    try:
        known = _LITERALS.get(key) if key is not None else None
    except TypeError:  # not hashable: quoted every time
        key, known = None, None
    if known is None:
        known = sql.Literal(value).as_string(conn).replace("%", "%%")
        if key is not None:
            if len(_LITERALS) >= _MAX_LITERALS:
                _LITERALS.clear()
            _LITERALS[key] = known
    return known


class PlannedCursor(psycopg.Cursor[Any]):
    """A cursor that writes a statement's :class:`PlanValue` s into its text as literals
    (:func:`with_plan_values`), so that a generic plan, made once per connection and text and
    reused, is still made for the scope it runs on: a memory of 200 facts in a table of 100k is
    planned apart from one of 100k (a keyword statement over the small one: 3.1 ms custom, 16.2 ms
    generic with the scope a parameter, 2.3 ms generic with the scope written in)."""

    def execute(self, query: Any, params: Any = None, *, prepare: bool | None = None,
                binary: bool | None = None) -> PlannedCursor:
        if isinstance(query, str) and isinstance(params, Mapping):
            query = with_plan_values(query, params, self.connection)
        super().execute(query, params, prepare=prepare, binary=binary)
        return self


class BoundCursor(psycopg.Cursor[Any]):
    """A cursor that binds a statement's :class:`PlanValue` s like any other value (:func:`bound`)."""

    def execute(self, query: Any, params: Any = None, *, prepare: bool | None = None,
                binary: bool | None = None) -> BoundCursor:
        if isinstance(params, Mapping):
            params = bound_values(params)
        super().execute(query, params, prepare=prepare, binary=binary)
        return self


@contextmanager
def _cursors(conn: psycopg.Connection[Any], factory: type[psycopg.Cursor[Any]]) -> Iterator[psycopg.Connection[Any]]:
    saved = conn.cursor_factory
    conn.cursor_factory = factory
    try:
        yield conn
    finally:
        conn.cursor_factory = saved


def bound(conn: psycopg.Connection[Any]) -> AbstractContextManager[psycopg.Connection[Any]]:
    """``conn`` outside a search transaction (the no-query reads): the :class:`PlanValue` s of the
    statements run through it until the block ends are bound parameters, the plans PostgreSQL's
    default (``plan_cache_mode = auto``)."""
    return _cursors(conn, BoundCursor)


@contextmanager
def searching(conn: psycopg.Connection[Any], ef_search: int) -> Iterator[psycopg.Connection[Any]]:
    """``conn`` in a search transaction: the HNSW settings, and generic plans with the scope written
    in (:class:`PlannedCursor`) for the statements run through it until the block ends.

    - Iterative index scans (pgvector >= 0.8) keep walking the HNSW graph when filters drop rows,
      so a filtered query still returns ``depth`` rows; transaction-local, so pooled connections
      stay clean.
    - Generic plans: planning was a fifth of a hybrid search's server time (a keyword statement
      plans in 0.6-0.7 ms and runs in 1.7-2.1). psycopg prepares a statement after a few
      executions, and its generic plan is then reused by every search on that connection and
      scope. With the scope a bound parameter, a generic plan cannot see it and PostgreSQL's
      default (``auto``) picked generic plans that were far slower than custom ones (an entity
      list 2 ms custom and 12-50 ms generic at 100k facts, a keyword statement over a small memory
      above), so until this the search forced custom plans. Written in, the scope is seen; what
      stays a parameter (the query's words and vector, ids) does not change a plan's shape.
    """
    conn.execute(
        "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', %s, true),"
        " set_config('plan_cache_mode', 'force_generic_plan', true)",
        (str(ef_search),),
    )
    with _cursors(conn, PlannedCursor):
        yield conn


class Lanes:
    """Runs a search's tasks over ``database``'s pool, at most ``max_workers`` at once."""

    def __init__(self, database: Database, max_workers: int) -> None:
        self._database = database
        self._max_workers = max_workers
        self._executor: ThreadPoolExecutor | None = None

    def run(
        self, tasks: dict[_K, Callable[[psycopg.Connection[Any]], _T]], ef_search: int,
        then: Callable[[_K, _T, int], dict[_K, Callable[[psycopg.Connection[Any]], _T]]] | None = None,
        drained: Callable[[dict[_K, _T]], dict[_K, Callable[[psycopg.Connection[Any]], _T]]] | None = None,
        *, lanes: int | None = None,
    ) -> dict[_K, _T]:
        """Every task's result, the tasks taken in their order by as many lanes as the pool has
        connections (at most one per task, at most ``lanes``): each lane holds one connection in one
        transaction and takes the next task until none is left. A task of its own per connection
        paid a checkout, a check, the settings and a commit each (0.2 ms of CPU; a hybrid search
        ranks with five). The calling thread runs one lane itself.

        ``then(name, result, spare)``, called as each task ends, may return more tasks, queued
        behind the others; ``spare`` is how many lanes would have nothing to run next (this one
        included). ``drained(results)``, called by the lane that ends the last task (none queued,
        none running) with every result so far, may return more tasks as well (the next phase:
        the lanes still hold their connections and transactions); it is called again each time
        those are done, until it returns none. A lane with nothing to take waits while tasks run
        that may still add some. The first failure stops every lane and is raised."""
        results: dict[_K, _T] = {}
        if not tasks and drained is not None:
            tasks = drained({})  # nothing to run first: the next phase at once
        if not tasks:
            return results
        pending = deque(tasks)
        tasks = dict(tasks)
        state = {"outstanding": len(pending), "idle": 0, "failed": False}
        cond = threading.Condition()

        def lane(conn: psycopg.Connection[Any]) -> None:
            while True:
                with cond:
                    state["idle"] += 1
                    while not pending and state["outstanding"] and not state["failed"]:
                        cond.wait()
                    state["idle"] -= 1
                    if state["failed"] or not pending:
                        return
                    name = pending.popleft()
                    task = tasks[name]
                try:
                    answer = task(conn)
                    with cond:
                        results[name] = answer
                        spare = state["idle"] + 1 - len(pending)
                    more = {} if then is None else then(name, answer, spare)
                    while True:
                        with cond:
                            tasks.update(more)
                            pending.extend(more)
                            state["outstanding"] += len(more)
                            # whether this was the last task is decided where it is counted done, so
                            # of two lanes ending the last two tasks at once exactly one asks
                            if drained is None or pending or state["outstanding"] > 1:
                                state["outstanding"] -= 1
                                cond.notify_all()
                                break
                            so_far = dict(results)  # the others wait while this lane asks what is next
                        more = drained(so_far)
                        if not more:
                            with cond:
                                state["outstanding"] -= 1
                                cond.notify_all()
                            break
                except BaseException:
                    with cond:
                        state["failed"] = True
                        cond.notify_all()
                    raise

        count = min(len(pending), self._database.max_size, self._max_workers, lanes or len(pending))
        futures = [self._threads().submit(self.run_one, lane, ef_search) for _ in range(count - 1)]
        failure: BaseException | None = None
        try:
            self.run_one(lane, ef_search)
        except BaseException as exc:
            failure = exc
        for future in futures:  # every lane's connection is back before the search ends or fails
            error = future.exception()
            failure = failure or error
        if failure is not None:
            raise failure
        return results

    def run_one(self, task: Callable[[psycopg.Connection[Any]], _T], ef_search: int) -> _T:
        """``task`` on one pooled connection, in one transaction with the search settings."""
        with self._database.connection() as conn, searching(conn, ef_search):
            return task(conn)

    def _threads(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=self._max_workers, thread_name_prefix="search")
        return self._executor

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None
