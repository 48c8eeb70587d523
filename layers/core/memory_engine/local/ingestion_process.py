"""The local ingestion runner in a process of its own, beside the front door and the workers.

Why a process and not threads of the front door's process: ingestion is mostly model calls, which
leave the GIL, but between them it runs Python (tokenizing, chunking, JSON, psycopg) on several
threads, and the front door's request threads (which serve `GET /v1/health` and relay every
request to a worker) need the same GIL. A background thread's CPU priority cannot help there: one
holding the GIL while it waits for a core holds up the request thread waiting for the GIL. In its
own process the runner shares only the cores, where the priorities apply. Measured while 5,183
abstracts drained (docs/ingestion.md): health p50 11.9 -> 9.8-10.0 ms; most of what is left is the
cores themselves, which the model saturates.

The process builds its own composition root (like a worker), resumes the runs a previous engine
left unfinished, then starts every run it receives on :attr:`IngestionProcess.starts` (from the
front door's process and from every worker, through :class:`~memory_engine.local.workers.ForwardingPipelineStarter`).
If it exits unexpectedly it is started again, and resumes what it was running (``resume_interrupted``).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import multiprocessing.connection as mp_connection
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from memory_engine.local.worker_process import configure_child_process

if TYPE_CHECKING:
    from memory_engine.settings import Settings

logger = logging.getLogger(__name__)

#: How long the process may take to load the model and open its pool.
START_TIMEOUT_S = 180.0


def ingestion_main(ready: Connection, settings: Settings, starts: Any, lower_backends: bool, log_level: int,
                   parent_pid: int | None = None) -> None:
    """The ingestion process: a container with the local pipeline starter (background-priority
    threads), the interrupted runs resumed, then every start from ``starts`` until ``None``. It
    dies with ``parent_pid`` (``worker_process.die_with_parent``): it blocks on a queue that never
    reaches EOF, so without that it outlived an engine killed outright."""
    configure_child_process("ingest", log_level, parent_pid)
    from memory_engine.adapters.postgres.database import Database
    from memory_engine.bootstrap import set_container
    from memory_engine.local.container import LocalContainer
    from memory_engine.local.lambda_runtime import load_module
    from memory_engine.local.pipeline import HANDLER_MODULE
    from memory_engine.local.priority import lower_backend_priority
    from memory_engine.services.ingestion.documents import resume_interrupted

    overrides: dict[str, Any] = {}
    if lower_backends and settings.database_url:  # the embedded server's backends (this user's) yield the cores
        overrides["database"] = Database(settings.database_url, on_connect=lower_backend_priority)
    container = LocalContainer(settings, dead_letter_folder=settings.home / "dead-letters", **overrides)
    set_container(container)
    try:
        load_module(HANDLER_MODULE)
        container.ingestion_embedder.embed_documents(["warm up"])
        starter = container.pipeline_starter
        for doc in resume_interrupted(container.ingestion_ports, starter):
            logger.info("resuming the interrupted ingestion of %s (%s)", doc.path, doc.id)
        ready.send(("ready", os.getpid()))
        ready.close()
        while True:
            item = starts.get()
            if item is None:
                break
            if isinstance(item, dict):  # {"public_url": ...}: where the engine listens, once it does
                container.callback_urls.base_url = item["public_url"]
                continue
            payload, run_id = item
            try:
                starter.start(payload, name=run_id)
            except Exception:
                logger.exception("could not start ingestion run %s", run_id)
    finally:
        container.close()


class IngestionProcess:
    """Owns the ingestion process: :meth:`start` spawns it, :meth:`wait_ready` waits until it is
    ready; a watcher thread starts it again if it exits before :meth:`stop`. ``starts`` outlives the
    process, so runs queued while it restarts are not lost."""

    def __init__(self, settings: Settings, *, lower_backends: bool, start_timeout: float = START_TIMEOUT_S,
                 on_spawn: Callable[[int], None] | None = None) -> None:
        self.settings = settings
        self._on_spawn = on_spawn
        self.lower_backends = lower_backends
        self.start_timeout = start_timeout
        self._ctx = multiprocessing.get_context("spawn")
        self.starts: Any = self._ctx.Queue()
        self._process: Any = None
        self._first_start: Future[None] | None = None  # the first spawn's outcome (wait_ready)
        self._stopping = threading.Event()
        self._spawning = threading.Lock()
        self._watcher: threading.Thread | None = None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else int(self._process.pid)

    def start(self, *, wait: bool = True) -> None:
        """Spawn the process; with ``wait``, return once it is ready (else call :meth:`wait_ready`).
        The watcher thread spawns it, and every restart: a child's parent-death signal follows the
        thread that spawned it (``local/worker_process.py``), and that thread lives until :meth:`stop`."""
        self._first_start = Future()
        self._watcher = threading.Thread(target=self._run, name="ingestion-watch", daemon=True)
        self._watcher.start()
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        """Wait until the spawned process is ready. Raises RuntimeError when it does not start."""
        assert self._first_start is not None, "start() first"
        self._first_start.result()

    def _run(self) -> None:
        assert self._first_start is not None
        try:
            self._await_ready(self._spawn())
        except BaseException as exc:
            self._first_start.set_exception(exc)
            return
        self._first_start.set_result(None)
        self._watch()

    def _spawn(self) -> Connection:
        with self._spawning:  # stop() sees either no process and no spawn to come, or this one
            if self._stopping.is_set():
                raise RuntimeError("the ingestion process was stopped while starting")
            parent, child = self._ctx.Pipe(duplex=False)
            self._process = self._ctx.Process(
                target=ingestion_main, name="memory-engine-ingest", daemon=True,
                args=(child, self.settings, self.starts, self.lower_backends, logging.getLogger().getEffectiveLevel(),
                      os.getpid()),
            )
            self._process.start()
        child.close()
        if self._on_spawn is not None:
            self._on_spawn(self._process.pid)
        return parent

    def _await_ready(self, ready: Connection) -> None:
        try:
            if not ready.poll(self.start_timeout):
                self._process.kill()
                raise RuntimeError(f"the ingestion process did not start within {self.start_timeout:.0f} s")
            try:
                ready.recv()
            except (EOFError, OSError) as exc:
                raise RuntimeError("the ingestion process exited while starting; see the log above") from exc
        finally:
            ready.close()
        logger.info("ingestion process %s up", self._process.pid)

    def set_public_url(self, url: str) -> None:
        """The engine's address for converter callback and download URLs, once it listens (the
        process was started before; a restarted one gets it in its settings)."""
        self.settings = self.settings.model_copy(update={"public_url": url})
        self.starts.put({"public_url": url})

    def _watch(self) -> None:
        while True:
            process = self._process
            process.join(1.0)
            if self._stopping.is_set():
                # stop() ends the process (grace, then kill); this thread must outlive it, as the
                # kernel kills a child when the thread that spawned it ends (die_with_parent)
                mp_connection.wait([process.sentinel])
                return
            if process.is_alive():
                continue
            logger.error("the ingestion process exited (code %s); starting it again", process.exitcode)
            try:
                self._await_ready(self._spawn())
            except Exception:
                if not self._stopping.is_set():
                    logger.exception("could not restart the ingestion process; retrying in 5 s")
                    self._stopping.wait(5.0)

    def stop(self, grace: float = 10.0) -> None:
        """Ask the process to finish (runs in flight are abandoned and resumed by the next start,
        like any interrupted run), then end it."""
        with self._spawning:
            self._stopping.set()
            process = self._process
        with contextlib.suppress(OSError, ValueError):
            self.starts.put(None)
        if process is not None:
            process.join(grace)
            if process.is_alive():
                process.kill()
                process.join(5)
        if self._watcher is not None:
            self._watcher.join(5.0)
