"""Bulk-load ready documents (one ``whole`` chunk each) straight into the schema.

Used by the SciFact evaluation and the latency benchmark, which need thousands of searchable
chunks without running the ingestion pipeline (that has its own tests and benchmark).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memory_engine import ids
from memory_engine.adapters.postgres.database import Database


@dataclass(frozen=True)
class DocumentText:
    path: str
    content: str
    title: str | None = None
    metadata: dict[str, Any] | None = None


def insert_whole_documents(
    database: Database, project_id: str, documents: Sequence[DocumentText], embeddings: Sequence[Any], *,
    batch: int = 500,
) -> list[str]:
    """Insert each document as ``ready`` with one chunk (index 0, generation 0); returns doc ids."""
    if len(documents) != len(embeddings):
        raise ValueError("one embedding per document")
    from psycopg.types.json import Jsonb

    doc_ids: list[str] = []
    with database.connection() as conn:
        for start in range(0, len(documents), batch):
            part = documents[start : start + batch]
            doc_rows, chunk_rows = [], []
            for doc, vector in zip(part, embeddings[start : start + batch], strict=True):
                doc_id = ids.new_id(ids.DOCUMENT)
                doc_ids.append(doc_id)
                doc_rows.append((
                    doc_id, project_id, doc.path, doc.title, "text/plain", len(doc.content.encode()),
                    Jsonb(doc.metadata) if doc.metadata is not None else None,
                ))
                chunk_rows.append((ids.new_id(ids.CHUNK), project_id, doc_id, doc.content, vector))
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO documents (id, project_id, path, title, content_type, size_bytes, metadata,"
                    " chunk_strategy, status, total_pages, total_chunks, indexed_chunks)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, 'whole', 'ready', 1, 1, 1)",
                    doc_rows,
                )
                cur.executemany(
                    "INSERT INTO document_chunks (id, project_id, document_id, generation, chunk_index, page, content,"
                    " embedding) VALUES (%s, %s, %s, 0, 0, NULL, %s, %s)",
                    chunk_rows,
                )
    return doc_ids
