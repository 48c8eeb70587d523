"""SQL of the episode side of search: the conversation turns of the searched memories
(``include: ["episodes"]``), a third source of the fused ranking.

An episode is in scope when its memory is (the memory ids, or a memory whose own tags match: an
episode has no tags of its own) and, with ``as_of``, when it was said by then. Its keyword signal
is BM25F over the whole transcript (``search_tokens``, migration 0009) and, as a second field, the
turns around it (``context``, migration 0013, kept by ``episode_context.py``); its
vector signal is its best window (table ``episode_windows``: vectors over windows that cover the
whole turn, :func:`memory_engine.domain.turns.window_spans`), and that window's text is what a
result shows as ``content``. Neighbours are the turns before and after it in its conversation.
"""

from __future__ import annotations

from typing import Any, Final

import psycopg

from memory_engine.adapters.postgres import search_sql
from memory_engine.adapters.postgres.database import Row
from memory_engine.adapters.postgres.lanes import PlanValue
from memory_engine.adapters.postgres.search_memories import memories_in_scope
from memory_engine.adapters.postgres.search_memories import scope_params as memory_scope_params
from memory_engine.adapters.postgres.search_sql import OPENING_CHARS, Params, SearchTable
from memory_engine.domain.entities import EMBED_WINDOW_CHARS
from memory_engine.domain.search_models import MemoryScope, ScoredKeys, SignalQuery
from memory_engine.domain.vectors import Vector

SOURCE: Final = "episode"

#: The nearest windows read per episode listed: an episode's windows near the query crowd the
#: scan (a long turn about the query has many), so the scan reads this many times the list's depth
#: and keeps each episode's best.
WINDOWS_PER_EPISODE: Final = 4

#: An episode's cosine to the query: its best window's (NULL without windows).
BEST_COSINE: Final = (
    "(SELECT max(1 - (w.embedding <=> %(embedding)s::vector)) FROM episode_windows w WHERE w.episode_id = ep.id)"
)

#: What a result reads of an episode (:func:`rows`): its turn's fields (the role and metadata of
#: an episode of one message, as the turns endpoint stores it) and the passage shown.
_ROW_COLUMNS = (
    "ep.id, ep.memory_id, ep.conversation_id, ep.turn_id, ep.occurred_at, ep.created_at,"
    " CASE WHEN jsonb_array_length(ep.messages) = 1 THEN ep.messages -> 0 ->> 'role' END AS role,"
    " CASE WHEN jsonb_array_length(ep.messages) = 1 THEN ep.messages -> 0 -> 'metadata' END AS metadata,"
    f" CASE WHEN %(embedding)s::vector IS NULL THEN NULL ELSE {BEST_COSINE} END AS similarity,"
    f" coalesce(substr(ep.transcript, passage.start_char + 1, passage.end_char - passage.start_char),"
    f" left(ep.transcript, {EMBED_WINDOW_CHARS})) AS content"
)

#: The passage of an episode a result shows: the window of its own transcript holding the most of
#: the query's lexemes, then the nearest to the query's vector, then the first (a window over the
#: turn before it spans the turn's one own window: the same passage, read once).
_PASSAGE = (
    "LEFT JOIN LATERAL (SELECT w.start_char, w.end_char FROM episode_windows w WHERE w.episode_id = ep.id"
    " AND w.read_episode_id IS NULL"
    " ORDER BY CASE WHEN %(text)s::text IS NULL THEN 0 ELSE (SELECT count(*) FROM unnest(to_tsvector('english',"
    " substr(ep.transcript, w.start_char + 1, w.end_char - w.start_char))) l"
    " WHERE l.lexeme = ANY(tsvector_to_array(to_tsvector('english', %(text)s::text)))) END DESC,"
    " w.embedding <=> %(embedding)s::vector NULLS LAST, w.window_index LIMIT 1) passage ON true"
)

EPISODES: Final = SearchTable(
    SOURCE, "episodes", "ep", from_sql="episodes ep", row_columns=_ROW_COLUMNS, owners=("ep",),
    row_from=f"episodes ep {_PASSAGE}", cosine=BEST_COSINE, context=True,
)

#: A turn's place in its conversation (as the turns endpoint lists them).
_TURN_AT = "coalesce({a}.occurred_at, {a}.created_at)"


def scope_sql(scope: MemoryScope, alias: str = "ep") -> str:
    """The WHERE clause of "an episode of the searched memories" over ``alias`` (``episodes`` or
    ``episode_windows``: both have the scope columns)."""
    a = alias
    parts = [f"{a}.project_id = %(project_id)s", "(" + " OR ".join(memories_in_scope(scope, f"{a}.memory_id") or ["false"]) + ")"]
    if scope.as_of is not None:
        parts.append(f"({a}.occurred_at IS NULL OR {a}.occurred_at <= %(as_of)s)")
    return " AND ".join(parts)


def scope_params(project_id: str, scope: MemoryScope) -> Params:
    return memory_scope_params(project_id, scope)


def _turn_sql(row: str, scope: MemoryScope, direction: str) -> str:
    """Ids of the episodes right before (``<``) or after (``>``) ``row`` in its conversation."""
    order = "DESC" if direction == "<" else "ASC"
    at_p, at_row = _TURN_AT.format(a="p"), _TURN_AT.format(a=row)
    return (
        f"SELECT p.id FROM episodes p WHERE p.memory_id = {row}.memory_id AND p.conversation_id = {row}.conversation_id"  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
        f" AND ({at_p}, p.id) {direction} ({at_row}, {row}.id) AND {scope_sql(scope, 'p')}"
        f" ORDER BY {at_p} {order}, p.id {order} LIMIT %(window)s"
    )


