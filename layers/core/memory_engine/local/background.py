"""Background services of the local engine (the drop-folder watcher, the event queue)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from memory_engine.bootstrap import Container


class BackgroundService(Protocol):
    name: str

    def start(self) -> None: ...
    def stop(self) -> None: ...


def background_services(container: Container) -> list[BackgroundService]:
    """Every service `memory-engine dev` runs beside the HTTP server, in start order."""
    from memory_engine.local import drop_folder, event_queue, expiry_sweeper

    found = [drop_folder.build(container), event_queue.build(container), expiry_sweeper.build(container)]
    return [service for service in found if service is not None]
