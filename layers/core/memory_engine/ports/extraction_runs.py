"""Repository port for extraction runs: one row per turn event, the idempotency record."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, Literal, Protocol

from memory_engine.domain.cursor import Cursor

RunStatus = Literal["running", "completed", "failed"]


@dataclass(frozen=True)
class ExtractionRun:
    id: str
    project_id: str
    event_id: str
    memory_id: str | None
    conversation_id: str | None
    turn_id: str | None
    episode_id: str | None
    status: RunStatus
    summary: dict[str, Any] | None
    error: str | None
    attempts: int
    created_at: datetime
    updated_at: datetime


class ClaimOutcome(str, Enum):
    """What :meth:`ExtractionRunRepository.claim` found."""

    STARTED = "started"  # first delivery: a new run
    RETRYING = "retrying"  # an earlier attempt failed (or went stale): this worker runs it again
    ALREADY_COMPLETED = "already_completed"  # nothing to do
    IN_PROGRESS = "in_progress"  # another worker is running it right now


@dataclass(frozen=True)
class RunClaim:
    outcome: ClaimOutcome
    run: ExtractionRun


@dataclass(frozen=True)
class RunKey:
    project_id: str
    event_id: str
    memory_id: str
    conversation_id: str
    turn_id: str


class ExtractionRunRepository(Protocol):
    """Methods raise :class:`memory_engine.errors.DatabaseError` when the database fails."""

    def claim(self, key: RunKey, *, stale_after: timedelta) -> RunClaim:
        """Atomically start (or restart) the run of ``key.event_id``.

        A failed run, or a running one untouched for ``stale_after`` (its worker died), is taken
        over with ``attempts + 1``. Raises :class:`memory_engine.errors.NotFound` when the memory
        is not in the project (the event can never succeed).
        """
        ...

    def attach_episode(self, project_id: str, run_id: str, episode_id: str) -> None: ...

    def finish(
        self, project_id: str, run_id: str, *, status: RunStatus, summary: dict[str, Any], error: str | None = None
    ) -> ExtractionRun: ...

    def get_by_event(self, project_id: str, event_id: str) -> ExtractionRun | None: ...

    def list(
        self, project_id: str, *, memory_id: str | None = None, status: RunStatus | None = None,
        event_id: str | None = None, limit: int = 20, cursor: Cursor | None = None,
    ) -> tuple[list[ExtractionRun], str | None]:
        """The project's runs, newest first (``created_at DESC, id DESC``), narrowed by the filters
        given; ``(page, next_cursor)``."""
        ...
