"""Document use cases behind the HTTP API: create from text, upload URL, re-ingest, delete, wait."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from urllib.parse import urljoin

from pydantic import BaseModel, ValidationError

from memory_engine.domain import content_types as ct
from memory_engine.domain.documents import FILE_DEFAULTS, TEXT_DEFAULTS, Document, DocumentRun, DocumentStatus
from memory_engine.domain.ingestion_rules import IngestionRule
from memory_engine.domain.requests import CreateTextDocument, ReingestRequest, UploadRequest
from memory_engine.domain.validation import project_name
from memory_engine.errors import InvalidInput, MemoryEngineError, invalid_input
from memory_engine.ports.blobs import PresignedUpload, UploadInbox
from memory_engine.ports.documents import NewDocument
from memory_engine.ports.pipeline import PipelineStarter
from memory_engine.services.ingestion.steps import IngestionPorts, effective_chunk_settings, object_key, rule_for, work_prefix

logger = logging.getLogger(__name__)

#: `wait: true` blocks at most this long (API Gateway's integration timeout is 30 s).
WAIT_LIMIT_SECONDS = 25.0
#: Upload URLs (presigned S3 PUT, or the local signed token) expire after this long.
UPLOAD_URL_TTL_SECONDS = 3600
#: A ``pending`` document whose upload URL expired this long ago without an upload ends ``failed``
#: (the margin lets an upload sent just before expiry reach the pipeline first).
UPLOAD_EXPIRY_GRACE_SECONDS = 120
UPLOAD_EXPIRED_ERROR = ("no upload arrived before the upload URL expired; request a new one with "
                        "POST /v1/documents/uploads (or delete the document)")


class BatchItem(BaseModel):
    """One item's outcome: ``created`` (a run started), ``unchanged`` (the same text is already at
    that path) or ``rejected`` (``error`` says why; nothing was stored for it)."""

    index: int
    action: Literal["created", "unchanged", "rejected"]
    document: Document | None = None
    error: dict[str, Any] | None = None


def run_name(document_id: str, generation: int) -> str:
    return f"{document_id}-g{generation}"


def _start(starter: PipelineStarter, doc: Document) -> None:
    run = DocumentRun(project_id=doc.project_id, document_id=doc.id, generation=doc.ingest_generation)
    starter.start(run.model_dump(mode="json"), name=run_name(doc.id, doc.ingest_generation), size_bytes=doc.size_bytes)


def create_text_document(ports: IngestionPorts, starter: PipelineStarter, project_id: str,
                         body: CreateTextDocument, rules: Sequence[IngestionRule] | None = None) -> tuple[Document, bool]:
    """Store the text as an object and start its run. Returns (document, started); the same
    text at the same path again is a no-op (started False). ``rules``: the project's ingestion
    rules when the caller has read them (a batch reads them once). Raises InvalidInput, DependencyError."""
    if not body.content.strip():
        raise InvalidInput("content must not be blank", details=[{"field": "content"}])
    data = body.content.encode("utf-8")
    by_extension = ct.from_extension(body.path)  # a posted page, table or message is read as one (issue 37)
    content_type = body.content_type or (by_extension if by_extension in ct.posted_text_formats() else ct.TEXT)
    key = object_key(project_id, body.path)
    rule = rule_for(ports.documents.list_rules(project_id) if rules is None else rules, content_type)
    settings, source = effective_chunk_settings(rule, TEXT_DEFAULTS)
    if body.explicit():  # precedence: the request's fields, the rule's, the entry point's default
        settings, source = body.settings(settings), "request"
    # The row first: the S3 event the object triggers on AWS then finds the same sha256 and stops.
    decision = ports.documents.begin_ingest(
        project_id,
        NewDocument(path=body.path, content_type=content_type, size_bytes=len(data),
                    sha256=hashlib.sha256(data).hexdigest(), source_bucket=ports.blobs.bucket, source_key=key,
                    title=body.title, tags=body.tags, metadata=body.metadata,
                    chunk_settings=settings, chunk_settings_source=source,
                    ingestion_rule_id=rule.id if rule else None),
        default_settings=TEXT_DEFAULTS,
    )
    if not decision.started:
        return decision.document, False
    try:
        ports.blobs.put(key, data, content_type=content_type + "; charset=utf-8")
    except MemoryEngineError as error:  # never leave the row in `processing` with nothing to process
        doc = decision.document
        ports.documents.mark_failed(project_id, doc.id, doc.ingest_generation, f"storing the text failed: {error.message}")
        raise
    _start(starter, decision.document)
    return decision.document, True


def create_text_documents(ports: IngestionPorts, starter: PipelineStarter, project_id: str,
                          items: Sequence[dict[str, Any]]) -> list[BatchItem]:
    """Each item through :func:`create_text_document`, in order. An item that fails validation
    (or names a path an earlier item of the batch has) is ``rejected`` with the error and does not
    stop the others. A dependency failure (database, blob store) propagates: the items before it
    are stored, and sending the same batch again is safe (same text at the same path: ``unchanged``)."""
    results: list[BatchItem] = []
    first_index: dict[str, int] = {}
    rules: list[IngestionRule] | None = None
    for index, raw in enumerate(items):
        try:
            try:
                body = CreateTextDocument.model_validate(raw)
            except ValidationError as error:
                raise invalid_input(error, "invalid document") from error
            if body.wait:
                raise InvalidInput("`wait` is not supported in a batch; poll GET /v1/documents/{id}/status",
                                   details=[{"field": "wait"}])
            if body.path in first_index:
                raise InvalidInput(f"path {body.path} is also item {first_index[body.path]} of this batch",
                                   details=[{"field": "path"}])
            first_index[body.path] = index
            if rules is None:
                rules = ports.documents.list_rules(project_id)
            doc, started = create_text_document(ports, starter, project_id, body, rules)
        except InvalidInput as error:
            results.append(BatchItem(index=index, action="rejected", error=error.to_body()["error"]))
            continue
        results.append(BatchItem(index=index, action="created" if started else "unchanged", document=doc))
    return results


def prepare_upload(ports: IngestionPorts, project_id: str, body: UploadRequest, *, origin: str) -> PresignedUpload:
    """Create/update the document row (``pending`` when new) with the request's settings, and
    return where to PUT the bytes: an absolute URL (a store's URL relative to the server that issued
    it is resolved against ``origin``, this server's ``scheme://host``). The upload's S3 event
    starts the pipeline."""
    content_type = ct.resolve(body.path, body.content_type)
    expire_unused_uploads(ports, project_id=project_id)
    ports.documents.prepare(
        project_id,
        NewDocument(path=body.path, content_type=content_type, title=body.title, tags=body.tags,
                    metadata=body.metadata, chunk_settings=body.settings(FILE_DEFAULTS) if body.explicit() else None,
                    chunk_settings_source="request" if body.explicit() else None),
        default_settings=FILE_DEFAULTS,
    )
    presigned = ports.blobs.presign_put(object_key(project_id, body.path), content_type=content_type,
                                        expires_in=UPLOAD_URL_TTL_SECONDS)
    return dataclasses.replace(presigned, url=urljoin(origin + "/", presigned.url))


def expire_unused_uploads(ports: IngestionPorts, *, project_id: str | None = None,
                          now: datetime | None = None) -> int:
    """Documents left ``pending`` by upload URLs that expired unused -> ``failed`` with
    :data:`UPLOAD_EXPIRED_ERROR` (kept, not deleted: the caller sees why, and a late upload still
    ingests it). Runs for the project on each new upload request, and periodically for every
    project in the local engine (the drop-folder watcher). Returns how many expired."""
    cutoff = (now or datetime.now(UTC)) - timedelta(seconds=UPLOAD_URL_TTL_SECONDS + UPLOAD_EXPIRY_GRACE_SECONDS)
    expired = ports.documents.fail_stale_pending(older_than=cutoff, error=UPLOAD_EXPIRED_ERROR, project_id=project_id)
    if expired:
        logger.info("%d pending document(s) failed: their upload URLs expired unused", expired)
    return expired


def reingest(ports: IngestionPorts, starter: PipelineStarter, project_id: str, document_id: str,
             body: ReingestRequest) -> Document:
    """New chunk settings, a new generation, a new run; the old chunks stay searchable until the
    new set is complete. Raises NotFound, InvalidInput (no stored content), DependencyError."""
    current = ports.documents.get(project_id, document_id)
    if not current.source_key or ports.blobs.head(current.source_key) is None:
        raise InvalidInput(f"document {document_id} has no stored content to re-ingest; upload it again")
    doc = ports.documents.begin_reingest(project_id, document_id, body.settings(current.chunk_settings),
                                         "request" if body.explicit() else None)
    _start(starter, doc)
    return doc


def resume_interrupted(ports: IngestionPorts, starter: PipelineStarter) -> list[Document]:
    """Start again every run left in ``processing`` (the local engine stopped mid-run). Steps are
    idempotent, so a resumed run finishes the same generation without duplicating chunks. Only for
    the local shape: on AWS, Step Functions executions survive restarts."""
    interrupted = ports.documents.list_processing()
    for doc in interrupted:
        _start(starter, doc)
    return interrupted


def delete_document(ports: IngestionPorts, project_id: str, document_id: str, *,
                    inbox: UploadInbox | None = None) -> None:
    """Delete the row (chunks cascade), then every copy of the file the engine keeps: its stored
    object, its work objects and, locally, the file its upload left in the drop folder (``inbox``;
    left there, the watcher would ingest it again after a restart). Raises NotFound."""
    doc = ports.documents.delete(project_id, document_id)
    try:
        if doc.source_key:
            ports.blobs.delete(doc.source_key)
        ports.blobs.delete_prefix(work_prefix(doc.id))
    except MemoryEngineError:
        pass  # the row is gone; a leftover object is harmless and re-uploading replaces it
    project = ports.projects.get_project(project_id) if inbox is not None else None
    if inbox is not None and project is not None:
        try:
            folder = project_name(project.name)
        except ValueError:
            return  # a project named before names were slugs has no drop folder
        inbox.discard(folder, doc.path, doc.sha256)


def wait_until_settled(get: Callable[[], Document], *, timeout: float = WAIT_LIMIT_SECONDS,
                       interval: float = 0.2) -> Document:
    """Poll until the document leaves ``processing`` (or the timeout passes); the last state."""
    deadline = time.monotonic() + timeout
    doc = get()
    while doc.status is DocumentStatus.PROCESSING and time.monotonic() < deadline:
        time.sleep(interval)
        doc = get()
    return doc
