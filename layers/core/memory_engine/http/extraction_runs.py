"""GET /v1/extraction-runs: what fact extraction did with each ``turn.completed`` event (read-only).

Runs are written by the extraction consumer (the EventBridge rule's target on AWS, the event queue
locally); this route only reads them, scoped to the key's project like every other list.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any, Literal

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from memory_engine.bootstrap import get_container
from memory_engine.domain.auth import Scope
from memory_engine.domain.cursor import DEFAULT_LIMIT, page
from memory_engine.http.auth import require
from memory_engine.http.responses import PageCursor, PageLimit, json_response
from memory_engine.http.schemas import AUTHENTICATED, ExtractionRunPage, documented
from memory_engine.services.extraction_runs import list_extraction_runs

router = Router()


@router.get(
    "/v1/extraction-runs",
    summary="List extraction runs",
    description=(
        "One run per `turn.completed` event: its status (`running`, `completed`, `failed`), the summary counts "
        "`{candidates, created, updated, skipped, superseded}`, the error of a failed run and the stored episode. "
        "Newest first, cursor-paginated (`limit` 1..100, default 20; pass back `next_cursor`). Filters: "
        "`memory_id`, `status`, `event_id`."
    ),
    responses=documented({200: (ExtractionRunPage, "a page of runs")}, *AUTHENTICATED, 422),
    tags=["events"],
)
def list_(
    memory_id: Annotated[str | None, Query(max_length=64)] = None,
    status: Annotated[Literal["running", "completed", "failed"] | None, Query()] = None,
    event_id: Annotated[str | None, Query(max_length=200)] = None,
    limit: PageLimit = DEFAULT_LIMIT,
    cursor: PageCursor = None,
) -> Response[Any]:
    principal = require(Scope.READ)
    runs, next_cursor = list_extraction_runs(
        get_container().extraction_runs, principal.project_id, memory_id=memory_id, status=status,
        event_id=event_id, limit=limit, cursor=cursor,
    )
    rows = [{k: v for k, v in asdict(run).items() if k != "project_id"} for run in runs]
    return json_response(page(rows, next_cursor))
