"""HTTP routes for documents (SPEC "HTTP API" table). Another project's document is 404."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from memory_engine.bootstrap import get_container
from memory_engine.domain.auth import Scope
from memory_engine.domain.cursor import DEFAULT_LIMIT, page
from memory_engine.domain.documents import Document
from memory_engine.domain.requests import (
    MAX_BATCH_DOCUMENTS,
    CreateTextDocument,
    ReingestRequest,
    TextDocumentBatch,
    UploadRequest,
)
from memory_engine.http.auth import require
from memory_engine.http.responses import PageCursor, PageLimit, json_response, no_content
from memory_engine.http.schemas import (
    AUTHENTICATED,
    WITH_BODY,
    DocumentBatchResult,
    DocumentPage,
    DocumentStatusView,
    UploadUrl,
    documented,
)
from memory_engine.services.ingestion.documents import (
    WAIT_LIMIT_SECONDS,
    create_text_document,
    create_text_documents,
    delete_document,
    prepare_upload,
    reingest,
    wait_until_settled,
)
from memory_engine.services.list_documents import list_documents

router = Router()

_WAIT = (f"`wait: true` blocks until the document leaves `processing`, at most {WAIT_LIMIT_SECONDS:.0f} s "
         "(then answers with the current state; poll `/status`).")


_PATHS = ("`path`: non-empty segments, none `.`, `..` or hidden (leading `.`), each at most 255 bytes of UTF-8, "
          "no control characters (422); `metadata` nested at most 32 levels (422). See docs/limits.md.")


@router.post("/v1/documents", summary="Create a document from text",
             description="Ingestion runs in the background; 201 when a run started, 200 when the same text is "
                         f"already at that path (no-op). `chunk_strategy` defaults to `whole`. {_WAIT} {_PATHS}",
             responses=documented({201: (Document, "created; ingestion started"),
                                   200: (Document, "the same text is already at that path")},
                                  *AUTHENTICATED, *WITH_BODY))
def create(body: Annotated[CreateTextDocument, Body()]) -> Response[Any]:
    principal = require(Scope.WRITE)
    c = get_container()
    doc, started = create_text_document(c.ingestion_ports, c.pipeline_starter, principal.project_id, body)
    if body.wait:
        doc = wait_until_settled(lambda: c.documents.get(principal.project_id, doc.id))
    return json_response(doc, 201 if started else 200)


_BATCH = ("`{documents: [{path, content, title?, tags?, metadata?, chunk_*?}, ...]}` (1..MAX). Each item is validated "
          "and created on its own, in order: 200 with `results: [{index, action (created|unchanged|rejected), document "
          "| error}]` and the counts, even when some items are rejected. Ingestion runs in the background (poll each "
          "document's `/status`). Sending the same batch again is safe: items already stored answer `unchanged`."
          ).replace("MAX", str(MAX_BATCH_DOCUMENTS))


@router.post("/v1/documents/batch", summary="Create up to 100 documents from text", description=_BATCH,
             responses=documented({200: (DocumentBatchResult, "one result per item")}, *AUTHENTICATED, *WITH_BODY))
def create_batch(body: Annotated[TextDocumentBatch, Body()]) -> Response[Any]:
    principal = require(Scope.WRITE)
    c = get_container()
    results = create_text_documents(c.ingestion_ports, c.pipeline_starter, principal.project_id, body.documents)
    counts = {action: sum(r.action == action for r in results) for action in ("created", "unchanged", "rejected")}
    return json_response({"results": results, **counts})


@router.post("/v1/documents/uploads", summary="Get an upload URL",
             description="A presigned S3 PUT URL for `projects/<project_id>/<path>` on AWS; locally a URL on the "
                         "local server (a signed token, HMAC-SHA256) that writes the body into the drop folder. Either "
                         "way the URL alone authorizes one upload of that path until `expires_at` (1 hour): PUT the "
                         "bytes with the returned `headers` (never an API key); the upload starts ingestion "
                         "(`chunk_strategy` defaults to `page`). A document whose URL expires unused ends `failed`. "
                         f"{_PATHS}",
             responses=documented({201: (UploadUrl, "where and how to PUT the file")}, *AUTHENTICATED, *WITH_BODY))
def upload(body: Annotated[UploadRequest, Body()]) -> Response[Any]:
    principal = require(Scope.WRITE)
    event = router.current_event
    host = event.headers.get("host") or event.raw_event["requestContext"]["domainName"]
    origin = f"{event.headers.get('x-forwarded-proto', 'http')}://{host}"
    presigned = prepare_upload(get_container().ingestion_ports, principal.project_id, body, origin=origin)
    return json_response({"upload_url": presigned.url, "method": presigned.method, "headers": dict(presigned.headers),
                          "key": presigned.key, "expires_at": presigned.expires_at}, 201)


@router.get("/v1/documents", summary="List documents",
            description="Newest first, cursor-paginated (`limit` 1..100, default 20). `path_prefix` matches the "
                        "start of the path; `tags` are globs (comma-separated, ORed); `status` one of "
                        "pending|processing|ready|failed.",
            responses=documented({200: (DocumentPage, "a page of documents")}, *AUTHENTICATED, 422))
def list_(
    path_prefix: Annotated[str | None, Query()] = None,
    tags: Annotated[str | None, Query()] = None,
    status: Annotated[str | None, Query()] = None,
    limit: PageLimit = DEFAULT_LIMIT,
    cursor: PageCursor = None,
) -> Response[Any]:
    principal = require(Scope.READ)
    docs, next_cursor = list_documents(get_container().documents, principal.project_id, path_prefix=path_prefix,
                                       tags=tags, status=status, limit=limit, cursor=cursor)
    return json_response(page(docs, next_cursor))


@router.get("/v1/documents/<document_id>", summary="Get a document",
            responses=documented({200: (Document, "the document")}, *AUTHENTICATED, 404))
def get(document_id: str) -> Response[Any]:
    principal = require(Scope.READ)
    return json_response(get_container().documents.get(principal.project_id, document_id))


@router.get("/v1/documents/<document_id>/status", summary="Ingestion status",
            description="`{status, total_pages, total_chunks, indexed_chunks, progress, error}`; `progress` is "
                        "indexed_chunks/total_chunks (1 when ready).",
            responses=documented({200: (DocumentStatusView, "the ingestion status")}, *AUTHENTICATED, 404))
def status_(document_id: str) -> Response[Any]:
    principal = require(Scope.READ)
    return json_response(get_container().documents.get(principal.project_id, document_id).status_view())


@router.delete("/v1/documents/<document_id>", summary="Delete a document", description="With its chunks; 204.",
               responses=documented({204: (None, "deleted")}, *AUTHENTICATED, 404))
def delete(document_id: str) -> Response[Any]:
    principal = require(Scope.WRITE)
    c = get_container()
    delete_document(c.ingestion_ports, principal.project_id, document_id, inbox=c.upload_inbox)
    return no_content()


@router.post("/v1/documents/<document_id>/ingest", summary="Re-ingest a document",
             description="New chunk settings (omitted fields keep their values) and a new run; the old chunks stay "
                         f"searchable until the new set is complete. 202 (200 with `wait`). {_WAIT}",
             responses=documented({202: (Document, "a new run started"), 200: (Document, "with `wait`: the settled document")},
                                  *AUTHENTICATED, *WITH_BODY, 404))
def ingest(document_id: str, body: Annotated[ReingestRequest | None, Body()] = None) -> Response[Any]:
    principal = require(Scope.WRITE)
    c = get_container()
    body = body or ReingestRequest()
    doc = reingest(c.ingestion_ports, c.pipeline_starter, principal.project_id, document_id, body)
    if body.wait:
        doc = wait_until_settled(lambda: c.documents.get(principal.project_id, doc.id))
        return json_response(doc, 200)
    return json_response(doc, 202)
