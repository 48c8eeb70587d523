"""What the HTTP API answers, as pydantic models, so the OpenAPI document tells the truth.

Routes declare their responses with :func:`documented`: the success model(s) per status code and
the error statuses they can answer, all of them with the SPEC's error shape
``{"error": {"code", "message", "details"}}`` (:class:`ErrorBody`). The models describe the wire
shape the routes already produce; they are documentation, not a second serializer.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, cast

from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import BaseModel, Field

from memory_engine.domain.documents import Document
from memory_engine.domain.entries import Memory, MemoryEntry
from memory_engine.domain.ingestion_rules import IngestionRule
from memory_engine.domain.search_models import EpisodeResult, SearchResult, Synthesis
from memory_engine.services.ingestion.documents import BatchItem
from memory_engine.services.write_batch import DeletedItem, EntryBatchItem

# --- errors ---


class ErrorDetail(BaseModel):
    code: str = Field(description="stable, machine-readable (e.g. `validation_error`, `not_found`)")
    message: str = Field(description="for people; never database text or server paths")
    details: Any = Field(None, description="e.g. one `{field, message, type}` per invalid field; may be null")


class ErrorBody(BaseModel):
    """Every error the API answers, whatever the status."""

    error: ErrorDetail


#: The description of each error status, as the API uses it.
ERROR_DESCRIPTIONS: dict[int, str] = {
    400: "malformed request (e.g. a body that is not JSON)",
    401: "missing, malformed, unknown or revoked API key",
    403: "the key lacks the scope this route needs",
    404: "no such resource in the key's project (another project's id is 404, never 403)",
    409: "the resource's state forbids the change",
    413: "a body, field or metadata over its documented limit",
    415: "a body labelled with a content type the route does not read (send `application/json`)",
    422: "a field fails validation (`details` names each field)",
    503: "a backing service (database, embedding model) is unavailable; retry",
}

#: Every authenticated route can answer these.
AUTHENTICATED = (401, 403, 503)
#: ... and routes that take a JSON body these.
WITH_BODY = (400, 413, 415, 422)


# --- successes ---


class MemoryPage(BaseModel):
    data: list[Memory]
    next_cursor: str | None


class MemoryEntryPage(BaseModel):
    data: list[MemoryEntry]
    next_cursor: str | None


class DocumentPage(BaseModel):
    data: list[Document]
    next_cursor: str | None


class IngestionRulePage(BaseModel):
    data: list[IngestionRule]
    next_cursor: str | None


class CallbackReceived(BaseModel):
    """``accepted``: the pages are delivered and ingestion goes on; ``already_received``: a
    repeated callback, nothing changed."""

    status: str
    document_id: str
    pages: int | None = None


class SearchResponseBody(BaseModel):
    results: list[SearchResult]
    context: str | None = Field(None, description="with `render: true`: the `<knowledge>` block (`\"\"` when empty)")
    degraded: list[str] | None = Field(None, description="signals that could not run (e.g. `vector` when the "
                                                         "embedding model is down); absent when all ran")
    episodes: list[EpisodeResult] | None = Field(None, description="with `include: [\"episodes\"]`")
    synthesis: Synthesis | None = Field(None, description="with `include: [\"synthesis\"]`, when the chat model answered")


class DocumentBatchResult(BaseModel):
    results: list[BatchItem] = Field(description="one per item, in the order sent")
    created: int
    unchanged: int
    rejected: int


class EntryBatchResult(BaseModel):
    results: list[EntryBatchItem] = Field(description="one per item, in the order sent")
    created: int
    skipped: int
    rejected: int


class EntryBatchDeleteResult(BaseModel):
    results: list[DeletedItem] = Field(description="one per id, in the order sent")
    deleted: int
    not_found: int


class ImportResult(BaseModel):
    memory: Memory = Field(description="the new memory (`metadata.imported_from.id` is the exported id)")
    entries: int
    entities: int
    episodes: int
    embedded: int = Field(description="rows embedded with this deployment's model (no usable vector in the file)")
    vectors_reused: bool = Field(description="the file's vectors came from this deployment's model and were kept")


class DocumentStatusView(BaseModel):
    status: Literal["pending", "processing", "ready", "failed"]
    total_pages: int | None
    total_chunks: int | None
    indexed_chunks: int
    progress: float = Field(ge=0.0, le=1.0)
    error: str | None


class UploadUrl(BaseModel):
    upload_url: str
    method: Literal["PUT"]
    headers: dict[str, str]
    key: str
    expires_at: datetime


class Embedding(BaseModel):
    index: int
    embedding: list[float]


class EmbeddingsResponse(BaseModel):
    model: str
    dimensions: int
    data: list[Embedding]


class WorkerCounts(BaseModel):
    """The local engine's worker processes (absent on AWS, where Lambda scales)."""

    alive: int
    configured: int


class Health(BaseModel):
    status: Literal["ok", "degraded"]
    version: str
    database: bool
    workers: WorkerCounts | None = None


class ExtractionRunView(BaseModel):
    id: str
    status: str
    attempts: int
    episode_id: str | None
    summary: dict[str, Any] | None
    error: str | None


class ExtractionRunRecord(BaseModel):
    """One ``turn.completed`` event as the extraction consumer handled it."""

    id: str
    event_id: str = Field(description="the EventBridge event id (the idempotency key)")
    memory_id: str | None = Field(description="null once the memory was deleted")
    conversation_id: str | None
    turn_id: str | None
    episode_id: str | None = Field(description="the stored transcript of the turn")
    status: Literal["running", "completed", "failed"]
    summary: dict[str, Any] | None = Field(description="`{candidates, created, updated, skipped, superseded}` "
                                                       "once finished")
    error: str | None = Field(description="why the run failed (e.g. the model's error); null otherwise")
    attempts: int
    created_at: datetime
    updated_at: datetime


class ExtractionRunPage(BaseModel):
    data: list[ExtractionRunRecord]
    next_cursor: str | None


class EventAccepted(BaseModel):
    id: str
    message_id: str
    status: str = Field(description="`queued`; with `wait=true` the delivery's state (`succeeded`, "
                                    "`dead_lettered`, or still `queued`/`running` at the time limit)")
    run: ExtractionRunView | None = Field(None, description="with `wait=true`: the extraction run, if one exists")


class UploadStored(BaseModel):
    key: str
    path: str
    size: int


class OpenAPIDocument(BaseModel):
    """An OpenAPI 3 document (this one)."""

    openapi: str
    info: dict[str, Any]
    paths: dict[str, Any]


# --- the ``responses=`` argument of a route ---


def documented(
    successes: dict[int, tuple[type[BaseModel] | None, str]], *errors: int
) -> dict[int, OpenAPIResponse]:
    """Powertools' ``responses=`` for a route: each success status with its model (``None``: no body)
    and each error status with :class:`ErrorBody`."""
    out: dict[int, dict[str, Any]] = {}
    for status, (model, description) in successes.items():
        out[status] = {"description": description}
        if model is not None:
            out[status]["content"] = {"application/json": {"model": model}}
    for status in sorted(set(errors)):
        out[status] = {"description": ERROR_DESCRIPTIONS[status], "content": {"application/json": {"model": ErrorBody}}}
    return cast(dict[int, OpenAPIResponse], out)
