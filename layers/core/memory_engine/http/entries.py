"""HTTP routes for memory entries: the write funnel (``POST /v1/memory-entries``) and entry CRUD.

``source_type: "agent"`` is the agent write path: the write carries an agent context, so with a chat
model configured a similar live fact is merged or superseded as extraction's are (SPEC "Write funnel").
Every other ``source_type`` is a manual write and never merges.
"""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from memory_engine.bootstrap import get_container
from memory_engine.domain.auth import Scope
from memory_engine.domain.cursor import DEFAULT_LIMIT, page
from memory_engine.domain.entries import MAX_CONTENT_CHARS, EntryWriteResult, MemoryEntry
from memory_engine.domain.requests import EntryCreateRequest
from memory_engine.http.auth import require
from memory_engine.http.responses import PageCursor, PageLimit, json_response, no_content
from memory_engine.http.schemas import AUTHENTICATED, WITH_BODY, MemoryEntryPage, documented
from memory_engine.services.memories import EntryReplacement, delete_entry, list_entries, replace_entry
from memory_engine.services.write_entry import write_entry

router = Router()

_LIMITS = (
    f"Limits: `content` is one atomic fact, non-blank (422), at most {MAX_CONTENT_CHARS:,} characters (413 beyond); "
    "up to 50 `tags` of 1..128 characters (422); `metadata` a JSON object or null, at most 16 KB (413), nested at most 32 levels "
    "(422); up to 20 `entities` `{name, type}`; `confidence` 0..1 (422); `valid_to` not before `valid_from` (422); "
    "timestamps within years 1..9999 in UTC; no NUL or unpaired surrogate in any string (422). See docs/limits.md."
)


@router.post(
    "/v1/memory-entries",
    summary="Write a memory entry (the write funnel)",
    description=(
        "Embeds the fact (best-effort), compares it with the most similar live entries of the memory and answers "
        "`action`: `skipped` (200, the existing entry; similarity >= `duplicate_threshold`, default 0.95) or "
        "`created` (201). A conversation's turn is compared on its own text too, not only with the turn before it "
        "as context, and a text longer than the model reads (1,000 characters) is skipped only as an exact repeat. "
        "A manual write (any `source_type` but `agent`) never merges or supersedes. "
        "`source_type: \"agent\"` (optionally with `agent: {model?, generation_id?}`) is the agent write path: with a "
        "chat model configured, a live fact with similarity >= 0.75 is merged into one sentence (`updated`, 200) or, "
        "when the model judges a contradiction, invalidated and replaced (`superseded`, 200, with "
        "`superseded_entry_id`); provenance of a merged entry is kept. With no chat model configured, or when the model "
        "fails, the agent write is created as a manual one and `degraded` says why. Unknown memory or another "
        "project's: 404. " + _LIMITS
    ),
    responses=documented({201: (EntryWriteResult, "created"), 200: (EntryWriteResult, "not created: `action` says why")},
                         *AUTHENTICATED, *WITH_BODY, 404),
)
def create(body: Annotated[EntryCreateRequest, Body()]) -> Response[Any]:
    principal = require(Scope.WRITE)
    container = get_container()
    result = write_entry(
        container.entries, container.embedder, container.chat_model, project_id=principal.project_id,
        entry=body.new_entry(), duplicate_threshold=body.duplicate_threshold, agent=body.agent_context(),
    )
    return json_response(result.reply().to_body(), 201 if result.action == "created" else 200)


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
    limit: PageLimit = DEFAULT_LIMIT,
    cursor: PageCursor = None,
) -> Response[Any]:
    principal = require(Scope.READ)
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
    principal = require(Scope.READ)
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
    principal = require(Scope.WRITE)
    container = get_container()
    return json_response(replace_entry(container.entries, container.embedder, principal.project_id, entry_id, body))


@router.delete("/v1/memory-entries/<entry_id>", summary="Delete a memory entry",
               description="Removes it outright; a conversation turn's words also leave the `context` of the turns"
               " around it (and the vector of the turn after it, which read them, is embedded again); 204.",
               responses=documented({204: (None, "deleted")}, *AUTHENTICATED, 404))
def delete(entry_id: str) -> Response[Any]:
    principal = require(Scope.WRITE)
    c = get_container()
    delete_entry(c.entries, c.embedder, principal.project_id, entry_id)
    return no_content()
