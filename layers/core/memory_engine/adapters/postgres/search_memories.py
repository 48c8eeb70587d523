"""SQL of the memory-fact side of search: scope filter, the three signals, recency, rows.

Every statement is filtered by ``project_id``. Without ``as_of`` the filter says
``invalidated_at IS NULL`` literally so the planner can use the partial (live-only) HNSW index.
What both sides of search share is in :mod:`search_sql`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

import psycopg

from memory_engine.adapters.postgres import search_sql
from memory_engine.adapters.postgres.database import Row
from memory_engine.adapters.postgres.entry_sql import ENTITIES_OF, not_expired
from memory_engine.adapters.postgres.lanes import PlanValue
from memory_engine.adapters.postgres.search_restatements import PAGE_STATEMENTS, RESTATED_WITH
from memory_engine.adapters.postgres.search_sql import OPENING_CHARS, ExtraColumn, Params, SearchTable
from memory_engine.domain.query_text import periods
from memory_engine.domain.search_models import MemoryScope, ResultKey, SignalQuery
from memory_engine.domain.vectors import Vector

SOURCE: Final = "memory"

#: A fact's vectors: a turn embedded with its context also keeps its own (migration 0011); its
#: cosine to a query is the better of the two.
VECTORS: Final = ("embedding", "own_embedding")
#: A fact is filtered on its own row and read with its memory's name.
FACTS: Final = SearchTable(
    SOURCE, "memory_entries", "e", from_sql="memory_entries e", row_from="memory_entries e JOIN memories m ON m.id = e.memory_id",
    row_columns=(
        "e.id, e.content, e.memory_id, m.name AS memory_name, e.tags, e.metadata, e.valid_from, e.valid_to,"
        " e.created_at, e.updated_at, e.source_conversation_id, e.source_generation_id, e.source_event_id, e.subject,"
        " e.predicate, e.object, e.confidence, e.source_quote, e.source_type, e.invalidated_at,"
        f" {search_sql.similarity('e', VECTORS)} AS similarity,"
        f" {ENTITIES_OF.format(alias='e')} AS entities"  # the one listing the entry routes use
    ),
    owners=("e", "m"),
    context=True,
    vectors=VECTORS,
)

TSQUERY_SQL: Final = search_sql.tsquery_sql("memory_entries")
#: Most recent first: when the fact held (else was written), then when it was written.
RECENT_ORDER: Final = "coalesce(e.valid_from, e.created_at) DESC, e.created_at DESC, e.id DESC"


def memories_in_scope(scope: MemoryScope, column: str) -> list[str]:
    """The alternatives (ORed) of "in a searched memory" for the memory id ``column``."""
    which = []
    if scope.memory_ids:
        which.append(f"{column} = ANY(%(memory_ids)b::text[])")
    if scope.tag_patterns:
        which.append(search_sql.in_tagged_memories(column))
    return which


def scope_sql(scope: MemoryScope, alias: str = "e") -> str:
    """The WHERE clause of "a live, confident enough fact in the searched memories" (a fact is in
    them when its memory is, or when its own tags match)."""
    a = alias
    parts = [f"{a}.project_id = %(project_id)s", f"{a}.confidence >= %(min_confidence)s"]
    which = memories_in_scope(scope, f"{a}.memory_id")
    if scope.tag_patterns:
        which.append(search_sql.tags_match(f"{a}.tags"))
    parts.append("(" + " OR ".join(which or ["false"]) + ")")
    parts.append(not_expired(a))  # nothing expired is ever returned, before or after the sweep
    if scope.as_of is None:
        parts.append(f"{a}.invalidated_at IS NULL")
    else:
        parts.append(f"({a}.invalidated_at IS NULL OR {a}.invalidated_at > %(as_of)s)")
        parts.append(f"({a}.valid_from IS NULL OR {a}.valid_from <= %(as_of)s)")
        parts.append(f"({a}.valid_to IS NULL OR {a}.valid_to > %(as_of)s)")
    return " AND ".join(parts)


def scope_params(project_id: str, scope: MemoryScope) -> Params:
    return {
        "project_id": PlanValue(project_id),
        "min_confidence": PlanValue(scope.min_confidence),
        "memory_ids": PlanValue(list(scope.memory_ids)),
        "tag_patterns": PlanValue(list(scope.tag_patterns)),
        "as_of": PlanValue(scope.as_of),
    }


#: At most this many facts of the named dates are ranked: a bound on the work when a period covers
#: much of a large memory ("in 2023"); which ones is then up to the plan (a day is rarely that full).
DATED_CAP = 1_000


def dated(conn: psycopg.Connection[Any], project_id: str, scope: MemoryScope, q: SignalQuery) -> list[ResultKey]:
    """Live facts in scope whose ``valid_from`` falls on a date the query names (``q.dates``, as
    UTC ranges: :func:`memory_engine.domain.query_text.periods`), nearest to the query first (most
    recent first without an embedding). Each range is one scan of the ``(memory_id, valid_from)``
    index; at most ``DATED_CAP`` facts are ranked. The date boost of fusion can only lift a row some
    list found, and a question that names a day ("what did we discuss on 11 December, 2023?")
    rarely shares words or meaning with that day's facts."""
    spans = periods(q.dates, now=datetime.now(UTC))
    if not spans:
        return []
    order = f"{search_sql.distance('e', VECTORS)} NULLS LAST, e.id" if q.embedding is not None else RECENT_ORDER
    sql = (
        "WITH dated AS MATERIALIZED (SELECT f.* FROM unnest(%(starts)s::timestamptz[], %(ends)s::timestamptz[]) r(lo, hi)"  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
        " CROSS JOIN LATERAL (SELECT e.id, e.embedding, e.own_embedding, e.valid_from, e.created_at FROM memory_entries e"
        f" WHERE {scope_sql(scope)} AND e.valid_from >= r.lo AND e.valid_from < r.hi LIMIT {DATED_CAP}) f LIMIT {DATED_CAP})"
        f" SELECT e.id FROM dated e ORDER BY {order} LIMIT %(depth)s"
    )
    params = scope_params(project_id, scope) | {
        "starts": [start for start, _ in spans], "ends": [end for _, end in spans], "embedding": q.embedding,
        "depth": PlanValue(q.depth),
    }
    return search_sql.keys(FACTS, conn.execute(sql, params).fetchall())


