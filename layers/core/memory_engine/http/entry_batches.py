"""HTTP routes for batch writes and deletes of memory entries.

``POST /v1/memory-entries/batch`` runs each item through the write funnel in order (the manual
path, as ``POST /v1/memory-entries``); ``DELETE /v1/memory-entries/batch`` deletes by ids.
"""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body

from memory_engine.bootstrap import get_container
from memory_engine.domain.auth import Scope
from memory_engine.http.auth import require
from memory_engine.http.responses import json_response
from memory_engine.http.schemas import AUTHENTICATED, WITH_BODY, EntryBatchDeleteResult, EntryBatchResult, documented
from memory_engine.services.memories import delete_entries
from memory_engine.services.write_batch import MAX_BATCH_ENTRIES, EntryBatch, EntryIdBatch, write_entries

router = Router()

_BATCH = (
    "`{entries: [<a POST /v1/memory-entries body>, ...] (1..MAX), duplicate_threshold?}`; items may name different "
    "memories of the project. Each item goes through the write funnel in order, so a fact repeated inside the batch "
    "is `skipped` against the earlier one, and sending the same batch again skips every item already stored. "
    "The texts are embedded ahead in a few batched model calls (an item whose embedding failed is stored without a "
    "vector, as a single write would store it). 200 with `results: [{index, action (created|skipped|"
    "rejected), entry | error}]` and the counts, even when some items are rejected (a validation error, an unknown "
    "memory, an item over a limit: `error` says which). This manual path never merges or supersedes."
).replace("MAX", str(MAX_BATCH_ENTRIES))


@router.post("/v1/memory-entries/batch", summary="Write up to 100 memory entries (the write funnel, in order)",
             description=_BATCH,
             responses=documented({200: (EntryBatchResult, "one result per item")}, *AUTHENTICATED, *WITH_BODY))
def write_batch(body: Annotated[EntryBatch, Body()]) -> Response[Any]:
    principal = require(Scope.WRITE)
    c = get_container()
    results = write_entries(c.entries, c.embedder, c.chat_model, project_id=principal.project_id,
                            items=body.entries, duplicate_threshold=body.duplicate_threshold)
    counts = {action: sum(r.action == action for r in results) for action in ("created", "skipped", "rejected")}
    return json_response({"results": results, **counts})


@router.delete("/v1/memory-entries/batch", summary="Delete up to 100 memory entries by id",
               description=f"`{{ids: [...]}}` (1..{MAX_BATCH_ENTRIES}). 200 with `results: [{{index, id, action "
                           "(deleted|not_found)}]` and the counts; an id of another project, or one already deleted, "
                           "is `not_found` (so a retry is safe).",
               responses=documented({200: (EntryBatchDeleteResult, "one result per id")}, *AUTHENTICATED, *WITH_BODY))
def delete_batch(body: Annotated[EntryIdBatch, Body()]) -> Response[Any]:
    principal = require(Scope.WRITE)
    c = get_container()
    results = delete_entries(c.entries, c.embedder, principal.project_id, body.ids)
    deleted = sum(r.action == "deleted" for r in results)
    return json_response({"results": results, "deleted": deleted, "not_found": len(results) - deleted})
