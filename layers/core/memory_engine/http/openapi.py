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

from memory_engine import ids
from memory_engine.domain import upload_tokens
from memory_engine.http.app import PUBLIC_PATHS, TOKEN_PATH_PREFIXES, build_resolver, openapi_document
from memory_engine.http.routers import api_routers, local_routers, search_routers

_POWERTOOLS_ONLY_SCHEMAS = ("HTTPValidationError", "ValidationError", "ResponseValidationError")
#: Any operation may answer this before routing, like API Gateway: a malformed request line, header
#: or body framing, control characters in the path or a header, a body that is not UTF-8 JSON.
MALFORMED = "malformed request (framing, control characters in the path or a header, a body that is not UTF-8)"


_ID = "[0-9A-HJKMNP-TV-Z]{26}"  # the 26 Crockford base32 characters of memory_engine.ids
#: What a path parameter can be, as the document states it (the route never sees anything else but
#: as an unknown id, 404, or an unknown token, 403): an id of its kind, or a signed token.
PATH_PARAMETERS: dict[str, dict[str, Any]] = {
    "memory_id": {"pattern": f"^{ids.MEMORY}_{_ID}$", "description": "a memory id (`mem_` and 26 characters)"},
    "entry_id": {"pattern": f"^{ids.ENTRY}_{_ID}$", "description": "an entry id (`ment_` and 26 characters)"},
    "document_id": {"pattern": f"^{ids.DOCUMENT}_{_ID}$", "description": "a document id (`doc_` and 26 characters)"},
    "rule_id": {"pattern": f"^{ids.RULE}_{_ID}$", "description": "an ingestion rule id (`rule_` and 26 characters)"},
    "turn_id": {"pattern": "^[^\\x00-\\x1f\\x7f]{1,256}$",
                "description": "the turn's own id, as it was recorded (1..256 characters, no control characters)"},
    "token": {"pattern": "^[A-Za-z0-9_-]+[.][A-Za-z0-9_-]+$", "maxLength": upload_tokens.MAX_TOKEN_CHARS,
              "description": "the signed token of the URL the engine handed out (base64url payload `.` signature)"},
}


_CURSOR = "`cursor` is opaque: only the `next_cursor` of a previous page of this list is valid"
_STORABLE = "text (query parameters too) must not hold NUL or unpaired surrogates (docs/limits.md)"
_PATH = ("`path`: segments not empty, `.`, `..` or hidden, each at most 255 bytes of UTF-8, no control "
         "characters")
_CHUNKS = "`chunk_overlap` must be smaller than `chunk_size` (given or default)"
#: Rules an operation enforces (422 naming the field) that JSON Schema cannot state: opaque tokens,
#: grammars, byte lengths, rules across fields. The document lists them in the operation's
#: description; the schema-driven fuzz test (tests/e2e/test_api_fuzz.py) expects every request the
#: schema allows to be accepted on every other operation.
RULES_BEYOND_THE_SCHEMA: dict[str, str] = {
    "GET /v1/memories": f"{_CURSOR}; {_STORABLE}",
    "GET /v1/memory-entries": f"{_CURSOR}; {_STORABLE}",
    "GET /v1/documents": f"{_CURSOR}; {_STORABLE}",
    "GET /v1/extraction-runs": f"{_CURSOR}; {_STORABLE}",
    "GET /v1/ingestion-rules": "the list is one page: no `cursor` is valid",
    "GET /v1/memories/{memory_id}/turns": f"{_CURSOR}; {_STORABLE}",
    "POST /v1/memories/{memory_id}/turns": ("each turn's `content` holds more than whitespace and at most 1 MB of "
                                            f"UTF-8, its `metadata` at most 64 KB; {_STORABLE}"),
    "DELETE /v1/memories/{memory_id}/turns": _STORABLE,
    "DELETE /v1/memories/{memory_id}/turns/{turn_id}": _STORABLE,
    "POST /v1/memories": f"`name` is required and not blank; {_STORABLE}",
    "PUT /v1/memories/{memory_id}": f"`name` cannot be cleared; {_STORABLE}",
    "POST /v1/memory-entries": (f"`content` must hold more than whitespace; `valid_to` not before `valid_from`; "
                                f"timestamps within the years 1..9999 in UTC; {_STORABLE}"),
    "PUT /v1/memory-entries/{entry_id}": (f"`content` and `confidence` cannot be cleared; `valid_to` not before "
                                          f"`valid_from`; {_STORABLE}"),
    "POST /v1/memory-entries/batch": "each item is a valid `POST /v1/memory-entries` body",
    "DELETE /v1/memory-entries/batch": _STORABLE,
    "POST /v1/documents": f"{_PATH}; {_CHUNKS}; {_STORABLE}",
    "POST /v1/documents/uploads": f"{_PATH}; {_CHUNKS}",
    "POST /v1/documents/batch": "each item is a valid `POST /v1/documents` body",
    "POST /v1/documents/{document_id}/ingest": _CHUNKS,
    "POST /v1/ingestion-rules": ("`content_type_glob` is `type/subtype` with `*` or `?` wildcards; the converter "
                                 f"URL is an absolute http(s) URL without credentials; {_CHUNKS}"),
    "PUT /v1/ingestion-rules/{rule_id}": ("`content_type_glob` is `type/subtype` with `*` or `?` wildcards; the "
                                          f"converter URL is an absolute http(s) URL without credentials; {_CHUNKS}"),
    "POST /v1/knowledge/search": ("`query` or `query_embedding`; `query_embedding` has this deployment's "
                                  f"dimensions; {_STORABLE}"),
    "POST /v1/embeddings": "exactly one of `input` and `inputs`",
    "POST /v1/forget": "`conversation_id` (optionally with `memory_id`), or `memory_id` with `entity`",
    "POST /v1/events": "the body is a `turn.completed` event (docs/events.md)",
    "POST /v1/mcp": "the body is a JSON-RPC message of the Model Context Protocol",
    "POST /v1/memories/import": "the body is a memory-engine export (JSONL: a header line, a memory line, rows)",
}


def _describe_parameters(operation: dict[str, Any]) -> None:
    """Path parameters get their pattern; a query parameter's ``anyOf [X, null]`` (an optional
    Python argument) becomes ``X``: a query string cannot carry a null, leaving it out is the default."""
    for parameter in operation.get("parameters", []):
        if parameter.get("in") == "path" and parameter["name"] in PATH_PARAMETERS:
            rule = dict(PATH_PARAMETERS[parameter["name"]])
            parameter["description"] = rule.pop("description")
            parameter["schema"].update(rule)
        schema = parameter.get("schema", {})
        if parameter.get("in") == "query" and {"type": "null"} in schema.get("anyOf", []):
            rest = [s for s in schema["anyOf"] if s != {"type": "null"}]
            if len(rest) == 1:
                del schema["anyOf"]
                schema.update(rest[0])


@functools.cache
def full_openapi_document() -> dict[str, Any]:
    app = build_resolver([*api_routers(), *search_routers(), *local_routers()])
    document = openapi_document(app)
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            _describe_parameters(operation)
            rule = RULES_BEYOND_THE_SCHEMA.get(f"{method.upper()} {path}")
            if rule:
                operation["description"] = (f"{operation.get('description', '')}\n\nAlso enforced (422 naming the "
                                            f"field): {rule}.").lstrip()
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
