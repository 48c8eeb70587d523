"""At realistic table sizes the search statements use their indexes, in the plans search runs
them with: generic plans with the scope written in (``lanes.searching``), EXPLAINed as the
prepared statement's generic plan (``EXPLAIN EXECUTE`` under ``force_generic_plan``)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import psycopg
import pytest
from psycopg.adapt import PyFormat, Transformer

from memory_engine.adapters.postgres import bm25, lanes
from memory_engine.adapters.postgres import search_documents as docs
from memory_engine.adapters.postgres import search_entities as ents
from memory_engine.adapters.postgres import search_memories as mems
from memory_engine.bootstrap import Container
from memory_engine.domain.query_text import DateMention
from memory_engine.domain.search_config import Signal
from memory_engine.domain.search_models import DocumentScope, MemoryScope, SignalQuery
from memory_engine.evaluation import synthetic
from tests.conftest import shared_data

ROWS = 10_000


class Explaining:
    """A connection stand-in that EXPLAINs each statement instead of running it: the plan search
    would run, the generic plan of the statement with its plan values written in, prepared."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.plans: list[dict[str, Any]] = []

    def execute(self, sql: str, params: Any = None) -> Explaining:
        query = lanes.with_plan_values(sql, params, self.conn)
        names = list(dict.fromkeys(m.group(1) for m in lanes.PLACEHOLDER.finditer(query)))
        numbered = lanes.PLACEHOLDER.sub(lambda m: f"${names.index(m.group(1)) + 1}", query).replace("%%", "%")
        # client-side binding: a utility statement takes no bound parameters, and $n are PREPARE's own
        probe = psycopg.ClientCursor(self.conn)
        probe.execute(f"PREPARE probe ({', '.join(_type_name(self.conn, params[n]) for n in names)}) AS {numbered}")
        row = probe.execute(
            f"EXPLAIN (FORMAT JSON) EXECUTE probe({', '.join(['%s'] * len(names))})", [params[n] for n in names]
        ).fetchone()
        probe.execute("DEALLOCATE probe")
        plan = row["QUERY PLAN"]
        self.plans.append(plan if isinstance(plan, list) else json.loads(plan))
        return self

    def fetchall(self) -> list[Any]:
        return []


def _type_name(conn: Any, value: Any) -> str:
    """The type psycopg sends ``value`` as (``unknown`` for NULL: PostgreSQL infers it)."""
    oid = Transformer(conn).get_dumper(value, PyFormat.AUTO).upgrade(value, PyFormat.AUTO).oid if value is not None else 0
    info = conn.adapters.types.get(oid)  # an array's oid finds its element's info
    return "unknown" if info is None else info.name + ("[]" if oid == info.array_oid else "")


