"""The calibrated score (domain/relevance.py): absolute evidence, monotone along the ranking."""

from __future__ import annotations

from memory_engine.domain.fusion import evidence
from memory_engine.domain.relevance import DEFAULT_MIN_SCORE, Evidence, along_ranking, coverage, kept, relevance
from memory_engine.domain.search_config import Signal
from memory_engine.domain.search_models import Candidate, RankedLists, ResultKey, ScoredKeys


def test_an_unrelated_row_scores_under_the_default_floor_whatever_its_rank() -> None:
    # Given the only row of a memory, first in every list, with cosine 0.003 and no query word
    unrelated = Evidence(cosine=0.003, coverage=0.0)
    # Then its score is far under the floor; a strong match is far over it
    assert relevance(unrelated) < DEFAULT_MIN_SCORE / 10
    assert relevance(Evidence(cosine=0.75, coverage=0.5)) > 0.5


def test_more_evidence_never_lowers_the_score() -> None:
    for cos in (0.1, 0.3, 0.5, 0.7):
        for cov in (0.0, 0.2, 0.4):
            assert relevance(Evidence(cos + 0.1, cov)) > relevance(Evidence(cos, cov))
            assert relevance(Evidence(cos, cov + 0.1)) > relevance(Evidence(cos, cov))


def test_a_signal_that_did_not_run_uses_the_other_alone() -> None:
    assert relevance(Evidence(None, None)) == 0.0
    assert 0.0 < relevance(Evidence(0.6, None)) < 1.0
    assert 0.0 < relevance(Evidence(None, 0.4)) < 1.0


def test_coverage_counts_the_query_words_absent_from_the_scope() -> None:
    # a row holding one of two equally rare words reaches at most half of what the query could give
    assert coverage(bm25=2.2 * 3.0, idf_total=6.0) == 0.5
    assert coverage(bm25=0.0, idf_total=6.0) == 0.0
    assert coverage(bm25=5.0, idf_total=0.0) == 0.0
    assert coverage(bm25=100.0, idf_total=1.0) == 1.0


def test_scores_never_rise_down_the_ranking() -> None:
    assert along_ranking([0.2, 0.9, 0.1, 0.4, 0.05]) == [0.9, 0.9, 0.4, 0.4, 0.05]
    assert along_ranking([]) == []


def test_the_default_floor_gates_the_page_and_an_explicit_one_cuts_rows() -> None:
    page = along_ranking([0.4, 0.01, 0.005])
    # without min_score: an answered query keeps its whole page, lower rows included ...
    assert kept(page, None) == 3
    # ... and a page whose best row is under the default floor is empty
    assert kept(along_ranking([DEFAULT_MIN_SCORE / 2, 0.001]), None) == 0
    assert kept([], None) == 0
    # with min_score: the rows scoring at least it; 0 keeps the whole ranking
    assert kept(page, 0.3) == 1
    assert kept(page, 0.01) == 2
    assert kept(along_ranking([0.001, 0.0]), 0) == 2


def test_evidence_reads_absolute_levels_not_the_lists_maximum() -> None:
    # Given a keyword list whose best row matches one rare word of a three-word query
    ranked = RankedLists()
    a: ResultKey = ("memory", "a")
    ranked.add(("memory", Signal.VECTOR), ScoredKeys([a], [0.2]))
    ranked.add(("memory", Signal.KEYWORD), ScoredKeys([a], [2.0], idfs={"x": 2.0, "y": 3.0, "z": 3.0}, avgdl=5.0))
    found = evidence(ranked, {a: Candidate(similarity=0.2, bm25=2.0)})
    # Then the row's coverage is its share of the query's attainable BM25, not 1 for being the best
    assert found[a] == Evidence(0.2, 2.0 / (8.0 * 2.2))
    # And a source whose keyword signal did not run has no coverage
    only_vector = RankedLists()
    only_vector.add(("memory", Signal.VECTOR), ScoredKeys([a], [0.2]))
    assert evidence(only_vector, {a: Candidate(similarity=0.2)})[a] == Evidence(0.2, None)


def test_without_the_default_floor_a_page_is_kept_whole_and_min_score_still_cuts() -> None:
    from memory_engine.domain.relevance import DEFAULT_MIN_SCORE, kept

    low = [DEFAULT_MIN_SCORE / 2, DEFAULT_MIN_SCORE / 4]
    assert kept(low, None) == 0  # a page of memories nothing relates to
    assert kept(low, None, default_floor=False) == 2  # a page with document chunks
    assert kept(low, DEFAULT_MIN_SCORE / 3, default_floor=False) == 1


def test_a_row_on_a_date_the_query_names_scores_higher_than_the_same_row_undated() -> None:
    # Given a turn whose text does not hold its session's date (the query's date words read as missed)
    undated = Evidence(cosine=0.45, coverage=0.08)
    on_the_date = Evidence(cosine=0.45, coverage=0.08, dated=True)
    # Then the date the query names counts as evidence, in each signal's model
    assert relevance(undated) < DEFAULT_MIN_SCORE < relevance(on_the_date) < 1.0
    assert relevance(Evidence(0.45, None, dated=True)) > relevance(Evidence(0.45, None))
    assert relevance(Evidence(None, 0.3, dated=True)) > relevance(Evidence(None, 0.3))
    # And a date alone does not make an unrelated row relevant
    assert relevance(Evidence(cosine=0.05, coverage=0.0, dated=True)) < DEFAULT_MIN_SCORE


def test_evidence_says_whether_the_row_falls_on_a_date_the_query_names() -> None:
    from datetime import UTC, datetime

    from memory_engine.domain.query_text import DateMention

    ranked = RankedLists()
    a: ResultKey = ("memory", "a")
    b: ResultKey = ("memory", "b")
    ranked.add(("memory", Signal.VECTOR), ScoredKeys([a, b], [0.4, 0.3]))
    cands = {a: Candidate(similarity=0.4, valid_from=datetime(2022, 11, 9, 14, tzinfo=UTC)),
             b: Candidate(similarity=0.3, valid_from=datetime(2022, 12, 9, tzinfo=UTC))}
    found = evidence(ranked, cands, [DateMention(2022, 11, 9)])
    assert found[a].dated and not found[b].dated
    # no date named: nothing is dated
    assert not evidence(ranked, cands)[a].dated


def test_a_strict_keyword_query_that_matched_nothing_gives_no_coverage() -> None:
    # Given a quoted phrase no row holds verbatim: the keyword list ran and came back empty
    ranked = RankedLists()
    a: ResultKey = ("memory", "a")
    ranked.add(("memory", Signal.VECTOR), ScoredKeys([a], [0.49]))
    ranked.add(("memory", Signal.KEYWORD), ScoredKeys([], []))
    cands = {a: Candidate(similarity=0.49)}
    # Then with websearch syntax the row is read by its cosine alone (the phrase's miss says
    # nothing about the words) ...
    assert evidence(ranked, cands, strict=True)[a] == Evidence(0.49, None)
    # ... while a plain query none of whose words the scope holds has coverage 0
    assert evidence(ranked, cands)[a] == Evidence(0.49, 0.0)
    # and a strict query that matched rows has coverage as usual
    ranked.add(("memory", Signal.KEYWORD), ScoredKeys([a], [2.2], idfs={"x": 2.0}, avgdl=5.0))
    assert evidence(ranked, {a: Candidate(similarity=0.49, bm25=2.2)}, strict=True)[a] == Evidence(0.49, 0.5)
