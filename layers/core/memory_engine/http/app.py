"""Builds the Powertools resolver that both API Lambdas (and the local server) run.

Error mapping lives here and only here: our error hierarchy, pydantic validation errors and
malformed JSON all become the SPEC's ``{"error": {"code", "message", "details"}}`` body.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestUnsupportedContentType, RequestValidationError

from memory_engine import __version__
from memory_engine.bootstrap import get_container
from memory_engine.domain.serialization import dumps
from memory_engine.domain.validation import MAX_BODY_DEPTH, json_text_too_deep, text_problem
from memory_engine.errors import (
    BadRequest,
    InvalidInput,
    MemoryEngineError,
    MethodNotAllowed,
    NotFound,
    UnsupportedMediaType,
    http_status,
)
from memory_engine.http.auth import current_principal
from memory_engine.http.methods import allowed_methods
from memory_engine.http.responses import error_response

logger = logging.getLogger(__name__)

API_TITLE = "memory-engine"


#: Routes that need no API key.
PUBLIC_PATHS = frozenset({"/v1/health", "/v1/openapi.json"})
#: Routes whose URL carries its own credential (a signed upload token, like a presigned S3 URL).
TOKEN_PATH_PREFIXES = ("/v1/local-uploads/", "/v1/local-downloads/", "/v1/converter-callbacks/")
#: ... and every path under this prefix: the web console's static files (the page asks for the key).
PUBLIC_PREFIX = "/console"


def is_public(path: str) -> bool:
    """No API key: health, the OpenAPI document, the console's files, and token-carrying URLs."""
    return (path in PUBLIC_PATHS or path == PUBLIC_PREFIX or path.startswith(PUBLIC_PREFIX + "/")
            or path.startswith(TOKEN_PATH_PREFIXES))


