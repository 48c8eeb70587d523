"""Documents: the stored row, chunk settings, and the payloads the ingestion steps exchange.

Step payloads are small on purpose (Step Functions caps state at 256 KB): pages and chunk
batches live in blob objects under ``_work/<document_id>/<generation>/`` and the state only
carries their keys.
"""

from __future__ import annotations

import json
from datetime import datetime
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memory_engine.domain.validation import StoredJson, document_path

#: Files over this size end `failed` (TooLarge) before any extraction work.
MAX_DOCUMENT_BYTES = 50 * 1024 * 1024
#: PDFs with more pages than this end `failed` (TooLarge).
MAX_PAGES = 2000
#: Chunks per embed batch (one Map item = one Lambda invocation = one batch object).
EMBED_BATCH_SIZE = 32
#: Text documents created through the API (`POST /v1/documents`).
MAX_TEXT_CHARS = 5_000_000
DEFAULT_CHUNK_SIZE = 1000
DEFAULT_CHUNK_OVERLAP = 200


def normalize_path(path: str) -> str:
    """The one path rule of every entry point (``POST /v1/documents``, upload URLs, the drop
    folder, S3 object keys): ``"a/b.md"`` -> ``"/a/b.md"``. Raises ValueError saying what is
    wrong (see :func:`memory_engine.domain.validation.document_path` for the rule)."""
    return document_path(path)


class ChunkStrategy(str, Enum):
    PAGE = "page"  # one chunk per page (default for files)
    WHOLE = "whole"  # the whole text as one chunk (default for text)
    SIZE = "size"  # fixed character window, step = size - overlap
    RECURSIVE = "recursive"  # headings, paragraphs, sentences, words within chunk_size


#: Where a document's chunk settings came from: the request's fields, the matching ingestion rule,
#: or the entry point's default (``page`` for files, ``whole`` for text).
ChunkSource = Literal["request", "rule", "default"]


class DocumentStatus(str, Enum):
    PENDING = "pending"
    PROCESSING = "processing"
    READY = "ready"
    FAILED = "failed"


class ChunkSettings(BaseModel):
    """The effective chunk configuration (persisted on the document)."""

    model_config = ConfigDict(frozen=True)

    strategy: ChunkStrategy = ChunkStrategy.PAGE
    size: int = Field(DEFAULT_CHUNK_SIZE, ge=50, le=100_000)
    overlap: int = Field(DEFAULT_CHUNK_OVERLAP, ge=0)

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkSettings:
        if self.overlap >= self.size:
            raise ValueError(f"chunk_overlap ({self.overlap}) must be smaller than chunk_size ({self.size})")
        return self


#: Chunk settings of a document that does not choose its own: a text is one chunk, a file one per page.
TEXT_DEFAULTS = ChunkSettings(strategy=ChunkStrategy.WHOLE)
FILE_DEFAULTS = ChunkSettings(strategy=ChunkStrategy.PAGE)


class Page(BaseModel):
    """Extracted text of one page (``number`` is 1-based; None for formats without pages)."""

    number: int | None
    text: str


class Chunk(BaseModel):
    index: int
    page: int | None
    content: str


class Document(BaseModel):
    """A document as the API returns it."""

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
    metadata: StoredJson | None
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
    active_generation: int
    ingest_generation: int
    created_at: datetime
    updated_at: datetime

    @property
    def chunk_settings(self) -> ChunkSettings:
        return ChunkSettings(strategy=self.chunk_strategy, size=self.chunk_size, overlap=self.chunk_overlap)

    def status_view(self) -> dict[str, Any]:
        """`GET /v1/documents/{id}/status`: progress is indexed/total in [0, 1] (1 when ready)."""
        if self.status is DocumentStatus.READY:
            progress = 1.0
        elif self.total_chunks:
            progress = round(min(1.0, self.indexed_chunks / self.total_chunks), 4)
        else:
            progress = 0.0
        return {
            "status": self.status.value,
            "total_pages": self.total_pages,
            "total_chunks": self.total_chunks,
            "indexed_chunks": self.indexed_chunks,
            "progress": progress,
            "error": self.error,
        }


