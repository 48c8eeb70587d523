from __future__ import annotations

import os
import subprocess
import sys
import uuid

import psycopg
import pytest
from psycopg import sql

from memory_engine.adapters.postgres.database import Database
from memory_engine.adapters.postgres.embedding_repair import PostgresEmbeddingRepair
from memory_engine.adapters.postgres.migrations import load_migrations, migrate
from memory_engine.domain.turns import READ_BEFORE_WINDOW
from memory_engine.errors import SchemaMismatch
from memory_engine.local.adapters.embedded_postgres import EmbeddedPostgres
from memory_engine.local.adapters.onnx_embedder import OnnxMiniLMEmbedder
from memory_engine.services.reembed import reembed_missing


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


def test_a_fact_or_chunk_wider_than_two_kilobytes_keeps_its_vector_in_its_row(empty_database_url: str) -> None:
    # Given the schema, and a fact and a chunk of some 2.7 kB each (a conversation turn with its
    # context; a 1,000-character chunk), their 384-dimensional vectors the widest field
    migrate(empty_database_url, embedding_dim=384)
    vector = "[" + ",".join(f"{(i % 17) / 17 - 0.5:.6f}" for i in range(384)) + "]"
    text = " ".join(f"word{i}" for i in range(170))  # 1,019 characters that do not compress to nothing
    with psycopg.connect(empty_database_url) as conn:
        conn.execute("INSERT INTO projects (id, name) VALUES ('p', 'p')")
        conn.execute("INSERT INTO memories (id, project_id, name) VALUES ('m', 'p', 'm')")
        conn.execute("INSERT INTO memory_entries (id, project_id, memory_id, content, context, embedding)"
                     " VALUES ('e', 'p', 'm', %s, %s, %s::vector)", (text, text, vector))
        conn.execute("INSERT INTO documents (id, project_id, path) VALUES ('d', 'p', '/d.txt')")
        conn.execute("INSERT INTO document_chunks (id, project_id, document_id, chunk_index, content, embedding)"
                     " VALUES ('c', 'p', 'd', 0, %s, %s::vector)", (text + " " + text, vector))
        # Then nothing of either row went to its table's TOAST table: an exact scan reads each vector
        # from the row itself (pgvector's type alone would move it out, the widest field)
        for table in ("memory_entries", "document_chunks"):
            row = conn.execute("SELECT pg_column_size(t.*) AS width, pg_relation_size(c.reltoastrelid) AS toasted"
                               f" FROM {table} t, pg_class c WHERE c.relname = %s", (table,)).fetchone()
            assert row is not None and row[0] > 2100, (table, row)
            assert row[1] == 0, (table, row)


