"""Response bodies of the API (responses allow unknown fields: an engine that adds one does not break an
older client)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field

from memory_engine_client.models._base import (
    BatchWriteAction,
    ChunkSource,
    ChunkStrategy,
    DocumentStatus,
    ExtractionRunStatus,
    ResponseModel,
    SourceType,
    TurnRole,
    WriteAction,
)
from memory_engine_client.models.requests import _IngestionRuleBody


class WorkerCounts(ResponseModel):
    """The local engine's worker processes (absent on AWS)."""

    alive: int
    configured: int


class Health(ResponseModel):
    status: Literal["ok", "degraded"]
    version: str
    database: bool
    workers: WorkerCounts | None = None


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


class RecordedTurn(ResponseModel):
    id: str
    turn_id: str
    created: bool
    occurred_at: datetime | None


class TurnsRecorded(ResponseModel):
    memory_id: str
    conversation_id: str
    turns: list[RecordedTurn]
    extraction: Literal["queued", "not_requested", "no_chat_model"]
    extraction_event_ids: list[str] = Field(default_factory=list)


class Turn(ResponseModel):
    """A stored turn; ``role`` is null for an event's episode of several ``messages``."""

    id: str
    memory_id: str
    conversation_id: str
    turn_id: str | None
    role: TurnRole | None
    content: str
    metadata: dict[str, Any] | None = None
    messages: list[dict[str, Any]]
    occurred_at: datetime | None
    created_at: datetime


class TurnPage(ResponseModel):
    data: list[Turn]
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


class _Result(ResponseModel):
    """What every search result has, whatever its ``source_type`` (the server's ``_Result``)."""

    id: str
    content: str
    #: A calibrated estimate, 0..1, that the row is relevant to the query (comparable across
    #: queries and memories; it never rises down the page).
    score: float
    similarity_score: float | None = None
    signal_ranks: dict[str, int] = Field(default_factory=dict)


class MemoryResult(_Result):
    source_type: Literal["memory"] = "memory"
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


class DocumentResult(_Result):
    source_type: Literal["document"] = "document"
    document_id: str
    path: str
    title: str | None = None
    page: int | None = None
    chunk_index: int
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] | None = None


class EpisodeSearchResult(_Result):
    """A conversation turn (``include=["episodes"]``); ``content`` is the passage that matched."""

    source_type: Literal["episode"] = "episode"
    memory_id: str | None
    conversation_id: str | None = None
    turn_id: str | None = None
    role: str | None = None
    occurred_at: datetime | None = None
    created_at: datetime
    metadata: dict[str, Any] | None = None


SearchResult = Annotated[MemoryResult | DocumentResult | EpisodeSearchResult, Field(discriminator="source_type")]


class EpisodeResult(ResponseModel):
    """Deprecated: the episodes are ranked among the results (:class:`EpisodeSearchResult`)."""

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
    title: str | None
    content_type: str | None
    size_bytes: int | None
    sha256: str | None
    source_bucket: str | None
    source_key: str | None
    tags: list[str]
    metadata: dict[str, Any] | None
    chunk_strategy: ChunkStrategy
    chunk_size: int
    chunk_overlap: int
    chunk_settings_source: ChunkSource
    ingestion_rule_id: str | None
    status: DocumentStatus
    total_pages: int | None
    total_chunks: int | None
    indexed_chunks: int
    error: str | None
    ingest_generation: int
    active_generation: int
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
