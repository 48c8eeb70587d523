"""HTTP routes for memories: ``POST/GET /v1/memories``, ``GET/PUT/DELETE /v1/memories/{id}``.

Another project's memory answers 404, never 403: a key cannot learn that a foreign id exists.
"""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from memory_engine.bootstrap import get_container
from memory_engine.domain.auth import Scope
from memory_engine.domain.cursor import DEFAULT_LIMIT, page
from memory_engine.domain.entries import Memory
from memory_engine.domain.requests import MemoryFields
from memory_engine.http.auth import require
from memory_engine.http.responses import PageCursor, PageLimit, json_response, no_content
from memory_engine.http.schemas import AUTHENTICATED, WITH_BODY, MemoryPage, documented
from memory_engine.services.forget import ForgetResult, purge_memory
from memory_engine.services.memories import create_memory, list_memories, update_memory

router = Router()

_LIMITS = (
    "Limits: name 1..200 characters (required on create), description up to 2,000 characters, up to 50 tags of "
    "1..128 characters each (422 beyond), metadata a JSON object up to 16 KB (413 beyond) nested at most 32 levels "
    "(422). No NUL or unpaired surrogate in any string (422); see docs/limits.md."
)


@router.post("/v1/memories", summary="Create a memory", description=f"Creates a memory container; 201. {_LIMITS}",
             responses=documented({201: (Memory, "the memory")}, *AUTHENTICATED, *WITH_BODY))
def create(body: Annotated[MemoryFields, Body()]) -> Response[Any]:
    principal = require(Scope.WRITE)
    memory = create_memory(get_container().memories, principal.project_id, body)
    return json_response(memory, 201)


@router.get(
    "/v1/memories",
    summary="List memories",
    description=(
        "Newest first, cursor-paginated (`limit` 1..100, default 20; pass back `next_cursor`). `tags` filters with "
        "glob patterns (`*` any run of characters, `?` one character); several patterns (comma-separated or the "
        "parameter repeated) are ORed: a memory matches when any of its tags matches any pattern."
    ),
    responses=documented({200: (MemoryPage, "a page of memories")}, *AUTHENTICATED, 422),
)
def list_(
    tags: Annotated[list[str] | None, Query()] = None,
    limit: PageLimit = DEFAULT_LIMIT,
    cursor: PageCursor = None,
) -> Response[Any]:
    principal = require(Scope.READ)
    items, next_cursor = list_memories(get_container().memories, principal.project_id, tags=tags, limit=limit, cursor=cursor)
    return json_response(page(items, next_cursor))


@router.get("/v1/memories/<memory_id>", summary="Get a memory", description="404 when not in the caller's project.",
            responses=documented({200: (Memory, "the memory")}, *AUTHENTICATED, 404))
def get(memory_id: str) -> Response[Any]:
    principal = require(Scope.READ)
    return json_response(get_container().memories.get(principal.project_id, memory_id))


@router.put(
    "/v1/memories/<memory_id>",
    summary="Update a memory",
    description=(
        "Replaces the fields sent; fields not sent are kept. `null` clears `description` and `metadata`; `null` or "
        f"`[]` clears `tags`; `name` cannot be cleared. {_LIMITS}"
    ),
    responses=documented({200: (Memory, "the updated memory")}, *AUTHENTICATED, *WITH_BODY, 404),
)
def update(memory_id: str, body: Annotated[MemoryFields, Body()]) -> Response[Any]:
    principal = require(Scope.WRITE)
    return json_response(update_memory(get_container().memories, principal.project_id, memory_id, body))


@router.delete(
    "/v1/memories/<memory_id>", summary="Delete a memory",
    description=("Deletes the memory and all its entries and episodes; 204. `purge=true` also deletes its extraction "
                 "runs and the entities no entry links any more, answers 200 with the counts and publishes "
                 "`memory.forgotten` (see `POST /v1/forget`). A repeat is 404: the memory is gone."),
    responses=documented({204: (None, "deleted"), 200: (ForgetResult, "purged: what was deleted")}, *AUTHENTICATED,
                         404, 422),
)
def delete(memory_id: str, purge: Annotated[bool, Query()] = False) -> Response[Any]:
    principal = require(Scope.WRITE)
    c = get_container()
    if purge:
        return json_response(purge_memory(c.lifecycle, c.event_publisher, principal.project_id, memory_id))
    c.memories.delete(principal.project_id, memory_id)
    return no_content()
