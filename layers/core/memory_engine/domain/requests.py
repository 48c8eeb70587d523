"""The bodies of the API's requests, in one place for every face (HTTP routes, the MCP tools, the CLI):
what each accepts and its validation. Search, ingestion rules and turns keep theirs beside their domain
(``search_models``, ``ingestion_rules``, ``turns``); the services take these models and return theirs.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from memory_engine.domain import content_types as ct
from memory_engine.domain.documents import MAX_TEXT_CHARS, ChunkSettings, ChunkStrategy, normalize_path
from memory_engine.domain.entities import normalize_entity_name
from memory_engine.domain.entries import MAX_DESCRIPTION_CHARS, MAX_FIELD_CHARS, MAX_NAME_CHARS, MAX_TTL_SECONDS, NewEntry, Tags
from memory_engine.domain.ingestion_rules import overlay_chunk_fields
from memory_engine.domain.validation import Float, Int, JsonObject, Text
from memory_engine.domain.write_decision import DEFAULT_DUPLICATE_THRESHOLD, AgentContext
from memory_engine.errors import InvalidInput

#: `POST /v1/documents/batch` takes at most this many documents per request.
MAX_BATCH_DOCUMENTS = 100


class ChunkFields(BaseModel):
    model_config = ConfigDict(extra="forbid")

    chunk_strategy: ChunkStrategy | None = None
    chunk_size: Int | None = Field(None, ge=50, le=100_000)
    chunk_overlap: Int | None = Field(None, ge=0)

    def settings(self, base: ChunkSettings) -> ChunkSettings:
        """The request's fields over ``base``. Raises InvalidInput (overlap >= size)."""
        strategy, size, overlap = overlay_chunk_fields(base, self.chunk_strategy, self.chunk_size, self.chunk_overlap)
        if overlap >= size:
            raise InvalidInput(f"chunk_overlap ({overlap}) must be smaller than chunk_size ({size})",
                               details=[{"field": "chunk_overlap"}])
        return ChunkSettings(strategy=strategy, size=size, overlap=overlap)

    def explicit(self) -> bool:
        return any(v is not None for v in (self.chunk_strategy, self.chunk_size, self.chunk_overlap))


class DocumentFields(ChunkFields):
    path: Text = Field(min_length=1, max_length=1024)
    title: Text | None = Field(None, max_length=500)
    tags: Tags = Field(default_factory=list)
    metadata: JsonObject | None = None

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        return normalize_path(value)


class CreateTextDocument(DocumentFields):
    """`POST /v1/documents`."""

    content: Text = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    content_type: Text | None = Field(None, max_length=200, description=(
        "how the text is read: `text/plain`, `text/markdown`, `text/html` (main content, no markup), `text/csv`, "
        "`application/json` or `message/rfc822`; default: the path's extension when it names one of these, else "
        "plain text"))
    wait: bool = False

    @field_validator("content_type")
    @classmethod
    def _content_type(cls, value: str | None) -> str | None:
        if value is None:
            return None
        normalized = ct.normalize(value)
        if normalized not in ct.posted_text_formats():
            raise ValueError(f"a posted text can be read as {', '.join(sorted(ct.posted_text_formats()))}; "
                             "upload other files (POST /v1/documents/uploads)")
        return normalized


class TextDocumentBatch(BaseModel):
    """`POST /v1/documents/batch`: each item is validated on its own, so one bad item is rejected
    while the others are created."""

    model_config = ConfigDict(extra="forbid")

    documents: list[dict[str, Any]] = Field(min_length=1, max_length=MAX_BATCH_DOCUMENTS)


class UploadRequest(DocumentFields):
    """`POST /v1/documents/uploads`."""

    content_type: Text | None = Field(None, max_length=200)


class ReingestRequest(ChunkFields):
    """`POST /v1/documents/{id}/ingest`."""

    wait: bool = False


