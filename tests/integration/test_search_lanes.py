"""The signal statements of one search run in lanes, one per pooled connection: the same lists as
one after another, on any pool size, the candidates and the page read on the same connections, and
a failing statement fails the search without keeping a connection."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from memory_engine.adapters.postgres import search_entities as ents
from memory_engine.adapters.postgres import search_memories as mems
from memory_engine.adapters.postgres.database import Database
from memory_engine.adapters.postgres.lanes import Lanes
from memory_engine.adapters.postgres.search import PostgresKnowledgeIndex
from memory_engine.bootstrap import Container
from memory_engine.domain.search_config import HYBRID, SearchConfig
from memory_engine.domain.search_models import SearchRequest
from memory_engine.errors import DatabaseError
from memory_engine.services.search_knowledge import search_knowledge
from tests.support.search_seed import Seeder


@pytest.fixture(scope="module")
def world(container: Container) -> dict[str, Any]:
    seed = Seeder(container, "lanes")
    mem = seed.memory("notes")
    seed.fact(mem, "the harbour ferry to zanzibar leaves at dawn", entities=(("zanzibar", "object"),))
    seed.fact(mem, "zanzibar spice markets open late", entities=(("zanzibar", "subject"),))
    seed.fact(mem, "the ferry ticket costs twelve dollars")
    seed.fact(mem, "dawn light over the harbour is the best for photos")
    seed.document("guides/zanzibar.md", ["Ferries to Zanzibar leave from the harbour at dawn."])
    return {"project_id": seed.project_id, "memory": mem}


@pytest.fixture
def pools(database_url: str) -> Iterator[dict[int, Database]]:
    made = {size: Database(database_url, min_size=1, max_size=size) for size in (1, 2, 5)}
    yield made
    for database in made.values():
        database.close()


def ranked(index: PostgresKnowledgeIndex, container: Container, w: dict[str, Any],
           config: SearchConfig = HYBRID) -> list[tuple[str, float]]:
    request = SearchRequest(query="when does the zanzibar ferry leave the harbour?", memory_ids=[w["memory"]], limit=10,
                            min_score=0)
    response = search_knowledge(index, container.embedder, project_id=w["project_id"], request=request, config=config)
    return [(r.id, r.score) for r in response.results]


def test_lanes_rank_as_statements_one_after_another(
    container: Container, world: dict[str, Any], pools: dict[int, Database]
) -> None:
    expected = ranked(PostgresKnowledgeIndex(pools[2], parallel=False), container, world)
    assert len(expected) >= 4  # facts and a chunk: every signal and both sources ran
    for size, database in pools.items():
        index = PostgresKnowledgeIndex(database)
        try:
            assert ranked(index, container, world) == expected, f"pool of {size}"
        finally:
            index.close()


@pytest.mark.parametrize(("module", "statement"), [(ents, "entity_signal"), (mems, "rows")],
                         ids=["entity_signal", "rows"])  # a signal's; the page's read, the last phase
def test_a_failing_statement_fails_the_search_and_returns_its_connection(
    container: Container, world: dict[str, Any], pools: dict[int, Database], monkeypatch: pytest.MonkeyPatch,
    module: ModuleType, statement: str,
) -> None:
    index = PostgresKnowledgeIndex(pools[2])

    def broken(conn: Any, *args: Any, **kwargs: Any) -> Any:
        conn.execute("SELECT * FROM no_such_table")

    try:
        with monkeypatch.context() as patch:
            patch.setattr(module, statement, broken)
            with pytest.raises(DatabaseError):
                ranked(index, container, world)
        # both connections are back in the pool and usable: the next search runs in full
        assert ranked(index, container, world) == ranked(PostgresKnowledgeIndex(pools[1], parallel=False), container, world)
    finally:
        index.close()


class CountedDatabase(Database):
    """A pool that counts the connections it hands out."""

    def __init__(self, url: str, max_size: int) -> None:
        super().__init__(url, min_size=1, max_size=max_size)
        self.taken = 0

    def connection(self) -> Any:
        self.taken += 1
        return super().connection()


@pytest.mark.parametrize("newer_first", [True, False], ids=["newer first", "ranking order"])
@pytest.mark.parametrize("size", [1, 2])
def test_a_search_reads_its_page_on_the_connections_its_ranking_holds(
    container: Container, world: dict[str, Any], database_url: str, size: int, newer_first: bool
) -> None:
    database = CountedDatabase(database_url, size)
    index = PostgresKnowledgeIndex(database, parallel=size > 1)
    config = HYBRID.model_copy(update={"newer_first": newer_first})
    try:
        # Given a hybrid search over facts and documents (five signal statements, candidate reads, the page)
        page = ranked(index, container, world, config)
        database.taken = 0
        # When it runs again
        assert ranked(index, container, world, config) == page
        # Then it took no connection beyond those of its lanes: the candidates, the page's rows and
        # which of its facts state the same thing are read in the transactions the signal
        # statements ran in
        assert database.taken == size
    finally:
        index.close()
        database.close()


def test_lanes_run_the_next_phase_on_the_connections_they_hold(database_url: str) -> None:
    database = CountedDatabase(database_url, 2)
    lanes = Lanes(database, max_workers=2)
    phases: list[list[str]] = []

    def backend(conn: Any) -> int:
        return int(conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"])

    def drained(done: dict[str, int]) -> dict[str, Any]:
        phases.append(sorted(done))
        return {"c": backend, "d": backend} if len(phases) == 1 else {}

    try:
        # When two tasks end and the next phase adds two more
        done = lanes.run({"a": backend, "b": backend}, 40, drained=drained)
        # Then the next phase was asked for once the first had ended, and once more after it
        assert phases == [["a", "b"], ["a", "b", "c", "d"]]
        # And every task ran on the two connections taken at the start
        assert sorted(done) == ["a", "b", "c", "d"] and database.taken == 2
        assert len(set(done.values())) <= 2
    finally:
        lanes.close()
        database.close()


def test_of_two_lanes_ending_the_last_tasks_at_once_exactly_one_asks_for_the_next_phase(database_url: str) -> None:
    database = Database(database_url, min_size=2, max_size=2)
    lanes = Lanes(database, max_workers=2)
    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads take turns as often as they can: a window between two locks shows
    try:
        for _ in range(300):
            both_done = threading.Barrier(2, timeout=30)
            asked: list[int] = []

            def then(name: str, answer: int, spare: int) -> dict[str, Any]:
                both_done.wait()  # the two tasks end together: both lanes count their task done at once
                return {}

            def drained(done: dict[str, int], asked: list[int] = asked) -> dict[str, Any]:
                asked.append(len(done))
                return {}

            # When two tasks on two lanes end at the same moment
            lanes.run({"a": lambda conn: 1, "b": lambda conn: 2}, 40, then=then, drained=drained)
            # Then the next phase was asked for once, with both results
            assert asked == [2]
    finally:
        sys.setswitchinterval(switching)
        lanes.close()
        database.close()
