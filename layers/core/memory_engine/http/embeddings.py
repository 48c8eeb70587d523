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

from memory_engine.bootstrap import get_container
from memory_engine.domain.auth import Scope
from memory_engine.domain.requests import EMBEDDINGS_LIMITS, MAX_INPUT_CHARS, MAX_INPUTS, MAX_TOTAL_CHARS, EmbeddingsRequest
from memory_engine.errors import InvalidInput, PayloadTooLarge
from memory_engine.http.auth import require
from memory_engine.http.responses import json_response
from memory_engine.http.schemas import AUTHENTICATED, WITH_BODY, EmbeddingsResponse, documented

router = Router()


@router.post("/v1/embeddings", summary="Embed text with the deployment's model",
             description=f"`{{input}}` or `{{inputs: [...]}}` (at most {MAX_INPUTS} inputs of {MAX_INPUT_CHARS:,} characters).",
             responses=documented({200: (EmbeddingsResponse, "one vector per input")}, *AUTHENTICATED, *WITH_BODY))
def create_embeddings(body: Annotated[EmbeddingsRequest, Body()]) -> Response[Any]:
    require(Scope.READ)
    texts = [body.input] if body.input is not None else list(body.inputs or [])
    total = sum(len(t) for t in texts)
    if len(texts) > MAX_INPUTS or total > MAX_TOTAL_CHARS:
        raise PayloadTooLarge(
            f"{len(texts)} inputs of {total} characters in all; the limit is {EMBEDDINGS_LIMITS}",
            details={"inputs": len(texts), "characters": total, "max_inputs": MAX_INPUTS,
                     "max_total_characters": MAX_TOTAL_CHARS},
        )
    if any(not t.strip() for t in texts):
        raise InvalidInput("inputs must not be blank")
    embedder = get_container().embedder
    vectors = embedder.embed_documents(texts)
    data = [{"index": i, "embedding": [round(float(x), 7) for x in v]} for i, v in enumerate(vectors)]
    return json_response({"model": embedder.model_id, "dimensions": embedder.dimensions, "data": data})
