"""SQL of the document-chunk side of search.

A chunk is searchable when its generation is its document's ``active_generation`` and the
document is ``ready`` -- or is being re-ingested (``ingest_generation`` ahead of the active
one), in which case the previous complete generation keeps answering until the pointer flips.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import psycopg

from memory_engine.adapters.postgres import bm25
from memory_engine.domain.search_models import DocumentScope, ScoredKeys, SignalQuery

SOURCE: Final = "document"

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


def scope_size(conn: psycopg.Connection[Any], project_id: str, scope: DocumentScope) -> tuple[int, float]:
    """``(N, avgdl)`` of the scope for BM25: searchable chunks and their mean ``length(search_tsv)``."""
    return bm25.scope_stats(conn, alias="c", from_sql=FROM_SQL, scope_sql=scope_sql(scope),
                            params=scope_params(project_id, scope))


def vector(conn: psycopg.Connection[Any], project_id: str, scope: DocumentScope, q: SignalQuery) -> ScoredKeys:
    sql = (
        f"SELECT id, distance FROM (SELECT c.id, c.embedding <=> %(embedding)s::vector AS distance FROM {FROM_SQL}"
        f" WHERE {scope_sql(scope)} AND c.embedding IS NOT NULL"
        " ORDER BY c.embedding <=> %(embedding)s::vector LIMIT %(depth)s) hits ORDER BY distance, id"
    )
    params = scope_params(project_id, scope) | {"embedding": q.embedding, "depth": q.depth}
    rows = conn.execute(sql, params).fetchall()
    return ScoredKeys([(SOURCE, r["id"]) for r in rows], [1.0 - float(r["distance"]) for r in rows])


def keyword(
    conn: psycopg.Connection[Any], project_id: str, scope: DocumentScope, q: SignalQuery, stats: tuple[int, float]
) -> ScoredKeys:
    # The whole project's documents: rows are found and counted on the chunk table alone, and the
    # document's state (ready, active generation) is checked for the best of them only.
    narrow = bool(scope.document_ids or scope.path_patterns)
    sql = bm25.keyword_sql(
        table="document_chunks", alias="c", from_sql=FROM_SQL, scope_sql=scope_sql(scope),
        hits_from=None if narrow else "document_chunks c", hits_scope=None if narrow else "c.project_id = %(project_id)s",
    )
    return bm25.rank(conn, sql, scope_params(project_id, scope), source=SOURCE, q=q, stats=stats)


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


def candidate_rows(
    conn: psycopg.Connection[Any], project_id: str, scope: DocumentScope, ids: list[str], top: list[str], *,
    embedding: Any, idfs: dict[str, float], avgdl: float, window: int, known_similarity: Sequence[str] = (),
    known_bm25: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """What fusion reads of the chunks ``ids`` and of the chunks within ``window`` of each of
    ``top`` in its document: ``similarity``, ``bm25`` and ``prev_ids`` (the chunks before it,
    nearest first). Chunks out of scope are dropped."""
    expand = ""
    if window > 0 and top:
        expand = (
            " UNION SELECT n.id FROM document_chunks t JOIN document_chunks n ON n.document_id = t.document_id"
            " AND n.generation = t.generation AND n.chunk_index BETWEEN t.chunk_index - %(window)s AND t.chunk_index + %(window)s"
            " WHERE t.id = ANY(%(top)s::text[]) AND t.project_id = %(project_id)s"
        )
    prev = (
        "ARRAY(SELECT p.id FROM document_chunks p WHERE p.document_id = c.document_id AND p.generation = c.generation"
        " AND p.chunk_index < c.chunk_index AND p.chunk_index >= c.chunk_index - %(window)s ORDER BY p.chunk_index DESC)"
    )
    sql = (
        f"WITH picked AS (SELECT unnest(%(ids)s::text[]) AS id{expand})"
        f" SELECT c.id, {bm25.score_columns('c', with_bm25=bool(idfs))}, {prev} AS prev_ids FROM {FROM_SQL}"
        f" WHERE c.id IN (SELECT id FROM picked) AND {scope_sql(scope)}"
    )
    params = scope_params(project_id, scope) | {"ids": ids, "top": top, "window": window} | bm25.score_params(
        embedding, idfs, avgdl, known_similarity, known_bm25)
    return conn.execute(sql, params).fetchall()


def ordered_rows(conn: psycopg.Connection[Any], project_id: str, scope: DocumentScope, limit: int) -> list[dict[str, Any]]:
    """No-query read: chunks in reading order (document path, then ``chunk_index``)."""
    sql = (
        f"SELECT {ROW_COLUMNS} FROM {FROM_SQL} WHERE {scope_sql(scope)}"
        " ORDER BY d.path, c.chunk_index, c.id LIMIT %(limit)s"
    )
    params = scope_params(project_id, scope) | {"limit": limit, "embedding": None}
    return conn.execute(sql, params).fetchall()
