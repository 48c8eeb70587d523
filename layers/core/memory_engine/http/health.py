"""GET /v1/health (no auth) and GET /v1/openapi.json (the committed document, package data)."""

from __future__ import annotations

import copy
import functools
import json
from importlib import resources
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from memory_engine import __version__
from memory_engine import constants as c
from memory_engine.bootstrap import get_container
from memory_engine.http.responses import json_response
from memory_engine.http.schemas import Health, OpenAPIDocument, documented
from memory_engine.settings import Runtime

router = Router()


@router.get("/v1/health", summary="Liveness, database reachability and the local worker pool (no auth)", security=[],
            responses=documented({200: (Health, "up"),
                                  503: (Health, "the database cannot be reached, or no worker is alive")}))
def health() -> Response[Any]:
    """Liveness plus database reachability, and locally the worker pool (``workers``: alive and
    configured processes); 503 when the database cannot be reached or no worker is alive."""
    container = get_container()
    database_ok = container.database.ping()
    up = database_ok
    body: dict[str, Any] = {"version": __version__, "database": database_ok}
    if container.worker_counts is not None:
        alive, configured = container.worker_counts()
        body["workers"] = {"alive": alive, "configured": configured}
        up = up and alive > 0
    body["status"] = "ok" if up else "degraded"
    return json_response(body, 200 if up else 503)


@router.get("/v1/openapi.json", summary="This OpenAPI document (no auth)", security=[],
            responses=documented({200: (OpenAPIDocument, "the document")}))
def openapi() -> Response[Any]:
    local = get_container().settings.runtime is Runtime.LOCAL
    return json_response(committed_openapi_document() if local else deployed_openapi_document())


@functools.cache
def committed_openapi_document() -> dict[str, Any]:
    """``memory_engine/http/openapi.json`` (``docs/openapi.json`` links to it): generated from the
    routes by `make openapi`; a test fails when it differs from what the routes declare."""
    document: dict[str, Any] = json.loads(resources.files(__package__).joinpath("openapi.json").read_text("utf-8"))
    return document


@functools.cache
def deployed_openapi_document() -> dict[str, Any]:
    """The document as served on AWS: without the routes only the local engine serves
    (``LOCAL_ONLY_ROUTES``: events, local uploads and downloads), which API Gateway does not route."""
    document = copy.deepcopy(committed_openapi_document())
    for route in c.LOCAL_ONLY_ROUTES:
        method, path = route.split(" ", 1)
        prefix = path.removesuffix("{proxy+}")
        for documented_path in [p for p in document["paths"] if p == path or (prefix != path and p.startswith(prefix))]:
            document["paths"][documented_path].pop(method.lower(), None)
            if not document["paths"][documented_path]:
                del document["paths"][documented_path]
    return document
