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
(:class:`ForwardingPipelineStarter`); ``wait: true`` polls the database, so it works from any process.

Memory: a large request (e.g. ``/v1/embeddings`` at its limit) grows the worker's heap. The local
embedder runs onnxruntime without its CPU arena (which keeps grown buffers forever) and the worker
hands freed heap back to the OS (``malloc_trim``) after a request that grew it, so its RSS returns
to its baseline; a worker still above :attr:`WorkerPool.max_rss_bytes` afterwards is replaced.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import multiprocessing
import os
import queue
import signal
import threading
import time
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from memory_engine.http.responses import dumps

if TYPE_CHECKING:
    from memory_engine.settings import Settings

logger = logging.getLogger(__name__)

#: Lambda handlers a worker serves (loaded and warmed before the worker reports ready).
WORKER_HANDLERS = ("api/handler", "search/handler")

#: A request RSS growth above this makes the worker return freed heap to the OS.
_TRIM_ABOVE_BYTES = 32 * 1024 * 1024


def default_workers() -> int:
    """One worker per CPU, at least 2 (a request waiting on PostgreSQL leaves its core to another),
    at most 8 (each worker holds a model copy and a few database connections)."""
    return max(2, min(8, os.cpu_count() or 1))


def error_response(status: int, code: str, message: str) -> dict[str, Any]:
    """A Lambda proxy response with the SPEC error body."""
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json"},
        "body": dumps({"error": {"code": code, "message": message, "details": None}}),
        "isBase64Encoded": False,
    }


class ForwardingPipelineStarter:
    """PipelineStarter of a process that does not run ingestion: hands the start to the process
    that does (the ingestion process, or the parent), through a multiprocessing queue."""

    def __init__(self, starts: Any) -> None:
        self._starts = starts

    def start(self, payload: dict[str, Any], *, name: str | None = None, size_bytes: int | None = None) -> str:
        run_id = name or f"local-run-{uuid.uuid4().hex[:12]}"
        self._starts.put((payload, run_id))
        return run_id

    def shutdown(self) -> None:
        """Nothing runs here (the receiving process owns the runs)."""


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):  # not Linux: no measurement, no trimming
        return 0


def _malloc_trim() -> Callable[[], None]:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        trim = libc.malloc_trim if libc is not None else None
    except (OSError, AttributeError):  # not glibc
        trim = None
    return (lambda: trim(0)) if trim is not None else (lambda: None)


