"""Request and response models of the memory-engine HTTP API (v1), matching its OpenAPI document
(``GET /v1/openapi.json``; the engine's test suite fails when they drift apart).

Requests forbid unknown fields (a typo is an error here, not a 422 there); responses allow them, so
an engine that adds a field does not break an older client.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class RequestModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ResponseModel(BaseModel):
    model_config = ConfigDict(extra="allow")


SourceType = Literal["manual", "agent", "extraction", "orchestration"]
ChunkStrategy = Literal["page", "whole", "size", "recursive"]
DocumentStatus = Literal["pending", "processing", "ready", "failed"]
WriteAction = Literal["created", "skipped", "updated", "superseded"]
BatchWriteAction = Literal["created", "updated", "skipped", "superseded", "rejected"]
SearchPreset = Literal["hybrid", "vector_only", "keyword_only", "entity_only", "rrf_v1"]
ExtractionRunStatus = Literal["running", "completed", "failed"]
NativeExtraction = Literal["first", "skip"]
FileDelivery = Literal["base64", "download_url"]
ChunkSource = Literal["request", "rule", "default"]


# --- requests ---


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
    #: ranking). ``None``: the server's default, 0.02 on the page's best result (a query nothing
    #: stored relates to returns no results, an answered one its whole page).
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
    """Your service, spoken to with the converter protocol (docs/ingestion.md)."""

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


# --- responses ---


class Health(ResponseModel):
    status: Literal["ok", "degraded"]
    version: str
    database: bool


class Memory(ResponseModel):
    id: str
    project_id: str
    name: str
    description: str | None
    tags: list[str]
    metadata: dict[str, Any] | None
    default_ttl: int | None = None
    created_at: datetime
    updated_at: datetime


class EntryEntity(ResponseModel):
    name: str
    type: str | None = None
    role: Literal["subject", "object", "mention"]


class MemoryEntry(ResponseModel):
    id: str
    project_id: str
    memory_id: str
    content: str
    source_type: SourceType
    tags: list[str]
    metadata: dict[str, Any] | None
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


class EntryWriteResult(MemoryEntry):
    """The entry written (or the existing one when skipped) and what the write funnel did."""

    action: WriteAction
    superseded_entry_id: str | None = None
    degraded: list[str] | None = None


class EntryBatchItem(ResponseModel):
    """One item's outcome: the funnel's action and the entry (the existing one when ``skipped``), or
    ``rejected`` with ``error`` (the error body the single write would have answered)."""

    index: int
    action: BatchWriteAction
    entry: MemoryEntry | None = None
    error: dict[str, Any] | None = None


class EntryBatchResult(ResponseModel):
    results: list[EntryBatchItem]
    created: int
    skipped: int
    rejected: int


class DeletedItem(ResponseModel):
    index: int
    id: str
    action: Literal["deleted", "not_found"]


class EntryBatchDeleteResult(ResponseModel):
    results: list[DeletedItem]
    deleted: int
    not_found: int


class ForgetCounts(ResponseModel):
    entries: int
    episodes: int
    extraction_runs: int
    entities: int


class ForgetResult(ResponseModel):
    """What ``POST /v1/forget`` or ``DELETE /v1/memories/{id}?purge=true`` deleted."""

    deleted: ForgetCounts


class ImportResult(ResponseModel):
    memory: Memory
    entries: int
    entities: int
    episodes: int
    embedded: int
    vectors_reused: bool


class ExtractionRun(ResponseModel):
    """What fact extraction did with one ``turn.completed`` event."""

    id: str
    event_id: str
    memory_id: str | None
    conversation_id: str | None
    turn_id: str | None
    episode_id: str | None
    status: ExtractionRunStatus
    summary: dict[str, Any] | None
    error: str | None
    attempts: int
    created_at: datetime
    updated_at: datetime


class ExtractionRunPage(ResponseModel):
    data: list[ExtractionRun]
    next_cursor: str | None


class MemoryPage(ResponseModel):
    data: list[Memory]
    next_cursor: str | None


class MemoryEntryPage(ResponseModel):
    data: list[MemoryEntry]
    next_cursor: str | None


class EntityLink(ResponseModel):
    name: str
    type: str | None = None
    role: str


class MemoryResult(ResponseModel):
    source_type: Literal["memory"] = "memory"
    id: str
    content: str
    #: A calibrated estimate, 0..1, that the row is relevant to the query (comparable across
    #: queries and memories; it never rises down the page).
    score: float
    similarity_score: float | None = None
    signal_ranks: dict[str, int] = Field(default_factory=dict)
    memory_id: str
    memory_name: str
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] | None = None
    entities: list[EntityLink] = Field(default_factory=list)
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    created_at: datetime
    source_conversation_id: str | None = None
    source_generation_id: str | None = None
    source_event_id: str | None = None
    raw: dict[str, Any] | None = None


class DocumentResult(ResponseModel):
    source_type: Literal["document"] = "document"
    id: str
    content: str
    #: A calibrated estimate, 0..1, that the row is relevant to the query (comparable across
    #: queries and memories; it never rises down the page).
    score: float
    similarity_score: float | None = None
    signal_ranks: dict[str, int] = Field(default_factory=dict)
    document_id: str
    path: str
    title: str | None = None
    page: int | None = None
    chunk_index: int
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] | None = None


SearchResult = Annotated[MemoryResult | DocumentResult, Field(discriminator="source_type")]


class EpisodeResult(ResponseModel):
    id: str
    memory_id: str | None
    conversation_id: str | None = None
    turn_id: str | None = None
    occurred_at: datetime | None = None
    transcript: str
    similarity_score: float | None = None


class Synthesis(ResponseModel):
    text: str
    model: str | None = None
    latency_ms: int


class SearchResponseBody(ResponseModel):
    results: list[SearchResult]
    context: str | None = None
    degraded: list[str] | None = None
    episodes: list[EpisodeResult] | None = None
    synthesis: Synthesis | None = None


class Document(ResponseModel):
    id: str
    project_id: str
    path: str
    title: str | None = None
    content_type: str | None = None
    size_bytes: int | None = None
    sha256: str | None = None
    source_bucket: str | None = None
    source_key: str | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] | None = None
    chunk_strategy: ChunkStrategy
    chunk_size: int
    chunk_overlap: int
    chunk_settings_source: ChunkSource = "default"
    ingestion_rule_id: str | None = None
    status: DocumentStatus
    total_pages: int | None = None
    total_chunks: int | None = None
    indexed_chunks: int = 0
    error: str | None = None
    ingest_generation: int = 0
    active_generation: int = 0
    created_at: datetime
    updated_at: datetime


class DocumentPage(ResponseModel):
    data: list[Document]
    next_cursor: str | None


class IngestionRule(_IngestionRuleBody):
    model_config = ResponseModel.model_config

    id: str
    project_id: str
    created_at: datetime
    updated_at: datetime


class IngestionRulePage(ResponseModel):
    data: list[IngestionRule]
    next_cursor: str | None


class DocumentStatusView(ResponseModel):
    status: DocumentStatus
    total_pages: int | None
    total_chunks: int | None
    indexed_chunks: int
    progress: float
    error: str | None


class BatchItem(ResponseModel):
    index: int
    action: Literal["created", "unchanged", "rejected"]
    document: Document | None = None
    error: dict[str, Any] | None = None


class DocumentBatchResult(ResponseModel):
    results: list[BatchItem]
    created: int
    unchanged: int
    rejected: int


class UploadUrl(ResponseModel):
    upload_url: str
    method: Literal["PUT"]
    headers: dict[str, str]
    key: str
    expires_at: datetime


class Embedding(ResponseModel):
    index: int
    embedding: list[float]


class EmbeddingsResponse(ResponseModel):
    model: str
    dimensions: int
    data: list[Embedding]
