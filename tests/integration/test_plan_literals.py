"""Values a search writes into its statements as literals (``adapters/postgres/lanes``, marked
``PlanValue`` where the parameters are made) come back from PostgreSQL exactly as sent, whatever their
text, and equal values of different types stay apart; a value not marked is bound, whatever its name."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_engine.adapters.postgres import lanes

# What the scope holds: ids and patterns (text, arrays of text), row counts and floors (numbers),
# flags. Text without NUL (PostgreSQL text cannot hold it; the API refuses it at the edge).
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40)
FLOATS = st.floats(allow_nan=False, allow_infinity=False, width=64)
# as_of: an aware timestamp within PostgreSQL's range (microseconds, as psycopg sends them)
TIMESTAMPS = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                          timezones=st.timezones()).filter(lambda t: t.utcoffset() is not None)
SCALARS = st.one_of(TEXT, st.integers(-(2**31), 2**31 - 1), st.booleans(), FLOATS, TIMESTAMPS)


@pytest.fixture(scope="module")
def conn(database_url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(database_url, autocommit=True) as connection:
        yield connection


def _round_trip(conn: psycopg.Connection[Any], value: Any) -> Any:
    # psycopg writes a list of strings untyped ('{...}'), as the statements use it: against a typed
    # column (memory_id = ANY(...)), which gives it its type; here the cast plays that column
    cast = "::text[]" if isinstance(value, list) and all(isinstance(v, str) for v in value) else ""
    query = lanes.with_plan_values(f"SELECT %(limit)s{cast} AS v", {"limit": lanes.PlanValue(value)}, conn)
    row = conn.execute(query, {}).fetchone()
    assert row is not None
    return row[0]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.one_of(SCALARS, st.lists(TEXT, min_size=1, max_size=5),
                       st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=5),
                       st.lists(FLOATS, min_size=1, max_size=5)))
def test_a_literal_comes_back_equal_to_what_was_sent(conn: psycopg.Connection[Any], value: Any) -> None:
    back = _round_trip(conn, value)
    if isinstance(value, float):
        assert float(back) == value
    elif isinstance(value, datetime):
        # the same instant (PostgreSQL answers in the session's time zone; an ambiguous local time
        # never compares equal across zones in Python, PEP 495)
        assert back.astimezone(UTC) == value.astimezone(UTC)
    else:
        assert back == value and type(back) is type(value)


def test_equal_values_of_different_types_are_quoted_apart(conn: psycopg.Connection[Any]) -> None:
    # Given values that compare equal in Python but are different SQL types, each quoted in turn
    assert _round_trip(conn, [1, 2]) == [1, 2]
    floats = _round_trip(conn, [1.5, 2.0])
    ints_then_floats = _round_trip(conn, [1.0, 2.0])
    # Then each keeps its own type (the cache used to answer the int2[] literal for [1.0, 2.0])
    assert floats == [1.5, 2.0] and all(isinstance(v, float) for v in ints_then_floats)
    assert _round_trip(conn, [True]) == [True]
    assert _round_trip(conn, [1]) == [1] and type(_round_trip(conn, [1])[0]) is int


def test_only_marked_values_are_written_in(conn: psycopg.Connection[Any]) -> None:
    # Given a statement with two parameters, one marked as a plan value and one not, both named like
    # the row counts search writes in
    query = lanes.with_plan_values("SELECT %(depth)s::int AS a, %(limit)s::int AS b", {
        "depth": lanes.PlanValue(7), "limit": 8}, conn)
    # Then the marked one is in the text and the other is still a placeholder, bound when run
    assert query == "SELECT 7::int AS a, %(limit)s::int AS b"
    assert tuple(conn.execute(query, {"limit": 8}).fetchone() or ()) == (7, 8)


def test_outside_a_search_transaction_marked_values_are_bound(conn: psycopg.Connection[Any]) -> None:
    # Given a statement whose parameter is marked, run through a connection outside a search transaction
    with lanes.bound(conn):
        row = conn.execute("SELECT %(limit)s::text[] AS v", {"limit": lanes.PlanValue(["it's 100%"])}).fetchone()
    # Then it is bound like any value (a plain cursor could not adapt the mark at all)
    assert row is not None and row[0] == ["it's 100%"]
    with pytest.raises(psycopg.ProgrammingError):
        conn.execute("SELECT %(limit)s AS v", {"limit": lanes.PlanValue(1)})
