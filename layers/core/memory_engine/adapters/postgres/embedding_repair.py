"""Rows stored without a vector, and their repair (``memory-engine reembed``)."""

from __future__ import annotations

from collections.abc import Sequence

from memory_engine.adapters.postgres.database import Database
from memory_engine.adapters.postgres.entry_sql import role_rank
from memory_engine.adapters.postgres.episodes import FIRST_WINDOW_SQL
from memory_engine.domain.entities import embedding_text
from memory_engine.ports.embedder import Vector
from memory_engine.ports.entries import REPAIRABLE_TABLES

#: What each table embeds. Entries are embedded anchor-enriched, as the funnel does: the anchor
#: (``domain.entities.anchor_name``) is the first entity of the entry's listing.
_TEXT = {
    "memory_entries": (
        "content, (SELECT n.display_name FROM entry_entities l JOIN entities n ON n.id = l.entity_id"  # noqa: S608 - the role order is a domain constant; no value is interpolated
        f" WHERE l.entry_id = t.id ORDER BY {role_rank('l.role')}, n.name LIMIT 1) AS anchor"
    ),
    "entities": "display_name AS content, NULL::text AS anchor",
    "episodes": "transcript AS content, NULL::text AS anchor",
    "document_chunks": "content, NULL::text AS anchor",
}


def _check(table: str) -> str:
    if table not in REPAIRABLE_TABLES:
        raise ValueError(f"not a repairable table: {table}")
    return table


class PostgresEmbeddingRepair:
    def __init__(self, database: Database) -> None:
        self._db = database

    def count_missing(self, table: str) -> int:
        with self._db.connection() as conn:
            row = conn.execute(f"SELECT count(*) AS n FROM {_check(table)} WHERE embedding IS NULL").fetchone()  # noqa: S608 - identifiers from a fixed set; values are bound parameters
        return int(row["n"]) if row else 0

    def missing(self, table: str, *, after_id: str | None, limit: int) -> list[tuple[str, str]]:
        with self._db.connection() as conn:
            rows = conn.execute(
                f"SELECT t.id, {_TEXT[_check(table)]} FROM {table} t"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                " WHERE t.embedding IS NULL AND (%(after)s::text IS NULL OR t.id > %(after)s) ORDER BY t.id LIMIT %(n)s",
                {"after": after_id, "n": limit},
            ).fetchall()
        return [(r["id"], embedding_text(r["content"], r["anchor"])) for r in rows]

    def store(self, table: str, vectors: Sequence[tuple[str, Vector]]) -> int:
        if not vectors:
            return 0
        with self._db.connection() as conn, conn.cursor() as cur:
            cur.executemany(
                f"UPDATE {_check(table)} SET embedding = %s WHERE id = %s AND embedding IS NULL",  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                [(vector, row_id) for row_id, vector in vectors],
            )
            repaired = max(cur.rowcount, 0)
            if table == "episodes":  # an episode stored without vectors gets its first window now
                cur.execute(FIRST_WINDOW_SQL, {"ids": [row_id for row_id, _ in vectors]})
            return repaired
