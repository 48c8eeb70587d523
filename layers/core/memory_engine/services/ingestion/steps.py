"""The ingestion steps as service functions: register -> extract -> chunk -> embed_batch ->
finalize, and mark_failed. Each takes its payload model and :class:`IngestionPorts` and returns
the next payload. Lambda handlers (AWS) and the local runner call exactly these.

Every step is idempotent: a retried or redelivered step rewrites the same work objects and
upserts the same chunk keys. A run whose generation is no longer the document's
``ingest_generation`` (superseded by a newer upload or re-ingest) turns into a no-op
(``skip=True``) instead of touching the newer run's state.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from urllib.parse import unquote_plus

from memory_engine import constants as c
from memory_engine.domain import content_types as ct
from memory_engine.domain.chunking import stream_chunks
from memory_engine.domain.converter_protocol import CallbackUrls
from memory_engine.domain.documents import (
    EMBED_BATCH_SIZE,
    FILE_DEFAULTS,
    MAX_DOCUMENT_BYTES,
    Chunk,
    ChunkBatchRef,
    ChunkSettings,
    ChunkSource,
    ConversionWait,
    Document,
    DocumentRun,
    EmbedBatchInput,
    EmbedBatchResult,
    FailedRun,
    MarkFailedResult,
    Page,
    S3ObjectCreatedDetail,
    S3ObjectCreatedEvent,
    normalize_path,
)
from memory_engine.domain.ingestion_errors import DocumentGone, DocumentUnreadable, InvalidObjectKey, NoTextLayer, TooLarge
from memory_engine.domain.ingestion_rules import IngestionRule
from memory_engine.domain.pipeline import CONTENT_ERRORS
from memory_engine.errors import MemoryEngineError, NotFound
from memory_engine.ports.blobs import BlobInfo, BlobStore
from memory_engine.ports.conversions import ConversionRepository, TaskCallbacks
from memory_engine.ports.documents import DocumentRepository, NewDocument
from memory_engine.ports.embedder import Embedder
from memory_engine.ports.events import EventPublisher
from memory_engine.ports.extractors import Converter, Extractor
from memory_engine.ports.ocr import OcrEngine
from memory_engine.ports.projects import ProjectRepository
from memory_engine.services.ingestion.detection import content_type_for, record_detection
from memory_engine.services.ingestion.reading import ConversionPending, extract_pages

logger = logging.getLogger(__name__)

SUPERSEDED = "superseded by a newer ingestion of this document"


@dataclass(frozen=True)
class IngestionPorts:
    documents: DocumentRepository
    blobs: BlobStore
    embedder: Embedder
    projects: ProjectRepository
    extractors: dict[str, Extractor]
    converter: Converter
    ocr: OcrEngine | None = None  # the ``ocr`` converter type; None: an ``ocr`` rule fails the document
    #: deferred conversions (a converter answering ``pending``): records, callback URLs, resuming the run
    conversions: ConversionRepository | None = None
    callback_urls: CallbackUrls | None = None
    task_callbacks: TaskCallbacks | None = None
    #: ``document.ready`` / ``document.failed`` go here (None: not published)
    events: EventPublisher | None = None


def split_key(key: str) -> tuple[str, str]:
    """``projects/<project_id>/<path>`` -> (project_id, "/<path>"). Raises InvalidObjectKey, also
    for a path the one document path rule (``domain.documents.normalize_path``) rejects."""
    rest = key[len(c.S3_PROJECT_PREFIX):] if key.startswith(c.S3_PROJECT_PREFIX) else None
    project_id, _, path = (rest or "").partition("/")
    if not project_id or not path.strip("/"):
        raise InvalidObjectKey(
            f"object key {key!r} is not of the form {c.S3_PROJECT_PREFIX}<project_id>/<path>; upload under that prefix"
        )
    try:
        return project_id, normalize_path(path)
    except ValueError as exc:
        raise InvalidObjectKey(f"object key {key[:300]!r} has an invalid path: {exc}") from exc


def object_key(project_id: str, path: str) -> str:
    return f"{c.S3_PROJECT_PREFIX}{project_id}/{path.lstrip('/')}"


def work_prefix(document_id: str, generation: int | None = None) -> str:
    base = f"{c.S3_WORK_PREFIX}{document_id}/"
    return base if generation is None else f"{base}{generation}/"


# --- register ---
def register(event: S3ObjectCreatedEvent, ports: IngestionPorts) -> DocumentRun:
    """S3 "Object Created" -> the document row in ``processing`` (created or updated) and the run.

    Returns ``skip=True`` when the same bytes (sha256) at the same path are already ingested or
    being ingested (a redelivered event, an unchanged re-upload). Raises InvalidObjectKey for a
    key outside ``projects/<project_id>/`` or an unknown project, DocumentGone when the object
    was deleted before the run started.
    """
    key, info = _locate(event.detail, ports.blobs)
    project_id, path = split_key(key)
    project = ports.projects.get_project(project_id)
    if project is None or project.id != project_id:
        raise InvalidObjectKey(f"object key {key!r} names project {project_id!r}, which does not exist")
    if info is None:
        raise DocumentGone(f"{path} was deleted before ingestion started; upload it again")
    data = ports.blobs.get(key) if info.size <= MAX_DOCUMENT_BYTES else None  # too large: Extract fails it
    sha256 = hashlib.sha256(data).hexdigest() if data is not None else None
    existing = ports.documents.find_by_path(project_id, path)
    detection = content_type_for(path, info.content_type, existing, data)  # the bytes win over the declaration
    content_type = detection.content_type
    rule = rule_for(ports.documents.list_rules(project_id), content_type)
    if existing is not None and existing.chunk_settings_source == "request":
        settings, source = None, None  # the upload request's own settings win
    else:
        settings, source = effective_chunk_settings(rule, FILE_DEFAULTS)
    decision = ports.documents.begin_ingest(
        project_id,
        NewDocument(path=path, content_type=content_type, size_bytes=info.size, sha256=sha256,
                    source_bucket=ports.blobs.bucket, source_key=key, chunk_settings=settings,
                    chunk_settings_source=source, ingestion_rule_id=rule.id if rule else None),
        default_settings=FILE_DEFAULTS,
    )
    doc = decision.document
    if decision.started:
        record_detection(ports.documents, doc, detection)
    logger.info("register %s %s: %s", doc.id, path, decision.reason)
    return DocumentRun(project_id=project_id, document_id=doc.id, generation=max(1, doc.ingest_generation),
                       skip=not decision.started, reason=decision.reason)


def _locate(detail: S3ObjectCreatedDetail, blobs: BlobStore) -> tuple[str, BlobInfo | None]:
    """EventBridge delivers the key as S3 wrote it; some producers URL-encode it. Try both."""
    key = detail.object.key
    info = blobs.head(key)
    if info is None and unquote_plus(key) != key:
        decoded = unquote_plus(key)
        decoded_info = blobs.head(decoded)
        if decoded_info is not None:
            return decoded, decoded_info
    return key, info


def rule_for(rules: Sequence[IngestionRule], content_type: str) -> IngestionRule | None:
    """The rule whose glob matches ``content_type`` most specifically (None: no rule matches)."""
    return ct.most_specific(content_type, [(r.content_type_glob, r) for r in rules])


def effective_chunk_settings(rule: IngestionRule | None, default: ChunkSettings) -> tuple[ChunkSettings, ChunkSource]:
    """Without request fields: the rule's chunk settings over the entry point's default, or the default."""
    if rule is not None and rule.has_chunk_settings():
        return rule.chunk_settings(default), "rule"
    return default, "default"


# --- extract ---
def _current(run: DocumentRun, ports: IngestionPorts) -> Document | None:
    """The document if ``run`` still owns it; None when superseded. Raises DocumentGone."""
    try:
        doc = ports.documents.get(run.project_id, run.document_id)
    except NotFound as exc:
        raise DocumentGone(f"document {run.document_id} was deleted during ingestion; nothing to do") from exc
    return doc if doc.ingest_generation == run.generation else None


def _source(run: DocumentRun, ports: IngestionPorts) -> tuple[Document, bytes, str] | None:
    """The document, its bytes and content type; None when the run was superseded. Raises
    DocumentGone, TooLarge."""
    doc = _current(run, ports)
    if doc is None:
        return None
    if not doc.source_key:
        raise DocumentGone(f"{doc.path} has no stored content; upload it again")
    info = ports.blobs.head(doc.source_key)
    if info is None:
        raise DocumentGone(f"{doc.path} was deleted or moved during ingestion; upload it again")
    if info.size > MAX_DOCUMENT_BYTES:
        raise TooLarge(f"{doc.path} is {info.size / 1e6:.1f} MB; the limit is {MAX_DOCUMENT_BYTES / 1e6:.0f} MB: "
                       "split it into smaller files")
    try:
        data = ports.blobs.get(doc.source_key)
    except NotFound as exc:
        raise DocumentGone(f"{doc.path} was deleted or moved during ingestion; upload it again") from exc
    return doc, data, ct.resolve(doc.path, doc.content_type)


def _open(run: DocumentRun, ports: IngestionPorts) -> tuple[Document, Iterator[Page]] | DocumentRun:
    """The document and its pages (as they are read, see :func:`reading.extract_pages`), or the run's
    next state when there is nothing to read now: skipped, superseded, or awaiting a converter's
    callback (``awaiting_conversion``). Raises what :func:`_source` and ``extract_pages`` raise."""
    if run.skip:
        return run
    source = _source(run, ports)
    if source is None:
        return run.model_copy(update={"skip": True, "reason": SUPERSEDED})
    doc, data, content_type = source
    rule = rule_for(ports.documents.list_rules(run.project_id), content_type)
    try:
        return doc, extract_pages(data, content_type, doc.path, ports, rule, document=doc, generation=run.generation)
    except ConversionPending as pending:
        return run.model_copy(update={"awaiting_conversion": pending.wait})


def extract(run: DocumentRun, ports: IngestionPorts) -> DocumentRun:
    """The object -> pages (one work object), or the converter's ``pending`` (``awaiting_conversion``).
    Raises TooLarge, EncryptedPdf, NoTextLayer, DocumentUnreadable, UnsupportedContentType,
    ConverterFailed, DocumentGone."""
    opened = _open(run, ports)
    if isinstance(opened, DocumentRun):
        return opened
    doc, read = opened
    pages = list(read)
    key = work_prefix(doc.id, run.generation) + "pages.json"
    ports.blobs.put(key, json.dumps([p.model_dump() for p in pages], ensure_ascii=False).encode(),
                    content_type="application/json")
    ports.documents.set_progress(run.project_id, run.document_id, run.generation, total_pages=len(pages))
    return run.model_copy(update={"pages_key": key, "total_pages": len(pages)})


# --- chunk ---
def chunk(run: DocumentRun, ports: IngestionPorts) -> DocumentRun:
    """Pages -> chunks under the document's chunk settings, written as batch objects."""
    if run.skip:
        return run
    doc = _current(run, ports)
    if doc is None:
        return run.model_copy(update={"skip": True, "reason": SUPERSEDED})
    if not run.pages_key:
        raise DocumentUnreadable("internal: the chunk step got no extracted pages; re-ingest the document")
    pages = [Page.model_validate(p) for p in json.loads(ports.blobs.get(run.pages_key))]
    batches, total = _write_batches(stream_chunks(pages, doc.chunk_settings), doc, run, ports)
    ports.documents.set_progress(run.project_id, run.document_id, run.generation, total_chunks=total)
    return run.model_copy(update={"batches": batches, "total_chunks": total})


