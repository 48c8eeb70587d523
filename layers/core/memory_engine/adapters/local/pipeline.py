"""Local invocation of the ingestion Lambdas: the runner calls ``functions/ingestion/handler.py``
attributes in-process with a Lambda-shaped context, as Step Functions would invoke them."""

from __future__ import annotations

from typing import Any

from memory_engine.adapters.local.lambda_runtime import LocalLambdaContext, load_handler

HANDLER_MODULE = "ingestion/handler"


def invoke_ingestion_handler(attribute: str, payload: dict[str, Any]) -> dict[str, Any]:
    handler = load_handler(HANDLER_MODULE, attribute)
    result: dict[str, Any] = handler(payload, LocalLambdaContext(function_name=f"memory-engine-ingest-{attribute}"))
    return result
