"""Extraction consumer Lambda: SQS (fed by the EventBridge ``turn.completed`` rule) -> extract_turn.

Partial batch failures (Powertools): a record whose run failed in a retryable way is reported in
``batchItemFailures`` and SQS redelivers it until the queue's ``maxReceiveCount``, then moves it
to the DLQ. An event that can never succeed (invalid JSON or schema, unknown memory) is sent to
the DLQ explicitly with the reason (``EXTRACTION_DLQ_URL``) and reported as processed, so it is never
retried; with no DLQ URL configured it is reported as failed and reaches the DLQ by the redrive policy.
"""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from pydantic import ValidationError

from memory_engine import constants as c
from memory_engine.bootstrap import get_container
from memory_engine.domain.events import TurnCompletedEvent
from memory_engine.domain.validation import JsonTooDeep, loads_json
from memory_engine.errors import InvalidInput, NotFound
from memory_engine.ports.events import DeadLetter
from memory_engine.services.extract_turn import InvalidEvent, consume_turn_event

logger = Logger(service="memory-engine-extraction")
tracer = Tracer(service="memory-engine-extraction")
metrics = Metrics(namespace="MemoryEngine", service="extraction")
# one failing record must not turn the whole batch into an invocation error: report each failure
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


def _validation_reason(error: ValidationError) -> str:
    problems = "; ".join(
        f"{'.'.join(str(p) for p in item.get('loc', ())) or 'event'}: {item.get('msg')}" for item in error.errors()[:10]
    )
    return f"invalid turn.completed event: {problems}"


def _reject(record: SQSRecord, reason: str) -> None:
    """Park an event that can never succeed. Without a dead-letter queue URL configured, report it as
    failed instead, so SQS's redrive policy still moves it to the DLQ after ``maxReceiveCount``."""
    attempts = int(record.attributes.approximate_receive_count or 1)
    logger.warning("rejecting event to the dead-letter queue", extra={"message_id": record.message_id, "reason": reason})
    metrics.add_metric(name="ExtractionEventsRejected", unit=MetricUnit.Count, value=1)
    sink = get_container().dead_letters
    if sink is None:
        raise InvalidEvent(reason)
    sink.send(DeadLetter(record.message_id, record.body, reason, attempts))


#: Seconds of the invocation kept for the rest of the batch's bookkeeping.
DEADLINE_MARGIN_SECONDS = 2.0


@tracer.capture_method(capture_response=False)
def record_handler(record: SQSRecord, lambda_context: Any = None) -> None:
    try:
        event = TurnCompletedEvent.model_validate(loads_json(record.body))
    except ValidationError as error:
        _reject(record, _validation_reason(error))
        return
    except ValueError as error:  # not JSON, or nested deeper than the one depth rule (JsonTooDeep)
        _reject(record, f"invalid turn.completed event: the body {error}" if isinstance(error, JsonTooDeep)
                else "invalid turn.completed event: the body is not JSON")
        return
    try:
        result = consume_turn_event(event, get_container().extraction, deadline=_deadline(lambda_context))
    except (NotFound, InvalidInput) as error:
        _reject(record, error.message)
        return
    metrics.add_metric(name=f"ExtractionRuns{result.status.capitalize()}", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="FactsCreated", unit=MetricUnit.Count, value=result.summary.created)
    logger.info(
        "extraction run finished",
        extra={"event_id": event.id, "run_id": result.run.id, "status": result.status, "summary": result.summary.model_dump()},
    )


def _deadline(context: Any) -> float | None:
    """The invocation's end on the service clock (``time.monotonic``), from the Lambda context."""
    if context is None or not hasattr(context, "get_remaining_time_in_millis"):
        return None
    remaining_ms = float(context.get_remaining_time_in_millis())
    return time.monotonic() + remaining_ms / 1000 - DEADLINE_MARGIN_SECONDS


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    get_container().check(c.FUNCTION_EXTRACTION)  # a missing setting fails the batch before any record is taken
    return dict(process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context))
