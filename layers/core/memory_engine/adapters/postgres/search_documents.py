"""SQL of the document-chunk side of search.

A chunk is searchable when its generation is its document's ``active_generation`` and the
document is ``ready`` -- or is being re-ingested (``ingest_generation`` ahead of the active
one), in which case the previous complete generation keeps answering until the pointer flips.
"""

from __future__ import annotations

from typing import Any, Final

import psycopg

from memory_engine.adapters.postgres import search_sql
from memory_engine.adapters.postgres.database import Row
from memory_engine.adapters.postgres.lanes import PlanValue
from memory_engine.adapters.postgres.search_sql import Params, SearchTable
from memory_engine.domain.search_models import DocumentScope
from memory_engine.domain.vectors import Vector

SOURCE: Final = "document"

#: A chunk is read with its document (path, title, tags) and is searchable by the document's state.
CHUNKS: Final = SearchTable(
    SOURCE, "document_chunks", "c", from_sql="document_chunks c JOIN documents d ON d.id = c.document_id",
    row_columns=(
        "c.id, c.content, c.document_id, d.path, d.title, c.page, c.chunk_index, d.tags, d.metadata,"
        f" {search_sql.similarity('c')} AS similarity"
    ),
    owners=("c", "d"),
)


def scope_sql(scope: DocumentScope) -> str:
    parts = [
        "c.project_id = %(project_id)s",
        "d.project_id = %(project_id)s",
        "c.generation = d.active_generation",
        "(d.status = 'ready' OR d.ingest_generation > d.active_generation)",
    ]
    if scope.document_ids:
        parts.append("d.id = ANY(%(document_ids)b::text[])")
    if scope.path_patterns:
        parts.append("d.path LIKE ANY(%(path_patterns)b::text[])")
    return " AND ".join(parts)


def scope_params(project_id: str, scope: DocumentScope) -> Params:
    return {
        "project_id": PlanValue(project_id),
        "document_ids": PlanValue(list(scope.document_ids)),
        "path_patterns": PlanValue(list(scope.path_patterns)),
    }


def _project_hits(scope: DocumentScope) -> tuple[str, str] | None:
    # The whole project's documents: rows are found and counted on the chunk table alone, and the
    # document's state (ready, active generation) is checked for the best of them only.
    if scope.document_ids or scope.path_patterns:
        return None
    return "document_chunks c", "c.project_id = %(project_id)s"




def rows(conn: psycopg.Connection[Any], project_id: str, ids: list[str], embedding: Vector | None) -> list[Row]:
    return search_sql.rows_by_id(conn, CHUNKS, project_id, ids, embedding)


#: The chunks within ``%(window)s`` of each of ``%(top)s`` in its document (same generation).
_NEIGHBOURS = (
    " UNION SELECT n.id FROM document_chunks t JOIN document_chunks n ON n.document_id = t.document_id"
    " AND n.generation = t.generation AND n.chunk_index BETWEEN t.chunk_index - %(window)s AND t.chunk_index + %(window)s"
    " WHERE t.id = ANY(%(top)b::text[]) AND t.project_id = %(project_id)s"
)
#: The chunks before ``c`` in its document, nearest first, at most ``%(window)s``.
_PREVIOUS = (
    "ARRAY(SELECT p.id FROM document_chunks p WHERE p.document_id = c.document_id AND p.generation = c.generation"
    " AND p.chunk_index < c.chunk_index AND p.chunk_index >= c.chunk_index - %(window)s ORDER BY p.chunk_index DESC)"
    " AS prev_ids"
)


#: The signals, statistics and candidate reads over the searchable chunks in scope.
CHUNKS_IN_SCOPE: Final = search_sql.ScopedSource[DocumentScope](
    CHUNKS, scope_sql, scope_params, neighbours=lambda scope: _NEIGHBOURS, columns=lambda scope: _PREVIOUS,
    hits=_project_hits,
)
scope_size, vector, keyword = CHUNKS_IN_SCOPE.scope_size, CHUNKS_IN_SCOPE.vector, CHUNKS_IN_SCOPE.keyword
candidate_rows = CHUNKS_IN_SCOPE.candidate_rows


def ordered_rows(conn: psycopg.Connection[Any], project_id: str, scope: DocumentScope, limit: int) -> list[Row]:
    """No-query read: chunks in reading order (document path, then ``chunk_index``)."""
    return search_sql.rows_in_order(conn, CHUNKS, scope_sql(scope), scope_params(project_id, scope),
                                    order="d.path, c.chunk_index, c.id", limit=limit)
