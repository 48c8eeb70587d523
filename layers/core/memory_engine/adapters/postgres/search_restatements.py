"""SQL of the facts of a search page that state the same thing (domain/supersession.py).

A column of the facts' page read (:func:`search_memories.rows`), so it costs no statement of its
own: for each fact of the page, the ids of the other facts of the page (``%(ids)s``) of its memory
whose vectors are at least ``%(min_similarity)s`` alike (a page holds at most ``limit`` rows, so at
most ``limit * (limit - 1)`` cosines between vectors already in memory, read once by the
statement's first step: looked up again for each row, a page of 100 cost 7 ms). Conversation turns are
left out: their vector also reads the turn before them (``context``), and a turn of a conversation
(``source_conversation_id``, not an extracted fact) is an event of it, not a self-contained
statement; an extracted fact is written self-contained.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from memory_engine.adapters.postgres.database import Row
from memory_engine.domain.search_models import SourceType
from memory_engine.domain.supersession import Held, Restatement

#: The page read's first step: the page's facts that are statements (``context IS NULL``, not a
#: conversation's turn), with their vectors, read once (the column below compares each row with them).
PAGE_STATEMENTS: Final = (
    "page_statements AS MATERIALIZED (SELECT o.id, o.memory_id, o.embedding FROM memory_entries o"
    " WHERE o.project_id = %(project_id)s AND o.id = ANY(%(ids)b::text[])"
    " AND o.context IS NULL AND (o.source_conversation_id IS NULL OR o.source_type = 'extraction'))"
)
#: The page read's column (over its row ``e``): the page's other statements of its memory that state
#: the same thing (none for a conversation's turn).
RESTATED_WITH: Final = (
    "CASE WHEN e.context IS NULL AND (e.source_conversation_id IS NULL OR e.source_type = 'extraction')"
    " THEN ARRAY(SELECT o.id FROM page_statements o WHERE o.id <> e.id AND o.memory_id = e.memory_id"
    " AND 1 - (o.embedding <=> e.embedding) >= %(min_similarity)s) END AS restated_with"
)


def restatements(source: SourceType, rows: Sequence[Row]) -> list[Restatement]:
    """The pairs the page read's ``restated_with`` names, each once, each fact with when it held
    (``valid_from``, else when it was written)."""
    held = {row["id"]: Held(row["valid_from"] or row["created_at"], row["created_at"]) for row in rows}
    return [Restatement((source, row["id"]), held[row["id"]], (source, other), held[other])
            for row in rows for other in row.get("restated_with") or () if row["id"] < other and other in held]
