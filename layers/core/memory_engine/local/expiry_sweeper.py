"""The local stand-in for the EventBridge Scheduler -> expiry Lambda: a timer thread in the engine."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from memory_engine.services.expiry import SWEEP_INTERVAL_SECONDS, sweep_expired

if TYPE_CHECKING:
    from memory_engine.bootstrap import Container

logger = logging.getLogger(__name__)


class ExpirySweeper:
    """Runs :func:`sweep_expired` every ``interval`` seconds (first run at start)."""

    name = "expiry-sweep"

    def __init__(self, container: Container, *, interval: float = SWEEP_INTERVAL_SECONDS) -> None:
        self._container = container
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def run_once(self) -> int:
        return sweep_expired(self._container.expiry)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Exception:  # a failed sweep (database down) is retried at the next tick
                logger.exception("expiry sweep failed; retrying in %.0f s", self.interval)
            self._stop.wait(self.interval)
