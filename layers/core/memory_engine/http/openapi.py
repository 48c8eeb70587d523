"""The OpenAPI document of the whole HTTP API (both Lambdas plus the local-only routes).

Routes declare their responses (``memory_engine.http.schemas.documented``). Powertools adds a 422
with its own ``HTTPValidationError`` body to every operation; the API never sends that shape (its
validation errors are mapped to the SPEC's error body in ``http/app.py``), so the defaults are
dropped here: a route that can answer 422 declares it with :class:`~memory_engine.http.schemas.ErrorBody`.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from memory_engine.http.app import PUBLIC_PATHS, TOKEN_PATH_PREFIXES, build_resolver, openapi_document
from memory_engine.http.routers import api_routers, local_routers, search_routers

_POWERTOOLS_ONLY_SCHEMAS = ("HTTPValidationError", "ValidationError", "ResponseValidationError")
#: Any operation may answer this before routing, like API Gateway: a malformed request line, header
#: or body framing, control characters in the path or a header, a body that is not UTF-8 JSON.
MALFORMED = "malformed request (framing, control characters in the path or a header, a body that is not UTF-8)"


@functools.cache
def full_openapi_document() -> dict[str, Any]:
    app = build_resolver([*api_routers(), *search_routers(), *local_routers()])
    document = openapi_document(app)
    for path, operations in document["paths"].items():
        for operation in operations.values():
            responses = operation["responses"]
            if "HTTPValidationError" in json.dumps(responses.get("422", {})):
                del responses["422"]
            for status, response in responses.items():
                # Powertools gives every response a JSON body; a 204 (or the 202 of POST /v1/mcp, declared
                # without a model) has none
                if status == "204" or response.get("content", {}).get("application/json", {}).get("schema") == {
                        "title": "Return"}:
                    response.pop("content", None)
            if path in PUBLIC_PATHS or path.startswith(TOKEN_PATH_PREFIXES):
                operation["security"] = []
            responses.setdefault("400", {"description": MALFORMED, "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}})
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for name in _POWERTOOLS_ONLY_SCHEMAS:
        if f'"#/components/schemas/{name}"' not in json.dumps({k: v for k, v in document.items() if k != "components"}):
            schemas.pop(name, None)
    document["components"]["securitySchemes"] = {
        "bearer": {"type": "http", "scheme": "bearer", "description": "an API key: Authorization: Bearer me_..."}
    }
    document["security"] = [{"bearer": []}]
    return document
