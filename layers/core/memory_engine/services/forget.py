"""Forgetting on request: hard deletes of what came from a conversation, of an entity of a
memory, or of a whole memory (``purge``), with counts and a ``memory.forgotten`` event.

Idempotent: a repeated call finds nothing left, deletes nothing, answers zeros and publishes no
event. Publishing is best-effort after the deletion committed (a bus failure is logged, never
turns a done deletion into an error).
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel, Field

from memory_engine import constants as c
from memory_engine.domain.entities import normalize_entity_name
from memory_engine.domain.requests import ForgetRequest
from memory_engine.ports.embedder import Embedder
from memory_engine.ports.entries import EntryRepository
from memory_engine.ports.episodes import EpisodeRepository
from memory_engine.ports.events import EventPublisher
from memory_engine.ports.lifecycle import ForgetRepository
from memory_engine.services.memories import embed_cleared
from memory_engine.services.turns import read_turns_before

logger = logging.getLogger(__name__)


class ForgetCounts(BaseModel):
    entries: int = Field(description="entries deleted, live and history")
    episodes: int
    extraction_runs: int
    entities: int = Field(description="entities no entry links any more")


class ForgetResult(BaseModel):
    deleted: ForgetCounts


def forget(repo: ForgetRepository, publisher: EventPublisher, project_id: str, request: ForgetRequest, *,
           entries: EntryRepository, episodes: EpisodeRepository, embedder: Embedder) -> ForgetResult:
    """Raises NotFound when ``memory_id`` is not in the project. The turns left next to a deleted
    turn no longer hold its words (services.memories.delete_entry) and, recorded turns, are embedded
    after their new neighbours (services.turns.read_turns_before)."""
    if request.conversation_id is not None:
        done = repo.forget_conversation(project_id, request.conversation_id, memory_id=request.memory_id)
        scope: dict[str, Any] = {"conversation_id": request.conversation_id, "memory_id": request.memory_id}
    else:
        assert request.memory_id is not None and request.entity is not None
        done = repo.forget_entity(project_id, request.memory_id, normalize_entity_name(request.entity))
        scope = {"memory_id": request.memory_id, "entity": request.entity}
    embed_cleared(entries, embedder, project_id, done.cleared)
    read_turns_before(episodes, embedder, project_id, done.episodes_around)
    _publish(publisher, project_id, scope, done.counts)
    return ForgetResult(deleted=ForgetCounts(**done.counts))


def purge_memory(repo: ForgetRepository, publisher: EventPublisher, project_id: str, memory_id: str) -> ForgetResult:
    """The memory and everything from it. Raises NotFound (also on a repeat: it is gone)."""
    counts = repo.purge_memory(project_id, memory_id).counts  # no turn of the memory is left to hold its words
    _publish(publisher, project_id, {"memory_id": memory_id, "purge": True}, {**counts, "memories": 1})
    return ForgetResult(deleted=ForgetCounts(**counts))


def _publish(publisher: EventPublisher, project_id: str, scope: dict[str, Any], counts: dict[str, int]) -> None:
    if not any(counts.values()):
        return  # nothing was deleted: a repeat is a no-op, on the bus too
    try:
        publisher.publish(c.DETAIL_TYPE_MEMORY_FORGOTTEN, {"project_id": project_id, **scope, "deleted": counts})
    except Exception:
        logger.exception("could not publish %s for project %s", c.DETAIL_TYPE_MEMORY_FORGOTTEN, project_id)