def extract_and_chunk(run: DocumentRun, ports: IngestionPorts,
                      emit: Callable[[ChunkBatchRef], None]) -> DocumentRun:
    """Extract and Chunk in one pass, for a runner that overlaps them with EmbedBatches (the local
    runner, :data:`memory_engine.domain.pipeline.STREAMED`): pages are chunked as they are parsed and
    each batch object is handed to ``emit`` as soon as it is written, while later pages are parsed.
    Returns what Chunk returns (no pages object is written), or what Extract returns when the
    converter answers ``pending`` (no batches: the runner goes on with AwaitConversion and Chunk);
    raises what Extract and Chunk raise.
    Holds one page and one batch at a time (``page`` chunks); the joined strategies need the whole
    text, as the two steps do."""
    opened = _open(run, ports)
    if isinstance(opened, DocumentRun):  # awaiting a converter: the run goes on through AwaitConversion
        return opened
    doc, read = opened
    counted = _Counted(read)
    batches, total = _write_batches(stream_chunks(counted, doc.chunk_settings), doc, run, ports, emit)
    ports.documents.set_progress(run.project_id, run.document_id, run.generation, total_pages=counted.count,
                                 total_chunks=total)
    return run.model_copy(update={"total_pages": counted.count, "batches": batches, "total_chunks": total})