class EngineResolver(APIGatewayHttpResolver):
    """Authenticates the bearer key before routing, so a bad key gets 401 before any body
    validation can answer 422 (Powertools runs request validation ahead of user middlewares).
    The principal is put in :data:`current_principal`; routes check their scope with
    :func:`memory_engine.http.auth.require`."""

    def resolve(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        event = _json_by_default(event)
        path = event.get("rawPath") or event.get("requestContext", {}).get("http", {}).get("path", "")
        if not is_public(path):
            headers = {str(k).lower(): v for k, v in (event.get("headers") or {}).items()}
            try:
                principal = get_container().authenticator.authenticate(headers.get("authorization"))
                _check_request_values(event, path)
                _check_body_depth(event, path)
            except MemoryEngineError as error:
                return _error_result(error)
            token = current_principal.set(principal)
            try:
                return super().resolve(event, context)
            finally:
                current_principal.reset(token)
        try:
            _check_body_depth(event, path)
        except MemoryEngineError as error:
            return _error_result(error)
        return super().resolve(event, context)


def _error_result(error: MemoryEngineError) -> dict[str, Any]:
    return {
        "statusCode": http_status(error),
        "headers": {"Content-Type": "application/json"},
        "body": dumps(error.to_body()),
        "isBase64Encoded": False,
        "cookies": [],
    }


def _check_request_values(event: Mapping[str, Any], path: str) -> None:
    """Path and query values must be text PostgreSQL can hold: InvalidInput (422) naming the part,
    before any route runs. Body fields get the same rules from their models."""
    problem = text_problem(unquote(path))
    if problem:
        raise InvalidInput(f"the request path {problem}", details=[{"field": "path", "message": problem}])
    for name, value in (event.get("queryStringParameters") or {}).items():
        problem = text_problem(str(name)) or text_problem(str(value))
        if problem:
            raise InvalidInput(f"query parameter {str(name)!r} {problem}",
                               details=[{"field": str(name), "message": problem}])


#: Token routes whose body is not parsed here as JSON: an uploaded file is bytes, not JSON, and a
#: converter callback is parsed (under the same depth rule, ``domain.validation.loads_json``) by its
#: service, which then fails the waiting document with the reason instead of leaving it waiting.
_BODY_NOT_JSON_PREFIXES = ("/v1/local-uploads/", "/v1/converter-callbacks/")


def _check_body_depth(event: Mapping[str, Any], path: str) -> None:
    """The one depth rule (``MAX_BODY_DEPTH``) for a body, before anything parses it: a text body,
    and a base64-encoded one (API Gateway encodes a type it does not know as text, e.g. the import's
    ``application/x-ndjson``) once decoded; the token routes too. InvalidInput (422)."""
    if path.startswith(_BODY_NOT_JSON_PREFIXES):
        return
    body = event.get("body")
    if not isinstance(body, str) or not body:
        return
    if event.get("isBase64Encoded"):
        try:
            body = base64.b64decode(body).decode("utf-8")
        except ValueError:
            return  # not UTF-8 text, so no JSON: the route answers 400 when it reads it
    if json_text_too_deep(body):
        raise InvalidInput(f"the request body nests deeper than {MAX_BODY_DEPTH} levels",
                           details=[{"field": "body", "limit": MAX_BODY_DEPTH}])


def _json_by_default(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """The API speaks JSON. `curl -d '{...}'` labels its body form-encoded (and some clients send no
    content type at all); a body that is a JSON object or array is read as JSON either way."""
    headers = event.get("headers") or {}
    content_type = next((str(v) for k, v in headers.items() if str(k).lower() == "content-type"), "")
    body = event.get("body")
    if (
        isinstance(body, str)
        and not event.get("isBase64Encoded")
        and content_type.split(";")[0].strip().lower() in ("", "application/x-www-form-urlencoded")
        and body.lstrip()[:1] in ("{", "[")
    ):
        fixed = {k: v for k, v in headers.items() if str(k).lower() != "content-type"}
        fixed["content-type"] = "application/json"
        return {**event, "headers": fixed}
    return event


def _engine_error(error: MemoryEngineError) -> Response[Any]:
    if http_status(error) >= 500:
        logger.exception("request failed: %s", error.code)
    return error_response(error)


def _validation_error(error: RequestValidationError) -> Response[Any]:
    return error_response(_from_validation(error))


def _unsupported_content_type(error: RequestUnsupportedContentType) -> Response[Any]:
    # a JSON route given a body labelled text/plain, application/xml, ...: 415, never read as
    # something else (a missing or form content type with a JSON-looking body is read as JSON,
    # see _json_by_default; an explicit other type is the client saying it is not JSON)
    given = next((str(e.get("msg", "")).rpartition(": ")[2] for e in error.errors()), "")[:100]
    return error_response(UnsupportedMediaType(
        f"the body's Content-Type {given!r} is not read by this route; send application/json",
        details=[{"field": "content-type", "expected": "application/json"}]))


def _bad_json(error: json.JSONDecodeError) -> Response[Any]:
    return error_response(BadRequest(f"request body is not valid JSON: {error.msg} at position {error.pos}"))


def _not_utf8(error: UnicodeDecodeError) -> Response[Any]:
    # API Gateway base64-encodes a body that is not UTF-8 text; Powertools' json_body decodes it
    # as UTF-8 and raises this (found by tests/e2e/test_api_fuzz.py)
    return error_response(BadRequest(f"request body is not UTF-8 JSON: invalid byte at position {error.start}"))


def _unexpected(error: Exception) -> Response[Any]:
    logger.exception("unhandled error")
    return error_response(MemoryEngineError("internal error; see the server log"))


#: Every error a route can raise -> the SPEC's error response (Powertools picks the closest class).
_ERROR_HANDLERS: tuple[tuple[type[Exception], Callable[[Any], Response[Any]]], ...] = (
    (MemoryEngineError, _engine_error),
    (RequestUnsupportedContentType, _unsupported_content_type),
    (RequestValidationError, _validation_error),
    (json.JSONDecodeError, _bad_json),
    (UnicodeDecodeError, _not_utf8),
    (Exception, _unexpected),
)


def build_resolver(routers: Iterable[Router]) -> APIGatewayHttpResolver:
    app = EngineResolver(enable_validation=True)
    for router in routers:
        app.include_router(router)
    for error_class, handler in _ERROR_HANDLERS:
        app.exception_handler(error_class)(handler)

    @app.not_found
    def _not_found(error: NotFoundError) -> Response[Any]:
        event = app.current_event
        allowed = allowed_methods(event.path)
        # the path exists, not with this method (TRACE, PATCH, ...): 405 naming the ones it has
        if allowed and event.http_method.upper() not in allowed:
            response = error_response(MethodNotAllowed(
                f"{event.http_method} is not allowed on {event.path}; use {', '.join(allowed)}",
                details={"allow": list(allowed)}))
            response.headers["Allow"] = ", ".join(allowed)
            return response
        return error_response(NotFound(f"no route {event.http_method} {event.path}"))

    return app


def _from_validation(error: RequestValidationError) -> MemoryEngineError:
    details = []
    body_invalid_json = False
    for item in error.errors():
        loc = [str(part) for part in item.get("loc", ()) if part != "body"] if item.get("loc") else []
        if item.get("type") == "json_invalid":
            body_invalid_json = True
        details.append({"field": ".".join(loc) or "body", "message": item.get("msg", ""), "type": item.get("type")})
    if body_invalid_json:
        return BadRequest("request body is not valid JSON", details=details)
    return InvalidInput("request validation failed", details=details)


def openapi_document(app: APIGatewayHttpResolver) -> dict[str, Any]:
    schema = app.get_openapi_json_schema(title=API_TITLE, version=__version__)
    return json.loads(schema)  # type: ignore[no-any-return]
