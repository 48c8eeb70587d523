"""Memories and memory entries: the public models and the limits every write path enforces.

``NewEntry`` is what a caller asks to store (REST body, extraction candidate); ``MemoryEntry``
is a stored row as the API returns it; ``Memory`` is the container.
"""

from __future__ import annotations

import json
import re
import unicodedata
from datetime import datetime
from typing import Annotated, Any, Literal, TypeGuard

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from memory_engine.domain.validation import (
    Float,
    JsonObject,
    StoredJson,
    Text,
    Timestamp,
    ValidityWindow,
    non_blank,
    storable_datetime,
)
from memory_engine.errors import InvalidInput, PayloadTooLarge

#: The longest fact we store, in characters. Longer content is 413: an entry is one atomic fact.
MAX_CONTENT_CHARS = 8_000
#: How many tags one entry or memory may carry, and how long each may be.
MAX_TAGS = 50
MAX_TAG_CHARS = 128
#: The largest ``metadata`` object, in bytes of compact JSON (413 beyond it).
MAX_METADATA_BYTES = 16_384
#: Entities one entry may name.
MAX_ENTITIES = 20
MAX_ENTITY_NAME_CHARS = 200
MAX_NAME_CHARS = 200
MAX_DESCRIPTION_CHARS = 2_000
MAX_FIELD_CHARS = 1_000  # subject / predicate / object / provenance ids
MAX_QUOTE_CHARS = 4_000
#: The text around a fact in its source (e.g. the preceding turn) that is indexed with it.
MAX_CONTEXT_CHARS = 2_000
#: The longest ``default_ttl`` of a memory, in seconds (100 years).
MAX_TTL_SECONDS = 100 * 366 * 86_400
#: A neighbouring turn is kept in an entry's context up to this many characters.
CONTEXT_TURN_CHARS = 1_000

#: ``invalidation_reason`` of an entry whose ``expires_at`` passed.
EXPIRED_REASON = "expired"

SourceType = Literal["manual", "agent", "extraction", "orchestration"]
EntityRole = Literal["subject", "object", "mention"]

Tag = Annotated[Text, Field(min_length=1, max_length=MAX_TAG_CHARS)]
ShortText = Annotated[Text, Field(max_length=MAX_FIELD_CHARS)]


def clean_tags(tags: list[str] | None) -> list[str]:
    """Strip, drop duplicates (first occurrence wins). Raises ValueError on blank tags."""
    out: list[str] = []
    for tag in tags or []:
        value = tag.strip()
        if not value:
            raise ValueError("tags must not be blank")
        if value not in out:
            out.append(value)
    return out


#: The tags of a memory, an entry or a document: at most ``MAX_TAGS`` of 1..``MAX_TAG_CHARS``
#: characters, stripped, first occurrence kept (a blank tag is a 422).
Tags = Annotated[list[Tag], Field(max_length=MAX_TAGS), AfterValidator(clean_tags)]


_WS = re.compile(r"\s+")


