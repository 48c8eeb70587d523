"""POST /v1/events (local only): the EventBridge stand-in for ``turn.completed`` events.

The body is the event as a bus rule target would receive it. Envelope fields the bus assigns
(``id``, ``time``, ``account``, ``region``, ``version``, ``resources``) are filled in when absent,
as ``PutEvents`` would; pass ``id`` yourself to replay a delivery. The event is validated here
(422 with the fields), the key must have the ``write`` scope and its project must be the event's
``detail.project_id`` (404 otherwise, like any other project's resource), and the memory must
exist in it (404). Then it is queued for the same consumer the SQS queue feeds on AWS: 202 with
the event id. ``?wait=true`` blocks until the consumer finished it and answers 200 with the run.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from pydantic import ValidationError

from memory_engine.bootstrap import get_container
from memory_engine.domain.auth import Scope
from memory_engine.domain.events import TurnCompletedEvent
from memory_engine.errors import InvalidInput, NotFound, invalid_input
from memory_engine.http.auth import require
from memory_engine.http.responses import json_response
from memory_engine.http.schemas import AUTHENTICATED, WITH_BODY, EventAccepted, documented

router = Router()

#: ``?wait=true`` gives up after this many seconds and answers with the current status.
WAIT_SECONDS = 120.0


def with_bus_fields(event: dict[str, Any], *, region: str | None = None) -> dict[str, Any]:
    """The event with the fields EventBridge assigns on delivery filled in when absent."""
    filled = dict(event)
    filled.setdefault("version", "0")
    filled.setdefault("id", str(uuid.uuid4()))
    filled.setdefault("time", datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    filled.setdefault("account", "000000000000")
    filled.setdefault("region", region or "local")
    filled.setdefault("resources", [])
    return filled


def parse_event(body: Any, *, region: str | None = None) -> TurnCompletedEvent:
    """Raises InvalidInput (422) with one detail per invalid field."""
    if not isinstance(body, dict):
        raise InvalidInput("the body must be an EventBridge event object")
    try:
        return TurnCompletedEvent.model_validate(with_bus_fields(body, region=region))
    except ValidationError as error:
        raise invalid_input(error, "invalid turn.completed event") from error


def _run_view(event: TurnCompletedEvent) -> dict[str, Any] | None:
    run = get_container().extraction_runs.get_by_event(event.detail.project_id, event.id)
    if run is None:
        return None
    return {"id": run.id, "status": run.status, "attempts": run.attempts, "episode_id": run.episode_id,
            "summary": run.summary, "error": run.error}


@router.post(
    "/v1/events",
    summary="Send a turn.completed event (local only: the EventBridge stand-in)",
    description=(
        "The body is an EventBridge event with detail-type `turn.completed` (schema: docs/schemas/"
        "turn.completed.schema.json). `id`, `time`, `account`, `region`, `version`, `resources` are filled in "
        "when absent. 202 with the event id; `?wait=true` answers 200 with the extraction run once it finished."
    ),
    responses=documented({202: (EventAccepted, "queued (or, with `wait=true`, not finished in time)"),
                          200: (EventAccepted, "with `wait=true`: delivered, with the extraction run")},
                         *AUTHENTICATED, *WITH_BODY, 404),
    tags=["events"],
)
def post_event(
    body: Annotated[dict[str, Any], Body()],
    wait: Annotated[bool, Query()] = False,
) -> Response[Any]:
    principal = require(Scope.WRITE)
    container = get_container()
    # ``body`` documents the route in OpenAPI; the raw JSON is validated here so anything but one
    # event object (a list, a string) is a 422 with the event's field names
    event = parse_event(router.current_event.json_body, region=container.settings.aws_region)
    if event.detail.project_id != principal.project_id:
        raise NotFound(f"project {event.detail.project_id} not found")
    container.memories.get(principal.project_id, event.detail.memory_id)  # NotFound (404) when absent
    message_id = container.event_queue.submit(event.to_eventbridge())
    if not wait:
        return json_response({"id": event.id, "message_id": message_id, "status": "queued"}, 202)
    delivery = container.event_queue.wait(message_id, timeout=WAIT_SECONDS)
    status = 200 if delivery in ("succeeded", "dead_lettered") else 202
    return json_response({"id": event.id, "message_id": message_id, "status": delivery, "run": _run_view(event)}, status)
