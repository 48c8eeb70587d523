"""The child side of the local engine's processes: a worker's serving loop (``worker_main``) and
what every spawned child sets up first (``configure_child_process``): its log format, Ctrl-C left
to the parent, and death with its parent (:func:`die_with_parent`).

A child outlives a parent killed outright (SIGKILL, OOM) unless it is told otherwise: the
ingestion process blocks on a queue that never reaches EOF, and a busy worker finishes its
request first. So on Linux each child asks the kernel for SIGKILL when its parent goes
(``prctl(PR_SET_PDEATHSIG)``; the kernel sends it when the *thread* that spawned the child ends,
so the engine spawns children only from threads that live as long as it does), and everywhere a
watchdog thread exits the child when its parent pid changes (the child was re-parented).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import signal
import sys
import threading
import uuid
import warnings
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from memory_engine.domain.serialization import dumps

if TYPE_CHECKING:
    from memory_engine.settings import Settings

logger = logging.getLogger(__name__)

#: Lambda handlers a worker serves (loaded and warmed before the worker reports ready).
WORKER_HANDLERS = ("api/handler", "search/handler")

#: A request RSS growth above this makes the worker return freed heap to the OS.
_TRIM_ABOVE_BYTES = 32 * 1024 * 1024
#: How often the watchdog looks at the parent pid.
WATCHDOG_INTERVAL_S = 0.5
_PR_SET_PDEATHSIG = 1


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


def relay_starts(starts: Any, start: Callable[[dict[str, Any], str], Any]) -> threading.Thread:
    """The receiving side of :class:`ForwardingPipelineStarter`: ``start(payload, run_id)`` in this
    process for every run put on ``starts``, until a ``None`` arrives."""

    def loop() -> None:
        while True:
            item = starts.get()
            if item is None:
                return
            payload, run_id = item
            try:
                start(payload, run_id)
            except Exception:
                logger.exception("could not start ingestion run %s", run_id)

    thread = threading.Thread(target=loop, name="pipeline-relay", daemon=True)
    thread.start()
    return thread


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


def die_with_parent(parent_pid: int, *, interval: float = WATCHDOG_INTERVAL_S, kernel_signal: bool = True) -> None:
    """End this process when ``parent_pid`` is no longer its parent: the kernel's parent-death
    signal on Linux (unless ``kernel_signal`` is False: tests of the watchdog alone), and a
    watchdog thread everywhere (it also covers a parent that died before the signal was asked for)."""
    if kernel_signal and sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no prctl: the watchdog alone
            logger.debug("prctl(PR_SET_PDEATHSIG) unavailable", exc_info=True)

    def watch() -> None:
        while os.getppid() == parent_pid:
            threading.Event().wait(interval)
        os._exit(1)  # nothing to flush: the parent that owned this process's work is gone

    if os.getppid() != parent_pid:
        os._exit(1)
    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def configure_child_process(label: str, log_level: int, parent_pid: int | None = None) -> None:
    """A spawned process of the engine (worker, ingestion): its log lines say ``[label pid]``,
    Ctrl-C, which reaches the whole process group, is left to the parent, which stops it, and it
    dies with ``parent_pid`` (:func:`die_with_parent`)."""
    if parent_pid is not None:
        die_with_parent(parent_pid)
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(level=log_level, format=f"%(asctime)s %(levelname)s [{label} {os.getpid()}] %(name)s: %(message)s")
    for noisy in ("botocore", "urllib3", "psycopg.pool"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def worker_main(conn: Connection, settings: Settings, starts: Any, embed_threads: int, log_level: int,
                parent_pid: int | None = None, started: Any = None) -> None:
    """The worker process: build a Container, warm the handlers, then serve events until told to stop
    (``None``) or until the parent goes away (EOF on the pipe, or :func:`die_with_parent`).
    ``started`` (a shared counter) counts the events it took from the pipe: the pool knows from it
    whether a worker that died had begun the request it was sent (else it sends it elsewhere)."""
    configure_child_process("worker", log_level, parent_pid)
    from memory_engine.bootstrap import set_container
    from memory_engine.local.container import LocalContainer
    from memory_engine.local.lambda_runtime import load_module
    from memory_engine.local.routing import route_event
    from memory_engine.settings import EmbeddingProvider

    overrides: dict[str, Any] = {"pipeline_starter": ForwardingPipelineStarter(starts)}
    if settings.embedding_provider is EmbeddingProvider.LOCAL:
        from memory_engine.local.adapters.onnx_embedder import OnnxMiniLMEmbedder

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
            if started is not None:
                started.value += 1
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


