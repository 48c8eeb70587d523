"""Deferred conversions in PostgreSQL (``converter_callbacks``): the row lock makes the first
callback the only delivery, and whichever of the callback and the waiting state comes second
sees the other's write (the task token or the pages) and resumes the pipeline."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memory_engine.adapters.postgres.database import Database
from memory_engine.ports.conversions import Conversion

_COLUMNS = ("project_id, document_id, generation, converter_url, expires_at, task_token, pages_key, total_pages,"
            " error, delivered_at")


def _conversion(row: dict[str, Any] | None) -> Conversion | None:
    return Conversion(**row) if row else None


class PostgresConversionRepository:
    """Implements :class:`memory_engine.ports.conversions.ConversionRepository`."""

    def __init__(self, database: Database) -> None:
        self._db = database

    def open(self, project_id: str, document_id: str, generation: int, *, converter_url: str,
             expires_at: datetime) -> None:
        with self._db.connection() as conn:
            conn.execute(
                """INSERT INTO converter_callbacks (document_id, generation, project_id, converter_url, expires_at)
                   VALUES (%s, %s, %s, %s, %s)
                   ON CONFLICT (document_id, generation) DO UPDATE SET converter_url = EXCLUDED.converter_url,
                       expires_at = EXCLUDED.expires_at, task_token = NULL, pages_key = NULL, total_pages = NULL,
                       error = NULL, delivered_at = NULL, created_at = now()""",
                (document_id, generation, project_id, converter_url, expires_at),
            )

    def get(self, document_id: str, generation: int) -> Conversion | None:
        return _conversion(self._db.fetch_one(
            f"SELECT {_COLUMNS} FROM converter_callbacks WHERE document_id = %s AND generation = %s",  # noqa: S608 - fixed column list
            (document_id, generation),
        ))

    def attach_token(self, document_id: str, generation: int, task_token: str) -> Conversion | None:
        return _conversion(self._db.fetch_one(
            f"""UPDATE converter_callbacks SET task_token = %s WHERE document_id = %s AND generation = %s
                RETURNING {_COLUMNS}""",  # noqa: S608 - fixed column list
            (task_token, document_id, generation),
        ))

    def deliver(self, document_id: str, generation: int, *, pages_key: str | None, total_pages: int | None,
                error: str | None) -> Conversion | None:
        return _conversion(self._db.fetch_one(
            f"""UPDATE converter_callbacks SET pages_key = %s, total_pages = %s, error = %s, delivered_at = now()
                WHERE document_id = %s AND generation = %s AND delivered_at IS NULL
                RETURNING {_COLUMNS}""",  # noqa: S608 - fixed column list
            (pages_key, total_pages, error, document_id, generation),
        ))
