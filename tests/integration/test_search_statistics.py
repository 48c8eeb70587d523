"""Search quality does not depend on when the table was last analyzed (issue 35 section 2): a scope
its planner statistics cannot describe (never gathered, or gathered when the whole table was so
much smaller than the scope is now that autovacuum would have analyzed it again) orders and counts
the query's lexemes by its own rows; one they describe reads them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memory_engine.adapters.postgres import bm25
from memory_engine.adapters.postgres import search_memories as mems
from memory_engine.bootstrap import set_container
from memory_engine.domain.search_config import PRESETS
from memory_engine.domain.search_models import SearchRequest
from memory_engine.local.container import LocalContainer
from memory_engine.ports.embedder import Embedder
from memory_engine.services.search_knowledge import search_knowledge
from memory_engine.settings import Settings
from tests.support.search_seed import Seeder

#: More rows than the keyword statement's hits budget and than bm25.DF_CAP: a small scope is
#: counted exactly whatever the statistics, so the scope must be larger than that to test them.
COMMON = 1_200


@pytest.fixture
def fresh(fresh_database_url: str, embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalContainer]:
    settings = Settings(DATABASE_URL=fresh_database_url, MEMORY_ENGINE_HOME=str(tmp_path_factory.mktemp("home")))  # type: ignore[call-arg]
    built = LocalContainer(settings, embedder=embedder)
    set_container(built)
    with built.database.connection() as conn:  # nothing analyzes behind the test's back
        conn.execute("ALTER TABLE memory_entries SET (autovacuum_enabled = false)")
    yield built
    set_container(None)
    built.close()


def common_rows(container: LocalContainer, project_id: str, memory_id: str, count: int) -> None:
    """``count`` facts saying "apple" (no vectors: the keyword signal is what is tested), their ids
    before any other row's in every order the statement may read them."""
    with container.database.connection() as conn:
        conn.execute(
            "INSERT INTO memory_entries (id, project_id, memory_id, content)"
            " SELECT 'ment_0000_apple_' || i, %s, %s, 'apple pie recipe number ' || i FROM generate_series(1, %s) i",
            (project_id, memory_id, count),
        )


def keyword_ids(container: LocalContainer, project_id: str, memory_id: str, query: str) -> list[str]:
    request = SearchRequest(query=query, memory_ids=[memory_id], limit=10, min_score=0)
    response = search_knowledge(container.knowledge_index, container.embedder, project_id=project_id, request=request,
                                config=PRESETS["keyword_only"])
    return [r.id for r in response.results]


def test_a_never_analyzed_table_ranks_by_the_scopes_own_counts(fresh: LocalContainer) -> None:
    # Given a memory of 1,200 facts saying "apple" and one saying "apple" and "quokka", in a table
    # never analyzed (no lexeme shares: "appl" sorts before "quokka" and would spend the hits budget)
    seed = Seeder(fresh, "never-analyzed")
    memory = seed.memory("notes")
    common_rows(fresh, seed.project_id, memory, COMMON)
    target = seed.fact(memory, "the quokka ate an apple", embed=False)
    # When "apple quokka" is searched right after the writes
    found = keyword_ids(fresh, seed.project_id, memory, "apple quokka")
    # Then the row with the rare word is first, as it is once the table is analyzed
    assert found[0] == target
    with fresh.database.connection() as conn:
        conn.execute("ANALYZE memory_entries")
    assert keyword_ids(fresh, seed.project_id, memory, "apple quokka")[0] == target


def test_statistics_gathered_on_a_smaller_table_are_not_trusted(fresh: LocalContainer) -> None:
    # Given a table analyzed when it held five facts, every one saying "quokka" ...
    seed = Seeder(fresh, "stale-statistics")
    memory = seed.memory("notes")
    for i in range(5):
        seed.fact(memory, f"quokka sighting {i}", embed=False)
    with fresh.database.connection() as conn:
        conn.execute("ANALYZE memory_entries")
    # ... and 1,200 facts saying "apple" written since, and one saying both
    common_rows(fresh, seed.project_id, memory, COMMON)
    target = seed.fact(memory, "the quokka ate an apple", embed=False)
    # When "apple quokka" is searched before any new analyze
    found = keyword_ids(fresh, seed.project_id, memory, "apple quokka")
    # Then "quokka" is known rare in the scope (6 of 1,206 rows), not common as the old statistics say
    assert found[0] == target


def test_statistics_describe_the_table_until_autovacuum_would_analyze_it_again(fresh: LocalContainer) -> None:
    # Given a table analyzed with every row in one memory, its row estimate a little under the count
    # (ANALYZE samples: at 100,000 facts reltuples read 99,991 about as often as 100,009)
    seed = Seeder(fresh, "estimate")
    memory = seed.memory("notes")
    common_rows(fresh, seed.project_id, memory, COMMON)
    with fresh.database.connection() as conn:
        conn.execute("ANALYZE memory_entries")
        n = int(conn.execute("SELECT count(*) AS n FROM memory_entries").fetchone()["n"])  # type: ignore[index]
        conn.execute("UPDATE pg_class SET reltuples = %s WHERE oid = 'memory_entries'::regclass", (n - 9,))
        scale, threshold = conn.execute(
            "SELECT current_setting('autovacuum_analyze_scale_factor')::float8 AS s,"
            " current_setting('autovacuum_analyze_threshold')::float8 AS t").fetchone().values()  # type: ignore[union-attr]
        column = bm25.column_stats(conn, mems.FACTS.table)
    # Then the statistics describe it up to the growth autovacuum waits for before analyzing again,
    # so the whole table is not counted row by row (it was: 2x the hybrid latency at 100k)
    assert column.total == n - 9 and column.describes == pytest.approx((n - 9) * (1 + scale) + threshold)
    assert not bm25.counts_locally(n, column)
    assert bm25.counts_locally(int(column.describes) + 1, column)
    # And a table's own autovacuum settings are the ones read
    with fresh.database.connection() as conn:
        conn.execute("ALTER TABLE memory_entries SET (autovacuum_analyze_scale_factor = 0.5, autovacuum_analyze_threshold = 0)")
        assert bm25.column_stats(conn, mems.FACTS.table).describes == pytest.approx((n - 9) * 1.5)