# --- the S3 "Object Created" event, as EventBridge delivers it (documented shape) ---
class S3Bucket(BaseModel):
    name: str


class S3Object(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    key: str
    size: int | None = None
    etag: str | None = None
    version_id: str | None = Field(None, alias="version-id")
    sequencer: str | None = None


class S3ObjectCreatedDetail(BaseModel):
    model_config = ConfigDict(extra="allow")

    bucket: S3Bucket
    object: S3Object
    reason: str | None = None


class S3ObjectCreatedEvent(BaseModel):
    """EventBridge ``{"source": "aws.s3", "detail-type": "Object Created", "detail": {...}}``."""

    model_config = ConfigDict(populate_by_name=True, extra="allow")

    version: str = "0"
    id: str
    detail_type: Literal["Object Created"] = Field(alias="detail-type")
    source: Literal["aws.s3"]
    account: str | None = None
    time: datetime | None = None
    region: str | None = None
    resources: list[str] = Field(default_factory=list)
    detail: S3ObjectCreatedDetail


# --- step payloads ---
class ChunkBatchRef(BaseModel):
    """A batch of chunks stored as one blob object (JSON list of :class:`Chunk`)."""

    index: int
    key: str
    first_chunk_index: int
    count: int


class ConversionWait(BaseModel):
    """The converter answered ``{"status": "pending"}``: its pages come through the callback URL
    within ``deadline_seconds``."""

    converter_url: str
    deadline_seconds: int = Field(ge=1)


class DocumentRun(BaseModel):
    """The state passed between steps (input of Extract/Chunk/Finalize, output of each)."""

    model_config = ConfigDict(extra="ignore")

    project_id: str
    document_id: str
    generation: int = Field(ge=1)
    skip: bool = False
    reason: str | None = None
    pages_key: str | None = None
    total_pages: int | None = None
    total_chunks: int | None = None
    batches: list[ChunkBatchRef] = Field(default_factory=list)
    #: set by Extract when the converter answered ``pending``: AwaitConversion waits for its callback
    awaiting_conversion: ConversionWait | None = None


class AwaitConversionInput(BaseModel):
    """The AwaitConversion task's input: the run and the Step Functions task token of the waiting state."""

    run: DocumentRun
    task_token: str = Field(min_length=1, max_length=8192)


class EmbedBatchInput(BaseModel):
    """One item of the EmbedBatches Map."""

    model_config = ConfigDict(extra="ignore")

    project_id: str
    document_id: str
    generation: int = Field(ge=1)
    batch: ChunkBatchRef


class EmbedBatchResult(BaseModel):
    document_id: str
    batch_index: int
    indexed_chunks: int


class StepFailure(BaseModel):
    """What a Step Functions Catch puts at ``$.failure``: ``Error`` = exception class name,
    ``Cause`` = the Lambda error JSON ``{"errorMessage", "errorType", ...}`` (or plain text)."""

    Error: str
    Cause: str | None = None

    @property
    def message(self) -> str:
        cause = self.Cause or ""
        try:
            parsed = json.loads(cause)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and parsed.get("errorMessage"):
            return str(parsed["errorMessage"])
        return cause or self.Error


class FailedRun(BaseModel):
    """Input of MarkFailed: the failing step's input plus ``failure``. When Register failed the
    input is still the S3 event (no ``document_id``); ``detail`` then locates the document."""

    model_config = ConfigDict(extra="ignore")

    project_id: str | None = None
    document_id: str | None = None
    generation: int | None = None
    detail: S3ObjectCreatedDetail | None = None
    awaiting_conversion: ConversionWait | None = None
    failure: StepFailure


class MarkFailedResult(BaseModel):
    document_id: str | None
    marked: bool
    error: str
