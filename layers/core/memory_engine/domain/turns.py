"""Conversation turns recorded over HTTP (``/v1/memories/{memory_id}/turns``).

A turn is one message of a conversation. It is stored as one of the memory's episodes, the same row
a ``turn.completed`` event writes (``messages`` holds the one message, with its ``metadata``), under
an event id derived from ``(memory_id, conversation_id, turn_id)``: posting the same turn again
stores nothing new, and its extraction run (``extract: true``) is claimed by that same id, so it
runs once however often the turn is sent.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memory_engine.domain.chunking import size_spans
from memory_engine.domain.entities import EMBED_WINDOW_CHARS
from memory_engine.domain.events import MAX_ID_CHARS
from memory_engine.domain.validation import JsonObject, Text, Timestamp, non_blank
from memory_engine.errors import PayloadTooLarge

#: A turn's ``content`` is at most this many bytes of UTF-8 (413 beyond).
MAX_TURN_BYTES = 1024 * 1024
#: Turns per request.
MAX_TURNS_PER_REQUEST = 100
#: A turn's ``metadata``, in bytes of compact JSON (413 beyond).
MAX_TURN_METADATA_BYTES = 64 * 1024
#: Consecutive vector windows of an episode's transcript overlap by this many characters, so a
#: phrase cut at one window's end is read whole by the next (:func:`window_spans`).
WINDOW_OVERLAP_CHARS = 100


def window_spans(transcript: str) -> list[tuple[int, int]]:
    """The windows ``[start, end)`` an episode's transcript is embedded in, covering all of it:
    the embedding model's window (:data:`EMBED_WINDOW_CHARS`) with :data:`WINDOW_OVERLAP_CHARS`
    of overlap; one window for a transcript that fits (none for an empty one)."""
    return size_spans(len(transcript), EMBED_WINDOW_CHARS, WINDOW_OVERLAP_CHARS)


#: The ``window_index`` of an episode's window over the turn before it and its own transcript
#: (:func:`read_after`; migration 0014); its own windows are numbered from 0.
READ_BEFORE_WINDOW = -1


def fits_after(before_chars: int, transcript_chars: int) -> bool:
    """Whether a turn of ``transcript_chars`` is also embedded after the turn before it, of
    ``before_chars`` (:func:`read_after`): both, a line each, fit in the model's window."""
    return before_chars > 0 and transcript_chars > 0 and before_chars + 1 + transcript_chars <= EMBED_WINDOW_CHARS


def read_after(before: str, transcript: str) -> str | None:
    """What an episode's window over the turn before it embeds: the two transcripts, a line each,
    when they fit in the model's window together (:func:`fits_after`); else None. "Yes, last
    Tuesday!" alone means nothing, and a fact written as a conversation's turn is embedded after
    the turn before it for that reason; a turn recorded through the turns endpoint keeps the
    windows of its own transcript and, when the pair fits, this one more. A longer pair gets none: the
    neighbour's text would take the window from the turn (BEAM's long technical messages, issue 35
    section 3 (a)). LoCoMo dev5 recorded as turns (docs/retrieval.md, "Episodes"): vector-only
    recall@10 0.498 -> 0.523 with it."""
    return f"{before}\n{transcript}" if fits_after(len(before), len(transcript)) else None


#: Prefix of the event id of a turn recorded over HTTP (EventBridge ids are UUIDs: never a clash).
TURN_EVENT_PREFIX = "turn:"

Role = Literal["user", "assistant", "system", "tool"]


class TurnInput(BaseModel):
    """One turn of ``POST /v1/memories/{memory_id}/turns``. ``turn_id`` makes the write idempotent
    (the server makes one up when absent); ``occurred_at`` defaults to the time of the request."""

    model_config = ConfigDict(extra="forbid")

    turn_id: Text | None = Field(None, min_length=1, max_length=MAX_ID_CHARS)
    role: Role
    content: Annotated[Text, non_blank("content")] = Field(min_length=1)
    occurred_at: Timestamp | None = None
    metadata: JsonObject | None = None


class TurnsRequest(BaseModel):
    """Body of ``POST /v1/memories/{memory_id}/turns``."""

    model_config = ConfigDict(extra="forbid")

    conversation_id: Text = Field(min_length=1, max_length=MAX_ID_CHARS)
    turns: list[TurnInput] = Field(min_length=1, max_length=MAX_TURNS_PER_REQUEST)
    extract: bool = False


def check_turn_sizes(request: TurnsRequest) -> None:
    """Raises PayloadTooLarge (413) naming the first turn whose content or metadata is too large."""
    for index, turn in enumerate(request.turns):
        size = len(turn.content.encode("utf-8", "surrogatepass"))
        if size > MAX_TURN_BYTES:
            raise PayloadTooLarge(f"turns[{index}].content is {size} bytes; the limit is {MAX_TURN_BYTES}",
                                  details=[{"field": f"turns.{index}.content", "limit": MAX_TURN_BYTES}])
        if turn.metadata is not None:
            meta = len(json.dumps(turn.metadata, separators=(",", ":"), default=str).encode())
            if meta > MAX_TURN_METADATA_BYTES:
                raise PayloadTooLarge(
                    f"turns[{index}].metadata is {meta} bytes as JSON; the limit is {MAX_TURN_METADATA_BYTES}",
                    details=[{"field": f"turns.{index}.metadata", "limit": MAX_TURN_METADATA_BYTES}])


def turn_event_id(memory_id: str, conversation_id: str, turn_id: str) -> str:
    """The episode's event id of a turn recorded over HTTP: one per (memory, conversation, turn)."""
    digest = hashlib.sha256(json.dumps([memory_id, conversation_id, turn_id]).encode()).hexdigest()
    return f"{TURN_EVENT_PREFIX}{digest[:48]}"


def turn_message(turn: TurnInput) -> dict[str, Any]:
    """The episode's ``messages`` item of a turn."""
    message: dict[str, Any] = {"role": turn.role, "content": turn.content}
    if turn.metadata is not None:
        message["metadata"] = turn.metadata
    return message


class Turn(BaseModel):
    """A turn as ``GET /v1/memories/{memory_id}/turns`` returns it. An episode written by a
    ``turn.completed`` event with several messages has ``role`` null and its transcript as
    ``content``; ``messages`` always holds every message of the episode."""

    id: str
    memory_id: str
    conversation_id: str
    turn_id: str | None
    role: Role | None
    content: str
    metadata: dict[str, Any] | None = None
    messages: list[dict[str, Any]]
    occurred_at: datetime | None
    created_at: datetime


class RecordedTurn(BaseModel):
    """One turn of the 201 answer: ``created`` false when this ``turn_id`` was stored before (the
    stored turn is kept as it was)."""

    id: str
    turn_id: str
    created: bool
    occurred_at: datetime | None


class TurnsRecorded(BaseModel):
    """``extraction``: ``queued`` (the new user/assistant turns go to fact extraction; each
    ``extraction_event_ids`` item is the id of its run, see ``GET /v1/extraction-runs``),
    ``not_requested`` (``extract`` false) or ``no_chat_model`` (none configured: nothing to extract with)."""

    memory_id: str
    conversation_id: str
    turns: list[RecordedTurn]
    extraction: Literal["queued", "not_requested", "no_chat_model"]
    extraction_event_ids: list[str] = Field(default_factory=list)


class TurnPage(BaseModel):
    data: list[Turn]
    next_cursor: str | None
