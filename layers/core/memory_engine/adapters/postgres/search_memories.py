"""SQL of the memory-fact side of search: scope filter, the three signals, recency, rows.

Every statement is filtered by ``project_id``. Without ``as_of`` the filter says
``invalidated_at IS NULL`` literally so the planner can use the partial (live-only) HNSW index.
What both sides of search share is in :mod:`search_sql`.
"""

from __future__ import annotations

from dataclasses import dataclass
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


#: How many of the best direct facts lend their other entities as one-hop bridges, and how many
#: bridge entities (least connected first: "breaking bad" before "user") are followed.
BRIDGE_FACTS = 10
BRIDGE_ENTITIES = 3
#: Only entities touching fewer facts than this are followed as bridges: a hub bridges to
#: everything, which is no signal (and unbounded work).
DEGREE_CAP = 25

#: An anchor is a HUB, and the entity signal skips it, when it touches more than this share of the
#: live facts in the searched scope: its facts are then "most of the memory by cosine", a near copy
#: of the vector list (LoCoMo's speakers, an agent memory's "user"), not a specific thing named ...
HUB_SHARE = 0.2
#: ... and at least this many of them, so a small memory is never judged by shares;
HUB_MIN_DEGREE = 20
#: or when it touches more than this many, whatever the scope's size. It bounds the entity
#: statement's work (every link of an anchor is ranked: at most this many facts an anchor) and both
#: counts of :func:`split_hubs`: an anchor's links and its facts in scope are counted up to this + 1.
HUB_MAX_DEGREE = 100

#: The hub rule as steps of a statement (CTEs), over ``found (id, ord)``, the anchors in order:
#: linked: each anchor's links in the project, read from the entity index alone, at most
#: ``HUB_MAX_DEGREE + 1``: beyond the cap it is a hub (the fan-out reads links project-wide too),
#: under ``HUB_MIN_DEGREE`` it cannot be one.
_LINKED = (
    "SELECT f.id, f.ord, (SELECT count(*) FROM (SELECT 1 FROM entry_entities ee WHERE ee.entity_id = f.id"
    " LIMIT %(hub_max)s + 1) l) AS links FROM found f"
)
#: degrees: the live facts *in the scope* (at most ``HUB_MAX_DEGREE + 1``) of the anchors in between
#: whose links could make a hub by share of the scope's ``%(size)s`` at all (an anchor's facts in
#: scope are at most its links: in a large scope none is counted).
_DEGREES = (
    "SELECT l.id, (SELECT count(DISTINCT x.entry_id) FROM (SELECT ee.entry_id FROM entry_entities ee"
    " JOIN memory_entries e ON e.id = ee.entry_id WHERE ee.entity_id = l.id AND {where}"
    " LIMIT %(hub_max)s + 1) x) AS degree FROM linked l"
    " WHERE l.links BETWEEN %(hub_min)s AND %(hub_max)s AND l.links > %(hub_share)s * %(size)s"
)
#: split: each anchor in order, and whether it is a hub.
_SPLIT = (
    "SELECT l.id, l.ord, l.links > %(hub_max)s"
    " OR coalesce(d.degree >= %(hub_min)s AND d.degree > %(hub_share)s * %(size)s, false) AS hub"
    " FROM linked l LEFT JOIN degrees d USING (id)"
)
_HUB_STEPS = f"linked AS MATERIALIZED ({_LINKED}), degrees AS MATERIALIZED ({_DEGREES}), split AS MATERIALIZED ({_SPLIT})"


@dataclass(frozen=True)
class HubRule:
    """The hub rule's bounds (a search adapter's ``SearchLimits`` may narrow the defaults above)."""

    share: float = HUB_SHARE
    min_degree: int = HUB_MIN_DEGREE
    max_degree: int = HUB_MAX_DEGREE

    def params(self, size: int) -> Params:
        """The rule's parameters in a scope of ``size`` live facts (the cap is a ``LIMIT``: written in)."""
        return {"size": size, "hub_share": self.share, "hub_min": self.min_degree, "hub_max": PlanValue(self.max_degree)}


#: The anchors given in order (``%(anchors)s``), as ``found``.
_GIVEN = "SELECT id, ord FROM unnest(%(anchors)b::text[]) WITH ORDINALITY a(id, ord)"


