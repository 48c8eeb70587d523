"""The events of fact extraction, parsed at the edge.

``turn.completed`` arrives as an EventBridge event (on AWS inside an SQS message body, locally
from ``POST /v1/events``); ``memory.extraction.completed`` is what the consumer publishes back.
The JSON Schema of the incoming event is exported by :func:`turn_completed_json_schema` and kept
in ``docs/schemas/turn.completed.schema.json`` (a test keeps the two in sync).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from memory_engine import constants as c
from memory_engine.domain.validation import Text, Timestamp

#: Roles whose text goes into the transcript (system and tool messages are kept in the episode's
#: ``messages`` but never mined for facts: they hold instructions and tool output, not the conversation).
TRANSCRIPT_ROLES = ("user", "assistant")
MAX_MESSAGES = 500
MAX_MESSAGE_CHARS = 100_000
MAX_PROMPT_CHARS = 8_000
MAX_ID_CHARS = 256


def _aware(value: datetime) -> datetime:
    """Naive timestamps are read as UTC (EventBridge's ``time`` is always UTC)."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


class TurnMessage(BaseModel):
    """One message of the completed turn. ``name`` is the speaker's name when the caller knows it
    (e.g. two people talking); it is shown in the transcript so facts name the right person."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant", "system", "tool"]
    content: Text = Field(max_length=MAX_MESSAGE_CHARS)
    name: Text | None = Field(None, min_length=1, max_length=128)


class ExtractionOptions(BaseModel):
    """Per-turn extraction overrides: ``prompt`` replaces the task instructions only (the JSON
    contract and the transcript are always appended); ``model`` picks the chat model for both the
    extraction call and the write funnel's merge/supersede decisions."""

    model_config = ConfigDict(extra="forbid")

    prompt: Text | None = Field(None, min_length=1, max_length=MAX_PROMPT_CHARS)
    model: Text | None = Field(None, min_length=1, max_length=256)


class TurnCompletedDetail(BaseModel):
    """``detail`` of a ``turn.completed`` event (SPEC "Fact extraction")."""

    model_config = ConfigDict(extra="forbid")

    project_id: Text = Field(min_length=1, max_length=MAX_ID_CHARS)
    memory_id: Text = Field(min_length=1, max_length=MAX_ID_CHARS)
    conversation_id: Text = Field(min_length=1, max_length=MAX_ID_CHARS)
    turn_id: Text = Field(min_length=1, max_length=MAX_ID_CHARS)
    occurred_at: Timestamp
    messages: list[TurnMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    extract: bool = True
    extraction: ExtractionOptions | None = None

    @field_validator("occurred_at")
    @classmethod
    def _tz(cls, value: datetime) -> datetime:
        return _aware(value)

    @model_validator(mode="after")
    def _has_conversation(self) -> TurnCompletedDetail:
        if not any(m.role in TRANSCRIPT_ROLES and m.content.strip() for m in self.messages):
            raise ValueError("messages must include at least one non-blank user or assistant message")
        return self

    @property
    def extraction_model(self) -> str | None:
        return self.extraction.model if self.extraction else None

    @property
    def extraction_prompt(self) -> str | None:
        return self.extraction.prompt if self.extraction else None


class TurnCompletedEvent(BaseModel):
    """The EventBridge envelope of a ``turn.completed`` event, as a rule target receives it.

    ``id`` is the idempotency key of the extraction run. Any ``source`` is accepted. Unknown
    envelope fields (EventBridge adds e.g. ``replay-name``) are ignored; unknown ``detail`` fields
    are rejected so a typo such as ``"extact": false`` cannot silently change behaviour.
    """

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    version: Text = "0"
    id: Text = Field(min_length=1, max_length=MAX_ID_CHARS)
    detail_type: Literal["turn.completed"] = Field(alias="detail-type")
    source: Text = Field(min_length=1, max_length=256)
    account: Text = ""
    time: Timestamp | None = None
    region: Text = ""
    resources: list[Text] = Field(default_factory=list)
    detail: TurnCompletedDetail

    @field_validator("time")
    @classmethod
    def _tz(cls, value: datetime | None) -> datetime | None:
        return _aware(value) if value is not None else None

    def to_eventbridge(self) -> dict[str, Any]:
        """The event as JSON-ready data, with EventBridge's own field names."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ExtractionSummary(BaseModel):
    """What one run did.

    ``candidates``: facts read from the model's reply, after the cap of 20; each ends ``created``,
    ``updated`` (merged into a similar fact), ``skipped`` (a duplicate), ``superseded`` (replaced a
    contradicted fact) or is counted in ``discarded`` with the malformed items and those over the
    cap. ``extract`` is false when the event asked for the episode only; ``prompt_version`` names the
    default prompt used (null with a custom ``extraction.prompt``).
    """

    candidates: int = 0
    created: int = 0
    updated: int = 0
    skipped: int = 0
    superseded: int = 0
    discarded: int = 0
    extract: bool = True
    prompt_version: str | None = None


class ExtractionCompletedDetail(BaseModel):
    """``detail`` of the ``memory.extraction.completed`` event the consumer publishes."""

    project_id: str
    memory_id: str
    conversation_id: str
    turn_id: str
    event_id: str
    run_id: str
    episode_id: str | None = None
    status: Literal["completed", "failed"]
    summary: ExtractionSummary
    error: str | None = None
    attempts: int = 1


def turn_completed_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of the ``turn.completed`` event, with EventBridge field names."""
    schema = TurnCompletedEvent.model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://memory-engine.dev/schemas/turn.completed.schema.json"
    schema["description"] = (
        f"EventBridge event with detail-type {c.DETAIL_TYPE_TURN_COMPLETED!r} consumed by memory-engine's fact extraction."
    )
    return schema
