"""POST /v1/knowledge/search: the one retrieval route (served by the search Lambda)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body

from memory_engine.bootstrap import get_container
from memory_engine.domain.auth import Scope
from memory_engine.domain.search_models import SearchRequest
from memory_engine.http.auth import require
from memory_engine.http.responses import json_response
from memory_engine.http.schemas import AUTHENTICATED, WITH_BODY, SearchResponseBody, documented
from memory_engine.services.search_knowledge import search_knowledge

router = Router()


@router.post("/v1/knowledge/search", summary="Search memories and documents (hybrid retrieval)",
             description="`include`: `raw` adds each fact's structured form, `episodes` the stored turns, `synthesis` "
                         "a short prose summary of the returned results by the chat model (`synthesis: {text, model, "
                         "latency_ms}`; the only model call on the read path; absent and listed in `degraded` when no "
                         "model is configured or the call fails; `results` are always returned).",
             responses=documented({200: (SearchResponseBody, "ranked results")}, *AUTHENTICATED, *WITH_BODY))
def search(body: Annotated[SearchRequest, Body()]) -> Response[Any]:
    principal = require(Scope.READ)
    container = get_container()
    # the chat model (a Bedrock client on AWS) is built only when a search asks for it
    chat = container.chat_model if "synthesis" in body.include else None
    response = search_knowledge(
        container.knowledge_index, container.embedder, project_id=principal.project_id, request=body, chat=chat,
    )
    return json_response(response.to_body())
