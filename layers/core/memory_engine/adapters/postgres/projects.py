"""Projects and API keys in PostgreSQL."""

from __future__ import annotations

from typing import Any

from memory_engine import ids
from memory_engine.adapters.postgres.database import Database
from memory_engine.domain.auth import Scope
from memory_engine.domain.validation import project_name
from memory_engine.errors import InvalidInput
from memory_engine.ports.projects import ApiKeyRecord, Project

_KEY_COLUMNS = "id, project_id, name, key_prefix, key_hash, scopes, created_at, last_used_at, revoked_at"


def _key(row: dict[str, Any]) -> ApiKeyRecord:
    return ApiKeyRecord(
        id=row["id"],
        project_id=row["project_id"],
        name=row["name"],
        key_prefix=row["key_prefix"],
        key_hash=row["key_hash"],
        scopes=frozenset(Scope(s) for s in row["scopes"]),
        created_at=row["created_at"],
        last_used_at=row["last_used_at"],
        revoked_at=row["revoked_at"],
    )


class PostgresProjectRepository:
    def __init__(self, database: Database) -> None:
        self._db = database

    def get_or_create_project(self, name: str) -> Project:
        """Raises InvalidInput for a name that is not a slug (names become ``drop/<name>/`` folders)."""
        try:
            project_name(name)
        except ValueError as exc:
            raise InvalidInput(str(exc), details=[{"field": "project"}]) from exc
        with self._db.connection() as conn:
            conn.execute(
                "INSERT INTO projects (id, name) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING",
                (ids.new_id(ids.PROJECT), name),
            )
            row = conn.execute("SELECT id, name, created_at FROM projects WHERE name = %s", (name,)).fetchone()
        assert row is not None
        return Project(**row)

    def get_project(self, name_or_id: str) -> Project | None:
        with self._db.connection() as conn:
            row = conn.execute(
                "SELECT id, name, created_at FROM projects WHERE id = %s OR name = %s ORDER BY (id = %s) DESC LIMIT 1",
                (name_or_id, name_or_id, name_or_id),
            ).fetchone()
        return Project(**row) if row else None

    def list_projects(self) -> list[Project]:
        with self._db.connection() as conn:
            rows = conn.execute("SELECT id, name, created_at FROM projects ORDER BY name").fetchall()
        return [Project(**row) for row in rows]

    def insert_key(
        self, *, project_id: str, name: str | None, key_prefix: str, key_hash: str, scopes: frozenset[Scope]
    ) -> ApiKeyRecord:
        with self._db.connection() as conn:
            row = conn.execute(
                f"INSERT INTO api_keys (id, project_id, name, key_prefix, key_hash, scopes)"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                f" VALUES (%s, %s, %s, %s, %s, %s) RETURNING {_KEY_COLUMNS}",
                (ids.new_id(ids.API_KEY), project_id, name, key_prefix, key_hash, sorted(s.value for s in scopes)),
            ).fetchone()
        assert row is not None
        return _key(row)

    def find_key_by_hash(self, key_hash: str) -> ApiKeyRecord | None:
        with self._db.connection() as conn:
            row = conn.execute(f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE key_hash = %s", (key_hash,)).fetchone()  # noqa: S608 - identifiers from a fixed set; values are bound parameters
        return _key(row) if row else None

    def list_keys(self, project_id: str | None = None) -> list[ApiKeyRecord]:
        with self._db.connection() as conn:
            rows = conn.execute(
                f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE %(p)s::text IS NULL OR project_id = %(p)s"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                " ORDER BY created_at",
                {"p": project_id},
            ).fetchall()
        return [_key(row) for row in rows]

    def revoke_key(self, key_id: str) -> bool:
        with self._db.connection() as conn:
            cur = conn.execute(
                "UPDATE api_keys SET revoked_at = now() WHERE id = %s AND revoked_at IS NULL", (key_id,)
            )
            return cur.rowcount == 1

    def touch_key(self, key_id: str) -> None:
        with self._db.connection() as conn:
            conn.execute(
                "UPDATE api_keys SET last_used_at = now() WHERE id = %s"
                " AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')",
                (key_id,),
            )
