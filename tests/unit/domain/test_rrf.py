"""RRF fusion, the search presets and query-text helpers (pure)."""

from __future__ import annotations

import pytest

from memory_engine.domain.globs import glob_to_like, prefix_to_like
from memory_engine.domain.query_text import name_candidates, uses_websearch_syntax
from memory_engine.domain.rrf import RRF_K, rrf
from memory_engine.domain.search_config import PRESETS, SearchConfig, Signal, preset


def test_scores_are_sums_of_reciprocal_ranks_with_k_60() -> None:
    # Given two lists sharing "b"
    fused = rrf({"vector": ["a", "b"], "keyword": ["b", "c"]})
    # Then each score is Σ 1/(60 + rank)
    scores = {f.key: f.score for f in fused}
    assert RRF_K == 60
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["c"] == pytest.approx(1 / 62)
    assert [f.key for f in fused] == ["b", "a", "c"]
    assert fused[0].ranks == {"vector": 2, "keyword": 1}


def test_agreement_at_middling_rank_beats_a_single_first_place() -> None:
    fused = rrf({"vector": ["solo", *[f"v{i}" for i in range(8)], "both"], "keyword": [*[f"k{i}" for i in range(9)], "both"]})
    assert fused[0].key == "both"


def test_weights_scale_a_lists_contribution() -> None:
    fused = rrf({"vector": ["a"], "keyword": ["b"]}, weights={"keyword": 2.0})
    assert [f.key for f in fused] == ["b", "a"]
    assert fused[0].score == pytest.approx(2 / 61)


def test_ties_break_deterministically_by_first_appearance() -> None:
    fused = rrf({"vector": ["x", "y"], "keyword": ["y2", "x2"]})
    # x and y2 tie at 1/61: x appeared first
    assert [f.key for f in fused] == ["x", "y2", "y", "x2"]


def test_duplicates_inside_one_list_count_once_at_best_rank() -> None:
    fused = rrf({"vector": ["a", "a", "b"]})
    assert fused[0].score == pytest.approx(1 / 61)
    assert fused[1].ranks == {"vector": 3}


def test_k_is_a_parameter_and_bad_values_are_rejected() -> None:
    assert rrf({"v": ["a"]}, k=0)[0].score == pytest.approx(1.0)
    assert rrf({}) == []
    with pytest.raises(ValueError):
        rrf({"v": ["a"]}, k=-1)
    with pytest.raises(ValueError):
        rrf({"v": ["a"]}, weights={"v": -1})


def test_presets_pick_their_signals() -> None:
    assert preset("hybrid").signals == {Signal.VECTOR, Signal.KEYWORD, Signal.ENTITY}
    assert preset("vector_only").signals == {Signal.VECTOR}
    assert preset("keyword_only").signals == {Signal.KEYWORD}
    assert preset("entity_only").signals == {Signal.ENTITY}
    assert set(PRESETS) >= {"hybrid", "vector_only", "keyword_only", "entity_only"}
    with pytest.raises(KeyError, match="known"):
        preset("nope")


def test_candidate_depth_is_bounded() -> None:
    config = SearchConfig()
    assert config.depth(1) == 30
    assert config.depth(20) == 60
    assert config.depth(100) == 200


def test_name_candidates_respect_word_boundaries() -> None:
    candidates = name_candidates("Anything good on  Netflix's start-up tonight?")
    assert "netflix" in candidates
    assert "netflix's" in candidates
    assert "start-up" in candidates
    assert "art" not in candidates  # `art` must not fire inside `start`
    assert "good on netflix" in candidates


def test_websearch_syntax_detection() -> None:
    assert uses_websearch_syntax('"breaking bad" netflix')
    assert uses_websearch_syntax("netflix -comedy")
    assert uses_websearch_syntax("tea OR coffee")
    assert not uses_websearch_syntax("tea or coffee")  # a word of the question, as in Lucene's query parser
    assert not uses_websearch_syntax("what does she like to drink?")
    assert not uses_websearch_syntax("a well-known fact")


def test_globs_and_prefixes_become_escaped_like_patterns() -> None:
    assert glob_to_like("role:*") == "role:%"
    assert glob_to_like("a?c_100%") == "a_c\\_100\\%"
    assert prefix_to_like("/docs/a_b") == "/docs/a\\_b%"
