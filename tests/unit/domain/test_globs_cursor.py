"""Tag globs (SQL LIKE / regex translations) and opaque list cursors."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_engine.domain.cursor import decode_cursor, encode_cursor, next_cursor
from memory_engine.domain.globs import glob_match, glob_to_like, glob_to_regex, parse_globs
from memory_engine.errors import InvalidInput


@pytest.mark.parametrize(
    ("pattern", "like"),
    [("crm", "crm"), ("customer*", "customer%"), ("user-?refs", "user-_refs"), ("50%_off", "50\\%\\_off"),
     ("a\\b", "a\\\\b"), ("*", "%")],
)
def test_glob_to_like(pattern: str, like: str) -> None:
    assert glob_to_like(pattern) == like


@pytest.mark.parametrize(
    ("pattern", "value", "matches"),
    [("crm", "crm", True), ("crm", "crm2", False), ("customer*", "customer", True), ("customer*", "customer-prefs", True),
     ("customer*", "my-customer", False), ("user-?refs", "user-prefs", True), ("user-?refs", "user-refs", False),
     ("a.b", "axb", False), ("role:traffic-*", "role:traffic-manager", True), ("(x)+[y]", "(x)+[y]", True)],
)
def test_glob_match(pattern: str, value: str, matches: bool) -> None:
    assert glob_match(pattern, value) is matches


def _like_match(like: str, value: str) -> bool:
    """A reference LIKE implementation (backslash escapes) to check the translation against."""
    out, i = [], 0
    while i < len(like):
        ch = like[i]
        if ch == "\\":
            out.append(re.escape(like[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.fullmatch("".join(out), value, flags=re.DOTALL) is not None


@given(st.text(alphabet="ab*?%_\\.", max_size=6), st.text(alphabet="ab%_\\.", max_size=6))
def test_like_and_regex_translations_agree(pattern: str, value: str) -> None:
    assert _like_match(glob_to_like(pattern), value) is glob_match(pattern, value)
    assert glob_to_regex(pattern).startswith("^") and glob_to_regex(pattern).endswith("$")


def test_parse_globs() -> None:
    assert parse_globs(None) == []
    assert parse_globs("a, b,,a") == ["a", "b"]
    assert parse_globs(["a,b", "c"]) == ["a", "b", "c"]
    with pytest.raises(ValueError):
        parse_globs(["x" * 129])
    with pytest.raises(ValueError):
        parse_globs([f"t{i}" for i in range(51)])


def test_cursor_round_trip_and_garbage() -> None:
    stamp = datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    cursor = decode_cursor(encode_cursor(stamp, "ment_01"))
    assert cursor is not None and cursor.created_at == stamp and cursor.id == "ment_01"
    other_zone = datetime(2025, 1, 2, 5, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    assert decode_cursor(encode_cursor(other_zone, "x")).created_at == other_zone  # type: ignore[union-attr]
    assert re.fullmatch(r"[A-Za-z0-9_-]+", encode_cursor(stamp, "id/with?chars"))
    assert decode_cursor(None) is None and decode_cursor("") is None
    for garbage in ("!!!", "bm90IGpzb24", encode_cursor(stamp, "x")[:-3], "WzEsMl0"):
        with pytest.raises(InvalidInput):
            decode_cursor(garbage)


def test_next_cursor_only_when_more_rows_exist() -> None:
    t = datetime(2025, 1, 1, tzinfo=UTC)
    rows = [(t, "c"), (t, "b"), (t, "a")]
    assert next_cursor(rows[:2], 2) is None
    token = next_cursor(rows, 2)
    assert token is not None and decode_cursor(token).id == "b"  # type: ignore[union-attr]
