"""Writes of a memory import in PostgreSQL: rows restored as they were exported (history,
timestamps, provenance), under new ids in the caller's project. Not through the write funnel: an
import restores a memory, it does not re-decide it (the funnel would skip history as duplicates)."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from memory_engine import ids
from memory_engine.adapters.postgres.database import Database
from memory_engine.adapters.postgres.entry_sql import vector_text
from memory_engine.adapters.postgres.episode_context import refresh
from memory_engine.adapters.postgres.episodes import write_windows
from memory_engine.domain.entries import Memory
from memory_engine.errors import NotFound
from memory_engine.ports.lifecycle import ImportedEntity, ImportedEntry, ImportedEpisode, ImportedMemory

_MEMORY_COLUMNS = "id, project_id, name, description, tags, metadata, default_ttl, created_at, updated_at"
#: The memory rows of unfinished imports of one exported memory.
_PARTIAL = ("metadata->>'import_status' = 'partial' AND metadata->'imported_from'->>'id' = %s AND project_id = %s")

_UPSERT_ENTITY = (
    "INSERT INTO entities AS x (id, project_id, name, display_name, type, embedding)"
    " VALUES (%s, %s, %s, %s, %s, %s::vector) ON CONFLICT (project_id, name) DO UPDATE"
    " SET type = coalesce(x.type, EXCLUDED.type), embedding = coalesce(x.embedding, EXCLUDED.embedding)"
)
_INSERT_ENTRY = (
    "INSERT INTO memory_entries (id, project_id, memory_id, content, source_type, tags, metadata, embedding,"
    " own_embedding, subject, predicate, object, confidence, source_quote, context, valid_from, valid_to,"
    " source_conversation_id, source_generation_id, source_event_id, invalidated_at, invalidation_reason,"
    " expires_at, created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s::vector, %s::vector, %s, %s, %s, %s,"
    " %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
#: An imported entry's link to an entity of the project, by the entity's name.
_LINK_ENTITY = ("INSERT INTO entry_entities (entry_id, entity_id, role, memory_id)"
                " SELECT %s, n.id, %s, %s FROM entities n WHERE n.project_id = %s AND n.name = %s ON CONFLICT DO NOTHING")


class PostgresImporter:
    """Implements :class:`memory_engine.ports.lifecycle.ImportRepository`. Inside
    :meth:`transaction` every method uses the block's connection (a context variable, so
    concurrent imports on other threads keep their own)."""

    def __init__(self, database: Database) -> None:
        self._db = database
        self._current: contextvars.ContextVar[psycopg.Connection[dict[str, Any]] | None] = contextvars.ContextVar(
            f"import-transaction-{id(self)}", default=None)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        with self._db.connection() as conn:
            token = self._current.set(conn)
            try:
                yield
            finally:
                self._current.reset(token)

    @contextlib.contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[dict[str, Any]]]:
        current = self._current.get()
        if current is not None:
            yield current
        else:
            with self._db.connection() as conn:
                yield conn

    def create_memory(self, project_id: str, memory: ImportedMemory) -> Memory:
        with self._connection() as conn:
            row = conn.execute(
                f"INSERT INTO memories (id, project_id, name, description, tags, metadata, default_ttl)"  # noqa: S608 - fixed column list; values are bound
                f" VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING {_MEMORY_COLUMNS}",
                (memory.id, project_id, memory.name, memory.description, memory.tags, Jsonb(memory.metadata),
                 memory.default_ttl),
            ).fetchone()
        assert row is not None
        return Memory(**row)

    def discard_partial(self, project_id: str, exported_id: str) -> list[str]:
        with self._connection() as conn:
            rows = conn.execute(f"DELETE FROM memories WHERE {_PARTIAL} RETURNING id",  # noqa: S608 - a fixed clause; values are bound
                                (exported_id, project_id)).fetchall()
        return [str(r["id"]) for r in rows]

    def finish(self, project_id: str, memory_id: str) -> Memory:
        with self._connection() as conn:
            row = conn.execute(
                f"UPDATE memories SET metadata = metadata - 'import_status' WHERE id = %s AND project_id = %s"  # noqa: S608 - fixed column list; values are bound
                f" RETURNING {_MEMORY_COLUMNS}", (memory_id, project_id)).fetchone()
        if row is None:
            raise NotFound(f"memory {memory_id} not found", details={"memory_id": memory_id})
        return Memory(**row)

    def upsert_entities(self, project_id: str, entities: Sequence[ImportedEntity]) -> None:
        self._write_many((_UPSERT_ENTITY, [(ids.new_id(ids.ENTITY), project_id, e.key, e.display_name, e.type,
                                            vector_text(e.embedding)) for e in entities]))

    def insert_entries(self, project_id: str, memory_id: str, entries: Sequence[ImportedEntry]) -> None:
        self._write_many((_INSERT_ENTRY, [_entry_row(project_id, memory_id, i) for i in entries]),
                         (_LINK_ENTITY, [(i.entry.id, role, memory_id, project_id, key)
                                        for i in entries for key, role in i.links]))

    def _write_many(self, *batches: tuple[str, list[tuple[Any, ...]]]) -> None:
        """Each statement over each of its rows, in order, on one connection; a statement without rows is skipped."""
        batches = tuple((statement, rows) for statement, rows in batches if rows)
        if not batches:
            return
        with self._connection() as conn, conn.cursor() as cur:
            for statement, rows in batches:
                cur.executemany(statement, rows)

    def link_superseded(self, project_id: str, pairs: Sequence[tuple[str, str]]) -> None:
        """``(entry id, id of the entry that superseded it)``, both new ids."""
        if not pairs:
            return
        with self._connection() as conn:
            conn.execute(
                "UPDATE memory_entries e SET superseded_by_entry_id = u.by FROM unnest(%s::text[], %s::text[]) AS u(id, by)"
                " WHERE e.id = u.id AND e.project_id = %s",
                ([a for a, _ in pairs], [b for _, b in pairs], project_id),
            )

    def insert_episodes(self, project_id: str, memory_id: str, episodes: Sequence[ImportedEpisode]) -> list[str]:
        """Returns the ids of those stored (an event id the project already has is skipped)."""
        if not episodes:
            return []
        stored_ids: list[str] = []
        with self._connection() as conn:
            for ep in episodes:
                row = conn.execute(
                    "INSERT INTO episodes (id, project_id, memory_id, conversation_id, turn_id, event_id, occurred_at,"
                    " transcript, messages, embedding, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s::vector, %s)"
                    " ON CONFLICT (project_id, event_id) WHERE event_id IS NOT NULL DO NOTHING"
                    " RETURNING id, project_id, memory_id, occurred_at",
                    (ids.new_id(ids.EPISODE), project_id, memory_id, ep.conversation_id, ep.turn_id, ep.event_id,
                     ep.occurred_at, ep.transcript, Jsonb(ep.messages),
                     vector_text(ep.windows[0].embedding if ep.windows else None), ep.created_at),
                ).fetchone()
                if row is not None:
                    write_windows(conn, row, ep.windows)
                    stored_ids.append(str(row["id"]))
            refresh(conn, project_id, stored_ids, neighbours=True)  # each turn reads the turns around it
        return stored_ids


def _entry_row(project_id: str, memory_id: str, item: ImportedEntry) -> tuple[Any, ...]:
    e = item.entry
    return (e.id, project_id, memory_id, e.content, e.source_type, e.tags, Jsonb(e.metadata), vector_text(item.embedding),
            vector_text(item.own_embedding), e.subject, e.predicate, e.object, e.confidence, e.source_quote, e.context,
            e.valid_from, e.valid_to,
            e.source_conversation_id, e.source_generation_id, e.source_event_id, e.invalidated_at,
            e.invalidation_reason, e.expires_at, e.created_at, e.updated_at)