def index_names(plan: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(plan, dict):
        if "Index Name" in plan:
            found.add(plan["Index Name"])
        for value in plan.values():
            found |= index_names(value)
    elif isinstance(plan, list):
        for value in plan:
            found |= index_names(value)
    return found


@pytest.fixture(scope="module")
def seeded(container: Container) -> dict[str, str]:
    corpus = shared_data("scifact", "corpus.jsonl")
    texts = synthetic.sentences(corpus, limit=ROWS)
    project_id = container.projects.get_or_create_project("plans").id
    memory_id = "mem_plans"
    with container.database.connection() as conn:
        conn.execute("INSERT INTO memories (id, project_id, name) VALUES (%s, %s, 'plans')", (memory_id, project_id))
    with synthetic.VectorIndexesDeferred(container.database):
        synthetic.load_facts(container.database, project_id, memory_id, texts, ROWS, dim=384)
        synthetic.load_chunks(container.database, project_id, texts, ROWS, dim=384)
    synthetic.analyze(container.database)
    return {"project_id": project_id, "memory_id": memory_id}


def explain(container: Container, fn: Any, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
    """The plans of the statements ``fn(connection, *args, **kwargs)`` runs, as search runs them."""
    with container.database.connection() as conn, lanes.searching(conn, 40):
        probe = Explaining(conn)
        fn(probe, *args, **kwargs)
    return probe.plans


def query(signal: Signal) -> SignalQuery:
    return SignalQuery(text="insulin resistance in adipose tissue", embedding=synthetic.random_query_vector(3, 384),
                       signals=frozenset({signal}), depth=30)


def scanned_whole(plan: Any, table: str) -> bool:
    """Whether the plan reads ``table`` with a sequential scan."""
    if isinstance(plan, dict):
        if plan.get("Node Type") == "Seq Scan" and plan.get("Relation Name") == table:
            return True
        return any(scanned_whole(value, table) for value in plan.values())
    return isinstance(plan, list) and any(scanned_whole(value, table) for value in plan)


def test_vector_queries_use_hnsw(container: Container, seeded: dict[str, str]) -> None:
    scope = MemoryScope(memory_ids=(seeded["memory_id"],))
    plans = explain(container, mems.vector, seeded["project_id"], scope, query(Signal.VECTOR))
    assert "memory_entries_embedding_live_idx" in index_names(plans)
    # and the turns' own vectors (none here: facts, no conversation) through the index of where they
    # are, not a read of the whole memory for rows that have one (78 ms at 100k facts: migration 0012)
    assert "memory_entries_own_scope_idx" in index_names(plans)
    assert not scanned_whole(plans, "memory_entries")
    assert "document_chunks_embedding_idx" in index_names(explain(
        container, docs.vector, seeded["project_id"], DocumentScope(), query(Signal.VECTOR)))


def test_keyword_queries_use_gin(container: Container, seeded: dict[str, str]) -> None:
    scope = MemoryScope(memory_ids=(seeded["memory_id"],))
    stats = (ROWS, 20.0, 40.0)
    with container.database.connection() as conn:
        fact_shares, chunk_shares = bm25.column_stats(conn, mems.FACTS.table), bm25.column_stats(conn, docs.CHUNKS.table)
    assert fact_shares.total > 0 and chunk_shares.total > 0  # analyzed: the statements see real shares
    # the probe answers plans, not rows: no statistics version to check
    fact_shares, chunk_shares = dataclasses.replace(fact_shares, analyzed=None), dataclasses.replace(chunk_shares, analyzed=None)
    assert "memory_entries_tsv_idx" in index_names(explain(
        container, mems.keyword, seeded["project_id"], scope, query(Signal.KEYWORD), stats, fact_shares))
    assert "document_chunks_tsv_idx" in index_names(explain(
        container, docs.keyword, seeded["project_id"], DocumentScope(), query(Signal.KEYWORD), stats, chunk_shares))


def test_a_named_period_reads_facts_through_the_valid_from_index(container: Container, seeded: dict[str, str]) -> None:
    # a day, a month and a year are ranges on (memory_id, valid_from), never a scan of the memory
    scope = MemoryScope(memory_ids=(seeded["memory_id"],))
    for mention in (DateMention(2023, 5, 8), DateMention(2023, 5, None), DateMention(2023, None, None)):
        q = dataclasses.replace(query(Signal.VECTOR), dates=(mention,))
        assert "memory_entries_live_idx" in index_names(explain(container, mems.dated, seeded["project_id"], scope, q))


def test_hub_degrees_walk_the_entity_index(container: Container, seeded: dict[str, str]) -> None:
    # the capped per-anchor counts start from the anchor's links, never from the scope's rows: an
    # anchor between the hub floor and cap, in a scope small enough for its facts to be counted
    scope = MemoryScope(memory_ids=(seeded["memory_id"],))
    with container.database.connection() as conn:
        row = conn.execute(
            "SELECT ee.entity_id FROM entry_entities ee GROUP BY ee.entity_id"
            f" HAVING count(*) BETWEEN {ents.HUB_MIN_DEGREE} AND {ents.HUB_MAX_DEGREE} ORDER BY count(*) DESC LIMIT 1"
        ).fetchone()
    assert row is not None
    plans = explain(container, ents.split_hubs, seeded["project_id"], scope, [row["entity_id"]], size=ents.HUB_MIN_DEGREE)
    degrees = [node for node in _nodes(plans) if node.get("Subplan Name") == "CTE degrees"]
    assert degrees and "entry_entities_entity_memory_idx" in index_names(degrees)


def test_the_anchor_fan_out_reads_the_anchors_links_from_the_entity_index(
    container: Container, seeded: dict[str, str]
) -> None:
    # two anchors with few links (the shape that walked the whole primary key backwards at 1M facts)
    with container.database.connection() as conn:
        rows = conn.execute(
            "SELECT ee.entity_id FROM entry_entities ee GROUP BY ee.entity_id ORDER BY count(*), ee.entity_id LIMIT 2"
        ).fetchall()
    anchors = [row["entity_id"] for row in rows]
    scope = MemoryScope(memory_ids=(seeded["memory_id"],))
    plans = explain(container, ents.entity, seeded["project_id"], scope, query(Signal.ENTITY), anchors, [])
    # the anchors' links are read by entity in a step of their own (with a row limit on that scan,
    # as the fan-out once had, the planner may walk the primary key, entry_id first, backwards:
    # every link of the table when the anchors have few, 220-460 ms at 1M facts)
    links = [node for node in _nodes(plans) if node.get("Subplan Name") == "CTE links"]
    assert links and {"entry_entities_entity_memory_idx"} == index_names(links)


def _nodes(plan: Any) -> list[dict[str, Any]]:
    if isinstance(plan, dict):
        return [plan, *(n for value in plan.values() for n in _nodes(value))]
    if isinstance(plan, list):
        return [n for value in plan for n in _nodes(value)]
    return []


def test_a_small_memory_is_planned_as_small(container: Container, seeded: dict[str, str]) -> None:
    # search's generic plans see the scope (written in): the keyword hits of a memory of 20 facts
    # in a table of 10k are not the GIN posting lists of the whole table, filtered
    small = "mem_plans_small"
    with container.database.connection() as conn:
        conn.execute("INSERT INTO memories (id, project_id, name) VALUES (%s, %s, 'small') ON CONFLICT DO NOTHING",
                     (small, seeded["project_id"]))
        conn.execute("UPDATE memory_entries SET memory_id = %s WHERE id IN (SELECT id FROM memory_entries"
                     " WHERE memory_id = %s ORDER BY id LIMIT 20)", (small, seeded["memory_id"]))
        conn.execute("ANALYZE memory_entries")
        shares = dataclasses.replace(bm25.column_stats(conn, mems.FACTS.table), analyzed=None)
    try:
        plans = explain(container, mems.keyword, seeded["project_id"], MemoryScope(memory_ids=(small,)),
                        query(Signal.KEYWORD), (20, 20.0, 40.0), shares)
        # (the GIN reads: the rows read, by the query's word pairs and by each word)
        hits = [node for node in _nodes(plans) if node.get("Subplan Name") == "CTE reads"]
        conditions = [node.get("Index Cond", "") for node in _nodes(hits)]
        # the memory's own rows (its id a literal the planner weighs), met with the lexeme's
        assert any(small in cond and "memory_id" in cond for cond in conditions), conditions
        assert "memory_entries_tsv_idx" in index_names(hits)
    finally:
        with container.database.connection() as conn:
            conn.execute("UPDATE memory_entries SET memory_id = %s WHERE memory_id = %s", (seeded["memory_id"], small))
            conn.execute("ANALYZE memory_entries")
