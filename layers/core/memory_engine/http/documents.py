"""HTTP routes for documents (SPEC "HTTP API" table). Another project's document is 404."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from memory_engine.bootstrap import get_container
from memory_engine.domain.auth import Scope
from memory_engine.domain.documents import DocumentStatus
from memory_engine.errors import InvalidInput
from memory_engine.http.auth import require
from memory_engine.http.responses import json_response, page
from memory_engine.services.ingestion.documents import (
    WAIT_LIMIT_SECONDS,
    CreateTextDocument,
    ReingestRequest,
    UploadRequest,
    create_text_document,
    delete_document,
    prepare_upload,
    reingest,
    wait_until_settled,
)

router = Router()

_WAIT = (f"`wait: true` blocks until the document leaves `processing`, at most {WAIT_LIMIT_SECONDS:.0f} s "
         "(then answers with the current state; poll `/status`).")


_PATHS = ("`path`: non-empty segments, none `.`, `..` or hidden (leading `.`), each at most 255 bytes of UTF-8, "
          "no control characters (422); `metadata` nested at most 32 levels (422). See docs/limits.md.")


@router.post("/v1/documents", summary="Create a document from text",
             description="Ingestion runs in the background; 201 when a run started, 200 when the same text is "
                         f"already at that path (no-op). `chunk_strategy` defaults to `whole`. {_WAIT} {_PATHS}")
def create(body: Annotated[CreateTextDocument, Body()]) -> Response[Any]:
    principal = require(router, Scope.WRITE)
    c = get_container()
    doc, started = create_text_document(c.ingestion_ports, c.pipeline_starter, principal.project_id, body)
    if body.wait:
        doc = wait_until_settled(lambda: c.documents.get(principal.project_id, doc.id))
    return json_response(doc, 201 if started else 200)


@router.post("/v1/documents/uploads", summary="Get an upload URL",
             description="A presigned S3 PUT URL for `projects/<project_id>/<path>` on AWS; locally a URL on the "
                         "local server (a signed token, HMAC-SHA256) that writes the body into the drop folder. Either "
                         "way the URL alone authorizes one upload of that path until `expires_at` (1 hour): PUT the "
                         "bytes with the returned `headers` (never an API key); the upload starts ingestion "
                         "(`chunk_strategy` defaults to `page`). A document whose URL expires unused ends `failed`. "
                         f"{_PATHS}")
def upload(body: Annotated[UploadRequest, Body()]) -> Response[Any]:
    principal = require(router, Scope.WRITE)
    presigned = prepare_upload(get_container().ingestion_ports, principal.project_id, body)
    headers = dict(presigned.headers)
    url = presigned.url
    if url.startswith("/"):  # the local store: a route on this server; its signed token is the credential
        event = router.current_event
        host = event.headers.get("host") or event.raw_event["requestContext"]["domainName"]
        scheme = event.headers.get("x-forwarded-proto", "http")
        url = f"{scheme}://{host}{url}"
    return json_response({"upload_url": url, "method": presigned.method, "headers": headers, "key": presigned.key,
                          "expires_at": presigned.expires_at}, 201)


@router.get("/v1/documents", summary="List documents",
            description="Newest first, cursor-paginated (`limit` 1..100, default 20). `path_prefix` matches the "
                        "start of the path; `tags` are globs (comma-separated, ORed); `status` one of "
                        "pending|processing|ready|failed.")
def list_(
    path_prefix: Annotated[str | None, Query()] = None,
    tags: Annotated[str | None, Query()] = None,
    status: Annotated[str | None, Query()] = None,
    limit: Annotated[int, Query()] = 20,
    cursor: Annotated[str | None, Query()] = None,
) -> Response[Any]:
    principal = require(router, Scope.READ)
    if not 1 <= limit <= 100:
        raise InvalidInput("limit must be between 1 and 100", details=[{"field": "limit"}])
    try:
        wanted = DocumentStatus(status) if status else None
    except ValueError as exc:
        raise InvalidInput("status must be one of pending, processing, ready, failed",
                           details=[{"field": "status"}]) from exc
    globs = [t.strip() for t in (tags or "").split(",") if t.strip()]
    docs, next_cursor = get_container().documents.list_documents(
        principal.project_id, path_prefix=path_prefix, tags=globs, status=wanted, limit=limit, cursor=cursor
    )
    return json_response(page(docs, next_cursor))


@router.get("/v1/documents/<document_id>", summary="Get a document")
def get(document_id: str) -> Response[Any]:
    principal = require(router, Scope.READ)
    return json_response(get_container().documents.get(principal.project_id, document_id))


@router.get("/v1/documents/<document_id>/status", summary="Ingestion status",
            description="`{status, total_pages, total_chunks, indexed_chunks, progress, error}`; `progress` is "
                        "indexed_chunks/total_chunks (1 when ready).")
def status_(document_id: str) -> Response[Any]:
    principal = require(router, Scope.READ)
    return json_response(get_container().documents.get(principal.project_id, document_id).status_view())


@router.delete("/v1/documents/<document_id>", summary="Delete a document", description="With its chunks; 204.")
def delete(document_id: str) -> Response[Any]:
    principal = require(router, Scope.WRITE)
    delete_document(get_container().ingestion_ports, principal.project_id, document_id)
    return Response(status_code=204, content_type="application/json", body="")


@router.post("/v1/documents/<document_id>/ingest", summary="Re-ingest a document",
             description="New chunk settings (omitted fields keep their values) and a new run; the old chunks stay "
                         f"searchable until the new set is complete. 202 (200 with `wait`). {_WAIT}")
def ingest(document_id: str, body: Annotated[ReingestRequest | None, Body()] = None) -> Response[Any]:
    principal = require(router, Scope.WRITE)
    c = get_container()
    body = body or ReingestRequest()
    doc = reingest(c.ingestion_ports, c.pipeline_starter, principal.project_id, document_id, body)
    if body.wait:
        doc = wait_until_settled(lambda: c.documents.get(principal.project_id, doc.id))
        return json_response(doc, 200)
    return json_response(doc, 202)
