"""Request bodies of the API (requests forbid unknown fields: a typo is an error here, not a 422 there)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from memory_engine_client.models._base import (
    ChunkStrategy,
    FileDelivery,
    NativeExtraction,
    RequestModel,
    SearchPreset,
    SourceType,
    TurnRole,
)


class MemoryFields(RequestModel):
    name: str | None = None
    description: str | None = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    #: seconds: entries written without their own ``expires_at`` expire this long after they are written
    default_ttl: int | None = None


class EntityRef(RequestModel):
    name: str
    type: str | None = None


class AgentInfo(RequestModel):
    model: str | None = None
    generation_id: str | None = None


class EntryCreateRequest(RequestModel):
    memory_id: str
    content: str
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] | None = None
    source_type: SourceType = "manual"
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    entities: list[EntityRef] = Field(default_factory=list)
    confidence: float = 1.0
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    source_quote: str | None = None
    context: str | None = None
    source_conversation_id: str | None = None
    source_generation_id: str | None = None
    source_event_id: str | None = None
    duplicate_threshold: float = 0.95
    agent: AgentInfo | None = None
    expires_at: datetime | None = None


class EntryReplacement(RequestModel):
    content: str | None = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    entities: list[EntityRef] | None = None
    confidence: float | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    source_quote: str | None = None
    expires_at: datetime | None = None


class EntryBatch(RequestModel):
    """``POST /v1/memory-entries/batch``: each item is a ``POST /v1/memory-entries`` body (a dict, or an
    :class:`EntryCreateRequest`); the engine validates items one by one, so a bad item is ``rejected``
    in the result instead of failing the batch."""

    entries: list[dict[str, Any]]
    duplicate_threshold: float = 0.95


class EntryIdBatch(RequestModel):
    ids: list[str]


class ForgetRequest(RequestModel):
    """``{conversation_id, memory_id?}`` or ``{memory_id, entity}``."""

    conversation_id: str | None = None
    memory_id: str | None = None
    entity: str | None = None


class SearchRequest(RequestModel):
    query: str | None = None
    query_embedding: list[float] | None = None
    memory_ids: list[str] | None = None
    memory_tags: list[str] | None = None
    document_ids: list[str] | None = None
    document_paths: list[str] | None = None
    limit: int = 10
    #: The relevance floor: results whose ``score`` is below it are not returned (``0``: the whole
    #: ranking). ``None``: the server's default, 0.02 on the best result of a page of memories (a query
    #: nothing stored relates to returns no results, an answered one its whole page; no default floor
    #: on a page holding document chunks).
    min_score: float | None = None
    min_confidence: float = 0.5
    as_of: datetime | None = None
    signals: list[Literal["vector", "keyword", "entity"]] | None = None
    include: list[Literal["raw", "episodes", "synthesis"]] = Field(default_factory=list)
    render: bool = False
    preset: SearchPreset | None = None


class CreateTextDocument(RequestModel):
    path: str
    content: str
    title: str | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] | None = None
    chunk_strategy: ChunkStrategy | None = None
    chunk_size: int | None = None
    chunk_overlap: int | None = None
    #: how the text is read (text/plain, text/markdown, text/html, text/csv, application/json,
    #: message/rfc822); default: the path's extension when it names one of these, else plain text
    content_type: str | None = None
    wait: bool = False


class TextDocumentBatch(RequestModel):
    documents: list[dict[str, Any]]


class UploadRequest(RequestModel):
    path: str
    content_type: str | None = None
    title: str | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] | None = None
    chunk_strategy: ChunkStrategy | None = None
    chunk_size: int | None = None
    chunk_overlap: int | None = None


class ReingestRequest(RequestModel):
    chunk_strategy: ChunkStrategy | None = None
    chunk_size: int | None = None
    chunk_overlap: int | None = None
    wait: bool = False


class HttpConverter(RequestModel):
    """Your service, spoken to with the converter protocol (docs/ingestion.md). Header values are
    write-only: the engine returns them as ``"***"``, and a replace that sends ``"***"`` back for a
    header keeps its stored value (while ``url`` keeps its scheme, host and port)."""

    type: Literal["http"]
    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = 60.0


class OcrConverter(RequestModel):
    """The built-in OCR (Tesseract locally, Amazon Textract on AWS)."""

    type: Literal["ocr"]


Converter = Annotated[HttpConverter | OcrConverter, Field(discriminator="type")]


class _IngestionRuleBody(BaseModel):
    content_type_glob: str
    converter: Converter
    native_extraction: NativeExtraction = "first"
    file_delivery: FileDelivery = "base64"
    chunk_strategy: ChunkStrategy | None = None
    chunk_size: int | None = None
    chunk_overlap: int | None = None


class IngestionRuleFields(_IngestionRuleBody):
    """``POST /v1/ingestion-rules``, ``PUT /v1/ingestion-rules/{id}``."""

    model_config = RequestModel.model_config


class EmbeddingsRequest(RequestModel):
    input: str | None = None
    inputs: list[str] | None = None


class TurnInput(RequestModel):
    """One turn to record: ``turn_id`` makes it idempotent (made up by the server when absent)."""

    turn_id: str | None = None
    role: TurnRole
    content: str
    occurred_at: datetime | None = None
    metadata: dict[str, Any] | None = None


class TurnsRequest(RequestModel):
    conversation_id: str
    turns: list[TurnInput]
    extract: bool | None = None