def _found(q: SignalQuery) -> str:
    """``found (id, ord)``: the entities the query names (exact normalized name at word
    boundaries, ``%(names)s``) first, then the ``entity_top_k`` whose embedding is at least
    ``entity_min_similarity`` to the query, nearest first."""
    parts = []
    if q.entity_names:
        parts.append("SELECT id, row_number() OVER (ORDER BY id) AS ord FROM entities"
                     " WHERE project_id = %(project_id)s AND name = ANY(%(names)b::text[])")
    if q.embedding is not None and q.entity_top_k > 0:
        parts.append(
            "SELECT id, 1000000 + row_number() OVER (ORDER BY distance, id) AS ord FROM ("
            " SELECT id, embedding <=> %(embedding)s::vector AS distance FROM entities"
            " WHERE project_id = %(project_id)s AND embedding IS NOT NULL"
            " ORDER BY embedding <=> %(embedding)s::vector LIMIT %(top_k)s) near"
            " WHERE 1 - distance >= %(min_similarity)s"
        )
    if not parts:
        return "SELECT NULL::text AS id, 0::bigint AS ord WHERE false"
    return f"SELECT id, min(ord) AS ord FROM ({' UNION ALL '.join(parts)}) f GROUP BY id"  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound


def split_hubs(
    conn: psycopg.Connection[Any], project_id: str, scope: MemoryScope, anchors: list[str], *, size: int,
    hubs: HubRule = HubRule(),
) -> tuple[list[str], list[str]]:
    """``(specific, hubs)``: the anchors in their order, split by the hub rule ``hubs`` in a scope of
    ``size`` live facts (the search adapter's cached scope statistics). The entity signal runs the
    same steps inside its own statement (:func:`entity_signal`)."""
    if not anchors:
        return [], []
    rows = conn.execute(
        f"WITH found AS ({_GIVEN}), {_HUB_STEPS.format(where=scope_sql(scope))} SELECT id, hub FROM split ORDER BY ord",  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
        scope_params(project_id, scope) | hubs.params(size) | {"anchors": anchors},
    ).fetchall()
    return [r["id"] for r in rows if not r["hub"]], [r["id"] for r in rows if r["hub"]]


#: The parts of the entity statement (:func:`entity`), one per CTE. ``{where}`` is the scope,
#: ``{relevance}`` a row's distance to the query (lower is better).
#:
#: links: every link of the anchors, read by entity (the anchors are not hubs, so each has at most
#: ``HUB_MAX_DEGREE`` links), in a step of its own: a row limit next to ``entity_id = ANY(anchors)``
#: may let PostgreSQL walk the primary key ``(entry_id, ...)`` backwards, which reads every link of
#: the table when the anchors have few (220-460 ms at 1M facts; docs/retrieval.md, "Latency").
_LINKS = "SELECT ee.entry_id FROM entry_entities ee WHERE ee.entity_id = ANY(ARRAY(SELECT id FROM anchors))"
#: direct: every fact in scope touching an anchor, the ``depth`` most relevant. All of them are
#: ranked, however old and whichever memories the anchors' other links are in (at most
#: ``HUB_MAX_DEGREE`` an anchor), their distances computed exactly and sorted (an ``ORDER BY
#: embedding <=> q`` alone would let the planner walk the whole table's HNSW graph for those rows).
_DIRECT = (
    "SELECT e.id, {relevance} AS distance FROM memory_entries e WHERE {where}"
    " AND e.id IN (SELECT entry_id FROM links) ORDER BY distance NULLS LAST, e.id LIMIT %(depth)s"
)
#: bridges: only when the direct facts do not fill the list, the other entities (neither anchors
#: nor hubs) of the ``BRIDGE_FACTS`` best direct facts, least connected first (their degree
#: counted up to ``DEGREE_CAP``), at most ``BRIDGE_ENTITIES``.
_BRIDGES = (
    "SELECT ee.entity_id, (SELECT count(*) FROM (SELECT 1 FROM entry_entities x WHERE x.entity_id = ee.entity_id"  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
    f" LIMIT {DEGREE_CAP}) capped) AS degree"
    " FROM entry_entities ee WHERE (SELECT count(*) FROM direct) < %(depth)s"
    f" AND ee.entry_id IN (SELECT id FROM direct ORDER BY distance NULLS LAST, id LIMIT {BRIDGE_FACTS})"
    " AND ee.entity_id NOT IN (SELECT id FROM anchors) AND ee.entity_id NOT IN (SELECT id FROM hubs)"
    f" GROUP BY ee.entity_id ORDER BY degree, ee.entity_id LIMIT {BRIDGE_ENTITIES}"
)
#: specific: the bridges under the degree cap (a bridge to everything is no signal).
_SPECIFIC = f"SELECT entity_id, degree FROM bridges WHERE degree < {DEGREE_CAP}"  # noqa: S608 - fixed fragments and module constants; values are bound parameters
#: hop: the facts in scope one specific bridge away, not already direct, with the degree of their
#: most specific bridge and their best relevance.
_HOP = (
    "SELECT e.id, min(b.degree) AS degree, min({relevance}) AS distance"
    " FROM memory_entries e JOIN entry_entities ee ON ee.entry_id = e.id JOIN specific b ON b.entity_id = ee.entity_id"
    " WHERE {where} AND e.id NOT IN (SELECT id FROM direct) GROUP BY e.id"
)
#: The direct tier first, then the hop tier by bridge degree; by relevance within each.
_TIERS = (
    "SELECT id FROM (SELECT id, 0 AS tier, 0 AS degree, distance FROM direct"
    " UNION ALL SELECT id, 1, degree, distance FROM hop) ranked"
    " ORDER BY tier, degree, distance NULLS LAST, id LIMIT %(depth)s"
)
#: After ``anchors (id)`` and ``hubs (id)``.
_ENTITY_STEPS = (
    f"links AS MATERIALIZED ({_LINKS}), direct AS MATERIALIZED ({_DIRECT}), bridges AS ({_BRIDGES}),"
    f" specific AS ({_SPECIFIC}), hop AS ({_HOP}) {_TIERS}"
)