class _Counted(Iterator[Page]):
    def __init__(self, pages: Iterator[Page]) -> None:
        self._pages, self.count = pages, 0

    def __next__(self) -> Page:
        page = next(self._pages)
        self.count += 1
        return page


def _write_batches(chunks: Iterable[Chunk], doc: Document, run: DocumentRun, ports: IngestionPorts,
                   emit: Callable[[ChunkBatchRef], None] | None = None) -> tuple[list[ChunkBatchRef], int]:
    """Chunks -> batch objects of EMBED_BATCH_SIZE under the run's work prefix, each handed to
    ``emit`` once written; the refs and the chunk count (the caller records it as progress, with
    the page count when it has one: one statement per document). Raises NoTextLayer when there is
    no chunk."""
    batches: list[ChunkBatchRef] = []
    prefix = work_prefix(doc.id, run.generation)
    total = 0
    pending = iter(chunks)
    while part := list(itertools.islice(pending, EMBED_BATCH_SIZE)):
        key = f"{prefix}batch-{len(batches):05d}.json"
        ports.blobs.put(key, json.dumps([ch.model_dump() for ch in part], ensure_ascii=False).encode(),
                        content_type="application/json")
        ref = ChunkBatchRef(index=len(batches), key=key, first_chunk_index=total, count=len(part))
        batches.append(ref)
        total += len(part)
        if emit is not None:
            emit(ref)
    if not total:
        raise NoTextLayer(f"{doc.path} contains no text to index; upload a file with text")
    return batches, total


