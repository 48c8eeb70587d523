"""CPU priority of background threads in the local engine.

The local engine runs document ingestion on the same cores that answer API requests. Like a batch
queue next to an interactive service, the ingestion threads run as background threads (Linux's
``SCHED_IDLE``, else a higher nice value), so a search or a health check waiting for a core gets it
first while a corpus drains, and ingestion still has every idle cycle. The database backends of the
engine's own pool get a higher nice value only: a backend may hold a lock a search waits for, and
an idle-class holder could be starved. On Linux both belong to the thread, not the process.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from memory_engine.ports.embedder import Embedder, EmbeddingKind

logger = logging.getLogger(__name__)

#: How much nicer than the API the ingestion threads are (0..19; 10 gives them ~1/10 of the weight
#: of a default-priority thread when both want the same core).
BACKGROUND_NICENESS = 10


def lower_thread_priority(niceness: int = BACKGROUND_NICENESS) -> None:
    """Make the calling thread a background thread: Linux's ``SCHED_IDLE`` policy where available
    (it runs only on cycles nothing else wants, and a waking request preempts it at once, where a
    nice value alone waits for the scheduler's wakeup granularity: search p50 under an embedding
    load 26.6 ms at nice 10, 22.9-24.7 ms at SCHED_IDLE, 17.6 ms unloaded, docs/ingestion.md), else
    ``niceness`` more than now. A no-op where the OS has neither."""
    tid = threading.get_native_id()
    try:
        os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
        return
    except (AttributeError, OSError) as exc:
        logger.debug("no SCHED_IDLE for %s (%s); lowering its nice value", threading.current_thread().name, exc)
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + niceness))
    except (AttributeError, OSError) as exc:  # not Linux, or not permitted
        logger.debug("could not lower the priority of %s: %s", threading.current_thread().name, exc)


def lower_backend_priority(conn: Any, niceness: int = BACKGROUND_NICENESS) -> None:
    """Lower the CPU priority of the PostgreSQL backend serving ``conn`` (a pool's ``on_connect``).

    Only for the embedded server, whose processes this user started on this machine: the engine's
    own pool does background work when worker processes serve the API (chunk upserts and their
    index maintenance while a corpus drains), and the searches' backends should get the cores first."""
    row = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()
    pid = int(row["pid"] if isinstance(row, dict) else row[0])
    try:
        os.setpriority(os.PRIO_PROCESS, pid, min(19, os.getpriority(os.PRIO_PROCESS, pid) + niceness))
    except (AttributeError, OSError) as exc:
        logger.debug("could not lower the priority of backend %s: %s", pid, exc)


class ForegroundGate:
    """API requests in flight in the local front door, so background work can step aside.

    A lower CPU priority lets a request preempt ingestion, but a model call already running still
    shares the machine with it (caches, memory bandwidth, the database). So the ingestion threads
    also call :meth:`wait_quiet` before each model call: while a request is being served, a new call
    waits until it ends, at most ``max_wait_s`` (ingestion is never starved: under a steady stream
    of requests it still makes a call every ``max_wait_s``). Requests that feed ingestion (document
    creates and uploads) do not count: they are ingestion's own input. ``on_busy`` / ``on_quiet`` run
    (under the gate's lock) when the first request starts and the last ends: :class:`CoreYield`'s
    ``narrow`` and ``widen`` when ingestion runs in a process of its own."""

    def __init__(self, max_wait_s: float = 0.2, *, on_busy: Callable[[], None] | None = None,
                 on_quiet: Callable[[], None] | None = None) -> None:
        self.max_wait_s = max_wait_s
        self._active = 0
        self._quiet = threading.Condition()
        self._on_busy, self._on_quiet = on_busy, on_quiet

    @staticmethod
    def counts(method: str, path: str) -> bool:
        """Whether a request is foreground work (anything but creating and uploading documents)."""
        feeds_ingestion = path.startswith("/v1/local-uploads/") or (
            method != "GET" and (path == "/v1/documents" or path.startswith("/v1/documents/")))
        return not feeds_ingestion

    @contextlib.contextmanager
    def request(self, method: str, path: str) -> Iterator[None]:
        if not self.counts(method, path):
            yield
            return
        with self._quiet:
            self._active += 1
            if self._active == 1 and self._on_busy is not None:
                self._on_busy()
        try:
            yield
        finally:
            with self._quiet:
                self._active -= 1
                if self._active == 0:
                    if self._on_quiet is not None:
                        self._on_quiet()
                    self._quiet.notify_all()

    def wait_quiet(self) -> None:
        with self._quiet:
            self._quiet.wait_for(lambda: self._active == 0, timeout=self.max_wait_s)


class GatedEmbedder(Embedder):
    """The ingestion embedder, waiting for a quiet moment (:class:`ForegroundGate`) before each
    model call; otherwise exactly ``inner`` (same calls, same vectors)."""

    def __init__(self, inner: Embedder, gate: ForegroundGate) -> None:
        super().__init__(query_cache_size=0)
        self.inner, self.gate = inner, gate
        self.dimensions, self.model_id, self.batch_size = inner.dimensions, inner.model_id, inner.batch_size

    def _groups(self, texts: Sequence[str]) -> list[list[int]]:
        return self.inner._groups(texts)

    def _embed_batch(self, texts: Sequence[str], kind: EmbeddingKind) -> Sequence[Sequence[float]]:
        self.gate.wait_quiet()
        return self.inner._embed_batch(texts, kind)


class CoreYield:
    """Confines another process's threads to part of this machine's cores while foreground work
    runs (:meth:`narrow`) and gives them every core again when it ends (:meth:`widen`).

    ``SCHED_IDLE`` gives a request the CPU *time* it asks for, but not the overlap of its parallel
    statements: a woken backend finds both cores running idle-priority model threads and waits
    for the scheduler to move it (docs/ingestion.md: a parallel hybrid search p50 31 -> 51 ms under
    a model load, 4 % slower with the model pinned to one core). So while a request is in flight
    the ingestion process runs on ``background`` cores only (the first half, at least one),
    leaving the others idle for the request; between requests it has them all. Thread affinity is
    per thread on Linux: every thread of ``pid`` is moved, each a few microseconds. A no-op
    where the OS has no affinity calls or this process may not set them."""

    def __init__(self, pid: Callable[[], int | None]) -> None:
        self._pid = pid
        self.all = frozenset(os.sched_getaffinity(0))
        ordered = sorted(self.all)
        self.background = frozenset(ordered[: max(1, len(ordered) // 2)])

    @staticmethod
    def supported() -> bool:
        return hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) >= 2 and Path("/proc/self/task").is_dir()

    def narrow(self) -> None:
        self._apply(self.background)

    def widen(self) -> None:
        self._apply(self.all)

    def _apply(self, cpus: frozenset[int]) -> None:
        pid = self._pid()
        if pid is None:
            return
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return  # not started, or exited (its watcher starts it again)
        for tid in tids:
            with contextlib.suppress(OSError, ValueError):
                os.sched_setaffinity(int(tid), cpus)
