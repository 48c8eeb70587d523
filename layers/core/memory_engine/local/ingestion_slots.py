"""The local stand-in for Step Functions' executions: ingestion runs share a few threads (slots)
fairly between projects, and a run that waits for a converter's callback holds none.

Slots. ``workers`` runs are in flight at once, plus :data:`RESERVED_SLOTS` that only a project
with nothing running may take. When a slot frees, the next run comes from the project with the
fewest runs in flight among those with queued work (ties: the project served longest ago, i.e.
round-robin); within a project, runs start in the order they came (a resumed run first). So one
project alone uses every ``workers`` slot, but once another project has work queued, each freed
slot goes to whoever has fewer in flight, and a project whose runs all hang on slow converters
cannot keep another project's first document waiting: the reserved slot takes it at once.

Parking. A run reaching AwaitConversion (the converter answered ``pending``) leaves its slot, as
a ``.waitForTaskToken`` state holds no Lambda: :meth:`PipelineRunner.advance` returns it
:class:`~memory_engine.local.pipeline.Parked`, and the parking lot thread checks the recorded
conversion (``PipelineRunner.check_token``: one read per parked run, every
:data:`FIRST_CHECK_S` at first, backing off to :data:`MAX_CHECK_S`). Delivered pages (or the
converter's error) put the run back in its project's queue, ahead of the project's new runs;
the deadline (``CONVERTER_DEADLINE_SECONDS``) ends it ``failed`` through MarkFailed, as
``States.Timeout`` does on AWS. Parked runs live in memory: a restarted engine resumes
unfinished documents from the start (``resume_interrupted``), which asks the converter again.

A queued run is its payload (ids and keys, under a kilobyte; the content is in the blob store),
so thousands can wait without holding their documents in memory.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from memory_engine import constants as c
from memory_engine.local.pipeline import Parked, PipelineResult, PipelineRunner, TaskFailed, TaskTimedOut

logger = logging.getLogger(__name__)

#: Slots beyond ``workers`` that only a project with no run in flight may take.
RESERVED_SLOTS = 1
#: A parked run's conversion is first checked this soon, then ever less often, up to MAX_CHECK_S.
FIRST_CHECK_S = 0.25
MAX_CHECK_S = 2.0
#: Finished runs whose results stay available to ``result``/``finished`` (oldest dropped first).
KEPT_RESULTS = 10_000

Step = Callable[[], PipelineResult | Parked]


def run_project(payload: dict[str, Any]) -> str:
    """The project a run belongs to: a DocumentRun's ``project_id``, or the ``projects/<id>/``
    prefix of an S3 event's object key ("" when neither says: such runs share one queue)."""
    project = payload.get("project_id")
    if isinstance(project, str):
        return project
    detail = payload.get("detail")
    obj = detail.get("object") if isinstance(detail, dict) else None
    key = obj.get("key") if isinstance(obj, dict) else None
    if isinstance(key, str) and key.startswith(c.S3_PROJECT_PREFIX):
        return key[len(c.S3_PROJECT_PREFIX):].partition("/")[0]
    return ""


@dataclass(eq=False)
class _Run:
    project: str
    payload: dict[str, Any]
    future: Future[PipelineResult]
    next: Step  # what the run's next slot does: start, go on after its wait, or fail


@dataclass(eq=False)
class _Waiting:
    run: _Run
    parked: Parked
    deadline: float
    check_at: float
    interval: float = FIRST_CHECK_S


@dataclass
class _Projects:
    """Queued runs and runs in flight per project (guarded by the starter's condition)."""

    queued: dict[str, deque[_Run]] = field(default_factory=dict)
    running: dict[str, int] = field(default_factory=dict)
    served: dict[str, int] = field(default_factory=dict)
    turns: itertools.count[int] = field(default_factory=itertools.count)
    active: int = 0

    def push(self, run: _Run, *, first: bool = False) -> None:
        queue = self.queued.setdefault(run.project, deque())
        if first:
            queue.appendleft(run)
        else:
            queue.append(run)

    def pick(self, workers: int, reserved: int) -> _Run | None:
        """The next run to start on a free slot, or None (see the module docstring)."""
        if self.active >= workers + reserved:
            return None
        reserved_only = self.active >= workers
        best: tuple[int, int] | None = None
        chosen = ""
        for project in self.queued:
            running = self.running.get(project, 0)
            if reserved_only and running:
                continue
            rank = (running, self.served.get(project, -1))
            if best is None or rank < best:
                best, chosen = rank, project
        if best is None:
            return None
        queue = self.queued[chosen]
        run = queue.popleft()
        if not queue:
            del self.queued[chosen]
        self.served[chosen] = next(self.turns)
        self.running[chosen] = self.running.get(chosen, 0) + 1
        self.active += 1
        return run

    def done(self, project: str) -> None:
        self.active -= 1
        self.running[project] -= 1
        if not self.running[project]:
            del self.running[project]
            if project not in self.queued:
                self.served.pop(project, None)


