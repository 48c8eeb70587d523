"""Writes of a memory import in PostgreSQL: rows restored as they were exported (history,
timestamps, provenance), under new ids in the caller's project. Not through the write funnel: an
import restores a memory, it does not re-decide it (the funnel would skip history as duplicates)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg.types.json import Jsonb

from memory_engine import ids
from memory_engine.adapters.postgres.database import Database
from memory_engine.adapters.postgres.entry_sql import vector_text
from memory_engine.ports.lifecycle import ImportedEntity, ImportedEntry, ImportedEpisode


class PostgresImporter:
    def __init__(self, database: Database) -> None:
        self._db = database

    def upsert_entities(self, project_id: str, entities: Sequence[ImportedEntity]) -> None:
        self._db.execute_many(
            "INSERT INTO entities AS x (id, project_id, name, display_name, type, embedding)"
            " VALUES (%s, %s, %s, %s, %s, %s::vector) ON CONFLICT (project_id, name) DO UPDATE"
            " SET type = coalesce(x.type, EXCLUDED.type), embedding = coalesce(x.embedding, EXCLUDED.embedding)",
            [(ids.new_id(ids.ENTITY), project_id, e.key, e.display_name, e.type, vector_text(e.embedding))
             for e in entities],
        )

    def insert_entries(self, project_id: str, memory_id: str, entries: Sequence[ImportedEntry]) -> None:
        if not entries:
            return
        with self._db.connection() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO memory_entries (id, project_id, memory_id, content, source_type, tags, metadata, embedding,"
                " subject, predicate, object, confidence, source_quote, context, valid_from, valid_to,"
                " source_conversation_id, source_generation_id, source_event_id, invalidated_at, invalidation_reason,"
                " expires_at, created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s::vector, %s, %s, %s, %s,"
                " %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                [_entry_row(project_id, memory_id, i) for i in entries],
            )
            links = [(i.entry.id, project_id, key, role) for i in entries for key, role in i.links]
            if links:
                cur.executemany(
                    "INSERT INTO entry_entities (entry_id, entity_id, role)"
                    " SELECT %s, n.id, %s FROM entities n WHERE n.project_id = %s AND n.name = %s ON CONFLICT DO NOTHING",
                    [(entry_id, role, p, key) for entry_id, p, key, role in links],
                )

    def link_superseded(self, project_id: str, pairs: Sequence[tuple[str, str]]) -> None:
        """``(entry id, id of the entry that superseded it)``, both new ids."""
        if not pairs:
            return
        with self._db.connection() as conn:
            conn.execute(
                "UPDATE memory_entries e SET superseded_by_entry_id = u.by FROM unnest(%s::text[], %s::text[]) AS u(id, by)"
                " WHERE e.id = u.id AND e.project_id = %s",
                ([a for a, _ in pairs], [b for _, b in pairs], project_id),
            )

    def insert_episodes(self, project_id: str, memory_id: str, episodes: Sequence[ImportedEpisode]) -> int:
        """Returns how many were stored (an event id the project already has is skipped)."""
        if not episodes:
            return 0
        stored = 0
        with self._db.connection() as conn:
            for ep in episodes:
                stored += conn.execute(
                    "INSERT INTO episodes (id, project_id, memory_id, conversation_id, turn_id, event_id, occurred_at,"
                    " transcript, messages, embedding, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s::vector, %s)"
                    " ON CONFLICT (project_id, event_id) WHERE event_id IS NOT NULL DO NOTHING",
                    (ids.new_id(ids.EPISODE), project_id, memory_id, ep.conversation_id, ep.turn_id, ep.event_id,
                     ep.occurred_at, ep.transcript, Jsonb(ep.messages), vector_text(ep.embedding), ep.created_at),
                ).rowcount
        return stored


def _entry_row(project_id: str, memory_id: str, item: ImportedEntry) -> tuple[Any, ...]:
    e = item.entry
    return (e.id, project_id, memory_id, e.content, e.source_type, e.tags, Jsonb(e.metadata), vector_text(item.embedding),
            e.subject, e.predicate, e.object, e.confidence, e.source_quote, e.context, e.valid_from, e.valid_to,
            e.source_conversation_id, e.source_generation_id, e.source_event_id, e.invalidated_at,
            e.invalidation_reason, e.expires_at, e.created_at, e.updated_at)
