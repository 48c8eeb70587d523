"""Memories (containers) in PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg.types.json import Jsonb

from memory_engine import ids
from memory_engine.adapters.postgres.database import Database
from memory_engine.adapters.postgres.paging import newest_first
from memory_engine.domain.cursor import Cursor
from memory_engine.domain.entries import Memory
from memory_engine.domain.globs import globs_to_like
from memory_engine.errors import NotFound

_COLUMNS = "id, project_id, name, description, tags, metadata, default_ttl, created_at, updated_at"
_UPDATABLE = ("name", "description", "tags", "metadata", "default_ttl")


def _memory(row: dict[str, Any]) -> Memory:
    return Memory(**row)


def _not_found(memory_id: str) -> NotFound:
    return NotFound(f"memory {memory_id} not found", details={"memory_id": memory_id})


class PostgresMemoryRepository:
    """Every query is scoped by ``project_id``; a foreign memory is NotFound."""

    def __init__(self, database: Database) -> None:
        self._db = database

    def create(
        self, project_id: str, *, name: str, description: str | None = None, tags: Sequence[str] = (),
        metadata: dict[str, Any] | None = None, default_ttl: int | None = None,
    ) -> Memory:
        with self._db.connection() as conn:
            row = conn.execute(
                f"INSERT INTO memories (id, project_id, name, description, tags, metadata, default_ttl)"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                f" VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING {_COLUMNS}",
                (ids.new_id(ids.MEMORY), project_id, name, description, list(tags),
                 Jsonb(metadata) if metadata is not None else None, default_ttl),
            ).fetchone()
        assert row is not None
        return _memory(row)

    def get(self, project_id: str, memory_id: str) -> Memory:
        row = self._db.fetch_one(f"SELECT {_COLUMNS} FROM memories WHERE id = %s AND project_id = %s", (memory_id, project_id))  # noqa: S608 - identifiers from a fixed set; values are bound parameters
        if row is None:
            raise _not_found(memory_id)
        return _memory(row)

    def list(
        self, project_id: str, *, tag_globs: Sequence[str] = (), limit: int = 20, cursor: Cursor | None = None
    ) -> tuple[list[Memory], str | None]:
        clauses = ["project_id = %(p)s"]
        params: dict[str, Any] = {"p": project_id}
        if tag_globs:
            clauses.append("EXISTS (SELECT 1 FROM unnest(tags) AS t(tag) WHERE t.tag LIKE ANY(%(likes)s))")
            params["likes"] = globs_to_like(tag_globs)
        with self._db.connection() as conn:
            rows, after = newest_first(conn, f"SELECT {_COLUMNS} FROM memories", clauses, params, limit=limit, cursor=cursor)  # noqa: S608 - identifiers from a fixed set; values are bound parameters
        return [_memory(r) for r in rows], after

    def update(self, project_id: str, memory_id: str, fields: dict[str, Any]) -> Memory:
        unknown = set(fields) - set(_UPDATABLE)
        if unknown:
            raise ValueError(f"not updatable: {sorted(unknown)}")
        sets = [f"{name} = %({name})s" for name in fields] + ["updated_at = now()"]
        params = {**fields, "id": memory_id, "p": project_id}
        if "metadata" in params and params["metadata"] is not None:
            params["metadata"] = Jsonb(params["metadata"])
        if "tags" in params:
            params["tags"] = list(params["tags"] or [])
        with self._db.connection() as conn:
            row = conn.execute(
                f"UPDATE memories SET {', '.join(sets)} WHERE id = %(id)s AND project_id = %(p)s RETURNING {_COLUMNS}",  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                params,
            ).fetchone()
        if row is None:
            raise _not_found(memory_id)
        return _memory(row)

    def delete(self, project_id: str, memory_id: str) -> None:
        with self._db.connection() as conn:
            # entries go with it (ON DELETE CASCADE); lock first so no funnel write races the delete
            locked = conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(id, 0)) FROM memories WHERE id = %s AND project_id = %s",
                (memory_id, project_id),
            ).fetchone()
            if locked is None:
                raise _not_found(memory_id)
            conn.execute("DELETE FROM memories WHERE id = %s AND project_id = %s", (memory_id, project_id))
