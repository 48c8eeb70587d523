"""HTTP routes for memory entries: the write funnel (``POST /v1/memory-entries``) and entry CRUD.

The REST path is the *manual* write path: it never merges or supersedes (only writes carrying an
agent context, i.e. extraction, do), whatever ``source_type`` says.
"""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from pydantic import Field

from memory_engine.bootstrap import get_container
from memory_engine.domain.auth import Scope
from memory_engine.domain.cursor import DEFAULT_LIMIT, MAX_LIMIT
from memory_engine.domain.entries import MAX_CONTENT_CHARS, MemoryEntry, NewEntry
from memory_engine.domain.write_decision import DEFAULT_DUPLICATE_THRESHOLD
from memory_engine.http.auth import require
from memory_engine.http.responses import json_response, no_content, page
from memory_engine.http.schemas import AUTHENTICATED, WITH_BODY, EntryWriteResult, MemoryEntryPage, documented
from memory_engine.services.memories import EntryReplacement, list_entries, replace_entry
from memory_engine.services.write_entry import write_entry

router = Router()

_LIMITS = (
    f"Limits: `content` is one atomic fact, non-blank (422), at most {MAX_CONTENT_CHARS:,} characters (413 beyond); "
    "up to 50 `tags` of 1..128 characters (422); `metadata` a JSON object or null, at most 16 KB (413), nested at most 32 levels "
    "(422); up to 20 `entities` `{name, type}`; `confidence` 0..1 (422); `valid_to` not before `valid_from` (422); "
    "timestamps within years 1..9999 in UTC; no NUL or unpaired surrogate in any string (422). See docs/limits.md."
)


class EntryCreateRequest(NewEntry):
    """Body of ``POST /v1/memory-entries``: a NewEntry plus the per-request skip threshold."""

    duplicate_threshold: float = Field(DEFAULT_DUPLICATE_THRESHOLD, ge=0.0, le=1.0)


@router.post(
    "/v1/memory-entries",
    summary="Write a memory entry (the write funnel)",
    description=(
        "Embeds the fact (best-effort), compares it with the most similar live entries of the memory and answers "
        "`action`: `skipped` (200, the existing entry; similarity >= `duplicate_threshold`, default 0.95) or "
        "`created` (201). This manual path never merges or supersedes. Unknown memory or another project's: 404. "
        + _LIMITS
    ),
    responses=documented({201: (EntryWriteResult, "created"), 200: (EntryWriteResult, "not created: `action` says why")},
                         *AUTHENTICATED, *WITH_BODY, 404),
)
def create(body: Annotated[EntryCreateRequest, Body()]) -> Response[Any]:
    principal = require(router, Scope.WRITE)
    container = get_container()
    entry = NewEntry.model_validate(body.model_dump(exclude={"duplicate_threshold"}))
    result = write_entry(
        container.entries, container.embedder, container.chat_model, project_id=principal.project_id, entry=entry,
        duplicate_threshold=body.duplicate_threshold, agent=None,
    )
    out: dict[str, Any] = {**result.entry.model_dump(mode="json"), "action": result.action}
    if result.superseded_entry_id is not None:
        out["superseded_entry_id"] = result.superseded_entry_id
    return json_response(out, 201 if result.action == "created" else 200)


@router.get(
    "/v1/memory-entries",
    summary="List memory entries",
    description=(
        "Newest first, cursor-paginated (`limit` 1..100, default 20; pass back `next_cursor`). Invalidated "
        "(superseded) entries are hidden unless `include_invalidated=true`. Without `memory_id`, lists the "
        "project's entries across memories."
    ),
    responses=documented({200: (MemoryEntryPage, "a page of entries")}, *AUTHENTICATED, 404, 422),
)
def list_(
    memory_id: Annotated[str | None, Query()] = None,
    include_invalidated: Annotated[bool, Query()] = False,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query()] = None,
) -> Response[Any]:
    principal = require(router, Scope.READ)
    items, next_cursor = list_entries(
        get_container().entries, principal.project_id, memory_id=memory_id, include_invalidated=include_invalidated,
        limit=limit, cursor=cursor,
    )
    return json_response(page(items, next_cursor))


@router.get(
    "/v1/memory-entries/<entry_id>",
    summary="Get a memory entry",
    description="Invalidated entries are returned too (audit: `invalidated_at`, `superseded_by_entry_id`, "
    "`invalidation_reason`).",
    responses=documented({200: (MemoryEntry, "the entry")}, *AUTHENTICATED, 404),
)
def get(entry_id: str) -> Response[Any]:
    principal = require(router, Scope.READ)
    return json_response(get_container().entries.get(principal.project_id, entry_id))


@router.put(
    "/v1/memory-entries/<entry_id>",
    summary="Replace fields of a memory entry",
    description=(
        "The fields sent replace the stored ones outright (no merge): `tags: null` or `[]` clears the tags, "
        "`metadata: null` clears the metadata; fields not sent are kept. Changing `content`, `entities`, `subject` "
        "or `object` re-embeds the entry. Provenance cannot be changed. An invalidated entry is history and "
        f"answers 409 Conflict. {_LIMITS}"
    ),
    responses=documented({200: (MemoryEntry, "the updated entry")}, *AUTHENTICATED, *WITH_BODY, 404, 409),
)
def replace(entry_id: str, body: Annotated[EntryReplacement, Body()]) -> Response[Any]:
    principal = require(router, Scope.WRITE)
    container = get_container()
    return json_response(replace_entry(container.entries, container.embedder, principal.project_id, entry_id, body))


@router.delete("/v1/memory-entries/<entry_id>", summary="Delete a memory entry", description="Removes it outright; 204.",
               responses=documented({204: (None, "deleted")}, *AUTHENTICATED, 404))
def delete(entry_id: str) -> Response[Any]:
    principal = require(router, Scope.WRITE)
    get_container().entries.delete(principal.project_id, entry_id)
    return no_content()
