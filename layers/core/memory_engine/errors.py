"""One error hierarchy. Each class carries its HTTP status; :func:`http_status` is the mapping the HTTP
layer uses (``http/app.py``, ``http/responses.py``): that status, 500 for anything else."""

from __future__ import annotations

from typing import Any


class MemoryEngineError(Exception):
    """Base class. ``code`` is stable and machine-readable; ``message`` is for people. A subclass
    names its HTTP ``status`` and ``code`` in its class line (``class X(Base, status=..., code=...)``);
    what it does not name it inherits."""

    status = 500
    code = "internal_error"

    def __init_subclass__(cls, *, status: int | None = None, code: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if status is not None:
            cls.status = status
        if code is not None:
            cls.code = code

    def __init__(self, message: str, *, details: Any = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details
        if code is not None:
            self.code = code

    def to_body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


# --- the caller's request: 4xx ---


class BadRequest(MemoryEngineError, status=400, code="bad_request"):
    """A request the API cannot read (a body that is not JSON, a malformed parameter)."""


class InvalidInput(MemoryEngineError, status=422, code="validation_error"):
    """A well-formed request whose fields fail validation (details list the fields)."""


class Unauthorized(MemoryEngineError, status=401, code="unauthorized"):
    """No API key, or one that is unknown or revoked."""


class Forbidden(MemoryEngineError, status=403, code="forbidden"):
    """A valid key without the scope the route needs, or an upload URL that no longer holds."""


class NotFound(MemoryEngineError, status=404, code="not_found"):
    """Nothing with that id in the caller's project (another project's rows are never seen)."""


class Conflict(MemoryEngineError, status=409, code="conflict"):
    """The row is not in a state that allows the change (e.g. replacing an invalidated entry)."""


class PayloadTooLarge(MemoryEngineError, status=413, code="payload_too_large"):
    """A body, a field or metadata over its documented limit (docs/limits.md)."""


class UnsupportedMediaType(MemoryEngineError, status=415, code="unsupported_media_type"):
    """A body labelled with a content type the route does not read (a JSON route given
    ``text/plain`` or ``application/xml``): send ``application/json``."""


class MethodNotAllowed(MemoryEngineError, status=405, code="method_not_allowed"):
    """A method the path does not answer (``TRACE``, ``PATCH``, ...); the ``Allow`` header lists the
    ones it does."""


# --- what the engine depends on, and its own configuration: 5xx ---


class DependencyError(MemoryEngineError, status=503, code="dependency_unavailable"):
    """A backing service (database, model) failed. Retryable unless said otherwise."""


class DatabaseError(DependencyError, code="database_error"):
    """PostgreSQL refused or could not be reached; its own wording stays in the server log."""


class SchemaMismatch(MemoryEngineError, status=500, code="schema_mismatch"):
    """The database was built for another embedding dimension or a newer schema."""


class EmbeddingError(DependencyError, code="embedding_error"):
    """The embedding model failed; writes store the row without a vector, search degrades."""


class EmbeddingThrottled(EmbeddingError, code="embedding_throttled"):
    """The embedding backend throttled us after its retries (ingestion's embed step retries it)."""


class ChatModelError(DependencyError, code="chat_model_error"):
    """The chat model failed, timed out or answered blank; its callers degrade, never fail."""


class ChatModelNotConfigured(ChatModelError, code="chat_model_not_configured"):
    """No chat model is configured (``CHAT_PROVIDER`` unset)."""


class ConfigurationError(MemoryEngineError, status=500, code="configuration_error"):
    """A setting the function needs is missing or invalid (raised at cold start)."""


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
