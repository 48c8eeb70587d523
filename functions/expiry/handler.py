"""Expiry sweep Lambda, invoked by an EventBridge Scheduler schedule (``rate(1 minute)``): entries
past their ``expires_at`` are invalidated with reason ``expired``. Reads already hide them (a
read-time filter); the sweep records the expiry as history."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from memory_engine import constants as c
from memory_engine.bootstrap import get_container
from memory_engine.services.expiry import sweep_expired

logger = Logger(service="memory-engine-expiry")
tracer = Tracer(service="memory-engine-expiry")
metrics = Metrics(namespace="MemoryEngine", service="expiry")


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, int]:
    container = get_container()
    container.check(c.FUNCTION_EXPIRY)
    expired = sweep_expired(container.expiry)
    metrics.add_metric(name="EntriesExpired", unit=MetricUnit.Count, value=expired)
    return {"expired": expired}
