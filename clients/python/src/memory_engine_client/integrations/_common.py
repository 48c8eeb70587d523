"""What the adapters share: search results as the text a tool hands back to a model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from memory_engine_client import models as m

#: Turns per ``record_turns`` call (the engine's limit) ...
MAX_TURNS = 100
#: ... and bytes of JSON per call: under Lambda's 6 MB synchronous payload (the gateway takes 10 MB).
MAX_BATCH_BYTES = 5 * 1024 * 1024

#: What a recall tool answers when the engine found nothing relevant.
NOTHING_FOUND = "No relevant memories."


def results_text(found: m.SearchResponseBody) -> str:
    """One line per result, best first: ``- content (score 0.83)``; documents name their path and
    page, conversation turns their conversation and turn."""
    lines = []
    for result in found.results:
        where = ""
        if isinstance(result, m.DocumentResult):
            where = f" [{result.path}{f' p.{result.page}' if result.page is not None else ''}]"
        elif isinstance(result, m.EpisodeSearchResult):
            where = f" [turn {result.conversation_id or ''}/{result.turn_id or result.id}]"
        lines.append(f"- {result.content}{where} (score {result.score:.2f})")
    return "\n".join(lines) or NOTHING_FOUND


def turn_batches(turns: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """``turns`` in order, cut into ``record_turns`` calls of at most 100 turns and ~5 MB each (a
    single larger turn goes alone: the engine answers 413 beyond 1 MB of content)."""
    batch: list[dict[str, Any]] = []
    size = 0
    for turn in turns:
        cost = len(json.dumps(turn, ensure_ascii=False, default=str).encode()) + 1
        if batch and (len(batch) == MAX_TURNS or size + cost > MAX_BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(turn)
        size += cost
    if batch:
        yield batch
