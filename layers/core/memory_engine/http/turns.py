"""HTTP routes for a memory's conversation turns: ``/v1/memories/{memory_id}/turns``.

The synchronous, over-HTTP way to record what was said (AgentCore's ``CreateEvent``): turns are
stored as the memory's episodes, the rows a ``turn.completed`` event writes, idempotent by
``turn_id``; ``extract: true`` also queues them for fact extraction. A normal API route: it is
deployed on AWS as locally. Another project's memory answers 404.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from memory_engine.bootstrap import get_container
from memory_engine.domain.auth import Scope
from memory_engine.domain.cursor import DEFAULT_LIMIT
from memory_engine.domain.events import MAX_ID_CHARS
from memory_engine.domain.turns import (
    MAX_TURN_BYTES,
    MAX_TURN_METADATA_BYTES,
    MAX_TURNS_PER_REQUEST,
    TurnPage,
    TurnsRecorded,
    TurnsRequest,
)
from memory_engine.http.auth import require
from memory_engine.http.responses import PageCursor, PageLimit, json_response, no_content
from memory_engine.http.schemas import AUTHENTICATED, WITH_BODY, documented
from memory_engine.ports.chat import NoChatModel
from memory_engine.services.turns import TurnPorts, delete_turns, list_turns, record_turns

router = Router()

ConversationId = Annotated[str, Query(min_length=1, max_length=MAX_ID_CHARS)]

_LIMITS = (
    f"Limits: 1..{MAX_TURNS_PER_REQUEST} turns per request; `content` non-blank, at most {MAX_TURN_BYTES:,} bytes of "
    f"UTF-8 (413 beyond); `metadata` a JSON object up to {MAX_TURN_METADATA_BYTES // 1024} KB (413) nested at most 32 "
    f"levels (422); `conversation_id` and `turn_id` 1..{MAX_ID_CHARS} characters; `role` one of user, assistant, "
    "system, tool; no NUL or unpaired surrogate in any string (422)."
)


def _ports() -> TurnPorts:
    container = get_container()
    configured = not isinstance(container.chat_model, NoChatModel)
    return TurnPorts(memories=container.memories, episodes=container.episodes, embedder=container.embedder,
                     queue=(lambda: container.event_queue) if configured else None)


@router.post(
    "/v1/memories/<memory_id>/turns",
    summary="Record conversation turns",
    description=(
        "Stores each turn as one of the memory's episodes (the rows a `turn.completed` event writes), in the order "
        "sent, embedded for `include: [\"episodes\"]` search. Idempotent by `turn_id` within the memory and "
        "conversation: a turn sent again keeps the stored one (`created: false`); without `turn_id` the server makes "
        "one up (returned). `occurred_at` defaults to the time of the request; a conversation's turns are ordered by "
        "`occurred_at`, then by the order they were sent. `extract: true` with a chat model configured also queues "
        "each new user/assistant turn for fact extraction, exactly as a `turn.completed` event would "
        "(`extraction: \"queued\"`, runs in `GET /v1/extraction-runs`); without a chat model `extraction` is "
        f"`no_chat_model` and the turns are stored all the same. 201. {_LIMITS}"
    ),
    responses=documented({201: (TurnsRecorded, "the stored turns, in the order sent")}, *AUTHENTICATED, *WITH_BODY,
                         404),
    tags=["turns"],
)
def record(memory_id: str, body: Annotated[TurnsRequest, Body()]) -> Response[Any]:
    principal = require(Scope.WRITE)
    return json_response(record_turns(_ports(), principal.project_id, memory_id, body), 201)


@router.get(
    "/v1/memories/<memory_id>/turns",
    summary="List a conversation's turns",
    description=(
        "The conversation's turns in order (`occurred_at`, then the order sent), oldest first; `order=desc` pages "
        "from the newest. Cursor-paginated (`limit` 1..100, default 20; pass back `next_cursor`). Episodes written by "
        "`turn.completed` events are listed too: one with several messages has `role` null and its transcript as "
        "`content`. Unknown memory or another project's: 404."
    ),
    responses=documented({200: (TurnPage, "a page of turns")}, *AUTHENTICATED, 404, 422),
    tags=["turns"],
)
def list_(
    memory_id: str,
    conversation_id: ConversationId,
    order: Annotated[Literal["asc", "desc"], Query()] = "asc",
    limit: PageLimit = DEFAULT_LIMIT,
    cursor: PageCursor = None,
) -> Response[Any]:
    principal = require(Scope.READ)
    container = get_container()
    return json_response(list_turns(container.memories, container.episodes, principal.project_id, memory_id,
                                    conversation_id, limit=limit, cursor=cursor, newest_first=order == "desc"))


@router.delete(
    "/v1/memories/<memory_id>/turns/<turn_id>",
    summary="Delete a turn",
    description=(
        "Deletes the turn with this `turn_id` (in `conversation_id` when given, else in every conversation of the "
        "memory); 204, or 404 when no turn matches. Facts already extracted from it stay: use `POST /v1/forget` "
        "with the conversation to remove those."
    ),
    responses=documented({204: (None, "deleted")}, *AUTHENTICATED, 404, 422),
    tags=["turns"],
)
def delete_one(memory_id: str, turn_id: str, conversation_id: Annotated[str | None, Query(min_length=1,
                                                                         max_length=MAX_ID_CHARS)] = None) -> Response[Any]:
    principal = require(Scope.WRITE)
    container = get_container()
    delete_turns(container.memories, container.episodes, container.embedder, principal.project_id, memory_id,
                 conversation_id=conversation_id, turn_id=turn_id)
    return no_content()


@router.delete(
    "/v1/memories/<memory_id>/turns",
    summary="Delete a conversation's turns",
    description=(
        "Deletes every turn of `conversation_id` in the memory; 204 (also when it had none). Facts already extracted "
        "stay: `POST /v1/forget` with the conversation removes those."
    ),
    responses=documented({204: (None, "deleted")}, *AUTHENTICATED, 404, 422),
    tags=["turns"],
)
def delete_conversation(memory_id: str, conversation_id: ConversationId) -> Response[Any]:
    principal = require(Scope.WRITE)
    container = get_container()
    delete_turns(container.memories, container.episodes, container.embedder, principal.project_id, memory_id,
                 conversation_id=conversation_id)
    return no_content()
