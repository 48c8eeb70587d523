"""The expiry sweep in PostgreSQL: expired live entries become history (reason ``expired``)."""

from __future__ import annotations

from datetime import datetime

from memory_engine.adapters.postgres.database import Database
from memory_engine.domain.entries import EXPIRED_REASON


class PostgresExpiry:
    def __init__(self, database: Database) -> None:
        self._db = database

    def invalidate_expired(self, *, now: datetime, limit: int) -> int:
        # invalidated_at is the expiry itself: an `as_of` read before it still sees the fact, after
        # it never does. SKIP LOCKED: a row a funnel write holds is taken by the next sweep.
        with self._db.connection() as conn:
            rows = conn.execute(
                "UPDATE memory_entries e SET invalidated_at = e.expires_at, invalidation_reason = %(reason)s,"
                " updated_at = clock_timestamp()"
                " WHERE e.id IN (SELECT x.id FROM memory_entries x WHERE x.invalidated_at IS NULL"
                "  AND x.expires_at <= %(now)s ORDER BY x.expires_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED)"
                " RETURNING e.id",
                {"reason": EXPIRED_REASON, "now": now, "limit": limit},
            ).fetchall()
        return len(rows)
