"""Versioned SQL migrations, applied under an advisory lock so concurrent runners are safe."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from importlib import resources

import psycopg

from memory_engine.errors import SchemaMismatch
from memory_engine.migrations import SKIPPED_VERSIONS

logger = logging.getLogger(__name__)

#: Arbitrary constant: pg_advisory_lock key shared by every migration runner.
MIGRATION_LOCK_KEY = 0x6D656D656E67  # "memeng"
_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
DIM_PLACEHOLDER = "{{EMBEDDING_DIM}}"


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def load_migrations() -> list[Migration]:
    """All SQL files of :mod:`memory_engine.migrations`, ordered by version. Raises RuntimeError for a
    duplicate version or a gap in the numbering (other than ``SKIPPED_VERSIONS``)."""
    found = []
    for entry in resources.files("memory_engine.migrations").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), entry.name, entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    check_numbering([m.version for m in found])
    return found


def check_numbering(versions: list[int]) -> None:
    """Sorted versions must be 1, 2, 3, ... without ``SKIPPED_VERSIONS``. Raises RuntimeError."""
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate migration versions: {versions}")
    expected = [v for v in range(1, max(versions, default=0) + 1) if v not in SKIPPED_VERSIONS]
    if versions != expected:
        raise RuntimeError(f"migration versions {versions} have a gap or reuse a skipped number; expected {expected}")


def migrate(conninfo: str, *, embedding_dim: int) -> list[str]:
    """Apply every pending migration; return the names applied (empty when up to date).

    Raises :class:`SchemaMismatch` when the database was built for another embedding
    dimension, or carries migrations this code does not know (a newer release).
    """
    applied: list[str] = []
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_KEY,))
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version integer PRIMARY KEY, name text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_meta (key text PRIMARY KEY, value text NOT NULL)"
            )
            _check_dimension(conn, embedding_dim)
            done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
            known = load_migrations()
            unknown = done - {m.version for m in known}
            if unknown:
                raise SchemaMismatch(
                    f"the database has migrations {sorted(unknown)} that this release does not know; "
                    "upgrade memory-engine before using this database"
                )
            for migration in known:
                if migration.version in done:
                    continue
                sql = migration.sql.replace(DIM_PLACEHOLDER, str(int(embedding_dim)))
                with conn.transaction():
                    conn.execute(sql.encode())
                    conn.execute(
                        "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                        (migration.version, migration.name),
                    )
                logger.info("applied migration %s", migration.name)
                applied.append(migration.name)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))
    return applied


def _check_dimension(conn: psycopg.Connection, embedding_dim: int) -> None:
    row = conn.execute("SELECT value FROM schema_meta WHERE key = 'embedding_dim'").fetchone()
    if row is None:
        conn.execute(
            "INSERT INTO schema_meta (key, value) VALUES ('embedding_dim', %s)", (str(embedding_dim),)
        )
        return
    if int(row[0]) != embedding_dim:
        raise SchemaMismatch(
            f"this database was built for {row[0]}-dimensional embeddings but the configured "
            f"embedding model produces {embedding_dim}; set EMBEDDING_DIMENSIONS={row[0]} (and a "
            "matching model) or point DATABASE_URL / MEMORY_ENGINE_HOME at a new database",
            details={"database_dimension": int(row[0]), "configured_dimension": embedding_dim},
        )


def check_schema(conninfo: str, *, embedding_dim: int) -> None:
    """Fail fast at start-up when the database does not match this deployment's dimension."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        exists = conn.execute("SELECT to_regclass('schema_meta')").fetchone()
        if exists and exists[0]:
            row = conn.execute("SELECT value FROM schema_meta WHERE key = 'embedding_dim'").fetchone()
            if row and int(row[0]) != embedding_dim:
                _check_dimension(conn, embedding_dim)
