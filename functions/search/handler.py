"""Search Lambda: POST /v1/knowledge/search, on read-only database credentials."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging import correlation_paths

from memory_engine import constants as c
from memory_engine.bootstrap import get_container
from memory_engine.http.app import build_resolver
from memory_engine.http.routers import search_routers

logger = Logger(service="memory-engine-search")
tracer = Tracer(service="memory-engine-search")
metrics = Metrics(namespace="MemoryEngine", service="search")
app = build_resolver(search_routers())


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    get_container().check(c.FUNCTION_SEARCH)  # at cold start: a missing setting fails every request, not some
    return app.resolve(event, context)