def _relevance(q: SignalQuery) -> str:
    if q.embedding is not None:
        return search_sql.distance("e", VECTORS)  # NULL (ranked last) for a fact without a vector
    return f"(-ts_rank(e.search_tsv, {TSQUERY_SQL}))" if q.text is not None else "0"


def _entity_params(project_id: str, scope: MemoryScope, q: SignalQuery) -> Params:
    return scope_params(project_id, scope) | {
        "embedding": q.embedding, "text": q.text, "strict": q.keyword_strict, "depth": PlanValue(q.depth),
    }


def entity_signal(
    conn: psycopg.Connection[Any], project_id: str, scope: MemoryScope, q: SignalQuery, *, size: int,
    hubs: HubRule = HubRule(),
) -> list[ResultKey]:
    """The entity signal in one statement: the query's anchors (:func:`_found`), split by the hub
    rule ``hubs`` in a scope of ``size`` live facts (:func:`split_hubs`), then :func:`entity` over them.
    One round trip instead of four (names, similar entities, link counts, list)."""
    if not q.entity_names and (q.embedding is None or q.entity_top_k <= 0):
        return []
    where = scope_sql(scope)
    sql = (
        f"WITH found AS MATERIALIZED ({_found(q)}), {_HUB_STEPS.format(where=where)},"  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
        " anchors AS (SELECT id FROM split WHERE NOT hub), hubs AS (SELECT id FROM split WHERE hub),"
        f" {_ENTITY_STEPS.format(where=where, relevance=_relevance(q))}"
    )
    params = _entity_params(project_id, scope, q) | {
        "names": list(q.entity_names), "top_k": PlanValue(q.entity_top_k), "min_similarity": q.entity_min_similarity,
    } | hubs.params(size)
    return search_sql.keys(FACTS, conn.execute(sql, params).fetchall())


def entity(
    conn: psycopg.Connection[Any], project_id: str, scope: MemoryScope, q: SignalQuery, anchors: list[str],
    hubs: list[str] | None = None,
) -> list[ResultKey]:
    """The entity list over given anchors (:func:`entity_signal` finds and splits them itself):
    every live fact touching an anchor, ordered by relevance to the query (cosine to its
    embedding; ``ts_rank`` when there is no embedding), never by row order; then, as a second
    tier, facts one hop away through the most specific other entities of the best direct facts
    (how "anything good on Netflix tonight?" reaches "user's favourite show is breaking bad"),
    only when the direct facts do not already fill the list (the tier would be cut anyway).
    ``hubs`` (see :func:`split_hubs`) are neither anchors nor bridges."""
    if not anchors:
        return []
    sql = (
        "WITH anchors AS (SELECT unnest(%(anchors)b::text[]) AS id), hubs AS (SELECT unnest(%(hubs)b::text[]) AS id),"
        f" {_ENTITY_STEPS.format(where=scope_sql(scope), relevance=_relevance(q))}"
    )
    params = _entity_params(project_id, scope, q) | {"anchors": anchors, "hubs": list(hubs or [])}
    return search_sql.keys(FACTS, conn.execute(sql, params).fetchall())


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