def normalize_entity_name(name: str) -> str:
    """The matching key of an entity: NFKC, lower case, whitespace collapsed, stripped."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", name)).strip().lower()


#: ``"<speaker>: <text>"``: a name of up to 60 characters (no colon, no line break) before ": ".
_SPEAKER_PREFIX = re.compile(r"([^:\n]{1,60}):\s+\S")


#: The speaker name of an agent's user, as the subject feature of search compares names: a turn
#: recorded with role ``user``, a fact whose subject or speaker is ``user`` (any case). A query in
#: the first person names it (domain.query_text.speaker_names), and ``the user``, how an extracted
#: fact calls a user whose name is not known (prompts/extraction_v1.md).
USER = "user"
USER_NAMES = (USER, "the user")


def speaker_of(content: str) -> str | None:
    """The speaker of a turn written as ``"<speaker>: <text>"``, else None."""
    match = _SPEAKER_PREFIX.match(content.strip())
    return match.group(1).strip() or None if match else None


def turn_text(subject: str | None, content: str) -> str:
    """A fact as a line of its conversation, ``"<subject>: <content>"`` (the content alone when it
    already starts with its subject as a speaker), cut to ``CONTEXT_TURN_CHARS``."""
    return transcript_line(subject, content)[:CONTEXT_TURN_CHARS]


def transcript_line(subject: str | None, content: str) -> str:
    """``"<subject>: <content>"``, or the content alone when it has no subject or already starts with
    its subject as a speaker."""
    speaker = speaker_of(content) if subject else None
    named = speaker is not None and subject is not None and normalize_entity_name(speaker) == normalize_entity_name(subject)
    return f"{subject}: {content}" if subject and not named else content


def is_turn(source_conversation_id: str | None, source_type: str) -> TypeGuard[str]:
    """Whether a fact is a turn of a conversation: written with ``source_conversation_id``, not
    extracted from one (extracted facts are self-contained statements). True narrows
    ``source_conversation_id`` to ``str``."""
    return source_conversation_id is not None and source_type != "extraction"


def turn_speaker(subject: str | None, source_conversation_id: str | None, source_type: str) -> str | None:
    """Who said a fact written as a turn of a conversation (:func:`is_turn`): its ``subject``; else None."""
    return subject if is_turn(source_conversation_id, source_type) else None


def check_content(content: str) -> str:
    """The content to store (surrounding whitespace stripped).

    Raises InvalidInput (422) when blank and PayloadTooLarge (413) over MAX_CONTENT_CHARS.
    """
    value = content.strip()
    if not value:
        raise InvalidInput("content must not be empty or whitespace", details=[{"field": "content"}])
    if len(value) > MAX_CONTENT_CHARS:
        raise PayloadTooLarge(
            f"content is {len(value)} characters; the limit is {MAX_CONTENT_CHARS} (store one atomic fact per entry)",
            details=[{"field": "content", "limit": MAX_CONTENT_CHARS}],
        )
    return value


def check_metadata(metadata: dict[str, Any] | None) -> None:
    """Raises PayloadTooLarge (413) when metadata is over MAX_METADATA_BYTES as JSON."""
    if metadata is None:
        return
    size = len(json.dumps(metadata, separators=(",", ":"), default=str).encode())
    if size > MAX_METADATA_BYTES:
        raise PayloadTooLarge(
            f"metadata is {size} bytes as JSON; the limit is {MAX_METADATA_BYTES}",
            details=[{"field": "metadata", "limit": MAX_METADATA_BYTES}],
        )


class EntityRef(BaseModel):
    """An entity the caller names on write. ``name`` is normalized for matching; the first
    spelling seen is kept as the display name."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[Text, non_blank("entity name")] = Field(min_length=1, max_length=MAX_ENTITY_NAME_CHARS)
    type: Text | None = Field(None, max_length=64)


class EntryEntity(BaseModel):
    """An entity linked to a stored entry (``name`` is the display name)."""

    name: str
    type: str | None = None
    role: EntityRole


