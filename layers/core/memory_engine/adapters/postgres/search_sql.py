"""The SQL both sides of search share, parameterised by the source's table and scope.

A :class:`SearchTable` says where one source's rows live (memory facts, document chunks); the
statements below take it plus the source's scope filter (a WHERE clause over the table's alias
and the parameters it names) and run the same way for both. What only one side has (the entity
signal and conversation neighbours of facts, the document order of chunks) stays in
``search_memories`` / ``search_documents``.

Every statement is built from this module's constants and the scope modules' fixed clauses (hence
the ``S608`` acknowledgements); values are parameters. Those that decide a statement's plan (the
scope, the row counts of its ``LIMIT`` s) are marked :class:`lanes.PlanValue` where the parameters
are made, and a search transaction writes them into the text as literals quoted by psycopg; the
others (the query's text and vector, ids, statistics) are always bound.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar

import psycopg

from memory_engine.adapters.postgres import bm25
from memory_engine.adapters.postgres.database import Row
from memory_engine.adapters.postgres.lanes import PlanValue
from memory_engine.domain.search_models import DocumentScope, MemoryScope, ResultKey, ScoredKeys, SignalQuery, SourceType
from memory_engine.domain.vectors import Vector

#: The named parameters of a statement.
Params = dict[str, Any]
Scope = TypeVar("Scope", MemoryScope, DocumentScope)

#: How much of a turn's message a candidate read returns for its speaker (the candidates'
#: ``opening``): a speaker prefix is at most 60 characters and its colon (domain.entries.speaker_of).
OPENING_CHARS: Final = 80

#: The no-embedding entity ordering ORs the query's lexemes minus those in more than this share
#: of the rows (planner statistics): they rank nothing.
COMMON_SHARE: Final = 0.02


def neighbours_of_top(table: str, conversation: str, before: str, after: str) -> str:
    """A ``UNION`` branch for a candidate read's ``picked`` ids: the rows of ``table`` (aliased ``c``
    in ``before``/``after``, the statements of the rows just before and after ``c`` in its
    conversation) around each of ``%(top)s`` whose ``conversation`` column is set."""
    return (
        f" UNION SELECT n.id FROM {table} c CROSS JOIN LATERAL (({before}) UNION ALL ({after})) n"  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
        f" WHERE c.id = ANY(%(top)b::text[]) AND c.project_id = %(project_id)s AND c.{conversation} IS NOT NULL"
    )


@dataclass(frozen=True)
class SearchTable:
    """Where one source's searchable rows live.

    ``table`` holds the ``embedding`` and ``search_tsv`` columns under ``alias``; ``from_sql``
    adds what the scope filter joins; ``row_from`` what a result row reads (``row_columns``),
    with ``owners`` the aliases whose ``project_id`` a read by id checks; ``cosine`` how a row's
    cosine to ``%(embedding)s`` is computed ("": the best of its ``vectors``; an episode's is its
    best window's); ``vectors`` its vector columns (a fact's ``embedding`` and, for a turn embedded
    with its context, ``own_embedding``: migration 0011), each scanned by the vector signal;
    ``context`` whether its rows have the context field (weight B of ``search_tsv`` and
    ``context_tokens``: a fact's neighbouring turns, the second field of BM25F)."""

    source: SourceType
    table: str
    alias: str
    from_sql: str
    row_columns: str
    owners: tuple[str, ...] = field(default=())
    row_from: str = ""  # "": from_sql
    cosine: str = ""
    context: bool = False
    vectors: tuple[str, ...] = ("embedding",)

    def __post_init__(self) -> None:
        if not self.row_from:
            object.__setattr__(self, "row_from", self.from_sql)
        if not self.cosine:
            object.__setattr__(self, "cosine", f"1 - {distance(self.alias, self.vectors)}")


def distance(alias: str, vectors: Sequence[str] = ("embedding",)) -> str:
    """The cosine distance of row ``alias`` to ``%(embedding)s``: of its nearest vector column of
    ``vectors`` (``least`` skips a NULL one; NULL when the row has none)."""
    each = [f"{alias}.{column} <=> %(embedding)s::vector" for column in vectors]
    return f"({each[0]})" if len(each) == 1 else f"least({', '.join(each)})"


def similarity(alias: str, vectors: Sequence[str] = ("embedding",)) -> str:
    """The cosine of row ``alias`` to ``%(embedding)s`` (its best of ``vectors``), NULL when either
    has no vector."""
    return (
        f"CASE WHEN %(embedding)s::vector IS NULL OR {alias}.{vectors[0]} IS NULL THEN NULL"
        f" ELSE 1 - {distance(alias, vectors)} END"
    )


def tags_match(column: str) -> str:
    """True when a tag of the ``text[]`` ``column`` matches a pattern of ``%(tag_patterns)s`` (LIKE)."""
    return f"EXISTS (SELECT 1 FROM unnest({column}) tag WHERE tag LIKE ANY(%(tag_patterns)b::text[]))"  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound


def in_tagged_memories(column: str) -> str:
    """True when the memory id ``column`` names a memory of the project whose own tags match."""
    return (
        f"{column} IN (SELECT m.id FROM memories m WHERE m.project_id = %(project_id)s"  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
        f" AND {tags_match('m.tags')})"
    )


def tsquery_sql(table: str) -> str:
    """The ORed tsquery of a search's lexemes minus those the column's statistics put in more than
    :data:`COMMON_SHARE` of the rows (the rarest is always kept); ``websearch_to_tsquery`` as
    written when the caller used its syntax. Only the no-embedding entity ordering uses it."""
    return f"""(CASE WHEN %(strict)s THEN websearch_to_tsquery('english', %(text)s) ELSE (
        WITH stats AS MATERIALIZED ({bm25.column_stats_sql(table)}
        ), lexemes AS (
            SELECT l.lexeme, coalesce((SELECT s.freqs[array_position(s.elems, l.lexeme)] FROM stats s), 0) AS df
            FROM unnest(to_tsvector('english', %(text)s)) l
        ), kept AS (
            SELECT lexeme FROM lexemes WHERE df <= {COMMON_SHARE}
            UNION (SELECT lexeme FROM lexemes ORDER BY df, lexeme LIMIT 1)
        )
        SELECT coalesce(string_agg(quote_literal(lexeme), ' | '), '')::tsquery FROM kept
    ) END)"""  # noqa: S608 - fixed fragments and module constants; values are bound parameters


def keys(table: SearchTable, rows: Sequence[Row]) -> list[ResultKey]:
    return [(table.source, row["id"]) for row in rows]


# --- signals ---------------------------------------------------------------------------------


def vector(conn: psycopg.Connection[Any], table: SearchTable, where: str, params: Params, q: SignalQuery) -> ScoredKeys:
    """The ``q.depth`` nearest rows within ``where`` with their cosine similarity, best first: a
    nearest-neighbour scan of each of the table's ``vectors`` (its own index each), a row found by
    two scans counted once at its nearer vector (the ``depth`` best by that are among the rows
    the scans return)."""
    a = table.alias
    # relaxed_order iterative scans may return rows slightly out of order: re-sort outside.
    scans = " UNION ALL ".join(
        f"(SELECT {a}.id, {a}.{column} <=> %(embedding)s::vector AS distance"  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
        f" FROM {table.from_sql} WHERE {where} AND {a}.{column} IS NOT NULL"
        f" ORDER BY {a}.{column} <=> %(embedding)s::vector LIMIT %(depth)s)"
        for column in table.vectors
    )
    if len(table.vectors) > 1:
        scans = f"SELECT id, min(distance) AS distance FROM ({scans}) each GROUP BY id"  # noqa: S608 - fixed fragments and module constants
    sql = f"SELECT id, distance FROM ({scans}) hits ORDER BY distance, id LIMIT %(depth)s"  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
    rows = conn.execute(sql, params | {"embedding": q.embedding, "depth": PlanValue(q.depth)}).fetchall()
    return ScoredKeys(keys(table, rows), [1.0 - float(r["distance"]) for r in rows])


def keyword(
    conn: psycopg.Connection[Any], table: SearchTable, where: str, params: Params, q: SignalQuery,
    stats: bm25.ScopeStats, column: bm25.ColumnStats, *, hits_from: str | None = None, hits_scope: str | None = None,
    limits: bm25.KeywordLimits = bm25.KeywordLimits(),
) -> ScoredKeys:
    """The ``q.depth`` best rows within ``where`` by BM25 (:mod:`bm25`), with their scores and the
    query's idf map; ``stats`` are the scope's ``(N, avgdl, avgcl)``, ``column`` the table's lexeme shares;
    ``hits_from``/``hits_scope`` and ``limits`` as in :func:`bm25.keyword_sql`."""
    sql = bm25.keyword_sql(table=table.table, alias=table.alias, from_sql=table.from_sql, scope_sql=where,
                           hits_from=hits_from, hits_scope=hits_scope, strict=q.keyword_strict,
                           local=bm25.counts_locally(stats[0], column, limits), limits=limits, context=table.context)
    return bm25.rank(conn, sql, params, source=table.source, table=table.table, q=q, stats=stats, column=column)


def scope_size(conn: psycopg.Connection[Any], table: SearchTable, where: str, params: Params) -> bm25.ScopeStats:
    """``(N, avgdl, avgcl)`` of the scope for BM25: its rows and their mean ``search_tokens``."""
    return bm25.scope_stats(conn, alias=table.alias, from_sql=table.from_sql, scope_sql=where, params=params,
                            context=table.context)


@dataclass(frozen=True)
class Scoring:
    """What a candidate row is scored with: the query's vector, its keyword statistics (``idfs``,
    ``avgdl``), and the rows whose cosine / BM25 a signal already returned (not computed again)."""

    embedding: Vector | None
    idfs: dict[str, float]
    avgdl: float
    avgcl: float
    known_similarity: Sequence[str] = ()
    known_bm25: Sequence[str] = ()


@dataclass(frozen=True)
class ScopedSource(Generic[Scope]):
    """What both sources run alike, over one source's table and scope filter (``where(scope)``
    and the ``params(project_id, scope)`` it names): the vector and keyword signals, the scope's
    BM25 statistics, the candidate reads. ``hits`` may give a cheaper superset of the scope to
    find keyword hits by (:func:`bm25.keyword_sql`); ``neighbours`` and ``columns`` are the
    source's part of :func:`candidate_rows`."""

    table: SearchTable
    where: Callable[[Scope], str]
    params: Callable[[str, Scope], Params]
    neighbours: Callable[[Scope], str]
    columns: Callable[[Scope], str]
    hits: Callable[[Scope], tuple[str, str] | None] = lambda scope: None

    def scope_size(self, conn: psycopg.Connection[Any], project_id: str, scope: Scope) -> bm25.ScopeStats:
        """``(N, avgdl, avgcl)`` of the scope for BM25: its rows and their mean ``search_tokens``."""
        return scope_size(conn, self.table, self.where(scope), self.params(project_id, scope))

    def vector(self, conn: psycopg.Connection[Any], project_id: str, scope: Scope, q: SignalQuery) -> ScoredKeys:
        """The nearest rows in scope with their cosine similarity, best first."""
        return vector(conn, self.table, self.where(scope), self.params(project_id, scope), q)

    def keyword(
        self, conn: psycopg.Connection[Any], project_id: str, scope: Scope, q: SignalQuery, stats: bm25.ScopeStats,
        column: bm25.ColumnStats, *, limits: bm25.KeywordLimits = bm25.KeywordLimits(),
    ) -> ScoredKeys:
        """The best rows in scope by BM25, with their scores and the query's idf map."""
        hits_from, hits_scope = self.hits(scope) or (None, None)
        return keyword(conn, self.table, self.where(scope), self.params(project_id, scope), q, stats, column,
                       hits_from=hits_from, hits_scope=hits_scope, limits=limits)

    def candidate_rows(
        self, conn: psycopg.Connection[Any], project_id: str, scope: Scope, ids: list[str], top: list[str], *,
        window: int, scoring: Scoring,
    ) -> list[Row]:
        """What fusion reads of the rows ``ids`` and of the neighbours (``window`` steps) of
        ``top``: ``similarity``, ``bm25``, ``prev_ids`` (the rows before it, nearest first) and
        the source's own columns. Rows out of scope are dropped."""
        return candidate_rows(conn, self.table, self.where(scope), self.params(project_id, scope), ids=ids, top=top,
                              window=window, scoring=scoring, neighbours=self.neighbours(scope),
                              columns=self.columns(scope))


# --- rows ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExtraColumn:
    """A column a source adds to its row read (module constants): ``column`` over the row, computed
    from the statement's first step ``step`` (a CTE), with its own ``params``."""

    step: str
    column: str
    params: Params


def rows_by_id(
    conn: psycopg.Connection[Any], table: SearchTable, project_id: str, ids: list[str], embedding: Vector | None,
    *, extra: ExtraColumn | None = None,
) -> list[Row]:
    """The result rows of ``ids`` in the project (in no particular order), with ``similarity`` (and
    ``extra``'s column)."""
    owned = " AND ".join(f"{owner}.project_id = %(project_id)s" for owner in table.owners)
    first, column, params = (f"WITH {extra.step} ", f", {extra.column}", extra.params) if extra else ("", "", {})
    sql = (
        f"{first}SELECT {table.row_columns}{column} FROM {table.row_from}"  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
        f" WHERE {owned} AND {table.alias}.id = ANY(%(ids)b::text[])"
    )
    return conn.execute(sql, {**params, "project_id": PlanValue(project_id), "ids": ids, "embedding": embedding}).fetchall()


def rows_in_order(
    conn: psycopg.Connection[Any], table: SearchTable, where: str, params: Params, *, order: str, limit: int
) -> list[Row]:
    """No-query read: the first ``limit`` result rows within ``where`` by ``order``."""
    sql = f"SELECT {table.row_columns} FROM {table.row_from} WHERE {where} ORDER BY {order} LIMIT %(limit)s"  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
    return conn.execute(sql, params | {"limit": PlanValue(limit), "embedding": None}).fetchall()


def candidate_rows(
    conn: psycopg.Connection[Any], table: SearchTable, where: str, params: Params, *, ids: list[str],
    top: list[str], window: int, scoring: Scoring, neighbours: str, columns: str,
) -> list[Row]:
    """``ids`` plus the rows ``neighbours`` (a ``UNION SELECT`` over ``%(top)s``, or ``""``) adds,
    those within ``where``, with ``similarity`` and ``bm25`` (:func:`bm25.score_columns`) and the
    source's own ``columns``."""
    a = table.alias
    scores = bm25.score_columns(a, with_bm25=bool(scoring.idfs), context=table.context, cosine=table.cosine)
    sql = (
        f"WITH picked AS (SELECT unnest(%(ids)b::text[]) AS id{neighbours if window > 0 and top else ''})"  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
        f" SELECT {a}.id, {scores}, {columns}"
        f" FROM {table.from_sql} WHERE {a}.id IN (SELECT id FROM picked) AND {where}"
    )
    params = params | {"ids": ids, "top": top, "window": PlanValue(window)} | bm25.score_params(
        scoring.embedding, scoring.idfs, scoring.avgdl, scoring.avgcl, scoring.known_similarity, scoring.known_bm25)
    return conn.execute(sql, params).fetchall()
