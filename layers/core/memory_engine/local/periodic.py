"""A daemon thread that does one unit of work every few seconds until stopped: the local
stand-ins for scheduled and event-driven AWS work (the drop-folder watcher, the expiry sweep)."""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod

logger = logging.getLogger(__name__)


class PeriodicThread(ABC):
    """Runs :meth:`tick` at start, then every :meth:`interval` seconds until :meth:`stop`. A tick
    that raises is logged and the next one runs on time (a database that is down comes back)."""

    #: The thread's name, also the service's name in the engine's start order.
    name: str
    #: How long :meth:`stop` waits for a tick in progress.
    join_timeout: float = 5.0

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @abstractmethod
    def tick(self) -> None:
        """One unit of work."""

    @abstractmethod
    def interval(self) -> float:
        """Seconds from the end of a tick to the start of the next."""

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.join_timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception:
                logger.exception("%s failed; trying again in %.0f s", self.name, self.interval())
            self._stop.wait(self.interval())
