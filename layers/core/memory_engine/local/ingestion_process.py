"""The local ingestion runner in a process of its own, beside the front door and the workers.

Why a process and not threads of the front door's process: ingestion is mostly model calls, which
leave the GIL, but between them it runs Python (tokenizing, chunking, JSON, psycopg) on several
threads. In the front door's process those threads took the GIL from the request threads at every
switch: while a corpus drained, `GET /v1/health` (served by the front door itself) took ~13 ms
at the median instead of ~1, and every search paid it twice (request in, response out). The
ingestion threads' background CPU priority did not help there: a background thread that holds the
GIL and waits for a core holds up the request thread that waits for the GIL. In its own process
the runner shares only the cores, where the priorities apply.

The process builds its own composition root (like a worker), resumes the runs a previous engine
left unfinished, then starts every run it receives on :attr:`IngestionProcess.starts` (from the
front door's process and from every worker, through :class:`~memory_engine.local.workers.ForwardingPipelineStarter`).
If it exits unexpectedly it is started again, and resumes what it was running (``resume_interrupted``).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import threading
import warnings
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_engine.settings import Settings

logger = logging.getLogger(__name__)

#: How long the process may take to load the model and open its pool.
START_TIMEOUT_S = 180.0


def ingestion_main(ready: Connection, settings: Settings, starts: Any, lower_backends: bool, log_level: int) -> None:
    """The ingestion process: a container with the local pipeline starter (background-priority
    threads), the interrupted runs resumed, then every start from ``starts`` until ``None``."""
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group; the engine stops us
    logging.basicConfig(level=log_level, format=f"%(asctime)s %(levelname)s [ingest {os.getpid()}] %(name)s: %(message)s")
    for noisy in ("botocore", "urllib3", "psycopg.pool"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
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
    """Owns the ingestion process: :meth:`start` spawns it and waits until it is ready; a watcher
    thread starts it again if it exits before :meth:`stop`. ``starts`` outlives the process, so
    runs queued while it restarts are not lost."""

    def __init__(self, settings: Settings, *, lower_backends: bool, start_timeout: float = START_TIMEOUT_S) -> None:
        self.settings = settings
        self.lower_backends = lower_backends
        self.start_timeout = start_timeout
        self._ctx = multiprocessing.get_context("spawn")
        self.starts: Any = self._ctx.Queue()
        self._process: Any = None
        self._pending: tuple[Any, Connection] | None = None
        self._stopping = threading.Event()
        self._watcher: threading.Thread | None = None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else int(self._process.pid)

    def start(self, *, wait: bool = True) -> None:
        """Spawn the process; with ``wait``, return once it is ready (else call :meth:`wait_ready`)."""
        self._pending = self._spawn()
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        """Wait until the spawned process is ready, then watch it. Raises RuntimeError when it
        does not start."""
        assert self._pending is not None, "start() first"
        process, conn = self._pending
        self._pending = None
        self._await_ready(process, conn)
        self._process = process
        self._watcher = threading.Thread(target=self._watch, name="ingestion-watch", daemon=True)
        self._watcher.start()

    def _spawn(self) -> tuple[Any, Connection]:
        parent, child = self._ctx.Pipe(duplex=False)
        process = self._ctx.Process(
            target=ingestion_main, name="memory-engine-ingest", daemon=True,
            args=(child, self.settings, self.starts, self.lower_backends, logging.getLogger().getEffectiveLevel()),
        )
        process.start()
        child.close()
        return process, parent

    def _await_ready(self, process: Any, conn: Connection) -> None:
        try:
            if not conn.poll(self.start_timeout):
                process.kill()
                raise RuntimeError(f"the ingestion process did not start within {self.start_timeout:.0f} s")
            try:
                conn.recv()
            except (EOFError, OSError) as exc:
                raise RuntimeError("the ingestion process exited while starting; see the log above") from exc
        finally:
            conn.close()
        logger.info("ingestion process %s up", process.pid)

    def set_public_url(self, url: str) -> None:
        """The engine's address for converter callback and download URLs, once it listens (the
        process was started before; a restarted one gets it in its settings)."""
        self.settings = self.settings.model_copy(update={"public_url": url})
        self.starts.put({"public_url": url})

    def _watch(self) -> None:
        while not self._stopping.is_set():
            process = self._process
            process.join(1.0)
            if process.is_alive() or self._stopping.is_set():
                continue
            logger.error("the ingestion process exited (code %s); starting it again", process.exitcode)
            try:
                fresh, conn = self._spawn()
                self._await_ready(fresh, conn)
                self._process = fresh
            except Exception:
                logger.exception("could not restart the ingestion process; retrying in 5 s")
                self._stopping.wait(5.0)

    def stop(self, grace: float = 10.0) -> None:
        """Ask the process to finish (runs in flight are abandoned and resumed by the next start,
        like any interrupted run), then end it."""
        self._stopping.set()
        with contextlib.suppress(OSError, ValueError):
            self.starts.put(None)
        process = self._process if self._process is not None else (self._pending or (None,))[0]
        if process is not None:
            process.join(grace)
            if process.is_alive():
                process.kill()
                process.join(5)
        if self._watcher is not None:
            self._watcher.join(2.0)
