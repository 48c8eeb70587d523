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
             responses=documented({200: (SearchResponseBody, "ranked results")}, *AUTHENTICATED, *WITH_BODY))
def search(body: Annotated[SearchRequest, Body()]) -> Response[Any]:
    principal = require(router, Scope.READ)
    container = get_container()
    response = search_knowledge(
        container.knowledge_index, container.embedder, project_id=principal.project_id, request=body
    )
    return json_response(response.to_body())
