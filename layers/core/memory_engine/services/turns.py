"""Use cases of ``/v1/memories/{memory_id}/turns``: record, list and delete a conversation's turns.

Turns are stored as the memory's episodes through the same repository a ``turn.completed`` event
writes with (one row per turn, with vectors over windows covering the whole turn, all embedded
best-effort in one call: :func:`embed_windows`, which the event path uses too); with ``extract`` and a chat model
configured each new user/assistant turn is queued for fact extraction as a ``turn.completed``
event under the turn's own event id (domain/turns.py), so the consumer finds the stored episode
and extracts from it, once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memory_engine import ids
from memory_engine.domain.cursor import decode_cursor, encode_cursor
from memory_engine.domain.events import MAX_MESSAGE_CHARS, TRANSCRIPT_ROLES, TurnCompletedEvent
from memory_engine.domain.turns import (
    RecordedTurn,
    Turn,
    TurnInput,
    TurnPage,
    TurnsRecorded,
    TurnsRequest,
    check_turn_sizes,
    turn_event_id,
    turn_message,
    window_spans,
)
from memory_engine.errors import EmbeddingError, NotFound
from memory_engine.ports.embedder import Embedder
from memory_engine.ports.entries import MemoryRepository
from memory_engine.ports.episodes import Episode, EpisodeRepository, EpisodeWindow, NewEpisode
from memory_engine.ports.events import EventQueue

logger = logging.getLogger(__name__)

#: Source of the ``turn.completed`` events queued for turns recorded over HTTP.
EVENT_SOURCE = "memory-engine.turns"
#: The queued event carries the turn's text cut to this many characters (an SQS message holds
#: 256 KB); the consumer extracts from the stored episode, which holds all of it.
EVENT_CONTENT_CHARS = 50_000


@dataclass
class TurnPorts:
    memories: MemoryRepository
    episodes: EpisodeRepository
    embedder: Embedder
    #: The extraction queue, or None when no chat model is configured (nothing to extract with).
    queue: Callable[[], EventQueue] | None
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)


def record_turns(ports: TurnPorts, project_id: str, memory_id: str, request: TurnsRequest) -> TurnsRecorded:
    """Store the turns (201 body). Raises NotFound (unknown memory), PayloadTooLarge (a turn too large)."""
    check_turn_sizes(request)
    ports.memories.get(project_id, memory_id)  # NotFound when absent or another project's
    now = ports.clock()
    row_ids = sorted(ids.new_id(ids.EPISODE) for _ in request.turns)  # made in order: same-time turns keep it
    new = [_new_episode(project_id, memory_id, request.conversation_id, turn, now, row_id)
           for turn, row_id in zip(request.turns, row_ids, strict=True)]
    stored = ports.episodes.store_turns(new, embed_windows(ports.embedder, [episode.transcript for episode in new]))
    # every turn of the request, not only the new ones: a retry completes what a failed model left
    read_turns_before(ports.episodes, ports.embedder, project_id, [episode.id for episode, _ in stored])
    recorded = [RecordedTurn(id=episode.id, turn_id=episode.turn_id or "", created=created,
                             occurred_at=episode.occurred_at) for episode, created in stored]
    if not request.extract:
        return TurnsRecorded(memory_id=memory_id, conversation_id=request.conversation_id, turns=recorded,
                             extraction="not_requested")
    if ports.queue is None:
        return TurnsRecorded(memory_id=memory_id, conversation_id=request.conversation_id, turns=recorded,
                             extraction="no_chat_model")
    queue = ports.queue()
    event_ids = []
    for (episode, created), turn in zip(stored, request.turns, strict=True):
        if not created or turn.role not in TRANSCRIPT_ROLES:
            continue
        event = _event(project_id, memory_id, request.conversation_id, episode, turn)
        queue.submit(event.to_eventbridge())
        event_ids.append(event.id)
    return TurnsRecorded(memory_id=memory_id, conversation_id=request.conversation_id, turns=recorded,
                         extraction="queued", extraction_event_ids=event_ids)


def list_turns(
    memories: MemoryRepository, episodes: EpisodeRepository, project_id: str, memory_id: str, conversation_id: str,
    *, limit: int, cursor: str | None, newest_first: bool = False,
) -> TurnPage:
    """A page of the conversation's turns, oldest first (newest first with ``newest_first``).
    Raises NotFound (unknown memory), InvalidInput (a cursor this API did not issue)."""
    after = decode_cursor(cursor)
    memories.get(project_id, memory_id)
    rows, following = episodes.list_turns(project_id, memory_id, conversation_id, limit=limit, cursor=after,
                                          newest_first=newest_first)
    return TurnPage(data=[turn_view(row) for row in rows],
                    next_cursor=encode_cursor(following.created_at, following.id) if following else None)


def delete_turns(
    memories: MemoryRepository, episodes: EpisodeRepository, embedder: Embedder, project_id: str, memory_id: str, *,
    conversation_id: str | None = None, turn_id: str | None = None,
) -> int:
    """Delete one turn (by ``turn_id``, optionally within a conversation) or a whole conversation;
    the turn after a deleted one is embedded after its new turn before (:func:`read_turns_before`).
    Raises NotFound for an unknown memory, and for a ``turn_id`` that matches nothing."""
    memories.get(project_id, memory_id)
    deleted = episodes.delete_turns(project_id, memory_id, conversation_id=conversation_id, turn_id=turn_id)
    if turn_id is not None and deleted.count == 0:
        raise NotFound(f"turn {turn_id} not found")
    read_turns_before(episodes, embedder, project_id, deleted.around)
    return deleted.count


def turn_view(episode: Episode) -> Turn:
    messages = episode.messages
    single: dict[str, Any] | None = messages[0] if len(messages) == 1 else None
    return Turn(
        id=episode.id, memory_id=episode.memory_id or "", conversation_id=episode.conversation_id or "",
        turn_id=episode.turn_id, role=single.get("role") if single else None,
        content=str(single.get("content", "")) if single else episode.transcript,
        metadata=single.get("metadata") if single else None, messages=messages,
        occurred_at=episode.occurred_at, created_at=episode.created_at,
    )


def _new_episode(project_id: str, memory_id: str, conversation_id: str, turn: TurnInput, now: datetime,
                 row_id: str) -> NewEpisode:
    turn_id = turn.turn_id or row_id
    return NewEpisode(
        project_id=project_id, memory_id=memory_id, conversation_id=conversation_id, turn_id=turn_id,
        event_id=turn_event_id(memory_id, conversation_id, turn_id), occurred_at=turn.occurred_at or now,
        transcript=_transcript(turn), messages=[turn_message(turn)], id=row_id,
    )


def _transcript(turn: TurnInput) -> str:
    """The text searched and extracted from: ``role: content`` as an event's transcript writes it
    (system and tool turns too: a turn recorded here is one message, kept whole)."""
    return f"{turn.role}: {turn.content.strip()}"


def embed_windows(embedder: Embedder, transcripts: Sequence[str]) -> list[list[EpisodeWindow]]:
    """Each transcript's vector windows (:func:`window_vectors`) when the model answers. When it fails
    the episodes are stored without (best effort, as before: keyword search still finds them; a
    ``turn.completed`` event's redelivery or ``memory-engine reembed`` embeds them later)."""
    try:
        return window_vectors(embedder, transcripts)
    except EmbeddingError as error:
        logger.warning("turns stored without embeddings: %s", error.message)
        return [[] for _ in transcripts]


def window_vectors(embedder: Embedder, transcripts: Sequence[str]) -> list[list[EpisodeWindow]]:
    """Each transcript's vector windows (:func:`memory_engine.domain.turns.window_spans`: the whole
    turn, however long), every window of every transcript embedded in one call. Raises
    EmbeddingError when the model fails."""
    spans = [window_spans(transcript) for transcript in transcripts]
    texts = [transcript[start:end] for transcript, own in zip(transcripts, spans, strict=True) for start, end in own]
    vectors = iter(embedder.embed_documents(texts)) if texts else iter(())
    return [[EpisodeWindow(start, end, next(vectors)) for start, end in own] for own in spans]


#: Turns read per statement and embedded per model call by :func:`read_turns_before`.
READ_BATCH = 256


def read_turns_before(episodes: EpisodeRepository, embedder: Embedder, project_id: str, episode_ids: Sequence[str]) -> int:
    """Gives each of ``episode_ids`` and the turn right after each its window over the turn before
    it, where the two fit in one model window (:func:`memory_engine.domain.turns.read_after`) and it
    has none over that turn yet: after turns are recorded, imported or deleted (a turn whose turn
    before was deleted lost its window with it). Best-effort: when the model fails they keep their
    own windows (and no window over a deleted turn) until ``memory-engine reembed``; returns how many
    were stored."""
    stored = 0
    for start in range(0, len(episode_ids), READ_BATCH):
        turns = episodes.turns_to_read(project_id, episode_ids[start:start + READ_BATCH])
        if not turns:
            continue
        try:
            vectors = embedder.embed_documents([turn.text for turn in turns])
        except EmbeddingError as error:
            logger.warning("%d turns stored without their window over the turn before them (memory-engine reembed"
                           " adds it): %s", len(turns), error.message)
            return stored
        stored += episodes.store_read_windows(project_id, list(zip(turns, vectors, strict=True)))
    return stored


def _event(project_id: str, memory_id: str, conversation_id: str, episode: Episode, turn: TurnInput) -> TurnCompletedEvent:
    content = turn.content[:min(EVENT_CONTENT_CHARS, MAX_MESSAGE_CHARS)]
    return TurnCompletedEvent.model_validate({
        "id": episode.event_id, "detail-type": "turn.completed", "source": EVENT_SOURCE,
        "time": datetime.now(UTC),
        "detail": {"project_id": project_id, "memory_id": memory_id, "conversation_id": conversation_id,
                   "turn_id": episode.turn_id, "occurred_at": episode.occurred_at,
                   "messages": [{"role": turn.role, "content": content}], "extract": True},
    })
