"""POST /v1/embeddings: vectors from the deployment's model.

One request's work is bounded (413 beyond): at most :data:`MAX_INPUTS` inputs and
:data:`MAX_TOTAL_CHARS` characters over all of them. The cost of a request is its tokens (each
input counts up to the model's 256 tokens, about 1,000 characters of English): 32,000 characters
are at most ~32 full-length passages, about 2.5 s on one CPU core with the local model
(README, "Running locally"). Embed more with several requests.
"""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body
from pydantic import BaseModel, Field, model_validator

from memory_engine.bootstrap import get_container
from memory_engine.domain.auth import Scope
from memory_engine.errors import InvalidInput, PayloadTooLarge
from memory_engine.http.auth import require
from memory_engine.http.responses import json_response
from memory_engine.http.schemas import AUTHENTICATED, WITH_BODY, EmbeddingsResponse, documented

router = Router()

MAX_INPUTS = 256
MAX_TOTAL_CHARS = 32_000
#: One input alone can use the whole budget.
MAX_INPUT_CHARS = MAX_TOTAL_CHARS
_LIMITS = f"at most {MAX_INPUTS} inputs and {MAX_TOTAL_CHARS} characters in all per request (413 beyond)"


class EmbeddingsRequest(BaseModel):
    input: str | None = Field(None, description=f"one text; {_LIMITS}")
    inputs: list[str] | None = Field(None, description=f"several texts; {_LIMITS}")

    @model_validator(mode="after")
    def _one_of(self) -> EmbeddingsRequest:
        if (self.input is None) == (self.inputs is None):
            raise ValueError("give exactly one of `input` (a string) or `inputs` (a list of strings)")
        return self


@router.post("/v1/embeddings", summary="Embed text with the deployment's model",
             description=f"`{{input}}` or `{{inputs: [...]}}` (at most {MAX_INPUTS} inputs of {MAX_INPUT_CHARS:,} characters).",
             responses=documented({200: (EmbeddingsResponse, "one vector per input")}, *AUTHENTICATED, *WITH_BODY))
def create_embeddings(body: Annotated[EmbeddingsRequest, Body()]) -> Response[Any]:
    require(Scope.READ)
    texts = [body.input] if body.input is not None else list(body.inputs or [])
    total = sum(len(t) for t in texts)
    if len(texts) > MAX_INPUTS or total > MAX_TOTAL_CHARS:
        raise PayloadTooLarge(
            f"{len(texts)} inputs of {total} characters in all; the limit is {_LIMITS}",
            details={"inputs": len(texts), "characters": total, "max_inputs": MAX_INPUTS,
                     "max_total_characters": MAX_TOTAL_CHARS},
        )
    if any(not t.strip() for t in texts):
        raise InvalidInput("inputs must not be blank")
    embedder = get_container().embedder
    vectors = embedder.embed_documents(texts)
    data = [{"index": i, "embedding": [round(float(x), 7) for x in v]} for i, v in enumerate(vectors)]
    return json_response({"model": embedder.model_id, "dimensions": embedder.dimensions, "data": data})
