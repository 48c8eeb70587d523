"""Each source's candidates are read as soon as its own lists are in (``lists_and_candidates``), with
the neighbours of that source's best rows: the ranking keeps those of the best rows overall, so the
page is the one the two phases one after the other give."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from memory_engine.adapters.postgres import search_documents as docs
from memory_engine.adapters.postgres import search_memories as mems
from memory_engine.adapters.postgres.database import Database
from memory_engine.adapters.postgres.search import PostgresKnowledgeIndex, SearchLimits
from memory_engine.bootstrap import Container
from memory_engine.domain.entries import NewEntry
from memory_engine.domain.fusion import within_reach
from memory_engine.domain.search_config import HYBRID
from memory_engine.domain.search_models import DocumentScope, MemoryScope, Scopes, SearchRequest, SignalQuery
from memory_engine.domain.search_plan import SearchPlan
from memory_engine.services.search_knowledge import search_knowledge
from tests.support.memories import write
from tests.support.search_seed import Seeder

TURNS = [
    "Did you book the ferry to Zanzibar?", "Yes, it leaves the harbour at dawn on Friday.",
    "Great, I will bring the spice list.", "The markets in Stone Town open late, so no rush.",
    "Should we take the early ferry back too?", "No, the afternoon one, after the beach.",
    "Fine. I packed the snorkel.", "And the sunscreen, the sun at the harbour is harsh.",
]
CHUNKS = [
    "Ferries to Zanzibar leave the Dar es Salaam harbour several times a day.", "The first ferry leaves at dawn.",
    "Tickets are sold at the harbour office.", "Stone Town's spice markets are busiest in the evening.",
    "Snorkelling trips leave from the north beaches.", "The afternoon ferry back is the least crowded.",
    "Bring sunscreen: the harbour has little shade.", "Travel insurance is recommended.",
]
#: Short lists and few expanded rows: the best two of each source are not the best two overall, and
#: their neighbours are rows no list has.
CONFIG = HYBRID.model_copy(update={"neighbour_expand": 2, "min_depth": 3, "depth_factor": 1})
LIMIT = 3
QUERY = "when does the ferry to zanzibar leave the harbour?"


@pytest.fixture(scope="module")
def world(container: Container) -> dict[str, Any]:
    seed = Seeder(container, "pipelined")
    memory = seed.memory("trip chat")
    for turn in TURNS:
        entry = NewEntry(memory_id=memory, content=turn, source_conversation_id="trip")
        write(container, project_id=seed.project_id, entry=entry, duplicate_threshold=1.0)
    seed.document("guides/zanzibar.md", CHUNKS)
    return {"project_id": seed.project_id, "memory": memory}


@pytest.fixture
def pool(database_url: str) -> Iterator[Database]:
    database = Database(database_url, min_size=1, max_size=2)
    yield database
    database.close()


def page(index: PostgresKnowledgeIndex, container: Container, w: dict[str, Any]) -> list[tuple[str, float]]:
    request = SearchRequest(query=QUERY, memory_ids=[w["memory"]], limit=LIMIT)  # and every document of the project
    response = search_knowledge(index, container.embedder, project_id=w["project_id"], request=request, config=CONFIG)
    return [(r.id, r.score) for r in response.results]


def test_reading_each_source_when_its_lists_are_in_gives_the_same_page(
    container: Container, world: dict[str, Any], pool: Database
) -> None:
    one_after_another = page(PostgresKnowledgeIndex(container.database, parallel=False), container, world)
    ids = [key for key, _ in one_after_another]
    assert any(i.startswith("ment_") for i in ids) and any(i.startswith("chunk_") for i in ids), ids  # both sources
    index = PostgresKnowledgeIndex(pool)
    try:
        assert page(index, container, world) == one_after_another
    finally:
        index.close()


def test_the_superset_read_is_cut_to_the_neighbours_of_the_best_overall(
    container: Container, world: dict[str, Any], pool: Database
) -> None:
    index = PostgresKnowledgeIndex(pool)
    query = SignalQuery(text=QUERY, embedding=container.embedder.embed_query(QUERY), signals=CONFIG.signals,
                        depth=CONFIG.depth(LIMIT), entity_top_k=CONFIG.entity_top_k, ef_search=CONFIG.ef_search)
    scopes = Scopes(MemoryScope(memory_ids=(world["memory"],)), DocumentScope())
    plan = SearchPlan(query, scopes, CONFIG)
    try:
        ranked, read = index.lists_and_candidates(world["project_id"], plan)
    finally:
        index.close()
    top = plan.expanded(ranked)
    assert plan.window == CONFIG.neighbour_window and len(top) == CONFIG.neighbour_expand
    kept = within_reach(read, ranked, top, plan.window)
    # each source expanded its own best two, so more rows were read than the best two overall reach
    assert set(kept) < set(read)
    # and what is kept is what reading after ranking both sources finds
    serial = PostgresKnowledgeIndex(container.database, parallel=False)
    assert kept == serial.candidates(world["project_id"], scopes, ranked, query.embedding, top=top, window=plan.window)


def test_a_read_split_between_free_connections_gives_the_same_page(
    container: Container, world: dict[str, Any], pool: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    one_after_another = page(PostgresKnowledgeIndex(container.database, parallel=False), container, world)
    # Given slices of a single row may be read apart, and the documents' vector list comes in last,
    # after the memory's candidates were read (so the other connection has nothing left to run): it
    # waits for that read, then a moment for its connection to go back to the lanes
    slow_vector = docs.vector
    memory_read = threading.Event()

    def late(*args: Any, **kwargs: Any) -> Any:
        assert memory_read.wait(timeout=60), "the memory's candidates were never read"
        time.sleep(0.05)
        return slow_vector(*args, **kwargs)

    monkeypatch.setattr(docs, "vector", late)
    reads: dict[str, list[int]] = {"memory": [], "document": []}
    for source, module in (("memory", mems), ("document", docs)):
        original = module.candidate_rows

        def counted(*args: Any, _original: Any = original, _source: str = source, **kwargs: Any) -> Any:
            reads[_source].append(len(kwargs["ids"]))
            try:
                return _original(*args, **kwargs)
            finally:
                if _source == "memory":
                    memory_read.set()

        monkeypatch.setattr(module, "candidate_rows", counted)
    index = PostgresKnowledgeIndex(pool, limits=SearchLimits(min_read_slice=1))
    try:
        # Then the search gives the page the phases one after the other give
        assert page(index, container, world) == one_after_another
    finally:
        index.close()
    # And the documents' rows were read in two statements at once, the memory's in one
    assert len(reads["document"]) == 2 and len(reads["memory"]) == 1, reads
