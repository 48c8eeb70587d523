"""What the adapters share: search results as the text a tool hands back to a model."""

from __future__ import annotations

from memory_engine_client import models as m

#: What a recall tool answers when the engine found nothing relevant.
NOTHING_FOUND = "No relevant memories."


def results_text(found: m.SearchResponseBody) -> str:
    """One line per result, best first: ``- content (score 0.83)``; documents name their path and page."""
    lines = []
    for result in found.results:
        where = ""
        if isinstance(result, m.DocumentResult):
            where = f" [{result.path}{f' p.{result.page}' if result.page is not None else ''}]"
        lines.append(f"- {result.content}{where} (score {result.score:.2f})")
    return "\n".join(lines) or NOTHING_FOUND