def test_turns_recorded_before_0013_read_the_turns_around_them(empty_database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a database at migration 0012 holding a conversation's turns (no context then)
    from memory_engine.adapters.postgres import migrations

    every = load_migrations()
    monkeypatch.setattr(migrations, "load_migrations", lambda: [m for m in every if m.version <= 12])
    migrate(empty_database_url, embedding_dim=384)
    with psycopg.connect(empty_database_url) as conn:
        conn.execute("INSERT INTO projects (id, name) VALUES ('p', 'p')")
        conn.execute("INSERT INTO memories (id, project_id, name) VALUES ('m', 'p', 'm')")
        for i, text in enumerate(("user: the plumber came", "assistant: on Tuesday", "user: thanks")):
            conn.execute("INSERT INTO episodes (id, project_id, memory_id, conversation_id, occurred_at, transcript)"
                         " VALUES (%s, 'p', 'm', 'c', timestamptz '2024-03-01 10:00+00' + %s * interval '1 minute', %s)",
                         (f"e{i}", i, text))
        conn.execute("INSERT INTO episodes (id, project_id, memory_id, transcript) VALUES ('alone', 'p', 'm', 'user: hi')")
    # When 0013 is applied
    monkeypatch.setattr(migrations, "load_migrations", lambda: every)
    assert [name for name in migrate(empty_database_url, embedding_dim=384) if name.startswith("0013")]
    # Then each turn reads the turn before and after it, searchable as the second field
    with psycopg.connect(empty_database_url) as conn:
        contexts = dict(conn.execute("SELECT id, context FROM episodes").fetchall())
        found = {r[0] for r in conn.execute("SELECT id FROM episodes WHERE search_tsv @@ to_tsquery('english', 'plumber')")}
    assert contexts == {"e0": "assistant: on Tuesday", "e1": "user: the plumber came\nuser: thanks",
                        "e2": "assistant: on Tuesday", "alone": None}, contexts
    assert found == {"e0", "e1"}


def test_turns_recorded_before_0014_get_their_window_over_the_turn_before_from_reembed(
        empty_database_url: str, monkeypatch: pytest.MonkeyPatch, embedder: OnnxMiniLMEmbedder) -> None:
    # Given a database at migration 0013 holding a conversation's short turns, each with its own window
    from memory_engine.adapters.postgres import migrations

    every = load_migrations()
    monkeypatch.setattr(migrations, "load_migrations", lambda: [m for m in every if m.version <= 13])
    migrate(empty_database_url, embedding_dim=384)
    texts = ("user: the plumber came", "assistant: on Tuesday")
    with psycopg.connect(empty_database_url) as conn:
        conn.execute("INSERT INTO projects (id, name) VALUES ('p', 'p')")
        conn.execute("INSERT INTO memories (id, project_id, name) VALUES ('m', 'p', 'm')")
        for i, (text, vector) in enumerate(zip(texts, embedder.embed_documents(list(texts)), strict=True)):
            own = "[" + ",".join(str(float(x)) for x in vector) + "]"
            conn.execute("INSERT INTO episodes (id, project_id, memory_id, conversation_id, occurred_at, transcript,"
                         " embedding) VALUES (%s, 'p', 'm', 'c', timestamptz '2024-03-01 10:00+00' + %s * interval"
                         " '1 minute', %s, %s::vector)", (f"e{i}", i, text, own))
            conn.execute("INSERT INTO episode_windows (episode_id, window_index, project_id, memory_id, start_char,"
                         " end_char, embedding) VALUES (%s, 0, 'p', 'm', 0, %s, %s::vector)", (f"e{i}", len(text), own))
    # When 0014 is applied, then reembed runs
    monkeypatch.setattr(migrations, "load_migrations", lambda: every)
    assert [name for name in migrate(empty_database_url, embedding_dim=384) if name.startswith("0014")]
    database = Database(empty_database_url)
    try:
        repair = PostgresEmbeddingRepair(database)
        assert repair.count_missing("episodes") == 0 and repair.count_unread() == 1
        assert reembed_missing(repair, embedder, tables=["episodes"]) == {"episodes": 1}
        # Then the reply has a window over the turn before it, and nothing is left to do
        assert repair.count_unread() == 0
    finally:
        database.close()
    with psycopg.connect(empty_database_url) as conn:
        reads = conn.execute("SELECT episode_id, window_index, read_episode_id, start_char, end_char FROM episode_windows"
                             " WHERE read_episode_id IS NOT NULL").fetchall()
    assert reads == [("e1", READ_BEFORE_WINDOW, "e0", 0, len(texts[1]))]


def test_entity_links_written_before_0015_and_by_writers_that_name_no_memory_get_their_facts_memory(
        empty_database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a database at migration 0014 with facts in two memories, each linked to one entity
    from memory_engine.adapters.postgres import migrations

    every = load_migrations()
    monkeypatch.setattr(migrations, "load_migrations", lambda: [m for m in every if m.version <= 14])
    migrate(empty_database_url, embedding_dim=384)
    link = "INSERT INTO entry_entities (entry_id, entity_id, role) VALUES (%s, 'n', 'subject')"
    with psycopg.connect(empty_database_url) as conn:
        conn.execute("INSERT INTO projects (id, name) VALUES ('p', 'p')")
        conn.execute("INSERT INTO memories (id, project_id, name) VALUES ('m1', 'p', 'm1'), ('m2', 'p', 'm2')")
        conn.execute("INSERT INTO entities (id, project_id, name, display_name) VALUES ('n', 'p', 'falcon', 'Falcon')")
        for entry, memory in (("a", "m1"), ("b", "m2")):
            conn.execute("INSERT INTO memory_entries (id, project_id, memory_id, content) VALUES (%s, 'p', %s, 'x')",
                         (entry, memory))
            conn.execute(link, (entry,))
    # When 0015 is applied
    monkeypatch.setattr(migrations, "load_migrations", lambda: every)
    assert [name for name in migrate(empty_database_url, embedding_dim=384) if name.startswith("0015")]
    with psycopg.connect(empty_database_url) as conn:
        # and a writer of the release before links a new fact without naming its memory, in the
        # same statement that writes the fact (as entry_sql's insert does)
        conn.execute("WITH ins AS (INSERT INTO memory_entries (id, project_id, memory_id, content)"
                     " VALUES ('c', 'p', 'm2', 'y') RETURNING id),"
                     " lnk AS (INSERT INTO entry_entities (entry_id, entity_id, role) VALUES ('c', 'n', 'mention'))"
                     " SELECT id FROM ins")
        memories = dict(conn.execute("SELECT entry_id, memory_id FROM entry_entities").fetchall())
        # and a fact moved to another memory by hand takes its links along
        conn.execute("UPDATE memory_entries SET memory_id = 'm1' WHERE id = 'b'")
        moved = conn.execute("SELECT memory_id FROM entry_entities WHERE entry_id = 'b'").fetchone()
        indexes = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'entry_entities'")}
        required = conn.execute("SELECT attnotnull FROM pg_attribute WHERE attrelid = 'entry_entities'::regclass"
                                " AND attname = 'memory_id'").fetchone()
    # Then every link holds its fact's memory, which is required, and links are read by entity and memory
    assert memories == {"a": "m1", "b": "m2", "c": "m2"}
    assert moved == ("m1",)
    assert required == (True,)
    assert indexes == {"entry_entities_pkey", "entry_entities_entity_memory_idx"}