class LocalPipelineStarter:
    """PipelineStarter for the local shape: ``workers`` (+ :data:`RESERVED_SLOTS`) slot threads
    run the runs fairly between projects; runs awaiting a converter's callback are parked (module
    docstring). ``thread_initializer`` runs once in each slot thread (the local engine lowers
    their CPU priority there, so API requests come first while a corpus drains)."""

    def __init__(self, runner: PipelineRunner, *, workers: int = 1, reserved: int = RESERVED_SLOTS,
                 thread_initializer: Callable[[], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._runner = runner
        self.workers, self.reserved = max(1, workers), max(0, reserved)
        self._initializer = thread_initializer
        self._clock = clock
        self._cond = threading.Condition()
        self._projects = _Projects()
        self._parked: list[_Waiting] = []
        self._runs: OrderedDict[str, Future[PipelineResult]] = OrderedDict()
        self._threads: list[threading.Thread] = []
        self._stopping = False
        self._counter = 0

    # --- PipelineStarter ---
    def start(self, payload: dict[str, Any], *, name: str | None = None, size_bytes: int | None = None) -> str:
        """Queue a run in its project's queue. Raises RuntimeError after :meth:`shutdown`."""
        with self._cond:
            if self._stopping:
                raise RuntimeError("the local ingestion runner was shut down")
            self._counter += 1
            run_id = name or f"local-run-{self._counter}"
            if name is not None and name in self._runs:
                # like StartExecution with a name already used: one run (a start queued before the
                # ingestion process restarted and resumed it is not run a second time)
                return run_id
            future: Future[PipelineResult] = Future()
            run = _Run(run_project(payload), payload, future, lambda: self._runner.advance(payload))
            self._runs.pop(run_id, None)
            self._runs[run_id] = future
            self._forget_old()
            self._projects.push(run)
            self._start_threads()
            self._cond.notify_all()
        return run_id

    def finished(self, run_id: str) -> PipelineResult | None:
        """The run's result when it has ended, else None. Raises KeyError for an unknown run."""
        future = self._runs[run_id]
        return future.result() if future.done() else None

    def result(self, run_id: str, timeout: float | None = None) -> PipelineResult:
        """Wait for a run started here. Raises TimeoutError, KeyError."""
        return self._runs[run_id].result(timeout=timeout)

    def parked(self) -> int:
        """Runs waiting for a converter's callback (they hold no slot)."""
        with self._cond:
            return len(self._parked)

    def shutdown(self) -> None:
        """Stop taking runs; queued and parked ones are cancelled (the next start resumes their
        documents, like any interrupted run). Runs in flight finish on their daemon threads."""
        with self._cond:
            self._stopping = True
            for queue in self._projects.queued.values():
                for run in queue:
                    run.future.cancel()
            for waiting in self._parked:
                waiting.run.future.cancel()
            self._projects.queued.clear()
            self._parked.clear()
            self._cond.notify_all()

    # --- slots ---
    def _start_threads(self) -> None:
        if self._threads:
            return
        for index in range(self.workers + self.reserved):
            thread = threading.Thread(target=self._slot, name=f"ingest-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)
        lot = threading.Thread(target=self._parking_lot, name="ingest-parking", daemon=True)
        lot.start()
        self._threads.append(lot)

    def _forget_old(self) -> None:
        excess = len(self._runs) - KEPT_RESULTS
        if excess > 0:
            for run_id in [r for r, f in self._runs.items() if f.done()][:excess]:
                del self._runs[run_id]

    def _slot(self) -> None:
        if self._initializer is not None:
            self._initializer()
        while True:
            with self._cond:
                run = None
                while not self._stopping and (run := self._projects.pick(self.workers, self.reserved)) is None:
                    self._cond.wait()
                if run is None:
                    return
            try:
                self._step(run)
            finally:
                with self._cond:
                    self._projects.done(run.project)
                    self._cond.notify_all()

    def _step(self, run: _Run) -> None:
        try:
            outcome = run.next()
        except Exception as exc:  # mark_failed itself failed: log, the slot must survive
            logger.exception("local ingestion run crashed")
            outcome = PipelineResult("failed", run.payload, error=str(exc))
        if isinstance(outcome, PipelineResult):
            run.future.set_result(outcome)
            return
        now = self._clock()
        waiting = _Waiting(run, outcome, deadline=now + outcome.timeout_s, check_at=now + FIRST_CHECK_S)
        with self._cond:
            if self._stopping:
                run.future.cancel()
                return
            self._parked.append(waiting)
            self._cond.notify_all()

    # --- parking lot ---
    def _parking_lot(self) -> None:
        while True:
            with self._cond:
                while not self._stopping:
                    now = self._clock()
                    due = [w for w in self._parked if w.check_at <= now]
                    if due:
                        break
                    soonest = min((w.check_at for w in self._parked), default=None)
                    self._cond.wait(None if soonest is None else max(0.0, soonest - now))
                if self._stopping:
                    return
            for waiting in due:
                self._check(waiting)

    def _check(self, waiting: _Waiting) -> None:
        parked, check = waiting.parked, self._runner.check_token
        assert check is not None  # advance() parks only with a checker
        resolved: Step | None = None
        try:
            output = check(parked.state, parked.task_token)
        except TaskFailed as exc:
            resolved = self._ending(parked, exc)
        except Exception:  # e.g. the database is restarting: the deadline still holds
            logger.warning("could not check the conversion a parked run awaits; checking again", exc_info=True)
            output = None
        else:
            if output is not None:
                delivered = output
                resolved = lambda: self._runner.resume(parked, delivered)  # noqa: E731 - a deferred step
        now = self._clock()
        if resolved is None and now >= waiting.deadline:
            resolved = self._ending(parked, TaskTimedOut(f"no callback within {parked.timeout_s:g} s"))
        with self._cond:
            if waiting not in self._parked:
                return  # shut down meanwhile
            if resolved is None:
                waiting.interval = min(MAX_CHECK_S, waiting.interval * 2)
                waiting.check_at = min(now + waiting.interval, waiting.deadline)
                return
            self._parked.remove(waiting)
            waiting.run.next = resolved
            self._projects.push(waiting.run, first=True)
            self._cond.notify_all()

    def _ending(self, parked: Parked, exc: BaseException) -> Step:
        return lambda: self._runner.fail(parked, exc)
