"""HTTP routes of the memory lifecycle: forgetting, export and import of a memory."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse

from memory_engine.bootstrap import get_container
from memory_engine.domain.auth import Scope
from memory_engine.domain.requests import ForgetRequest
from memory_engine.errors import PayloadTooLarge
from memory_engine.http.auth import require
from memory_engine.http.responses import json_response
from memory_engine.http.schemas import AUTHENTICATED, WITH_BODY, ImportResult, documented
from memory_engine.services.export_import import export_memory
from memory_engine.services.forget import ForgetResult, forget
from memory_engine.services.memory_import import IMPORT_TRANSACTION_ROWS, import_memory

router = Router()

#: An HTTP export is one response (API Gateway and Lambda buffer it; 6 MB is Lambda's limit):
#: beyond this the route answers 413 and `memory-engine export` (which streams) is the way.
MAX_HTTP_EXPORT_BYTES = 5 * 1024 * 1024
JSONL = "application/x-ndjson"


@router.post(
    "/v1/forget", summary="Forget what came from a conversation, or an entity of a memory",
    description=(
        "`{conversation_id, memory_id?}`: hard-deletes the entries written from that conversation (live and history), "
        "its episodes and extraction runs (in one memory with `memory_id`, else in the whole project). `{memory_id, "
        "entity}`: the entries of the memory linked to the entity, the episodes of the memory that name it (word "
        "boundaries, any case) and their extraction runs. Either way, entities no entry links any more are deleted "
        "too. Answers the counts and publishes `memory.forgotten` on the bus. A repeat deletes nothing more (zeros, "
        "no event). Unknown `memory_id`: 404."
    ),
    responses=documented({200: (ForgetResult, "what was deleted")}, *AUTHENTICATED, *WITH_BODY, 404),
)
def forget_route(body: Annotated[ForgetRequest, Body()]) -> Response[Any]:
    principal = require(Scope.WRITE)
    c = get_container()
    return json_response(forget(c.lifecycle, c.event_publisher, principal.project_id, body, entries=c.entries,
                                episodes=c.episodes, embedder=c.embedder))


_EXPORT_RESPONSES: dict[int, OpenAPIResponse] = {
    **documented({}, *AUTHENTICATED, 404, 413, 422),
    200: {"description": "JSONL: a `header`, the `memory`, then `entity`, `entry` and `episode` lines",
          "content": {JSONL: {"schema": {"type": "string"}}}},
}


@router.get(
    "/v1/memories/<memory_id>/export", summary="Export a memory as JSONL",
    description=(
        "One JSON object per line: `header` (format, version, `embedding_model`, `dimensions`, `vectors`), `memory`, "
        "`entity` (those its entries link), `entry` (live and history, oldest first, with provenance and "
        "`superseded_by_entry_id`), `episode`. `vectors=false` leaves the vectors out (an import then re-embeds). "
        "Over HTTP the export is one response of at most 5 MB (413 beyond: use `memory-engine export`, which streams)."
    ),
    responses=_EXPORT_RESPONSES,
)
def export_route(memory_id: str, vectors: Annotated[bool, Query()] = True) -> Response[Any]:
    principal = require(Scope.READ)
    c = get_container()
    parts, size = [], 0
    for line in export_memory(c.lifecycle, c.embedder, principal.project_id, memory_id, vectors=vectors):
        size += len(line.encode())
        if size > MAX_HTTP_EXPORT_BYTES:
            raise PayloadTooLarge(
                f"the export is over {MAX_HTTP_EXPORT_BYTES // (1024 * 1024)} MB; use `memory-engine export` "
                "(streams to a file) or `vectors=false`", details=[{"limit": MAX_HTTP_EXPORT_BYTES}])
        parts.append(line)
    return Response(status_code=200, content_type=JSONL, body="".join(parts))


@router.post(
    "/v1/memories/import", summary="Import a memory from a JSONL export",
    description=(
        "The body is an export (`Content-Type: application/x-ndjson`). Creates a new memory in the caller's project "
        "with new ids; the exported ids are kept in `metadata.imported_from` of the memory and each entry; history, "
        "timestamps and provenance are kept. Vectors are used only when the export's model id and dimensions are "
        "this deployment's; otherwise, and for rows without one, this deployment's model embeds again (a project "
        f"never mixes two models' vectors). All or nothing: up to {IMPORT_TRANSACTION_ROWS} rows in one transaction; "
        "a larger import marks its memory `metadata.import_status: \"partial\"` until the last line is stored, and "
        "running it again replaces a partial copy. 201 with the counts; a bad line is 422 naming it (and, for a "
        "larger import, the partial memory)."
    ),
    responses=documented({201: (ImportResult, "the new memory and what was imported")}, *AUTHENTICATED, *WITH_BODY),
    openapi_extensions={"requestBody": {"required": True, "content": {JSONL: {"schema": {"type": "string"}}}}},
)
def import_route() -> Response[Any]:
    principal = require(Scope.WRITE)
    # API Gateway base64-encodes a body whose type it does not know as text (x-ndjson may be one)
    body = router.current_event.decoded_body or ""
    c = get_container()
    summary = import_memory(body.splitlines(), project_id=principal.project_id, importer=c.importer,
                            embedder=c.embedder, episodes=c.episodes)
    return json_response(summary.counts(), 201)
