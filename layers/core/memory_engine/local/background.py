"""Background services of the local engine: the drop-folder watcher (the S3 upload stand-in), the
event queue (EventBridge -> SQS) and the expiry sweep (EventBridge Scheduler)."""

from __future__ import annotations

from typing import Protocol

from memory_engine.local.container import LocalContainer
from memory_engine.local.drop_folder import DropFolderWatcher
from memory_engine.local.expiry_sweeper import ExpirySweeper


class BackgroundService(Protocol):
    name: str

    def start(self) -> None: ...
    def stop(self) -> None: ...


def background_services(container: LocalContainer) -> list[BackgroundService]:
    """Every service `memory-engine dev` runs beside the HTTP server, in start order."""
    return [DropFolderWatcher(container, container.settings.drop_dir), container.event_queue, ExpirySweeper(container)]
