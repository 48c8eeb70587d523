"""Newer statements above older ones on a page (domain/supersession.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory_engine.domain.relevance import along_ranking
from memory_engine.domain.search_models import ResultKey
from memory_engine.domain.supersession import MIN_SIMILARITY, Held, Restatement, newer_first
from memory_engine.domain.write_decision import MERGE_FLOOR

DAY = datetime(2024, 4, 25, tzinfo=UTC)


def key(name: str) -> ResultKey:
    return ("memory", name)


def at(day: int, written: int = 0) -> Held:
    return Held(DAY + timedelta(days=day), DAY + timedelta(days=day, minutes=written))


def same(a: str, a_held: Held, b: str, b_held: Held) -> Restatement:
    return Restatement(key(a), a_held, key(b), b_held)


def order(page: list[str], *restated: Restatement) -> list[str]:
    return [k[1] for k in newer_first([key(name) for name in page], lambda k: k, restated)]


def test_the_band_is_the_write_funnels_merge_band() -> None:
    assert MIN_SIMILARITY == MERGE_FLOOR


def test_a_newer_statement_ranked_lower_moves_immediately_above_the_older() -> None:
    # Given "150 commits" (day 0) first on the page and "165 commits" (day 3) fourth
    page = ["old", "x", "y", "new", "z"]
    # When both state the same thing
    # Then the newer stands immediately above the older; the others keep their order
    assert order(page, same("old", at(0), "new", at(3))) == ["new", "old", "x", "y", "z"]


def test_an_older_statement_ranked_lower_stays_where_it_is() -> None:
    page = ["new", "x", "old"]
    assert order(page, same("old", at(0), "new", at(3))) == page


def test_same_day_statements_are_ordered_by_when_they_were_written() -> None:
    # Given both held from the same session date, the correction written an hour later
    page = ["first", "x", "correction"]
    assert order(page, same("first", at(0, written=0), "correction", at(0, written=60))) == ["correction", "first", "x"]


def test_statements_written_at_the_same_moment_keep_the_ranking_order() -> None:
    page = ["a", "x", "b"]
    assert order(page, same("a", at(0), "b", at(0))) == page


def test_a_group_of_three_is_ordered_newest_first_at_its_first_place() -> None:
    # Given v1 (day 0) first, v3 (day 2) third, v2 (day 1) fifth, linked through v1
    page = ["v1", "x", "v3", "y", "v2"]
    restated = [same("v1", at(0), "v3", at(2)), same("v1", at(0), "v2", at(1))]
    assert order(page, *restated) == ["v3", "v2", "v1", "x", "y"]


def test_rows_of_no_pair_are_never_reordered() -> None:
    page = ["a", "b", "c", "d"]
    assert order(page) == page
    # two separate pairs, each already newest first: nothing moves
    assert order(page, same("a", at(5), "c", at(1)), same("b", at(5), "d", at(1))) == page


def test_scores_along_the_reordered_page_never_rise_and_the_moved_row_takes_the_older_rows() -> None:
    # Given estimates 0.6 (old), 0.3, 0.1 (new): the new one moved up
    estimates = {"old": 0.6, "x": 0.3, "new": 0.1}
    page = order(["old", "x", "new"], same("old", at(0), "new", at(1)))
    scores = along_ranking([estimates[name] for name in page])
    assert page == ["new", "old", "x"]
    assert scores == [0.6, 0.6, 0.3]
