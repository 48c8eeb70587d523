"""Which handler serves a request: the route table API Gateway has on AWS (``constants``), applied
to HTTP API events in this process. The gateway uses it for the routes it serves itself, each worker
process for the rest."""

from __future__ import annotations

import functools
import threading
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

from memory_engine import constants as c
from memory_engine.http.app import build_resolver
from memory_engine.http.routers import local_routers
from memory_engine.local.lambda_runtime import LocalLambdaContext, invoke


def route_matches(route: str, method: str, path: str) -> bool:
    """``route`` is an API Gateway route key (``"GET /v1/x"``, ``"PUT /v1/y/{proxy+}"``)."""
    route_method, _, route_path = route.partition(" ")
    if route_method != method:
        return False
    if route_path.endswith("{proxy+}"):
        return path.startswith(route_path[: -len("{proxy+}")])
    return path == route_path


@functools.cache
def _local_app() -> APIGatewayHttpResolver:
    return build_resolver(local_routers())


def route_event(event: dict[str, Any]) -> Any:
    """Invoke the handler that owns the event's route (the caller guarantees one request at a time)."""
    method = event["requestContext"]["http"]["method"]
    path = event["rawPath"]
    if any(route_matches(r, method, path) for r in c.SEARCH_ROUTES):
        return invoke("search/handler", event, "memory-engine-search")
    if any(route_matches(r, method, path) for r in c.LOCAL_ONLY_ROUTES):
        context: Any = LocalLambdaContext(function_name="memory-engine-local")  # the attributes of a LambdaContext
        return _local_app().resolve(event, context)
    return invoke("api/handler", event, "memory-engine-api")


#: This process's handlers are one "container": one invocation at a time.
_invoke_lock = threading.Lock()


def dispatch(event: dict[str, Any]) -> Any:
    """Send an HTTP API event to the handler that owns its route, in this process."""
    with _invoke_lock:
        return route_event(event)