def recency(conn: psycopg.Connection[Any], project_id: str, scope: MemoryScope, limit: int) -> list[ResultKey]:
    """Live facts most recent first (the degraded mode's stand-in for the vector signal)."""
    sql = f"SELECT e.id FROM memory_entries e WHERE {scope_sql(scope)} ORDER BY {RECENT_ORDER} LIMIT %(limit)s"  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
    return search_sql.keys(FACTS, conn.execute(sql, scope_params(project_id, scope) | {"limit": PlanValue(limit)}).fetchall())


def rows(conn: psycopg.Connection[Any], project_id: str, ids: list[str], embedding: Vector | None, *,
         restated_at: float | None = None) -> list[Row]:
    """The result rows of ``ids``; with ``restated_at``, each with ``restated_with``: the ids of the
    others that state the same thing (:data:`search_restatements.RESTATED_WITH`, vectors at least
    that alike)."""
    extra = None if restated_at is None else ExtraColumn(PAGE_STATEMENTS, RESTATED_WITH, {"min_similarity": restated_at})
    return search_sql.rows_by_id(conn, FACTS, project_id, ids, embedding, extra=extra)


def recent_rows(conn: psycopg.Connection[Any], project_id: str, scope: MemoryScope, limit: int) -> list[Row]:
    """No-query read: live facts most recent first."""
    return search_sql.rows_in_order(conn, FACTS, scope_sql(scope), scope_params(project_id, scope),
                                    order=RECENT_ORDER, limit=limit)


def _neighbour_sql(row: str, alias: str, scope: MemoryScope, direction: str) -> str:
    """Ids of the live entries right before (``<``) or after (``>``) ``row`` in its conversation."""
    order = "DESC" if direction == "<" else "ASC"
    a = alias
    return (
        f"SELECT {a}.id FROM memory_entries {a} WHERE {a}.memory_id = {row}.memory_id"  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
        f" AND {a}.source_conversation_id = {row}.source_conversation_id"
        f" AND ({a}.created_at, {a}.id) {direction} ({row}.created_at, {row}.id) AND {scope_sql(scope, a)}"
        f" ORDER BY {a}.created_at {order}, {a}.id {order} LIMIT %(window)s"
    )


#: Who a fact is about, for the subject boost: its subject entities (normalized names), its
#: ``subject`` as written (an entity or not), and for a turn of a conversation (written with
#: ``source_conversation_id``, not extracted: domain.entries.is_turn) the start of its content,
#: where ``"<speaker>: <text>"`` names who said it (search_rows.subjects reads the last two).
_SUBJECTS = (
    "ARRAY(SELECT en.name FROM entry_entities ee JOIN entities en ON en.id = ee.entity_id"  # noqa: S608 - fixed fragments and a module constant
    " WHERE ee.entry_id = e.id AND ee.role = 'subject') AS subjects, e.subject,"
    " CASE WHEN e.source_conversation_id IS NOT NULL AND e.source_type <> 'extraction'"
    f" THEN left(e.content, {OPENING_CHARS}) END AS opening"
)


def _neighbours(scope: MemoryScope) -> str:
    """The live entries within ``%(window)s`` of each of ``%(top)s`` in its conversation."""
    return search_sql.neighbours_of_top("memory_entries", "source_conversation_id", _neighbour_sql("c", "p", scope, "<"),
                                        _neighbour_sql("c", "p", scope, ">"))


def _candidate_columns(scope: MemoryScope) -> str:
    """``valid_from``, ``prev_ids`` (up to ``%(window)s`` live entries before it in its
    conversation, nearest first) and who it is about (:data:`_SUBJECTS`)."""
    before = _neighbour_sql("e", "p", scope, "<")
    prev = f"CASE WHEN e.source_conversation_id IS NULL OR %(window)s = 0 THEN NULL ELSE ARRAY({before}) END AS prev_ids"
    return f"e.valid_from, {prev}, {_SUBJECTS}"


#: The signals, statistics and candidate reads over the live facts in scope.
FACTS_IN_SCOPE: Final = search_sql.ScopedSource[MemoryScope](
    FACTS, scope_sql, scope_params, neighbours=_neighbours, columns=_candidate_columns,
)
scope_size, vector, keyword = FACTS_IN_SCOPE.scope_size, FACTS_IN_SCOPE.vector, FACTS_IN_SCOPE.keyword
candidate_rows = FACTS_IN_SCOPE.candidate_rows

