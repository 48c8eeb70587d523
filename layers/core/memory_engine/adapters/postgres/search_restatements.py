"""SQL of the facts of a search page that state the same thing (domain/supersession.py).

One statement over the page's fact ids (a page holds at most ``limit`` rows, so at most
``limit * (limit - 1) / 2`` cosines between vectors already in memory): the pairs of one memory
whose vectors are at least ``min_similarity`` alike, each fact with when it held. Conversation
turns are left out: their vector also reads the turn before them (``context``), and a turn of a
conversation (``source_conversation_id``, not an extracted fact) is an event of it, not a
self-contained statement; an extracted fact is written self-contained.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import psycopg

from memory_engine.adapters.postgres.lanes import PlanValue
from memory_engine.adapters.postgres.search_memories import SOURCE
from memory_engine.domain.supersession import Held, Restatement

RESTATED: Final = """
WITH page AS MATERIALIZED (
    SELECT e.id, e.memory_id, e.embedding, coalesce(e.valid_from, e.created_at) AS since, e.created_at
    FROM memory_entries e
    WHERE e.project_id = %(project_id)s AND e.id = ANY(%(ids)b::text[]) AND e.embedding IS NOT NULL
      AND e.context IS NULL AND (e.source_conversation_id IS NULL OR e.source_type = 'extraction')
)
SELECT a.id, a.since, a.created_at, b.id AS other, b.since AS other_since, b.created_at AS other_created_at
FROM page a JOIN page b ON b.memory_id = a.memory_id AND b.id > a.id
WHERE 1 - (a.embedding <=> b.embedding) >= %(min_similarity)s
ORDER BY a.id, b.id
"""


def restated(conn: psycopg.Connection[Any], project_id: str, ids: Sequence[str], min_similarity: float) -> list[Restatement]:
    """The pairs of the facts ``ids`` of one memory that state the same thing (cosine at least
    ``min_similarity``), conversation turns left out."""
    rows = conn.execute(RESTATED, {"project_id": PlanValue(project_id), "ids": list(ids),
                                   "min_similarity": min_similarity}).fetchall()
    return [Restatement((SOURCE, row["id"]), Held(row["since"], row["created_at"]),
                        (SOURCE, row["other"]), Held(row["other_since"], row["other_created_at"])) for row in rows]