class MemoryFields(BaseModel):
    """Body of ``POST /v1/memories`` and ``PUT /v1/memories/{id}``.

    On PUT only the fields sent are replaced; ``null`` clears ``description``/``metadata`` and
    ``null`` or ``[]`` clears ``tags``.
    """

    model_config = ConfigDict(extra="forbid")

    name: Text | None = Field(None, min_length=1, max_length=MAX_NAME_CHARS)
    description: Text | None = Field(None, max_length=MAX_DESCRIPTION_CHARS)
    tags: Tags | None = None
    metadata: JsonObject | None = None
    default_ttl: Int | None = Field(None, ge=1, le=MAX_TTL_SECONDS, description=(
        "seconds: entries written without their own `expires_at` expire this long after they are written; "
        "`null` (the default) means they do not expire"))

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("name must not be blank")
        return value.strip() if value is not None else None


class ForgetRequest(BaseModel):
    """Body of ``POST /v1/forget``: ``{conversation_id, memory_id?}`` or ``{memory_id, entity}``."""

    model_config = ConfigDict(extra="forbid")

    conversation_id: Text | None = Field(None, min_length=1, max_length=1_000)
    memory_id: Text | None = Field(None, min_length=1, max_length=64)
    entity: Text | None = Field(None, min_length=1, max_length=200)

    @model_validator(mode="after")
    def _one_target(self) -> ForgetRequest:
        if (self.conversation_id is None) == (self.entity is None):
            raise ValueError("send either conversation_id (optionally with memory_id) or memory_id with entity")
        if self.entity is not None and (self.memory_id is None or not normalize_entity_name(self.entity)):
            raise ValueError("entity needs memory_id and a non-blank name")
        return self


MAX_INPUTS = 256


MAX_TOTAL_CHARS = 32_000


#: One input alone can use the whole budget.
MAX_INPUT_CHARS = MAX_TOTAL_CHARS


EMBEDDINGS_LIMITS = f"at most {MAX_INPUTS} inputs and {MAX_TOTAL_CHARS} characters in all per request (413 beyond)"


class EmbeddingsRequest(BaseModel):
    input: str | None = Field(None, description=f"one text; {EMBEDDINGS_LIMITS}")
    inputs: list[str] | None = Field(None, description=f"several texts; {EMBEDDINGS_LIMITS}")

    @model_validator(mode="after")
    def _one_of(self) -> EmbeddingsRequest:
        if (self.input is None) == (self.inputs is None):
            raise ValueError("give exactly one of `input` (a string) or `inputs` (a list of strings)")
        return self


class AgentInfo(BaseModel):
    """Who is writing, on the agent path: ``model`` overrides the chat model that arbitrates a merge;
    ``generation_id`` is the generation (turn) that asserted the fact, stored as ``source_generation_id``."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(None, min_length=1, max_length=200)
    generation_id: str | None = Field(None, min_length=1, max_length=MAX_FIELD_CHARS)


class EntryCreateRequest(NewEntry):
    """Body of ``POST /v1/memory-entries``: a NewEntry plus the per-request skip threshold and, with
    ``source_type: "agent"``, the agent context."""

    duplicate_threshold: Float = Field(DEFAULT_DUPLICATE_THRESHOLD, ge=0.0, le=1.0)
    agent: AgentInfo | None = None

    @model_validator(mode="after")
    def _agent_only_on_the_agent_path(self) -> EntryCreateRequest:
        if self.agent is not None and self.source_type != "agent":
            raise ValueError('`agent` is only accepted with source_type "agent"')
        return self

    def new_entry(self) -> NewEntry:
        fields = self.model_dump(exclude={"duplicate_threshold", "agent"})
        if self.agent is not None and self.agent.generation_id and not self.source_generation_id:
            fields["source_generation_id"] = self.agent.generation_id
        return NewEntry.model_validate(fields)

    def agent_context(self) -> AgentContext | None:
        if self.source_type != "agent":
            return None
        return AgentContext(model=self.agent.model if self.agent else None)