# --- embed ---
def embed_batch(item: EmbedBatchInput, ports: IngestionPorts) -> EmbedBatchResult:
    """Embed one batch and upsert it keyed by (document, generation, chunk_index): running it
    twice stores the same rows once. Raises EmbeddingThrottled/EmbeddingError (retried by the
    pipeline) and DatabaseError."""
    chunks = [Chunk.model_validate(ch) for ch in json.loads(ports.blobs.get(item.batch.key))]
    vectors = ports.embedder.embed_documents([ch.content for ch in chunks])
    count = ports.documents.upsert_chunks(item.project_id, item.document_id, item.generation, chunks, vectors)
    return EmbedBatchResult(document_id=item.document_id, batch_index=item.batch.index, indexed_chunks=count or 0)


# --- finalize ---
def finalize(run: DocumentRun, ports: IngestionPorts) -> DocumentRun:
    """Make the new chunk set the searchable one (and drop the old one) atomically; ``ready``."""
    if run.skip:
        return run
    path = ports.documents.finalize(run.project_id, run.document_id, run.generation)
    if path is None:
        return run.model_copy(update={"skip": True, "reason": SUPERSEDED})
    _cleanup(ports.blobs, run.document_id, run.generation)
    _publish(ports, c.DETAIL_TYPE_DOCUMENT_READY, run.project_id, run.document_id, error=None, path=path)
    return run


def _publish(ports: IngestionPorts, detail_type: str, project_id: str, document_id: str, *, error: str | None,
             path: str | None = None) -> None:
    """``document.ready`` / ``document.failed`` on the bus: best effort (the document's status is
    the record; a bus failure is logged, never fails the run). ``path`` when the caller has it."""
    if ports.events is None:
        return
    try:
        path = path or ports.documents.get(project_id, document_id).path
        detail = {"project_id": project_id, "document_id": document_id, "path": path, "error": error}
        ports.events.publish(detail_type, detail)
    except Exception:
        logger.exception("could not publish %s for document %s", detail_type, document_id)


def _cleanup(blobs: BlobStore, document_id: str, generation: int | None) -> None:
    try:
        blobs.delete_prefix(work_prefix(document_id, generation))
    except MemoryEngineError:
        logger.warning("could not delete work objects of %s/%s", document_id, generation, exc_info=True)


# --- mark_failed ---
def failure_message(error: str, message: str, awaiting: ConversionWait | None = None) -> str:
    """The document's ``error``: named content failures verbatim, anything else with a next step."""
    if error in CONTENT_ERRORS:
        return message
    if error == "States.Timeout" and awaiting is not None:
        return (f"the converter at {awaiting.converter_url} answered pending but did not deliver the pages to the "
                f"callback URL within {awaiting.deadline_seconds} s (the deadline); fix the converter, then retry "
                "with POST /v1/documents/{id}/ingest")
    if error == "States.Timeout":
        return ("ingestion timed out; retry with POST /v1/documents/{id}/ingest, or split the file if it is very large")
    if error in ("EmbeddingThrottled", "EmbeddingError"):
        return f"the embedding model failed after retries ({message}); retry with POST /v1/documents/{{id}}/ingest"
    return (f"ingestion failed unexpectedly ({error}: {message}); retry with POST /v1/documents/{{id}}/ingest "
            "and report it if it persists")


def mark_failed(failed: FailedRun, ports: IngestionPorts) -> MarkFailedResult:
    """Status ``failed`` + a human-readable error. Works from a DocumentRun (document known) or
    from the raw S3 event (Register failed). Never raises for a document that is gone."""
    document_id, project_id, generation = failed.document_id, failed.project_id, failed.generation
    if document_id is None and failed.detail is not None:
        for key in dict.fromkeys((failed.detail.object.key, unquote_plus(failed.detail.object.key))):
            try:
                project_id, path = split_key(key)
            except InvalidObjectKey:
                continue
            found = ports.documents.find_by_path(project_id, path)
            if found is not None:
                document_id = found.id
                break
    message = failure_message(failed.failure.Error, failed.failure.message, failed.awaiting_conversion)
    if document_id is not None:
        message = message.replace("{id}", document_id)
    if document_id is None or project_id is None:
        logger.warning("ingestion failed before a document existed: %s", message)
        return MarkFailedResult(document_id=None, marked=False, error=message)
    marked = ports.documents.mark_failed(project_id, document_id, generation, message)
    if generation is not None:
        _cleanup(ports.blobs, document_id, generation)
    if marked:
        _publish(ports, c.DETAIL_TYPE_DOCUMENT_FAILED, project_id, document_id, error=message)
    return MarkFailedResult(document_id=document_id, marked=marked, error=message)
