"""The local stand-in for the EventBridge Scheduler -> expiry Lambda: a timer thread in the engine."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_engine.local.periodic import PeriodicThread
from memory_engine.services.expiry import SWEEP_INTERVAL_SECONDS, sweep_expired

if TYPE_CHECKING:
    from memory_engine.bootstrap import Container


class ExpirySweeper(PeriodicThread):
    """Runs :func:`sweep_expired` every ``interval`` seconds (first run at start)."""

    name = "expiry-sweep"
    join_timeout = 10.0

    def __init__(self, container: Container, *, interval: float = SWEEP_INTERVAL_SECONDS) -> None:
        super().__init__()
        self._container = container
        self._interval = interval

    def interval(self) -> float:
        return self._interval

    def run_once(self) -> int:
        return sweep_expired(self._container.expiry)

    def tick(self) -> None:
        self.run_once()
