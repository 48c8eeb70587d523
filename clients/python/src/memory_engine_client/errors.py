"""Typed errors. Every error the engine answers carries the SPEC body
``{"error": {"code", "message", "details"}}``; the exception keeps all three and the HTTP status."""

from __future__ import annotations

from typing import Any


class MemoryEngineError(Exception):
    """Base class of everything this client raises."""


class APIConnectionError(MemoryEngineError):
    """The engine could not be reached (connection refused, DNS, TLS, ...)."""


class APITimeoutError(APIConnectionError):
    """The engine did not answer within the timeout."""


class APIError(MemoryEngineError):
    """The engine answered an error. ``code`` is the SPEC's stable error code (e.g. ``not_found``)."""

    status: int = 0

    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details


class BadRequestError(APIError):
    """400: malformed request."""


class AuthenticationError(APIError):
    """401: missing, malformed, unknown or revoked API key."""


class PermissionDeniedError(APIError):
    """403: the key lacks the scope the operation needs."""


class NotFoundError(APIError):
    """404: no such resource in the key's project."""


class ConflictError(APIError):
    """409: the resource's state forbids the change."""


class PayloadTooLargeError(APIError):
    """413: a body, field or metadata over its limit."""


class UnprocessableEntityError(APIError):
    """422: a field fails validation (``details`` names each field)."""


class RateLimitError(APIError):
    """429: too many requests (retried for idempotent calls)."""


class ServerError(APIError):
    """5xx: the engine or a service behind it failed (retried for idempotent calls)."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError, 404: NotFoundError,
    409: ConflictError, 413: PayloadTooLargeError, 422: UnprocessableEntityError, 429: RateLimitError,
}


def error_from_response(status: int, body: Any) -> APIError:
    """The typed error for an error response (its SPEC body, or a generic one when it has none)."""
    detail = body.get("error") if isinstance(body, dict) else None
    if isinstance(detail, dict):
        code, message, details = str(detail.get("code", "error")), str(detail.get("message", "")), detail.get("details")
    else:
        code, message, details = "http_error", f"HTTP {status}", None
    cls = _BY_STATUS.get(status, ServerError if status >= 500 else APIError)
    return cls(status, code, message, details)
