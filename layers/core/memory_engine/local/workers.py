"""The local stand-in for Lambda's scale-out: a pool of worker processes, each one "container".

Like a Lambda container, a worker holds its own composition root (Container: database pool,
embedding model, key cache) and its own Powertools resolvers, and handles one request at a time
(Powertools keeps the current event on the router class, so one resolver cannot serve two threads).
The gateway hands each request to a free worker; requests wait for one when all are busy.

Workers are *spawned*, never forked: the parent runs threads (the HTTP front, the background
services, a psycopg pool) and onnxruntime, none of which survive a fork safely.

What stays in the parent (single owner, as before): the drop-folder watcher and the event queue.
The ingestion runner has a process of its own (``local/ingestion_process.py``); a worker that
starts an ingestion run (``POST /v1/documents``) forwards the start to it through a queue
(``worker_process.ForwardingPipelineStarter``); ``wait: true`` polls the database, so it works
from any process.

Memory: a large request (e.g. ``/v1/embeddings`` at its limit) grows the worker's heap. The local
embedder runs onnxruntime without its CPU arena (which keeps grown buffers forever) and the worker
hands freed heap back to the OS (``malloc_trim``) after a request that grew it, so its RSS returns
to its baseline; a worker still above :attr:`WorkerPool.max_rss_bytes` afterwards is replaced.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import multiprocessing.connection as mp_connection
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from memory_engine.local.worker_process import error_response, relay_starts, worker_main

if TYPE_CHECKING:
    from memory_engine.settings import Settings

logger = logging.getLogger(__name__)

#: A worker that failed to start is tried again after this delay, doubled after each failure in a
#: row, at most RESPAWN_MAX_DELAY_S.
RESPAWN_FIRST_DELAY_S = 0.5
RESPAWN_MAX_DELAY_S = 30.0


def default_workers() -> int:
    """One worker per CPU, at least 2 (a request waiting on PostgreSQL leaves its core to another),
    at most 8 (each worker holds a model copy and a few database connections)."""
    return max(2, min(8, os.cpu_count() or 1))


@dataclass(eq=False)  # identity: workers live in sets
class _Worker:
    process: Any
    conn: Connection
    #: Events the worker took from its pipe (shared memory, written by the worker): fewer than
    #: ``sent`` when it died means it never began the last request.
    started: Any
    spawned_at: float
    sent: int = 0
    baseline_rss: int = 0
    rss: int = 0
    #: its exit was seen while it served a request (the request's thread retires it)
    exit_seen: bool = False


class WorkerPool:
    """``size`` spawned workers; :meth:`invoke` sends an event to a free one and returns its response.

    The pool heals itself. A supervisor thread waits on every worker's exit sentinel, so a worker
    that dies while idle is retired at once, without a request; it (re)spawns workers until
    ``size`` are up, and a worker that fails to start is tried again after a backoff (0.5 s,
    doubling up to 30 s) until one starts. A request sent to a worker that died before taking it
    (it had not counted it in ``started``) goes to another worker; a worker that dies *during* a
    request is replaced and the request answers 502 (it may have had effects); one that runs longer
    than ``request_timeout`` is killed and replaced (504), as Lambda ends a timed-out invocation.
    The supervisor is the only thread that spawns after :meth:`start` (a child's parent-death
    signal follows the thread that spawned it, ``local/worker_process.py``).

    ``target`` is the worker's main function (tests wrap :func:`worker_main` to inject failures);
    ``on_spawn(pid)`` is told of every worker process started (``local/children.py``).
    """

    def __init__(
        self,
        settings: Settings,
        size: int,
        *,
        request_timeout: float = 120.0,
        queue_timeout: float = 120.0,
        max_rss_bytes: int = 1024 * 1024 * 1024,
        start_timeout: float = 180.0,
        starts: Any = None,
        target: Callable[..., None] = worker_main,
        on_spawn: Callable[[int], None] | None = None,
    ) -> None:
        if size < 1:
            raise ValueError("a worker pool needs at least one worker")
        self.settings = settings
        self.size = size
        self.request_timeout = request_timeout
        self.queue_timeout = queue_timeout
        self.max_rss_bytes = max_rss_bytes
        self.start_timeout = start_timeout
        self._target = target
        self._on_spawn = on_spawn
        self._ctx = multiprocessing.get_context("spawn")
        #: Where workers send the ingestion runs they start: ``starts`` (the ingestion process's
        #: queue) or a queue of this pool's own, relayed by :meth:`relay_pipeline_starts`.
        self.starts: Any = starts if starts is not None else self._ctx.Queue()
        self._relaying = False
        lock = threading.RLock()
        self._cond = threading.Condition(lock)
        #: Requests waiting for an idle worker: woken one at a time, in the order they came (a worker
        #: back from a request wakes the longest waiting one, not all of them to race for it).
        self._idle_cond = threading.Condition(lock)
        self._idle: deque[_Worker] = deque()
        self._ready: set[_Worker] = set()  # started: idle or serving
        self._starting: set[_Worker] = set()
        self._failed_starts = 0  # in a row
        self._spawn_after = 0.0
        self._initial_error: str | None = None  # a start failure before the pool was first whole
        self._started_once = False
        self._stopping = False
        self._closed = False  # stopped, and every worker ended
        self._wake_r, self._wake_w = self._ctx.Pipe(duplex=False)
        self._supervisor: threading.Thread | None = None
        cpus = os.cpu_count() or 1
        self._embed_threads = max(1, cpus // size)

    # --- lifecycle ---
    def start(self) -> None:
        """Start the supervisor, which spawns every worker; return once all are ready (they load
        the model in parallel). Raises RuntimeError when one does not start (then nothing runs)."""
        self._supervisor = threading.Thread(target=self._supervise, name="worker-pool", daemon=True)
        self._supervisor.start()
        with self._cond:
            self._cond.wait_for(lambda: len(self._ready) >= self.size or self._initial_error is not None)
            error = self._initial_error
        if error is not None:
            self.stop()
            raise RuntimeError(error)

    def counts(self) -> tuple[int, int]:
        """(workers alive and ready, workers configured)."""
        with self._cond:
            return sum(1 for w in self._ready if w.process.is_alive()), self.size

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            workers = list(self._ready | self._starting)
            self._cond.notify_all()
            self._idle_cond.notify_all()
        for worker in workers:
            with contextlib.suppress(OSError, ValueError):
                worker.conn.send(None)
        for worker in workers:
            self._end(worker, grace=5.0)
        with self._cond:
            # only now may the supervisor end: the kernel kills a child when the thread that
            # spawned it ends (worker_process.die_with_parent), which would cut the grace above
            self._closed = True
            self._cond.notify_all()
        self._wake()
        if self._supervisor is not None and self._supervisor is not threading.current_thread():
            self._supervisor.join(5)
        if self._relaying:
            self.starts.put(None)  # ends the parent's relay loop

    # --- the supervisor ---
    def _supervise(self) -> None:
        while True:
            with self._cond:
                if self._closed:
                    return
                if self._stopping:  # stop() ends the workers; wait for it to say it is done
                    self._cond.wait(1.0)
                    continue
                now = time.monotonic()
                missing = self.size - len(self._ready) - len(self._starting)
                if missing > 0 and now >= self._spawn_after:
                    try:
                        for _ in range(missing):
                            self._starting.add(self._spawn())
                    except Exception as exc:  # e.g. out of file descriptors: back off, as for a crashed start
                        logger.exception("could not spawn a worker")
                        self._start_failed(None, f"could not spawn a worker: {exc}")
                        continue
                watched: dict[Any, _Worker] = {w.process.sentinel: w for w in self._ready if not w.exit_seen}
                watched.update({w.conn: w for w in self._starting})
                timeout = min([1.0, *(w.spawned_at + self.start_timeout - now for w in self._starting)])
                if missing > 0 and now < self._spawn_after:
                    timeout = min(timeout, self._spawn_after - now)
            try:
                fired = mp_connection.wait([self._wake_r, *watched], max(0.0, timeout))
            except (OSError, ValueError):  # a watched pipe was closed meanwhile (stop)
                continue
            for handle in fired:
                if handle is self._wake_r:
                    with contextlib.suppress(EOFError, OSError):
                        while self._wake_r.poll():
                            self._wake_r.recv_bytes()
                elif handle is watched[handle].conn:
                    self._started(watched[handle])
                else:
                    self._exited(watched[handle])
            self._check_start_timeouts()

    def _spawn(self) -> _Worker:
        parent, child = self._ctx.Pipe()
        started = self._ctx.RawValue("Q", 0)
        process = self._ctx.Process(
            target=self._target, name="memory-engine-worker", daemon=True,
            args=(child, self.settings, self.starts, self._embed_threads, logging.getLogger().getEffectiveLevel(),
                  os.getpid(), started),
        )
        process.start()
        child.close()
        if self._on_spawn is not None and process.pid is not None:
            self._on_spawn(process.pid)
        return _Worker(process, parent, started, spawned_at=time.monotonic())

    def _started(self, worker: _Worker) -> None:
        """A starting worker's pipe is readable: its ready message, or EOF (it exited)."""
        try:
            _, pid, rss = worker.conn.recv()
        except (EOFError, OSError):
            self._start_failed(worker, "a worker exited while starting; see the log above")
            return
        worker.baseline_rss = worker.rss = rss
        logger.info("worker %s up (RSS %.0f MB)", pid, rss / 2**20)
        with self._cond:
            self._starting.discard(worker)
            if self._stopping:
                self._cond.notify_all()
                return
            self._failed_starts = 0
            self._ready.add(worker)
            self._idle.append(worker)
            self._started_once = self._started_once or len(self._ready) >= self.size
            self._cond.notify_all()
            self._idle_cond.notify()

    def _check_start_timeouts(self) -> None:
        now = time.monotonic()
        with self._cond:
            late = [w for w in self._starting if now - w.spawned_at > self.start_timeout]
        for worker in late:
            self._start_failed(worker, f"a worker did not start within {self.start_timeout:.0f} s")

    def _start_failed(self, worker: _Worker | None, reason: str) -> None:
        if worker is not None:
            self._end(worker)
        with self._cond:
            if worker is not None:
                self._starting.discard(worker)
            if not self._started_once:
                self._initial_error = reason  # start() raises it
            self._failed_starts += 1
            delay = min(RESPAWN_MAX_DELAY_S, RESPAWN_FIRST_DELAY_S * 2 ** (self._failed_starts - 1))
            self._spawn_after = time.monotonic() + delay
            self._cond.notify_all()
        logger.error("%s; trying again in %.1f s (%d failed start(s) in a row)", reason, delay, self._failed_starts)

    def _exited(self, worker: _Worker) -> None:
        """A ready worker's process ended: retire it now when idle; a serving one is retired by the
        thread of its request (which sees EOF and knows whether the request began)."""
        with self._cond:
            if worker not in self._ready or self._stopping:
                return
            if worker not in self._idle:
                worker.exit_seen = True
                return
            self._idle.remove(worker)
            self._ready.discard(worker)
        logger.error("worker %s exited while idle (code %s); replacing it", worker.process.pid,
                     worker.process.exitcode)
        self._end(worker)

    def _retire(self, worker: _Worker) -> None:
        """Take ``worker`` out of the pool and end it; the supervisor starts another."""
        with self._cond:
            self._ready.discard(worker)
            with contextlib.suppress(ValueError):
                self._idle.remove(worker)
        self._end(worker)
        self._wake()

    def _end(self, worker: _Worker, grace: float = 0.0) -> None:
        with contextlib.suppress(OSError):
            worker.conn.close()
        if grace:
            worker.process.join(grace)
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join(5)

    def _wake(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._wake_w.send_bytes(b"!")

    # --- serving ---
    @property
    def pids(self) -> list[int]:
        with self._cond:
            return [w.process.pid for w in self._ready]

    def memory(self) -> list[tuple[int, int, int]]:
        """(pid, RSS when it started, RSS after its last request) per worker, in bytes."""
        with self._cond:
            return [(w.process.pid, w.baseline_rss, w.rss) for w in self._ready]

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        deadline = time.monotonic() + self.queue_timeout
        while True:
            worker = self._take(deadline)
            if worker is None:
                return error_response(503, "busy", "every worker is busy; retry later")
            response = self._send(worker, event)
            if response is not None:
                return response

    def _take(self, deadline: float) -> _Worker | None:
        """An idle, living worker (waiting until ``deadline``); dead ones found on the way are retired."""
        while True:
            with self._cond:
                if not self._idle_cond.wait_for(lambda: self._idle or self._stopping,
                                                max(0.0, deadline - time.monotonic())):
                    return None
                if self._stopping:
                    return None
                worker = self._idle.popleft()
            if worker.process.is_alive():
                return worker
            logger.error("worker %s had exited; replacing it", worker.process.pid)
            self._retire(worker)

    def _send(self, worker: _Worker, event: dict[str, Any]) -> dict[str, Any] | None:
        """The worker's response, or None when it died before taking the event (send it elsewhere)."""
        worker.sent += 1
        try:
            worker.conn.send(event)
            if not worker.conn.poll(self.request_timeout):
                logger.error("a request ran over %.0f s; replacing its worker", self.request_timeout)
                self._retire(worker)
                return error_response(504, "timeout", f"the request ran over {self.request_timeout:.0f} s")
            response, worker.rss = worker.conn.recv()
        except (EOFError, OSError):
            began = worker.started.value >= worker.sent
            self._retire(worker)
            if not began:
                logger.warning("worker %s had exited before it took a request; sending it to another",
                               worker.process.pid)
                return None
            logger.error("worker %s died during a request; replacing it", worker.process.pid)
            return error_response(502, "worker_crashed", "the worker serving this request exited; retry")
        if worker.rss > self.max_rss_bytes:
            logger.info("worker %s holds %.0f MB after a request; replacing it", worker.process.pid, worker.rss / 2**20)
            self._retire(worker)
        else:
            self._release(worker)
        return dict(response)

    def _release(self, worker: _Worker) -> None:
        """``worker`` is idle again: it goes to the request that has waited longest (one wake-up)."""
        with self._cond:
            self._idle.append(worker)
            self._idle_cond.notify()

    def relay_pipeline_starts(self, start: Callable[[dict[str, Any], str], Any]) -> threading.Thread:
        """Run ``start(payload, run_id)`` in this process for every run a worker starts."""
        self._relaying = True
        return relay_starts(self.starts, start)

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """True once every worker is idle (tests)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._cond:
                idle = len(self._idle)
            if idle >= self.size:
                return True
            time.sleep(0.05)
        return False
