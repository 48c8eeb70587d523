"""Pure helpers that read a query's text: entity-name candidates and keyword mode."""

from __future__ import annotations

import re

from memory_engine.domain.entities import normalize_entity_name

_WORD = re.compile(r"\w+", re.UNICODE)
_WEBSEARCH_SYNTAX = re.compile(r'"|(^|\s)-\w|\s(or)\s', re.IGNORECASE)

#: Longest entity name (in words) looked up from the query.
MAX_NAME_WORDS = 6
MAX_CANDIDATES = 2_000


def normalize_name(text: str) -> str:
    """Entity-name normalization shared with the write path (NFKC, lower case, single spaces)."""
    return normalize_entity_name(text)


def name_candidates(query: str, *, max_words: int = MAX_NAME_WORDS) -> list[str]:
    """Every span of the normalized query that starts at a word start and ends at a word end,
    up to ``max_words`` words: exactly the strings an entity name can equal to be "named in the
    query" at word boundaries (so ``art`` is a candidate of "art class" but never of "start").
    """
    text = normalize_name(query)
    words = list(_WORD.finditer(text))
    out: dict[str, None] = {}
    for i, first in enumerate(words):
        for last in words[i : i + max_words]:
            out.setdefault(text[first.start() : last.end()], None)
            if len(out) >= MAX_CANDIDATES:
                return list(out)
    return list(out)


def uses_websearch_syntax(query: str) -> bool:
    """True when the caller wrote ``websearch_to_tsquery`` syntax (quotes, ``or``, ``-term``)."""
    return bool(_WEBSEARCH_SYNTAX.search(query))
