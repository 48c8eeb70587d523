"""Deferred conversions: the AwaitConversion step and the converter's callback.

A converter that answered ``{"status": "pending"}`` POSTs the pages (or ``{"error": ...}``) to its
signed callback URL. The pipeline waits in AwaitConversion: on AWS a ``.waitForTaskToken`` state
whose token this step records, resumed by the callback with ``SendTaskSuccess`` (or
``SendTaskFailure``); locally the runner polls the recorded conversion. Whichever of the callback
and the waiting step comes second resumes the run, so their order does not matter. The state's
timeout is the deadline: past it the document ends ``failed`` saying so, and the URL has expired.
"""

from __future__ import annotations

import json
import logging
import secrets
from dataclasses import dataclass

from memory_engine.domain.converter_protocol import InvalidCallbackToken, Pending, parse_answer_bytes
from memory_engine.domain.documents import AwaitConversionInput, DocumentRun, DocumentStatus, Page
from memory_engine.domain.ingestion_errors import ConverterFailed
from memory_engine.domain.validation import scrub_text
from memory_engine.errors import ConfigurationError, Conflict, Forbidden, InvalidInput, NotFound
from memory_engine.ports.conversions import Conversion, TaskCallbacks
from memory_engine.services.ingestion.steps import IngestionPorts, work_prefix

logger = logging.getLogger(__name__)


def await_conversion(item: AwaitConversionInput, ports: IngestionPorts) -> AwaitConversionInput:
    """The waiting state's task: record its task token with the awaited conversion; when the
    callback already came, resume the run now. Raises ConverterFailed when nothing is awaited."""
    run = item.run
    if ports.conversions is None or ports.task_callbacks is None:
        raise ConverterFailed("deferred conversions are not configured in this deployment; report it to the operator")
    conversion = ports.conversions.attach_token(run.document_id, run.generation, item.task_token)
    if conversion is None:
        raise ConverterFailed(f"internal: no awaited conversion for {run.document_id}; re-ingest the document")
    if conversion.delivered:
        resume(conversion, run, ports.task_callbacks, item.task_token)
    return item


def converted_run(conversion: Conversion, run: DocumentRun) -> DocumentRun:
    """The run as Extract would have returned it had the converter answered at once."""
    return run.model_copy(update={"awaiting_conversion": None, "pages_key": conversion.pages_key,
                                  "total_pages": conversion.total_pages})


def resume(conversion: Conversion, run: DocumentRun, callbacks: TaskCallbacks, task_token: str) -> None:
    """Resume the waiting run with the delivered pages, or fail it with the converter's error."""
    if conversion.error is not None:
        callbacks.fail(task_token, "ConverterFailed", conversion.error)
    else:
        callbacks.succeed(task_token, converted_run(conversion, run).model_dump(mode="json"))


@dataclass(frozen=True)
class CallbackReceipt:
    """What ``POST /v1/converter-callbacks/{token}`` answers."""

    status: str  # "accepted" | "already_received"
    document_id: str
    pages: int | None = None


def receive_callback(ports: IngestionPorts, token: str, body: bytes) -> CallbackReceipt:
    """Deliver a deferred conversion's pages (or error), once. Raises Forbidden (forged, malformed
    or expired URL), NotFound (nothing awaits pages there), Conflict (the run was superseded or
    already ended), InvalidInput (a bad body: the document then ends ``failed`` with the reason)."""
    if ports.callback_urls is None or ports.conversions is None:
        raise ConfigurationError("converter callbacks are not configured in this deployment")
    try:
        grant = ports.callback_urls.verify(token)
    except InvalidCallbackToken as exc:
        raise Forbidden(str(exc)) from exc
    conversion = ports.conversions.get(grant.document_id, grant.generation)
    if conversion is None or conversion.project_id != grant.project_id:
        raise NotFound("no conversion awaits pages at this callback URL")
    if conversion.delivered:
        return CallbackReceipt("already_received", grant.document_id)
    try:
        doc = ports.documents.get(grant.project_id, grant.document_id)
    except NotFound as exc:
        raise Conflict("the document was deleted; its pages are no longer awaited") from exc
    if doc.ingest_generation != grant.generation or doc.status is not DocumentStatus.PROCESSING:
        raise Conflict(f"document {doc.id} is no longer waiting for these pages (status {doc.status.value}, "
                       "superseded or past its deadline)")
    source = f"the converter at {conversion.converter_url} (callback)"
    pages_key, pages, error = None, None, None
    try:
        parsed = parse_answer_bytes(body, source=source)
        if isinstance(parsed, Pending):
            raise ConverterFailed(f"{source} posted {{\"status\": \"pending\"}}; the callback must carry the pages")
        pages = [Page(number=p.number, text=scrub_text(p.text)) for p in parsed]
        if not any(p.text.strip() for p in pages):
            raise ConverterFailed(f"{source} delivered no text for {doc.path}; fix the converter")
    except ConverterFailed as exc:
        error = exc.message
    if pages is not None and error is None:
        pages_key = f"{work_prefix(doc.id, grant.generation)}converted-{secrets.token_hex(6)}.json"
        ports.blobs.put(pages_key, json.dumps([p.model_dump() for p in pages], ensure_ascii=False).encode(),
                        content_type="application/json")
    delivered = ports.conversions.deliver(doc.id, grant.generation, pages_key=pages_key,
                                          total_pages=len(pages) if pages is not None and error is None else None,
                                          error=error)
    if delivered is None:  # a concurrent callback won
        return CallbackReceipt("already_received", doc.id)
    if delivered.total_pages is not None:
        ports.documents.set_progress(doc.project_id, doc.id, grant.generation, total_pages=delivered.total_pages)
    if delivered.task_token and ports.task_callbacks is not None:
        run = DocumentRun(project_id=doc.project_id, document_id=doc.id, generation=grant.generation)
        resume(delivered, run, ports.task_callbacks, delivered.task_token)
    logger.info("converter callback for %s generation %d: %s", doc.id, grant.generation, error or "pages delivered")
    if error is not None:
        raise InvalidInput(f"{error}; the document is marked failed")
    return CallbackReceipt("accepted", doc.id, pages=len(pages or []))
