"""A search plan and the ranking an index returns for it (pure): what is read, what is kept, how it is
fused; the same function the PostgreSQL index and the service tests' fake call."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from memory_engine.domain.entries import USER, USER_NAMES
from memory_engine.domain.fusion import fuse
from memory_engine.domain.query_text import date_mentions, speaker_names
from memory_engine.domain.relevance import relevance
from memory_engine.domain.rrf import rrf
from memory_engine.domain.search_config import HYBRID, PRESETS, Signal
from memory_engine.domain.search_models import Candidate, RankedLists, ResultKey, Scopes, SignalQuery
from memory_engine.domain.search_plan import RankedRow, SearchPlan, fused_ranking, listed_candidates

QUERY = SignalQuery(text="where does Erin live", embedding=None, signals=HYBRID.signals, depth=30)
SCOPES = Scopes(None, None)


def turn(n: int) -> ResultKey:
    return ("memory", f"t{n}")


def conversation() -> tuple[RankedLists, dict[ResultKey, Candidate]]:
    """Turns t1..t8 of one conversation (each with its previous turns, nearest first); the vector
    list has t1 then t8, the keyword list t8."""
    candidates = {turn(n): Candidate(similarity=0.9 if n == 1 else 0.5 if n == 8 else 0.1, bm25=4.0 if n == 8 else 0.0,
                                     previous=tuple(turn(p) for p in range(n - 1, 0, -1))) for n in range(1, 9)}
    lists = RankedLists()
    lists.add(("memory", Signal.VECTOR), [turn(1), turn(8)])
    lists.scores[("memory", Signal.VECTOR)] = [0.9, 0.5]
    lists.add(("memory", Signal.KEYWORD), [turn(8)])
    lists.scores[("memory", Signal.KEYWORD)] = [4.0]
    return lists, candidates


def test_a_plan_reads_the_neighbours_of_its_best_rows_within_its_window() -> None:
    config = HYBRID.model_copy(update={"neighbour_expand": 1, "neighbour_window": 2})
    plan = SearchPlan(QUERY, SCOPES, config)
    lists, _ = conversation()
    # t8 leads the first ordering (both lists), so only its neighbours are read
    assert plan.window == 2 and plan.reads_candidates
    assert plan.expanded(lists) == [turn(8)]
    # no neighbour weight, or RRF: no neighbour is read
    assert SearchPlan(QUERY, SCOPES, config.model_copy(update={"neighbour_weight": 0.0})).expanded(lists) == []
    rrf_plan = SearchPlan(QUERY, SCOPES, PRESETS["rrf_v1"])
    assert not rrf_plan.reads_candidates and rrf_plan.window == 0 and rrf_plan.expanded(lists) == []


def test_the_ranking_keeps_only_the_neighbours_of_the_overall_best() -> None:
    # Given an index that read every turn (as if t1's neighbours were expanded too)
    config = HYBRID.model_copy(update={"neighbour_expand": 1, "neighbour_window": 2})
    plan = SearchPlan(QUERY, SCOPES, config)
    lists, candidates = conversation()
    rows = fused_ranking(plan, lists, candidates)
    # Then the listed turns and those within two of t8 are ranked; t2..t5 (near t1 only) are not
    assert {row.key for row in rows} == {turn(1), turn(6), turn(7), turn(8)}
    # And the order, scores and ranks are convex fusion's over those, each row with its evidence
    kept = {k: c for k, c in candidates.items() if k in {turn(1), turn(6), turn(7), turn(8)}}
    fused = fuse(lists, kept, config)
    assert [(r.key, r.fused, r.ranks) for r in rows] == [(s.key, s.score, s.ranks) for s in fused]
    best = rows[0]
    assert best.evidence is not None and best.estimate == relevance(best.evidence)


def test_an_rrf_plan_fuses_the_lists_ranks_without_reading_rows() -> None:
    lists, _ = conversation()
    plan = SearchPlan(QUERY, SCOPES, PRESETS["rrf_v1"])
    rows = fused_ranking(plan, lists, {})
    expected = rrf(lists.lists, k=PRESETS["rrf_v1"].rrf_k,
                   weights={name: PRESETS["rrf_v1"].weight(name[1]) for name in lists.lists})
    assert [(r.key, r.fused, r.ranks) for r in rows] == [(f.key, f.score, f.ranks) for f in expected]
    # no evidence until the page's rows are read: no estimate yet
    assert all(r.evidence is None and r.estimate == 0.0 for r in rows)
    assert rows[0] == RankedRow(turn(8), rows[0].fused, {("memory", Signal.VECTOR): 2, ("memory", Signal.KEYWORD): 1})


def test_the_ranking_reads_the_querys_dates_and_strictness_into_each_rows_evidence() -> None:
    from dataclasses import replace
    from datetime import UTC, datetime

    from memory_engine.domain.query_text import DateMention

    # Given a turn said on the date the query names, and a quoted phrase no row holds verbatim
    lists = RankedLists()
    lists.add(("memory", Signal.VECTOR), [turn(1)])
    lists.scores[("memory", Signal.VECTOR)] = [0.45]
    lists.add(("memory", Signal.KEYWORD), [])
    lists.scores[("memory", Signal.KEYWORD)] = []
    candidates = {turn(1): Candidate(similarity=0.45, valid_from=datetime(2022, 11, 9, tzinfo=UTC))}
    query = replace(QUERY, dates=(DateMention(2022, 11, 9),), keyword_strict=True)
    # When it is ranked
    [row] = fused_ranking(SearchPlan(query, SCOPES, HYBRID), lists, candidates)
    # Then its evidence says it is on the named date, and has no coverage from the phrase's miss
    assert row.evidence is not None and row.evidence.dated and row.evidence.coverage is None
    [plain] = fused_ranking(SearchPlan(QUERY, SCOPES, HYBRID), lists, candidates)
    assert plain.evidence is not None and not plain.evidence.dated and plain.evidence.coverage == 0.0


def test_a_single_scored_list_holds_all_fusion_reads_of_its_rows() -> None:
    # Given vector_only with a query vector: a vector list per source
    vector = np.ones(3, dtype=np.float32)
    query = SignalQuery(text="where does Erin live", embedding=vector, signals=frozenset({Signal.VECTOR}), depth=30,
                        entity_names=("erin",))
    plan = SearchPlan(query, SCOPES, PRESETS["vector_only"])
    lists = RankedLists()
    lists.add(("memory", Signal.VECTOR), [turn(1), turn(8)])
    lists.scores[("memory", Signal.VECTOR)] = [0.9, 0.5]
    lists.add(("document", Signal.VECTOR), [("document", "c1")])
    lists.scores[("document", Signal.VECTOR)] = [0.7]
    # Then no row is read, and the rows as their lists give them rank exactly as the rows read would
    assert not plan.reads_rows(lists, "memory") and not plan.reads_rows(lists, "document")
    listed = listed_candidates(lists, "memory") | listed_candidates(lists, "document")
    read = {turn(1): Candidate(0.9, 0.0, (turn(0),), ("erin",), datetime(2024, 1, 1, tzinfo=UTC)),
            turn(8): Candidate(0.5, 0.0, (turn(7), turn(1)), (), datetime(2024, 2, 1, tzinfo=UTC)),
            ("document", "c1"): Candidate(0.7, 0.0, (("document", "c0"),))}
    assert fused_ranking(plan, lists, listed) == fused_ranking(plan, lists, read)
    # (each list scaled by its own best: t1 and c1 tie at 1, broken by key)
    assert [row.key for row in fused_ranking(plan, lists, listed)] == [("document", "c1"), turn(1), turn(8)]


def test_rows_are_read_when_fusion_reads_more_than_one_list_gives() -> None:
    vector = np.ones(3, dtype=np.float32)
    lists, _ = conversation()  # a vector and a keyword list: a row of one needs its score of the other
    with_vector = SignalQuery(text="where does Erin live", embedding=vector, signals=HYBRID.signals, depth=30,
                              entity_names=("erin",))
    assert SearchPlan(with_vector, SCOPES, HYBRID).reads_rows(lists, "memory")
    keyword = RankedLists()
    keyword.add(("memory", Signal.KEYWORD), [turn(8)])
    keyword.scores[("memory", Signal.KEYWORD)] = [4.0]
    keyword_only = PRESETS["keyword_only"]
    # keyword_only with a query vector reads each row's cosine (its evidence); without one nothing
    assert SearchPlan(with_vector, SCOPES, keyword_only).reads_rows(keyword, "memory")
    assert not SearchPlan(QUERY, SCOPES, keyword_only).reads_rows(keyword, "memory")
    assert listed_candidates(keyword, "memory") == {turn(8): Candidate(None, 4.0)}
    vector_list = RankedLists()
    vector_list.add(("memory", Signal.VECTOR), [turn(1)])
    vector_list.scores[("memory", Signal.VECTOR)] = [0.9]
    vector_only = PRESETS["vector_only"]
    # a query feature that reads a row's own columns: its subject, its date, its neighbours, when it happened
    for update in ({"subject_boost": 0.6}, {"neighbour_window": 2}, {"recency_weight": 0.1}):
        assert SearchPlan(with_vector, SCOPES, vector_only.model_copy(update=update)).reads_rows(vector_list, "memory")
    dated = SignalQuery(text="on 8 May", embedding=vector, signals=frozenset({Signal.VECTOR}), depth=30,
                        dates=tuple(date_mentions("what did we do on 8 May, 2023?")))
    assert dated.dates
    assert SearchPlan(dated, SCOPES, vector_only.model_copy(update={"date_boost": 0.4})).reads_rows(vector_list, "memory")
    # without a date boost too: the score's evidence says whether the row is on the named date
    plan = SearchPlan(dated, SCOPES, vector_only)
    assert plan.reads_rows(vector_list, "memory")
    on_the_day = {turn(1): Candidate(0.9, valid_from=datetime(2023, 5, 8, 12, tzinfo=UTC))}
    [read] = fused_ranking(plan, vector_list, on_the_day)
    [listed] = fused_ranking(plan, vector_list, listed_candidates(vector_list, "memory"))
    assert read.evidence is not None and read.evidence.dated and read.estimate > listed.estimate


def test_a_query_in_the_first_person_names_the_user() -> None:
    assert USER in USER_NAMES and "the user" in USER_NAMES  # as extracted facts call an unnamed user
    assert speaker_names("What deadline did I set for the deployment?") == USER_NAMES
    assert speaker_names("what did i say about my schema") == USER_NAMES
    assert speaker_names("I'm not sure which port is mine") == USER_NAMES
    assert speaker_names("Remind me of the meeting time") == USER_NAMES
    # the plural takes in the assistant as well; words that merely contain the letters are not pronouns
    assert speaker_names("What did we decide about our schema?") == ()
    assert speaker_names("Which iPhone model runs the mime parser?") == ()
    assert speaker_names("What did Caroline paint?") == ()


def test_the_user_named_by_a_pronoun_lifts_the_users_rows_as_a_named_subject_does() -> None:
    # Given the assistant's reply, which the signals rank first, and the user's own turn below it
    mine, reply = turn(1), turn(2)
    candidates = {mine: Candidate(similarity=0.6, subjects=(USER,)), reply: Candidate(similarity=0.7, subjects=("assistant",))}
    lists = RankedLists()
    lists.add(("memory", Signal.VECTOR), [reply, mine])
    lists.scores[("memory", Signal.VECTOR)] = [0.7, 0.6]
    asked = lambda text: SignalQuery(text=text, embedding=None, signals=HYBRID.signals, depth=30,  # noqa: E731
                                     speakers=speaker_names(text))
    order = lambda query, config=HYBRID: [r.key for r in fused_ranking(SearchPlan(query, SCOPES, config), lists, candidates)]  # noqa: E731
    # When the user asks in the first person, their turn is first, lifted by the subject boost
    assert order(asked("what deadline did I set")) == [mine, reply]
    # (which needs the rows' subjects read, even where the list holds all else fusion reads of them)
    bare = HYBRID.model_copy(update={"neighbour_weight": 0.0})
    assert SearchPlan(asked("what deadline did I set"), SCOPES, bare).reads_rows(lists, "memory")
    assert not SearchPlan(asked("what deadline was set"), SCOPES, bare).reads_rows(lists, "memory")
    # and not when the question does not speak of its asker, nor without a subject boost
    assert order(asked("what deadline was set")) == [reply, mine]
    assert order(asked("what deadline did I set"), HYBRID.model_copy(update={"subject_boost": 0.0})) == [reply, mine]
