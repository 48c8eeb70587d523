"""SQL of the document-chunk side of search.

A chunk is searchable when its generation is its document's ``active_generation`` and the
document is ``ready`` -- or is being re-ingested (``ingest_generation`` ahead of the active
one), in which case the previous complete generation keeps answering until the pointer flips.
"""

from __future__ import annotations

from typing import Any, Final

import psycopg

from memory_engine.adapters.postgres.search_memories import KEYWORD_SCAN_CAP, tsquery_sql
from memory_engine.domain.search_models import DocumentScope, ResultKey, SignalQuery

SOURCE: Final = "document"
TSQUERY_SQL = tsquery_sql("document_chunks")

FROM_SQL = "document_chunks c JOIN documents d ON d.id = c.document_id"


def scope_sql(scope: DocumentScope) -> str:
    parts = [
        "c.project_id = %(project_id)s",
        "d.project_id = %(project_id)s",
        "c.generation = d.active_generation",
        "(d.status = 'ready' OR d.ingest_generation > d.active_generation)",
    ]
    if scope.document_ids:
        parts.append("d.id = ANY(%(document_ids)s::text[])")
    if scope.path_patterns:
        parts.append("d.path LIKE ANY(%(path_patterns)s::text[])")
    return " AND ".join(parts)


def scope_params(project_id: str, scope: DocumentScope) -> dict[str, Any]:
    return {
        "project_id": project_id,
        "document_ids": list(scope.document_ids),
        "path_patterns": list(scope.path_patterns),
    }


def _keys(rows: list[dict[str, Any]]) -> list[ResultKey]:
    return [(SOURCE, row["id"]) for row in rows]


def vector(conn: psycopg.Connection[Any], project_id: str, scope: DocumentScope, q: SignalQuery) -> list[ResultKey]:
    sql = (
        f"SELECT id FROM (SELECT c.id, c.embedding <=> %(embedding)s::vector AS distance FROM {FROM_SQL}"
        f" WHERE {scope_sql(scope)} AND c.embedding IS NOT NULL"
        " ORDER BY c.embedding <=> %(embedding)s::vector LIMIT %(depth)s) hits ORDER BY distance, id"
    )
    params = scope_params(project_id, scope) | {"embedding": q.embedding, "depth": q.depth}
    return _keys(conn.execute(sql, params).fetchall())


def keyword(conn: psycopg.Connection[Any], project_id: str, scope: DocumentScope, q: SignalQuery) -> list[ResultKey]:
    sql = (
        f"WITH query AS MATERIALIZED (SELECT {TSQUERY_SQL} AS tsq),"
        f" matched AS (SELECT c.id, c.search_tsv FROM {FROM_SQL}, query"
        f" WHERE {scope_sql(scope)} AND c.search_tsv @@ query.tsq LIMIT {KEYWORD_SCAN_CAP})"
        " SELECT matched.id FROM matched, query ORDER BY ts_rank(matched.search_tsv, query.tsq) DESC, matched.id"
        " LIMIT %(depth)s"
    )
    params = scope_params(project_id, scope) | {"text": q.text, "strict": q.keyword_strict, "depth": q.depth}
    return _keys(conn.execute(sql, params).fetchall())


ROW_COLUMNS = (
    "c.id, c.content, c.document_id, d.path, d.title, c.page, c.chunk_index, d.tags, d.metadata,"
    " CASE WHEN %(embedding)s::vector IS NULL OR c.embedding IS NULL THEN NULL"
    " ELSE 1 - (c.embedding <=> %(embedding)s::vector) END AS similarity"
)


def rows(conn: psycopg.Connection[Any], project_id: str, ids: list[str], embedding: Any) -> list[dict[str, Any]]:
    sql = (
        f"SELECT {ROW_COLUMNS} FROM {FROM_SQL}"
        " WHERE c.project_id = %(project_id)s AND d.project_id = %(project_id)s AND c.id = ANY(%(ids)s::text[])"
    )
    return conn.execute(sql, {"project_id": project_id, "ids": ids, "embedding": embedding}).fetchall()


def ordered_rows(conn: psycopg.Connection[Any], project_id: str, scope: DocumentScope, limit: int) -> list[dict[str, Any]]:
    """No-query read: chunks in reading order (document path, then ``chunk_index``)."""
    sql = (
        f"SELECT {ROW_COLUMNS} FROM {FROM_SQL} WHERE {scope_sql(scope)}"
        " ORDER BY d.path, c.chunk_index, c.id LIMIT %(limit)s"
    )
    params = scope_params(project_id, scope) | {"limit": limit, "embedding": None}
    return conn.execute(sql, params).fetchall()
