"""Documents, document chunks and ingestion rules in PostgreSQL.

Generations: a run builds chunks of ``ingest_generation``; search reads ``active_generation``.
``finalize`` flips the pointer and deletes the other generations in one transaction, so the old
chunks stay searchable until the new set is complete. Every write of a run checks that its
generation is still the one being built, so a superseded run can never clobber a newer one.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from psycopg import Connection
from psycopg.types.json import Jsonb

from memory_engine import ids
from memory_engine.adapters.postgres.database import Database
from memory_engine.adapters.postgres.ingestion_rules import list_rules
from memory_engine.adapters.postgres.paging import newest_first
from memory_engine.domain.cursor import decode_cursor
from memory_engine.domain.documents import Chunk, ChunkSettings, ChunkSource, Document, DocumentStatus
from memory_engine.domain.globs import globs_to_like, prefix_to_like
from memory_engine.domain.ingestion_rules import IngestionRule
from memory_engine.errors import NotFound
from memory_engine.ports.documents import IngestDecision, NewDocument
from memory_engine.ports.embedder import Vector

_COLUMNS = (
    "id, project_id, path, title, content_type, size_bytes, sha256, source_bucket, source_key, tags, metadata,"
    " chunk_strategy, chunk_size, chunk_overlap, chunk_settings_source, ingestion_rule_id, status, total_pages,"
    " total_chunks, indexed_chunks, error,"
    " active_generation, ingest_generation, created_at, updated_at"
)
_LIVE_STATUSES = (DocumentStatus.PROCESSING.value, DocumentStatus.READY.value)

Conn = Connection[dict[str, Any]]


def _doc(row: dict[str, Any]) -> Document:
    return Document.model_validate(row)


def _found(row: dict[str, Any] | None, document_id: str) -> Document:
    if row is None:
        raise NotFound(f"document {document_id} not found")
    return _doc(row)


class PostgresDocumentRepository:
    """Implements :class:`memory_engine.ports.documents.DocumentRepository`."""

    def __init__(self, database: Database) -> None:
        self._db = database

    # --- reads ---
    def get(self, project_id: str, document_id: str) -> Document:
        return _found(self._db.fetch_one(
            f"SELECT {_COLUMNS} FROM documents WHERE project_id = %s AND id = %s", (project_id, document_id)  # noqa: S608 - identifiers from a fixed set; values are bound parameters
        ), document_id)

    def find_by_path(self, project_id: str, path: str) -> Document | None:
        row = self._db.fetch_one(f"SELECT {_COLUMNS} FROM documents WHERE project_id = %s AND path = %s", (project_id, path))  # noqa: S608 - identifiers from a fixed set; values are bound parameters
        return _doc(row) if row else None

    def list_processing(self) -> list[Document]:
        rows = self._db.fetch_all(f"SELECT {_COLUMNS} FROM documents WHERE status = 'processing' ORDER BY updated_at")  # noqa: S608 - identifiers from a fixed set; values are bound parameters
        return [_doc(r) for r in rows]

    def fail_stale_pending(self, *, older_than: datetime, error: str, project_id: str | None = None) -> int:
        with self._db.connection() as conn:
            cur = conn.execute(
                """UPDATE documents SET status = 'failed', error = %(error)s, updated_at = now()
                   WHERE status = 'pending' AND updated_at < %(cutoff)s
                     AND (%(p)s::text IS NULL OR project_id = %(p)s)""",
                {"error": error, "cutoff": older_than, "p": project_id},
            )
            return cur.rowcount

    def list_documents(self, project_id: str, *, path_prefix: str | None = None, tags: Sequence[str] = (),
             status: DocumentStatus | None = None, limit: int = 20,
             cursor: str | None = None) -> tuple[list[Document], str | None]:
        where = ["project_id = %(p)s"]
        params: dict[str, Any] = {"p": project_id}
        if path_prefix:
            where.append("path LIKE %(prefix)s")
            params["prefix"] = prefix_to_like(path_prefix)
        if tags:
            where.append("EXISTS (SELECT 1 FROM unnest(tags) t WHERE t LIKE ANY(%(tags)s))")
            params["tags"] = globs_to_like(tags)
        if status is not None:
            where.append("status = %(status)s")
            params["status"] = status.value
        with self._db.connection() as conn:
            rows, after = newest_first(conn, f"SELECT {_COLUMNS} FROM documents", where, params, limit=limit,  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                                       cursor=decode_cursor(cursor))
        return [_doc(r) for r in rows], after

    def list_rules(self, project_id: str) -> list[IngestionRule]:
        with self._db.connection() as conn:
            return list_rules(conn, project_id)

    # --- writes ---
    def delete(self, project_id: str, document_id: str) -> Document:
        return _found(self._db.fetch_one(
            f"DELETE FROM documents WHERE project_id = %s AND id = %s RETURNING {_COLUMNS}", (project_id, document_id)  # noqa: S608 - identifiers from a fixed set; values are bound parameters
        ), document_id)

    def prepare(self, project_id: str, new: NewDocument, *, default_settings: ChunkSettings) -> Document:
        settings = new.chunk_settings or default_settings
        with self._db.connection() as conn:
            row = conn.execute(
                f"""INSERT INTO documents (id, project_id, path, title, content_type, tags, metadata,
                        chunk_strategy, chunk_size, chunk_overlap, chunk_settings_source, status, source_bucket,
                        source_key)
                    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 'pending', %s, %s)
                    ON CONFLICT (project_id, path) DO UPDATE SET
                        title = coalesce(EXCLUDED.title, documents.title),
                        content_type = coalesce(EXCLUDED.content_type, documents.content_type),
                        tags = CASE WHEN %s THEN EXCLUDED.tags ELSE documents.tags END,
                        metadata = coalesce(EXCLUDED.metadata, documents.metadata),
                        chunk_strategy = CASE WHEN %s THEN EXCLUDED.chunk_strategy ELSE documents.chunk_strategy END,
                        chunk_size = CASE WHEN %s THEN EXCLUDED.chunk_size ELSE documents.chunk_size END,
                        chunk_overlap = CASE WHEN %s THEN EXCLUDED.chunk_overlap ELSE documents.chunk_overlap END,
                        chunk_settings_source = CASE WHEN %s THEN EXCLUDED.chunk_settings_source
                                                     ELSE documents.chunk_settings_source END,
                        updated_at = now()
                    RETURNING {_COLUMNS}""",  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                (ids.new_id(ids.DOCUMENT), project_id, new.path, new.title, new.content_type, list(new.tags),
                 Jsonb(new.metadata) if new.metadata is not None else None, settings.strategy.value, settings.size,
                 settings.overlap, new.chunk_settings_source or ("request" if new.chunk_settings else "default"),
                 new.source_bucket, new.source_key,
                 bool(new.tags), *([new.chunk_settings is not None] * 4)),
            ).fetchone()
        assert row is not None
        return _doc(row)

    def begin_ingest(self, project_id: str, new: NewDocument, *, default_settings: ChunkSettings,
                     force: bool = False) -> IngestDecision:
        with self._db.connection() as conn:
            existing = conn.execute(
                f"SELECT {_COLUMNS} FROM documents WHERE project_id = %s AND path = %s FOR UPDATE",  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                (project_id, new.path),
            ).fetchone()
            if existing is None:
                settings = new.chunk_settings or default_settings
                row = conn.execute(
                    f"""INSERT INTO documents (id, project_id, path, title, content_type, size_bytes, sha256,
                            source_bucket, source_key, tags, metadata, chunk_strategy, chunk_size, chunk_overlap,
                            chunk_settings_source, ingestion_rule_id, status, ingest_generation)
                        VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 'processing', 1)
                        ON CONFLICT (project_id, path) DO NOTHING
                        RETURNING {_COLUMNS}""",  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                    (ids.new_id(ids.DOCUMENT), project_id, new.path, new.title, new.content_type, new.size_bytes,
                     new.sha256, new.source_bucket, new.source_key, list(new.tags),
                     Jsonb(new.metadata) if new.metadata is not None else None, settings.strategy.value,
                     settings.size, settings.overlap, new.chunk_settings_source or "default", new.ingestion_rule_id),
                ).fetchone()
                if row is None:  # created concurrently: take the lock on it and decide again
                    conn.rollback()
                    return self.begin_ingest(project_id, new, default_settings=default_settings, force=force)
                return IngestDecision(_doc(row), True, "new document")
            current = _doc(existing)
            if not force and new.sha256 and current.sha256 == new.sha256 and current.status.value in _LIVE_STATUSES:
                return IngestDecision(current, False, f"unchanged (same sha256, status {current.status.value})")
            return IngestDecision(self._restart(conn, current, new), True, "content changed" if not force else "forced")

    def _restart(self, conn: Conn, current: Document, new: NewDocument, *, set_rule: bool = True) -> Document:
        settings = new.chunk_settings or current.chunk_settings
        source = new.chunk_settings_source if new.chunk_settings is not None else None
        rule_id = new.ingestion_rule_id if set_rule else current.ingestion_rule_id
        row = conn.execute(
            f"""UPDATE documents SET
                    title = coalesce(%s, title), content_type = coalesce(%s, content_type),
                    size_bytes = coalesce(%s, size_bytes), sha256 = coalesce(%s, sha256),
                    source_bucket = coalesce(%s, source_bucket), source_key = coalesce(%s, source_key),
                    tags = CASE WHEN %s THEN %s ELSE tags END, metadata = coalesce(%s, metadata),
                    chunk_strategy = %s, chunk_size = %s, chunk_overlap = %s,
                    chunk_settings_source = coalesce(%s, chunk_settings_source), ingestion_rule_id = %s,
                    status = 'processing', error = NULL, total_pages = NULL, total_chunks = NULL,
                    indexed_chunks = 0, ingest_generation = greatest(ingest_generation, active_generation) + 1,
                    updated_at = now()
                WHERE id = %s RETURNING {_COLUMNS}""",  # noqa: S608 - identifiers from a fixed set; values are bound parameters
            (new.title, new.content_type, new.size_bytes, new.sha256, new.source_bucket, new.source_key,
             bool(new.tags), list(new.tags), Jsonb(new.metadata) if new.metadata is not None else None,
             settings.strategy.value, settings.size, settings.overlap, source, rule_id, current.id),
        ).fetchone()
        assert row is not None
        return _doc(row)

    def begin_reingest(self, project_id: str, document_id: str, settings: ChunkSettings,
                       source: ChunkSource | None = None) -> Document:
        with self._db.connection() as conn:
            doc = _found(conn.execute(
                f"SELECT {_COLUMNS} FROM documents WHERE project_id = %s AND id = %s FOR UPDATE", (project_id, document_id)  # noqa: S608 - identifiers from a fixed set; values are bound parameters
            ).fetchone(), document_id)
            return self._restart(conn, doc, NewDocument(path=doc.path, chunk_settings=settings,
                                                        chunk_settings_source=source), set_rule=False)

    def set_progress(self, project_id: str, document_id: str, generation: int, *,
                     total_pages: int | None = None, total_chunks: int | None = None) -> bool:
        with self._db.connection() as conn:
            cur = conn.execute(
                """UPDATE documents SET total_pages = coalesce(%s, total_pages),
                       total_chunks = coalesce(%s, total_chunks), updated_at = now()
                   WHERE project_id = %s AND id = %s AND ingest_generation = %s AND status = 'processing'""",
                (total_pages, total_chunks, project_id, document_id, generation),
            )
            return cur.rowcount == 1

    def record_extraction(self, project_id: str, document_id: str, generation: int, found: dict[str, Any], *,
                          title: str | None = None, reset: bool = False) -> bool:
        with self._db.connection() as conn:
            cur = conn.execute(
                """UPDATE documents SET
                       metadata = coalesce(metadata, '{}'::jsonb) || jsonb_build_object('extracted',
                           CASE WHEN %(reset)s THEN '{}'::jsonb ELSE coalesce(metadata -> 'extracted', '{}'::jsonb) END
                           || %(found)s),
                       title = coalesce(title, %(title)s), updated_at = now()
                   WHERE project_id = %(project)s AND id = %(id)s AND ingest_generation = %(generation)s""",
                {"reset": reset, "found": Jsonb(found), "title": title, "project": project_id, "id": document_id,
                 "generation": generation},
            )
            return cur.rowcount == 1

    def upsert_chunks(self, project_id: str, document_id: str, generation: int,
                      chunks: Sequence[Chunk], vectors: Sequence[Vector | None]) -> int | None:
        with self._db.connection() as conn:
            # The row lock serializes concurrent batches, so the count below is exact.
            owner = conn.execute(
                "SELECT 1 FROM documents WHERE project_id = %s AND id = %s AND ingest_generation = %s"
                " AND status = 'processing' FOR UPDATE",
                (project_id, document_id, generation),
            ).fetchone()
            if owner is None:
                return None
            with conn.cursor() as cur:
                cur.executemany(
                    """INSERT INTO document_chunks (id, project_id, document_id, generation, chunk_index, page,
                           content, embedding)
                       VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
                       ON CONFLICT (document_id, generation, chunk_index) DO UPDATE SET
                           page = EXCLUDED.page, content = EXCLUDED.content, embedding = EXCLUDED.embedding""",
                    [(ids.new_id(ids.CHUNK), project_id, document_id, generation, c.index, c.page, c.content, v)
                     for c, v in zip(chunks, vectors, strict=True)],
                )
            count_row = conn.execute(
                """UPDATE documents SET updated_at = now(), indexed_chunks =
                       (SELECT count(*) FROM document_chunks WHERE document_id = %s AND generation = %s)
                   WHERE id = %s RETURNING indexed_chunks""",
                (document_id, generation, document_id),
            ).fetchone()
            return int(count_row["indexed_chunks"]) if count_row else 0

    def finalize(self, project_id: str, document_id: str, generation: int) -> str | None:
        with self._db.connection() as conn:
            row = conn.execute(
                """UPDATE documents SET active_generation = %s, status = 'ready', error = NULL,
                       indexed_chunks = (SELECT count(*) FROM document_chunks WHERE document_id = %s AND generation = %s),
                       updated_at = now()
                   WHERE project_id = %s AND id = %s AND ingest_generation = %s AND status = 'processing'
                   RETURNING path""",
                (generation, document_id, generation, project_id, document_id, generation),
            ).fetchone()
            if row is None:
                return None
            conn.execute(
                "DELETE FROM document_chunks WHERE document_id = %s AND generation <> %s", (document_id, generation)
            )
            return str(row["path"])

    def mark_failed(self, project_id: str, document_id: str, generation: int | None, error: str) -> bool:
        with self._db.connection() as conn:
            cur = conn.execute(
                """UPDATE documents SET status = 'failed', error = %s, updated_at = now()
                   WHERE project_id = %s AND id = %s AND (%s::int IS NULL OR ingest_generation = %s)
                     AND status <> 'ready'""",
                (error, project_id, document_id, generation, generation),
            )
            if cur.rowcount == 1 and generation is not None:
                conn.execute(
                    "DELETE FROM document_chunks WHERE document_id = %s AND generation = %s"
                    " AND generation <> (SELECT active_generation FROM documents WHERE id = %s)",
                    (document_id, generation, document_id),
                )
            return cur.rowcount == 1
