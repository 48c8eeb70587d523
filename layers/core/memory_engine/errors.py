"""One error hierarchy. Each class carries its HTTP status; :func:`http_status` is the mapping the HTTP
layer uses (``http/app.py``, ``http/responses.py``): that status, 500 for anything else."""

from __future__ import annotations

from typing import Any


class MemoryEngineError(Exception):
    """Base class. ``code`` is stable and machine-readable; ``message`` is for people."""

    status = 500
    code = "internal_error"

    def __init__(self, message: str, *, details: Any = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details
        if code is not None:
            self.code = code

    def to_body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


class BadRequest(MemoryEngineError):
    status, code = 400, "bad_request"


class InvalidInput(MemoryEngineError):
    """A well-formed request whose fields fail validation (details list the fields)."""

    status, code = 422, "validation_error"


class Unauthorized(MemoryEngineError):
    status, code = 401, "unauthorized"


class Forbidden(MemoryEngineError):
    status, code = 403, "forbidden"


class NotFound(MemoryEngineError):
    status, code = 404, "not_found"


class Conflict(MemoryEngineError):
    status, code = 409, "conflict"


class PayloadTooLarge(MemoryEngineError):
    status, code = 413, "payload_too_large"


class DependencyError(MemoryEngineError):
    """A backing service (database, model) failed. Retryable unless said otherwise."""

    status, code = 503, "dependency_unavailable"


class DatabaseError(DependencyError):
    code = "database_error"


class SchemaMismatch(MemoryEngineError):
    """The database was built for another embedding dimension or a newer schema."""

    status, code = 500, "schema_mismatch"


class EmbeddingError(DependencyError):
    code = "embedding_error"


class EmbeddingThrottled(EmbeddingError):
    code = "embedding_throttled"


class ChatModelError(DependencyError):
    code = "chat_model_error"


class ChatModelNotConfigured(ChatModelError):
    code = "chat_model_not_configured"


class ConfigurationError(MemoryEngineError):
    status, code = 500, "configuration_error"


def invalid_input(error: Any, message: str) -> InvalidInput:
    """A pydantic ``ValidationError`` as InvalidInput, one detail per invalid field."""
    details = [
        {"field": ".".join(str(part) for part in item.get("loc", ())) or "body", "message": item.get("msg", ""),
         "type": item.get("type")}
        for item in error.errors()
    ]
    return InvalidInput(message, details=details)


def http_status(error: BaseException) -> int:
    """The HTTP status of a response carrying ``error``."""
    return error.status if isinstance(error, MemoryEngineError) else 500