class NewEntry(ValidityWindow):
    """A fact to write through the funnel.

    Field validation (pydantic) rejects too many tags, confidence outside 0..1 and unknown
    source types. Content emptiness/size and metadata size are checked by ``write_entry``
    (InvalidInput 422 / PayloadTooLarge 413) so every write path gets the same answer.
    """

    model_config = ConfigDict(extra="forbid")

    memory_id: Text = Field(min_length=1, max_length=64)
    content: Text
    tags: Tags = Field(default_factory=list)
    metadata: JsonObject | None = None
    source_type: SourceType = "manual"
    subject: ShortText | None = None
    predicate: ShortText | None = None
    object: ShortText | None = None
    entities: list[EntityRef] = Field(default_factory=list, max_length=MAX_ENTITIES)
    confidence: Float = Field(1.0, ge=0.0, le=1.0)
    source_quote: Text | None = Field(None, max_length=MAX_QUOTE_CHARS)
    #: What surrounds the fact in its source, e.g. the turn before it: indexed for keyword search
    #: at half weight and embedded with the fact, never returned as its content. When it is None
    #: and ``source_conversation_id`` is set, the write takes the conversation's previous entry in
    #: this memory (``"<subject>: <content>"``); extraction writes self-contained facts without it.
    context: Text | None = Field(None, max_length=MAX_CONTEXT_CHARS)
    source_conversation_id: ShortText | None = None
    source_generation_id: ShortText | None = None
    source_event_id: ShortText | None = None
    #: When the fact stops being returned (search, lists, dedup) and is invalidated with reason
    #: ``expired``; None takes the memory's ``default_ttl`` (no expiry when that is unset too).
    expires_at: Timestamp | None = None

    @field_validator("tags", mode="before")
    @classmethod
    def _none_tags(cls, value: Any) -> Any:
        return [] if value is None else value

    @field_validator("entities", mode="before")
    @classmethod
    def _none_entities(cls, value: Any) -> Any:
        return [] if value is None else value

    @model_validator(mode="after")
    def _speaker_is_subject(self) -> NewEntry:
        """A conversation turn written as ``"<speaker>: <text>"`` with the speaker among its entities
        and no ``subject`` is about its speaker: the speaker becomes its subject (what the search's
        subject feature and the ``<knowledge>`` grouping read), as if the client had said so."""
        if self.subject is None and self.entities:
            speaker = speaker_of(self.content)
            if speaker and any(normalize_entity_name(ref.name) == normalize_entity_name(speaker) for ref in self.entities):
                self.subject = speaker
        return self


def as_utc(value: datetime | None) -> datetime | None:
    """A timestamp without a zone is taken as UTC (never as the database server's local time).
    Raises ValueError outside the years PostgreSQL and Python both hold (see ``domain.validation``)."""
    return storable_datetime(value) if value is not None else None


class MemoryEntry(BaseModel):
    """A stored entry as the API returns it (every column but the vector and the tsvector)."""

    id: str
    project_id: str
    memory_id: str
    content: str
    source_type: SourceType
    tags: list[str]
    metadata: StoredJson | None
    subject: str | None
    predicate: str | None
    object: str | None
    entities: list[EntryEntity]
    confidence: float
    source_quote: str | None
    context: str | None = None
    valid_from: datetime | None
    valid_to: datetime | None
    source_conversation_id: str | None
    source_generation_id: str | None
    source_event_id: str | None
    invalidated_at: datetime | None
    superseded_by_entry_id: str | None
    invalidation_reason: str | None
    expires_at: datetime | None = None
    created_at: datetime
    updated_at: datetime

    @field_validator("confidence")
    @classmethod
    def _round(cls, value: float) -> float:
        return round(value, 6)  # stored as ``real``: 0.8 comes back as 0.800000011920929

    @property
    def is_live(self) -> bool:
        return self.invalidated_at is None


class Memory(BaseModel):
    """A named container of entries. ``default_ttl`` (seconds) gives entries written without their
    own ``expires_at`` one of write time + ``default_ttl``."""

    id: str
    project_id: str
    name: str
    description: str | None
    tags: list[str]
    metadata: StoredJson | None
    default_ttl: int | None = None
    created_at: datetime
    updated_at: datetime


class EntryWriteResult(MemoryEntry):
    """What the write funnel answers every face: the entry written (or the existing one, when skipped)
    and what the funnel did."""

    action: Literal["created", "skipped", "updated", "superseded"]
    superseded_entry_id: str | None = Field(None, description="present when `action` is `superseded`")
    degraded: list[str] | None = Field(None, description="agent writes only: why the write could not merge or "
                                                         "supersede (no chat model configured, or the model failed)")

    def to_body(self) -> dict[str, Any]:
        """The wire shape: the entry's fields and ``action``; ``superseded_entry_id`` and ``degraded``
        only when they say something."""
        body = self.model_dump(mode="json")
        for optional in ("superseded_entry_id", "degraded"):
            if not body[optional]:
                del body[optional]
        return body