def _neighbours(scope: MemoryScope) -> str:
    """The episodes within ``%(window)s`` of each of ``%(top)s`` in its conversation."""
    return search_sql.neighbours_of_top("episodes", "conversation_id", _turn_sql("c", scope, "<"), _turn_sql("c", scope, ">"))


#: The start of the message of an episode of one message, where a turn written as
#: ``"<speaker>: <text>"`` names who said it, and its role (a user's turn is the user's:
#: domain.entries.USER); both read by the candidates' ``subjects``, NULL for an episode of several
#: messages, whose transcript is ``role: content`` lines.
OPENING: Final = (
    f"CASE WHEN jsonb_array_length(ep.messages) = 1 THEN left(ep.messages -> 0 ->> 'content', {OPENING_CHARS}) END AS opening,"
    " CASE WHEN jsonb_array_length(ep.messages) = 1 THEN ep.messages -> 0 ->> 'role' END AS role"
)


def _candidate_columns(scope: MemoryScope) -> str:
    """``valid_from`` (when it was said: the recency and date features read it as a fact's),
    ``prev_ids`` (up to ``%(window)s`` episodes before it in its conversation, nearest first) and
    ``opening`` and ``role`` (:data:`OPENING`: its speaker, as a fact's ``subjects``)."""
    prev = (f"CASE WHEN ep.conversation_id IS NULL OR %(window)s = 0 THEN NULL"
            f" ELSE ARRAY({_turn_sql('ep', scope, '<')}) END AS prev_ids")
    return f"ep.occurred_at AS valid_from, {prev}, {OPENING}"


class EpisodesInScope(search_sql.ScopedSource[MemoryScope]):
    """:class:`search_sql.ScopedSource` over the episodes in scope, whose vector signal reads the
    windows (:func:`window_vector`)."""

    def vector(self, conn: psycopg.Connection[Any], project_id: str, scope: MemoryScope, q: SignalQuery) -> ScoredKeys:
        return window_vector(conn, project_id, scope, q)


def window_vector(conn: psycopg.Connection[Any], project_id: str, scope: MemoryScope, q: SignalQuery) -> ScoredKeys:
    """The ``q.depth`` episodes in scope with the nearest windows, each by its best window's cosine."""
    sql = (
        "SELECT id, distance FROM (SELECT w.episode_id AS id, min(w.distance) AS distance FROM ("  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
        f" SELECT w.episode_id, w.embedding <=> %(embedding)s::vector AS distance FROM episode_windows w"
        f" WHERE {scope_sql(scope, 'w')} ORDER BY w.embedding <=> %(embedding)s::vector LIMIT %(windows)s) w"
        " GROUP BY w.episode_id) best ORDER BY distance, id LIMIT %(depth)s"
    )
    params = scope_params(project_id, scope) | {
        "embedding": q.embedding, "depth": PlanValue(q.depth), "windows": PlanValue(q.depth * WINDOWS_PER_EPISODE),
    }
    rows = conn.execute(sql, params).fetchall()
    return ScoredKeys(search_sql.keys(EPISODES, rows), [1.0 - float(r["distance"]) for r in rows])


#: The signals, statistics and candidate reads over the episodes in scope.
EPISODES_IN_SCOPE: Final = EpisodesInScope(
    EPISODES, scope_sql, scope_params, neighbours=_neighbours, columns=_candidate_columns,
)
scope_size, vector, keyword = EPISODES_IN_SCOPE.scope_size, EPISODES_IN_SCOPE.vector, EPISODES_IN_SCOPE.keyword
candidate_rows = EPISODES_IN_SCOPE.candidate_rows


def rows(conn: psycopg.Connection[Any], project_id: str, ids: list[str], embedding: Vector | None,
         text: str | None) -> list[Row]:
    """The result rows of ``ids`` in the project, each with its passage for the query ``text``."""
    sql = f"SELECT {_ROW_COLUMNS} FROM {EPISODES.row_from} WHERE ep.project_id = %(project_id)s AND ep.id = ANY(%(ids)b::text[])"  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
    return conn.execute(sql, {"project_id": PlanValue(project_id), "ids": ids, "embedding": embedding,
                              "text": text}).fetchall()


def first_window_rows(
    conn: psycopg.Connection[Any], project_id: str, scope: MemoryScope, embedding: Vector | None, limit: int
) -> list[Row]:
    """The deprecated ``episodes`` list: the episodes in scope nearest to ``embedding`` by their
    own vector (their first window's), most recent first without one."""
    where = scope_sql(scope)
    if embedding is not None:
        where += " AND ep.embedding IS NOT NULL"
        order = "ep.embedding <=> %(embedding)s::vector, ep.id"
    else:
        order = "ep.occurred_at DESC NULLS LAST, ep.created_at DESC, ep.id DESC"
    sql = (
        "SELECT ep.id, ep.memory_id, ep.conversation_id, ep.turn_id, ep.occurred_at, ep.transcript,"  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
        f" {search_sql.similarity('ep')} AS similarity"
        f" FROM episodes ep WHERE {where} ORDER BY {order} LIMIT %(limit)s"
    )
    params = scope_params(project_id, scope) | {"embedding": embedding, "limit": PlanValue(limit)}
    return conn.execute(sql, params).fetchall()
