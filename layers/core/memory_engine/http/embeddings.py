"""POST /v1/embeddings: vectors from the deployment's model."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body
from pydantic import BaseModel, Field, model_validator

from memory_engine.bootstrap import get_container
from memory_engine.domain.auth import Scope
from memory_engine.errors import InvalidInput
from memory_engine.http.auth import require
from memory_engine.http.responses import json_response
from memory_engine.http.schemas import AUTHENTICATED, WITH_BODY, EmbeddingsResponse, documented

router = Router()

MAX_INPUTS = 256
MAX_INPUT_CHARS = 32_000


class EmbeddingsRequest(BaseModel):
    input: str | None = Field(None, max_length=MAX_INPUT_CHARS)
    inputs: list[Annotated[str, Field(max_length=MAX_INPUT_CHARS)]] | None = Field(None, max_length=MAX_INPUTS)

    @model_validator(mode="after")
    def _one_of(self) -> EmbeddingsRequest:
        if (self.input is None) == (self.inputs is None):
            raise ValueError("give exactly one of `input` (a string) or `inputs` (a list of strings)")
        return self


@router.post("/v1/embeddings", summary="Embed text with the deployment's model",
             description=f"`{{input}}` or `{{inputs: [...]}}` (at most {MAX_INPUTS} inputs of {MAX_INPUT_CHARS:,} characters).",
             responses=documented({200: (EmbeddingsResponse, "one vector per input")}, *AUTHENTICATED, *WITH_BODY))
def create_embeddings(body: Annotated[EmbeddingsRequest, Body()]) -> Response[Any]:
    require(router, Scope.READ)
    texts = [body.input] if body.input is not None else list(body.inputs or [])
    if any(not t.strip() for t in texts):
        raise InvalidInput("inputs must not be blank")
    embedder = get_container().embedder
    vectors = embedder.embed_documents(texts)
    data = [{"index": i, "embedding": [round(float(x), 7) for x in v]} for i, v in enumerate(vectors)]
    return json_response({"model": embedder.model_id, "dimensions": embedder.dimensions, "data": data})
