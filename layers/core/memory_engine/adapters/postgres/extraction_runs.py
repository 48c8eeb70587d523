"""Extraction runs in PostgreSQL: the idempotency record of each ``turn.completed`` event."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from psycopg.types.json import Jsonb

from memory_engine import ids
from memory_engine.adapters.postgres.database import Database
from memory_engine.adapters.postgres.paging import newest_first
from memory_engine.domain.cursor import Cursor
from memory_engine.errors import NotFound
from memory_engine.ports.extraction_runs import ClaimOutcome, ExtractionRun, RunClaim, RunKey, RunStatus

_COLUMNS = (
    "id, project_id, event_id, memory_id, conversation_id, turn_id, episode_id, status, summary, error, attempts,"
    " created_at, updated_at"
)


def _run(row: dict[str, Any]) -> ExtractionRun:
    return ExtractionRun(**{k: row[k] for k in ExtractionRun.__dataclass_fields__})


class PostgresExtractionRunRepository:
    """Implements :class:`memory_engine.ports.extraction_runs.ExtractionRunRepository`."""

    def __init__(self, database: Database) -> None:
        self._db = database

    def claim(self, key: RunKey, *, stale_after: timedelta) -> RunClaim:
        with self._db.connection() as conn:
            # One statement decides, so two workers racing on one event cannot both start it:
            # insert, or take over a failed / stale run; a completed or live run is left alone.
            row = conn.execute(
                f"""
                INSERT INTO extraction_runs AS r (id, project_id, event_id, memory_id, conversation_id, turn_id)
                SELECT %(id)s, %(project_id)s, %(event_id)s, m.id, %(conversation_id)s, %(turn_id)s
                  FROM memories m WHERE m.id = %(memory_id)s AND m.project_id = %(project_id)s
                ON CONFLICT (project_id, event_id) DO UPDATE
                   SET status = 'running', attempts = r.attempts + 1, error = NULL, updated_at = now()
                 WHERE r.status = 'failed'
                    OR (r.status = 'running' AND r.updated_at < now() - %(stale)s::interval)
                RETURNING {_COLUMNS}, (xmax = 0) AS inserted
                """,  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                {
                    "id": ids.new_id(ids.RUN), "project_id": key.project_id, "event_id": key.event_id,
                    "memory_id": key.memory_id, "conversation_id": key.conversation_id, "turn_id": key.turn_id,
                    "stale": stale_after,
                },
            ).fetchone()
            if row is not None:
                outcome = ClaimOutcome.STARTED if row["inserted"] else ClaimOutcome.RETRYING
                return RunClaim(outcome, _run(row))
        run = self.get_by_event(key.project_id, key.event_id)  # the claim matched nothing: who holds it?
        if run is None:
            raise NotFound(f"memory {key.memory_id} not found in project {key.project_id}")
        if run.status == "completed":
            return RunClaim(ClaimOutcome.ALREADY_COMPLETED, run)
        if run.status == "failed" or run.updated_at < datetime.now(UTC) - stale_after:
            # the takeover above matched nothing only because the memory is gone
            raise NotFound(f"memory {key.memory_id} not found in project {key.project_id}")
        return RunClaim(ClaimOutcome.IN_PROGRESS, run)

    def attach_episode(self, project_id: str, run_id: str, episode_id: str) -> None:
        with self._db.connection() as conn:
            conn.execute(
                "UPDATE extraction_runs SET episode_id = %s, updated_at = now() WHERE project_id = %s AND id = %s",
                (episode_id, project_id, run_id),
            )

    def finish(
        self, project_id: str, run_id: str, *, status: RunStatus, summary: dict[str, Any], error: str | None = None
    ) -> ExtractionRun:
        with self._db.connection() as conn:
            row = conn.execute(
                f"UPDATE extraction_runs SET status = %s, summary = %s, error = %s, updated_at = now()"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                f" WHERE project_id = %s AND id = %s RETURNING {_COLUMNS}",
                (status, Jsonb(summary), error, project_id, run_id),
            ).fetchone()
        if row is None:
            raise NotFound(f"extraction run {run_id} not found")
        return _run(row)

    def get_by_event(self, project_id: str, event_id: str) -> ExtractionRun | None:
        row = self._db.fetch_one(f"SELECT {_COLUMNS} FROM extraction_runs WHERE project_id = %s AND event_id = %s",  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                                 (project_id, event_id))
        return _run(row) if row else None

    def list(
        self, project_id: str, *, memory_id: str | None = None, status: RunStatus | None = None,
        event_id: str | None = None, limit: int = 20, cursor: Cursor | None = None,
    ) -> tuple[list[ExtractionRun], str | None]:
        clauses = ["project_id = %(p)s"]
        params: dict[str, Any] = {"p": project_id}
        for column, value in (("memory_id", memory_id), ("status", status), ("event_id", event_id)):
            if value is not None:
                clauses.append(f"{column} = %({column})s")
                params[column] = value
        with self._db.connection() as conn:
            rows, after = newest_first(conn, f"SELECT {_COLUMNS} FROM extraction_runs", clauses, params, limit=limit,  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                                       cursor=cursor)
        return [_run(r) for r in rows], after
