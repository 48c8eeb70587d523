"""Rows stored without a vector, and their repair (``memory-engine reembed``). An episode is missing
vectors when its windows do not cover its whole transcript: stored while the model failed, imported
before imports embedded every window, or windowed by migration 0009 from its one vector."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from memory_engine.adapters.postgres.database import Database, Row
from memory_engine.adapters.postgres.entry_sql import role_rank
from memory_engine.adapters.postgres.episode_context import UNREAD, store_read, turns_before
from memory_engine.adapters.postgres.episodes import write_windows
from memory_engine.domain.entities import embedding_text
from memory_engine.ports.embedder import Vector
from memory_engine.ports.entries import REPAIRABLE_TABLES
from memory_engine.ports.episodes import EpisodeWindow, TurnBefore

#: What each table embeds. Entries are embedded anchor-enriched, as the funnel does: the anchor
#: (``domain.entities.anchor_name``) is the first entity of the entry's listing, and a conversation's
#: turn is its transcript line (``speaker``: ``domain.entries.turn_speaker``; its context, which by now
#: also holds the turn after it, is not read again).
_TEXT = {
    "memory_entries": (
        "content, (SELECT n.display_name FROM entry_entities l JOIN entities n ON n.id = l.entity_id"  # noqa: S608 - the role order is a domain constant; no value is interpolated
        f" WHERE l.entry_id = t.id ORDER BY {role_rank('l.role')}, n.name LIMIT 1) AS anchor,"
        " CASE WHEN t.source_conversation_id IS NOT NULL AND t.source_type <> 'extraction' THEN t.subject END AS speaker"
    ),
    "entities": "display_name AS content, NULL::text AS anchor, NULL::text AS speaker",
    "episodes": "transcript AS content, NULL::text AS anchor, NULL::text AS speaker",  # the text the windows index
    "document_chunks": "content, NULL::text AS anchor, NULL::text AS speaker",
}


#: The rows of each table that miss vectors (``t``: the table).
_MISSING = {table: "t.embedding IS NULL" for table in REPAIRABLE_TABLES} | {
    "episodes": ("coalesce((SELECT max(w.end_char) FROM episode_windows w WHERE w.episode_id = t.id), 0)"
                 " < length(t.transcript)"),
}


def _texts(table: str, rows: Sequence[Row]) -> list[tuple[str, str]]:
    """``(id, text to embed)`` of rows read with :data:`_TEXT`."""
    if table == "episodes":  # windows are spans of the transcript as stored
        return [(r["id"], r["content"]) for r in rows]
    return [(r["id"], embedding_text(r["content"], r["anchor"], speaker=r["speaker"])) for r in rows]


def missing_entries(conn: psycopg.Connection[Any], project_id: str, entry_ids: Sequence[str]) -> list[tuple[str, str]]:
    """``(id, text to embed)`` of the project's entries among ``entry_ids`` that have no vector."""
    rows = conn.execute(
        f"SELECT t.id, {_TEXT['memory_entries']} FROM memory_entries t"  # noqa: S608 - fixed fragments; values are bound parameters
        " WHERE t.embedding IS NULL AND t.project_id = %s AND t.id = ANY(%s::text[]) ORDER BY t.id",
        (project_id, list(entry_ids)),
    ).fetchall()
    return _texts("memory_entries", rows)


def store_missing(conn: psycopg.Connection[Any], table: str, vectors: Sequence[tuple[str, Vector]],
                  project_id: str | None = None) -> int:
    """Sets the vectors of rows of ``table`` (of ``project_id`` when given) still missing one; how many."""
    with conn.cursor() as cur:
        cur.executemany(
            f"UPDATE {table} SET embedding = %s WHERE id = %s AND embedding IS NULL"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
            " AND (%s::text IS NULL OR project_id = %s)",
            [(vector, row_id, project_id, project_id) for row_id, vector in vectors],
        )
        return max(cur.rowcount, 0)


def _check(table: str) -> str:
    if table not in REPAIRABLE_TABLES:
        raise ValueError(f"not a repairable table: {table}")
    return table


class PostgresEmbeddingRepair:
    def __init__(self, database: Database) -> None:
        self._db = database

    def count_missing(self, table: str) -> int:
        with self._db.connection() as conn:
            row = conn.execute(f"SELECT count(*) AS n FROM {_check(table)} t WHERE {_MISSING[table]}").fetchone()  # noqa: S608 - identifiers and conditions from a fixed set
        return int(row["n"]) if row else 0

    def missing(self, table: str, *, after_id: str | None, limit: int) -> list[tuple[str, str]]:
        with self._db.connection() as conn:
            rows = conn.execute(
                f"SELECT t.id, {_TEXT[_check(table)]} FROM {table} t"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                f" WHERE {_MISSING[table]} AND (%(after)s::text IS NULL OR t.id > %(after)s) ORDER BY t.id LIMIT %(n)s",
                {"after": after_id, "n": limit},
            ).fetchall()
        return _texts(table, rows)

    def store(self, table: str, vectors: Sequence[tuple[str, Vector]]) -> int:
        if table == "episodes":
            raise ValueError("episodes are repaired with their windows (store_windows)")
        if not vectors:
            return 0
        with self._db.connection() as conn:
            return store_missing(conn, _check(table), vectors)

    def store_windows(self, episodes: Sequence[tuple[str, Sequence[EpisodeWindow]]]) -> int:
        repaired = 0
        with self._db.connection() as conn, conn.transaction():
            for episode_id, windows in episodes:
                if not windows:
                    continue
                row = conn.execute(
                    "UPDATE episodes SET embedding = coalesce(embedding, %s) WHERE id = %s"
                    " RETURNING id, project_id, memory_id, occurred_at",
                    (windows[0].embedding, episode_id),
                ).fetchone()
                if row is not None:  # deleted meanwhile: nothing to repair
                    write_windows(conn, row, windows)
                    repaired += 1
        return repaired

    def count_unread(self) -> int:
        with self._db.connection() as conn:
            row = conn.execute(f"SELECT count(*) AS n FROM ({UNREAD}) u", {"after": None, "n": None}).fetchone()  # noqa: S608 - a module constant; values are bound parameters
        return int(row["n"]) if row else 0

    def unread(self, *, after_id: str | None, limit: int) -> list[tuple[str, TurnBefore]]:
        with self._db.connection() as conn:
            return turns_before(conn.execute(UNREAD, {"after": after_id, "n": limit}).fetchall())

    def store_read_windows(self, project_id: str, windows: Sequence[tuple[TurnBefore, Vector]]) -> int:
        with self._db.connection() as conn, conn.transaction():
            return store_read(conn, project_id, windows)
