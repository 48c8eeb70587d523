"""The BM25 keyword statement's bounded reads: a lexeme the planner statistics put in more rows of
the table than the scan cap (``bm25.KeywordLimits.scan_cap``) is scored from its share, not read through
the GIN index; the hits budget bounds what is read."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from memory_engine.adapters.postgres import bm25, lanes
from memory_engine.adapters.postgres import search_memories as mems
from memory_engine.adapters.postgres.search import PostgresKnowledgeIndex, SearchLimits
from memory_engine.bootstrap import Container
from memory_engine.domain.search_config import HYBRID, PRESETS, Signal
from memory_engine.domain.search_models import MemoryScope, SearchRequest, SignalQuery
from memory_engine.services.search_knowledge import search_knowledge
from tests.support.search_seed import Seeder

COMMON = 40  # facts saying "harbour": common in the table


@pytest.fixture(scope="module")
def world(container: Container) -> dict[str, Any]:
    seed = Seeder(container, "bm25-bounds")
    memory = seed.memory("notes")
    w: dict[str, Any] = {"project_id": seed.project_id, "memory": memory}
    w["both"] = seed.fact(memory, "the harbour ferry to zanzibar leaves at dawn", embed=False)
    w["rare_only"] = seed.fact(memory, "zanzibar spice markets open late", embed=False)
    w["common_only"] = [seed.fact(memory, f"the harbour crane number {i} was painted", embed=False)
                        for i in range(COMMON)]
    with container.database.connection() as conn:
        conn.execute("ANALYZE memory_entries")  # the statement reads lexeme shares from pg_stats
    return w


@contextmanager
def index_with(container: Container, **limits: int) -> Iterator[PostgresKnowledgeIndex]:
    """A search index whose keyword statements read within ``limits`` (``bm25.KeywordLimits``)."""
    index = PostgresKnowledgeIndex(container.search_database, limits=SearchLimits(keyword=bm25.KeywordLimits(**limits)))
    try:
        yield index
    finally:
        index.close()


def keyword(container: Container, w: dict[str, Any], query: str, **limits: int) -> list[str]:
    request = SearchRequest(query=query, memory_ids=[w["memory"]], limit=50, min_score=0)
    with index_with(container, **limits) as index:
        response = search_knowledge(index, container.embedder, project_id=w["project_id"], request=request,
                                    config=PRESETS["keyword_only"])
    return [r.id for r in response.results]


def test_a_lexeme_under_the_cap_is_read_and_its_rows_are_candidates(container: Container, world: dict[str, Any]) -> None:
    found = keyword(container, world, "harbour zanzibar")
    # every row with either word is a candidate, the row with both first
    assert found[0] == world["both"]
    assert set(found) == {world["both"], world["rare_only"], *world["common_only"]}


def test_a_lexeme_over_the_cap_is_scored_from_its_share_not_read(container: Container, world: dict[str, Any]) -> None:
    # Given "harbour" is in more rows of the table than the cap (and the scope is read as a large
    # one would be: a scope of at most DF_CAP rows counts every lexeme in its own rows instead)
    found = keyword(container, world, "harbour zanzibar", scan_cap=COMMON // 2, local_scope=0)
    # Then only the rarer word's rows are candidates, and "harbour" still counts in their scores
    # (its idf comes from its share of the scope): the row with both words ranks first
    assert found == [world["both"], world["rare_only"]]


def test_the_rarest_lexeme_is_read_even_over_the_cap(container: Container, world: dict[str, Any]) -> None:
    # Given every word of the query is over the cap, the rarest is read all the same
    found = keyword(container, world, "harbour", scan_cap=1)
    assert world["both"] in found and set(world["common_only"]) <= set(found)


def test_a_large_page_gets_a_keyword_list_as_deep_as_the_others(container: Container) -> None:
    # Given 90 facts that all hold the query's word
    seed = Seeder(container, "bm25-depth")
    memory = seed.memory("notes")
    facts = {seed.fact(memory, f"lighthouse log entry number {i}", embed=False) for i in range(90)}
    request = SearchRequest(query="lighthouse", memory_ids=[memory], limit=80, min_score=0)
    response = search_knowledge(container.knowledge_index, container.embedder, project_id=seed.project_id,
                                request=request, config=PRESETS["keyword_only"])
    # Then the page is full: the exact pass rescores twice the list's depth (200), not a fixed 60 rows
    assert len(response.results) == 80 and {r.id for r in response.results} <= facts
    assert bm25.rescored(HYBRID.depth(80)) >= HYBRID.depth(80) == 200


def test_shares_are_read_again_after_an_analyze(container: Container) -> None:
    # Given an index reading at most 10 hits a statement cached the lexeme shares of a table that
    # did not hold "lantern" yet
    seed = Seeder(container, "bm25-analyze")
    first = seed.memory("before")
    seed.fact(first, "the quay was rebuilt in stone", embed=False)
    with container.database.connection() as conn:
        conn.execute("ANALYZE memory_entries")
    with index_with(container, hits_budget=10) as index:
        search_knowledge(index, container.embedder, project_id=seed.project_id,
                         request=SearchRequest(query="quay", memory_ids=[first], min_score=0), config=PRESETS["keyword_only"])
        # When a memory where "lantern" is common is loaded and the table analyzed again
        later = seed.memory("after")
        lanterns = [seed.fact(later, f"lantern number {i} hangs in the hall", embed=False) for i in range(30)]
        target = seed.fact(later, "a lantern lights the quay at night", embed=False)
        with container.database.connection() as conn:
            conn.execute("ANALYZE memory_entries")
        # Then the next search reads the new shares: "quay" (rare) is read before "lantern" (common), so
        # with a budget of 10 hits the row holding both is still found and ranks first (with the old
        # shares "lantern" sorts first as an unknown, spends the budget, and "quay" is never counted)
        response = search_knowledge(index, container.embedder, project_id=seed.project_id,
                                    request=SearchRequest(query="lantern quay", memory_ids=[later], min_score=0),
                                    config=PRESETS["keyword_only"])
    assert response.results[0].id == target
    assert {r.id for r in response.results} <= {target, *lanterns}


def test_a_lexeme_the_budget_never_reached_still_counts(container: Container) -> None:
    # Given a memory where "lantern" is on every fact and neither word is in the planner statistics
    # (a name rare in the table but dense in one memory), so "lantern" is read first ...
    seed = Seeder(container, "bm25-unread")
    memory = seed.memory("dense")
    target = seed.fact(memory, "a lantern lights the quay at night", embed=False)
    for i in range(30):
        seed.fact(memory, f"lantern number {i} hangs in the hall", embed=False)
    # ... and spends a budget of 10 hits before "quay" is reached
    query = SignalQuery(text="lantern quay", embedding=None, signals=frozenset({Signal.KEYWORD}), depth=30)
    with container.database.connection() as conn, lanes.searching(conn, 40):  # as a search runs it
        found = mems.keyword(conn, seed.project_id, MemoryScope(memory_ids=(memory,)), query, (31, 6.0, 0.0),
                             bm25.ColumnStats("{}", 0.0), limits=bm25.KeywordLimits(hits_budget=10))
    # Then "quay" still has an idf (as a rare word) and the fact holding both ranks first
    assert "quay" in found.idfs and found.idfs["quay"] > found.idfs["lantern"]
    assert found.keys[0] == (mems.SOURCE, target)


def test_a_keyword_statement_reports_shares_read_before_an_analyze(container: Container) -> None:
    # Given shares read at the table's current statistics version
    seed = Seeder(container, "bm25-version")
    memory = seed.memory("versioned")
    seed.fact(memory, "a lantern lights the quay at night", embed=False)
    scope = MemoryScope(memory_ids=(memory,))
    with container.database.connection() as conn:
        conn.execute("ANALYZE memory_entries")
    with container.database.connection() as conn:
        current = bm25.column_stats(conn, mems.FACTS.table)
        assert current.analyzed is not None and current.analyzed == bm25.analyzed(conn, mems.FACTS.table)

    def keyword(text: str, column: bm25.ColumnStats) -> list[Any]:
        query = SignalQuery(text=text, embedding=None, signals=frozenset({Signal.KEYWORD}), depth=30)
        with container.database.connection() as conn, lanes.searching(conn, 40):
            return mems.keyword(conn, seed.project_id, scope, query, (1, 6.0, 0.0), column).keys

    # Then statements given them answer, with rows or without
    assert keyword("lantern", current) and keyword("harbour", current) == []
    # And once the table is analyzed again (by another session), both report the shares outdated
    with container.database.connection() as conn:
        conn.execute("ANALYZE memory_entries")
    for text in ("lantern", "harbour"):
        with pytest.raises(bm25.SharesOutdated):
            keyword(text, current)


def lanterns_and_quays(container: Container, project: str, *both: str) -> tuple[Seeder, str, list[str], list[str]]:
    """A memory of 30 facts about lanterns and 40 about quays, then ``both`` (facts holding both words),
    written in that order: ``(seeder, memory, lantern and quay facts, facts of both)``."""
    seed = Seeder(container, project)
    memory = seed.memory("quays")
    one = [seed.fact(memory, f"lantern number {i} hangs in the hall", embed=False) for i in range(30)]
    one += [seed.fact(memory, f"quay wall section {i} was rebuilt in stone", embed=False) for i in range(40)]
    return seed, memory, one, [seed.fact(memory, text, embed=False) for text in both]


def lantern_quay(container: Container, seed: Seeder, memory: str) -> list[str]:
    """Keyword-only "lantern quay" in ``memory`` with a budget of 10 reads, the scope read as a large one would be."""
    request = SearchRequest(query="lantern quay", memory_ids=[memory], limit=10, min_score=0)
    with index_with(container, hits_budget=10, local_scope=0) as index:
        response = search_knowledge(index, container.embedder, project_id=seed.project_id, request=request,
                                    config=PRESETS["keyword_only"])
    return [r.id for r in response.results]


def test_rows_holding_two_of_the_querys_words_are_read_before_the_budget_runs_out(container: Container) -> None:
    # Given a memory where the query's rarer word is on more facts than a budget of 10 hits reads, and
    # the one fact that also holds its other word was written last (a read of the rarer word alone
    # in the index's order reaches it after the budget is spent)
    seed, memory, one, (target,) = lanterns_and_quays(container, "bm25-pairs", "a lantern lights the quay at night")
    # When it is searched with both words
    found = lantern_quay(container, seed, memory)
    # Then the rows holding both words are read first, and the one that does ranks first
    assert found[0] == target and set(found) <= {target, *one}


def test_the_budget_counts_rows_read_so_a_row_found_by_a_pair_spends_one_read(container: Container) -> None:
    # Given a memory where 8 facts hold both of the query's words, and the one that says them most
    # (twice each) was written last, behind the other 7 in the index's order; a budget of 10 reads
    # reaches all 8 when a row found by a pair spends one read (not one for each of its two words)
    both = [f"lantern {i} stands by the quay" for i in range(7)] + ["lantern quay, the quay lantern"]
    seed, memory, _, pairs = lanterns_and_quays(container, "bm25-pair-reads", *both)
    # When it is searched with both words
    found = lantern_quay(container, seed, memory)
    # Then all 8 rows holding both are read and rescored, and the one that says both twice ranks first
    assert found[0] == pairs[-1] and set(found[1:8]) == set(pairs[:-1])


def test_a_lowercase_or_is_a_word_of_the_question_and_a_capitalized_one_the_operator(container: Container) -> None:
    seed = Seeder(container, "bm25-or")
    memory = seed.memory("notes")
    course = seed.fact(memory, "I took an online course on resume optimization last spring", embed=False)
    ferry = seed.fact(memory, "the ferry leaves at dawn", embed=False)
    w = {"project_id": seed.project_id, "memory": memory}
    # read as websearch syntax, "courses or training programs" were two ANDed groups the fact holds neither of whole
    assert keyword(container, w, "Have I enrolled in any courses or training programs on resume optimization?") == [course]
    # the caller's operator: only rows holding one side whole ("online" alone is not "online winter")
    assert keyword(container, w, "dawn OR online winter") == [ferry]
    assert set(keyword(container, w, "dawn or online winter")) == {course, ferry}


def test_a_counted_scope_reads_a_pair_from_its_words_counts(container: Container) -> None:
    # Given the memory of the pair test above, small enough that the statement counts the query's words
    # in its own rows (``bm25.counts_locally``): the pair's rows are then read from the two counts
    seed, memory, one, (target,) = lanterns_and_quays(container, "bm25-counted-pairs", "a lantern lights the quay at night")
    request = SearchRequest(query="lantern quay", memory_ids=[memory], limit=10, min_score=0)
    with index_with(container, hits_budget=10) as index:
        response = search_knowledge(index, container.embedder, project_id=seed.project_id, request=request,
                                    config=PRESETS["keyword_only"])
    found = [r.id for r in response.results]
    # Then, as when the pair is read through the index, the fact holding both words is read and ranks first
    assert found[0] == target and set(found) <= {target, *one}


def test_a_pair_whose_word_count_stopped_at_the_cap_is_read_through_the_index(container: Container) -> None:
    # Given a counted scope where "lantern" is on more rows than a count reads (DF_CAP), and the one fact
    # holding "quay" too was written after the first DF_CAP of them, behind 40 facts saying "quay" alone
    seed = Seeder(container, "bm25-capped-count")
    memory = seed.memory("lanterns")
    with container.database.connection() as conn:
        conn.execute("INSERT INTO memory_entries (id, project_id, memory_id, content)"
                     " SELECT %s || g, %s, %s, 'lantern number ' || g || ' hangs in the hall'"
                     " FROM generate_series(1, %s) g", (f"{memory}-filler-", seed.project_id, memory, bm25.DF_CAP))
    quays = [seed.fact(memory, f"quay wall section {i} was rebuilt in stone", embed=False) for i in range(40)]
    target = seed.fact(memory, "a lantern lights the quay at night", embed=False)
    request = SearchRequest(query="lantern quay", memory_ids=[memory], limit=10, min_score=0)
    # When it is searched with a budget of 10 reads, its words counted in its own rows
    with index_with(container, hits_budget=10, local_scope=2 * bm25.DF_CAP) as index:
        response = search_knowledge(index, container.embedder, project_id=seed.project_id, request=request,
                                    config=PRESETS["keyword_only"])
    found = [r.id for r in response.results]
    # Then the pair is read through the index (the count of "lantern" does not hold the fact), and the
    # fact holding both ranks first, not "quay" facts read alone
    assert found[0] == target and set(found) <= {target, *quays}
