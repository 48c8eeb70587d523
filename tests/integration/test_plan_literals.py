"""Values a search writes into its statements as literals (``adapters/postgres/lanes``) come back from
PostgreSQL exactly as sent, whatever their text, and equal values of different types stay apart."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_engine.adapters.postgres import lanes

# What the scope holds: ids and patterns (text, arrays of text), row counts and floors (numbers),
# flags. Text without NUL (PostgreSQL text cannot hold it; the API refuses it at the edge).
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40)
SCALARS = st.one_of(TEXT, st.integers(-(2**31), 2**31 - 1), st.booleans(),
                    st.floats(allow_nan=False, allow_infinity=False, width=64))


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
                       st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=5)))
def test_a_literal_comes_back_equal_to_what_was_sent(conn: psycopg.Connection[Any], value: Any) -> None:
    back = _round_trip(conn, value)
    if isinstance(value, float):
        assert float(back) == value
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
