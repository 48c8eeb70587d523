"""Reading extraction runs: the record of each ``turn.completed`` event the consumer handled."""

from __future__ import annotations

from memory_engine.domain.cursor import DEFAULT_LIMIT, check_limit, decode_cursor
from memory_engine.errors import InvalidInput
from memory_engine.ports.extraction_runs import ExtractionRun, ExtractionRunRepository, RunStatus

RUN_STATUSES: tuple[RunStatus, ...] = ("running", "completed", "failed")


def list_extraction_runs(
    runs: ExtractionRunRepository, project_id: str, *, memory_id: str | None = None, status: str | None = None,
    event_id: str | None = None, limit: int = DEFAULT_LIMIT, cursor: str | None = None,
) -> tuple[list[ExtractionRun], str | None]:
    """The project's runs, newest first. Raises InvalidInput (422) for an unknown ``status``, a
    ``limit`` outside 1..100 or a cursor this API did not issue."""
    if status is not None and status not in RUN_STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(RUN_STATUSES)}", details=[{"field": "status"}])
    return runs.list(
        project_id, memory_id=memory_id or None, status=status,
        event_id=event_id or None, limit=check_limit(limit), cursor=decode_cursor(cursor),
    )
