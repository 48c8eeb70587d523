"""Convex fusion of search v2 and the dates a query names (pure)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta, timezone

import pytest

from memory_engine.domain.fusion import fuse, neighbours, top_keys, within_reach
from memory_engine.domain.query_text import YEARLESS_YEARS, DateMention, date_mentions, periods
from memory_engine.domain.search_config import HYBRID, KEYWORD_ONLY, PRESETS, VECTOR_ONLY, Signal
from memory_engine.domain.search_models import Candidate, ListKey, RankedLists, ResultKey


def fact(similarity: float, *, bm25: float = 0.0, previous: tuple[ResultKey, ...] = (), subject: str | None = None,
         valid_from: datetime | None = None) -> Candidate:
    return Candidate(similarity, bm25, previous, (subject,) if subject else (), valid_from)


def key(name: str) -> ResultKey:
    return ("memory", name)


VECTOR: ListKey = ("memory", Signal.VECTOR)
KEYWORD: ListKey = ("memory", Signal.KEYWORD)


def ranked(vector: dict[str, float], keyword: dict[str, float]) -> RankedLists:
    out = RankedLists()
    out.lists[VECTOR] = [key(k) for k in vector]
    out.scores[VECTOR] = list(vector.values())
    out.lists[KEYWORD] = [key(k) for k in keyword]
    out.scores[KEYWORD] = list(keyword.values())
    return out


def test_scores_are_normalized_then_weighted() -> None:
    # vector list a 0.9 .. c 0.5, keyword list b 8 .. a 2
    lists = ranked({"a": 0.9, "b": 0.7, "c": 0.5}, {"b": 8.0, "a": 2.0})
    cands = {key("a"): fact(0.9, bm25=2.0), key("b"): fact(0.7, bm25=8.0),
             key("c"): fact(0.5)}
    scores = {s.key[1]: s.score for s in fuse(lists, cands, HYBRID)}
    # cosine / max: a 1.0, b 0.778, c 0.556; BM25 / max: b 1.0, a 0.25
    assert scores == pytest.approx({"a": 1.25, "b": 0.7 / 0.9 + 1.0, "c": 0.5 / 0.9})
    assert [s.key[1] for s in fuse(lists, cands, HYBRID)] == ["b", "a", "c"]


def test_a_near_tie_in_cosine_does_not_outweigh_a_clear_keyword_lead() -> None:
    # Given two rows the model scores almost alike (0.62 vs 0.60) and BM25 clearly prefers b
    lists = ranked({"a": 0.62, "b": 0.60}, {"b": 5.0, "a": 3.0})
    cands = {key("a"): fact(0.62, bm25=3.0), key("b"): fact(0.60, bm25=5.0)}
    # When fused, then b leads: normalizing from cosine's floor keeps the near tie a near tie
    # (min-max over the list would have stretched 0.02 to the whole 0..1 and put a first)
    scored = fuse(lists, cands, HYBRID)
    assert [s.key[1] for s in scored] == ["b", "a"]
    assert scored[0].score - scored[1].score == pytest.approx(0.4 - (0.62 - 0.60) / 0.62)


def test_a_vector_list_unrelated_to_the_query_adds_nothing() -> None:
    lists = ranked({"a": -0.1, "b": -0.2}, {"b": 5.0})
    cands = {key("a"): fact(-0.1), key("b"): fact(-0.2, bm25=5.0)}
    assert {s.key[1]: s.score for s in fuse(lists, cands, HYBRID)} == pytest.approx({"a": 0.0, "b": 1.0})


def test_single_signal_presets_rank_by_that_signal_alone() -> None:
    lists = ranked({"a": 0.9, "b": 0.7}, {"b": 8.0, "a": 2.0})
    cands = {key("a"): fact(0.9, bm25=2.0), key("b"): fact(0.7, bm25=8.0)}
    only_vector = RankedLists(lists={VECTOR: lists.lists[VECTOR]},
                              scores={VECTOR: lists.scores[VECTOR]})
    assert [s.key[1] for s in fuse(only_vector, cands, VECTOR_ONLY)] == ["a", "b"]
    only_keyword = RankedLists(lists={KEYWORD: lists.lists[KEYWORD]},
                               scores={KEYWORD: lists.scores[KEYWORD]})
    assert [s.key[1] for s in fuse(only_keyword, cands, KEYWORD_ONLY)] == ["b", "a"]


def test_named_subject_and_named_date_add_their_boosts() -> None:
    may = datetime(2023, 5, 8, tzinfo=UTC)
    lists = ranked({"x": 0.8, "y": 0.8}, {})
    cands = {key("x"): fact(0.8, subject="caroline", valid_from=may),
             key("y"): fact(0.8, subject="melanie")}
    scored = {s.key[1]: s.score for s in fuse(lists, cands, HYBRID, names={"caroline"}, dates=[DateMention(2023, 5, None)])}
    assert scored["x"] - scored["y"] == pytest.approx(HYBRID.subject_boost + HYBRID.date_boost)


def test_a_neighbour_lends_its_signals_not_its_boosts() -> None:
    # "turn" is Caroline's, named in the query and on the named day; "reply" is Melanie's, right
    # after it, on another day (a session crossing midnight)
    may8, may9 = datetime(2023, 5, 8, 23, 50, tzinfo=UTC), datetime(2023, 5, 9, 0, 5, tzinfo=UTC)
    lists = ranked({"turn": 0.9, "reply": 0.45}, {})
    cands = {key("turn"): fact(0.9, subject="caroline", valid_from=may8),
             key("reply"): fact(0.45, previous=(key("turn"),), subject="melanie", valid_from=may9)}
    scores = {s.key[1]: s.score for s in fuse(lists, cands, HYBRID, names={"caroline"}, dates=[DateMention(2023, 5, 8)])}
    # the reply gains 0.3 x the turn's cosine score, not 0.3 x (cosine + subject and date boosts):
    # who a row is about and when it happened are its own
    assert scores["reply"] == pytest.approx(0.5 + HYBRID.neighbour_weight * 1.0)
    assert scores["turn"] == pytest.approx(1.0 + HYBRID.subject_boost + HYBRID.date_boost + HYBRID.neighbour_weight * 0.5)


def test_the_date_list_is_a_rank_only_list_with_its_weight() -> None:
    lists = ranked({"a": 0.8}, {})
    lists.lists[("memory", Signal.DATE)] = [key("d1"), key("d2")]
    cands = {key("a"): fact(0.8), key("d1"): fact(0.4), key("d2"): fact(0.4)}
    scores = {s.key[1]: s.score for s in fuse(lists, cands, HYBRID)}
    weight = HYBRID.weight(Signal.DATE)
    assert weight == 0.5
    assert scores["d1"] == pytest.approx(0.5 + weight * 1.0)
    assert scores["d2"] == pytest.approx(0.5 + weight * 0.75)


def test_a_row_next_to_a_strong_match_gains_from_it() -> None:
    # "q" asks (matches the query), "answer" replies right after it and matches nothing itself
    lists = ranked({"q": 0.9, "other": 0.6, "far": 0.5}, {})
    cands = {
        key("q"): fact(0.9),
        key("answer"): fact(0.5, previous=(key("q"),)),
        key("other"): fact(0.6),
        key("far"): fact(0.5),
    }
    order = [s.key[1] for s in fuse(lists, cands, HYBRID)]
    assert order.index("answer") < order.index("far")
    scores = {s.key[1]: s.score for s in fuse(lists, cands, HYBRID)}
    # its own cosine (0.5 / 0.9, read for it although no list had it) plus what "q" lends
    assert scores["answer"] == pytest.approx(0.5 / 0.9 + HYBRID.neighbour_weight * 1.0)
    # and the strong match gains only what its weaker neighbour lends
    assert scores["q"] == pytest.approx(1.0 + HYBRID.neighbour_weight * 0.5 / 0.9)


def test_neighbours_decay_with_distance_and_respect_the_window() -> None:
    cands = {key("a"): fact(0.1),
             key("b"): fact(0.1, previous=(key("a"),)),
             key("c"): fact(0.1, previous=(key("b"), key("a")))}
    assert sorted(neighbours(cands, 2)[key("a")]) == [(key("b"), 1), (key("c"), 2)]
    assert neighbours(cands, 1)[key("a")] == [(key("b"), 1)]


def test_top_keys_orders_listed_rows_before_any_row_is_read() -> None:
    # c: vector (0.6 - 0.3) / 0.6 = 0.5 + keyword 1.0; a: vector 1.0; b: vector 0.667
    lists = ranked({"a": 0.9, "b": 0.7, "c": 0.6, "d": 0.3}, {"c": 9.0})
    assert top_keys(lists, HYBRID, 2) == [key("c"), key("a")]


def test_presets_keep_single_signals_pure_and_rrf_for_comparison() -> None:
    for name in ("vector_only", "keyword_only", "entity_only"):
        config = PRESETS[name]
        assert len(config.signals) == 1 and config.neighbour_window == 0
        assert config.subject_boost == 0 and config.date_boost == 0
    assert PRESETS["rrf_v1"].fusion == "rrf"
    assert PRESETS["hybrid"].signals == frozenset({Signal.VECTOR, Signal.KEYWORD, Signal.ENTITY})


@pytest.mark.parametrize(("query", "expected"), [
    ("What did Gina find on 1 February, 2023?", [DateMention(2023, 2, 1)]),
    ("What painting did Melanie show on October 13, 2023?", [DateMention(2023, 10, 13)]),
    ("When did Melanie go camping in June?", [DateMention(None, 6, None)]),
    ("workout class in December 2023", [DateMention(2023, 12, None)]),
    ("the report of 2023-05-07", [DateMention(2023, 5, 7)]),
    ("what happened in 2022", [DateMention(2022, None, None)]),
    ("may I ask what you march for", []),
    ("In May we moved", [DateMention(None, 5, None)]),
    ("the 2000 calories diet", []),
])
def test_date_mentions(query: str, expected: list[DateMention]) -> None:
    assert date_mentions(query) == expected


def test_a_date_mention_matches_what_it_fixes() -> None:
    when = datetime(2023, 6, 9, 19, 55, tzinfo=UTC)
    assert DateMention(None, 6, None).matches(when)
    assert DateMention(2023, 6, 9).matches(when)
    assert not DateMention(2022, 6, None).matches(when)
    assert not DateMention(2023, 6, 9).matches(None)


def test_a_date_mention_reads_its_date_in_utc() -> None:
    # 23:30 in New York on 9 June is 10 June in UTC, where the search statement reads it too
    evening = datetime(2023, 6, 9, 23, 30, tzinfo=timezone(timedelta(hours=-4)))
    assert DateMention(2023, 6, 10).matches(evening)
    assert not DateMention(2023, 6, 9).matches(evening)


@pytest.mark.parametrize(("mention", "period"), [
    (DateMention(2023, None, None), (datetime(2023, 1, 1, tzinfo=UTC), datetime(2024, 1, 1, tzinfo=UTC))),
    (DateMention(2023, 12, None), (datetime(2023, 12, 1, tzinfo=UTC), datetime(2024, 1, 1, tzinfo=UTC))),
    (DateMention(2024, 2, 29), (datetime(2024, 2, 29, tzinfo=UTC), datetime(2024, 3, 1, tzinfo=UTC))),
    (DateMention(2023, 12, 31), (datetime(2023, 12, 31, tzinfo=UTC), datetime(2024, 1, 1, tzinfo=UTC))),
    (DateMention(None, 6, None), None),  # "in June": any year, no single range
    (DateMention(None, 6, 9), None),
])
def test_a_date_mention_with_a_year_is_one_utc_period(mention: DateMention, period: tuple[datetime, datetime] | None) -> None:
    assert mention.period() == period
    if period is not None:  # the period holds exactly what matches()
        assert mention.matches(period[0]) and not mention.matches(period[1])
        assert mention.matches(period[1] - timedelta(microseconds=1))


def test_a_day_that_does_not_exist_is_an_empty_period() -> None:
    start, end = DateMention(2023, 6, 31).period() or (None, None)
    assert start is not None and start == end


def test_periods_merge_overlaps_and_spread_a_yearless_date_over_recent_years() -> None:
    now = datetime(2026, 12, 4, tzinfo=UTC)
    # "in 2023" holds "in May 2023": one range
    assert periods([DateMention(2023, 5, None), DateMention(2023, None, None)], now=now) == [
        (datetime(2023, 1, 1, tzinfo=UTC), datetime(2024, 1, 1, tzinfo=UTC))]
    # "on 9 June": that day in each of the last YEARLESS_YEARS years and the next, earliest first
    spans = periods([DateMention(None, 6, 9)], now=now)
    assert len(spans) == YEARLESS_YEARS + 1
    assert spans[0][0] == datetime(2026 - YEARLESS_YEARS + 1, 6, 9, tzinfo=UTC)
    assert spans[-1] == (datetime(2027, 6, 9, tzinfo=UTC), datetime(2027, 6, 10, tzinfo=UTC))
    assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))
    # no such day, no range; 29 February only in leap years
    assert periods([DateMention(2023, 6, 31)], now=now) == []
    assert {start.year for start, _ in periods([DateMention(None, 2, 29)], now=now)} == {2000, 2004, 2008, 2012, 2016, 2020, 2024}


def test_within_reach_keeps_the_listed_rows_and_the_neighbours_of_the_top_only() -> None:
    # Given a conversation a1..a6 (each row's previous ones, nearest first) where a1 and a6 are listed
    def key(n: int) -> ResultKey:
        return ("memory", f"a{n}")

    candidates = {key(n): Candidate(previous=tuple(key(p) for p in range(n - 1, 0, -1))) for n in range(1, 7)}
    ranked = RankedLists()
    ranked.add(("memory", Signal.VECTOR), [key(1), key(6)])
    # When only a1 is in the top, with a window of 2
    kept = within_reach(candidates, ranked, [key(1)], window=2)
    # Then a2 and a3 (after a1) are kept, a4 and a5 (only near a6, not a top row) are not, a6 is listed
    assert set(kept) == {key(1), key(2), key(3), key(6)}
    # And with a6 in the top too, the rows before it within the window come back
    assert set(within_reach(candidates, ranked, [key(1), key(6)], window=2)) == set(candidates)
    # And nothing is kept beyond the window
    assert set(within_reach(candidates, ranked, [key(1)], window=1)) == {key(1), key(2), key(6)}


def test_recency_breaks_a_near_tie_for_the_newer_fact_but_not_a_clear_lead() -> None:
    # Given two facts that answer alike (the older one a hair ahead) and a third far behind
    config = HYBRID.model_copy(update={"recency_weight": 0.05, "neighbour_window": 0})
    old, new = datetime(2024, 3, 1, tzinfo=UTC), datetime(2024, 4, 1, tzinfo=UTC)
    lists = ranked({"old": 0.80, "new": 0.79, "far": 0.40}, {})
    cands = {key("old"): fact(0.80, valid_from=old), key("new"): fact(0.79, valid_from=new),
             key("far"): fact(0.40, valid_from=datetime(2024, 5, 1, tzinfo=UTC))}
    order = [s.key[1] for s in fuse(lists, cands, config)]
    # Then the newer of the two comes first, and recency does not lift the weak latest one over them
    assert order == ["new", "old", "far"]
    # And without the weight the older one keeps its hair's lead
    assert fuse(lists, cands, config.model_copy(update={"recency_weight": 0.0}))[0].key[1] == "old"
