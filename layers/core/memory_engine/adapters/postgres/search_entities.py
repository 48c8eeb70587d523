"""SQL of the entity signal: the query's anchor entities, the hub rule, and the facts they touch.

An entity link records its fact's memory (migration 0015): a search of memories named by id counts
and reads the links of those memories alone, so an entity the project's other memories mention
often is judged by what the searched ones hold (a project of one memory per user). A scope that
names memory tags also holds facts by their own tags, in any memory: its links are read project-wide.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from memory_engine.adapters.postgres import search_sql
from memory_engine.adapters.postgres.lanes import PlanValue
from memory_engine.adapters.postgres.search_memories import FACTS, TSQUERY_SQL, VECTORS, scope_params, scope_sql
from memory_engine.adapters.postgres.search_sql import Params
from memory_engine.domain.search_models import MemoryScope, ResultKey, SignalQuery

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
#: linked: each anchor's links in the searched memories (``{ee_links}``, :func:`links_in`), read from
#: the entity index alone, at most ``HUB_MAX_DEGREE + 1``: beyond the cap it is a hub (the fan-out
#: reads the same links), under ``HUB_MIN_DEGREE`` it cannot be one.
_LINKED = (
    "SELECT f.id, f.ord, (SELECT count(*) FROM (SELECT 1 FROM entry_entities ee WHERE ee.entity_id = f.id{ee_links}"
    " LIMIT %(hub_max)s + 1) l) AS links FROM found f"
)
#: degrees: the live facts *in the scope* (at most ``HUB_MAX_DEGREE + 1``) of the anchors in between
#: whose links could make a hub by share of the scope's ``%(size)s`` at all (an anchor's facts in
#: scope are at most its links: in a large scope none is counted).
_DEGREES = (
    "SELECT l.id, (SELECT count(DISTINCT x.entry_id) FROM (SELECT ee.entry_id FROM entry_entities ee"
    " JOIN memory_entries e ON e.id = ee.entry_id WHERE ee.entity_id = l.id{ee_links} AND {where}"
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


def links_in(scope: MemoryScope, alias: str) -> str:
    """The condition on the links of ``alias`` that keeps those of the searched memories: a scope of
    memories by id reads theirs alone (the ``(entity_id, memory_id)`` index); one naming memory tags
    reads the project's (its facts may be in any memory, by their own tags)."""
    return "" if scope.tag_patterns else f" AND {alias}.memory_id = ANY(%(memory_ids)b::text[])"


#: The nearest entities of the project read for the similar anchors of a search of memories by id,
#: of which the ``entity_top_k`` linked in those memories are kept: the pgvector default
#: ``ef_search``, one pass over the entities' graph, which a ``LIMIT`` of 3 reads as well.
SIMILAR_POOL = 40


def _nearest(scope: MemoryScope) -> str:
    """The project's entities nearest the query, as ``n (id, distance)``: ``entity_top_k`` of them;
    in a search of memories by id, those linked in them among the ``SIMILAR_POOL`` nearest."""
    linked = links_in(scope, "ee")
    limit = f"greatest(%(top_k)s, {SIMILAR_POOL})" if linked else "%(top_k)s"
    nearest = ("SELECT id, embedding <=> %(embedding)s::vector AS distance FROM entities"  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
               " WHERE project_id = %(project_id)s AND embedding IS NOT NULL"
               f" ORDER BY embedding <=> %(embedding)s::vector LIMIT {limit}")
    keep = f" WHERE EXISTS (SELECT 1 FROM entry_entities ee WHERE ee.entity_id = n.id{linked})" if linked else ""  # noqa: S608 - fixed fragments; the memory ids are a PlanValue quoted into the text by psycopg (lanes)
    return f"({nearest}) n{keep}"


def _found(q: SignalQuery, scope: MemoryScope) -> str:
    """``found (id, ord)``: the entities the query names (exact normalized name at word
    boundaries, ``%(names)s``) first, then the ``entity_top_k`` whose embedding is at least
    ``entity_min_similarity`` to the query, nearest first: in a search of memories by id, the
    nearest linked in them among the project's ``SIMILAR_POOL`` nearest."""
    parts = []
    if q.entity_names:
        parts.append("SELECT id, row_number() OVER (ORDER BY id) AS ord FROM entities"
                     " WHERE project_id = %(project_id)s AND name = ANY(%(names)b::text[])")
    if q.embedding is not None and q.entity_top_k > 0:
        parts.append(
            "SELECT id, 1000000 + row_number() OVER (ORDER BY distance, id) AS ord FROM ("  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
            f" SELECT n.id, n.distance FROM {_nearest(scope)}"
            " ORDER BY n.distance, n.id LIMIT %(top_k)s) near"
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
        f"WITH found AS ({_GIVEN}), {_hub_steps(scope)} SELECT id, hub FROM split ORDER BY ord",  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
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
_LINKS = "SELECT ee.entry_id FROM entry_entities ee WHERE ee.entity_id = ANY(ARRAY(SELECT id FROM anchors)){ee_links}"
#: direct: every fact in scope touching an anchor, the ``depth`` most relevant. All of them are
#: ranked, however old and whichever memories the anchors' other links are in (at most
#: ``HUB_MAX_DEGREE`` an anchor), their distances computed exactly and sorted (an ``ORDER BY
#: embedding <=> q`` alone would let the planner walk the whole table's HNSW graph for those rows).
_DIRECT = (
    "SELECT e.id, {relevance} AS distance FROM memory_entries e WHERE {where}"
    " AND e.id IN (SELECT entry_id FROM links) ORDER BY distance NULLS LAST, e.id LIMIT %(depth)s"
)
#: bridges: only when the direct facts do not fill the list, the other entities (neither anchors
#: nor hubs) of the ``BRIDGE_FACTS`` best direct facts, least connected first (their degree in the
#: searched memories counted up to ``DEGREE_CAP``), at most ``BRIDGE_ENTITIES``.
_BRIDGES = (
    "SELECT ee.entity_id, (SELECT count(*) FROM (SELECT 1 FROM entry_entities x WHERE x.entity_id = ee.entity_id{x_links}"  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
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
    " WHERE {where}{ee_links} AND e.id NOT IN (SELECT id FROM direct) GROUP BY e.id"
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


def _hub_steps(scope: MemoryScope) -> str:
    return _HUB_STEPS.format(where=scope_sql(scope), ee_links=links_in(scope, "ee"))


def _entity_steps(scope: MemoryScope, q: SignalQuery) -> str:
    return _ENTITY_STEPS.format(where=scope_sql(scope), relevance=_relevance(q), ee_links=links_in(scope, "ee"),
                                x_links=links_in(scope, "x"))


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
    sql = (
        f"WITH found AS MATERIALIZED ({_found(q, scope)}), {_hub_steps(scope)},"  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
        " anchors AS (SELECT id FROM split WHERE NOT hub), hubs AS (SELECT id FROM split WHERE hub),"
        f" {_entity_steps(scope, q)}"
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
        f" {_entity_steps(scope, q)}"
    )
    params = _entity_params(project_id, scope, q) | {"anchors": anchors, "hubs": list(hubs or [])}
    return search_sql.keys(FACTS, conn.execute(sql, params).fetchall())


