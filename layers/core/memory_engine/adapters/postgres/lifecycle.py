"""Forgetting (hard deletes) and export reads in PostgreSQL, every statement scoped by project.

Each forget runs in one transaction under the write locks of the memories it touches (so no
funnel write interleaves), deletes entries (live and history; their entity links cascade),
episodes and extraction runs, then the entities those entries named that no entry links any more.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import psycopg

from memory_engine.adapters.postgres.database import Database
from memory_engine.adapters.postgres.entry_context import delete_entries, lock_memories
from memory_engine.adapters.postgres.entry_sql import ENTITIES_OF
from memory_engine.adapters.postgres.episode_context import delete_turns
from memory_engine.errors import NotFound
from memory_engine.ports.entries import Deletion
from memory_engine.ports.lifecycle import Forgotten

#: Rows per page when streaming an export (a server-side cursor: memory use is one page).
EXPORT_PAGE = 500

_ENTRY_COLUMNS = (
    "e.id, e.content, e.source_type, e.tags, e.metadata, e.subject, e.predicate, e.object, e.confidence,"
    " e.source_quote, e.context, e.valid_from, e.valid_to, e.source_conversation_id, e.source_generation_id,"
    " e.source_event_id, e.invalidated_at, e.superseded_by_entry_id, e.invalidation_reason, e.expires_at,"
    " e.created_at, e.updated_at"
)


def _counts(entries: int = 0, episodes: int = 0, runs: int = 0, entities: int = 0) -> dict[str, int]:
    return {"entries": entries, "episodes": episodes, "extraction_runs": runs, "entities": entities}


def _memory_exists(conn: psycopg.Connection[Any], project_id: str, memory_id: str) -> None:
    if conn.execute("SELECT 1 FROM memories WHERE id = %s AND project_id = %s", (memory_id, project_id)).fetchone() is None:
        raise NotFound(f"memory {memory_id} not found", details={"memory_id": memory_id})


def _delete_entries(conn: psycopg.Connection[Any], project_id: str, entry_ids: list[str], *,
                    whole_conversations: bool = False) -> tuple[Deletion, list[str]]:
    """Deletes the entries (their words leaving the turns around them, entry_context.py); returns
    the deletion and the entities they linked."""
    if not entry_ids:
        return Deletion(), []
    entity_ids = [r["entity_id"] for r in conn.execute(
        "SELECT DISTINCT entity_id FROM entry_entities WHERE entry_id = ANY(%s::text[])", (entry_ids,)).fetchall()]
    return delete_entries(conn, project_id, entry_ids, whole_conversations=whole_conversations), entity_ids


def _delete_orphans(conn: psycopg.Connection[Any], project_id: str, entity_ids: list[str]) -> int:
    if not entity_ids:
        return 0
    return conn.execute(
        "DELETE FROM entities n WHERE n.project_id = %s AND n.id = ANY(%s::text[])"
        " AND NOT EXISTS (SELECT 1 FROM entry_entities l WHERE l.entity_id = n.id)", (project_id, entity_ids),
    ).rowcount


class PostgresLifecycle:
    def __init__(self, database: Database) -> None:
        self._db = database

    # --- forgetting ---

    def forget_conversation(self, project_id: str, conversation_id: str, *, memory_id: str | None) -> Forgotten:
        in_memory = " AND memory_id = %(m)s" if memory_id is not None else ""
        params = {"p": project_id, "c": conversation_id, "m": memory_id}
        with self._db.connection() as conn:
            if memory_id is not None:
                _memory_exists(conn, project_id, memory_id)
            memories = [r["memory_id"] for r in conn.execute(
                "SELECT DISTINCT memory_id FROM memory_entries WHERE project_id = %(p)s AND source_conversation_id = %(c)s"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                f"{in_memory} UNION SELECT DISTINCT memory_id FROM episodes WHERE project_id = %(p)s"
                f" AND conversation_id = %(c)s AND memory_id IS NOT NULL{in_memory}", params).fetchall()]
            lock_memories(conn, memories)
            entry_ids = [r["id"] for r in conn.execute(
                f"SELECT id FROM memory_entries WHERE project_id = %(p)s AND source_conversation_id = %(c)s{in_memory}",  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                params).fetchall()]
            deletion, entity_ids = _delete_entries(conn, project_id, entry_ids, whole_conversations=True)
            runs = conn.execute(
                f"DELETE FROM extraction_runs WHERE project_id = %(p)s AND conversation_id = %(c)s{in_memory}", params,  # noqa: S608 - identifiers from a fixed set; values are bound parameters
            ).rowcount
            episodes = conn.execute(
                f"DELETE FROM episodes WHERE project_id = %(p)s AND conversation_id = %(c)s{in_memory}", params,  # noqa: S608 - identifiers from a fixed set; values are bound parameters
            ).rowcount
            entities = _delete_orphans(conn, project_id, entity_ids)
        return Forgotten(_counts(len(deletion.deleted), episodes, runs, entities), deletion.cleared)

    def forget_entity(self, project_id: str, memory_id: str, entity: str) -> Forgotten:
        with self._db.connection() as conn:
            _memory_exists(conn, project_id, memory_id)
            lock_memories(conn, [memory_id])
            found = conn.execute("SELECT id, display_name FROM entities WHERE project_id = %s AND name = %s",
                                 (project_id, entity)).fetchone()
            if found is None:
                return Forgotten(_counts())
            entry_ids = [r["id"] for r in conn.execute(
                "SELECT e.id FROM memory_entries e JOIN entry_entities l ON l.entry_id = e.id"
                " WHERE e.project_id = %s AND l.memory_id = %s AND l.entity_id = %s", (project_id, memory_id, found["id"]),
            ).fetchall()]
            deletion, entity_ids = _delete_entries(conn, project_id, entry_ids)
            # the turns that name the entity (word boundaries, any case) and the runs that read them
            pattern = r"\m" + re.sub(r"([^\w\s])", r"\\\1", entity) + r"\M"
            episode_ids = [r["id"] for r in conn.execute(
                "SELECT id FROM episodes WHERE project_id = %s AND memory_id = %s AND transcript ~* %s",
                (project_id, memory_id, pattern)).fetchall()]
            runs = conn.execute("DELETE FROM extraction_runs WHERE project_id = %s AND episode_id = ANY(%s::text[])",
                                (project_id, episode_ids)).rowcount if episode_ids else 0
            # the turns around them read their neighbours again (episode_context.py)
            turns = delete_turns(conn, project_id, "id = ANY(%(ids)s::text[])", {"ids": episode_ids})
            entities = _delete_orphans(conn, project_id, sorted({*entity_ids, found["id"]}))
        return Forgotten(_counts(len(deletion.deleted), turns.count, runs, entities), deletion.cleared, turns.around)

    def purge_memory(self, project_id: str, memory_id: str) -> Forgotten:
        with self._db.connection() as conn:
            _memory_exists(conn, project_id, memory_id)
            lock_memories(conn, [memory_id])
            entry_ids = [r["id"] for r in conn.execute(
                "SELECT id FROM memory_entries WHERE project_id = %s AND memory_id = %s", (project_id, memory_id)).fetchall()]
            deletion, entity_ids = _delete_entries(conn, project_id, entry_ids, whole_conversations=True)
            runs = conn.execute("DELETE FROM extraction_runs WHERE project_id = %s AND memory_id = %s",
                                (project_id, memory_id)).rowcount
            episodes = conn.execute("DELETE FROM episodes WHERE project_id = %s AND memory_id = %s",
                                    (project_id, memory_id)).rowcount
            conn.execute("DELETE FROM memories WHERE id = %s AND project_id = %s", (memory_id, project_id))
            entities = _delete_orphans(conn, project_id, entity_ids)
        return Forgotten(_counts(len(deletion.deleted), episodes, runs, entities), deletion.cleared)

    # --- export reads ---

    def memory_record(self, project_id: str, memory_id: str) -> dict[str, Any]:
        with self._db.connection() as conn:
            row = conn.execute(
                "SELECT id, name, description, tags, metadata, default_ttl, created_at, updated_at FROM memories"
                " WHERE id = %s AND project_id = %s", (memory_id, project_id)).fetchone()
        if row is None:
            raise NotFound(f"memory {memory_id} not found", details={"memory_id": memory_id})
        return dict(row)

    def _stream(self, sql: str, params: tuple[Any, ...]) -> Iterator[dict[str, Any]]:
        with self._db.connection() as conn, conn.cursor(name="export") as cursor:
            cursor.itersize = EXPORT_PAGE
            cursor.execute(sql, params)
            for row in cursor:
                yield dict(row)

    def entry_records(self, project_id: str, memory_id: str, *, vectors: bool) -> Iterator[dict[str, Any]]:
        vector = ", e.embedding::text AS embedding, e.own_embedding::text AS own_embedding" if vectors else ""
        yield from self._stream(
            f"SELECT {_ENTRY_COLUMNS}, {ENTITIES_OF.format(alias='e')} AS entities{vector} FROM memory_entries e"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
            " WHERE e.project_id = %s AND e.memory_id = %s ORDER BY e.created_at, e.id", (project_id, memory_id))

    def entity_records(self, project_id: str, memory_id: str, *, vectors: bool) -> Iterator[dict[str, Any]]:
        vector = ", n.embedding::text AS embedding" if vectors else ""
        yield from self._stream(
            f"SELECT n.name, n.display_name, n.type AS entity_type{vector} FROM entities n WHERE n.project_id = %s AND EXISTS ("  # noqa: S608 - identifiers from a fixed set; values are bound parameters
            " SELECT 1 FROM entry_entities l WHERE l.entity_id = n.id AND l.memory_id = %s) ORDER BY n.name",
            (project_id, memory_id))

    def episode_records(self, project_id: str, memory_id: str, *, vectors: bool) -> Iterator[dict[str, Any]]:
        vector = ", ep.embedding::text AS embedding" if vectors else ""
        yield from self._stream(
            "SELECT ep.id, ep.conversation_id, ep.turn_id, ep.event_id, ep.occurred_at, ep.transcript, ep.messages,"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
            f" ep.created_at{vector} FROM episodes ep WHERE ep.project_id = %s AND ep.memory_id = %s"
            " ORDER BY ep.created_at, ep.id", (project_id, memory_id))
