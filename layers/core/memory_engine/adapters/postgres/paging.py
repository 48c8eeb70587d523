"""Keyset pages of the list endpoints: newest first (``created_at DESC, id DESC``), after a cursor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from memory_engine.adapters.postgres.database import Row
from memory_engine.domain.cursor import Cursor, next_cursor


def newest_first(
    conn: psycopg.Connection[Any], select: str, where: Sequence[str], params: dict[str, Any], *, limit: int,
    cursor: Cursor | None, alias: str | None = None,
) -> tuple[list[Row], str | None]:
    """The rows of ``select`` (``SELECT ... FROM ...``, the table aliased ``alias`` if any)
    matching every clause of ``where``, at most ``limit`` of them, strictly before ``cursor``;
    and the cursor of the next page (``None`` on the last)."""
    a = f"{alias}." if alias else ""
    clauses = list(where)
    if cursor is not None:
        clauses.append(f"({a}created_at, {a}id) < (%(page_at)s, %(page_id)s)")
        params = params | {"page_at": cursor.created_at, "page_id": cursor.id}
    rows = conn.execute(
        f"{select} WHERE {' AND '.join(clauses)} ORDER BY {a}created_at DESC, {a}id DESC LIMIT %(page_n)s",
        params | {"page_n": limit + 1},
    ).fetchall()
    return rows[:limit], next_cursor([(r["created_at"], r["id"]) for r in rows], limit)
