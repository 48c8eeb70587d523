"""BM25's document length (adapters/postgres/bm25.py): ``|d|`` is the number of tokens of the row's
own text (``search_tokens``), as a plain BM25 index counts it; a fact's conversation context is a
second field (BM25F): its matches add to the tf at :data:`bm25.CONTEXT_WEIGHT`, normalized by the
context's own length, so a long context does not lengthen the fact."""

from __future__ import annotations

import math

import pytest

from memory_engine.adapters.postgres import bm25, lanes
from memory_engine.adapters.postgres import search_memories as mems
from memory_engine.bootstrap import Container
from memory_engine.domain.search_config import Signal
from memory_engine.domain.search_models import MemoryScope, SignalQuery
from tests.support.search_seed import Seeder

#: 150 distinct words, none of them in the query.
LONG_CONTEXT = " ".join(f"word{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(150))


def keyword_scores(container: Container, project_id: str, memory: str, text: str, stats: bm25.ScopeStats) -> dict[str, float]:
    query = SignalQuery(text=text, embedding=None, signals=frozenset({Signal.KEYWORD}), depth=30)
    with container.database.connection() as conn, lanes.searching(conn, 40):  # as a search runs it
        found = mems.keyword(conn, project_id, MemoryScope(memory_ids=(memory,)), query, stats, bm25.ColumnStats("{}", 0.0))
    return {key[1]: score for key, score in zip(found.keys, found.scores, strict=True)}


def reference(tf_own: int, length: int, avgdl: float, idf: float, *, tf_context: int = 0, context_length: int = 0,
              avgcl: float = 1.0) -> float:
    """BM25F of one lexeme as the module docstring states it."""
    tf = (tf_own / (1 - bm25.B + bm25.B * length / avgdl)
          + bm25.CONTEXT_WEIGHT * tf_context / (1 - bm25.B + bm25.B * context_length / avgcl))
    return idf * tf * (bm25.K1 + 1) / (tf + bm25.K1)


def test_length_counts_tokens_not_distinct_lexemes(container: Container) -> None:
    # Given a fact repeating its word (9 tokens, 2 distinct lexemes) and one of 5 different words
    seed = Seeder(container, "bm25-tokens")
    memory = seed.memory("notes")
    repeated = seed.fact(memory, "rsync rsync rsync rsync rsync rsync rsync rsync backup", embed=False)
    varied = seed.fact(memory, "rsync backup nightly payroll server", embed=False)
    seed.fact(memory, "quarterly budget review meeting", embed=False)
    avgdl = (9 + 5 + 4) / 3
    scores = keyword_scores(container, seed.project_id, memory, "rsync", (3, avgdl, 0.0))
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    # Then each scores BM25 with its length in tokens
    assert scores[repeated] == pytest.approx(reference(8, 9, avgdl, idf), rel=1e-6)
    assert scores[varied] == pytest.approx(reference(1, 5, avgdl, idf), rel=1e-6)


def test_a_long_context_does_not_lengthen_the_fact(container: Container) -> None:
    # Given two facts of the same length matching the query once each, one with a long context
    # (its neighbouring turns) that does not hold the query's word
    seed = Seeder(container, "bm25-context")
    memory = seed.memory("notes")
    with_context = seed.fact(memory, "we deploy with rsync nightly", embed=False)
    without = seed.fact(memory, "we deploy with rsync weekly", embed=False)
    with_match = seed.fact(memory, "the backup job copies files", embed=False)
    with container.database.connection() as conn:
        conn.execute("UPDATE memory_entries SET context = %s WHERE id = %s", (LONG_CONTEXT, with_context))
        conn.execute("UPDATE memory_entries SET context = %s WHERE id = %s", ("then rsync failed twice, rsync", with_match))
    scores = keyword_scores(container, seed.project_id, memory, "rsync", (3, 4.0, 50.0))
    # Then the context's length costs the fact nothing (before, |d| counted its 150 lexemes) ...
    assert scores[with_context] == pytest.approx(scores[without], rel=1e-9)
    # ... and a match in the context counts at the context weight, normalized by the context's length
    idf = math.log(1 + (3 - 3 + 0.5) / (3 + 0.5))
    expected = reference(0, 4, 4.0, idf, tf_context=2, context_length=4, avgcl=50.0)
    assert scores[with_match] == pytest.approx(expected, rel=1e-6)
    assert scores[without] == pytest.approx(reference(1, 3, 4.0, idf), rel=1e-6)
