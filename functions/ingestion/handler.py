"""Ingestion Lambdas: the task states of the ingestion state machine (one code asset, one
handler attribute per step; see ``memory_engine.domain.pipeline.STEP_FUNCTION_NAMES``).

Each handler parses its payload (pydantic), calls one service step and returns the next
payload as JSON. Errors propagate: their class name is the ``errorType`` ASL Retry/Catch match.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from aws_lambda_powertools import Logger, Tracer
from pydantic import BaseModel

from memory_engine import constants as c
from memory_engine.bootstrap import get_container
from memory_engine.domain.documents import (
    AwaitConversionInput,
    DocumentRun,
    EmbedBatchInput,
    FailedRun,
    S3ObjectCreatedEvent,
)
from memory_engine.services.ingestion import callbacks, steps

logger = Logger(service="memory-engine-ingestion")
tracer = Tracer(service="memory-engine-ingestion")

In = TypeVar("In", bound=BaseModel)


def _run(step: Callable[[In, steps.IngestionPorts], BaseModel], payload: type[In], event: dict[str, Any]) -> dict[str, Any]:
    """Check the function's settings (once per container), parse the state input, run one step,
    return the next state's input as JSON."""
    container = get_container()
    container.check(c.FUNCTION_INGESTION)
    return step(payload.model_validate(event), container.ingestion_ports).model_dump(mode="json")


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
def register(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """S3 "Object Created" EventBridge event -> DocumentRun (``skip`` when nothing changed)."""
    return _run(steps.register, S3ObjectCreatedEvent, event)


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
def extract(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _run(steps.extract, DocumentRun, event)


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
def await_conversion(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """``.waitForTaskToken``: ``{run, task_token}``; records the token (the converter's callback resumes the run)."""
    return _run(callbacks.await_conversion, AwaitConversionInput, event)


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
def chunk(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _run(steps.chunk, DocumentRun, event)


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
def embed_batch(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """One item of the EmbedBatches Map: ``{project_id, document_id, generation, batch}``."""
    return _run(steps.embed_batch, EmbedBatchInput, event)


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
def finalize(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _run(steps.finalize, DocumentRun, event)


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
def mark_failed(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Catch-all: the failing step's input plus ``failure: {Error, Cause}``."""
    return _run(steps.mark_failed, FailedRun, event)