def configure_child_process(label: str, log_level: int) -> None:
    """A spawned process of the engine (worker, ingestion): its log lines say ``[label pid]``, and
    Ctrl-C, which reaches the whole process group, is left to the parent, which stops it."""
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(level=log_level, format=f"%(asctime)s %(levelname)s [{label} {os.getpid()}] %(name)s: %(message)s")
    for noisy in ("botocore", "urllib3", "psycopg.pool"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def worker_main(conn: Connection, settings: Settings, starts: Any, embed_threads: int, log_level: int) -> None:
    """The worker process: build a Container, warm the handlers, then serve events until told to stop
    (``None``) or until the parent goes away (EOF on the pipe)."""
    configure_child_process("worker", log_level)
    from memory_engine.bootstrap import set_container
    from memory_engine.local.container import LocalContainer
    from memory_engine.local.lambda_runtime import load_module
    from memory_engine.local.routing import route_event
    from memory_engine.settings import EmbeddingProvider

    overrides: dict[str, Any] = {"pipeline_starter": ForwardingPipelineStarter(starts)}
    if settings.embedding_provider is EmbeddingProvider.LOCAL:
        from memory_engine.adapters.local.onnx_embedder import OnnxMiniLMEmbedder

        overrides["embedder"] = OnnxMiniLMEmbedder(threads=embed_threads)
    container = LocalContainer(settings, **overrides)
    set_container(container)
    trim = _malloc_trim()
    try:
        for relative in WORKER_HANDLERS:
            load_module(relative)
        container.embedder.embed_query("warm up")
        with container.database.connection() as connection:  # opens this worker's pool
            connection.execute("SELECT 1")
        trim()
        conn.send(("ready", os.getpid(), _rss_bytes()))
        while True:
            try:
                event = conn.recv()
            except (EOFError, OSError):
                break
            if event is None:
                break
            before = _rss_bytes()
            try:
                response = route_event(event)
            except Exception:  # the handlers map every error; this is a bug, not bad input
                logger.exception("worker invocation failed")
                response = error_response(500, "internal_error", "internal error; see the server log")
            if _rss_bytes() - before > _TRIM_ABOVE_BYTES:
                trim()
            try:
                conn.send((response, _rss_bytes()))
            except (EOFError, OSError):
                break
    finally:
        container.close()


@dataclass(eq=False)  # identity: workers live in a set
class _Worker:
    process: Any
    conn: Connection
    baseline_rss: int = 0
    rss: int = 0


class WorkerPool:
    """``size`` spawned workers; :meth:`invoke` sends an event to a free one and returns its response.

    A worker that dies mid-request is replaced and the request answers 502; one that runs longer
    than ``request_timeout`` is killed and replaced (504), as Lambda ends a timed-out invocation.
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
    ) -> None:
        if size < 1:
            raise ValueError("a worker pool needs at least one worker")
        self.settings = settings
        self.size = size
        self.request_timeout = request_timeout
        self.queue_timeout = queue_timeout
        self.max_rss_bytes = max_rss_bytes
        self.start_timeout = start_timeout
        self._ctx = multiprocessing.get_context("spawn")
        #: Where workers send the ingestion runs they start: ``starts`` (the ingestion process's
        #: queue) or a queue of this pool's own, relayed by :meth:`relay_pipeline_starts`.
        self.starts: Any = starts if starts is not None else self._ctx.Queue()
        self._relaying = False
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._all: set[_Worker] = set()
        self._lock = threading.Lock()
        self._stopping = False
        cpus = os.cpu_count() or 1
        self._embed_threads = max(1, cpus // size)

    # --- lifecycle ---
    def start(self) -> None:
        """Spawn every worker and wait until all are ready (they load the model in parallel)."""
        pending = [self._spawn() for _ in range(self.size)]
        for worker in pending:
            self._await_ready(worker)
            self._idle.put(worker)

    def _spawn(self) -> _Worker:
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(
            target=worker_main, name="memory-engine-worker", daemon=True,
            args=(child, self.settings, self.starts, self._embed_threads, logging.getLogger().getEffectiveLevel()),
        )
        process.start()
        child.close()
        worker = _Worker(process, parent)
        with self._lock:
            self._all.add(worker)
        return worker

    def _await_ready(self, worker: _Worker) -> None:
        if not worker.conn.poll(self.start_timeout):
            self._kill(worker)
            raise RuntimeError(f"a worker did not start within {self.start_timeout:.0f} s")
        try:
            _, pid, rss = worker.conn.recv()
        except (EOFError, OSError) as exc:
            self._kill(worker)
            raise RuntimeError("a worker exited while starting; see the log above") from exc
        worker.baseline_rss = worker.rss = rss
        logger.info("worker %s up (RSS %.0f MB)", pid, rss / 2**20)

    def _replace(self, worker: _Worker) -> None:
        """Retire ``worker`` and start another in the background (requests meanwhile use the rest)."""
        self._kill(worker)

        def respawn() -> None:
            if self._stopping:
                return
            try:
                fresh = self._spawn()
                self._await_ready(fresh)
            except Exception:
                logger.exception("could not replace a worker")
                return
            if self._stopping:
                self._kill(fresh)
            else:
                self._idle.put(fresh)

        threading.Thread(target=respawn, name="worker-respawn", daemon=True).start()

    def _kill(self, worker: _Worker, grace: float = 0.0) -> None:
        with self._lock:
            self._all.discard(worker)
        with contextlib.suppress(OSError):
            worker.conn.close()
        if grace:
            worker.process.join(grace)
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join(5)

    def stop(self) -> None:
        self._stopping = True
        with self._lock:
            workers = list(self._all)
        for worker in workers:
            with contextlib.suppress(OSError, ValueError):
                worker.conn.send(None)
        for worker in workers:
            self._kill(worker, grace=5.0)
        if self._relaying:
            self.starts.put(None)  # ends the parent's relay loop

    # --- serving ---
    @property
    def pids(self) -> list[int]:
        with self._lock:
            return [w.process.pid for w in self._all]

    def memory(self) -> list[tuple[int, int, int]]:
        """(pid, RSS when it started, RSS after its last request) per worker, in bytes."""
        with self._lock:
            return [(w.process.pid, w.baseline_rss, w.rss) for w in self._all]

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        try:
            worker = self._idle.get(timeout=self.queue_timeout)
        except queue.Empty:
            return error_response(503, "busy", "every worker is busy; retry later")
        try:
            worker.conn.send(event)
            if not worker.conn.poll(self.request_timeout):
                logger.error("a request ran over %.0f s; replacing its worker", self.request_timeout)
                self._replace(worker)
                return error_response(504, "timeout", f"the request ran over {self.request_timeout:.0f} s")
            response, worker.rss = worker.conn.recv()
        except (EOFError, OSError):
            logger.error("worker %s died during a request; replacing it", worker.process.pid)
            self._replace(worker)
            return error_response(502, "worker_crashed", "the worker serving this request exited; retry")
        if worker.rss > self.max_rss_bytes:
            logger.info("worker %s holds %.0f MB after a request; replacing it", worker.process.pid, worker.rss / 2**20)
            self._replace(worker)
        else:
            self._idle.put(worker)
        return dict(response)

    def relay_pipeline_starts(self, start: Callable[[dict[str, Any], str], Any]) -> threading.Thread:
        """Run ``start(payload, run_id)`` in this process for every run a worker starts."""

        def loop() -> None:
            while True:
                item = self.starts.get()
                if item is None:
                    return
                payload, run_id = item
                try:
                    start(payload, run_id)
                except Exception:
                    logger.exception("could not start ingestion run %s", run_id)

        self._relaying = True
        thread = threading.Thread(target=loop, name="pipeline-relay", daemon=True)
        thread.start()
        return thread

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """True once every worker is idle (tests)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._idle.qsize() >= self.size:
                return True
            time.sleep(0.05)
        return False
