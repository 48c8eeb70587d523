"""Tag glob patterns (``*`` any run, ``?`` one character) translated for SQL and Python.

Used by the memories list filter and by knowledge search's ``memory_tags``. Several patterns
are ORed: SQL callers pass :func:`globs_to_like` output to ``tag LIKE ANY(%s)``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memory_engine.errors import InvalidInput

MAX_PATTERNS = 50
MAX_PATTERN_CHARS = 128


#: LIKE's special characters escaped (escape character backslash, PostgreSQL's default) ...
_LITERAL = str.maketrans({"%": "\\%", "_": "\\_", "\\": "\\\\"})
#: ... and a glob's wildcards as LIKE writes them.
_LIKE = _LITERAL | str.maketrans({"*": "%", "?": "_"})


def glob_to_like(pattern: str) -> str:
    """A LIKE pattern matching ``pattern`` (``*`` any run, ``?`` one character); ``%``, ``_`` and
    ``\\`` in the glob are literal."""
    return pattern.translate(_LIKE)


def prefix_to_like(prefix: str) -> str:
    """A LIKE pattern matching every string that starts with ``prefix`` (taken literally)."""
    return prefix.translate(_LITERAL) + "%"


def glob_to_regex(pattern: str) -> str:
    """An anchored regular expression (valid for Python ``re`` and PostgreSQL ``~``)."""
    parts = []
    for ch in pattern:
        if ch == "*":
            parts.append(".*")
        elif ch == "?":
            parts.append(".")
        elif ch.isalnum():
            parts.append(ch)
        else:
            parts.append("\\" + ch)  # a backslash before a non-alphanumeric is literal in both dialects
    return "^" + "".join(parts) + "$"


def glob_match(pattern: str, value: str) -> bool:
    return re.fullmatch(glob_to_regex(pattern), value, flags=re.DOTALL) is not None


def parse_globs(raw: str | Iterable[str] | None) -> list[str]:
    """Patterns from a comma-separated string (as API Gateway joins repeated query parameters)
    or a list; blanks dropped, duplicates removed. Raises ValueError when too many or too long."""
    if raw is None:
        return []
    items = raw.split(",") if isinstance(raw, str) else [p for item in raw for p in item.split(",")]
    patterns: list[str] = []
    for item in items:
        value = item.strip()
        if not value or value in patterns:
            continue
        if len(value) > MAX_PATTERN_CHARS:
            raise ValueError(f"tag pattern longer than {MAX_PATTERN_CHARS} characters")
        patterns.append(value)
    if len(patterns) > MAX_PATTERNS:
        raise ValueError(f"at most {MAX_PATTERNS} tag patterns")
    return patterns


def tag_filter(raw: str | Iterable[str] | None) -> list[str]:
    """The ``tags`` filter of a list request (:func:`parse_globs`); raises InvalidInput (422)."""
    try:
        return parse_globs(raw)
    except ValueError as exc:
        raise InvalidInput(str(exc), details=[{"field": "tags"}]) from exc


def globs_to_like(patterns: Iterable[str]) -> list[str]:
    return [glob_to_like(p) for p in patterns]
