"""The OpenAPI document of the whole HTTP API (both Lambdas plus the local-only routes)."""

from __future__ import annotations

import functools
from typing import Any

from memory_engine.http.app import build_resolver, openapi_document
from memory_engine.http.routers import api_routers, local_routers, search_routers


@functools.cache
def full_openapi_document() -> dict[str, Any]:
    app = build_resolver([*api_routers(), *search_routers(), *local_routers()])
    document = openapi_document(app)
    document.setdefault("components", {})["securitySchemes"] = {
        "bearer": {"type": "http", "scheme": "bearer", "description": "an API key: Authorization: Bearer me_..."}
    }
    document["security"] = [{"bearer": []}]
    return document
