from __future__ import annotations

import os
import subprocess
import sys
import uuid

import psycopg
import pytest
from psycopg import sql

from memory_engine.adapters.postgres.migrations import load_migrations, migrate
from memory_engine.errors import SchemaMismatch
from memory_engine.local.adapters.embedded_postgres import EmbeddedPostgres


@pytest.fixture
def empty_database_url(pg_server: EmbeddedPostgres) -> str:
    name = f"empty_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_server.uri("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return pg_server.uri(name)


def test_migrate_is_idempotent(empty_database_url: str) -> None:
    applied = migrate(empty_database_url, embedding_dim=384)
    assert applied == [m.name for m in load_migrations()]
    assert migrate(empty_database_url, embedding_dim=384) == []


def test_two_migrate_processes_at_once_both_succeed_and_leave_one_schema(empty_database_url: str) -> None:
    # Given two `memory-engine migrate` processes started at the same moment on an empty database
    env = {**os.environ, "DATABASE_URL": empty_database_url}
    procs = [
        subprocess.Popen([sys.executable, "-m", "memory_engine.cli", "migrate"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [p.communicate(timeout=120) + (p.returncode,) for p in procs]
    # Then both exit 0, exactly one applied the migrations, and each migration is recorded once
    assert [r[2] for r in results] == [0, 0], results
    outputs = sorted(r[0].strip() for r in results)
    assert outputs[1] == "schema is up to date" and outputs[0].startswith("applied"), outputs
    with psycopg.connect(empty_database_url) as conn:
        rows = conn.execute("SELECT version, count(*) FROM schema_migrations GROUP BY version").fetchall()
    assert rows and all(count == 1 for _, count in rows)
    assert len(rows) == len(load_migrations())


def test_a_database_built_for_another_dimension_fails_with_a_clear_message(empty_database_url: str) -> None:
    migrate(empty_database_url, embedding_dim=384)
    with pytest.raises(SchemaMismatch, match="built for 384-dimensional embeddings.*produces 1024"):
        migrate(empty_database_url, embedding_dim=1024)


def test_schema_has_hnsw_gin_and_partial_indexes(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        indexes = dict(conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'").fetchall())
    hnsw = {name for name, d in indexes.items() if "USING hnsw" in d and "vector_cosine_ops" in d}
    assert {"memory_entries_embedding_live_idx", "entities_embedding_idx", "episodes_embedding_idx",
            "document_chunks_embedding_idx"} <= hnsw
    assert "WHERE (invalidated_at IS NULL)" in indexes["memory_entries_embedding_live_idx"]
    assert "USING gin (search_tsv)" in indexes["memory_entries_tsv_idx"]
    assert "USING gin (tags)" in indexes["memory_entries_tags_idx"]
    assert "WHERE (invalidated_at IS NULL)" in indexes["memory_entries_live_idx"]
